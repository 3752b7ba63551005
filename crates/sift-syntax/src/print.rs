//! Printing expressions back as filter text.
//!
//! The output is fully parenthesized (every group of `and`/`or` gets its
//! own parentheses, every arithmetic operation too) and spells out every
//! qualifier, including the ones a bare id inherited, so it reads
//! unambiguously and parses back to the same tree (spans aside):
//!
//! ```
//! let f = sift_syntax::parse("tcp port 80 or 443 and not host a").unwrap();
//! assert_eq!(f.to_string(), "((tcp port 80 or tcp port 443) and not host a)");
//! ```
//!
//! `and`/`or` chains are printed without recursion, so filters of any
//! length print; other nesting recurses once per level (the parser limits
//! it). Printing can add nesting (one level per change between `and` and
//! `or` along a chain, one per arithmetic operator), so the round trip
//! `parse(print(tree))` holds as long as the printed text stays within
//! [`crate::MAX_DEPTH`] levels, which only contrived filters exceed.

use std::fmt::{self, Write};
use std::net::Ipv6Addr;

use crate::ast::*;
use crate::lexer::{self, Tok};
use crate::parser::{LLC_SUBTYPES, PF_ACTIONS, WLAN_SUBTYPE_TABLES};

impl fmt::Display for Filter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.expr {
            Some(e) => fmt::Display::fmt(e, f),
            None => Ok(()),
        }
    }
}

impl fmt::Display for Expr {
    /// Prints the expression with every `and`/`or` group parenthesized. A
    /// run of the same operator is printed flat (`(a or b or c)`): `and`
    /// and `or` associate to the left, so that reads back as the same
    /// left-deep tree, and chains of any length print without nesting.
    /// Where the operator changes, a new group opens:
    /// `((a or b) and c)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Walk the left spine: e = ((first op1 r1) op2 r2) ...
        let mut rights: Vec<(&str, &Expr)> = Vec::new();
        let mut first = self;
        loop {
            match first {
                Expr::And(l, r) => {
                    rights.push(("and", r));
                    first = l;
                }
                Expr::Or(l, r) => {
                    rights.push(("or", r));
                    first = l;
                }
                _ => break,
            }
        }
        rights.reverse();
        let groups = rights.windows(2).filter(|w| w[0].0 != w[1].0).count() + usize::from(!rights.is_empty());
        for _ in 0..groups {
            f.write_char('(')?;
        }
        operand(first, f)?;
        let mut prev: Option<&str> = None;
        for (op, r) in &rights {
            if prev.is_some_and(|p| p != *op) {
                f.write_char(')')?;
            }
            write!(f, " {op} ")?;
            operand(r, f)?;
            prev = Some(op);
        }
        if !rights.is_empty() {
            f.write_char(')')?;
        }
        Ok(())
    }
}

/// An operand of a chain: `not`s, a primitive, or a nested chain.
fn operand(e: &Expr, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let mut cur = e;
    while let Expr::Not(inner, _) = cur {
        f.write_str("not ")?;
        cur = inner;
    }
    match cur {
        Expr::Prim(p, _) => fmt::Display::fmt(p, f),
        other => fmt::Display::fmt(other, f),
    }
}

impl ProtoQual {
    /// The keyword for this protocol qualifier (`ether` for
    /// [`ProtoQual::Link`], which also has the spellings `link`, `ppp`,
    /// `slip`, `fddi`, `tr` and `wlan`).
    pub fn keyword(self) -> &'static str {
        match self {
            ProtoQual::Link => "ether",
            ProtoQual::Ip => "ip",
            ProtoQual::Arp => "arp",
            ProtoQual::Rarp => "rarp",
            ProtoQual::Sctp => "sctp",
            ProtoQual::Tcp => "tcp",
            ProtoQual::Udp => "udp",
            ProtoQual::Icmp => "icmp",
            ProtoQual::Igmp => "igmp",
            ProtoQual::Igrp => "igrp",
            ProtoQual::Atalk => "atalk",
            ProtoQual::Aarp => "aarp",
            ProtoQual::Decnet => "decnet",
            ProtoQual::Lat => "lat",
            ProtoQual::Sca => "sca",
            ProtoQual::Moprc => "moprc",
            ProtoQual::Mopdl => "mopdl",
            ProtoQual::Ip6 => "ip6",
            ProtoQual::Icmp6 => "icmp6",
            ProtoQual::Ah => "ah",
            ProtoQual::Esp => "esp",
            ProtoQual::Pim => "pim",
            ProtoQual::Vrrp => "vrrp",
            ProtoQual::Carp => "carp",
            ProtoQual::Iso => "iso",
            ProtoQual::Esis => "esis",
            ProtoQual::Isis => "isis",
            ProtoQual::Clnp => "clnp",
            ProtoQual::Stp => "stp",
            ProtoQual::Ipx => "ipx",
            ProtoQual::Netbeui => "netbeui",
            ProtoQual::L1 => "l1",
            ProtoQual::L2 => "l2",
            ProtoQual::Iih => "iih",
            ProtoQual::Lsp => "lsp",
            ProtoQual::Snp => "snp",
            ProtoQual::Csnp => "csnp",
            ProtoQual::Psnp => "psnp",
            ProtoQual::Radio => "radio",
        }
    }
}

impl DirQual {
    /// The keyword(s) for this direction qualifier (`src or dst` for
    /// [`DirQual::SrcOrDst`]).
    pub fn keyword(self) -> &'static str {
        match self {
            DirQual::Src => "src",
            DirQual::Dst => "dst",
            DirQual::SrcOrDst => "src or dst",
            DirQual::SrcAndDst => "src and dst",
            DirQual::Ra => "ra",
            DirQual::Ta => "ta",
            DirQual::Addr1 => "addr1",
            DirQual::Addr2 => "addr2",
            DirQual::Addr3 => "addr3",
            DirQual::Addr4 => "addr4",
        }
    }
}

impl AddrQual {
    /// The keyword for this address qualifier.
    pub fn keyword(self) -> &'static str {
        match self {
            AddrQual::Host => "host",
            AddrQual::Net => "net",
            AddrQual::Port => "port",
            AddrQual::Portrange => "portrange",
            AddrQual::Gateway => "gateway",
            AddrQual::Proto => "proto",
            AddrQual::Protochain => "protochain",
        }
    }
}

impl fmt::Display for Qual {
    /// The qualifier words, e.g. `tcp dst port` (empty for no qualifier).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let words = [
            self.proto.map(ProtoQual::keyword),
            self.dir.map(DirQual::keyword),
            self.addr.map(AddrQual::keyword),
        ];
        let mut sep = "";
        for w in words.into_iter().flatten() {
            write!(f, "{sep}{w}")?;
            sep = " ";
        }
        Ok(())
    }
}

/// Writes a name so that it lexes back as the same name: as is when it is a
/// plain identifier, else escaped with a backslash (`\tcp`, `\1.2.3.4`).
fn name(s: &str, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let plain = match lexer::tokenize(s) {
        Ok(t) => {
            matches!(t.as_slice(), [t] if t.tok == Tok::Id(s.to_string()) && t.span.range() == (0..s.len()))
        }
        Err(_) => false,
    };
    if plain {
        f.write_str(s)
    } else {
        write!(f, "\\{s}")
    }
}

fn dotted(addr: u32, parts: u8, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let b = addr.to_be_bytes();
    let n = usize::from(parts.clamp(1, 4));
    for (i, byte) in b.iter().take(n).enumerate() {
        if i > 0 {
            f.write_char('.')?;
        }
        write!(f, "{byte}")?;
    }
    Ok(())
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Id::Num(n) => write!(f, "{n}"),
            Id::Name(s) => name(s, f),
            Id::Ipv4 { addr, parts } => dotted(*addr, *parts, f),
            Id::Ipv4Prefix { addr, parts, len } => {
                dotted(*addr, *parts, f)?;
                write!(f, "/{len}")
            }
            Id::Ipv4Mask { addr, mask } => {
                dotted(*addr, 4, f)?;
                f.write_str(" mask ")?;
                dotted(*mask, 4, f)
            }
            Id::Ipv6 { addr, len } => {
                write!(f, "{}", Ipv6Addr::from(*addr))?;
                match len {
                    Some(l) => write!(f, "/{l}"),
                    None => Ok(()),
                }
            }
            Id::Mac(m) => {
                write!(f, "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}", m[0], m[1], m[2], m[3], m[4], m[5])
            }
            Id::Mac8(a) => write!(f, "${a:02x}"),
            Id::Decnet { area, node } => write!(f, "{area}.{node}"),
        }
    }
}

impl ArithOp {
    /// The operator's symbol.
    pub fn symbol(self) -> &'static str {
        match self {
            ArithOp::Add => "+",
            ArithOp::Sub => "-",
            ArithOp::Mul => "*",
            ArithOp::Div => "/",
            ArithOp::Mod => "%",
            ArithOp::And => "&",
            ArithOp::Or => "|",
            ArithOp::Xor => "^",
            ArithOp::Shl => "<<",
            ArithOp::Shr => ">>",
        }
    }
}

impl RelOp {
    /// The operator's symbol (`=` for [`RelOp::Eq`]).
    pub fn symbol(self) -> &'static str {
        match self {
            RelOp::Eq => "=",
            RelOp::Ne => "!=",
            RelOp::Gt => ">",
            RelOp::Ge => ">=",
            RelOp::Lt => "<",
            RelOp::Le => "<=",
        }
    }
}

impl fmt::Display for Arith {
    /// Fully parenthesized: `((len - 14) > 100)` style operands, numbers in
    /// decimal, loads as `proto[index]` or `proto[index:size]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Arith::Num(n, _) => write!(f, "{n}"),
            Arith::Len(_) => f.write_str("len"),
            Arith::Load { proto, index, size, .. } => {
                if *size == 1 {
                    write!(f, "{}[{index}]", proto.keyword())
                } else {
                    write!(f, "{}[{index}:{size}]", proto.keyword())
                }
            }
            Arith::Binary { op, lhs, rhs, .. } => {
                // A negation operand gets its own parentheses: `-a ^ b` would
                // read back as `-(a ^ b)`.
                f.write_char('(')?;
                arith_operand(lhs, f)?;
                write!(f, " {} ", op.symbol())?;
                arith_operand(rhs, f)?;
                f.write_char(')')
            }
            Arith::Neg(inner, _) => write!(f, "-{inner}"),
        }
    }
}

fn arith_operand(a: &Arith, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    match a {
        Arith::Neg(..) => write!(f, "({a})"),
        _ => fmt::Display::fmt(a, f),
    }
}

fn field_test(field: &str, t: &FieldTest, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    write!(f, "{field} {} {}", t.op.symbol(), t.value)
}

fn opt_num(word: &str, n: Option<u32>, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    match n {
        Some(n) => write!(f, "{word} {n}"),
        None => f.write_str(word),
    }
}

fn opt_proto(p: Option<ProtoQual>, word: &str, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    match p {
        Some(p) => write!(f, "{} {word}", p.keyword()),
        None => f.write_str(word),
    }
}

impl fmt::Display for Primitive {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Primitive::Id { qual, id } => write!(f, "{qual} {id}"),
            Primitive::ProtoAbbrev(p) => f.write_str(p.keyword()),
            Primitive::Relation { op, lhs, rhs } => write!(f, "{lhs} {} {rhs}", op.symbol()),
            Primitive::Broadcast(p) => opt_proto(*p, "broadcast", f),
            Primitive::Multicast(p) => opt_proto(*p, "multicast", f),
            Primitive::Less(n) => write!(f, "less {n}"),
            Primitive::Greater(n) => write!(f, "greater {n}"),
            Primitive::Byte { index, op, value } => {
                let op = match op {
                    ByteOp::Eq => "=",
                    ByteOp::Lt => "<",
                    ByteOp::Gt => ">",
                    ByteOp::And => "&",
                    ByteOp::Or => "|",
                };
                write!(f, "byte {index} {op} {value}")
            }
            Primitive::Inbound => f.write_str("inbound"),
            Primitive::Outbound => f.write_str("outbound"),
            Primitive::Ifindex(n) => write!(f, "ifindex {n}"),
            Primitive::Vlan(n) => opt_num("vlan", *n, f),
            Primitive::Mpls(n) => opt_num("mpls", *n, f),
            Primitive::Pppoed => f.write_str("pppoed"),
            Primitive::Pppoes(n) => opt_num("pppoes", *n, f),
            Primitive::Geneve(n) => opt_num("geneve", *n, f),
            Primitive::Vxlan(n) => opt_num("vxlan", *n, f),
            Primitive::Llc(kind) => match kind {
                Llc::Any => f.write_str("llc"),
                Llc::I => f.write_str("llc i"),
                Llc::S => f.write_str("llc s"),
                Llc::U => f.write_str("llc u"),
                Llc::Subtype(v) => match LLC_SUBTYPES.iter().find(|(_, x)| x == v) {
                    Some((n, _)) => write!(f, "llc {n}"),
                    None => write!(f, "llc {v}"),
                },
            },
            Primitive::Pflog(p) => match p {
                Pflog::Ifname(s) => {
                    f.write_str("ifname ")?;
                    name(s, f)
                }
                Pflog::Ruleset(s) => {
                    f.write_str("ruleset ")?;
                    name(s, f)
                }
                Pflog::Rulenum(n) => write!(f, "rulenum {n}"),
                Pflog::Subrulenum(n) => write!(f, "subrulenum {n}"),
                Pflog::Reason(n) => write!(f, "reason {n}"),
                Pflog::Action(v) => match PF_ACTIONS.iter().find(|(_, x)| x == v) {
                    Some((n, _)) => write!(f, "action {n}"),
                    None => write!(f, "action {v}"),
                },
            },
            Primitive::Wlan(p, w) => {
                if let Some(p) = p {
                    let word = if *p == ProtoQual::Link { "wlan" } else { p.keyword() };
                    write!(f, "{word} ")?;
                }
                match w {
                    Wlan::Type(t) => write!(f, "type {t}"),
                    Wlan::TypeSubtype { ty, subtype } => write!(f, "type {ty} subtype {subtype}"),
                    Wlan::Subtype(v) => {
                        let (ty, sub) = (v & 0x0c, v & 0xf0);
                        let found = WLAN_SUBTYPE_TABLES
                            .iter()
                            .find(|(t, _)| *t == ty)
                            .and_then(|(_, tab)| tab.iter().find(|(_, x)| *x == sub));
                        match found {
                            Some((n, _)) if v & !0xfc == 0 => write!(f, "subtype {n}"),
                            _ => write!(f, "type {ty} subtype {sub}"),
                        }
                    }
                    Wlan::Dir(d) => write!(f, "dir {d}"),
                }
            }
            Primitive::Atm(field, t) => field_test(if *field == AtmField::Vpi { "vpi" } else { "vci" }, t, f),
            Primitive::AtmAbbrev(t) => f.write_str(match t {
                AtmType::Lane => "lane",
                AtmType::Oamf4Sc => "oamf4sc",
                AtmType::Oamf4Ec => "oamf4ec",
                AtmType::Oamf4 => "oamf4",
                AtmType::Oam => "oam",
                AtmType::Metac => "metac",
                AtmType::Bcc => "bcc",
                AtmType::Sc => "sc",
                AtmType::Ilmic => "ilmic",
                AtmType::Connectmsg => "connectmsg",
                AtmType::Metaconnect => "metaconnect",
            }),
            Primitive::Mtp2(t) => f.write_str(match t {
                Mtp2Type::Fisu => "fisu",
                Mtp2Type::Lssu => "lssu",
                Mtp2Type::Msu => "msu",
                Mtp2Type::Hfisu => "hfisu",
                Mtp2Type::Hlssu => "hlssu",
                Mtp2Type::Hmsu => "hmsu",
            }),
            Primitive::Mtp3(field, t) => {
                let word = match field {
                    Mtp3Field::Sio => "sio",
                    Mtp3Field::Opc => "opc",
                    Mtp3Field::Dpc => "dpc",
                    Mtp3Field::Sls => "sls",
                    Mtp3Field::Hsio => "hsio",
                    Mtp3Field::Hopc => "hopc",
                    Mtp3Field::Hdpc => "hdpc",
                    Mtp3Field::Hsls => "hsls",
                };
                field_test(word, t, f)
            }
        }
    }
}
