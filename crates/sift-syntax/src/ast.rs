//! The abstract syntax tree of a filter expression.
//!
//! The tree mirrors libpcap's grammar (`grammar.y`) closely on purpose: code
//! generation must reproduce libpcap's evaluation order exactly (it decides
//! verdicts on truncated packets), so the shape of the tree is the shape of the
//! expression as the user wrote it, left to right.
//!
//! Qualifier inheritance (`host a or b`, `tcp port 80 or 443`) is resolved by
//! the parser: every bare identifier becomes a full [`Primitive::Id`] carrying
//! the qualifiers it inherited, with the span of the identifier itself.
//!
//! Grammar summary (informal):
//!
//! ```text
//! expr   := term | expr (and|or) term | expr (and|or) id      (and/or: equal precedence, left assoc)
//! term   := rterm | not term
//! rterm  := head id | '(' expr ')' | pname | arith relop arith | other
//! head   := pqual [dqual] [aqual] | pqual proto | pqual protochain
//! id     := ID | NUM | HID [/ NUM | mask HID] | HID6 [/ NUM] | EID | AID | not id | '(' id (and|or id)* ')'
//! arith  := NUM | len | pname '[' arith [':' size] ']' | arith op arith | '-' arith | '(' arith ')'
//! ```

use crate::span::Span;

/// A whole filter expression. `None` at the top level (see [`Filter`]) is the
/// empty filter, which accepts every packet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expr {
    /// `a and b` / `a && b`: `a` is evaluated first, `b` only if `a` holds.
    And(Box<Expr>, Box<Expr>),
    /// `a or b` / `a || b`: `a` is evaluated first, `b` only if `a` fails.
    Or(Box<Expr>, Box<Expr>),
    /// `not a` / `! a`; the span covers the operator.
    Not(Box<Expr>, Span),
    /// A primitive with the span of its source text.
    Prim(Primitive, Span),
}

/// A parsed filter: the source text and the expression (absent for an empty
/// or all-whitespace filter).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Filter {
    /// The text that was parsed.
    pub source: String,
    /// The expression; `None` means "accept every packet".
    pub expr: Option<Expr>,
}

/// Protocol qualifier (libpcap's `Q_*` protocol values), e.g. the `tcp` of
/// `tcp port 80` or the `ether` of `ether host ...`.
///
/// Keyword aliases map to one variant: `ether`, `link`, `ppp`, `slip`, `fddi`,
/// `tr` and `wlan` are all [`ProtoQual::Link`]; `es-is` is `Esis`; `is-is` is
/// `Isis`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ProtoQual {
    /// `ether`, `link`, `ppp`, `slip`, `fddi`, `tr`, `wlan`.
    Link,
    Ip,
    Arp,
    Rarp,
    Sctp,
    Tcp,
    Udp,
    Icmp,
    Igmp,
    Igrp,
    Atalk,
    Aarp,
    Decnet,
    Lat,
    Sca,
    Moprc,
    Mopdl,
    Ip6,
    Icmp6,
    Ah,
    Esp,
    Pim,
    Vrrp,
    Carp,
    Iso,
    Esis,
    Isis,
    Clnp,
    Stp,
    Ipx,
    Netbeui,
    L1,
    L2,
    Iih,
    Lsp,
    Snp,
    Csnp,
    Psnp,
    /// `radio`: the radio header of 802.11 captures (index operation only).
    Radio,
}

/// Direction qualifier (libpcap's `Q_SRC`, `Q_DST`, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DirQual {
    Src,
    Dst,
    /// `src or dst` / `dst or src`.
    SrcOrDst,
    /// `src and dst` / `dst and src`.
    SrcAndDst,
    /// 802.11 `ra` (receiver address).
    Ra,
    /// 802.11 `ta` (transmitter address).
    Ta,
    /// 802.11 `addr1` ... `addr4` (also spelled `address1` ...).
    Addr1,
    Addr2,
    Addr3,
    Addr4,
}

/// Address/type qualifier (libpcap's `Q_HOST`, `Q_NET`, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AddrQual {
    Host,
    Net,
    Port,
    Portrange,
    Gateway,
    Proto,
    Protochain,
}

/// The qualifier triple of a primitive. `None` is libpcap's `Q_DEFAULT`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Qual {
    pub proto: Option<ProtoQual>,
    pub dir: Option<DirQual>,
    pub addr: Option<AddrQual>,
}

/// The identifier operand of a qualified primitive (`head id`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Id {
    /// A plain number (`port 80`, `host 10`, `proto 6`): decimal, hex or octal
    /// already converted.
    Num(u32),
    /// A name: host name, service, protocol, network name, ... Escaped
    /// keywords (`\tcp`) arrive here without the backslash.
    Name(String),
    /// A dotted IPv4 address with 1 to 4 parts (`10`, `10.1`, `10.1.2`,
    /// `10.1.2.3` — a lone number is [`Id::Num`]), as libpcap's HID token:
    /// `addr` is the value with the parts packed from the top byte down
    /// exactly as libpcap's `__pcap_atoin` does, `parts` is how many parts were
    /// written (it decides the implied netmask of `net`).
    Ipv4 { addr: u32, parts: u8 },
    /// `HID/len` (e.g. `10.0.0.0/8`, `192.168/16`).
    Ipv4Prefix { addr: u32, parts: u8, len: u32 },
    /// `HID mask HID` (e.g. `net 10.0.0.0 mask 255.0.0.0`).
    Ipv4Mask { addr: u32, mask: u32 },
    /// An IPv6 address, optionally with `/len` (`None`: no prefix written).
    Ipv6 { addr: [u8; 16], len: Option<u32> },
    /// A MAC-48 address (`aa:bb:cc:dd:ee:ff` and the other accepted forms).
    Mac([u8; 6]),
    /// A MAC-8 (ARCnet) address, `$2b`.
    Mac8(u8),
}

/// Arithmetic operator of `arith op arith`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ArithOp {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    And,
    Or,
    Xor,
    Shl,
    Shr,
}

/// Relational operator of `arith relop arith`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RelOp {
    /// `=` or `==`.
    Eq,
    /// `!=` (libpcap: negated `jeq`).
    Ne,
    /// `>`.
    Gt,
    /// `>=`.
    Ge,
    /// `<` (libpcap: negated `jge`).
    Lt,
    /// `<=` (libpcap: negated `jgt`).
    Le,
}

/// An arithmetic expression (unsigned 32-bit, wrapping).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Arith {
    /// A number literal or named constant (`tcpflags`, `tcp-syn`, ...).
    Num(u32, Span),
    /// `len` / `length`: the packet's wire length.
    Len(Span),
    /// `proto[index]` or `proto[index:size]` with size 1, 2 or 4.
    Load {
        proto: ProtoQual,
        index: Box<Arith>,
        size: u8,
        span: Span,
    },
    /// `lhs op rhs`.
    Binary {
        op: ArithOp,
        lhs: Box<Arith>,
        rhs: Box<Arith>,
        span: Span,
    },
    /// Unary minus.
    Neg(Box<Arith>, Span),
}

/// Operator of the `byte` primitive (`byte 8 & 5`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ByteOp {
    Eq,
    Lt,
    Gt,
    And,
    Or,
}

/// 802.11 `type`/`subtype`/`dir` primitives (values already resolved to
/// numbers; `subtype` carries the combined type+subtype value libpcap uses).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Wlan {
    /// `type T` (value is the type field shifted into place, e.g. data = 0x08).
    Type(u32),
    /// `type T subtype S` (both values in place).
    TypeSubtype { ty: u32, subtype: u32 },
    /// `subtype S` alone (value combines type and subtype, libpcap style).
    Subtype(u32),
    /// `dir D` (0 to 3).
    Dir(u32),
}

/// LLC primitive: `llc` alone or with a frame kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Llc {
    /// `llc`.
    Any,
    /// `llc i`.
    I,
    /// `llc s`.
    S,
    /// `llc u`.
    U,
    /// `llc rr`, `llc rnr`, `llc rej`... : an S-format or U-format subtype, by value.
    Subtype(u32),
}

/// PFLOG primitives (DLT_PFLOG).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Pflog {
    /// `ifname NAME` / `on NAME`.
    Ifname(String),
    /// `ruleset NAME` / `rset NAME`.
    Ruleset(String),
    /// `rulenum N` / `rnr N`.
    Rulenum(u32),
    /// `subrulenum N` / `srnr N`.
    Subrulenum(u32),
    /// `reason R` (number).
    Reason(u32),
    /// `action A` (number).
    Action(u32),
}

/// ATM field for `vpi`/`vci` relations (DLT_SUNATM).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AtmField {
    Vpi,
    Vci,
}

/// ATM abbreviations (`lane`, `oamf4`, `metac`, ...), DLT_SUNATM.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AtmType {
    Lane,
    Oamf4Sc,
    Oamf4Ec,
    Oamf4,
    Oam,
    Metac,
    Bcc,
    Sc,
    Ilmic,
    Connectmsg,
    Metaconnect,
}

/// SS7 MTP2 packet types (`fisu`, `lssu`, `msu` and the `h` forms).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mtp2Type {
    Fisu,
    Lssu,
    Msu,
    Hfisu,
    Hlssu,
    Hmsu,
}

/// SS7 MTP3 fields (`sio`, `opc`, `dpc`, `sls` and the `h` forms).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mtp3Field {
    Sio,
    Opc,
    Dpc,
    Sls,
    Hsio,
    Hopc,
    Hdpc,
    Hsls,
}

/// A value test on a field: `field relop N` or a list `field (N or M ...)`.
/// libpcap builds `field (N or M)` as `field = N or field = M`, and
/// `field (N and M)` likewise with `and`; the parser expands the list, so a
/// [`FieldTest`] is always one relation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FieldTest {
    pub op: RelOp,
    pub value: u32,
}

/// One primitive of the language.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Primitive {
    /// `head id`: a qualified identifier (`src host 1.2.3.4`, `tcp port 80`,
    /// `ether proto \arp`, `net 10.0.0.0/8`), or a bare identifier that
    /// inherited its qualifiers (`... or 443`).
    Id { qual: Qual, id: Id },
    /// A protocol name alone (`tcp`, `ip6`, `arp`, `l1`, ...): libpcap's
    /// `gen_proto_abbrev`.
    ProtoAbbrev(ProtoQual),
    /// `arith relop arith`.
    Relation { op: RelOp, lhs: Arith, rhs: Arith },
    /// `[proto] broadcast`.
    Broadcast(Option<ProtoQual>),
    /// `[proto] multicast`.
    Multicast(Option<ProtoQual>),
    /// `less N`.
    Less(u32),
    /// `greater N`.
    Greater(u32),
    /// `byte IDX op VALUE`.
    Byte { index: u32, op: ByteOp, value: u32 },
    /// `inbound`.
    Inbound,
    /// `outbound`.
    Outbound,
    /// `ifindex N`.
    Ifindex(u32),
    /// `vlan [id]`.
    Vlan(Option<u32>),
    /// `mpls [label]`.
    Mpls(Option<u32>),
    /// `pppoed`.
    Pppoed,
    /// `pppoes [session]`.
    Pppoes(Option<u32>),
    /// `geneve [vni]`.
    Geneve(Option<u32>),
    /// `vxlan [vni]`.
    Vxlan(Option<u32>),
    /// `llc [kind]`.
    Llc(Llc),
    /// PFLOG primitives.
    Pflog(Pflog),
    /// 802.11 `type`/`subtype`/`dir`; the optional protocol qualifier is the
    /// `wlan` of `wlan type mgt` (always [`ProtoQual::Link`] when present).
    Wlan(Option<ProtoQual>, Wlan),
    /// `vpi`/`vci` value test.
    Atm(AtmField, FieldTest),
    /// ATM abbreviations.
    AtmAbbrev(AtmType),
    /// MTP2 packet type abbreviations.
    Mtp2(Mtp2Type),
    /// MTP3 field value test.
    Mtp3(Mtp3Field, FieldTest),
}
