//! `sift -y LINKTYPE -d EXPR` for every link type sift supports
//! (`sift_ir::lower::supported_linktypes`), side by side with
//! `tcpdump -O -y LINKTYPE -d EXPR`: for a set of expressions that touch
//! every layer (length, link-layer bytes and addresses, network and
//! transport protocols, ports), sift must accept exactly what tcpdump
//! accepts (except the deliberate differences of docs/compat.md, each named
//! below), refuse with a caret, and when both compile, both programs (the
//! `-ddd` text each prints) must give the same verdict on structured random
//! packets of that link type, truncated ones included (sift's program in
//! sift's interpreter, tcpdump's in libpcap's).

use sift_testkit::libpcap::CheckedProgram;
use sift_testkit::{packets, Rng};
use std::process::{Command, Output};

/// Expressions compiled on every link type.
const EXPRESSIONS: &[&str] = &[
    "len >= 60",
    "link[0] & 1 = 1",
    "ip",
    "ip6 or arp",
    "tcp port 80",
    "udp and not src host 10.0.0.1",
    "net 192.168.0.0/16 or icmp",
    "ether host 1:2:3:4:5:6",
    "broadcast or multicast",
    "inbound",
];

/// Random packets per (link type, expression) when both compile.
const PACKETS: usize = 300;

/// Where sift and tcpdump 1.10.3 deliberately disagree on acceptance: link
/// type, expression (None: any), and the docs/compat.md row.
const ACCEPTANCE_DIFFERENCES: &[(&str, Option<&str>, &str)] = &[
    // 1.10.3 has no filtering for the DSA tags; sift follows master.
    ("DSA_TAG_BRCM", None, "compat #26"),
    ("DSA_TAG_DSA", None, "compat #26"),
    // Direction tests only where the link type records the direction.
    ("", Some("inbound"), "compat #5"),
    // MS/TP: master's link-layer tests and addresses.
    ("BACNET_MS_TP", None, "compat #22"),
];

/// Where both compile but the verdicts deliberately differ: link type,
/// expression, and the docs/compat.md row.
const VERDICT_DIFFERENCES: &[(&str, &str, &str)] = &[
    // 1.10.3 compiles `inbound` there to a Linux extension load that rejects
    // every packet offline; sift tests the tag's direction bits, as master.
    ("DSA_TAG_BRCM", "inbound", "compat #26"),
    ("DSA_TAG_DSA", "inbound", "compat #26"),
];

fn sift(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sift")).args(args).output().expect("run sift")
}

fn have_tcpdump() -> bool {
    Command::new("tcpdump").arg("--version").output().is_ok_and(|o| o.status.success())
}

/// The program a `-ddd` text holds (first line: the instruction count).
fn program(out: &Output) -> Vec<sift_bpf::Insn> {
    let text = String::from_utf8_lossy(&out.stdout);
    sift_bpf::text::parse_program(&text).unwrap_or_else(|e| panic!("unparsable -ddd text {text:?}: {e:?}"))
}

fn exempt(name: &str, expr: &str) -> Option<&'static str> {
    ACCEPTANCE_DIFFERENCES
        .iter()
        .find(|(dlt, e, _)| (dlt.is_empty() || *dlt == name) && e.is_none_or(|e| e == expr))
        .map(|d| d.2)
}

#[test]
fn every_supported_link_type_compiles_with_y_and_d() {
    let tcpdump = have_tcpdump();
    let (mut compiled, mut compared, mut verdicts) = (0, 0, 0);
    let mut exempted: std::collections::BTreeMap<&str, Vec<String>> = Default::default();
    let mut failures = Vec::new();
    let lts = sift_ir::lower::supported_linktypes();
    assert!(lts.len() >= 43, "only {} link types", lts.len());
    for lt in lts {
        let name = lt.name().expect("supported link types have names");
        let mut any = false;
        for expr in EXPRESSIONS {
            let s = sift(&["-ddd", "-y", name, expr]);
            let sift_ok = s.status.success();
            if sift_ok {
                compiled += 1;
                any = true;
            } else {
                let err = String::from_utf8_lossy(&s.stderr);
                if s.status.code() != Some(1) || !err.contains('^') {
                    failures.push(format!("-y {name} {expr:?}: refused without a caret: {err}"));
                }
            }
            if !tcpdump {
                continue;
            }
            let t = Command::new("tcpdump").args(["-O", "-ddd", "-y", name, expr]).output().expect("run tcpdump");
            let tcpdump_ok = t.status.success();
            if sift_ok != tcpdump_ok {
                match exempt(name, expr) {
                    Some(why) => exempted.entry(why).or_default().push(format!("{name} {expr:?}")),
                    None => failures.push(format!(
                        "-y {name} {expr:?}: sift {} but tcpdump {}: {}{}",
                        if sift_ok { "accepts" } else { "refuses" },
                        if tcpdump_ok { "accepts" } else { "refuses" },
                        String::from_utf8_lossy(&s.stderr).trim(),
                        String::from_utf8_lossy(&t.stderr).trim()
                    )),
                }
                continue;
            }
            if !sift_ok {
                continue;
            }
            // Both compiled: same verdicts on random packets of the link type.
            let ours = sift_bpf::interp::Program::new(&program(&s)).expect("sift's program passes the interpreter");
            let Ok(theirs) = CheckedProgram::new(&program(&t)) else { continue };
            compared += 1;
            let mut rng = Rng::fork(0x6c69_6e6b, u64::from(lt.0));
            for _ in 0..PACKETS {
                let (data, wire) = packets::random_packet(&mut rng, lt);
                let (a, b) = (ours.run(&data, wire) != 0, theirs.filter(&data, wire) != 0);
                verdicts += 1;
                if a != b && !VERDICT_DIFFERENCES.iter().any(|&(dlt, e, _)| dlt == name && e == *expr) {
                    failures.push(format!("-y {name} {expr:?}: sift {a}, libpcap {b} on {data:02x?} (wire {wire})"));
                    break;
                }
            }
        }
        assert!(any, "-y {name}: no expression compiles");
    }
    println!(
        "{compiled} (link type, expression) pairs compiled; {compared} compared with tcpdump -O -d, {verdicts} packet verdicts"
    );
    for (why, pairs) in &exempted {
        println!("accepted by one side only ({why}): {} pairs: {}", pairs.len(), pairs.join(", "));
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn link_type_names_and_numbers_are_accepted_like_tcpdump() {
    // tcpdump -y takes the name with or without DLT_, in any case; sift also
    // takes the number.
    for arg in ["EN10MB", "en10mb", "DLT_EN10MB", "1"] {
        let o = sift(&["-d", "-y", arg, "ip"]);
        assert!(o.status.success(), "-y {arg}: {}", String::from_utf8_lossy(&o.stderr));
    }
    let o = sift(&["-d", "-y", "NO_SUCH_TYPE", "ip"]);
    assert_eq!(o.status.code(), Some(1));
}
