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

impl Drop for Expr {
    /// Drops the tree without recursion: a left-deep `a or b or c ...` chain
    /// of any length (what the parser builds for long filters) would
    /// otherwise overflow the stack when dropped. Children are detached onto
    /// an explicit stack before each node is freed.
    fn drop(&mut self) {
        fn detach(e: &mut Expr, stack: &mut Vec<Expr>) {
            const LEAF: Expr = Expr::Prim(Primitive::Inbound, Span::new(0, 0));
            match e {
                Expr::And(l, r) | Expr::Or(l, r) => {
                    if !matches!(**l, Expr::Prim(..)) {
                        stack.push(std::mem::replace(&mut **l, LEAF));
                    }
                    if !matches!(**r, Expr::Prim(..)) {
                        stack.push(std::mem::replace(&mut **r, LEAF));
                    }
                }
                Expr::Not(x, _) => {
                    if !matches!(**x, Expr::Prim(..)) {
                        stack.push(std::mem::replace(&mut **x, LEAF));
                    }
                }
                Expr::Prim(..) => {}
            }
        }
        let mut stack = Vec::new();
        detach(self, &mut stack);
        while let Some(mut e) = stack.pop() {
            detach(&mut e, &mut stack);
            // `e` now has only primitive children: dropping it recurses once.
        }
    }
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
    /// `ip`.
    Ip,
    /// `arp`.
    Arp,
    /// `rarp`.
    Rarp,
    /// `sctp`.
    Sctp,
    /// `tcp`.
    Tcp,
    /// `udp`.
    Udp,
    /// `icmp`.
    Icmp,
    /// `igmp`.
    Igmp,
    /// `igrp`.
    Igrp,
    /// `atalk`.
    Atalk,
    /// `aarp`.
    Aarp,
    /// `decnet`.
    Decnet,
    /// `lat`.
    Lat,
    /// `sca`.
    Sca,
    /// `moprc`.
    Moprc,
    /// `mopdl`.
    Mopdl,
    /// `ip6`.
    Ip6,
    /// `icmp6`.
    Icmp6,
    /// `ah`.
    Ah,
    /// `esp`.
    Esp,
    /// `pim`.
    Pim,
    /// `vrrp`.
    Vrrp,
    /// `carp`.
    Carp,
    /// `iso`.
    Iso,
    /// `esis`.
    Esis,
    /// `isis`.
    Isis,
    /// `clnp`.
    Clnp,
    /// `stp`.
    Stp,
    /// `ipx`.
    Ipx,
    /// `netbeui`.
    Netbeui,
    /// `l1`.
    L1,
    /// `l2`.
    L2,
    /// `iih`.
    Iih,
    /// `lsp`.
    Lsp,
    /// `snp`.
    Snp,
    /// `csnp`.
    Csnp,
    /// `psnp`.
    Psnp,
    /// `radio`: the radio header of 802.11 captures (index operation only).
    Radio,
}

/// Direction qualifier (libpcap's `Q_SRC`, `Q_DST`, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DirQual {
    /// `src`.
    Src,
    /// `dst`.
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
    /// 802.11 `addr2`.
    Addr2,
    /// 802.11 `addr3`.
    Addr3,
    /// 802.11 `addr4`.
    Addr4,
}

/// Address/type qualifier (libpcap's `Q_HOST`, `Q_NET`, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AddrQual {
    /// `host`.
    Host,
    /// `net`.
    Net,
    /// `port`.
    Port,
    /// `portrange`.
    Portrange,
    /// `gateway`.
    Gateway,
    /// `proto`.
    Proto,
    /// `protochain`.
    Protochain,
}

/// The qualifier triple of a primitive. `None` is libpcap's `Q_DEFAULT`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Qual {
    /// The protocol qualifier (`tcp`, `ether`, ...).
    pub proto: Option<ProtoQual>,
    /// The direction qualifier (`src`, `dst`, ...).
    pub dir: Option<DirQual>,
    /// The address qualifier (`host`, `port`, ...).
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
    /// A dotted IPv4 address with 2 to 4 parts (`10.1`, `10.1.2`,
    /// `10.1.2.3` — a lone number is [`Id::Num`]), as libpcap's HID token:
    /// `addr` is the value with the parts packed from the top byte down
    /// (the first part written is the top byte; missing parts are zero), i.e.
    /// `__pcap_atoin`'s result already shifted into place the way libpcap's
    /// generators "promote" it: `10.1` gives `addr = 0x0a01_0000`,
    /// `parts = 2`. `parts` is how many parts were written (it decides the
    /// implied netmask: `host 10.1` and `net 10.1` both mean `10.1.0.0/16`).
    /// Each part is decimal and at most 255 (checked by the parser).
    Ipv4 {
        /// The address, packed from the top byte down.
        addr: u32,
        /// How many dotted parts were written (2 to 4).
        parts: u8,
    },
    /// `HID/len` (e.g. `10.0.0.0/8`, `192.168/16`): `addr` and `parts` as
    /// for [`Id::Ipv4`] (`192.168/16` gives `0xc0a8_0000`, 2 parts); `len`
    /// is not range-checked by the parser.
    Ipv4Prefix {
        /// The address, packed from the top byte down.
        addr: u32,
        /// How many dotted parts were written (2 to 4).
        parts: u8,
        /// The prefix length as written.
        len: u32,
    },
    /// `HID mask HID` (e.g. `net 10.0.0.0 mask 255.0.0.0`): both values
    /// packed from the top byte down as for [`Id::Ipv4`] (`net 192.168 mask
    /// 255.255` gives `addr = 0xc0a8_0000`, `mask = 0xffff_0000`).
    Ipv4Mask {
        /// The address, packed from the top byte down.
        addr: u32,
        /// The netmask, packed from the top byte down.
        mask: u32,
    },
    /// An IPv6 address, optionally with `/len` (`None`: no prefix written).
    Ipv6 {
        /// The address in network byte order.
        addr: [u8; 16],
        /// The prefix length, if one was written.
        len: Option<u32>,
    },
    /// A MAC-48 address (`aa:bb:cc:dd:ee:ff` and the other accepted forms).
    Mac([u8; 6]),
    /// A MAC-8 (ARCnet) address, `$2b`.
    Mac8(u8),
    /// A DECnet address `AREA.NODE` (`decnet host 50.764`). libpcap reads a
    /// dotted id as a DECnet address instead of an IPv4 address when the
    /// protocol qualifier in force is `decnet` (with `host`, `net` or no
    /// address qualifier); the parser does the same and
    /// checks the ranges as libpcap master does (exactly two decimal parts,
    /// area at most 63, node at most 1023; `invalid DECnet address`).
    /// The 16-bit address libpcap compares is `area << 10 | node`.
    Decnet {
        /// The area, 0 to 63.
        area: u8,
        /// The node, 0 to 1023.
        node: u16,
    },
}

/// Arithmetic operator of `arith op arith`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ArithOp {
    /// `+`.
    Add,
    /// `-`.
    Sub,
    /// `*`.
    Mul,
    /// `/`.
    Div,
    /// `%`.
    Mod,
    /// `&`.
    And,
    /// `|`.
    Or,
    /// `^`.
    Xor,
    /// `<<`.
    Shl,
    /// `>>`.
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
        /// The protocol header the index is relative to.
        proto: ProtoQual,
        /// The byte offset.
        index: Box<Arith>,
        /// The load size: 1, 2 or 4 bytes.
        size: u8,
        /// The span of `proto[...]`.
        span: Span,
    },
    /// `lhs op rhs`.
    Binary {
        /// The operator.
        op: ArithOp,
        /// The left operand.
        lhs: Box<Arith>,
        /// The right operand.
        rhs: Box<Arith>,
        /// The span from the left operand to the right one.
        span: Span,
    },
    /// Unary minus.
    Neg(Box<Arith>, Span),
}

/// Operator of the `byte` primitive (`byte 8 & 5`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ByteOp {
    /// `=`.
    Eq,
    /// `<`.
    Lt,
    /// `>`.
    Gt,
    /// `&` (some bits in common).
    And,
    /// `|` (OR is non-zero).
    Or,
}

/// 802.11 `type`/`subtype`/`dir` primitives (values already resolved to
/// numbers; `subtype` carries the combined type+subtype value libpcap uses).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Wlan {
    /// `type T` (value is the type field shifted into place, e.g. data = 0x08).
    Type(u32),
    /// `type T subtype S` (both values in place).
    TypeSubtype {
        /// The type bits (0x00, 0x04, 0x08 or 0x0c).
        ty: u32,
        /// The subtype bits (a multiple of 0x10).
        subtype: u32,
    },
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
    /// `vpi`.
    Vpi,
    /// `vci`.
    Vci,
}

/// ATM abbreviations (`lane`, `oamf4`, `metac`, ...), DLT_SUNATM.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AtmType {
    /// `lane`.
    Lane,
    /// `oamf4sc`.
    Oamf4Sc,
    /// `oamf4ec`.
    Oamf4Ec,
    /// `oamf4`.
    Oamf4,
    /// `oam`.
    Oam,
    /// `metac`.
    Metac,
    /// `bcc`.
    Bcc,
    /// `sc`.
    Sc,
    /// `ilmic`.
    Ilmic,
    /// `connectmsg`.
    Connectmsg,
    /// `metaconnect`.
    Metaconnect,
}

/// SS7 MTP2 packet types (`fisu`, `lssu`, `msu` and the `h` forms).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mtp2Type {
    /// `fisu`.
    Fisu,
    /// `lssu`.
    Lssu,
    /// `msu`.
    Msu,
    /// `hfisu`.
    Hfisu,
    /// `hlssu`.
    Hlssu,
    /// `hmsu`.
    Hmsu,
}

/// SS7 MTP3 fields (`sio`, `opc`, `dpc`, `sls` and the `h` forms).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mtp3Field {
    /// `sio`.
    Sio,
    /// `opc`.
    Opc,
    /// `dpc`.
    Dpc,
    /// `sls`.
    Sls,
    /// `hsio`.
    Hsio,
    /// `hopc`.
    Hopc,
    /// `hdpc`.
    Hdpc,
    /// `hsls`.
    Hsls,
}

/// A value test on a field: `field relop N` or a list `field (N or M ...)`.
/// libpcap builds `field (N or M)` as `field = N or field = M`, and
/// `field (N and M)` likewise with `and`; the parser expands the list, so a
/// [`FieldTest`] is always one relation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FieldTest {
    /// The comparison.
    pub op: RelOp,
    /// The value compared with.
    pub value: u32,
}

/// One primitive of the language.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Primitive {
    /// `head id`: a qualified identifier (`src host 1.2.3.4`, `tcp port 80`,
    /// `ether proto \arp`, `net 10.0.0.0/8`), or a bare identifier that
    /// inherited its qualifiers (`... or 443`).
    Id {
        /// The qualifiers, written or inherited.
        qual: Qual,
        /// The identifier.
        id: Id,
    },
    /// A protocol name alone (`tcp`, `ip6`, `arp`, `l1`, ...): libpcap's
    /// `gen_proto_abbrev`.
    ProtoAbbrev(ProtoQual),
    /// `arith relop arith`.
    Relation {
        /// The comparison.
        op: RelOp,
        /// The left operand.
        lhs: Arith,
        /// The right operand.
        rhs: Arith,
    },
    /// `[proto] broadcast`.
    Broadcast(Option<ProtoQual>),
    /// `[proto] multicast`.
    Multicast(Option<ProtoQual>),
    /// `less N`.
    Less(u32),
    /// `greater N`.
    Greater(u32),
    /// `byte IDX op VALUE`.
    Byte {
        /// The byte offset in the link-layer header.
        index: u32,
        /// The operator.
        op: ByteOp,
        /// The operand.
        value: u32,
    },
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
    /// `wlan` of `wlan type mgt`. libpcap's grammar accepts any protocol
    /// qualifier there (`tcp type mgt` compiles, the qualifier is ignored),
    /// so it is kept as written: usually [`ProtoQual::Link`].
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
