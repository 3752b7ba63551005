//! Parser tests: every construct of the language, precedence, qualifier
//! inheritance, and errors with their spans.

use sift_syntax::ast::*;
use sift_syntax::{parse, Error, Span};

/// Parses and prints back (the printed form shows the tree's shape).
fn show(s: &str) -> String {
    match parse(s) {
        Ok(f) => f.to_string(),
        Err(e) => panic!("{s:?} failed:\n{}", e.render(s)),
    }
}

fn expr(s: &str) -> Expr {
    match parse(s) {
        Ok(Filter { expr: Some(e), .. }) => e,
        Ok(_) => panic!("{s:?}: empty"),
        Err(e) => panic!("{s:?} failed:\n{}", e.render(s)),
    }
}

fn prim(s: &str) -> (Primitive, Span) {
    match &expr(s) {
        Expr::Prim(p, sp) => (p.clone(), *sp),
        other => panic!("{s:?}: not a primitive: {other:?}"),
    }
}

fn id_of(s: &str) -> (Qual, Id) {
    match prim(s).0 {
        Primitive::Id { qual, id } => (qual, id),
        other => panic!("{s:?}: not an id: {other:?}"),
    }
}

fn err(s: &str) -> Error {
    match parse(s) {
        Ok(f) => panic!("{s:?} parsed as {f}"),
        Err(e) => e,
    }
}

/// The error's span as the text it covers (`<end>` for an empty span at
/// the end).
fn err_at(s: &str) -> (String, String) {
    let e = err(s);
    let t = if e.span.start == e.span.end {
        if e.span.start as usize == s.len() {
            "<end>".to_string()
        } else {
            format!("<empty at {}>", e.span.start)
        }
    } else {
        s[e.span.range()].to_string()
    };
    (e.message, t)
}

fn q(proto: Option<ProtoQual>, dir: Option<DirQual>, addr: Option<AddrQual>) -> Qual {
    Qual { proto, dir, addr }
}

// ---------------------------------------------------------------------
// Empty input and whitespace.

#[test]
fn empty_and_whitespace() {
    for s in ["", " ", "\t\r\n ", "\n"] {
        let f = parse(s).unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(f.expr, None);
        assert_eq!(f.source, s);
        assert_eq!(f.to_string(), "");
    }
    assert_eq!(show("tcp\r\n\tand\nudp"), "(tcp and udp)");
}

// ---------------------------------------------------------------------
// Boolean structure.

#[test]
fn and_or_equal_precedence_left_assoc() {
    assert_eq!(show("tcp or udp and icmp"), "((tcp or udp) and icmp)");
    assert_eq!(show("tcp and udp or icmp"), "((tcp and udp) or icmp)");
    assert_eq!(show("tcp && udp || icmp && arp"), "(((tcp and udp) or icmp) and arp)");
    assert_eq!(show("tcp or (udp and icmp)"), "(tcp or (udp and icmp))");
}

#[test]
fn not_binds_tighter() {
    assert_eq!(show("not tcp and udp"), "(not tcp and udp)");
    assert_eq!(show("! tcp or udp"), "(not tcp or udp)");
    assert_eq!(show("not (tcp and udp)"), "not (tcp and udp)");
    assert_eq!(show("not not tcp"), "not not tcp");
    assert_eq!(show("!!tcp"), "not not tcp");
    let Expr::Not(inner, sp) = &expr("not tcp") else { panic!() };
    assert_eq!(*sp, Span::new(0, 3));
    assert!(matches!(**inner, Expr::Prim(Primitive::ProtoAbbrev(ProtoQual::Tcp), _)));
}

#[test]
fn parentheses() {
    assert_eq!(show("((tcp))"), "tcp");
    assert_eq!(show("(tcp) and (udp)"), "(tcp and udp)");
    assert_eq!(show("((tcp or udp) and (icmp or arp))"), "((tcp or udp) and (icmp or arp))");
}

#[test]
fn chains_are_left_deep() {
    let e = expr("tcp or udp or icmp");
    let Expr::Or(l, r) = &e else { panic!() };
    assert!(matches!(**r, Expr::Prim(Primitive::ProtoAbbrev(ProtoQual::Icmp), _)));
    assert!(matches!(**l, Expr::Or(..)));
}

// ---------------------------------------------------------------------
// Qualified primitives.

#[test]
fn qualifier_combinations() {
    let (qual, id) = id_of("tcp dst port 80");
    assert_eq!(qual, q(Some(ProtoQual::Tcp), Some(DirQual::Dst), Some(AddrQual::Port)));
    assert_eq!(id, Id::Num(80));
    assert_eq!(id_of("src 1.2.3.4").0, q(None, Some(DirQual::Src), None));
    assert_eq!(id_of("ip src 1.2.3.4").0, q(Some(ProtoQual::Ip), Some(DirQual::Src), None));
    assert_eq!(id_of("ip host 1.2.3.4").0, q(Some(ProtoQual::Ip), None, Some(AddrQual::Host)));
    assert_eq!(id_of("host foo").0, q(None, None, Some(AddrQual::Host)));
    assert_eq!(id_of("net 10").0.addr, Some(AddrQual::Net));
    assert_eq!(id_of("portrange 1-2").0.addr, Some(AddrQual::Portrange));
    assert_eq!(id_of("gateway foo").0, q(None, None, Some(AddrQual::Gateway)));
    assert_eq!(id_of("ip gateway foo").0, q(Some(ProtoQual::Ip), None, Some(AddrQual::Gateway)));
    assert_eq!(id_of("proto 6").0, q(None, None, Some(AddrQual::Proto)));
    assert_eq!(id_of("ip6 protochain 6").0, q(Some(ProtoQual::Ip6), None, Some(AddrQual::Protochain)));
    assert_eq!(id_of("src or dst host a").0.dir, Some(DirQual::SrcOrDst));
    assert_eq!(id_of("dst or src a").0.dir, Some(DirQual::SrcOrDst));
    assert_eq!(id_of("src and dst host a").0.dir, Some(DirQual::SrcAndDst));
    assert_eq!(id_of("dst and src net 10").0.dir, Some(DirQual::SrcAndDst));
    for (w, d) in [
        ("ra", DirQual::Ra),
        ("ta", DirQual::Ta),
        ("addr1", DirQual::Addr1),
        ("address2", DirQual::Addr2),
        ("addr3", DirQual::Addr3),
        ("address4", DirQual::Addr4),
    ] {
        assert_eq!(
            id_of(&format!("wlan {w} host a")).0,
            q(Some(ProtoQual::Link), Some(d), Some(AddrQual::Host))
        );
        assert_eq!(id_of(&format!("{w} a")).0, q(None, Some(d), None));
    }
}

#[test]
fn protocol_qualifier_aliases() {
    for w in ["ether", "link", "ppp", "slip", "fddi", "tr", "wlan"] {
        assert_eq!(id_of(&format!("{w} host aa:bb:cc:dd:ee:ff")).0.proto, Some(ProtoQual::Link), "{w}");
    }
    assert_eq!(id_of("es-is proto 1").0.proto, Some(ProtoQual::Esis));
    assert_eq!(id_of("is-is proto 1").0.proto, Some(ProtoQual::Isis));
}

#[test]
fn every_protocol_abbreviation() {
    let all = [
        ("ether", ProtoQual::Link),
        ("ip", ProtoQual::Ip),
        ("arp", ProtoQual::Arp),
        ("rarp", ProtoQual::Rarp),
        ("sctp", ProtoQual::Sctp),
        ("tcp", ProtoQual::Tcp),
        ("udp", ProtoQual::Udp),
        ("icmp", ProtoQual::Icmp),
        ("igmp", ProtoQual::Igmp),
        ("igrp", ProtoQual::Igrp),
        ("pim", ProtoQual::Pim),
        ("vrrp", ProtoQual::Vrrp),
        ("carp", ProtoQual::Carp),
        ("atalk", ProtoQual::Atalk),
        ("aarp", ProtoQual::Aarp),
        ("decnet", ProtoQual::Decnet),
        ("lat", ProtoQual::Lat),
        ("sca", ProtoQual::Sca),
        ("moprc", ProtoQual::Moprc),
        ("mopdl", ProtoQual::Mopdl),
        ("ip6", ProtoQual::Ip6),
        ("icmp6", ProtoQual::Icmp6),
        ("ah", ProtoQual::Ah),
        ("esp", ProtoQual::Esp),
        ("iso", ProtoQual::Iso),
        ("esis", ProtoQual::Esis),
        ("isis", ProtoQual::Isis),
        ("l1", ProtoQual::L1),
        ("l2", ProtoQual::L2),
        ("iih", ProtoQual::Iih),
        ("lsp", ProtoQual::Lsp),
        ("snp", ProtoQual::Snp),
        ("csnp", ProtoQual::Csnp),
        ("psnp", ProtoQual::Psnp),
        ("clnp", ProtoQual::Clnp),
        ("stp", ProtoQual::Stp),
        ("ipx", ProtoQual::Ipx),
        ("netbeui", ProtoQual::Netbeui),
        ("radio", ProtoQual::Radio),
    ];
    for (w, p) in all {
        assert_eq!(prim(w), (Primitive::ProtoAbbrev(p), Span::new(0, w.len() as u32)), "{w}");
    }
}

#[test]
fn id_forms() {
    assert_eq!(id_of("host 10.1.2.3").1, Id::Ipv4 { addr: 0x0a01_0203, parts: 4 });
    assert_eq!(id_of("host 10.1.2").1, Id::Ipv4 { addr: 0x0a01_0200, parts: 3 });
    assert_eq!(id_of("net 192.168").1, Id::Ipv4 { addr: 0xc0a8_0000, parts: 2 });
    assert_eq!(id_of("net 010.001").1, Id::Ipv4 { addr: 0x0a01_0000, parts: 2 });
    assert_eq!(id_of("host 167772161").1, Id::Num(167_772_161));
    assert_eq!(id_of("net 10.0.0.0/8").1, Id::Ipv4Prefix { addr: 0x0a00_0000, parts: 4, len: 8 });
    assert_eq!(id_of("net 192.168/16").1, Id::Ipv4Prefix { addr: 0xc0a8_0000, parts: 2, len: 16 });
    assert_eq!(id_of("net 10.0.0.0/33").1, Id::Ipv4Prefix { addr: 0x0a00_0000, parts: 4, len: 33 });
    assert_eq!(id_of("net 192.168 mask 255.255").1, Id::Ipv4Mask { addr: 0xc0a8_0000, mask: 0xffff_0000 });
    let mut v6 = [0u8; 16];
    v6[0] = 0xfe;
    v6[1] = 0x80;
    assert_eq!(id_of("ip6 net fe80::/10").1, Id::Ipv6 { addr: v6, len: Some(10) });
    v6[15] = 1;
    assert_eq!(id_of("host fe80::1").1, Id::Ipv6 { addr: v6, len: None });
    let m = [0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff];
    assert_eq!(id_of("ether host aa:bb:cc:dd:ee:ff").1, Id::Mac(m));
    assert_eq!(id_of("ether src aabb.ccdd.eeff").1, Id::Mac(m));
    assert_eq!(id_of("ether dst aabbccddeeff").1, Id::Mac(m));
    // 12 hex digits are a MAC address even when they look octal.
    assert_eq!(id_of("ether host 012345670123").1, Id::Mac([1, 0x23, 0x45, 0x67, 1, 0x23]));
    assert_eq!(id_of("link host $2b").1, Id::Mac8(0x2b));
    assert_eq!(id_of("port http").1, Id::Name("http".into()));
    assert_eq!(id_of("port 80-90").1, Id::Name("80-90".into()));
    assert_eq!(id_of("portrange ftp-data-ssh").1, Id::Name("ftp-data-ssh".into()));
    assert_eq!(id_of("ip proto \\tcp").1, Id::Name("tcp".into()));
    assert_eq!(id_of("ether proto \\ip6").1, Id::Name("ip6".into()));
    assert_eq!(id_of("host host.invalid.").1, Id::Name("host.invalid.".into()));
    assert_eq!(id_of("port 0x50").1, Id::Num(0x50));
    assert_eq!(id_of("port 010").1, Id::Num(8));
    assert_eq!(id_of("port tcpflags").1, Id::Num(13));
    assert_eq!(id_of("decnet host 50.764").1, Id::Decnet { area: 50, node: 764 });
    assert_eq!(id_of("decnet src 63.1023").1, Id::Decnet { area: 63, node: 1023 });
}

#[test]
fn parenthesized_ids() {
    assert_eq!(show("port (80)"), "port 80");
    assert_eq!(show("port ((80))"), "port 80");
    assert_eq!(show("host (a)"), "host a");
    assert_eq!(show("port (80 or 90)"), "(port 80 or port 90)");
    assert_eq!(show("port (514 || 1900 || 161)"), "(port 514 or port 1900 or port 161)");
    assert_eq!(show("port ((80) or 90)"), "(port 80 or port 90)");
    assert_eq!(show("port (80 or (90))"), "(port 80 or port 90)");
    assert_eq!(show("host (a or (b and c))"), "(host a or (host b and host c))");
    assert_eq!(show("port (not 80)"), "not port 80");
    assert_eq!(show("port (not (80))"), "not port 80");
    assert_eq!(show("port not (80)"), "not port 80");
    assert_eq!(show("host not a"), "not host a");
    assert_eq!(show("host (not a or b)"), "(not host a or host b)");
    assert_eq!(show("host 10.0.0.1 && port (514 || 1900)"), "(host 10.0.0.1 and (port 514 or port 1900))");
    // libpcap's grammar: the first element of a list cannot itself be a
    // parenthesized list, and a list cannot be parenthesized twice.
    for s in [
        "host ((a))",
        "host ((a or b) or c)",
        "port ((80 or 90) or 100)",
        "port ((not 80))",
        "port 80 or ((90 or 100))",
    ] {
        assert!(parse(s).is_err(), "{s}");
    }
}

#[test]
fn id_spans() {
    assert_eq!(prim("tcp port 80").1, Span::new(0, 11));
    assert_eq!(prim("host  10.0.0.0 mask 255.0.0.0").1, Span::new(0, 29));
    let Expr::Or(_, r) = &expr("host a or bb") else { panic!() };
    let Expr::Prim(_, sp) = &**r else { panic!() };
    assert_eq!(*sp, Span::new(10, 12));
}

// ---------------------------------------------------------------------
// Qualifier inheritance.

#[test]
fn inheritance_basic() {
    assert_eq!(show("host a or b"), "(host a or host b)");
    assert_eq!(show("tcp port 80 or 443"), "(tcp port 80 or tcp port 443)");
    assert_eq!(
        show("tcp dst port ftp or ftp-data or domain"),
        "(tcp dst port ftp or tcp dst port ftp-data or tcp dst port domain)"
    );
    assert_eq!(show("not host vs and ace"), "(not host vs and host ace)");
    assert_eq!(show("host foo and port 80 or 443"), "((host foo and port 80) or port 443)");
    assert_eq!(show("port 80 and not 443"), "(port 80 and not port 443)");
    assert_eq!(show("src 1.2.3.4 or 5.6.7.8"), "(src 1.2.3.4 or src 5.6.7.8)");
    assert_eq!(
        show("ether src aa:bb:cc:dd:ee:ff or 1:2:3:4:5:6"),
        "(ether src aa:bb:cc:dd:ee:ff or ether src 01:02:03:04:05:06)"
    );
    assert_eq!(show("port 80 or not not 90"), "(port 80 or not not port 90)");
}

#[test]
fn inheritance_inside_and_across_parentheses() {
    assert_eq!(show("ip host a and (b or c)"), "(ip host a and (ip host b or ip host c))");
    assert_eq!(show("(host a or b)"), "(host a or host b)");
    // After `( expr )`, the qualifier in force is the one from before the
    // parenthesis.
    assert_eq!(show("tcp port 80 or (host 1.1.1.1) or 90"), "(tcp port 80 or host 1.1.1.1 or tcp port 90)");
    assert_eq!(show("host 1.1.1.1 and (tcp) or 2.2.2.2"), "((host 1.1.1.1 and tcp) or host 2.2.2.2)");
    assert_eq!(show("host 1.1.1.1 and ((tcp) or 2.2.2.2)"), "(host 1.1.1.1 and (tcp or host 2.2.2.2))");
    assert_eq!(show("host 1.1.1.1 and not (tcp) or 2.2.2.2"), "((host 1.1.1.1 and not tcp) or host 2.2.2.2)");
    assert_eq!(show("port 80 and not not (tcp) or 90"), "((port 80 and not not tcp) or port 90)");
}

#[test]
fn inheritance_needs_a_qualified_primitive() {
    for (s, at) in [
        ("tcp and 80", "80"),
        ("tcp or 2.2.2.2", "2.2.2.2"),
        ("vlan 100 or 200", "200"),
        ("llc or a", "a"),
        ("len > 1 or 5", "5"),
        ("dst port 53 and udp or 54", "54"),
        ("(port 80) or 90", "90"),
        ("host 1.1.1.1 and (tcp or 2.2.2.2)", "2.2.2.2"),
        ("host 1.1.1.1 and not tcp or 2.2.2.2", "2.2.2.2"),
        ("broadcast or (80)", "(80)"),
        ("tcp or not 80", "80"),
    ] {
        let (msg, t) = err_at(s);
        assert!(msg.contains("no qualifier to inherit"), "{s}: {msg}");
        assert_eq!(t, at, "{s}");
    }
    // A bare id at the very start is a plain syntax error.
    assert_eq!(
        err_at("1.2.3.4"),
        ("syntax error: unexpected '1.2.3.4', expected a primitive".into(), "1.2.3.4".into())
    );
    assert!(parse("80").is_err());
    assert!(parse("foo").is_err());
    assert!(parse("(80)").is_err());
}

#[test]
fn numbers_after_and_or_may_start_relations() {
    assert_eq!(show("port 80 or 90 > len"), "(port 80 or 90 > len)");
    assert_eq!(show("port 80 or (90) > len"), "(port 80 or 90 > len)");
    assert_eq!(show("port 80 or not 90 > len"), "(port 80 or not 90 > len)");
    assert_eq!(show("port 80 or (1 + 2) > len"), "(port 80 or (1 + 2) > len)");
    assert_eq!(show("port 80 or ((90) or 100)"), "(port 80 or (port 90 or port 100))");
    assert_eq!(show("port 80 or (((90)))"), "(port 80 or port 90)");
}

// ---------------------------------------------------------------------
// Arithmetic and relations.

#[test]
fn relations() {
    for (s, op) in [
        ("len = 1", RelOp::Eq),
        ("len == 1", RelOp::Eq),
        ("len != 1", RelOp::Ne),
        ("len > 1", RelOp::Gt),
        ("len >= 1", RelOp::Ge),
        ("len < 1", RelOp::Lt),
        ("len <= 1", RelOp::Le),
    ] {
        let (Primitive::Relation { op: o, lhs, rhs }, sp) = prim(s) else { panic!("{s}") };
        assert_eq!(o, op, "{s}");
        assert!(matches!(lhs, Arith::Len(_)));
        assert!(matches!(rhs, Arith::Num(1, _)));
        assert_eq!(sp, Span::new(0, s.len() as u32));
    }
    assert_eq!(show("length - 14 > 100"), "(len - 14) > 100");
    assert_eq!(show("1 = 1"), "1 = 1");
}

#[test]
fn arithmetic_precedence() {
    assert_eq!(show("1 + 2 * 3 = 7"), "(1 + (2 * 3)) = 7");
    assert_eq!(show("1 - 2 - 3 = 0"), "((1 - 2) - 3) = 0");
    assert_eq!(show("8 / 2 / 2 = 2"), "((8 / 2) / 2) = 2");
    assert_eq!(show("1 | 2 & 3 = 3"), "(1 | (2 & 3)) = 3");
    assert_eq!(show("1 & 2 << 3 = 0"), "(1 & (2 << 3)) = 0");
    assert_eq!(show("1 << 2 + 3 = 32"), "(1 << (2 + 3)) = 32");
    assert_eq!(show("1 | 2 | 3 = 3"), "((1 | 2) | 3) = 3");
    assert_eq!(show("(1 + 2) * 3 = 9"), "((1 + 2) * 3) = 9");
    assert_eq!(show("-1 + 2 = 1"), "((-1) + 2) = 1");
    assert_eq!(show("- 1 * 2 = 1"), "((-1) * 2) = 1");
    assert_eq!(show("--len = 1"), "--len = 1");
}

#[test]
fn modulo_and_xor_have_no_precedence() {
    // libpcap 1.10.3: 2*3%4 = 6, 7%4%3 = 0, 1+2^3 = 2.
    assert_eq!(show("2*3%4 = 6"), "(2 * (3 % 4)) = 6");
    assert_eq!(show("7%4%3 = 0"), "(7 % (4 % 3)) = 0");
    assert_eq!(show("1+2^3 = 2"), "(1 + (2 ^ 3)) = 2");
    assert_eq!(show("1 % 2 + 3 = 1"), "(1 % (2 + 3)) = 1");
    assert_eq!(show("1 ^ 2 * 3 | 4 = 1"), "(1 ^ ((2 * 3) | 4)) = 1");
    assert_eq!(show("-1 % 2 = 1"), "-(1 % 2) = 1");
    assert_eq!(show("(-1) % 2 = 1"), "((-1) % 2) = 1");
    assert_eq!(show("1 % 2 = 1 % 3"), "(1 % 2) = (1 % 3)");
}

#[test]
fn loads() {
    let (Primitive::Relation { lhs, .. }, _) = prim("ip[6:2] & 0x1fff = 0") else { panic!() };
    let Arith::Binary { op: ArithOp::And, lhs: load, .. } = lhs else { panic!() };
    let Arith::Load { proto, index, size, span } = *load else { panic!() };
    assert_eq!((proto, size, span), (ProtoQual::Ip, 2, Span::new(0, 7)));
    assert!(matches!(*index, Arith::Num(6, _)));
    assert_eq!(show("ether[0] & 1 != 0"), "(ether[0] & 1) != 0");
    assert_eq!(show("tcp[tcpflags] & tcp-syn != 0"), "(tcp[13] & 2) != 0");
    assert_eq!(show("tcp[13]&tcp-syn!=0"), "(tcp[13] & 2) != 0");
    assert_eq!(show("icmp[icmptype] = icmp-echo"), "icmp[0] = 8");
    assert_eq!(show("ip[len - 4:4] = 1"), "ip[(len - 4):4] = 1");
    assert_eq!(show("ip[0 : 1] = 1"), "ip[0] = 1");
    assert_eq!(show("ip [ 2 ] - 1 = 0"), "(ip[2] - 1) = 0");
    assert_eq!(show("radio[0] = 0"), "radio[0] = 0");
    assert_eq!(show("wlan[0] = 0"), "ether[0] = 0");
    assert_eq!(show("tcp[ip[0]:4] = 0"), "tcp[ip[0]:4] = 0");
    assert_eq!(err_at("ip[0:3] = 1"), ("data size must be 1, 2, or 4".into(), "3".into()));
    assert_eq!(err_at("ip[0:tcpflags] = 1"), ("data size must be 1, 2, or 4".into(), "tcpflags".into()));
    assert!(parse("ip[0:(2)] = 1").is_err());
    assert!(parse("ip[0:len] = 1").is_err());
}

#[test]
fn parenthesized_relations() {
    assert_eq!(show("(len) > 1"), "len > 1");
    assert_eq!(show("((len) > 1)"), "len > 1");
    assert_eq!(show("((len > 1))"), "len > 1");
    assert_eq!(show("(1) > len"), "1 > len");
    assert_eq!(show("(- 1) > len"), "-1 > len");
    assert_eq!(show("((1 + 2)) * 3 > len"), "((1 + 2) * 3) > len");
    assert_eq!(show("not (len - 4) > 10"), "not (len - 4) > 10");
    assert_eq!(show("tcp and ((len - 4) > 10 or udp)"), "(tcp and ((len - 4) > 10 or udp))");
}

#[test]
fn dash_makes_names_not_subtraction() {
    // `len-14` and `1-2` are single identifier tokens, as in libpcap.
    assert!(parse("len-14 = 1").is_err());
    assert!(parse("1-2 = 0").is_err());
    assert_eq!(show("len - 14 = 1"), "(len - 14) = 1");
    assert_eq!(show("ip[2]-1 = 0"), "(ip[2] - 1) = 0");
}

#[test]
fn constant_checks() {
    for (s, m, at) in [
        ("len / 0 = 1", "division by zero", "0"),
        ("len / 0x0 = 1", "division by zero", "0x0"),
        ("len / 00 = 1", "division by zero", "00"),
        ("len / (0) = 1", "division by zero", "0"),
        ("len / -0 = 1", "division by zero", "-0"),
        ("len = 1 / 0", "division by zero", "0"),
        ("len % 0 = 1", "modulus by zero", "0"),
        ("len << 32 = 1", "shift by more than 31 bits", "32"),
        ("len >> 33 = 1", "shift by more than 31 bits", "33"),
        ("len << 0xffffffff = 1", "shift by more than 31 bits", "0xffffffff"),
        ("ip[len / 0] = 1", "division by zero", "0"),
        // libpcap 1.10.3 checks the first instruction of the divisor's code,
        // which loads its leftmost leaf.
        ("len / (0 + len) = 1", "division by zero", "0 + len"),
        ("len / ip[0] = 1", "division by zero", "ip[0]"),
        ("len << (33 - 10) = 1", "shift by more than 31 bits", "33 - 10"),
        ("len << -33 = 1", "shift by more than 31 bits", "-33"),
    ] {
        assert_eq!(err_at(s), (m.to_string(), at.to_string()), "{s}");
    }
    for s in [
        "len / (1 - 1) = 1",
        "len << 31 = 1",
        "len << (16 + 16) = 1",
        "0 / len = 1",
        "len * 0 = 1",
        "len ^ 0 = 1",
        "len / ip[1] = 1",
        "len << -1 = 1",
        "len / len = 1",
    ] {
        assert!(parse(s).is_ok(), "{s}");
    }
}

// ---------------------------------------------------------------------
// Other primitives.

#[test]
fn simple_primitives() {
    let cases: Vec<(&str, Primitive)> = vec![
        ("broadcast", Primitive::Broadcast(None)),
        ("ether broadcast", Primitive::Broadcast(Some(ProtoQual::Link))),
        ("ip broadcast", Primitive::Broadcast(Some(ProtoQual::Ip))),
        ("multicast", Primitive::Multicast(None)),
        ("ip6 multicast", Primitive::Multicast(Some(ProtoQual::Ip6))),
        ("less 100", Primitive::Less(100)),
        ("greater 0x10", Primitive::Greater(16)),
        ("byte 8 = 5", Primitive::Byte { index: 8, op: ByteOp::Eq, value: 5 }),
        ("byte 8 == 5", Primitive::Byte { index: 8, op: ByteOp::Eq, value: 5 }),
        ("byte 8 < 5", Primitive::Byte { index: 8, op: ByteOp::Lt, value: 5 }),
        ("byte 8 > 5", Primitive::Byte { index: 8, op: ByteOp::Gt, value: 5 }),
        ("byte 8 & 5", Primitive::Byte { index: 8, op: ByteOp::And, value: 5 }),
        ("byte 8 | 5", Primitive::Byte { index: 8, op: ByteOp::Or, value: 5 }),
        ("inbound", Primitive::Inbound),
        ("outbound", Primitive::Outbound),
        ("ifindex 3", Primitive::Ifindex(3)),
        ("vlan", Primitive::Vlan(None)),
        ("vlan 100", Primitive::Vlan(Some(100))),
        ("vlan (100)", Primitive::Vlan(Some(100))),
        ("vlan ((100))", Primitive::Vlan(Some(100))),
        ("mpls", Primitive::Mpls(None)),
        ("mpls 100000", Primitive::Mpls(Some(100_000))),
        ("pppoed", Primitive::Pppoed),
        ("pppoes", Primitive::Pppoes(None)),
        ("pppoes 0x27", Primitive::Pppoes(Some(0x27))),
        ("geneve", Primitive::Geneve(None)),
        ("geneve 0xb", Primitive::Geneve(Some(0xb))),
        ("vxlan", Primitive::Vxlan(None)),
        ("vxlan 7", Primitive::Vxlan(Some(7))),
    ];
    for (s, p) in cases {
        assert_eq!(prim(s), (p, Span::new(0, s.len() as u32)), "{s}");
    }
    for s in [
        "less (10)",
        "ifindex (1)",
        "byte (1) = 1",
        "byte 1 != 2",
        "byte 1 <= 2",
        "byte 1 >= 2",
        "byte 1 >> 2",
        "byte 1 ^ 2",
        "pppoed 1234",
        "vlan (100 or 200)",
        "vlan (tcp)",
        "geneve invalid",
        "less",
        "greater x",
    ] {
        assert!(parse(s).is_err(), "{s}");
    }
}

#[test]
fn llc() {
    assert_eq!(prim("llc").0, Primitive::Llc(Llc::Any));
    assert_eq!(prim("llc i").0, Primitive::Llc(Llc::I));
    assert_eq!(prim("llc S").0, Primitive::Llc(Llc::S));
    assert_eq!(prim("llc u").0, Primitive::Llc(Llc::U));
    for (n, v) in [
        ("rr", 0x01),
        ("rnr", 0x05),
        ("RNR", 0x05),
        ("rej", 0x09),
        ("ui", 0x03),
        ("ua", 0x63),
        ("disc", 0x43),
        ("dm", 0x0f),
        ("sabme", 0x6f),
        ("test", 0xe3),
        ("xid", 0xaf),
        ("frmr", 0x87),
    ] {
        assert_eq!(prim(&format!("llc {n}")).0, Primitive::Llc(Llc::Subtype(v)), "{n}");
    }
    assert_eq!(err_at("llc foo"), ("unknown LLC type name \"foo\"".into(), "foo".into()));
    assert!(parse("llc 5").is_err());
}

#[test]
fn pflog() {
    let p = |s: &str| prim(s).0;
    assert_eq!(p("on eth0"), Primitive::Pflog(Pflog::Ifname("eth0".into())));
    assert_eq!(p("ifname eth0.100"), Primitive::Pflog(Pflog::Ifname("eth0.100".into())));
    assert_eq!(p("rset foo"), Primitive::Pflog(Pflog::Ruleset("foo".into())));
    assert_eq!(p("ruleset \\tcp"), Primitive::Pflog(Pflog::Ruleset("tcp".into())));
    assert_eq!(p("rnr 5"), Primitive::Pflog(Pflog::Rulenum(5)));
    assert_eq!(p("rulenum 5"), Primitive::Pflog(Pflog::Rulenum(5)));
    assert_eq!(p("srnr 6"), Primitive::Pflog(Pflog::Subrulenum(6)));
    assert_eq!(p("subrulenum 6"), Primitive::Pflog(Pflog::Subrulenum(6)));
    assert_eq!(p("reason 20"), Primitive::Pflog(Pflog::Reason(20)));
    assert_eq!(p("reason match"), Primitive::Pflog(Pflog::Reason(0)));
    assert_eq!(p("reason SYNPROXY"), Primitive::Pflog(Pflog::Reason(14)));
    assert_eq!(p("action pass"), Primitive::Pflog(Pflog::Action(0)));
    assert_eq!(p("action block"), Primitive::Pflog(Pflog::Action(1)));
    assert_eq!(p("action synproxy-drop"), Primitive::Pflog(Pflog::Action(10)));
    assert_eq!(err_at("action invalid"), ("unknown PF action \"invalid\"".into(), "invalid".into()));
    assert_eq!(err_at("reason map-failed"), ("unknown PF reason \"map-failed\"".into(), "map-failed".into()));
    for s in ["action 1", "ifname 1", "rnr (5)", "rnr x", "on"] {
        assert!(parse(s).is_err(), "{s}");
    }
}

#[test]
fn wlan() {
    let w = |s: &str| match prim(s).0 {
        Primitive::Wlan(p, w) => (p, w),
        other => panic!("{s}: {other:?}"),
    };
    assert_eq!(w("wlan type mgt"), (Some(ProtoQual::Link), Wlan::Type(0)));
    assert_eq!(w("type ctl"), (None, Wlan::Type(4)));
    assert_eq!(w("type data"), (None, Wlan::Type(8)));
    assert_eq!(w("type management"), (None, Wlan::Type(0)));
    assert_eq!(w("type control"), (None, Wlan::Type(4)));
    assert_eq!(w("type 0xc"), (None, Wlan::Type(0xc)));
    assert_eq!(w("tcp type MGT"), (Some(ProtoQual::Tcp), Wlan::Type(0)));
    assert_eq!(w("type mgt subtype probe-req"), (None, Wlan::TypeSubtype { ty: 0, subtype: 0x40 }));
    assert_eq!(w("type ctl subtype ack"), (None, Wlan::TypeSubtype { ty: 4, subtype: 0xd0 }));
    assert_eq!(w("type data subtype qos-data"), (None, Wlan::TypeSubtype { ty: 8, subtype: 0x80 }));
    assert_eq!(w("type data subtype 0x80"), (None, Wlan::TypeSubtype { ty: 8, subtype: 0x80 }));
    assert_eq!(w("subtype beacon"), (None, Wlan::Subtype(0x80)));
    assert_eq!(w("subtype disassociation"), (None, Wlan::Subtype(0xa0)));
    assert_eq!(w("subtype ack"), (None, Wlan::Subtype(0xd4)));
    assert_eq!(w("subtype qos-data"), (None, Wlan::Subtype(0x88)));
    assert_eq!(w("subtype data"), (None, Wlan::Subtype(0x08)));
    assert_eq!(w("subtype bar"), (None, Wlan::Subtype(0x84)));
    assert_eq!(w("dir nods"), (None, Wlan::Dir(0)));
    assert_eq!(w("dir TODS"), (None, Wlan::Dir(1)));
    assert_eq!(w("direction fromds"), (None, Wlan::Dir(2)));
    assert_eq!(w("wlan dir dstods"), (Some(ProtoQual::Link), Wlan::Dir(3)));
    assert_eq!(w("dir 3"), (None, Wlan::Dir(3)));
    assert_eq!(err_at("type 3"), ("invalid 802.11 type value 0x03".into(), "3".into()));
    assert_eq!(err_at("wlan type 16"), ("invalid 802.11 type value 0x10".into(), "16".into()));
    assert_eq!(err_at("type foo"), ("unknown 802.11 type name \"foo\"".into(), "foo".into()));
    assert_eq!(err_at("type data subtype 0x0f"), ("invalid 802.11 subtype value 0x0f".into(), "0x0f".into()));
    assert_eq!(err_at("wlan type 0 subtype 0xff").0, "invalid 802.11 subtype value 0xff");
    assert_eq!(
        err_at("type data subtype beacon"),
        ("unknown 802.11 subtype name \"beacon\"".into(), "beacon".into())
    );
    assert!(err_at("type 0xc subtype beacon").0.contains("unknown 802.11 type"));
    assert_eq!(err_at("subtype foo"), ("unknown 802.11 subtype name \"foo\"".into(), "foo".into()));
    assert_eq!(err_at("wlan dir 4"), ("invalid 802.11 direction value 4".into(), "4".into()));
    assert_eq!(err_at("dir foo"), ("unknown 802.11 direction \"foo\"".into(), "foo".into()));
    assert!(parse("wlan subtype 0").is_err());
}

#[test]
fn atm_and_ss7() {
    for (s, t) in [
        ("lane", AtmType::Lane),
        ("oamf4sc", AtmType::Oamf4Sc),
        ("oamf4ec", AtmType::Oamf4Ec),
        ("oamf4", AtmType::Oamf4),
        ("oam", AtmType::Oam),
        ("metac", AtmType::Metac),
        ("bcc", AtmType::Bcc),
        ("sc", AtmType::Sc),
        ("ilmic", AtmType::Ilmic),
        ("connectmsg", AtmType::Connectmsg),
        ("metaconnect", AtmType::Metaconnect),
    ] {
        assert_eq!(prim(s).0, Primitive::AtmAbbrev(t), "{s}");
    }
    for (s, t) in [
        ("fisu", Mtp2Type::Fisu),
        ("lssu", Mtp2Type::Lssu),
        ("lsu", Mtp2Type::Lssu),
        ("msu", Mtp2Type::Msu),
        ("hfisu", Mtp2Type::Hfisu),
        ("hlssu", Mtp2Type::Hlssu),
        ("hmsu", Mtp2Type::Hmsu),
    ] {
        assert_eq!(prim(s).0, Primitive::Mtp2(t), "{s}");
    }
    let ft = |op, value| FieldTest { op, value };
    assert_eq!(prim("vpi 1"), (Primitive::Atm(AtmField::Vpi, ft(RelOp::Eq, 1)), Span::new(0, 5)));
    assert_eq!(prim("vci > 5").0, Primitive::Atm(AtmField::Vci, ft(RelOp::Gt, 5)));
    assert_eq!(prim("vci != 5").0, Primitive::Atm(AtmField::Vci, ft(RelOp::Ne, 5)));
    assert_eq!(prim("vpi <= 5").0, Primitive::Atm(AtmField::Vpi, ft(RelOp::Le, 5)));
    assert_eq!(prim("vpi (1)").0, Primitive::Atm(AtmField::Vpi, ft(RelOp::Eq, 1)));
    assert_eq!(show("vci (5 or 16)"), "(vci = 5 or vci = 16)");
    assert_eq!(show("vci (5 or 16 or 17)"), "(vci = 5 or vci = 16 or vci = 17)");
    for (s, f) in [
        ("sio", Mtp3Field::Sio),
        ("opc", Mtp3Field::Opc),
        ("dpc", Mtp3Field::Dpc),
        ("sls", Mtp3Field::Sls),
        ("hsio", Mtp3Field::Hsio),
        ("hopc", Mtp3Field::Hopc),
        ("hdpc", Mtp3Field::Hdpc),
        ("hsls", Mtp3Field::Hsls),
    ] {
        assert_eq!(prim(&format!("{s} = 3")).0, Primitive::Mtp3(f, ft(RelOp::Eq, 3)), "{s}");
    }
    assert_eq!(show("dpc (1 or 2)"), "(dpc = 1 or dpc = 2)");
    assert_eq!(show("sls >= 3"), "sls >= 3");
    for s in ["vci (5 and 16)", "vpi ((1))", "vpi", "vpi x", "sio (1 or)", "vpi + 1"] {
        assert!(parse(s).is_err(), "{s}");
    }
}

// ---------------------------------------------------------------------
// Address checks done by the parser.

#[test]
fn address_checks() {
    for (s, m, at) in [
        ("host 256.1.1.1", "invalid IPv4 address '256.1.1.1'", "256.1.1.1"),
        ("arp host 12.500", "invalid IPv4 address '12.500'", "12.500"),
        ("link host 12.500", "invalid IPv4 address '12.500'", "12.500"),
        ("host 0x0a.0x0b", "invalid IPv4 address '0x0a.0x0b'", "0x0a.0x0b"),
        ("net 10.0.0.256/8", "invalid IPv4 address '10.0.0.256'", "10.0.0.256"),
        ("net 10.0.0.0 mask 255.0.0.256", "invalid IPv4 address '255.0.0.256'", "255.0.0.256"),
        ("port 1.2.3.4", "'port' qualifier applied to IPv4 address", "1.2.3.4"),
        (
            "tcp portrange 1.2.3.4/8",
            "'portrange' qualifier applied to IPv4 address and prefix length",
            "1.2.3.4/8",
        ),
        (
            "ip proto 1.2.3.4 mask 255.0.0.0",
            "'proto' qualifier applied to IPv4 address and netmask",
            "1.2.3.4 mask 255.0.0.0",
        ),
        ("protochain fe80::1", "'protochain' qualifier applied to IPv6 address", "fe80::1"),
        ("port fe80::/16", "'port' qualifier applied to IPv6 address and prefix length", "fe80::/16"),
        ("decnet port 11.12.13.14", "'port' qualifier applied to IPv4 address", "11.12.13.14"),
        ("port 80 or 1.2.3.4", "'port' qualifier applied to IPv4 address", "1.2.3.4"),
        ("decnet host 1.2.3", "invalid DECnet address '1.2.3'", "1.2.3"),
        ("decnet host 1.2.3.4", "invalid DECnet address '1.2.3.4'", "1.2.3.4"),
        ("decnet host 17.1024", "invalid DECnet address '17.1024'", "17.1024"),
        ("decnet host 64.1", "invalid DECnet address '64.1'", "64.1"),
        ("decnet src 1.1 or 0x1.2", "invalid DECnet address '0x1.2'", "0x1.2"),
        ("ip6 host fe80::10.20.30.256", "invalid IPv6 address fe80::10.20.30.256", "fe80::10.20.30.256"),
        ("ether ab:cd:ef:0g:00:00", "invalid Ethernet address ab:cd:ef:", "ab:cd:ef:"),
    ] {
        assert_eq!(err_at(s), (m.to_string(), at.to_string()), "{s}");
    }
    // Semantic checks that are the lowering's job are not done here.
    for s in [
        "net 10.0.0.0/33",
        "ip6 net fe80::/129",
        "decnet host 1",
        "vlan 4096",
        "mpls 1048576",
        "ip proto 256",
        "gateway 1.2.3.4",
    ] {
        assert!(parse(s).is_ok(), "{s}");
    }
}

#[test]
fn mask_and_prefix_need_dotted_addresses() {
    for s in [
        "net 10 mask 255",
        "net 10 mask 255.0.0.0",
        "net 10.0.0.0 mask 255",
        "net 10/8",
        "ip6 net fe80:0:0:0:0:0:0:0:0/64",
    ] {
        assert!(parse(s).is_err(), "{s}");
    }
}

// ---------------------------------------------------------------------
// Syntax errors and their spans.

#[test]
fn syntax_errors_with_spans() {
    for (s, at) in [
        ("tcp tcp", "tcp"),
        ("TCP", "TCP"),
        ("Tcp port 80", "Tcp"),
        ("tcp and", "<end>"),
        ("tcp or or udp", "or"),
        ("(tcp", "<end>"),
        ("tcp)", ")"),
        ("()", ")"),
        ("host", "<end>"),
        ("port 80 80", "80"),
        ("ip proto tcp", "tcp"),
        ("dst proto 1", "proto"),
        ("src gateway foo", "gateway"),
        ("src protochain 1", "protochain"),
        ("src or tcp", "tcp"),
        ("src 1.2.3.4 mask", "<end>"),
        ("\\loopback", "\\loopback"),
        ("lldp", "lldp"),
        ("tcp portrange -512", "-"),
        ("len >", "<end>"),
        ("len + > 1", ">"),
        ("ip[0 = 1", "="),
        ("not", "<end>"),
        ("link host $", "$"),
        ("host fe80::1%eth0", "%"),
        ("tcp @ udp", "@"),
    ] {
        let (msg, t) = err_at(s);
        assert_eq!(t, at, "{s}: {msg}");
        assert!(msg.starts_with("syntax error"), "{s}: {msg}");
    }
}

#[test]
fn misspelled_keyword_hint() {
    let s = "tcp port 80 and hots 10.0.0.1";
    let e = err(s);
    assert_eq!(&s[e.span.range()], "hots");
    assert_eq!(e.render(s), format!("{s}\n                ^^^^\n{}", e.message));
}

#[test]
fn number_errors() {
    assert_eq!(err_at("port 08"), ("number 08 contains non-octal digit".into(), "08".into()));
    assert_eq!(
        err_at("len = 4294967296"),
        ("decimal number 4294967296 overflows 32 bits".into(), "4294967296".into())
    );
    assert_eq!(err_at("len = 0x100000000").0, "hexadecimal number 0x100000000 overflows 32 bits");
    assert_eq!(err_at("len = 0400000000000").0, "octal number 0400000000000 overflows 32 bits");
    // Twelve digits are a MAC address (the quirk), not a number.
    assert!(err_at("len = 040000000000").0.starts_with("syntax error"));
    assert!(parse("len = 4294967295").is_ok());
    // Like libpcap's on-demand scanner, a syntax error before a bad token
    // is the one reported.
    assert_eq!(err_at("tcp tcp 08").1, "tcp");
    assert_eq!(err_at("tcp and 08"), ("number 08 contains non-octal digit".into(), "08".into()));
    assert_eq!(err_at("(tcp 08"), ("number 08 contains non-octal digit".into(), "08".into()));
    assert_eq!(err_at("tcp ) @").1, ")");
    assert_eq!(err_at("tcp @ )").1, "@");
}

#[test]
fn nesting_limit() {
    let ok = format!("{}tcp{}", "(".repeat(400), ")".repeat(400));
    assert_eq!(show(&ok), "tcp");
    for deep in [
        format!("{}tcp{}", "(".repeat(600), ")".repeat(600)),
        format!("{}tcp", "not ".repeat(600)),
        format!("{}tcp", "!".repeat(100_000)),
        format!("{}len = 1", "-".repeat(600)),
        format!("port {}80{}", "(".repeat(600), ")".repeat(600)),
        format!("host {}a", "not ".repeat(600)),
        format!("len = {}1", "1 % ".repeat(600)),
        format!("len = 1{}", " + 1".repeat(600)),
        format!("{}1{} = len", "(".repeat(100_000), ")".repeat(100_000)),
        format!("ip[{}0{}] = 1", "ip[".repeat(600), "]".repeat(600)),
    ] {
        let e = err(&deep);
        assert!(e.message.contains("nested too deeply"), "{}: {}", &deep[..20], e.message);
    }
}

#[test]
fn long_chains_parse_and_drop() {
    let n = 20_000;
    let text =
        (0..n).map(|i| format!("host 1.1.{}.{}", i / 256 % 256, i % 256)).collect::<Vec<_>>().join(" or ");
    let f = parse(&text).unwrap_or_else(|e| panic!("{}", e.message));
    // Count the leaves along the left spine (iteratively).
    let mut leaves = 1;
    let mut cur = f.expr.as_ref().unwrap_or_else(|| panic!("empty"));
    while let Expr::Or(l, r) = cur {
        assert!(matches!(**r, Expr::Prim(..)));
        leaves += 1;
        cur = l;
    }
    assert_eq!(leaves, n);
    let printed = f.to_string();
    assert!(printed.starts_with("(host 1.1.0.0 or host 1.1.0.1 or "));
    let again = parse(&printed).unwrap_or_else(|e| panic!("{}", e.message));
    assert_eq!(again.to_string(), printed);
    drop(f);
    // Inheritance over a long chain, and a chain inside parentheses.
    let text = format!("(port 1{})", (2..=n).map(|i| format!(" or {}", i % 65536)).collect::<String>());
    assert!(parse(&text).is_ok());
    let text = format!("not ({})", vec!["tcp"; n].join(" and "));
    assert!(parse(&text).is_ok());
}

#[test]
fn error_render() {
    let s = "tcp and";
    let e = err(s);
    assert_eq!(
        e.render(s),
        "tcp and\n       ^\nsyntax error: unexpected end of expression, expected a primitive"
    );
}
