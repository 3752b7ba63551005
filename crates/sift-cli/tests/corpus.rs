//! The corpus runner: every capture in ../shared/data/pcaps whose link type
//! sift supports (`sift_ir::lower::supports_linktype`) × the expressions of
//! tests/corpus/expressions.txt (plus pflua's expectation filters, plus the
//! per-link-type sections of that file): `sift -r X -w - EXPR` must write
//! exactly the bytes `tcpdump -O -r X -w - EXPR` writes, and fail exactly
//! when tcpdump fails — except for the pairs an [`Exemption`] explains
//! (each one a deliberate difference documented in docs/compat.md).
//! pflua's `.pcap.test` expectations (match counts) are checked too.
//!
//! Run time: one tcpdump and one sift process per pair. By default a link
//! type with many captures runs each common expression on about
//! [`CAPTURES_PER_EXPRESSION`] of its captures (a fixed rotation, so every
//! capture still sees a share of the expressions); the per-link-type
//! sections always run on every capture of their link types. Set
//! `SIFT_CORPUS_FULL=1` to run every pair (a few minutes).

use sift_ir::LinkType;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Common expressions run on about this many captures of each link type.
const CAPTURES_PER_EXPRESSION: usize = 2;

fn shared() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data")
}

fn have_tcpdump() -> bool {
    Command::new("tcpdump").arg("--version").output().is_ok_and(|o| o.status.success())
}

/// Every capture file under pcaps/, with its link type (None: sift cannot open it).
fn captures() -> Vec<(PathBuf, Option<LinkType>)> {
    let mut out = Vec::new();
    let mut dirs = vec![shared().join("pcaps")];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).expect("pcaps directory").flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "pcap" || x == "pcapng") {
                let lt = sift_pcap::Capture::open(&p).ok().map(|c| LinkType::from_linktype(c.linktype()));
                out.push((p, lt));
            }
        }
    }
    out.sort();
    out
}

/// The expressions: the common ones (every link type) and, per link type,
/// the lines of the `[DLT DLT ...]` sections of expressions.txt.
struct Expressions {
    common: Vec<String>,
    by_link: BTreeMap<LinkType, Vec<String>>,
}

/// A line `SIFT_EXPR => TCPDUMP_EXPR` of a per-link-type section: where
/// sift deliberately follows libpcap master and 1.10.3 cannot express or
/// miscompiles the expression, tcpdump runs an expression that 1.10.3
/// compiles to master's program (the comment above the line says which
/// compat.md row); the outputs must still be byte-identical.
fn split_rewrite(line: &str) -> (&str, &str) {
    match line.split_once(" => ") {
        Some((ours, theirs)) => (ours.trim(), theirs.trim()),
        None => (line, line),
    }
}

fn expressions() -> Expressions {
    let text = include_str!("corpus/expressions.txt");
    let mut common: Vec<String> = vec![String::new()];
    let mut by_link: BTreeMap<LinkType, Vec<String>> = BTreeMap::new();
    let mut section: Option<Vec<LinkType>> = None;
    for line in text.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
        if let Some(names) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = (names != "*").then(|| {
                names
                    .split_whitespace()
                    .map(|n| LinkType::from_name(n).unwrap_or_else(|| panic!("expressions.txt: unknown link type {n}")))
                    .collect()
            });
            continue;
        }
        match &section {
            None => common.push(line.to_string()),
            Some(lts) => {
                for lt in lts {
                    by_link.entry(*lt).or_default().push(line.to_string());
                }
            }
        }
    }
    // pflua's expectation and benchmark filter lists: "description: count: filter".
    let dir = shared().join("pcaps/pflua/expectations");
    for e in std::fs::read_dir(dir).expect("pflua expectations").flatten() {
        let text = std::fs::read_to_string(e.path()).unwrap_or_default();
        for line in text.lines() {
            if let Some(f) = line.splitn(3, ": ").nth(2) {
                if !common.iter().any(|x| x == f) {
                    common.push(f.to_string());
                }
            }
        }
    }
    Expressions { common, by_link }
}

struct Outcome {
    ok: bool,
    stdout: Vec<u8>,
    stderr: String,
}

impl Outcome {
    /// The last line of standard error (the error message, when it failed).
    fn message(&self) -> &str {
        let mut lines = self.stderr.lines();
        lines.clone().find(|l| l.starts_with("sift: ") || l.starts_with("tcpdump: ")).or(lines.next_back()).unwrap_or("")
    }
}

fn run(cmd: &str, args: &[&str]) -> Outcome {
    let o = Command::new(cmd).args(args).output().unwrap_or_else(|e| panic!("running {cmd}: {e}"));
    Outcome { ok: o.status.success(), stdout: o.stdout, stderr: String::from_utf8_lossy(&o.stderr).into_owned() }
}

/// A known difference between tcpdump 4.99 / libpcap 1.10.3 and sift,
/// narrowed to the link types and outcomes where it shows, with the row of
/// docs/compat.md that justifies it.
struct Exemption {
    /// The link types it applies to.
    links: &'static [&'static str],
    /// Does it explain this pair (expression, tcpdump's outcome, sift's)?
    applies: fn(&str, &Outcome, &Outcome) -> bool,
    /// Why, with the compat.md row.
    reason: &'static str,
}

const EXEMPTIONS: &[Exemption] = &[
    Exemption {
        links: &["DSA_TAG_BRCM", "DSA_TAG_DSA"],
        applies: |_, t, m| {
            m.ok && !t.ok
                && [
                    "Broadcom tag",
                    "Marvell DSA",
                    "not a broadcast link",
                    "ethernet addresses supported only on",
                    "link-layer multicast filters supported only on",
                ]
                .iter()
                .any(|s| t.message().contains(s))
        },
        reason: "compat #26: libpcap 1.10.3 cannot filter DSA-tagged frames; sift follows master \
                 (checked against master's programs by the TESTrun rows)",
    },
    Exemption {
        links: &["BACNET_MS_TP"],
        applies: |_, t, m| {
            t.ok && !m.ok && m.message().contains("link-layer type filtering not implemented for DLT_BACNET_MS_TP")
        },
        reason: "compat #22: 1.10.3 compares the MS/TP preamble for every link-layer protocol test; \
                 master (and sift) reject the protocol test",
    },
    Exemption {
        links: &["BACNET_MS_TP"],
        applies: |e, t, m| e.contains("broadcast") && !t.ok && m.ok && t.message().contains("not a broadcast link"),
        reason: "compat #22: 1.10.3 has no MS/TP `broadcast`; master's (destination 255) in sift",
    },
    Exemption {
        links: &["PPI"],
        applies: |_, t, m| {
            m.ok && !t.ok
                && ["802.11 link-layer types supported only on 802.11", "frame direction supported only with 802.11 headers"]
                    .iter()
                    .any(|s| t.message().contains(s))
        },
        reason: "compat #16: 1.10.3 rejects 802.11 type/subtype/dir on PPI; sift compiles master's programs \
                 (TESTrun PPI rows; the [PPI] section checks a few against equivalent 1.10.3 expressions)",
    },
];

#[test]
fn sift_writes_what_tcpdump_writes() {
    if !have_tcpdump() {
        eprintln!("corpus: tcpdump not installed; run scripts/setup (skipping)");
        return;
    }
    let sift = env!("CARGO_BIN_EXE_sift");
    let full = std::env::var_os("SIFT_CORPUS_FULL").is_some();
    let caps: Vec<(PathBuf, LinkType)> = captures()
        .into_iter()
        .filter_map(|(p, lt)| lt.filter(|&l| sift_ir::lower::supports_linktype(l)).map(|l| (p, l)))
        .collect();
    let exprs = expressions();
    // The pairs: (capture, expression).
    let mut jobs: Vec<(usize, &str)> = Vec::new();
    let mut rank_in_link: BTreeMap<LinkType, usize> = BTreeMap::new();
    for (c, (_, lt)) in caps.iter().enumerate() {
        let group = caps.iter().filter(|(_, l)| l == lt).count();
        let rank = rank_in_link.entry(*lt).or_default();
        let stride = if full { 1 } else { group.div_ceil(CAPTURES_PER_EXPRESSION) };
        for (e, expr) in exprs.common.iter().enumerate() {
            if (e + *rank).is_multiple_of(stride) {
                jobs.push((c, expr));
            }
        }
        *rank += 1;
        for expr in exprs.by_link.get(lt).into_iter().flatten() {
            jobs.push((c, expr));
        }
    }
    let next = AtomicUsize::new(0);
    let failures = Mutex::new(Vec::<String>::new());
    // Per link type: pairs, byte-identical, both rejected, exempted (per exemption).
    #[derive(Default)]
    struct Tally {
        pairs: usize,
        agree: usize,
        both_fail: usize,
        exempted: BTreeMap<usize, usize>,
    }
    let tallies = Mutex::new(BTreeMap::<LinkType, Tally>::new());
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get()).clamp(2, 8);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(&(c, expr)) = jobs.get(i) else { break };
                let (path, lt) = &caps[c];
                let file = path.to_str().unwrap();
                let (ours, theirs) = split_rewrite(expr);
                let t = run("tcpdump", &["-O", "-r", file, "-w", "-", "--", theirs]);
                let m = run(sift, &["-r", file, "-w", "-", "--", ours]);
                let same = t.ok == m.ok && t.stdout == m.stdout;
                let name = lt.name().unwrap_or("?");
                let exemption = (!same)
                    .then(|| EXEMPTIONS.iter().position(|x| x.links.contains(&name) && (x.applies)(expr, &t, &m)))
                    .flatten();
                let mut tallies = tallies.lock().unwrap();
                let tally = tallies.entry(*lt).or_default();
                tally.pairs += 1;
                if same {
                    tally.agree += 1;
                    if !t.ok {
                        tally.both_fail += 1;
                    }
                } else if let Some(x) = exemption {
                    *tally.exempted.entry(x).or_default() += 1;
                } else {
                    failures.lock().unwrap().push(format!(
                        "{file} [{name}] `{expr}`: tcpdump ok={} {} bytes [{}] / sift ok={} {} bytes [{}]",
                        t.ok,
                        t.stdout.len(),
                        t.message(),
                        m.ok,
                        m.stdout.len(),
                        m.message()
                    ));
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    let tallies = tallies.into_inner().unwrap();
    let exempted_total: usize = tallies.values().flat_map(|t| t.exempted.values()).sum();
    println!(
        "corpus: {} captures, {} common + {} per-link-type expressions, {} pairs{}; {} byte-identical, {} exempted, {} different",
        caps.len(),
        exprs.common.len(),
        exprs.by_link.values().map(Vec::len).sum::<usize>(),
        jobs.len(),
        if full { " (SIFT_CORPUS_FULL)" } else { " (sampled; SIFT_CORPUS_FULL=1 for all)" },
        tallies.values().map(|t| t.agree).sum::<usize>(),
        exempted_total,
        failures.len()
    );
    for (lt, t) in &tallies {
        let captures = caps.iter().filter(|(_, l)| l == lt).count();
        let exempted: Vec<String> = t.exempted.iter().map(|(x, n)| format!("{n} by exemption {x}")).collect();
        println!(
            "  {:<18} {:>3} captures {:>5} pairs {:>5} agree ({} both rejected){}",
            lt.name().unwrap_or("?"),
            captures,
            t.pairs,
            t.agree,
            t.both_fail,
            if exempted.is_empty() { String::new() } else { format!(", exempted: {}", exempted.join(", ")) }
        );
    }
    for (i, x) in EXEMPTIONS.iter().enumerate() {
        println!("  exemption {i} [{}]: {}", x.links.join(" "), x.reason);
    }
    for f in failures.iter().take(40) {
        println!("  DIFFERENT: {f}");
    }
    // The full list, for investigation.
    let report = Path::new(env!("CARGO_TARGET_TMPDIR")).join("corpus-differences.txt");
    let _ = std::fs::write(&report, failures.join("\n"));
    if !failures.is_empty() {
        println!("  (all {} differences: {})", failures.len(), report.display());
    }
    assert!(failures.is_empty(), "{} pairs differ from tcpdump", failures.len());
    // Every link type sift supports that has captures is covered.
    assert!(tallies.len() >= 15, "only {} link types with captures", tallies.len());
}

/// pflua's expectation files: "description: count: filter" for a capture.
#[test]
fn pflua_expected_counts() {
    let sift = env!("CARGO_BIN_EXE_sift");
    let dir = shared().join("pcaps/pflua");
    let mut checked = 0;
    for e in std::fs::read_dir(dir.join("expectations")).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pcap) = name.strip_suffix(".test") else { continue };
        let capture = dir.join(pcap);
        for line in std::fs::read_to_string(e.path()).unwrap().lines() {
            let mut parts = line.splitn(3, ':');
            let (Some(_), Some(count), rest) = (parts.next(), parts.next(), parts.next()) else { continue };
            let expr = rest.unwrap_or("").trim();
            let want: u64 = count.trim().parse().unwrap();
            let o = run(sift, &["-r", capture.to_str().unwrap(), "--count", "--", expr]);
            assert!(o.ok, "{pcap} `{expr}`: {}", o.stderr);
            let got: u64 = String::from_utf8_lossy(&o.stdout).split_whitespace().next().unwrap().parse().unwrap();
            assert_eq!(got, want, "{pcap} `{expr}`");
            checked += 1;
        }
    }
    println!("pflua expectations: {checked} (capture, filter, count) rows agree");
    assert!(checked >= 9);
}

/// DLT_ERF (no capture of it in the corpus): `sift -y ERF -d` compiles the
/// SS7 primitives libpcap compiles there (the MTP2 fields after the 20-byte
/// ERF header) and rejects link-layer protocol tests naming the link type.
/// (Verdicts: `lowering_vs_libpcap`'s other-link-type campaign.)
#[test]
fn erf_on_the_command_line() {
    let sift = env!("CARGO_BIN_EXE_sift");
    for expr in ["fisu", "msu and sio 3", "hopc 1", "sls > 3", "len > 100", "link[22] & 0x3f = 0"] {
        let o = run(sift, &["-y", "ERF", "-d", "--", expr]);
        assert!(o.ok, "`{expr}` on ERF: {}", o.message());
    }
    let o = run(sift, &["-y", "ERF", "-d", "--", "fisu"]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("ldb      [22]"), "fisu reads the LI at 22");
    for (expr, msg) in [
        ("ip", "link-layer type filtering not implemented for DLT_ERF"),
        ("vlan", "no VLAN support for Endace ERF header"),
        ("link host $dd", "not supported on DLT_ERF"),
    ] {
        let o = run(sift, &["-y", "ERF", "-d", "--", expr]);
        assert!(!o.ok && o.message().contains(msg), "`{expr}` on ERF: {}", o.message());
    }
}
