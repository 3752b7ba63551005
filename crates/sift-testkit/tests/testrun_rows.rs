//! libpcap's TESTrun corpus (`testrun-filters.tsv`) against sift.
//!
//! * **accept** rows: sift must compile the expression, and on ≥ 1,000
//!   structured random packets of the link type (truncated ones included)
//!   plus every real capture of that link type, sift's program (run by
//!   sift's interpreter) and sift's predicate (run by the reference
//!   evaluator) must give exactly the verdicts of libpcap 1.10.3's
//!   unoptimized program for the same expression (compiled live through the
//!   FFI oracle, run by libpcap's own `bpf_filter`). Then sift is compared
//!   with master's expected program of the row (parsed from its `-d` text):
//!   every disagreement must be explained, either because master's
//!   semantics differ from 1.10.3 (1.10.3's program for the row disagrees
//!   with master's on that packet) or because the row is optimized and
//!   libpcap's optimizer changes the verdict (1.10.3's unoptimized program
//!   agrees with sift).
//!   Rows listed as `accept` in `testrun_known_differences.tsv` are the
//!   exception: there sift deliberately follows master's semantics (a fix
//!   of a 1.10.3 code generation bug), so sift is compared, with zero
//!   tolerance, with master's program of each row instead of 1.10.3's, on
//!   the same packets plus every short truncation of a few of them; 1.10.3
//!   must differ from master on at least one packet (else the entry is
//!   stale).
//! * **reject** rows: sift must reject, also where 1.10.3 accepts and master
//!   rejects (sift follows master there), unless the row is listed with a
//!   reason as `reject` in `testrun_known_differences.tsv`.
//!
//! A known difference that no row uses is a failure (stale entry).
//! * **apply** rows: sift's per-packet verdicts on the capture must equal
//!   the row's `results:` list (or 1.10.3's unoptimized verdicts where the
//!   row is a master-only semantic fix).
//!
//! Rows on link types or with primitives this phase does not support are
//! counted as "unsupported (next issue)" and listed per link type.

mod testrun_common;

use sift_bpf::Insn;
use sift_ir::LinkType;
use sift_testkit::libpcap::{self, CheckedProgram};
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use testrun_common as common;
use testrun_common::Json;

/// Random packets per supported link type (besides the real captures).
const RANDOM_PACKETS: usize = 1500;
/// Packets guided through 1.10.3's program per group (half as many per master program).
const GUIDED_PACKETS: usize = 300;
/// Failures printed in full per kind (all are counted).
const MAX_PRINTED_FAILURES: usize = 40;
/// For rows that follow master's semantics: every truncation below
/// `TRUNCATED_MAX_LEN` bytes of the first `TRUNCATED_PACKETS` packets.
const TRUNCATED_PACKETS: usize = 8;
const TRUNCATED_MAX_LEN: usize = 64;

// ---------------------------------------------------------------------------
// Data

/// One row of `testrun-filters.tsv`.
#[derive(Clone, Debug)]
struct Row {
    dlt: String,
    expr: String,
    expected: String,
    optimize: bool,
    snaplen: Option<u32>,
    netmask: Option<String>,
    kind: String,
    label: String,
    requires: String,
    v1_10_3: String,
}

impl Row {
    fn snaplen(&self) -> u32 {
        self.snaplen.unwrap_or(common::DEFAULT_SNAPLEN)
    }

    /// The netmask as `pcap_compile` takes it (`None` = unknown). A
    /// malformed value is reported as an error row.
    fn netmask(&self) -> Result<Option<u32>, String> {
        match &self.netmask {
            None => Ok(None),
            // filtertest -m 255.255.255.255 is PCAP_NETMASK_UNKNOWN, which
            // sift's options spell `None`.
            Some(s) => match common::parse_netmask(s) {
                Some(libpcap::NETMASK_UNKNOWN) => Ok(None),
                Some(m) => Ok(Some(m)),
                None => Err(format!("bad netmask '{s}'")),
            },
        }
    }
}

/// The TSV rows, read once per test binary.
fn load_rows_cached() -> &'static [Row] {
    static ROWS: std::sync::OnceLock<Vec<Row>> = std::sync::OnceLock::new();
    ROWS.get_or_init(load_rows)
}

fn load_rows() -> Vec<Row> {
    let path = common::data_dir().join("libpcap-tests/testrun-filters.tsv");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().expect("empty TSV").split('\t').collect();
    assert_eq!(
        header,
        ["dlt", "expression", "expected", "optimize", "snaplen", "netmask", "kind", "test_label", "requires", "v1_10_3"],
        "unexpected TSV header"
    );
    let opt = |s: &str| (!s.is_empty()).then(|| s.to_string());
    lines
        .enumerate()
        .filter(|(_, l)| !l.is_empty())
        .map(|(n, l)| {
            let f: Vec<&str> = l.split('\t').collect();
            assert_eq!(f.len(), 10, "TSV line {}: {} fields", n + 2, f.len());
            Row {
                dlt: f[0].to_string(),
                expr: f[1].to_string(),
                expected: f[2].to_string(),
                optimize: f[3] == "1",
                snaplen: (!f[4].is_empty())
                    .then(|| f[4].parse().unwrap_or_else(|_| panic!("TSV line {}: bad snaplen", n + 2))),
                netmask: opt(f[5]),
                kind: f[6].to_string(),
                label: f[7].to_string(),
                requires: f[8].to_string(),
                v1_10_3: f[9].to_string(),
            }
        })
        .collect()
}

/// A reference program from a data file, by test label: the `-d` text, or
/// the error the compiler gave.
type ProgramTable = HashMap<String, Result<String, String>>;

fn load_programs(file: &str, text_key: &str, error_key: &str) -> ProgramTable {
    let path = common::data_dir().join("libpcap-tests").join(file);
    let mut out = HashMap::new();
    for obj in common::read_jsonl(&path) {
        let label = obj.get("test_label").and_then(Json::as_str).expect("row without test_label").to_string();
        let prog = match obj.get(text_key).and_then(Json::as_str) {
            Some(t) => Ok(t.to_string()),
            None => Err(obj.get(error_key).and_then(Json::as_str).unwrap_or("(no program)").to_string()),
        };
        out.insert(label, prog);
    }
    out
}

/// Which rows a known difference applies to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum KnownKind {
    /// An accept row where sift follows master's semantics: compared with
    /// master's program instead of 1.10.3's.
    Accept,
    /// A reject row that sift may compile.
    Reject,
    /// An apply row whose TESTrun results sift may differ from, on the
    /// packets the reason names.
    Apply,
}

/// Known, justified differences by (DLT, expression): the reason.
type KnownDifferences = HashMap<(String, String), String>;

/// Rows listed as known, justified differences
/// (`kind<TAB>dlt<TAB>expression<TAB>reason`, kind `accept` or `reject`;
/// `#` starts a comment line).
fn load_known_differences() -> BTreeMap<KnownKind, KnownDifferences> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/testrun_known_differences.tsv");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut lines = text.lines().filter(|l| !l.trim().is_empty() && !l.starts_with('#'));
    let header: Vec<&str> = lines.next().map(|h| h.split('\t').collect()).unwrap_or_default();
    assert_eq!(header, ["kind", "dlt", "expression", "reason"], "unexpected header in {}", path.display());
    let mut out: BTreeMap<KnownKind, KnownDifferences> = BTreeMap::new();
    out.insert(KnownKind::Accept, HashMap::new());
    out.insert(KnownKind::Reject, HashMap::new());
    out.insert(KnownKind::Apply, HashMap::new());
    for line in lines {
        let f: Vec<&str> = line.split('\t').collect();
        assert!(f.len() == 4 && !f[3].trim().is_empty(), "known difference without a reason: {line}");
        let kind = match f[0] {
            "accept" => KnownKind::Accept,
            "reject" => KnownKind::Reject,
            "apply" => KnownKind::Apply,
            k => panic!("known difference of unknown kind '{k}': {line}"),
        };
        assert!(common::is_supported_dlt(f[1]), "known difference on an unsupported DLT: {line}");
        let prev = out.entry(kind).or_default().insert((f[1].to_string(), f[2].to_string()), f[3].to_string());
        assert!(prev.is_none(), "duplicate known difference: {line}");
    }
    out
}

// ---------------------------------------------------------------------------
// Packets

/// The packets a link type is tested on.
struct PacketSet {
    packets: Vec<(Vec<u8>, u32)>,
    /// Where each packet comes from (`random #n`, `file.pcap #n`).
    origin: Vec<String>,
    random: usize,
    real: usize,
}

fn packet_sets(captures: &[common::Capture]) -> HashMap<String, PacketSet> {
    let mut out = HashMap::new();
    for (i, name) in common::supported_dlts().into_iter().enumerate() {
        let lt = LinkType::from_name(name).expect("supported DLT has a name");
        let mut rng = sift_testkit::Rng::fork(0x7e57_0001, i as u64);
        let mut set = PacketSet { packets: Vec::new(), origin: Vec::new(), random: 0, real: 0 };
        for n in 0..RANDOM_PACKETS {
            set.packets.push(sift_testkit::packets::random_packet(&mut rng, lt));
            set.origin.push(format!("random #{n}"));
        }
        set.random = RANDOM_PACKETS;
        for c in captures.iter().filter(|c| c.linktype == lt) {
            let file = c.path.file_name().map_or_else(String::new, |f| f.to_string_lossy().into_owned());
            for (n, p) in c.packets.iter().enumerate() {
                set.packets.push(p.clone());
                set.origin.push(format!("{file} #{}", n + 1));
                set.real += 1;
            }
        }
        out.insert((*name).to_string(), set);
    }
    out
}

/// The packets one group of rows is tested on: the link type's shared set
/// plus packets guided through the reference programs of the group.
struct GroupPackets<'a> {
    base: &'a PacketSet,
    extra: Vec<(Vec<u8>, u32)>,
}

impl GroupPackets<'_> {
    fn get(&self, k: usize) -> &(Vec<u8>, u32) {
        match self.base.packets.get(k) {
            Some(p) => p,
            None => &self.extra[k - self.base.packets.len()],
        }
    }

    fn iter(&self) -> impl Iterator<Item = &(Vec<u8>, u32)> {
        self.base.packets.iter().chain(self.extra.iter())
    }

    fn origin(&self, k: usize) -> String {
        match self.base.origin.get(k) {
            Some(o) => o.clone(),
            None => format!("guided/truncated #{}", k - self.base.packets.len()),
        }
    }

    /// Adds every truncation of the first `count` packets of the base set
    /// below `max_len` bytes (wire length kept): short packets, where
    /// loading or not loading a byte makes the difference.
    fn add_truncations(&mut self, count: usize, max_len: usize) {
        for (d, w) in self.base.packets.iter().take(count) {
            for n in 0..d.len().min(max_len) {
                self.extra.push((d[..n].to_vec(), *w));
            }
        }
    }

    /// Adds `count` packets guided through `prog`, seeded from the base set.
    fn add_guided(&mut self, prog: &[Insn], seed: u64, count: usize) {
        let mut rng = sift_testkit::Rng::new(seed);
        let seeds: Vec<(Vec<u8>, u32)> =
            self.base.packets.iter().filter(|(d, w)| d.len() as u64 == u64::from(*w) && d.len() < 4096).cloned().collect();
        let more = common::guided_packets(prog, &seeds, &mut rng, count);
        self.extra.extend(more);
    }
}

/// A stable seed from a text (FNV-1a).
fn seed_of(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
}

// ---------------------------------------------------------------------------
// Running programs

/// libpcap's own interpreter on every packet. A program with a backward
/// jump (`protochain`'s loop) runs in sift's interpreter instead: same
/// semantics, but it gives up after 64 backward jumps, where libpcap
/// 1.10.3's `bpf_filter` loops forever on a crafted AH chain (random
/// packets find such chains).
fn run_libpcap(p: &CheckedProgram, set: &GroupPackets<'_>) -> Vec<u32> {
    if common::has_backward_jump(p.insns()) {
        return set.iter().map(|(d, w)| common::sift_run(p.insns(), d, *w)).collect();
    }
    set.iter().map(|(d, w)| p.filter(d, *w)).collect()
}

/// sift's interpreter on every packet.
fn run_sift(prog: &[Insn], set: &GroupPackets<'_>) -> Vec<u32> {
    set.iter().map(|(d, w)| common::sift_run(prog, d, *w)).collect()
}

/// A reference program (libpcap's output): parsed and checked.
fn reference_program(text: &str) -> Result<CheckedProgram, String> {
    let insns = common::parse_d_text(text)?;
    CheckedProgram::new_allow_backward(&insns)
}

/// The register repair a known difference's reason asks for, written
/// `{repair pc<N: M[a]=>M[b], ...}`: in instructions before `N`, scratch
/// word `a` becomes `b` (libpcap gave a run-time offset's register to
/// another use; the repaired program is libpcap's intended one).
fn repair_spec(reason: &str) -> Option<(usize, Vec<(u32, u32)>)> {
    let rest = &reason[reason.find("{repair pc<")? + "{repair pc<".len()..];
    let (n, rest) = rest.split_once(':')?;
    let (pairs, _) = rest.split_once('}')?;
    let mut map = Vec::new();
    for pair in pairs.split(',') {
        let (a, b) = pair.trim().split_once("=>")?;
        let word = |t: &str| t.trim().strip_prefix("M[")?.strip_suffix(']')?.parse::<u32>().ok();
        map.push((word(a)?, word(b)?));
    }
    Some((n.trim().parse().ok()?, map))
}

/// Applies a register repair (see [`repair_spec`]) to a program.
fn repair(mut insns: Vec<Insn>, before: usize, map: &[(u32, u32)]) -> Vec<Insn> {
    use sift_bpf::insn::op;
    for i in insns.iter_mut().take(before) {
        let mem = matches!(i.code & 0x07, op::ST | op::STX) || (matches!(i.code & 0x07, op::LD | op::LDX) && i.code & 0xe0 == op::MEM);
        if let Some(&(_, to)) = map.iter().find(|(from, _)| mem && *from == i.k) {
            i.k = to;
        }
    }
    insns
}

/// Does the program read a scratch word that no earlier instruction
/// writes (libpcap's programs jump forward only, so "earlier" is enough)?
fn reads_unwritten_memory(insns: &[Insn]) -> bool {
    use sift_bpf::insn::op;
    let mut written = [false; 16];
    for i in insns {
        match i.code & 0x07 {
            op::ST | op::STX => written[(i.k & 15) as usize] = true,
            op::LD | op::LDX if i.code & 0xe0 == op::MEM && !written[(i.k & 15) as usize] => return true,
            _ => {}
        }
    }
    false
}

/// Master's program for a row, repaired if its known difference says so
/// (`None`: master has none).
fn master_program(ctx: &Ctx<'_>, r: &Row) -> Option<Result<CheckedProgram, String>> {
    let Some(Ok(text)) = ctx.masters.get(&r.label) else { return None };
    let spec = ctx.follows_master.get(&(r.dlt.clone(), r.expr.clone())).and_then(|reason| repair_spec(reason));
    Some(common::parse_d_text(text).and_then(|insns| match spec {
        Some((before, map)) => CheckedProgram::new_allow_backward(&repair(insns, before, &map)),
        None => CheckedProgram::new_allow_backward(&insns),
    }))
}

/// sift's interpreter must run a libpcap program exactly as libpcap's
/// `bpf_filter` does. Returns a failure description on the first difference.
fn check_interp_fidelity(
    what: &str,
    p: &CheckedProgram,
    expected: &[u32],
    set: &GroupPackets<'_>,
) -> Result<(), String> {
    for (i, (d, w)) in set.iter().enumerate() {
        let got = common::sift_run(p.insns(), d, *w);
        if got != expected[i] {
            return Err(format!(
                "sift's interpreter runs {what} differently from libpcap's bpf_filter: {} vs {} on {} (wire {w}, hex {})",
                got,
                expected[i],
                set.origin(i),
                common::hex(d, 96)
            ));
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Accept rows

#[derive(Clone, Debug)]
enum Outcome {
    SkippedPlatform,
    NotApplicable,
    Unsupported(&'static str),
    /// sift rejects an expression that 1.10.3 rejects too (master-only syntax).
    BothReject,
    /// Every packet agrees with 1.10.3 unoptimized and master's program.
    Agree,
    /// Agrees with 1.10.3 unoptimized; master expects no program (`opt => undef`).
    AgreeNoMaster,
    /// Agrees with 1.10.3 unoptimized; master's program is missing from the data file.
    AgreeMissingMaster,
    /// sift accepts master-only syntax that 1.10.3 rejects; agrees with master.
    AgreeMasterOnly,
    /// Disagrees with master where master's semantics differ from 1.10.3.
    ExplainedMaster(usize),
    /// Disagrees with master's optimized program where the optimizer changes verdicts.
    ExplainedOptimizer(usize),
    /// A known difference: sift follows master's semantics, agrees with
    /// master's program on every packet, and 1.10.3 differs on this many.
    FollowsMaster(usize),
    Fail(String),
}

#[derive(Default, Clone)]
struct AcceptStats {
    rows: usize,
    compiled: usize,
    with_names: usize,
    skipped_platform: usize,
    not_applicable: usize,
    unsupported: usize,
    both_reject: usize,
    agree: usize,
    agree_no_master: usize,
    agree_missing_master: usize,
    agree_master_only: usize,
    explained_master: usize,
    explained_optimizer: usize,
    follows_master: usize,
    fail: usize,
}

impl AcceptStats {
    fn add(&mut self, o: &Outcome, compiled: bool) {
        self.rows += 1;
        self.compiled += usize::from(compiled);
        match o {
            Outcome::SkippedPlatform => self.skipped_platform += 1,
            Outcome::NotApplicable => self.not_applicable += 1,
            Outcome::Unsupported(_) => self.unsupported += 1,
            Outcome::BothReject => self.both_reject += 1,
            Outcome::Agree => self.agree += 1,
            Outcome::AgreeNoMaster => self.agree_no_master += 1,
            Outcome::AgreeMissingMaster => self.agree_missing_master += 1,
            Outcome::AgreeMasterOnly => self.agree_master_only += 1,
            Outcome::ExplainedMaster(_) => self.explained_master += 1,
            Outcome::ExplainedOptimizer(_) => self.explained_optimizer += 1,
            Outcome::FollowsMaster(_) => self.follows_master += 1,
            Outcome::Fail(_) => self.fail += 1,
        }
    }

    fn merge(&mut self, o: &AcceptStats) {
        self.rows += o.rows;
        self.compiled += o.compiled;
        self.with_names += o.with_names;
        self.skipped_platform += o.skipped_platform;
        self.not_applicable += o.not_applicable;
        self.unsupported += o.unsupported;
        self.both_reject += o.both_reject;
        self.agree += o.agree;
        self.agree_no_master += o.agree_no_master;
        self.agree_missing_master += o.agree_missing_master;
        self.agree_master_only += o.agree_master_only;
        self.explained_master += o.explained_master;
        self.explained_optimizer += o.explained_optimizer;
        self.follows_master += o.follows_master;
        self.fail += o.fail;
    }

    fn passed(&self) -> usize {
        self.agree
            + self.agree_no_master
            + self.agree_missing_master
            + self.agree_master_only
            + self.explained_master
            + self.explained_optimizer
            + self.follows_master
            + self.both_reject
    }
}

/// The shared inputs of the accept-row workers.
struct Ctx<'a> {
    rows: &'a [Row],
    masters: &'a ProgramTable,
    v1_10_3: &'a ProgramTable,
    /// Accept rows where sift follows master's semantics (by DLT, expression).
    follows_master: &'a KnownDifferences,
    sets: &'a HashMap<String, PacketSet>,
    /// Coverage counters: packet views compared with 1.10.3, how many it
    /// accepted, and the same for the guided packets alone.
    views: AtomicUsize,
    accepted: AtomicUsize,
    guided_views: AtomicUsize,
    guided_accepted: AtomicUsize,
}

/// The outcome of an accept row that is not run (skips), if any.
fn accept_precheck(row: &Row) -> Option<Outcome> {
    // Rows that need TESTrun's hosts/networks/ethers entries run with its
    // tables (`common::testrun_names`); 1.10.3 (the system's resolver) then
    // rejects them, so master's program judges them.
    if !row.requires.is_empty() && !common::requires_names(&row.requires) {
        // TESTrun's other conditions skip on Linux little-endian hosts
        // (`is not macOS`, `little-endian`, `HAVE_DECL_SKF_AD_...`).
        return Some(Outcome::SkippedPlatform);
    }
    if row.v1_10_3.starts_with("n/a") || row.expr == "_enumerate_bpf_image" {
        // filtertest-only modes: -l (Linux extensions), -S (savefile
        // filter), bpf_image enumeration.
        return Some(Outcome::NotApplicable);
    }
    None
}

/// Runs one group of accept rows sharing (DLT, expression, snaplen,
/// netmask). Returns (row index, outcome, sift compiled?) per row.
fn run_accept_group(ctx: &Ctx<'_>, members: &[usize]) -> Vec<(usize, Outcome, bool)> {
    let mut out = Vec::new();
    let mut live = Vec::new();
    for &i in members {
        match accept_precheck(&ctx.rows[i]) {
            Some(o) => out.push((i, o, false)),
            None => live.push(i),
        }
    }
    let Some(&first) = live.first() else { return out };
    let row = &ctx.rows[first];
    let fail_all = |out: &mut Vec<(usize, Outcome, bool)>, msg: String, compiled: bool| {
        for &i in &live {
            out.push((i, Outcome::Fail(msg.clone()), compiled));
        }
    };
    let netmask = match row.netmask() {
        Ok(n) => n,
        Err(e) => {
            fail_all(&mut out, e, false);
            return out;
        }
    };
    let lt = LinkType::from_name(&row.dlt).expect("supported DLT");
    let mut set = GroupPackets { base: &ctx.sets[&row.dlt], extra: Vec::new() };
    let sift = common::sift_compile(&row.expr, lt, row.snaplen(), netmask);
    let oracle = libpcap::compile(&row.expr, lt.0, row.snaplen(), netmask, false);
    // Packets steered through 1.10.3's and master's programs, so that the
    // accepting paths are exercised too.
    let seed = seed_of(&format!("{}\t{}", row.dlt, row.expr));
    if let Ok(p) = &oracle {
        set.add_guided(p, seed, GUIDED_PACKETS);
    }
    for (n, &i) in live.iter().enumerate() {
        if let Some(Ok(p)) = master_program(ctx, &ctx.rows[i]) {
            set.add_guided(p.insns(), seed ^ (n as u64 + 1), GUIDED_PACKETS / 2);
        }
    }
    let follows_master = ctx.follows_master.contains_key(&(row.dlt.clone(), row.expr.clone()));
    if follows_master {
        set.add_truncations(TRUNCATED_PACKETS, TRUNCATED_MAX_LEN);
    }
    let set = &set;

    let sift = match sift {
        Err(e) => {
            let o = if let Some(family) = common::unsupported_feature(&row.expr) {
                Outcome::Unsupported(family)
            } else if common::requires_names(&row.requires) {
                // 1.10.3 cannot resolve TESTrun's names here: its rejection says nothing.
                Outcome::Fail(format!("sift rejects ({e}) with TESTrun's names; master compiles it"))
            } else if oracle.is_err() {
                Outcome::BothReject
            } else {
                Outcome::Fail(format!("sift rejects ({e}); libpcap 1.10.3 compiles it"))
            };
            for &i in &live {
                out.push((i, o.clone(), false));
            }
            return out;
        }
        Ok(s) => s,
    };
    let sift_i = run_sift(&sift.program, set);
    let sift_e: Vec<bool> = set.iter().map(|(d, w)| common::sift_eval(&sift.pred, d, *w)).collect();

    // sift accepts what 1.10.3 rejects: only master can judge it. (Rows
    // that need TESTrun's names get here too: the live 1.10.3 resolves with
    // the system.) An optimized row may differ from sift where master's
    // optimizer changes verdicts, i.e. where master's unoptimized program
    // for the same expression agrees with sift.
    let oracle = match oracle {
        Err(oerr) => {
            let master_unopt: Option<Vec<u32>> = live
                .iter()
                .map(|&i| &ctx.rows[i])
                .find(|r| !r.optimize)
                .and_then(|r| master_program(ctx, r).and_then(Result::ok))
                .map(|p| run_libpcap(&p, set));
            for &i in &live {
                let r = &ctx.rows[i];
                let o = match master_program(ctx, r) {
                    Some(mp) => match mp {
                        Ok(mp) => {
                            let mv = run_libpcap(&mp, set);
                            let sift_ok = |k: usize| sift_e[k] == (sift_i[k] != 0);
                            let optimizer_only = r.optimize
                                && master_unopt.as_ref().is_some_and(|mu| {
                                    (0..mv.len()).all(|k| sift_ok(k) && (mu[k] != 0) == (sift_i[k] != 0))
                                });
                            let diffs = (0..mv.len()).filter(|&k| (mv[k] != 0) != (sift_i[k] != 0)).count();
                            match (0..mv.len()).find(|&k| (mv[k] != 0) != (sift_i[k] != 0) || !sift_ok(k)) {
                                None => Outcome::AgreeMasterOnly,
                                Some(_) if optimizer_only => Outcome::ExplainedOptimizer(diffs),
                                Some(k) => Outcome::Fail(format!(
                                    "1.10.3 rejects ({oerr}), sift accepts and disagrees with master: master {} sift {}/{} on {} (wire {}, hex {})",
                                    mv[k], sift_i[k], sift_e[k], set.origin(k), set.get(k).1, common::hex(&set.get(k).0, 96)
                                )),
                            }
                        }
                        Err(e) => Outcome::Fail(format!("master program unreadable: {e}")),
                    },
                    _ => Outcome::Fail(format!("sift accepts what libpcap 1.10.3 rejects ({oerr}) and master has no program")),
                };
                out.push((i, o, true));
            }
            return out;
        }
        Ok(p) => p,
    };
    let oracle = match CheckedProgram::new_allow_backward(&oracle) {
        Ok(p) => p,
        Err(e) => {
            fail_all(&mut out, format!("libpcap 1.10.3's program fails the check: {e}"), true);
            return out;
        }
    };
    let truth = run_libpcap(&oracle, set);
    let nbase = set.base.packets.len();
    ctx.views.fetch_add(truth.len(), Ordering::Relaxed);
    ctx.accepted.fetch_add(truth.iter().filter(|&&v| v != 0).count(), Ordering::Relaxed);
    ctx.guided_views.fetch_add(truth.len() - nbase, Ordering::Relaxed);
    ctx.guided_accepted.fetch_add(truth[nbase..].iter().filter(|&&v| v != 0).count(), Ordering::Relaxed);

    // A known difference: master's semantics instead of 1.10.3's.
    if follows_master {
        for &i in &live {
            out.push((i, follows_master_outcome(ctx, &ctx.rows[i], &sift_i, &sift_e, &truth, set), true));
        }
        return out;
    }

    // (a) zero tolerance against 1.10.3 unoptimized.
    for (k, (d, w)) in set.iter().enumerate() {
        if sift_i[k] != truth[k] || sift_e[k] != (truth[k] != 0) {
            let msg = format!(
                "sift != libpcap 1.10.3 unoptimized: 1.10.3 {} | sift program {} | sift evaluator {} on {} (wire {w}, caplen {}, hex {})",
                truth[k],
                sift_i[k],
                sift_e[k],
                set.origin(k),
                d.len(),
                common::hex(d, 128)
            );
            fail_all(&mut out, msg, true);
            return out;
        }
    }
    if let Err(e) = check_interp_fidelity("1.10.3's program", &oracle, &truth, set) {
        fail_all(&mut out, e, true);
        return out;
    }

    // (b) against master, per row.
    for &i in &live {
        let r = &ctx.rows[i];
        // The data file's 1.10.3 program of an unoptimized row must be
        // the live oracle's program (else the oracle is not what the data says).
        let v13_row = ctx.v1_10_3.get(&r.label);
        if !r.optimize {
            if let Some(Ok(text)) = v13_row {
                match common::parse_d_text(text) {
                    Ok(p) if p.as_slice() == oracle.insns() => {}
                    Ok(_) => {
                        out.push((i, Outcome::Fail("testrun-libpcap-1.10.3.jsonl program differs from the live libpcap".into()), true));
                        continue;
                    }
                    Err(e) => {
                        out.push((i, Outcome::Fail(format!("1.10.3 program text unreadable: {e}")), true));
                        continue;
                    }
                }
            }
        }
        let master = match ctx.masters.get(&r.label) {
            Some(Ok(text)) => text,
            Some(Err(_)) => {
                out.push((i, Outcome::AgreeNoMaster, true));
                continue;
            }
            None => {
                // A gap in testrun-master-bytecode.jsonl (its hash is in the
                // TSV, its text is not): only 1.10.3 can judge this row.
                out.push((i, Outcome::AgreeMissingMaster, true));
                continue;
            }
        };
        if r.expected.starts_with("bytecode:") && common::bytecode_hash(master) != r.expected {
            out.push((i, Outcome::Fail("master program text does not match the TSV's hash".into()), true));
            continue;
        }
        let mp = match reference_program(master) {
            Ok(p) => p,
            Err(e) => {
                out.push((i, Outcome::Fail(format!("master program unreadable: {e}")), true));
                continue;
            }
        };
        let mv = run_libpcap(&mp, set);
        if let Err(e) = check_interp_fidelity("master's program", &mp, &mv, set) {
            out.push((i, Outcome::Fail(e), true));
            continue;
        }
        // 1.10.3's program for this row (its optimized one for an optimized
        // row); sift's interpreter must run it as libpcap does, too.
        let v13_row_verdicts: Option<Vec<u32>> = if r.optimize {
            match v13_row {
                Some(Ok(text)) => match reference_program(text) {
                    Ok(p) => {
                        let v = run_libpcap(&p, set);
                        if let Err(e) = check_interp_fidelity("1.10.3's optimized program", &p, &v, set) {
                            out.push((i, Outcome::Fail(e), true));
                            continue;
                        }
                        Some(v)
                    }
                    Err(e) => {
                        out.push((i, Outcome::Fail(format!("1.10.3 program text unreadable: {e}")), true));
                        continue;
                    }
                },
                _ => None,
            }
        } else {
            None
        };
        let diffs: Vec<usize> = (0..mv.len()).filter(|&k| (mv[k] != 0) != (truth[k] != 0)).collect();
        if diffs.is_empty() {
            out.push((i, Outcome::Agree, true));
            continue;
        }
        let v13_row_verdicts = v13_row_verdicts.or_else(|| (!r.optimize).then(|| truth.clone()));
        let (mut semantics, mut optimizer) = (0usize, 0usize);
        let mut unexplained = None;
        for &k in &diffs {
            let m = mv[k] != 0;
            if v13_row_verdicts.as_ref().is_some_and(|v| (v[k] != 0) != m) {
                semantics += 1;
            } else if r.optimize {
                // 1.10.3 unoptimized (= sift) differs from both optimized programs.
                optimizer += 1;
            } else {
                unexplained.get_or_insert(k);
            }
        }
        let o = if let Some(k) = unexplained {
            Outcome::Fail(format!(
                "unexplained disagreement with master: master {} sift {} on {}",
                mv[k], sift_i[k], set.origin(k)
            ))
        } else if semantics > 0 {
            Outcome::ExplainedMaster(semantics)
        } else {
            Outcome::ExplainedOptimizer(optimizer)
        };
        out.push((i, o, true));
    }
    out
}

/// An accept row listed as a known difference (sift follows master's
/// semantics): sift's program and evaluator must give exactly the verdicts
/// of master's program for the row on every packet, and 1.10.3's (`truth`)
/// must differ on at least one, or the entry is not needed.
fn follows_master_outcome(
    ctx: &Ctx<'_>,
    r: &Row,
    sift_i: &[u32],
    sift_e: &[bool],
    truth: &[u32],
    set: &GroupPackets<'_>,
) -> Outcome {
    let Some(Ok(master)) = ctx.masters.get(&r.label) else {
        return Outcome::Fail("listed as following master's semantics, but master has no program for the row".into());
    };
    if r.expected.starts_with("bytecode:") && common::bytecode_hash(master) != r.expected {
        return Outcome::Fail("master program text does not match the TSV's hash".into());
    }
    let mp = match master_program(ctx, r) {
        Some(Ok(p)) => p,
        Some(Err(e)) => return Outcome::Fail(format!("master program unreadable: {e}")),
        None => return Outcome::Fail("master program missing".into()),
    };
    // A repaired program: the entry is needed while master's own program
    // reads scratch memory it never wrote (1.10.3's verdicts are then
    // undefined, so they are not compared).
    let repaired = ctx.follows_master.get(&(r.dlt.clone(), r.expr.clone())).and_then(|reason| repair_spec(reason));
    if repaired.is_some() && !common::parse_d_text(master).is_ok_and(|p| reads_unwritten_memory(&p)) {
        return Outcome::Fail("listed with a register repair, but master's program reads no unwritten scratch memory: remove the entry".into());
    }
    let mv = run_libpcap(&mp, set);
    if let Err(e) = check_interp_fidelity("master's program", &mp, &mv, set) {
        return Outcome::Fail(e);
    }
    if let Some(k) = (0..mv.len()).find(|&k| sift_i[k] != mv[k] || sift_e[k] != (mv[k] != 0)) {
        let (d, w) = set.get(k);
        return Outcome::Fail(format!(
            "sift != libpcap master (known difference: sift follows master): master {} | sift program {} | sift evaluator {} on {} (wire {w}, caplen {}, hex {})",
            mv[k],
            sift_i[k],
            sift_e[k],
            set.origin(k),
            d.len(),
            common::hex(d, 128)
        ));
    }
    match (0..mv.len()).filter(|&k| (mv[k] != 0) != (truth[k] != 0)).count() {
        n if repaired.is_some() => Outcome::FollowsMaster(n),
        0 => Outcome::Fail(
            "listed as a known difference, but libpcap 1.10.3 agrees with master on every packet: remove the entry".into(),
        ),
        n => Outcome::FollowsMaster(n),
    }
}

// ---------------------------------------------------------------------------
// Reject rows

/// For an expression libpcap rejects only when optimizing: 1.10.3 must
/// compile it unoptimized, and sift's program (and evaluator) must reject
/// every packet of the link type, plus packets guided through sift's program
/// and 1.10.3's towards acceptance.
fn reject_all_check(
    f: &common::SiftFilter,
    expr: &str,
    lt: LinkType,
    snaplen: u32,
    netmask: Option<u32>,
    base: &PacketSet,
) -> Result<(), String> {
    let oracle = libpcap::compile(expr, lt.0, snaplen, netmask, false)
        .map_err(|e| format!("sift compiles it, but libpcap 1.10.3 rejects it even unoptimized: {e}"))?;
    let mut set = GroupPackets { base, extra: Vec::new() };
    let seed = seed_of(expr);
    set.add_guided(&f.program, seed, GUIDED_PACKETS);
    set.add_guided(&oracle, seed ^ 1, GUIDED_PACKETS);
    for (k, (d, w)) in set.iter().enumerate() {
        if common::sift_run(&f.program, d, *w) != 0 || common::sift_eval(&f.pred, d, *w) {
            return Err(format!(
                "libpcap's optimizer says it rejects all packets, but sift accepts {} (wire {w}, hex {})",
                set.origin(k),
                common::hex(d, 128)
            ));
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Reporting helpers

fn print_failures(kind: &str, failures: &[String]) {
    if failures.is_empty() {
        return;
    }
    println!("--- {kind} failures ({}):", failures.len());
    for f in failures.iter().take(MAX_PRINTED_FAILURES) {
        println!("  FAIL {f}");
    }
    if failures.len() > MAX_PRINTED_FAILURES {
        println!("  ... and {} more", failures.len() - MAX_PRINTED_FAILURES);
    }
}

#[test]
fn testrun_rows() {
    if !common::require_data() {
        return;
    }
    let rows = load_rows_cached();
    let masters = load_programs("testrun-master-bytecode.jsonl", "expected_bytecode", "expected_error");
    let v1_10_3 = load_programs("testrun-libpcap-1.10.3.jsonl", "bytecode", "error");
    let known = load_known_differences();
    let known_accept = &known[&KnownKind::Accept];
    let known_reject = &known[&KnownKind::Reject];
    let captures = common::all_captures();
    let sets = packet_sets(&captures);
    println!("libpcap oracle: {}", libpcap::version());
    for name in common::supported_dlts() {
        let s = &sets[name];
        println!("packets for {name}: {} random + {} from captures", s.random, s.real);
    }

    let mut summary = String::new();
    // Rows on link types this phase does not support, per (kind, DLT).
    let mut unsupported_dlt: BTreeMap<String, BTreeMap<String, usize>> = BTreeMap::new();
    let kind_of = |r: &Row| r.kind.split(':').next().unwrap_or("").to_string();
    for r in rows {
        if !common::is_supported_dlt(&r.dlt) {
            *unsupported_dlt.entry(kind_of(r)).or_default().entry(r.dlt.clone()).or_default() += 1;
        }
    }

    // ---------------- accept
    // Rows sharing (DLT, expression, snaplen, netmask) share sift's and 1.10.3's programs.
    type GroupKey = (String, String, Option<u32>, Option<String>);
    let mut groups: BTreeMap<GroupKey, Vec<usize>> = BTreeMap::new();
    for (i, r) in rows.iter().enumerate() {
        if r.kind == "accept" && common::is_supported_dlt(&r.dlt) {
            groups.entry((r.dlt.clone(), r.expr.clone(), r.snaplen, r.netmask.clone())).or_default().push(i);
        }
    }
    let groups: Vec<Vec<usize>> = groups.into_values().collect();
    let ctx = Ctx {
        rows,
        masters: &masters,
        v1_10_3: &v1_10_3,
        follows_master: known_accept,
        sets: &sets,
        views: AtomicUsize::new(0),
        accepted: AtomicUsize::new(0),
        guided_views: AtomicUsize::new(0),
        guided_accepted: AtomicUsize::new(0),
    };
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<(usize, Outcome, bool)>> = Mutex::new(Vec::new());
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get()).min(8);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let g = next.fetch_add(1, Ordering::Relaxed);
                let Some(members) = groups.get(g) else { break };
                let r = run_accept_group(&ctx, members);
                results.lock().unwrap_or_else(|e| e.into_inner()).extend(r);
            });
        }
    });
    let mut results = results.into_inner().unwrap_or_else(|e| e.into_inner());
    results.sort_by_key(|r| r.0);
    let mut per_dlt: BTreeMap<String, AcceptStats> = BTreeMap::new();
    let mut unsupported_families: BTreeMap<(String, &'static str), usize> = BTreeMap::new();
    let mut unsupported_exprs: BTreeMap<&'static str, std::collections::BTreeSet<String>> = BTreeMap::new();
    let mut failures = Vec::new();
    let mut explained_master: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut explained_opt: Vec<String> = Vec::new();
    let mut follows_master: Vec<String> = Vec::new();
    // Known differences used by some row, to find stale entries.
    let mut known_seen: std::collections::HashSet<(KnownKind, String, String)> = std::collections::HashSet::new();
    let mut both_reject: Vec<String> = Vec::new();
    let mut master_only: Vec<String> = Vec::new();
    let mut missing_master: Vec<String> = Vec::new();
    for (i, o, compiled) in &results {
        let r = &rows[*i];
        let st = per_dlt.entry(r.dlt.clone()).or_default();
        st.add(o, *compiled);
        st.with_names += usize::from(common::requires_names(&r.requires));
        if known_accept.contains_key(&(r.dlt.clone(), r.expr.clone())) && !matches!(o, Outcome::SkippedPlatform | Outcome::NotApplicable) {
            known_seen.insert((KnownKind::Accept, r.dlt.clone(), r.expr.clone()));
        }
        match o {
            Outcome::Unsupported(f) => {
                *unsupported_families.entry((r.dlt.clone(), f)).or_default() += 1;
                unsupported_exprs.entry(f).or_default().insert(format!("[{}] {:?}", r.dlt, r.expr));
            }
            Outcome::Fail(m) => failures.push(format!("[{}] {} {:?} ({}): {m}", r.dlt, r.label, r.expr, if r.optimize { "opt" } else { "unopt" })),
            Outcome::ExplainedMaster(n) => explained_master
                .entry(r.dlt.clone())
                .or_default()
                .push(format!("{:?}{} ({n} pkts)", r.expr, if r.optimize { " [opt]" } else { "" })),
            Outcome::ExplainedOptimizer(n) => explained_opt.push(format!("[{}] {:?} ({n} pkts)", r.dlt, r.expr)),
            Outcome::FollowsMaster(n) => follows_master.push(format!(
                "[{}] {:?}{} (1.10.3 differs on {n} pkts): {}",
                r.dlt,
                r.expr,
                if r.optimize { " [opt]" } else { "" },
                known_accept.get(&(r.dlt.clone(), r.expr.clone())).map_or("", String::as_str)
            )),
            Outcome::BothReject => both_reject.push(format!("[{}] {:?}", r.dlt, r.expr)),
            Outcome::AgreeMasterOnly => master_only.push(format!("[{}] {:?}", r.dlt, r.expr)),
            Outcome::AgreeMissingMaster => missing_master.push(r.label.clone()),
            _ => {}
        }
    }
    println!("\n=== TESTrun accept rows (supported link types)");
    println!(
        "{:<11} {:>5} {:>8} {:>7} {:>8} {:>5} {:>6} {:>7} {:>6} {:>7} {:>7} {:>7} {:>5}",
        "DLT", "rows", "compiled", "names", "skipPlat", "n/a", "unsup", "agree", "noMstr", "mstrOnly", "explSem", "explOpt", "fail"
    );
    let mut total = AcceptStats::default();
    for (dlt, s) in &per_dlt {
        println!(
            "{:<11} {:>5} {:>8} {:>7} {:>8} {:>5} {:>6} {:>7} {:>6} {:>7} {:>7} {:>7} {:>5}",
            dlt,
            s.rows,
            s.compiled,
            s.with_names,
            s.skipped_platform,
            s.not_applicable,
            s.unsupported,
            s.agree,
            s.agree_no_master + s.agree_missing_master,
            s.agree_master_only,
            s.explained_master,
            s.explained_optimizer,
            s.fail
        );
        total.merge(s);
    }
    println!(
        "(names = of the rows, run with TESTrun's hosts/ethers/networks tables; skipPlat = TESTrun skips it on Linux little-endian; n/a = filtertest-only mode;\n \
         noMstr = no master program (opt => undef, or missing from the data file), checked against 1.10.3 only; mstrOnly = master-only syntax sift accepts, agrees with master;\n \
         explSem = differs from master where master's semantics differ from 1.10.3; explOpt = differs from master's optimized program where the optimizer changes verdicts)"
    );
    println!(
        "packet views compared with 1.10.3: {} ({} accepted by it); of them guided through the programs: {} ({} accepted)",
        ctx.views.load(Ordering::Relaxed),
        ctx.accepted.load(Ordering::Relaxed),
        ctx.guided_views.load(Ordering::Relaxed),
        ctx.guided_accepted.load(Ordering::Relaxed)
    );
    if !both_reject.is_empty() {
        println!("rejected by sift and by 1.10.3 (master-only syntax): {}", both_reject.join(", "));
    }
    if !missing_master.is_empty() {
        println!(
            "master program missing from testrun-master-bytecode.jsonl (data gap; checked against 1.10.3 only): {}",
            missing_master.join(", ")
        );
    }
    if !master_only.is_empty() {
        println!("master-only syntax accepted by sift: {}", master_only.join(", "));
    }
    for (dlt, list) in &explained_master {
        println!("master changed semantics [{dlt}] ({} rows): {}", list.len(), list.join(", "));
    }
    if !explained_opt.is_empty() {
        println!("libpcap optimizer changes verdicts ({} rows): {}", explained_opt.len(), explained_opt.join(", "));
    }
    for f in &follows_master {
        println!("known difference, sift follows master's semantics (compared with master's program): {f}");
    }
    if !unsupported_families.is_empty() {
        let list: Vec<String> = unsupported_families.iter().map(|((d, f), n)| format!("{d}/{f}: {n}")).collect();
        println!("unsupported (next issue) by feature: {}", list.join(", "));
        for (f, exprs) in &unsupported_exprs {
            let v: Vec<&str> = exprs.iter().map(String::as_str).collect();
            println!("  {f}: {}", v.join(", "));
        }
    }
    print_failures("accept", &failures);
    let accept_fail = total.fail;
    let _ = writeln!(
        summary,
        "testrun accept: {} rows for supported DLTs: {} pass ({} agree with master, {} explained: {} master semantics + {} optimizer, {} follow master's semantics by decision (known differences), {} without master program, {} master-only syntax, {} rejected like 1.10.3), \
         {} of them with TESTrun's name tables, {} skipped (other OS/byte order), {} n/a (filtertest-only mode), {} unsupported (next issue), {} fail",
        total.rows,
        total.passed(),
        total.agree,
        total.explained_master + total.explained_optimizer,
        total.explained_master,
        total.explained_optimizer,
        total.follows_master,
        total.agree_no_master + total.agree_missing_master,
        total.agree_master_only,
        total.both_reject,
        total.with_names,
        total.skipped_platform,
        total.not_applicable,
        total.unsupported,
        total.fail
    );

    // ---------------- reject
    #[derive(Default)]
    struct RejectStats {
        rows: usize,
        rejected: usize,
        master_stricter: usize,
        with_names: usize,
        skipped_platform: usize,
        optimizer_only: usize,
        known: usize,
        fail: usize,
    }
    let mut rstats: BTreeMap<String, RejectStats> = BTreeMap::new();
    let mut rfailures = Vec::new();
    let mut known_used = Vec::new();
    let mut savefile_rows = 0usize;
    for r in rows {
        if r.kind == "reject-savefile" {
            savefile_rows += 1;
            continue;
        }
        if r.kind != "reject" || !common::is_supported_dlt(&r.dlt) {
            continue;
        }
        let s = rstats.entry(r.dlt.clone()).or_default();
        s.rows += 1;
        s.with_names += usize::from(common::requires_names(&r.requires));
        if !r.requires.is_empty() && !common::requires_names(&r.requires) {
            s.skipped_platform += 1;
            continue;
        }
        let lt = LinkType::from_name(&r.dlt).expect("supported DLT");
        let netmask = match r.netmask() {
            Ok(n) => n,
            Err(e) => {
                s.fail += 1;
                rfailures.push(format!("[{}] {}: {e}", r.dlt, r.label));
                continue;
            }
        };
        let compiled = common::sift_compile(&r.expr, lt, r.snaplen(), netmask);
        // "expression rejects all packets" is an optimizer verdict: libpcap
        // unoptimized compiles such expressions to a program that rejects
        // everything, and sift follows the unoptimized compiler. So sift may
        // compile them, if 1.10.3 unoptimized does and sift's program rejects
        // every packet (including packets steered towards acceptance).
        if r.optimize && r.expected == "error: expression rejects all packets" {
            if let Ok(f) = &compiled {
                match reject_all_check(f, &r.expr, lt, r.snaplen(), netmask, &sets[&r.dlt]) {
                    Ok(()) => s.optimizer_only += 1,
                    Err(e) => {
                        s.fail += 1;
                        rfailures.push(format!("[{}] {} {:?}: {e}", r.dlt, r.label, r.expr));
                    }
                }
                continue;
            }
        }
        match compiled {
            Err(_) => {
                s.rejected += 1;
                if r.v1_10_3.starts_with("COMPILES") {
                    s.master_stricter += 1;
                }
            }
            Ok(_) => {
                if let Some(reason) = known_reject.get(&(r.dlt.clone(), r.expr.clone())) {
                    known_seen.insert((KnownKind::Reject, r.dlt.clone(), r.expr.clone()));
                    s.known += 1;
                    known_used.push(format!("[{}] {:?}: {reason}", r.dlt, r.expr));
                } else {
                    s.fail += 1;
                    rfailures.push(format!(
                        "[{}] {} {:?}: sift accepts; master expects {:?}; 1.10.3: {}",
                        r.dlt, r.label, r.expr, r.expected, r.v1_10_3
                    ));
                }
            }
        }
    }
    println!("\n=== TESTrun reject rows (supported link types)");
    println!(
        "{:<11} {:>5} {:>8} {:>14} {:>8} {:>7} {:>8} {:>6} {:>5}",
        "DLT", "rows", "rejected", "(1.10.3 acc.)", "optOnly", "names", "skipPlat", "known", "fail"
    );
    let mut rt = RejectStats::default();
    for (dlt, s) in &rstats {
        println!(
            "{:<11} {:>5} {:>8} {:>14} {:>8} {:>7} {:>8} {:>6} {:>5}",
            dlt, s.rows, s.rejected, s.master_stricter, s.optimizer_only, s.with_names, s.skipped_platform, s.known, s.fail
        );
        rt.rows += s.rows;
        rt.rejected += s.rejected;
        rt.master_stricter += s.master_stricter;
        rt.with_names += s.with_names;
        rt.skipped_platform += s.skipped_platform;
        rt.optimizer_only += s.optimizer_only;
        rt.known += s.known;
        rt.fail += s.fail;
    }
    for k in &known_used {
        println!("  known difference: {k}");
    }
    println!(
        "(optOnly = libpcap rejects it only when optimizing ('expression rejects all packets'); sift compiles it like 1.10.3 unoptimized\n          and its program rejects every packet tried; {savefile_rows} reject-savefile rows are savefile-reader tests, not filter expressions: not run here)"
    );
    print_failures("reject", &rfailures);
    let _ = writeln!(
        summary,
        "testrun reject: {} rows for supported DLTs: {} pass ({} rejected, {} of them where 1.10.3 accepts and master rejects; \
         {} optimizer-only rejections compiled to a reject-all program), {} known differences, \
         {} of them with TESTrun's name tables, {} skipped (other OS/byte order), {} fail",
        rt.rows,
        rt.rejected + rt.optimizer_only,
        rt.rejected,
        rt.master_stricter,
        rt.optimizer_only,
        rt.known,
        rt.with_names,
        rt.skipped_platform,
        rt.fail
    );

    // ---------------- apply
    #[derive(Default)]
    struct ApplyStats {
        rows: usize,
        pass_results: usize,
        pass_v1_10_3: usize,
        with_names: usize,
        unsupported: usize,
        known: usize,
        fail: usize,
    }
    let known_apply = &known[&KnownKind::Apply];
    let mut astats: BTreeMap<String, ApplyStats> = BTreeMap::new();
    let mut afailures = Vec::new();
    let mut aunsupported: BTreeMap<&'static str, usize> = BTreeMap::new();
    let mut capture_cache: HashMap<String, Result<common::Capture, String>> = HashMap::new();
    for r in rows {
        let Some(file) = r.kind.strip_prefix("apply:") else { continue };
        if !common::is_supported_dlt(&r.dlt) {
            continue;
        }
        let s = astats.entry(r.dlt.clone()).or_default();
        s.rows += 1;
        s.with_names += usize::from(common::requires_names(&r.requires));
        let cap = capture_cache
            .entry(file.to_string())
            .or_insert_with(|| common::read_capture(&common::data_dir().join("pcaps/libpcap-filter").join(file)));
        let cap = match cap {
            Ok(c) => &*c,
            Err(e) => {
                s.fail += 1;
                afailures.push(format!("[{}] {}: capture {file} unreadable: {e}", r.dlt, r.label));
                continue;
            }
        };
        let lt = LinkType::from_name(&r.dlt).expect("supported DLT");
        if cap.linktype != lt {
            s.fail += 1;
            afailures.push(format!("[{}] {}: capture {file} has link type {}", r.dlt, r.label, cap.linktype));
            continue;
        }
        let expected: Vec<bool> = match r.expected.strip_prefix("results:") {
            Some(list) => list.split(',').filter(|v| !v.is_empty()).map(|v| v.trim() != "0").collect(),
            None => {
                s.fail += 1;
                afailures.push(format!("[{}] {}: no results list: {}", r.dlt, r.label, r.expected));
                continue;
            }
        };
        let netmask = match r.netmask() {
            Ok(n) => n,
            Err(e) => {
                s.fail += 1;
                afailures.push(format!("[{}] {}: {e}", r.dlt, r.label));
                continue;
            }
        };
        let sift = match common::sift_compile(&r.expr, lt, cap.snaplen, netmask) {
            Ok(f) => f,
            Err(e) => {
                if let Some(family) = common::unsupported_feature(&r.expr) {
                    s.unsupported += 1;
                    *aunsupported.entry(family).or_default() += 1;
                } else {
                    s.fail += 1;
                    afailures.push(format!("[{}] {} {:?} on {file}: sift rejects: {e}", r.dlt, r.label, r.expr));
                }
                continue;
            }
        };
        if expected.len() != cap.packets.len() {
            s.fail += 1;
            afailures.push(format!(
                "[{}] {}: {} results for {} packets in {file}",
                r.dlt,
                r.label,
                expected.len(),
                cap.packets.len()
            ));
            continue;
        }
        let oracle: Option<Vec<bool>> = libpcap::compile(&r.expr, lt.0, cap.snaplen, netmask, false)
            .ok()
            .and_then(|p| CheckedProgram::new_allow_backward(&p).ok())
            .map(|p| cap.packets.iter().map(|(d, w)| p.filter(d, *w) != 0).collect());
        let got: Vec<(bool, bool)> = cap
            .packets
            .iter()
            .map(|(d, w)| (common::sift_run(&sift.program, d, *w) != 0, common::sift_eval(&sift.pred, d, *w)))
            .collect();
        // The row is a master-only fix when 1.10.3 disagrees with its results.
        let master_only_fix = oracle.as_ref().is_some_and(|o| *o != expected);
        let reference: &[bool] = if master_only_fix { oracle.as_deref().unwrap_or(&expected) } else { &expected };
        let bad = (0..got.len()).find(|&k| got[k].0 != reference[k] || got[k].1 != reference[k]);
        match bad {
            None if master_only_fix => s.pass_v1_10_3 += 1,
            None => s.pass_results += 1,
            Some(_) if known_apply.contains_key(&(r.dlt.clone(), r.expr.clone())) => {
                s.known += 1;
                known_seen.insert((KnownKind::Apply, r.dlt.clone(), r.expr.clone()));
            }
            Some(k) => {
                s.fail += 1;
                afailures.push(format!(
                    "[{}] {} {:?} on {file} packet {}: expected {} ({}), sift program {} evaluator {} (wire {}, hex {})",
                    r.dlt,
                    r.label,
                    r.expr,
                    k + 1,
                    reference[k],
                    if master_only_fix { "libpcap 1.10.3 unoptimized" } else { "TESTrun results" },
                    got[k].0,
                    got[k].1,
                    cap.packets[k].1,
                    common::hex(&cap.packets[k].0, 128)
                ));
            }
        }
    }
    println!("\n=== TESTrun apply rows (supported link types)");
    println!("{:<11} {:>5} {:>8} {:>9} {:>7} {:>6} {:>5}", "DLT", "rows", "=results", "=1.10.3", "names", "unsup", "fail");
    let mut at = ApplyStats::default();
    for (dlt, s) in &astats {
        println!(
            "{:<11} {:>5} {:>8} {:>9} {:>7} {:>6} {:>5}",
            dlt, s.rows, s.pass_results, s.pass_v1_10_3, s.with_names, s.unsupported, s.fail
        );
        at.rows += s.rows;
        at.pass_results += s.pass_results;
        at.pass_v1_10_3 += s.pass_v1_10_3;
        at.with_names += s.with_names;
        at.unsupported += s.unsupported;
        at.known += s.known;
        at.fail += s.fail;
    }
    if !aunsupported.is_empty() {
        let list: Vec<String> = aunsupported.iter().map(|(f, n)| format!("{f}: {n}")).collect();
        println!("unsupported (next issue) by feature: {}", list.join(", "));
    }
    print_failures("apply", &afailures);
    let _ = writeln!(
        summary,
        "testrun apply: {} rows for supported DLTs: {} pass ({} == results, {} == 1.10.3 where master fixed semantics), \
         {} of them with TESTrun's name tables, {} unsupported (next issue), {} known differences, {} fail",
        at.rows,
        at.pass_results + at.pass_v1_10_3,
        at.pass_results,
        at.pass_v1_10_3,
        at.with_names,
        at.unsupported,
        at.known,
        at.fail
    );

    // ---------------- link types not supported in this phase
    println!("\n=== rows on link types not supported yet (unsupported (next issue)), per kind and DLT");
    for (kind, m) in &unsupported_dlt {
        let total: usize = m.values().sum();
        let list: Vec<String> = m.iter().map(|(d, n)| format!("{d} {n}")).collect();
        println!("{kind}: {total} rows: {}", list.join(", "));
    }

    // ---------------- stale known differences
    let mut stale = Vec::new();
    let mut listed = 0usize;
    for (kind, map) in &known {
        for (dlt, expr) in map.keys() {
            listed += 1;
            if !known_seen.contains(&(*kind, dlt.clone(), expr.clone())) {
                stale.push(format!("{kind:?} [{dlt}] {expr:?}"));
            }
        }
    }
    stale.sort();
    print_failures("stale known-difference", &stale);
    let _ = writeln!(
        summary,
        "testrun known differences (testrun_known_differences.tsv): {listed} listed, {} used, {} stale",
        listed - stale.len(),
        stale.len()
    );

    println!("\n{summary}");
    assert_eq!(
        accept_fail + rt.fail + at.fail + stale.len(),
        0,
        "TESTrun conformance failures (accept {accept_fail}, reject {}, apply {}, stale known differences {}); see the output above",
        rt.fail,
        at.fail,
        stale.len()
    );
}

/// The `-d` text reader must give back exactly libpcap's instructions: every
/// 1.10.3 program in the data file is recompiled live and compared, and
/// every master program must parse and pass libpcap's program check.
#[test]
fn reference_program_texts_parse() {
    if !common::require_data() {
        return;
    }
    let path = common::data_dir().join("libpcap-tests/testrun-libpcap-1.10.3.jsonl");
    let (mut same, mut differ, mut unknown_dlt) = (0usize, Vec::new(), 0usize);
    for obj in common::read_jsonl(&path) {
        let Some(text) = obj.get("bytecode").and_then(Json::as_str) else { continue };
        let expr = obj.get("expression").and_then(Json::as_str).unwrap_or_default();
        if expr == "_enumerate_bpf_image" {
            continue;
        }
        let dlt = obj.get("dlt").and_then(Json::as_str).unwrap_or_default();
        let Some(lt) = LinkType::from_name(dlt) else {
            unknown_dlt += 1;
            continue;
        };
        let snaplen = obj.get("snaplen").and_then(Json::as_u32).unwrap_or(common::DEFAULT_SNAPLEN);
        let netmask = obj.get("netmask").and_then(Json::as_str).and_then(common::parse_netmask);
        let optimize = obj.get("optimize").is_some_and(Json::is_true);
        let parsed = common::parse_d_text(text).unwrap_or_else(|e| panic!("{dlt} {expr:?}: {e}"));
        if let Some(h) = obj.get("hash").and_then(Json::as_str) {
            assert_eq!(common::bytecode_hash(text), h, "1.10.3 program hash of {dlt} {expr:?}");
        }
        match libpcap::compile(expr, lt.0, snaplen, netmask, optimize) {
            Ok(live) if live == parsed => same += 1,
            other => differ.push(format!("{dlt} {expr:?} opt={optimize}: live {:?}", other.map(|p| p.len()))),
        }
    }
    let masters = load_programs("testrun-master-bytecode.jsonl", "expected_bytecode", "expected_error");
    let mut master_ok = 0usize;
    let expected: HashMap<&str, &str> =
        load_rows_cached().iter().filter(|r| r.kind == "accept").map(|r| (r.label.as_str(), r.expected.as_str())).collect();
    let mut hash_mismatch = Vec::new();
    let mut not_in_tsv = Vec::new();
    for (label, prog) in &masters {
        let Ok(text) = prog else { continue };
        match expected.get(label.as_str()) {
            Some(h) if h.starts_with("bytecode:") && common::bytecode_hash(text) != *h => hash_mismatch.push(label.clone()),
            None => not_in_tsv.push(label.clone()),
            _ => {}
        }
        if text.contains("; 0x") {
            continue; // the bpf_image enumeration row
        }
        reference_program(text).unwrap_or_else(|e| panic!("master {label}: {e}"));
        master_ok += 1;
    }
    let missing: Vec<&str> = expected.keys().filter(|l| !masters.contains_key(**l)).copied().collect();
    println!("master programs whose label is not an accept row of the TSV: {not_in_tsv:?}; accept rows without a master program: {missing:?}");
    assert!(hash_mismatch.is_empty(), "master program texts that do not match the TSV hash: {hash_mismatch:?}");
    println!(
        "1.10.3 program texts identical to live libpcap: {same}; different: {}; not checked (DLT unknown to sift_ir): {unknown_dlt}; master programs read: {master_ok}",
        differ.len()
    );
    for d in differ.iter().take(20) {
        println!("  differs: {d}");
    }
    assert!(differ.is_empty(), "the -d reader or the oracle disagrees with the data file");
}
