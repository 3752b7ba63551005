//! Lowering never panics: random ASTs (every primitive kind, odd values,
//! unknown names, every link type including unsupported ones) either lower
//! or give an error, and the predicates they lower to evaluate on random,
//! truncated packets without panicking.

use sift_ir::eval::{eval_pred, PacketView};
use sift_ir::{lower, LinkType, LowerOptions};
use sift_syntax::ast::*;
use sift_syntax::Span;

/// xorshift64*: deterministic, dependency-free.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len() as u64) as usize]
    }
    fn value(&mut self) -> u32 {
        match self.below(6) {
            0 => 0,
            1 => self.below(16) as u32,
            2 => self.below(256) as u32,
            3 => self.below(70_000) as u32,
            4 => u32::MAX - self.below(4) as u32,
            _ => self.next() as u32,
        }
    }
}

const PROTOS: &[ProtoQual] = &[
    ProtoQual::Link,
    ProtoQual::Ip,
    ProtoQual::Arp,
    ProtoQual::Rarp,
    ProtoQual::Sctp,
    ProtoQual::Tcp,
    ProtoQual::Udp,
    ProtoQual::Icmp,
    ProtoQual::Igmp,
    ProtoQual::Igrp,
    ProtoQual::Atalk,
    ProtoQual::Aarp,
    ProtoQual::Decnet,
    ProtoQual::Lat,
    ProtoQual::Sca,
    ProtoQual::Moprc,
    ProtoQual::Mopdl,
    ProtoQual::Ip6,
    ProtoQual::Icmp6,
    ProtoQual::Ah,
    ProtoQual::Esp,
    ProtoQual::Pim,
    ProtoQual::Vrrp,
    ProtoQual::Carp,
    ProtoQual::Iso,
    ProtoQual::Esis,
    ProtoQual::Isis,
    ProtoQual::Clnp,
    ProtoQual::Stp,
    ProtoQual::Ipx,
    ProtoQual::Netbeui,
    ProtoQual::L1,
    ProtoQual::L2,
    ProtoQual::Iih,
    ProtoQual::Lsp,
    ProtoQual::Snp,
    ProtoQual::Csnp,
    ProtoQual::Psnp,
    ProtoQual::Radio,
];

const DIRS: &[DirQual] = &[
    DirQual::Src,
    DirQual::Dst,
    DirQual::SrcOrDst,
    DirQual::SrcAndDst,
    DirQual::Ra,
    DirQual::Ta,
    DirQual::Addr1,
    DirQual::Addr2,
    DirQual::Addr3,
    DirQual::Addr4,
];

const ADDRS: &[AddrQual] = &[
    AddrQual::Host,
    AddrQual::Net,
    AddrQual::Port,
    AddrQual::Portrange,
    AddrQual::Gateway,
    AddrQual::Proto,
    AddrQual::Protochain,
];

const NAMES: &[&str] = &[
    "http", "domain", "ssh", "bootps", "tcp", "udp", "ip", "ip6", "ospf", "iso", "stp",
    "netbeui", "ipx", "loopback", "80-90", "25-smtp", "ftp-data-ssh", "smtp-domain", "1-2x",
    "loopback", "link-local", "default", "no-such-name", "", "-", "9999999999-1",
];

fn span() -> Span {
    Span::new(0, 1)
}

fn opt<T: Copy>(r: &mut Rng, xs: &[T]) -> Option<T> {
    if r.below(3) == 0 {
        None
    } else {
        Some(r.pick(xs))
    }
}

fn id(r: &mut Rng) -> Id {
    match r.below(9) {
        0 => Id::Num(r.value()),
        1 => Id::Name(r.pick(NAMES).to_string()),
        2 => Id::Ipv4 { addr: r.next() as u32, parts: r.below(6) as u8 },
        3 => Id::Ipv4Prefix { addr: r.next() as u32, parts: r.below(6) as u8, len: r.below(40) as u32 },
        4 => Id::Ipv4Mask { addr: r.next() as u32 & 0xff00_0000, mask: 0xff00_0000 },
        5 => {
            let mut a = [0u8; 16];
            for b in a.iter_mut() {
                *b = if r.below(2) == 0 { 0 } else { r.next() as u8 };
            }
            Id::Ipv6 { addr: a, len: if r.below(2) == 0 { None } else { Some(r.below(140) as u32) } }
        }
        6 => Id::Mac([r.next() as u8, 2, 3, 4, 5, r.next() as u8]),
        7 => Id::Mac8(r.next() as u8),
        _ => Id::Decnet { area: r.below(64) as u8, node: r.below(1024) as u16 },
    }
}

fn arith(r: &mut Rng, depth: u32) -> Arith {
    if depth == 0 {
        return if r.below(4) == 0 { Arith::Len(span()) } else { Arith::Num(r.value(), span()) };
    }
    match r.below(5) {
        0 => Arith::Num(r.value(), span()),
        1 => Arith::Len(span()),
        2 => Arith::Neg(Box::new(arith(r, depth - 1)), span()),
        3 => Arith::Load {
            proto: r.pick(PROTOS),
            index: Box::new(arith(r, depth - 1)),
            size: r.pick(&[1, 2, 4, 3, 0]),
            span: span(),
        },
        _ => Arith::Binary {
            op: r.pick(&[
                ArithOp::Add,
                ArithOp::Sub,
                ArithOp::Mul,
                ArithOp::Div,
                ArithOp::Mod,
                ArithOp::And,
                ArithOp::Or,
                ArithOp::Xor,
                ArithOp::Shl,
                ArithOp::Shr,
            ]),
            lhs: Box::new(arith(r, depth - 1)),
            rhs: Box::new(arith(r, depth - 1)),
            span: span(),
        },
    }
}

fn primitive(r: &mut Rng) -> Primitive {
    match r.below(14) {
        0..=4 => {
            let qual = Qual { proto: opt(r, PROTOS), dir: opt(r, DIRS), addr: opt(r, ADDRS) };
            let mut id = id(r);
            // No host-name lookups: they would query the resolver (slow,
            // and dependent on the network).
            if matches!(id, Id::Name(_)) && matches!(qual.addr, None | Some(AddrQual::Host)) {
                id = Id::Num(r.value());
            }
            Primitive::Id { qual, id }
        }
        5 => Primitive::ProtoAbbrev(r.pick(PROTOS)),
        6 | 7 => Primitive::Relation {
            op: r.pick(&[RelOp::Eq, RelOp::Ne, RelOp::Gt, RelOp::Ge, RelOp::Lt, RelOp::Le]),
            lhs: arith(r, 3),
            rhs: arith(r, 3),
        },
        8 => Primitive::Broadcast(opt(r, PROTOS)),
        9 => Primitive::Multicast(opt(r, PROTOS)),
        10 => {
            if r.below(2) == 0 {
                Primitive::Less(r.value())
            } else {
                Primitive::Greater(r.value())
            }
        }
        11 => Primitive::Byte {
            index: r.value(),
            op: r.pick(&[ByteOp::Eq, ByteOp::Lt, ByteOp::Gt, ByteOp::And, ByteOp::Or]),
            value: r.value(),
        },
        12 => match r.below(4) {
            0 => Primitive::Inbound,
            1 => Primitive::Outbound,
            2 => Primitive::Pppoed,
            _ => Primitive::Vlan(None),
        },
        _ => Primitive::Ifindex(r.value()),
    }
}

fn expr(r: &mut Rng, depth: u32) -> Expr {
    if depth == 0 {
        return Expr::Prim(primitive(r), span());
    }
    match r.below(5) {
        0 => Expr::And(Box::new(expr(r, depth - 1)), Box::new(expr(r, depth - 1))),
        1 => Expr::Or(Box::new(expr(r, depth - 1)), Box::new(expr(r, depth - 1))),
        2 => Expr::Not(Box::new(expr(r, depth - 1)), span()),
        _ => Expr::Prim(primitive(r), span()),
    }
}

#[test]
fn random_asts_lower_or_fail_cleanly() {
    let links = [
        LinkType::EN10MB,
        LinkType::RAW,
        LinkType::IPV4,
        LinkType::IPV6,
        LinkType::NULL,
        LinkType::LOOP,
        LinkType::LINUX_SLL,
        LinkType::LINUX_SLL2,
        LinkType(105),
        LinkType::IEEE802_11_RADIO,
        LinkType::IEEE802_11_RADIO_AVS,
        LinkType::PRISM_HEADER,
        LinkType::PPI,
        LinkType::FDDI,
        LinkType::IEEE802,
        LinkType::IP_OVER_FC,
        LinkType(9999),
    ];
    let mut r = Rng(0x5eed_1234_abcd_0001);
    let (mut ok, mut err) = (0, 0);
    let mut pkt = [0u8; 128];
    for _ in 0..100_000 {
        let e = expr(&mut r, 3);
        let f = Filter { source: "x".into(), expr: Some(e) };
        let o = LowerOptions {
            linktype: r.pick(&links),
            netmask: if r.below(2) == 0 { None } else { Some(r.next() as u32) },
            savefile: r.below(2) == 0,
            swapped: r.below(2) == 0,
            names: None,
            port_lists: r.below(2) == 0,
        };
        match lower(&f, &o) {
            Ok(p) => {
                ok += 1;
                for _ in 0..4 {
                    for b in pkt.iter_mut() {
                        *b = if r.below(3) == 0 { r.next() as u8 } else { 0 };
                    }
                    let caplen = r.below(129) as usize;
                    let wire_len = r.next() as u32;
                    let _ = eval_pred(&p, PacketView { data: &pkt[..caplen], wire_len });
                }
            }
            Err(e) => {
                err += 1;
                assert!(!e.message.is_empty());
            }
        }
    }
    assert!(ok > 1000 && err > 1000, "ok {ok}, err {err}");
}
