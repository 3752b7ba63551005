//! `geneve [vni]` and `vxlan [vni]` from the command line: programs on
//! the link types that carry IP, counts on libpcap's test captures (the
//! TESTrun apply rows' results), and errors with a caret.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn sift(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sift")).args(args).output().expect("run sift")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn capture(name: &str) -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/pcaps/libpcap-filter").join(name);
    p.exists().then_some(p)
}

/// `sift -r FILE --count EXPR`: the number of matching packets.
fn count(file: &Path, expr: &str) -> u64 {
    let o = sift(&["-r", &file.to_string_lossy(), "--count", expr]);
    assert_eq!(o.status.code(), Some(0), "{expr:?}: {}", text(&o.stderr));
    let out = text(&o.stdout);
    out.split_whitespace().next().and_then(|n| n.parse().ok()).unwrap_or_else(|| panic!("{expr:?}: {out}"))
}

#[test]
fn tunnels_compile_on_ip_link_types() {
    for dlt in ["EN10MB", "RAW", "LINUX_SLL", "LINUX_SLL2", "NULL", "IEEE802_11_RADIO", "PPI", "FDDI"] {
        for expr in ["geneve", "vxlan 100", "geneve and ip", "vxlan and tcp port 80", "geneve 10 and vlan and arp", "geneve and vxlan and ip6"] {
            let o = sift(&["-y", dlt, "-d", expr]);
            let out = text(&o.stdout);
            assert_eq!(o.status.code(), Some(0), "-y {dlt} -d {expr:?}: {}", text(&o.stderr));
            assert!(out.starts_with("(000) ") && out.trim_end().ends_with("ret      #0"), "-y {dlt} -d {expr:?}: {out}");
        }
    }
}

#[test]
fn tunnel_counts_match_libpcap_tests() {
    let (Some(geneve), Some(vxlan)) = (capture("geneve.pcap"), capture("vxlan.pcap")) else {
        eprintln!("shared captures missing: skipped");
        return;
    };
    // TESTrun apply rows (apply_geneve_*, apply_vxlan_*).
    assert_eq!(count(&geneve, "geneve"), 10);
    assert_eq!(count(&geneve, "geneve 10"), 4);
    assert_eq!(count(&geneve, "geneve 11"), 6);
    assert_eq!(count(&geneve, "geneve and tcp src port 22"), 3);
    assert_eq!(count(&vxlan, "vxlan"), 10);
    assert_eq!(count(&vxlan, "vxlan 100"), 10);
    assert_eq!(count(&vxlan, "vxlan 101"), 0);
    assert_eq!(count(&vxlan, "vxlan and icmp[icmptype] == icmp-echo"), 4);
    // The inner frames: 8 IPv4, 2 ARP.
    assert_eq!(count(&vxlan, "vxlan and ip"), 8);
    assert_eq!(count(&vxlan, "vxlan and arp"), 2);
    assert_eq!(count(&vxlan, "vxlan and vxlan"), 0);
}

#[test]
fn tunnel_errors() {
    for (expr, msg) in [
        ("vxlan 123456789", "VXLAN VNI 123456789 greater than maximum 16777215"),
        ("geneve 123456789", "Geneve VNI 123456789 greater than maximum 16777215"),
        ("geneve and protochain 4", "'protochain' not supported with variable length headers"),
        ("vxlan and gateway host.invalid.", "'gateway' cannot be used within VXLAN or Geneve"),
        ("geneve and wlan type mgt", "802.11 link-layer types supported only on 802.11"),
    ] {
        let o = sift(&["-y", "IEEE802_11_RADIO", "-d", expr]);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{expr:?}: {err}");
        assert!(err.contains(msg) && err.contains('^'), "{expr:?}: {err}");
    }
}
