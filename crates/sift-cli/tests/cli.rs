//! Behaviour of the `sift` command line: errors, damaged files, foreign
//! programs, output formats.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn sift(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sift")).args(args).output().expect("run sift")
}

fn sample(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../samples").join(name)
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sift-cli-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

#[test]
fn bad_expression_shows_a_caret_and_exits_1() {
    let o = sift(&["-d", "tcp port 80 and hots 10.0.0.1"]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    let lines: Vec<&str> = err.lines().collect();
    let at = lines.iter().position(|l| l.contains("tcp port 80 and hots 10.0.0.1")).expect(&err);
    let caret = lines[at + 1];
    let col = lines[at].find("hots").unwrap();
    assert_eq!(caret.find('^'), Some(col), "caret under 'hots':\n{err}");
    assert!(o.stdout.is_empty());
}

#[test]
fn counts_matches() {
    let v4 = sample("v4.pcap");
    let o = sift(&["-r", v4.to_str().unwrap(), "--count", "tcp port 80"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o).trim(), "41 packets");
    let o = sift(&["-r", v4.to_str().unwrap(), "--count", "udp"]);
    assert_eq!(stdout(&o).trim(), "2 packets");
}

#[test]
fn prints_one_line_per_match_and_honours_c() {
    let v4 = sample("v4.pcap");
    let o = sift(&["-r", v4.to_str().unwrap(), "-c", "3", "tcp"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert_eq!(out.lines().count(), 3, "{out}");
    let first = out.lines().next().unwrap();
    assert!(first.starts_with("1 2004-05-13 "), "{first}");
    assert!(first.contains(" TCP "), "{first}");
}

#[test]
fn damaged_file_keeps_packets_before_the_damage() {
    let data = std::fs::read(sample("v4.pcap")).unwrap();
    // Cut in the middle of a record (past the file header and a few packets).
    let cut = tmp("cut.pcap");
    std::fs::write(&cut, &data[..data.len() / 2 + 7]).unwrap();
    let o = sift(&["-r", cut.to_str().unwrap(), "-w", "-", ""]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("offset"), "{}", stderr(&o));
    let whole = sift(&["-r", sample("v4.pcap").to_str().unwrap(), "-w", "-", ""]);
    assert!(o.stdout.len() > 24 && whole.stdout.starts_with(&o.stdout), "a prefix of the full output");
    // Garbage is a clear error, no panic.
    let junk = tmp("junk.pcap");
    std::fs::write(&junk, b"this is not a capture file at all").unwrap();
    let o = sift(&["-r", junk.to_str().unwrap(), "ip"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(!stderr(&o).contains("panicked"));
    let empty = tmp("empty.pcap");
    std::fs::write(&empty, b"").unwrap();
    let o = sift(&["-r", empty.to_str().unwrap(), "ip"]);
    assert_eq!(o.status.code(), Some(1));
}

#[test]
fn dump_formats_are_consistent_and_parse_back() {
    for level in ["-d", "-dd", "-ddd"] {
        let o = sift(&[level, "-y", "RAW", "ip proto 6"]);
        assert!(o.status.success(), "{level}: {}", stderr(&o));
        assert!(!stdout(&o).is_empty());
    }
    // -ddd output is a valid --bpf-file, and gives the same verdicts.
    let o = sift(&["-ddd", "tcp port 80"]);
    let prog = tmp("prog.txt");
    std::fs::write(&prog, &o.stdout).unwrap();
    let v4 = sample("v4.pcap");
    let o = sift(&["-r", v4.to_str().unwrap(), "--count", "--bpf-file", prog.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o).trim(), "41 packets");
    // Without -r or -y, -d warns like tcpdump.
    let o = sift(&["-d", "ip"]);
    assert!(stderr(&o).contains("Warning: assuming Ethernet"));
}

#[test]
fn foreign_program_from_tcpdump() {
    let Ok(o) = Command::new("tcpdump").args(["-ddd", "udp"]).output() else {
        eprintln!("tcpdump not installed: skipped");
        return;
    };
    let prog = tmp("tcpdump-prog.txt");
    std::fs::write(&prog, &o.stdout).unwrap();
    let v4 = sample("v4.pcap");
    let o = sift(&["-r", v4.to_str().unwrap(), "--count", "--bpf-file", prog.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o).trim(), "2 packets");
    // A program the validator refuses is a clear error.
    std::fs::write(&prog, "1\n21 0 0 0\n").unwrap();
    let o = sift(&["-r", v4.to_str().unwrap(), "--bpf-file", prog.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
}

#[test]
fn explain_shows_every_stage() {
    let o = sift(&["explain", "-y", "LINUX_SLL2", "port 53"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    for stage in ["== AST", "== predicate IR", "== classic BPF", "== dynamic engine passes\npass 0:", "== JIT: "] {
        assert!(out.contains(stage), "{out}");
    }
    // What does not fit the dynamic engine is said in its place.
    let o = sift(&["explain", "tcp[13] + 1 = 3"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("== dynamic engine passes\nnone: "), "{}", stdout(&o));
}

#[test]
fn engines_agree_and_unknown_engine_is_an_error() {
    let v4 = sample("v4.pcap");
    for engine in ["meta", "jit", "interp", "dynamic", "dynamic-or-jit", "reference"] {
        let o = sift(&["-r", v4.to_str().unwrap(), "--count", "--engine", engine, "tcp port 80"]);
        assert_eq!(stdout(&o).trim(), "41 packets", "{engine}: {}", stderr(&o));
    }
    // The dynamic engine says what does not fit its instruction set.
    let o = sift(&["-r", v4.to_str().unwrap(), "--engine", "dynamic", "tcp[13] + 1 = 3"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("does not fit"), "{}", stderr(&o));
    assert!(stderr(&o).contains("dynamic-or-jit"), "{}", stderr(&o));
    // dynamic-or-jit runs it with the JIT instead.
    let o = sift(&["-r", v4.to_str().unwrap(), "--count", "--engine", "dynamic-or-jit", "tcp[13] + 1 = 3"]);
    let j = sift(&["-r", v4.to_str().unwrap(), "--count", "--engine", "jit", "tcp[13] + 1 = 3"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), stdout(&j));
    let o = sift(&["-r", v4.to_str().unwrap(), "--engine", "warp", "ip"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("unknown engine"));
}

#[test]
fn unsupported_link_type_is_a_clear_error() {
    let o = sift(&["-d", "-y", "USB_LINUX_MMAPPED", "ip"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("not supported"), "{}", stderr(&o));
}

#[test]
fn other_link_types_compile_with_y() {
    // One filter per family of link types from sift-ir's `links.rs`.
    let cases: &[(&str, &str)] = &[
        ("PPP", "ip and tcp port 80"),
        ("PPP_PPPD", "inbound"),
        ("PPP_SERIAL", "ip6"),
        ("PPP_ETHER", "ip"),
        ("PPP_BSDOS", "ip"),
        ("C_HDLC", "iso proto \\clnp"),
        ("SLIP", "outbound"),
        ("SLIP_BSDOS", "ip"),
        ("FRELAY", "ip6 and udp"),
        ("LTALK", "atalk"),
        ("ARCNET", "link host $0e or broadcast"),
        ("ARCNET_LINUX", "arp src host 10.80.131.1"),
        ("IPNET", "inbound and ip"),
        ("ENC", "ip"),
        ("NETANALYZER", "vlan 10 and ip"),
        ("NETANALYZER_TRANSPARENT", "ether host 1:2:3:4:5:6"),
        ("SYMANTEC_FIREWALL", "rarp"),
        ("APPLE_IP_OVER_IEEE1394", "ip"),
        ("JUNIPER_MFR", "outbound"),
        ("ATM_RFC1483", "ip"),
        ("ATM_CLIP", "arp"),
        ("SUNATM", "vpi 1 and vci != 5 or lane and ether multicast or metaconnect"),
        ("MTP2", "msu and sio = 3 and dpc = 1 and opc > 2 and sls != 9 or hlssu"),
        ("MTP2_WITH_PHDR", "fisu or hdpc 0x0ab5"),
        ("BACNET_MS_TP", "link src host $7e or broadcast"),
        ("PFLOG", "on em0 and action block and reason match and rnr 5 and udp port 53"),
        ("DSA_TAG_BRCM", "outbound and vlan 8 and stp"),
        ("DSA_TAG_DSA", "inbound and ip multicast"),
    ];
    for (dlt, expr) in cases {
        let o = sift(&["-d", "-y", dlt, expr]);
        assert!(o.status.success(), "-y {dlt} {expr:?}: {}", stderr(&o));
        assert!(stdout(&o).contains("ret"), "-y {dlt} {expr:?}: {}", stdout(&o));
    }
}

#[test]
fn link_type_specific_primitives_say_where_they_apply() {
    let cases: &[(&str, &str, &str)] = &[
        ("MTP2", "ip", "link-layer type filtering not implemented for DLT_MTP2"),
        ("MTP3", "fisu", "'fisu' supported only on SS7"),
        ("EN10MB", "vpi 1", "'vpi' supported only on SUNATM"),
        ("EN10MB", "reason match", "'reason' supported only on PFLOG linktype"),
        ("MTP2", "sio 256", "sio 256 greater than maximum 255"),
        ("PPP", "link host $21", "'link host $XX' not supported on DLT_PPP"),
        ("ARCNET", "ip host $21", "'link' is the only valid proto qualifier for 'host $XX'"),
        ("PPP_SERIAL", "vlan", "no VLAN support for PPP over serial"),
    ];
    for (dlt, expr, msg) in cases {
        let o = sift(&["-d", "-y", dlt, expr]);
        assert_eq!(o.status.code(), Some(1), "-y {dlt} {expr:?}");
        assert!(stderr(&o).contains(msg), "-y {dlt} {expr:?}: {}", stderr(&o));
        assert!(stderr(&o).contains('^'), "-y {dlt} {expr:?}: no caret: {}", stderr(&o));
    }
}

#[test]
fn d_with_an_interface_uses_its_link_type() {
    // `-i any` captures Linux cooked v2 frames: the EtherType is at 0.
    let o = sift(&["-i", "any", "-d", "ip"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).starts_with("(000) ldh      [0]\n"), "{}", stdout(&o));
    assert!(stderr(&o).contains("data link type LINUX_SLL2"), "{}", stderr(&o));
    // The loopback interface is Ethernet on Linux.
    let o = sift(&["-i", "lo", "-d", "ip"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).starts_with("(000) ldh      [12]\n"), "{}", stdout(&o));
    // -y wins, as in tcpdump.
    let o = sift(&["-i", "any", "-y", "EN10MB", "-d", "ip"]);
    assert!(stdout(&o).starts_with("(000) ldh      [12]\n"), "{}", stdout(&o));
    // An interface that does not exist is an error, not a guess.
    let o = sift(&["-i", "nosuch0", "-d", "ip"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("nosuch0"), "{}", stderr(&o));
}
