//! Name resolution with caller-supplied tables (`LowerOptions::names`):
//! host, network and Ethernet host names, `gateway`, and the errors for
//! names that do not resolve (message naming the name, span on it).

use sift_ir::{lower, matches, LinkType, LowerOptions, NameTables, PacketView, Pred};
use std::sync::OnceLock;

fn tables() -> &'static NameTables {
    static T: OnceLock<NameTables> = OnceLock::new();
    T.get_or_init(|| {
        let mut t = NameTables::new();
        t.add_hosts(
            "10.20.30.40 v4.test both.test gw.test\n\
             192.0.2.7 gw.test\n\
             fd00::1 v6.test both.test gw.test\n",
        )
        .unwrap();
        t.add_networks("net-a.test 10.20.30.0\n").unwrap();
        t.add_ethers("aa:00:04:00:14:0e gw.test\naa:00:04:00:14:0f mac.test\n").unwrap();
        t
    })
}

fn opts(lt: LinkType) -> LowerOptions {
    LowerOptions { linktype: lt, names: Some(tables()), ..Default::default() }
}

fn pred(expr: &str, lt: LinkType) -> Result<Pred, sift_syntax::Error> {
    lower(&sift_syntax::parse(expr).unwrap(), &opts(lt))
}

fn same(a: &str, b: &str, lt: LinkType) {
    assert_eq!(pred(a, lt).unwrap(), pred(b, lt).unwrap(), "{a} vs {b} on {lt}");
}

#[test]
fn names_lower_like_their_addresses() {
    let en = LinkType::EN10MB;
    same("host v4.test", "host 10.20.30.40", en);
    same("src host V4.TEST", "src host 10.20.30.40", en);
    same("host both.test", "host 10.20.30.40 or host fd00::1", en);
    same("ip6 dst host both.test", "ip6 dst host fd00::1", en);
    same("arp host both.test", "arp host 10.20.30.40", en);
    // getnetbyname gives 10.20.30.0: four bytes, all compared, as libpcap.
    same("net net-a.test", "net 10.20.30.0", en);
    same("ether src mac.test", "ether src aa:00:04:00:14:0f", en);
    // Without a link-layer type field, a bare name is IPv4 or IPv6.
    same("host both.test", "ip host 10.20.30.40 or ip6 host fd00::1", LinkType::RAW);
}

#[test]
fn unknown_names_are_errors_at_the_name() {
    let cases = [
        ("host nosuch.test", "unknown host 'nosuch.test'"),
        ("tcp and dst host nosuch.test", "unknown host 'nosuch.test'"),
        ("arp host v6.test", "unknown host 'v6.test' for specified address family"),
        ("net nonet.test", "unknown network 'nonet.test'"),
        ("ether host nomac.test", "unknown ether host 'nomac.test'"),
        ("gateway v4.test", "unknown Ethernet-like host 'v4.test'"),
        ("gateway mac.test", "unknown host 'mac.test'"),
    ];
    for (expr, msg) in cases {
        let e = pred(expr, LinkType::EN10MB).unwrap_err();
        assert_eq!(e.message, msg, "{expr}");
        let name = expr.rsplit(' ').next().unwrap();
        assert_eq!(&expr[e.span.range()], name, "{expr}: the caret is on the name");
    }
}

#[test]
fn tables_without_fallback_do_not_ask_the_system() {
    // "localhost" resolves on every machine, but not through these tables.
    assert!(pred("host localhost", LinkType::EN10MB).is_err());
    let sys = LowerOptions { linktype: LinkType::EN10MB, ..Default::default() };
    assert!(lower(&sift_syntax::parse("host localhost").unwrap(), &sys).is_ok());
}

/// An Ethernet frame from `src` to `dst` with EtherType `et` and `payload`.
fn frame(dst: [u8; 6], src: [u8; 6], et: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&dst);
    f.extend_from_slice(&src);
    f.extend_from_slice(&et.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

fn ipv4(src: [u8; 4], dst: [u8; 4]) -> Vec<u8> {
    let mut h = vec![0x45, 0, 0, 20, 0, 0, 0, 0, 64, 17, 0, 0];
    h.extend_from_slice(&src);
    h.extend_from_slice(&dst);
    h
}

#[test]
fn gateway_matches_forwarded_ipv4_arp_rarp_only() {
    let gw = [0xaa, 0, 4, 0, 0x14, 0x0e];
    let other = [2, 0, 0, 0, 0, 1];
    let p = pred("gateway gw.test", LinkType::EN10MB).unwrap();
    let ip_p = pred("ip gateway gw.test", LinkType::EN10MB).unwrap();
    let run = |p: &Pred, f: &[u8]| matches(p, PacketView { data: f, wire_len: f.len() as u32 });
    // Forwarded by the gateway: its MAC, someone else's addresses.
    let fwd = frame(gw, other, 0x0800, &ipv4([10, 0, 0, 1], [10, 0, 0, 2]));
    assert!(run(&p, &fwd));
    assert!(run(&ip_p, &fwd));
    let fwd_out = frame(other, gw, 0x0800, &ipv4([10, 0, 0, 1], [10, 0, 0, 2]));
    assert!(run(&p, &fwd_out));
    // To or from the gateway itself (any of its IPv4 addresses): no.
    assert!(!run(&p, &frame(gw, other, 0x0800, &ipv4([10, 0, 0, 1], [10, 20, 30, 40]))));
    assert!(!run(&p, &frame(gw, other, 0x0800, &ipv4([192, 0, 2, 7], [10, 0, 0, 2]))));
    // Not the gateway's MAC: no.
    assert!(!run(&p, &frame(other, other, 0x0800, &ipv4([10, 0, 0, 1], [10, 0, 0, 2]))));
    // IPv6 through the gateway is not IPv4, ARP or RARP (as libpcap master).
    assert!(!run(&p, &frame(gw, other, 0x86dd, &[0x60; 40])));
    // `arp gateway` wants ARP.
    assert!(!run(&pred("arp gateway gw.test", LinkType::EN10MB).unwrap(), &fwd));
}

#[test]
fn gateway_errors() {
    let e = pred("gateway gw.test", LinkType::RAW).unwrap_err();
    assert_eq!(e.message, "'gateway' not supported on DLT_RAW");
    let e = pred("tcp gateway gw.test", LinkType::EN10MB).unwrap_err();
    assert_eq!(e.message, "'tcp' is not a valid qualifier for 'gateway'");
    let e = pred("mpls and gateway gw.test", LinkType::EN10MB).unwrap_err();
    assert_eq!(e.message, "'gateway' cannot be used within MPLS");
}
