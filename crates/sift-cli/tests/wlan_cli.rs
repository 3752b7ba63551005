//! `sift -y LINKTYPE -d EXPR` on the 802.11 family (plain, radiotap, AVS,
//! Prism, PPI) and the other MAC-addressed link types (FDDI, Token Ring,
//! IP over Fibre Channel): programs for the usual primitives, and
//! libpcap-style errors with a caret for the ones that do not apply.

use std::process::{Command, Output};

fn sift(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sift")).args(args).output().expect("run sift")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Compiles and checks the listing looks like a complete program.
fn compiles(dlt: &str, expr: &str) {
    let o = sift(&["-y", dlt, "-d", expr]);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "-y {dlt} -d {expr:?}: {}", text(&o.stderr));
    assert!(out.starts_with("(000) "), "-y {dlt} -d {expr:?}: {out}");
    assert!(out.lines().last().is_some_and(|l| l.contains("ret")), "-y {dlt} -d {expr:?}: {out}");
}

/// Fails with exit status 1 and a message containing `msg`.
fn fails(dlt: &str, expr: &str, msg: &str) {
    let o = sift(&["-y", dlt, "-d", expr]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "-y {dlt} -d {expr:?}: {err}");
    assert!(err.contains(msg), "-y {dlt} -d {expr:?}: {err}");
    assert!(err.contains('^'), "no caret: {err}");
}

const WLAN: &[&str] = &["IEEE802_11", "IEEE802_11_RADIO", "IEEE802_11_RADIO_AVS", "PRISM_HEADER", "PPI"];
const LLC_LINKS: &[&str] = &["FDDI", "IEEE802", "IP_OVER_FC"];

#[test]
fn wlan_family_compiles() {
    for dlt in WLAN {
        for expr in [
            "ip",
            "tcp port 80",
            "ip6 and udp",
            "wlan host 1:2:3:4:5:6",
            "wlan addr1 1:2:3:4:5:6 or wlan ta 1:2:3:4:5:6 or wlan ra 1:2:3:4:5:6",
            "type mgt subtype beacon",
            "subtype qos-data",
            "wlan dir tods",
            "link broadcast or link multicast",
            "llc",
            "arp and link[0] = 8",
        ] {
            compiles(dlt, expr);
        }
    }
    compiles("IEEE802_11_RADIO", "radio[0] = 0");
}

#[test]
fn llc_link_types_compile() {
    for dlt in LLC_LINKS {
        for expr in ["ip", "tcp port 80", "link host 1:2:3:4:5:6", "link broadcast", "multicast", "iso", "atalk"] {
            compiles(dlt, expr);
        }
    }
    compiles("FDDI", "llc i");
    compiles("IEEE802", "llc u");
}

#[test]
fn wlan_errors_point_at_the_primitive() {
    fails("FDDI", "ip or type mgt", "802.11 link-layer types supported only on 802.11");
    fails("EN10MB", "wlan dir 1", "802.11 link-layer types supported only on 802.11");
    fails("FDDI", "link addr1 1:2:3:4:5:6", "only supported on 802.11");
    fails("IEEE802_11", "protochain 6", "'protochain' not supported with variable length headers");
    fails("PPI", "radio[0] = 1", "radio information not present in capture");
    fails("IEEE802_11", "mpls", "no MPLS support for 802.11");
    fails("IP_OVER_FC", "llc", "'llc' not supported for RFC 2625 IP-over-Fibre Channel");
    fails("IEEE802", "vlan", "no VLAN support for Token ring");
    fails("IP_OVER_FC", "link proto 65536", "EtherType 65536 greater than maximum 65535");
}
