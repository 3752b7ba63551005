//! Unit tests of lowering on hand-built ASTs. The differential test against
//! libpcap itself is `crates/sift-testkit/tests/lowering_vs_libpcap.rs`.

use super::*;
use crate::eval::{eval_pred, matches, PacketView};
use crate::pred::{CmpOp, Size, Value};
use sift_syntax::ast::{Arith, ArithOp, RelOp};

fn sp() -> Span {
    Span::new(0, 1)
}

fn filter(e: Expr) -> Filter {
    Filter { source: "x".into(), expr: Some(e) }
}

fn prim(p: Primitive) -> Expr {
    Expr::Prim(p, sp())
}

fn id(proto: Option<ProtoQual>, dir: Option<DirQual>, addr: Option<AddrQual>, id: Id) -> Expr {
    prim(Primitive::Id { qual: Qual { proto, dir, addr }, id })
}

fn on(lt: LinkType, e: Expr) -> Result<Pred> {
    lower(&filter(e), &LowerOptions { linktype: lt, netmask: Some(0), ..LowerOptions::default() })
}

fn en(e: Expr) -> Pred {
    on(LinkType::EN10MB, e).expect("lowers")
}

fn num(k: u32) -> Arith {
    Arith::Num(k, sp())
}

fn bin(op: ArithOp, a: Arith, b: Arith) -> Arith {
    Arith::Binary { op, lhs: Box::new(a), rhs: Box::new(b), span: sp() }
}

fn acc(proto: ProtoQual, index: Arith, size: u8) -> Arith {
    Arith::Load { proto, index: Box::new(index), size, span: sp() }
}

fn rel(op: RelOp, a: Arith, b: Arith) -> Expr {
    prim(Primitive::Relation { op, lhs: a, rhs: b })
}

fn pkt(data: &[u8]) -> PacketView<'_> {
    PacketView { data, wire_len: data.len() as u32 }
}

/// An Ethernet + IPv4 + TCP packet from 10.0.0.1:1234 to 10.0.0.2:80.
fn tcp4() -> Vec<u8> {
    let mut p = vec![0u8; 54];
    p[12] = 0x08;
    p[14] = 0x45;
    p[23] = 6;
    p[26..30].copy_from_slice(&[10, 0, 0, 1]);
    p[30..34].copy_from_slice(&[10, 0, 0, 2]);
    p[34..36].copy_from_slice(&1234u16.to_be_bytes());
    p[36..38].copy_from_slice(&80u16.to_be_bytes());
    p
}

#[test]
fn empty_filter_accepts_everything() {
    let f = Filter { source: " ".into(), expr: None };
    assert_eq!(lower(&f, &LowerOptions::default()), Ok(Pred::True));
}

#[test]
fn unsupported_link_type_is_an_error() {
    let e = on(LinkType(147), prim(Primitive::ProtoAbbrev(ProtoQual::Ip))).unwrap_err();
    assert!(e.message.contains("not supported yet"), "{}", e.message);
}

#[test]
fn ip_on_each_link_type() {
    let ip = || prim(Primitive::ProtoAbbrev(ProtoQual::Ip));
    assert_eq!(en(ip()), Pred::eq(Value::load(Size::Half, 12), 0x800));
    assert_eq!(on(LinkType::LINUX_SLL, ip()).unwrap(), Pred::eq(Value::load(Size::Half, 14), 0x800));
    assert_eq!(on(LinkType::LINUX_SLL2, ip()).unwrap(), Pred::eq(Value::load(Size::Half, 0), 0x800));
    assert_eq!(on(LinkType::IPV4, ip()).unwrap(), Pred::True);
    assert_eq!(on(LinkType::IPV6, ip()).unwrap(), Pred::False);
    assert_eq!(
        on(LinkType::RAW, ip()).unwrap(),
        Pred::eq(Value::load(Size::Byte, 0).bin(crate::BinOp::And, Value::Const(0xf0)), 0x40)
    );
    assert_eq!(on(LinkType::LOOP, ip()).unwrap(), Pred::eq(Value::load(Size::Word, 0), 2));
    assert_eq!(on(LinkType::NULL, ip()).unwrap(), Pred::eq(Value::load(Size::Word, 0), 2u32.to_be()));
}

#[test]
fn null_swapped_byte_order() {
    let ip6 = filter(prim(Primitive::ProtoAbbrev(ProtoQual::Ip6)));
    let mut o = LowerOptions { linktype: LinkType::NULL, savefile: true, ..LowerOptions::default() };
    let same = lower(&ip6, &o).unwrap();
    o.swapped = true;
    let swapped = lower(&ip6, &o).unwrap();
    // Savefiles: the BSD values of AF_INET6 (here FreeBSD's).
    let le = 28u32.to_le_bytes();
    let be = 28u32.to_be_bytes();
    let host_order = if cfg!(target_endian = "little") { le } else { be };
    let other_order = if cfg!(target_endian = "little") { be } else { le };
    assert!(matches(&same, pkt(&host_order)));
    assert!(!matches(&same, pkt(&other_order)));
    assert!(matches(&swapped, pkt(&other_order)));
    assert!(!matches(&swapped, pkt(&host_order)));
}

#[test]
fn null_ipv6_live_and_savefile() {
    let ip6 = filter(prim(Primitive::ProtoAbbrev(ProtoQual::Ip6)));
    let live = LowerOptions { linktype: LinkType::NULL, ..LowerOptions::default() };
    let file = LowerOptions { savefile: true, ..live };
    let host = |af: u32| if cfg!(target_endian = "little") { af.to_le_bytes() } else { af.to_be_bytes() };
    let p = lower(&ip6, &live).unwrap();
    assert!(matches(&p, pkt(&host(10))));
    assert!(!matches(&p, pkt(&host(24))));
    let p = lower(&ip6, &file).unwrap();
    assert!(!matches(&p, pkt(&host(10))));
    for af in [24, 28, 30] {
        assert!(matches(&p, pkt(&host(af))));
    }
    // LOOP: network order, never swapped.
    let lo = LowerOptions { linktype: LinkType::LOOP, savefile: true, swapped: true, ..live };
    let p = lower(&ip6, &lo).unwrap();
    assert!(matches(&p, pkt(&30u32.to_be_bytes())));
}

#[test]
fn port_structure_and_verdicts() {
    let p = en(id(Some(ProtoQual::Tcp), None, Some(AddrQual::Port), Id::Num(80)));
    // IPv6 first, then IPv4.
    let Pred::Or(v) = &p else { panic!("{p}") };
    assert_eq!(v.len(), 2);
    let Pred::And(v6) = &v[0] else { panic!("{p}") };
    assert_eq!(v6[0], Pred::eq(Value::load(Size::Half, 12), 0x86dd));
    assert!(matches(&p, pkt(&tcp4())));
    // The port test reads past the variable IPv4 header: truncating the
    // destination port aborts (rejects) even though the source port is not 80.
    assert!(!matches(&p, pkt(&tcp4()[..37])));
    assert_eq!(eval_pred(&p, pkt(&tcp4()[..37])), Err(crate::eval::Abort));
}

#[test]
fn port_errors() {
    let e = on(LinkType::EN10MB, id(Some(ProtoQual::Udp), None, Some(AddrQual::Port), Id::Name("ssh".into())))
        .unwrap_err();
    assert_eq!(e.message, "port 'ssh' is tcp");
    let e = on(LinkType::EN10MB, id(None, None, Some(AddrQual::Port), Id::Num(65536))).unwrap_err();
    assert_eq!(e.message, "illegal port number 65536 > 65535");
    let e = on(LinkType::EN10MB, id(Some(ProtoQual::Icmp), None, Some(AddrQual::Port), Id::Num(1)))
        .unwrap_err();
    assert_eq!(e.message, "illegal qualifier of 'port'");
    let e = on(LinkType::EN10MB, id(None, None, Some(AddrQual::Port), Id::Name("nosuch".into())))
        .unwrap_err();
    assert_eq!(e.message, "unknown port 'nosuch'");
    let e = on(LinkType::EN10MB, id(None, None, Some(AddrQual::Portrange), Id::Name("80--90".into())))
        .unwrap_err();
    assert_eq!(e.message, "illegal port number -90 < 0");
}

#[test]
fn host_and_net() {
    let p = en(id(None, None, Some(AddrQual::Host), Id::Ipv4 { addr: 0x0a00_0001, parts: 4 }));
    // ip src, ip dst, arp src, arp dst, rarp src, rarp dst.
    let Pred::Or(v) = &p else { panic!("{p}") };
    assert_eq!(v.len(), 6);
    assert!(matches(&p, pkt(&tcp4())));
    let net = en(id(None, None, Some(AddrQual::Net), Id::Num(10)));
    assert!(matches(&net, pkt(&tcp4())));
    let e = on(
        LinkType::EN10MB,
        id(None, None, Some(AddrQual::Net), Id::Ipv4Prefix { addr: 0x0a00_0001, parts: 4, len: 8 }),
    )
    .unwrap_err();
    assert!(e.message.starts_with("non-network bits set"), "{}", e.message);
    let e = on(
        LinkType::EN10MB,
        id(None, Some(DirQual::Src), None, Id::Ipv4Prefix { addr: 0x0a00_0000, parts: 4, len: 8 }),
    )
    .unwrap_err();
    assert_eq!(e.message, "Mask syntax for networks only");
}

#[test]
fn ip_broadcast_needs_a_netmask() {
    let f = filter(prim(Primitive::Broadcast(Some(ProtoQual::Ip))));
    let e = lower(&f, &LowerOptions::default()).unwrap_err();
    assert_eq!(e.message, "netmask not known, so 'ip broadcast' not supported");
    let unknown = LowerOptions { netmask: Some(0xffff_ffff), ..LowerOptions::default() };
    assert!(lower(&f, &unknown).is_err(), "0xffffffff is PCAP_NETMASK_UNKNOWN");
    let o = LowerOptions { netmask: Some(0xffff_ff00), ..LowerOptions::default() };
    let p = lower(&f, &o).unwrap();
    let mut b = tcp4();
    b[33] = 255;
    assert!(matches(&p, pkt(&b)));
    assert!(!matches(&p, pkt(&tcp4())));
}

#[test]
fn relation_checks_then_test() {
    // tcp[13] & 2 != 0: ip, tcp (v4 or v6), first fragment, then the test.
    let p = en(rel(
        RelOp::Ne,
        bin(ArithOp::And, acc(ProtoQual::Tcp, num(13), 1), num(2)),
        num(0),
    ));
    let Pred::And(v) = &p else { panic!("{p}") };
    assert_eq!(v[0], Pred::eq(Value::load(Size::Half, 12), 0x800));
    assert!(matches!(v.last(), Some(Pred::Not(_))));
    let mut syn = tcp4();
    syn.push(0);
    syn[47] = 0x02;
    assert!(matches(&p, pkt(&syn)));
}

#[test]
fn arith_drops_right_checks() {
    // 1 + tcp[0] = 0 has no protocol checks at all.
    let p = en(rel(RelOp::Eq, bin(ArithOp::Add, num(1), acc(ProtoQual::Tcp, num(0), 1)), num(0)));
    assert!(matches!(p, Pred::Test(_)), "{p}");
}

#[test]
fn constant_divisor_checks_look_at_the_first_statement() {
    let div = |rhs: Arith| on(LinkType::EN10MB, rel(RelOp::Eq, bin(ArithOp::Div, num(1), rhs), num(1)));
    assert_eq!(div(num(0)).unwrap_err().message, "division by zero");
    assert_eq!(div(bin(ArithOp::Add, num(0), num(1))).unwrap_err().message, "division by zero");
    assert_eq!(div(acc(ProtoQual::Ip, num(0), 1)).unwrap_err().message, "division by zero");
    assert!(div(acc(ProtoQual::Ip, num(1), 1)).is_ok());
    let shl = on(
        LinkType::EN10MB,
        rel(RelOp::Eq, bin(ArithOp::Shl, num(1), acc(ProtoQual::Ip, num(40), 1)), num(1)),
    );
    assert_eq!(shl.unwrap_err().message, "shift by more than 31 bits");
    let m = on(LinkType::EN10MB, rel(RelOp::Eq, bin(ArithOp::Mod, Arith::Len(sp()), num(0)), num(1)));
    assert_eq!(m.unwrap_err().message, "modulus by zero");
}

#[test]
fn shifts_by_32_or_more_give_zero() {
    // 1 << (len - 60) == 0 for len 64 (count 4: 16), len 93 (count 33: 0).
    let p = en(rel(
        RelOp::Eq,
        bin(ArithOp::Shl, num(1), bin(ArithOp::Sub, Arith::Len(sp()), num(60))),
        num(0),
    ));
    let data = [0u8; 16];
    assert!(!matches(&p, PacketView { data: &data, wire_len: 64 }));
    assert!(matches(&p, PacketView { data: &data, wire_len: 93 }));
    assert!(matches(&p, PacketView { data: &data, wire_len: 59 }));
}

#[test]
fn too_many_registers() {
    // 1 + (1 + (1 + ...)) nested 16 deep needs 17 registers.
    let mut a = num(1);
    for _ in 0..15 {
        a = bin(ArithOp::Add, num(1), a);
    }
    assert!(on(LinkType::EN10MB, rel(RelOp::Eq, a.clone(), num(0))).is_ok());
    let deeper = bin(ArithOp::Add, num(1), a);
    let e = on(LinkType::EN10MB, rel(RelOp::Eq, deeper, num(0))).unwrap_err();
    assert_eq!(e.message, "too many registers needed to evaluate expression");
}

/// libpcap never frees the register an unqualified `protochain` allocates
/// (found by the random differential campaign): each one leaves one less
/// for later arithmetic, and the 16th cannot allocate its walks' register.
#[test]
fn unqualified_protochain_leaks_a_register() {
    let chain15 = |n: usize| {
        let mut s = "1".to_string();
        for _ in 1..n {
            s = format!("1 + ({s})");
        }
        format!("{s} = 0")
    };
    let lower = |text: &str| {
        let f = sift_syntax::parse(text).unwrap();
        crate::lower(&f, &LowerOptions::default())
    };
    // 16 registers: fine alone and after a qualified protochain (freed).
    assert!(lower(&chain15(16)).is_ok());
    assert!(lower(&format!("ip6 protochain 6 or {}", chain15(16))).is_ok());
    // After an unqualified one, only 15 are left; before it, all 16.
    let e = lower(&format!("protochain 6 or {}", chain15(16))).unwrap_err();
    assert_eq!(e.message, "too many registers needed to evaluate expression");
    assert!(lower(&format!("protochain 6 or {}", chain15(15))).is_ok());
    assert!(lower(&format!("{} or protochain 6", chain15(16))).is_ok());
    // 15 unqualified protochains compile (15 leaked + 1 for the walks);
    // the 16th cannot allocate its walk's register.
    let many = |n: usize| vec!["protochain 6"; n].join(" or ");
    assert!(lower(&many(15)).is_ok());
    assert_eq!(lower(&many(16)).unwrap_err().message, "too many registers needed to evaluate expression");
}

#[test]
fn long_chains_do_not_recurse() {
    let mut e = prim(Primitive::Less(1));
    for i in 0..100_000 {
        e = Expr::Or(Box::new(e), Box::new(prim(Primitive::Greater(i))));
    }
    let p = en(e);
    let Pred::Or(v) = &p else { panic!() };
    assert_eq!(v.len(), 100_001);
}

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    let mut e = prim(Primitive::Less(1));
    for _ in 0..(MAX_DEPTH + 10) {
        e = Expr::And(
            Box::new(prim(Primitive::Greater(1))),
            Box::new(Expr::Or(Box::new(e), Box::new(prim(Primitive::Less(2))))),
        );
    }
    let r = on(LinkType::EN10MB, e);
    assert!(r.unwrap_err().message.contains("nested too deeply"));
}

#[test]
fn tunnel_vni_ranges() {
    assert!(on(LinkType::EN10MB, prim(Primitive::Geneve(Some(0xff_ffff)))).is_ok());
    assert!(on(LinkType::EN10MB, prim(Primitive::Vxlan(None))).is_ok());
    let e = on(LinkType::EN10MB, prim(Primitive::Vxlan(Some(0x100_0000)))).unwrap_err();
    assert_eq!(e.message, "VXLAN VNI 16777216 greater than maximum 16777215");
    let e = on(LinkType::EN10MB, prim(Primitive::Geneve(Some(0x100_0000)))).unwrap_err();
    assert_eq!(e.message, "Geneve VNI 16777216 greater than maximum 16777215");
}

#[test]
fn mac_hosts() {
    let mac = [1, 2, 3, 4, 5, 6];
    let p = en(id(Some(ProtoQual::Link), Some(DirQual::Src), None, Id::Mac(mac)));
    // gen_bcmp: bytes 2..6 as a word, then bytes 0..2 as a half.
    assert_eq!(
        p,
        Pred::eq(Value::load(Size::Word, 8), 0x0304_0506).and(Pred::eq(Value::load(Size::Half, 6), 0x0102))
    );
    let e = on(LinkType::LINUX_SLL, id(Some(ProtoQual::Link), None, Some(AddrQual::Host), Id::Mac(mac)));
    assert!(e.is_err());
    let e = on(LinkType::EN10MB, id(None, None, Some(AddrQual::Host), Id::Mac(mac))).unwrap_err();
    assert_eq!(e.message, "ethernet address used in non-ether expression");
}

#[test]
fn less_greater() {
    let data = [0u8; 4];
    let less = en(prim(Primitive::Less(100)));
    let greater = en(prim(Primitive::Greater(100)));
    assert!(matches(&less, PacketView { data: &data, wire_len: 100 }));
    assert!(!matches(&less, PacketView { data: &data, wire_len: 101 }));
    assert!(matches(&greater, PacketView { data: &data, wire_len: 100 }));
    assert!(!matches(&greater, PacketView { data: &data, wire_len: 99 }));
    assert_eq!(greater, Pred::test(Value::Len, CmpOp::Ge, Value::Const(100)));
}

fn byte(index: u32, op: sift_syntax::ast::ByteOp, value: u32) -> Expr {
    prim(Primitive::Byte { index, op, value })
}

#[test]
fn byte_and_or_load_the_byte_as_libpcap_master() {
    use crate::pred::BinOp;
    use sift_syntax::ast::ByteOp;
    // `&`: bits intersect (jset on the loaded byte).
    let and = en(byte(8, ByteOp::And, 5));
    assert_eq!(and, Pred::test(Value::load(Size::Byte, 8), CmpOp::Set, Value::Const(5)));
    // `|`: (byte | V) != 0, as master's `ldb; or #V; jeq #0` negated.
    let or = en(byte(8, ByteOp::Or, 5));
    assert_eq!(or, Pred::eq(Value::load(Size::Byte, 8).bin(BinOp::Or, Value::Const(5)), 0).not());
    let mut p = [0u8; 9];
    assert_eq!(eval_pred(&and, pkt(&p)), Ok(false));
    assert_eq!(eval_pred(&or, pkt(&p)), Ok(true));
    p[8] = 4;
    assert_eq!(eval_pred(&and, pkt(&p)), Ok(true));
    // The byte must be captured (1.10.3 never loaded it).
    assert_eq!(eval_pred(&and, pkt(&p[..8])), Err(crate::eval::Abort));
    assert_eq!(eval_pred(&or, pkt(&p[..8])), Err(crate::eval::Abort));
    // Relative to the link-layer header (at 0 on every supported link type).
    let sll = on(LinkType::LINUX_SLL, byte(3, ByteOp::Or, 0)).expect("lowers");
    assert_eq!(sll, Pred::eq(Value::load(Size::Byte, 3).bin(BinOp::Or, Value::Const(0)), 0).not());
}

#[test]
fn byte_value_range_is_checked_for_every_operator() {
    use sift_syntax::ast::ByteOp;
    for op in [ByteOp::Eq, ByteOp::Lt, ByteOp::Gt, ByteOp::And, ByteOp::Or] {
        let e = on(LinkType::IPV4, byte(1, op, 256)).unwrap_err();
        assert_eq!(e.message, "byte argument 256 greater than maximum 255");
        assert!(on(LinkType::IPV4, byte(1, op, 255)).is_ok());
    }
}

#[test]
fn range_check_errors_point_at_the_value() {
    let source = "tcp or ip proto 256";
    let f = Filter {
        source: source.into(),
        expr: Some(Expr::Prim(
            Primitive::Id { qual: Qual { proto: Some(ProtoQual::Ip), dir: None, addr: Some(AddrQual::Proto) }, id: Id::Num(256) },
            Span::new(7, 19),
        )),
    };
    let e = lower(&f, &LowerOptions::default()).unwrap_err();
    assert_eq!(e.message, "protocol number 256 greater than maximum 255");
    assert_eq!(e.span, Span::new(16, 19));
    // A span that does not fit the text falls back to the primitive's span.
    let mut bad = f.clone();
    if let Some(Expr::Prim(_, s)) = &mut bad.expr {
        *s = Span::new(7, 400);
    }
    assert_eq!(lower(&bad, &LowerOptions::default()).unwrap_err().span, Span::new(7, 400));
    // A span over no value (hand-built ASTs) too.
    let e = on(LinkType::EN10MB, id(Some(ProtoQual::Link), None, Some(AddrQual::Proto), Id::Num(70000))).unwrap_err();
    assert_eq!(e.message, "EtherType 70000 greater than maximum 65535");
    assert_eq!(e.span, Span::new(0, 1));
}

#[test]
fn vlan_moves_the_type_field_and_payload_for_what_follows() {
    let ip = || prim(Primitive::ProtoAbbrev(ProtoQual::Ip));
    let p = en(Expr::And(Box::new(prim(Primitive::Vlan(Some(5)))), Box::new(ip())));
    let tpid = |k| Pred::eq(Value::load(Size::Half, 12), k);
    let expected = tpid(0x8100)
        .or(tpid(0x88a8))
        .or(tpid(0x9100))
        .and(Pred::eq(Value::load(Size::Half, 14).bin(crate::pred::BinOp::And, Value::Const(0xfff)), 5))
        .and(Pred::eq(Value::load(Size::Half, 16), 0x800));
    assert_eq!(p, expected);
    // Across `or` too: the second `ip` is the one after the tag.
    let p = en(Expr::Or(
        Box::new(Expr::And(Box::new(prim(Primitive::Vlan(None))), Box::new(ip()))),
        Box::new(ip()),
    ));
    let Pred::Or(v) = p else { panic!("{p}") };
    assert_eq!(v[1], Pred::eq(Value::load(Size::Half, 16), 0x800));
}

/// A list of ports joined by `or` lowers as one (`Lowerer::port_group`)
/// and gives every packet, truncated ones included, the verdict of the
/// ports lowered one by one and joined in order (what libpcap does).
#[test]
fn a_list_of_ports_lowers_as_its_ports_one_by_one() {
    let lower_str = |expr: &str, lt: LinkType| {
        let ast = sift_syntax::parse(expr).expect("parses");
        lower(&ast, &LowerOptions { linktype: lt, ..LowerOptions::default() }).expect("lowers")
    };
    let cases = [
        ("tcp port 21 or tcp port 20 or tcp port 8080", &[21u32, 20, 8080][..], "tcp port"),
        ("udp src port (53 or 5353 or 0)", &[53, 5353, 0], "udp src port"),
        ("port 80 or port 443", &[80, 443], "port"),
        ("sctp dst port 9 or sctp dst port 10", &[9, 10], "sctp dst port"),
        ("tcp src and dst port (1 or 2 or 3)", &[1, 2, 3], "tcp src and dst port"),
    ];
    let links = [
        LinkType::EN10MB,
        LinkType::RAW,
        LinkType::LINUX_SLL,
        LinkType::NULL,
        LinkType::IEEE802_11,
        LinkType::IPV4,
    ];
    // Deterministic pseudo-random bytes (xorshift).
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for &lt in &links {
        for (expr, ports, head) in cases {
            let grouped = lower_str(expr, lt);
            // The same ports lowered one by one, joined in order.
            let one_by_one = ports
                .iter()
                .map(|p| lower_str(&format!("{head} {p}"), lt))
                .reduce(|a, b| a.or(b))
                .expect("ports");
            if lt == LinkType::EN10MB {
                assert!(crate::opt::analysis::size(&grouped) < crate::opt::analysis::size(&one_by_one), "{expr}");
            }
            let (mut hits, mut aborts) = (0, 0);
            for n in 0..3000u32 {
                let r = next();
                let mut pkt: Vec<u8> = (0..80).map(|_| (next() % 7) as u8).collect();
                // Plausible headers now and then: Ethernet IPv4/IPv6, raw
                // IPv4/IPv6, the ports of the list.
                let eth = [[0x08u8, 0x00], [0x86, 0xdd], [0x08, 0x06]][(r % 3) as usize];
                pkt[12..14].copy_from_slice(&eth);
                pkt[0] = [0x45u8, 0x60, 0x46][(r >> 2) as usize % 3];
                pkt[14] = [0x45u8, 0x60, 0x46][(r >> 4) as usize % 3];
                for at in [9usize, 23, 20, 6] {
                    pkt[at] = [6u8, 17, 132, 1][(r >> (at % 8)) as usize % 4];
                }
                for at in [20usize, 22, 24, 34, 36, 38, 40, 54, 56, 58, 60] {
                    if next() % 2 == 0 {
                        let p = ports[(next() % ports.len() as u64) as usize];
                        pkt[at..at + 2].copy_from_slice(&(p as u16).to_be_bytes());
                    }
                }
                // Not a fragment (IPv4 at 0 or at 14), now and then.
                if next() % 2 == 0 {
                    pkt[6..8].fill(0);
                    pkt[20..22].fill(0);
                }
                let len = if n % 3 == 0 { 80 } else { (next() % 81) as usize };
                let view = PacketView { data: &pkt[..len], wire_len: 80 };
                let a = eval_pred(&grouped, view);
                let b = eval_pred(&one_by_one, view);
                assert_eq!(a.is_err(), b.is_err(), "{expr} on {lt:?}: abort differs on {:?}", &pkt[..len]);
                assert_eq!(matches(&grouped, view), matches(&one_by_one, view), "{expr} on {lt:?}: {:?}", &pkt[..len]);
                hits += u32::from(matches(&grouped, view));
                aborts += u32::from(a.is_err());
            }
            // (The packets are built for Ethernet and raw IP.)
            assert!(hits > 0 || !matches!(lt, LinkType::EN10MB | LinkType::RAW), "{expr} on {lt:?}: no packet matched");
            assert!(aborts > 0 || !matches!(lt, LinkType::EN10MB | LinkType::RAW), "{expr} on {lt:?}: no truncated packet aborted");
        }
    }
}
