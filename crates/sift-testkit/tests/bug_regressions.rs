//! The libpcap bug-regression corpus (`bug-regressions.tsv`, 58 rows of
//! expressions from bug reports and fix commits) against sift.
//!
//! For every row and every target it names (a DLT, or a capture whose link
//! type is used): sift must compile the expression exactly when libpcap
//! 1.10.3 does (rows needing a feature or link type that this phase does not
//! support are reported as unsupported). When a capture is given, sift's
//! verdicts must equal libpcap 1.10.3's unoptimized program (compiled live
//! through the FFI oracle and run by libpcap's `bpf_filter`) on every packet
//! and on every truncation of it (caplen 0..=len, wire length unchanged).
//! For a bare DLT, the same check runs on structured random packets.
//!
//! Known differences ([`FOLLOWS_MASTER`]): rows where sift deliberately
//! follows libpcap master's semantics (a fix of a 1.10.3 code generation
//! bug). They are compared, with the same zero tolerance, with master's
//! program (written out in the list, with the commit that fixed the bug)
//! instead of 1.10.3's, on the same packets plus short truncations; 1.10.3
//! must differ from master on at least one of them, and every entry must
//! match a row (no stale entries).
//!
//! Each compile (parse + lower + codegen) is timed and the slowest printed;
//! nothing is asserted on time.

mod testrun_common;

use sift_ir::LinkType;
use sift_testkit::libpcap::{self, CheckedProgram};
use std::path::PathBuf;
use std::time::{Duration, Instant};
use testrun_common as common;

/// Random packets for rows that name a link type but no capture.
const RANDOM_PACKETS: usize = 1000;
/// Packets guided through 1.10.3's program for those rows.
const GUIDED_PACKETS: usize = 300;
/// For known differences on a bare DLT: every truncation below
/// `TRUNCATED_MAX_LEN` bytes of the first `TRUNCATED_PACKETS` packets.
const TRUNCATED_PACKETS: usize = 8;
const TRUNCATED_MAX_LEN: usize = 64;

/// A row where sift follows libpcap master's semantics instead of 1.10.3's.
struct FollowsMaster {
    /// The row's `id`.
    id: &'static str,
    /// The row's expression (checked, so that the entry stays explicit).
    expr: &'static str,
    /// The libpcap commit that changed the semantics on master.
    commit: &'static str,
    /// Why sift follows master.
    reason: &'static str,
    /// Master's unoptimized program for every target of the row, as
    /// libpcap's `-d` text; `SNAPLEN` stands for the snapshot length.
    program: &'static str,
}

/// The known differences. Keep this list short and every entry justified.
/// The programs are master's (TESTrun's `accept_byte_or_unopt_0` and
/// `accept_byte_and_unopt_0` on DLT_IPV4); the link-layer header is at
/// offset 0 on DLT_EN10MB too, so they are the same there.
const FOLLOWS_MASTER: &[FollowsMaster] = &[
    FollowsMaster {
        id: "libpcap@82724cc7",
        expr: "byte 8 | 5",
        commit: "82724cc7",
        reason: "1.10.3 never loads the byte for 'byte N |' (it ORs its leftover accumulator); \
                 sift loads it as master does: (byte | V) != 0, rejecting packets too short for the byte",
        program: "(000) ldb [8]\n(001) or #0x5\n(002) jeq #0x0 jt 3 jf 4\n(003) ret #0\n(004) ret #SNAPLEN\n",
    },
    FollowsMaster {
        id: "libpcap@82724cc7-b",
        expr: "byte 8 & 5",
        commit: "82724cc7",
        reason: "1.10.3 never loads the byte for 'byte N &' (a bare jset on its leftover accumulator); \
                 sift loads it as master does: (byte & V) != 0",
        program: "(000) ldb [8]\n(001) and #0x5\n(002) jeq #0x0 jt 3 jf 4\n(003) ret #0\n(004) ret #SNAPLEN\n",
    },
    // An open libpcap bug (still in master): the scratch register that
    // holds a run-time link-layer offset is given to another use, so the
    // program loads at a wrong offset. The reference program is libpcap's
    // own with the register conflict removed (its intended semantics).
    FollowsMaster {
        id: "libpcap#1192",
        expr: "(radio[16] & 0x40) == 0 and type mgt subtype probe-req",
        commit: "none: open libpcap bug #1192",
        reason: "the arithmetic of 'radio[16] & 0x40' reuses the register libpcap's prologue stored the radiotap \
                 length in (it is allocated later, by 'type'), so libpcap reads the frame control at offset 0; \
                 sift reads it after the radiotap header",
        program: "(000) ldb [3]\n(001) lsh #8\n(002) tax\n(003) ldb [2]\n(004) or x\n(005) st M[3]\n\
                  (006) tax\n(007) ld #0x10\n(008) st M[0]\n(009) ldx M[0]\n(010) ldb [x + 0]\n(011) st M[1]\n\
                  (012) ld #0x40\n(013) st M[2]\n(014) ldx M[2]\n(015) ld M[1]\n(016) and x\n(017) st M[2]\n\
                  (018) ld #0x0\n(019) st M[4]\n(020) ldx M[4]\n(021) ld M[2]\n(022) sub x\n\
                  (023) jeq #0x0 jt 24 jf 29\n(024) ldx M[3]\n(025) ldb [x + 0]\n(026) and #0xfc\n\
                  (027) jeq #0x40 jt 28 jf 29\n(028) ret #SNAPLEN\n(029) ret #0\n",
    },
    FollowsMaster {
        id: "libpcap@1f1c2bde",
        expr: "dpc != 0",
        commit: "1f1c2bde",
        reason: "1.10.3 compiles '!=' on the SS7 fields as '=='; sift negates it as master does \
                 (and loads the 2-byte DPC field as master, 2aebf466)",
        program: "(000) ldh [4]\n(001) and #0xff3f\n(002) jeq #0x0 jt 3 jf 4\n(003) ret #0\n(004) ret #SNAPLEN\n",
    },
    FollowsMaster {
        id: "libpcap@1f1c2bde-b",
        expr: "vpi != 104",
        commit: "1f1c2bde",
        reason: "1.10.3 compiles '!=' on the ATM fields as '=='; sift negates it as master does",
        program: "(000) ldb [1]\n(001) jeq #0x68 jt 2 jf 3\n(002) ret #0\n(003) ret #SNAPLEN\n",
    },
    FollowsMaster {
        id: "libpcap@2aebf466",
        expr: "dpc = 1",
        commit: "2aebf466",
        reason: "1.10.3 loads 4 bytes for the 14-bit DPC (ld [4] & 0xff3f0000), rejecting packets that end \
                 right after the field; sift loads the 2 bytes of the field as master does",
        program: "(000) ldh [4]\n(001) and #0xff3f\n(002) jeq #0x100 jt 3 jf 4\n(003) ret #SNAPLEN\n(004) ret #0\n",
    },
    FollowsMaster {
        id: "libpcap@2b010956",
        expr: "link host $c0",
        commit: "2b010956",
        reason: "1.10.3's scanner reads '$c0' wrongly; sift reads the hex digits as master (and 1.10.6) do",
        program: "(000) ldb [0]\n(001) jeq #0xc0 jt 4 jf 2\n(002) ldb [1]\n(003) jeq #0xc0 jt 4 jf 5\n(004) ret #SNAPLEN\n(005) ret #0\n",
    },
    // vxlan is master-only syntax (1.10.3: a syntax error). Master's
    // programs: TESTrun's `accept_vxlan_nullary_unopt_0` followed by the
    // type-field test at the inner offset (master never optimizes them).
    FollowsMaster {
        id: "libpcap#1670",
        expr: "vxlan and arp",
        commit: "vxlan (master PR #1273)",
        reason: "master-only syntax: 1.10.3 has no 'vxlan'",
        program: "(000) ldh [12]\n(001) jeq #0x800 jt 2 jf 15\n(002) ldb [23]\n(003) jeq #0x11 jt 4 jf 15\n\
                  (004) ldh [20]\n(005) jset #0x1fff jt 15 jf 6\n(006) ldxb 4*([14]&0xf)\n\
                  (007) ldh [x + 16]\n(008) jeq #0x12b5 jt 9 jf 15\n(009) ldxb 4*([14]&0xf)\n\
                  (010) ldb [x + 22]\n(011) jeq #0x8 jt 12 jf 15\n(012) ldxb 4*([14]&0xf)\n(013) txa\n\
                  (014) jeq x jt 26 jf 15\n(015) ldh [12]\n(016) jeq #0x86dd jt 17 jf 40\n(017) ldb [20]\n\
                  (018) jeq #0x11 jt 19 jf 40\n(019) ldh [56]\n(020) jeq #0x12b5 jt 21 jf 40\n\
                  (021) ldb [62]\n(022) jeq #0x8 jt 23 jf 40\n(023) ld #0x28\n(024) tax\n\
                  (025) jeq x jt 26 jf 40\n(026) add #22\n(027) add #8\n(028) st M[0]\n(029) add #12\n\
                  (030) st M[1]\n(031) add #2\n(032) tax\n(033) stx M[2]\n(034) ld #0x0\n\
                  (035) jeq #0x0 jt 36 jf 40\n(036) ldx M[1]\n(037) ldh [x + 0]\n\
                  (038) jeq #0x806 jt 39 jf 40\n(039) ret #SNAPLEN\n(040) ret #0\n",
    },
    FollowsMaster {
        id: "libpcap#1726",
        expr: "vxlan and ip",
        commit: "vxlan (master PR #1273)",
        reason: "master-only syntax: 1.10.3 has no 'vxlan'",
        program: "(000) ldh [12]\n(001) jeq #0x800 jt 2 jf 15\n(002) ldb [23]\n(003) jeq #0x11 jt 4 jf 15\n\
                  (004) ldh [20]\n(005) jset #0x1fff jt 15 jf 6\n(006) ldxb 4*([14]&0xf)\n\
                  (007) ldh [x + 16]\n(008) jeq #0x12b5 jt 9 jf 15\n(009) ldxb 4*([14]&0xf)\n\
                  (010) ldb [x + 22]\n(011) jeq #0x8 jt 12 jf 15\n(012) ldxb 4*([14]&0xf)\n(013) txa\n\
                  (014) jeq x jt 26 jf 15\n(015) ldh [12]\n(016) jeq #0x86dd jt 17 jf 40\n(017) ldb [20]\n\
                  (018) jeq #0x11 jt 19 jf 40\n(019) ldh [56]\n(020) jeq #0x12b5 jt 21 jf 40\n\
                  (021) ldb [62]\n(022) jeq #0x8 jt 23 jf 40\n(023) ld #0x28\n(024) tax\n\
                  (025) jeq x jt 26 jf 40\n(026) add #22\n(027) add #8\n(028) st M[0]\n(029) add #12\n\
                  (030) st M[1]\n(031) add #2\n(032) tax\n(033) stx M[2]\n(034) ld #0x0\n\
                  (035) jeq #0x0 jt 36 jf 40\n(036) ldx M[1]\n(037) ldh [x + 0]\n\
                  (038) jeq #0x800 jt 39 jf 40\n(039) ret #SNAPLEN\n(040) ret #0\n",
    },
];

/// Rows whose libpcap program reads scratch memory it never wrote: its
/// verdicts depend on whatever `bpf_filter`'s stack held (1.10.3 does not
/// initialise scratch memory), so they are not compared; sift must compile
/// the row. `(id, expression, why)`.
const UNDEFINED_IN_LIBPCAP: &[(&str, &str, &str)] = &[(
    "libpcap#834",
    "pppoes",
    "on radiotap, libpcap's program reads the frame control at the offset held in M[0], which it never writes \
     (the radiotap length goes to another register); sift reads the frame control after the radiotap header",
)];

/// Master's program of a known difference, checked as libpcap checks it.
fn master_program(f: &FollowsMaster, snaplen: u32) -> Result<CheckedProgram, String> {
    let text = f.program.replace("SNAPLEN", &snaplen.to_string());
    let insns = common::parse_d_text(&text)?;
    CheckedProgram::new_allow_backward(&insns)
}

/// libpcap's `bpf_filter` on one packet, or, for a program with a backward
/// jump (`protochain`'s loop), sift's interpreter: the same semantics, but
/// it gives up after 64 backward jumps where libpcap 1.10.3 can loop forever
/// on a crafted AH chain.
fn bounded_filter(p: &CheckedProgram, data: &[u8], wire_len: u32) -> u32 {
    if common::has_backward_jump(p.insns()) {
        common::sift_run(p.insns(), data, wire_len)
    } else {
        p.filter(data, wire_len)
    }
}

/// How many of the views `compare` runs the two programs give different
/// verdicts on.
fn count_differences(a: &CheckedProgram, b: &CheckedProgram, packets: &[(Vec<u8>, u32)], truncations: bool) -> usize {
    let mut n = 0usize;
    for (data, wire) in packets {
        let lens: Vec<usize> = if truncations { (0..=data.len()).collect() } else { vec![data.len()] };
        for caplen in lens {
            let d = &data[..caplen];
            n += usize::from((bounded_filter(a, d, *wire) != 0) != (bounded_filter(b, d, *wire) != 0));
        }
    }
    n
}

struct BugRow {
    id: String,
    target: String,
    expr: String,
}

fn load_rows() -> Vec<BugRow> {
    let path = common::data_dir().join("libpcap-tests/bug-regressions.tsv");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().expect("empty TSV").split('\t').collect();
    assert_eq!(&header[..4], ["id", "url", "dlt_or_pcap", "expression"], "unexpected TSV header");
    lines
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            assert!(f.len() >= 4, "short TSV line: {l}");
            BugRow { id: f[0].to_string(), target: f[2].to_string(), expr: f[3].to_string() }
        })
        .collect()
}

/// What a row is checked on.
enum Target {
    Dlt(String),
    Capture(PathBuf),
}

/// `tcpdump/x.pcap`, `EN10MB`, `IPV4 / EN10MB`, `libpcap-filter/x.pcap (MTP2)`, `NULL (savefile)`.
fn parse_targets(s: &str) -> Vec<Target> {
    s.split(" / ")
        .map(|part| {
            let part = part.trim();
            let bare = match part.find(" (") {
                Some(at) if part.ends_with(')') => &part[..at],
                _ => part,
            };
            if bare.ends_with(".pcap") || bare.ends_with(".pcapng") {
                Target::Capture(common::data_dir().join("pcaps").join(bare))
            } else {
                Target::Dlt(bare.to_string())
            }
        })
        .collect()
}

enum Verdict {
    Pass(String),
    Unsupported(String),
    Fail(String),
}

/// Checks sift against the oracle on packets (and all their truncations when
/// `truncations`). Returns the number of packet views compared.
fn compare(
    sift: &common::SiftFilter,
    oracle: &CheckedProgram,
    packets: &[(Vec<u8>, u32)],
    truncations: bool,
) -> Result<usize, String> {
    let mut n = 0usize;
    for (p, (data, wire)) in packets.iter().enumerate() {
        let lens: Vec<usize> = if truncations { (0..=data.len()).collect() } else { vec![data.len()] };
        for caplen in lens {
            let d = &data[..caplen];
            let want = bounded_filter(oracle, d, *wire);
            let got = common::sift_run(&sift.program, d, *wire);
            let eval = common::sift_eval(&sift.pred, d, *wire);
            n += 1;
            if got != want || eval != (want != 0) {
                return Err(format!(
                    "packet {} caplen {caplen} (of {}, wire {wire}): libpcap 1.10.3 {want}, sift program {got}, evaluator {eval}; hex {}",
                    p + 1,
                    data.len(),
                    common::hex(d, 128)
                ));
            }
        }
    }
    Ok(n)
}

/// For a bare link type, adds packets guided through 1.10.3's program to the
/// random ones (so that accepting paths are exercised too).
fn with_guided(
    mut packets: Vec<(Vec<u8>, u32)>,
    oracle: &CheckedProgram,
    is_capture: bool,
    row_no: usize,
) -> Vec<(Vec<u8>, u32)> {
    if !is_capture {
        let mut rng = sift_testkit::Rng::fork(0xb065_0002, row_no as u64);
        let seeds: Vec<(Vec<u8>, u32)> =
            packets.iter().filter(|(d, w)| d.len() as u64 == u64::from(*w)).cloned().collect();
        let more = common::guided_packets(oracle.insns(), &seeds, &mut rng, GUIDED_PACKETS);
        packets.extend(more);
    }
    packets
}

#[test]
fn bug_regressions() {
    if !common::require_data() {
        return;
    }
    let rows = load_rows();
    let mut slowest: Vec<(Duration, String)> = Vec::new();
    let (mut pass, mut unsupported, mut fail) = (0usize, 0usize, 0usize);
    let mut follows_master_rows = 0usize;
    for f in FOLLOWS_MASTER {
        let row = rows.iter().find(|r| r.id == f.id);
        assert!(row.is_some_and(|r| r.expr == f.expr), "stale known difference {} ({:?}): no such row", f.id, f.expr);
    }
    let mut failures = Vec::new();
    let mut compiles = 0usize;
    let mut views = 0usize;
    for (row_no, row) in rows.iter().enumerate() {
        let mut verdicts = Vec::new();
        let known = FOLLOWS_MASTER.iter().find(|f| f.id == row.id);
        follows_master_rows += usize::from(known.is_some());
        for target in parse_targets(&row.target) {
            let (lt, snaplen, packets, truncations, where_) = match &target {
                Target::Dlt(name) => {
                    let Some(lt) = LinkType::from_name(name) else {
                        verdicts.push(Verdict::Fail(format!("unknown DLT '{name}'")));
                        continue;
                    };
                    let mut rng = sift_testkit::Rng::fork(0xb065_0001, row_no as u64);
                    let pk: Vec<(Vec<u8>, u32)> = if common::is_supported_dlt(name) {
                        (0..RANDOM_PACKETS).map(|_| sift_testkit::packets::random_packet(&mut rng, lt)).collect()
                    } else {
                        Vec::new()
                    };
                    (lt, common::DEFAULT_SNAPLEN, pk, false, name.clone())
                }
                Target::Capture(path) => match common::read_capture(path) {
                    Ok(c) => {
                        let file = path.file_name().map_or_else(String::new, |f| f.to_string_lossy().into_owned());
                        (c.linktype, c.snaplen, c.packets, true, file)
                    }
                    Err(e) => {
                        verdicts.push(Verdict::Fail(format!("{}: {e}", path.display())));
                        continue;
                    }
                },
            };
            let lt_name = lt.name().unwrap_or("?");
            if !common::is_supported_dlt(lt_name) {
                verdicts.push(Verdict::Unsupported(format!("link type {lt_name}")));
                continue;
            }
            let t0 = Instant::now();
            let sift = common::sift_compile(&row.expr, lt, snaplen, None);
            let took = t0.elapsed();
            compiles += 1;
            slowest.push((took, format!("{} on {where_}", row.id)));
            let oracle = libpcap::compile(&row.expr, lt.0, snaplen, None, false);
            if let Some((_, expr, why)) = UNDEFINED_IN_LIBPCAP.iter().find(|u| u.0 == row.id) {
                assert_eq!(*expr, row.expr, "stale entry {} of UNDEFINED_IN_LIBPCAP", row.id);
                verdicts.push(match (sift, oracle) {
                    (Ok(_), Ok(_)) => Verdict::Pass(format!("{where_}: compiles; not compared: {why}")),
                    (s, o) => Verdict::Fail(format!(
                        "{where_}: sift {}, libpcap {}",
                        if s.is_ok() { "compiles" } else { "rejects" },
                        if o.is_ok() { "compiles" } else { "rejects" }
                    )),
                });
                continue;
            }
            let v = match (sift, oracle) {
                (Err(e), oracle) => match common::unsupported_feature(&row.expr) {
                    Some(family) => Verdict::Unsupported(format!("{family} ({e})")),
                    None => match oracle {
                        Err(oe) => Verdict::Pass(format!("{where_}: rejected like 1.10.3 ({oe})")),
                        Ok(_) => Verdict::Fail(format!("{where_}: sift rejects ({e}); libpcap 1.10.3 compiles it")),
                    },
                },
                // Master-only syntax: compared with master's program alone.
                (Ok(s), Err(_)) if known.is_some() => {
                    let f = known.expect("checked");
                    match master_program(f, snaplen) {
                        Err(e) => Verdict::Fail(format!("{where_}: master's program of the known difference: {e}")),
                        Ok(m) => match compare(&s, &m, &with_guided(packets.clone(), &m, truncations, row_no), truncations) {
                            Ok(n) => {
                                views += n;
                                Verdict::Pass(format!(
                                    "{where_}: master-only syntax ({}), {n} views agree with master's program",
                                    f.commit
                                ))
                            }
                            Err(e) => Verdict::Fail(format!("{where_} ({lt_name}): sift != libpcap master: {e}")),
                        },
                    }
                }
                (Ok(_), Err(oe)) => Verdict::Fail(format!("{where_}: sift compiles; libpcap 1.10.3 rejects ({oe})")),
                (Ok(s), Ok(o)) if known.is_some() => {
                    let f = known.expect("checked");
                    match (master_program(f, snaplen), CheckedProgram::new_allow_backward(&o)) {
                        (Err(e), _) => Verdict::Fail(format!("{where_}: master's program of the known difference: {e}")),
                        (_, Err(e)) => Verdict::Fail(format!("{where_}: 1.10.3's program fails the check: {e}")),
                        (Ok(m), Ok(o)) => {
                            let mut pk = with_guided(packets.clone(), &m, truncations, row_no);
                            if !truncations {
                                for (d, w) in packets.iter().take(TRUNCATED_PACKETS) {
                                    pk.extend((0..d.len().min(TRUNCATED_MAX_LEN)).map(|n| (d[..n].to_vec(), *w)));
                                }
                            }
                            match compare(&s, &m, &pk, truncations) {
                                Err(e) => Verdict::Fail(format!(
                                    "{where_} ({lt_name}): known difference, sift != libpcap master ({}): {e}",
                                    f.commit
                                )),
                                Ok(n) => match count_differences(&m, &o, &pk, truncations) {
                                    0 => Verdict::Fail(format!(
                                        "{where_}: listed as a known difference, but 1.10.3 agrees with master on all {n} views: remove the entry"
                                    )),
                                    d => {
                                        views += n;
                                        Verdict::Pass(format!(
                                            "{where_}: follows master ({}), {n} views agree with master's program, 1.10.3 differs on {d}",
                                            f.commit
                                        ))
                                    }
                                },
                            }
                        }
                    }
                }
                (Ok(s), Ok(o)) => match CheckedProgram::new_allow_backward(&o) {
                    Err(e) => Verdict::Fail(format!("{where_}: 1.10.3's program fails the check: {e}")),
                    Ok(o) => match compare(&s, &o, &with_guided(packets.clone(), &o, truncations, row_no), truncations) {
                        Ok(n) => {
                            views += n;
                            Verdict::Pass(format!(
                                "{where_}: {} packets{}, {n} views agree",
                                packets.len() + if truncations { 0 } else { GUIDED_PACKETS },
                                if truncations { " x all truncations" } else { " random + guided" }
                            ))
                        }
                        Err(e) => Verdict::Fail(format!("{where_} ({lt_name}): {e}")),
                    },
                },
            };
            verdicts.push(v);
        }
        let text = |v: &Verdict| match v {
            Verdict::Pass(s) | Verdict::Unsupported(s) | Verdict::Fail(s) => s.clone(),
        };
        let all: Vec<String> = verdicts.iter().map(text).collect();
        let (status, counter) = if verdicts.is_empty() || verdicts.iter().any(|v| matches!(v, Verdict::Fail(_))) {
            ("FAIL", &mut fail)
        } else if verdicts.iter().any(|v| matches!(v, Verdict::Unsupported(_))) {
            ("unsupported", &mut unsupported)
        } else {
            ("pass", &mut pass)
        };
        *counter += 1;
        println!("{status:<11} {:<22} {:?}: {}", row.id, row.expr, all.join("; "));
        if status == "FAIL" {
            failures.push(format!(
                "{} (expression {:?}, target {}): {}",
                row.id,
                row.expr,
                row.target,
                all.join("; ")
            ));
        }
    }
    slowest.sort_by_key(|b| std::cmp::Reverse(b.0));
    println!("\nslowest compiles (parse+lower+codegen):");
    for (d, what) in slowest.iter().take(5) {
        println!("  {:>10.3} ms  {what}", d.as_secs_f64() * 1e3);
    }
    for f in FOLLOWS_MASTER {
        println!("known difference {} {:?}: sift follows libpcap master ({}): {}", f.id, f.expr, f.commit, f.reason);
    }
    for f in &failures {
        println!("FAIL {f}");
    }
    let slow = slowest.first().map_or_else(|| "none".to_string(), |(d, w)| format!("{:.3} ms ({w})", d.as_secs_f64() * 1e3));
    println!(
        "\nbug regressions: {} rows: {pass} pass ({follows_master_rows} of them follow master's semantics by decision: known differences), \
         {unsupported} unsupported (next issue), {fail} fail; \
         {compiles} sift compiles, {views} packet views compared; slowest compile {slow}",
        rows.len()
    );
    assert_eq!(fail, 0, "bug-regression failures; see the output above");
}
