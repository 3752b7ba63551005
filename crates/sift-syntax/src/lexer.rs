//! The tokenizer of the filter language.
//!
//! It reproduces the behaviour of libpcap's flex scanner (`scanner.l`): at
//! every position the **longest** match of all token rules wins, and when
//! two rules match the same length the rule listed first in the scanner
//! wins. The rules, in priority order:
//!
//! 1. keywords (case-sensitive), including `&&`, `||` and their aliases;
//! 2. whitespace (`[ \r\n\t]`, skipped);
//! 3. one-character operators `+ - * / % : [ ] ! < > ( ) & | ^ =`;
//! 4. two-character operators `>= <= != == << >>`;
//! 5. `$` followed by 1-2 hex digits: a MAC-8 (ARCnet) address;
//! 6. MAC-48 addresses (`a:b:c:d:e:f` with `:`, `-` or `.` separators and
//!    1-2 hex digits per byte, `xxxx.xxxx.xxxx`, or 12 bare hex digits);
//! 7. numbers: decimal, `0x` hex, leading-`0` octal;
//! 8. dotted IPv4 addresses with 2 to 4 parts;
//! 9. IPv6 addresses (every RFC 4291 text form, including embedded IPv4);
//! 10. malformed MAC-like runs (`1:2::3:`), an error;
//! 11. named constants (`tcpflags`, `tcp-syn`, `icmp-echo`, ...), numbers;
//! 12. identifiers `[A-Za-z0-9]([-_.A-Za-z0-9]*[.A-Za-z0-9])?`;
//! 13. `\` followed by a run of anything but space, tab, newline, `!`, `(`
//!     and `)`: an identifier (how keywords are used as names: `\tcp`);
//! 14. any other character: an error.
//!
//! Consequences worth knowing: `80-90`, `len-14` and `1-2` are identifiers,
//! not arithmetic (write `len - 14`); `012345670123` is a MAC address, not
//! an octal number; `tcp-syn` is the number 2 but `tcp-synx` is a name.

use std::sync::OnceLock;

use crate::error::Error;
use crate::span::Span;

/// A keyword of the language. Aliases map to one keyword (`ether`, `link`,
/// `ppp`, `slip`, `fddi`, `tr` and `wlan` are all [`Kw::Link`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kw {
    // Direction qualifiers.
    /// `dst`.
    Dst,
    /// `src`.
    Src,
    /// `address1`, `addr1`.
    Addr1,
    /// `address2`, `addr2`.
    Addr2,
    /// `address3`, `addr3`.
    Addr3,
    /// `address4`, `addr4`.
    Addr4,
    /// `ra`.
    Ra,
    /// `ta`.
    Ta,
    // Protocol qualifiers.
    /// `link`, `ether`, `ppp`, `slip`, `fddi`, `tr`, `wlan`.
    Link,
    /// `arp`.
    Arp,
    /// `rarp`.
    Rarp,
    /// `ip`.
    Ip,
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
    /// `pim`.
    Pim,
    /// `vrrp`.
    Vrrp,
    /// `carp`.
    Carp,
    /// `radio`.
    Radio,
    /// `ip6`.
    Ip6,
    /// `icmp6`.
    Icmp6,
    /// `ah`.
    Ah,
    /// `esp`.
    Esp,
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
    /// `iso`.
    Iso,
    /// `esis`, `es-is`.
    Esis,
    /// `isis`, `is-is`.
    Isis,
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
    /// `clnp`.
    Clnp,
    /// `stp`.
    Stp,
    /// `ipx`.
    Ipx,
    /// `netbeui`.
    Netbeui,
    // Address qualifiers.
    /// `host`.
    Host,
    /// `net`.
    Net,
    /// `mask`.
    Mask,
    /// `port`.
    Port,
    /// `portrange`.
    Portrange,
    /// `proto`.
    Proto,
    /// `protochain`.
    Protochain,
    /// `gateway`.
    Gateway,
    // 802.11.
    /// `type`.
    Type,
    /// `subtype`.
    Subtype,
    /// `direction`, `dir`.
    Dir,
    // Other primitives.
    /// `less`.
    Less,
    /// `greater`.
    Greater,
    /// `byte`.
    Byte,
    /// `broadcast`.
    Broadcast,
    /// `multicast`.
    Multicast,
    /// `and`, `&&`.
    And,
    /// `or`, `||`.
    Or,
    /// `not`, `!`.
    Not,
    /// `len`, `length`.
    Len,
    /// `inbound`.
    Inbound,
    /// `outbound`.
    Outbound,
    /// `ifindex`.
    Ifindex,
    /// `vlan`.
    Vlan,
    /// `mpls`.
    Mpls,
    /// `pppoed`.
    Pppoed,
    /// `pppoes`.
    Pppoes,
    /// `geneve`.
    Geneve,
    /// `vxlan`.
    Vxlan,
    // ATM.
    /// `lane`.
    Lane,
    /// `llc`.
    Llc,
    /// `metac`.
    Metac,
    /// `bcc`.
    Bcc,
    /// `oam`.
    Oam,
    /// `oamf4`.
    Oamf4,
    /// `oamf4ec`.
    Oamf4ec,
    /// `oamf4sc`.
    Oamf4sc,
    /// `sc`.
    Sc,
    /// `ilmic`.
    Ilmic,
    /// `vpi`.
    Vpi,
    /// `vci`.
    Vci,
    /// `connectmsg`.
    Connectmsg,
    /// `metaconnect`.
    Metaconnect,
    // PFLOG.
    /// `on`, `ifname`.
    PfIfname,
    /// `rset`, `ruleset`.
    PfRset,
    /// `rnr`, `rulenum`.
    PfRnr,
    /// `srnr`, `subrulenum`.
    PfSrnr,
    /// `reason`.
    PfReason,
    /// `action`.
    PfAction,
    // SS7.
    /// `fisu`.
    Fisu,
    /// `lssu`, `lsu`.
    Lssu,
    /// `msu`.
    Msu,
    /// `hfisu`.
    Hfisu,
    /// `hlssu`.
    Hlssu,
    /// `hmsu`.
    Hmsu,
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

/// Every keyword spelling with its keyword, as in libpcap's scanner (plus
/// `vxlan`, which libpcap master added).
pub(crate) const KEYWORDS: &[(&str, Kw)] = &[
    ("dst", Kw::Dst),
    ("src", Kw::Src),
    ("link", Kw::Link),
    ("ether", Kw::Link),
    ("ppp", Kw::Link),
    ("slip", Kw::Link),
    ("fddi", Kw::Link),
    ("tr", Kw::Link),
    ("wlan", Kw::Link),
    ("arp", Kw::Arp),
    ("rarp", Kw::Rarp),
    ("ip", Kw::Ip),
    ("sctp", Kw::Sctp),
    ("tcp", Kw::Tcp),
    ("udp", Kw::Udp),
    ("icmp", Kw::Icmp),
    ("igmp", Kw::Igmp),
    ("igrp", Kw::Igrp),
    ("pim", Kw::Pim),
    ("vrrp", Kw::Vrrp),
    ("carp", Kw::Carp),
    ("radio", Kw::Radio),
    ("ip6", Kw::Ip6),
    ("icmp6", Kw::Icmp6),
    ("ah", Kw::Ah),
    ("esp", Kw::Esp),
    ("atalk", Kw::Atalk),
    ("aarp", Kw::Aarp),
    ("decnet", Kw::Decnet),
    ("lat", Kw::Lat),
    ("sca", Kw::Sca),
    ("moprc", Kw::Moprc),
    ("mopdl", Kw::Mopdl),
    ("iso", Kw::Iso),
    ("esis", Kw::Esis),
    ("es-is", Kw::Esis),
    ("isis", Kw::Isis),
    ("is-is", Kw::Isis),
    ("l1", Kw::L1),
    ("l2", Kw::L2),
    ("iih", Kw::Iih),
    ("lsp", Kw::Lsp),
    ("snp", Kw::Snp),
    ("csnp", Kw::Csnp),
    ("psnp", Kw::Psnp),
    ("clnp", Kw::Clnp),
    ("stp", Kw::Stp),
    ("ipx", Kw::Ipx),
    ("netbeui", Kw::Netbeui),
    ("host", Kw::Host),
    ("net", Kw::Net),
    ("mask", Kw::Mask),
    ("port", Kw::Port),
    ("portrange", Kw::Portrange),
    ("proto", Kw::Proto),
    ("protochain", Kw::Protochain),
    ("gateway", Kw::Gateway),
    ("type", Kw::Type),
    ("subtype", Kw::Subtype),
    ("direction", Kw::Dir),
    ("dir", Kw::Dir),
    ("address1", Kw::Addr1),
    ("addr1", Kw::Addr1),
    ("address2", Kw::Addr2),
    ("addr2", Kw::Addr2),
    ("address3", Kw::Addr3),
    ("addr3", Kw::Addr3),
    ("address4", Kw::Addr4),
    ("addr4", Kw::Addr4),
    ("ra", Kw::Ra),
    ("ta", Kw::Ta),
    ("less", Kw::Less),
    ("greater", Kw::Greater),
    ("byte", Kw::Byte),
    ("broadcast", Kw::Broadcast),
    ("multicast", Kw::Multicast),
    ("and", Kw::And),
    ("&&", Kw::And),
    ("or", Kw::Or),
    ("||", Kw::Or),
    ("not", Kw::Not),
    ("len", Kw::Len),
    ("length", Kw::Len),
    ("inbound", Kw::Inbound),
    ("outbound", Kw::Outbound),
    ("ifindex", Kw::Ifindex),
    ("vlan", Kw::Vlan),
    ("mpls", Kw::Mpls),
    ("pppoed", Kw::Pppoed),
    ("pppoes", Kw::Pppoes),
    ("geneve", Kw::Geneve),
    ("vxlan", Kw::Vxlan),
    ("lane", Kw::Lane),
    ("llc", Kw::Llc),
    ("metac", Kw::Metac),
    ("bcc", Kw::Bcc),
    ("oam", Kw::Oam),
    ("oamf4", Kw::Oamf4),
    ("oamf4ec", Kw::Oamf4ec),
    ("oamf4sc", Kw::Oamf4sc),
    ("sc", Kw::Sc),
    ("ilmic", Kw::Ilmic),
    ("vpi", Kw::Vpi),
    ("vci", Kw::Vci),
    ("connectmsg", Kw::Connectmsg),
    ("metaconnect", Kw::Metaconnect),
    ("on", Kw::PfIfname),
    ("ifname", Kw::PfIfname),
    ("rset", Kw::PfRset),
    ("ruleset", Kw::PfRset),
    ("rnr", Kw::PfRnr),
    ("rulenum", Kw::PfRnr),
    ("srnr", Kw::PfSrnr),
    ("subrulenum", Kw::PfSrnr),
    ("reason", Kw::PfReason),
    ("action", Kw::PfAction),
    ("fisu", Kw::Fisu),
    ("lssu", Kw::Lssu),
    ("lsu", Kw::Lssu),
    ("msu", Kw::Msu),
    ("hfisu", Kw::Hfisu),
    ("hlssu", Kw::Hlssu),
    ("hmsu", Kw::Hmsu),
    ("sio", Kw::Sio),
    ("opc", Kw::Opc),
    ("dpc", Kw::Dpc),
    ("sls", Kw::Sls),
    ("hsio", Kw::Hsio),
    ("hopc", Kw::Hopc),
    ("hdpc", Kw::Hdpc),
    ("hsls", Kw::Hsls),
];

/// Names the lexer turns into numbers (libpcap's scanner constants).
pub(crate) const NAMED_CONSTANTS: &[(&str, u32)] = &[
    ("icmptype", 0),
    ("icmpcode", 1),
    ("icmp-echoreply", 0),
    ("icmp-unreach", 3),
    ("icmp-sourcequench", 4),
    ("icmp-redirect", 5),
    ("icmp-echo", 8),
    ("icmp-routeradvert", 9),
    ("icmp-routersolicit", 10),
    ("icmp-timxceed", 11),
    ("icmp-paramprob", 12),
    ("icmp-tstamp", 13),
    ("icmp-tstampreply", 14),
    ("icmp-ireq", 15),
    ("icmp-ireqreply", 16),
    ("icmp-maskreq", 17),
    ("icmp-maskreply", 18),
    ("icmp6type", 0),
    ("icmp6code", 1),
    ("icmp6-destinationunreach", 1),
    ("icmp6-packettoobig", 2),
    ("icmp6-timeexceeded", 3),
    ("icmp6-parameterproblem", 4),
    ("icmp6-echo", 128),
    ("icmp6-echoreply", 129),
    ("icmp6-multicastlistenerquery", 130),
    ("icmp6-multicastlistenerreportv1", 131),
    ("icmp6-multicastlistenerdone", 132),
    ("icmp6-routersolicit", 133),
    ("icmp6-routeradvert", 134),
    ("icmp6-neighborsolicit", 135),
    ("icmp6-neighboradvert", 136),
    ("icmp6-redirect", 137),
    ("icmp6-routerrenum", 138),
    ("icmp6-nodeinformationquery", 139),
    ("icmp6-nodeinformationresponse", 140),
    ("icmp6-ineighbordiscoverysolicit", 141),
    ("icmp6-ineighbordiscoveryadvert", 142),
    ("icmp6-multicastlistenerreportv2", 143),
    ("icmp6-homeagentdiscoveryrequest", 144),
    ("icmp6-homeagentdiscoveryreply", 145),
    ("icmp6-mobileprefixsolicit", 146),
    ("icmp6-mobileprefixadvert", 147),
    ("icmp6-certpathsolicit", 148),
    ("icmp6-certpathadvert", 149),
    ("icmp6-multicastrouteradvert", 151),
    ("icmp6-multicastroutersolicit", 152),
    ("icmp6-multicastrouterterm", 153),
    ("tcpflags", 13),
    ("tcp-fin", 0x01),
    ("tcp-syn", 0x02),
    ("tcp-rst", 0x04),
    ("tcp-push", 0x08),
    ("tcp-ack", 0x10),
    ("tcp-urg", 0x20),
    ("tcp-ece", 0x40),
    ("tcp-cwr", 0x80),
];

/// One-character punctuation tokens.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Punct {
    /// `+`
    Plus,
    /// `-`
    Minus,
    /// `*`
    Star,
    /// `/`
    Slash,
    /// `%`
    Percent,
    /// `:`
    Colon,
    /// `[`
    LBracket,
    /// `]`
    RBracket,
    /// `<`
    Lt,
    /// `>`
    Gt,
    /// `(`
    LParen,
    /// `)`
    RParen,
    /// `&`
    Amp,
    /// `|`
    Pipe,
    /// `^`
    Caret,
    /// `=` or `==`
    Eq,
    /// `>=`
    Ge,
    /// `<=`
    Le,
    /// `!=`
    Ne,
    /// `<<`
    Shl,
    /// `>>`
    Shr,
}

/// A token of the filter language.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Tok {
    /// A keyword (`not` and `!` are both [`Kw::Not`]).
    Kw(Kw),
    /// An operator or bracket.
    Punct(Punct),
    /// A number literal or named constant, already converted.
    Num(u32),
    /// A name: identifier or backslash-escaped word (without the backslash).
    Id(String),
    /// A dotted IPv4 address with 2-4 parts (the text as written; it is
    /// validated by the parser, which knows whether it is a DECnet address).
    Hid(String),
    /// A valid IPv6 address: its text and value.
    Hid6(String, [u8; 16]),
    /// A MAC-48 address.
    Eid([u8; 6]),
    /// A MAC-8 address (`$2b`).
    Aid(u8),
}

/// A token with its span in the source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Token {
    /// The token.
    pub tok: Tok,
    /// Where it is in the source (byte offsets).
    pub span: Span,
}

/// Splits `source` into tokens, or reports the first lexical error
/// (invalid number, malformed address, unexpected character).
pub fn tokenize(source: &str) -> Result<Vec<Token>, Error> {
    let (toks, err) = tokenize_prefix(source);
    match err {
        Some(e) => Err(e),
        None => Ok(toks),
    }
}

/// Tokenizes up to the first lexical error: the tokens before it, and the
/// error if there is one. (libpcap's scanner runs on demand, so a syntax
/// error before a bad token is reported first; the parser does the same
/// with this.)
pub fn tokenize_prefix(source: &str) -> (Vec<Token>, Option<Error>) {
    tokenize_prefix_with::<false>(source)
}

/// [`tokenize_prefix`] with the fast lexer (`EXHAUSTIVE == false`) or the
/// exhaustive one (see [`next_token_with`]).
fn tokenize_prefix_with<const EXHAUSTIVE: bool>(source: &str) -> (Vec<Token>, Option<Error>) {
    let b = source.as_bytes();
    // About one token per four bytes of a long filter: one allocation
    // instead of a dozen regrowths. (Larger first guesses were tried: they
    // save a regrowth on some short filters, but the heap layout they leave
    // behind slows the later stages of others more; one of 1 KiB or more
    // also makes glibc consolidate its free chunks.)
    let mut out = Vec::with_capacity(b.len() / 4 + 1);
    let mut i = 0;
    while i < b.len() {
        let c = at(b, i);
        if matches!(c, b' ' | b'\t' | b'\r' | b'\n') {
            i += 1;
            continue;
        }
        let (len, tok) = match next_token_with::<EXHAUSTIVE>(source, i) {
            Ok(t) => t,
            Err(e) => return (out, Some(e)),
        };
        // `next_token_with` always consumes at least one byte, and stops on a
        // character boundary (multi-byte characters are either consumed
        // whole or reported as errors).
        let end = i + len.max(1);
        out.push(Token { tok, span: span(i, end) });
        i = end;
    }
    (out, None)
}

/// A span from byte offsets (filters longer than 4 GiB saturate).
pub(crate) fn span(start: usize, end: usize) -> Span {
    let s = u32::try_from(start).unwrap_or(u32::MAX);
    let e = u32::try_from(end).unwrap_or(u32::MAX);
    Span::new(s, e)
}

fn is_hex(c: u8) -> bool {
    c.is_ascii_hexdigit()
}

fn at(b: &[u8], i: usize) -> u8 {
    b.get(i).copied().unwrap_or(0)
}

/// Number of consecutive bytes from `i` satisfying `f`.
fn run(b: &[u8], i: usize, f: impl Fn(u8) -> bool) -> usize {
    b.get(i..).map_or(0, |s| s.iter().take_while(|&&c| f(c)).count())
}

/// The candidate token classes, in scanner priority order.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Rule {
    Keyword,
    Punct1,
    Punct2,
    Aid,
    Mac,
    Num,
    Hid,
    Hid6,
    BadMac,
    Constant,
    Ident,
    Escaped,
}

/// What a keyword spelling or a named constant stands for.
#[derive(Clone, Copy, Debug)]
enum Word {
    /// A keyword.
    Kw(Kw),
    /// A named constant's value.
    Const(u32),
}

/// Slots of [`WordTable`] (a power of two, well above the ~190 words).
const WORD_SLOTS: usize = 512;

/// Every keyword spelling and named constant (all but `&&` and `||`) in
/// one open-addressing hash table, built once per process.
///
/// Every such spelling matches `[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?`,
/// so one that a token starts with is never longer than the identifier
/// match at the same place, which the identifier rule always offers; it
/// can only win (keywords rank before identifiers, constants too) when it
/// is exactly as long, that is when the identifier's text *is* the
/// spelling. So the scanner's "longest keyword or constant prefix" is one
/// exact lookup of the identifier's text (see `next_token_with`; the tests
/// check both ways agree).
struct WordTable {
    slots: Vec<Option<(&'static [u8], Word)>>,
    /// Length of the longest spelling (longer texts are not looked up).
    max_len: usize,
}

/// FNV-1a over the bytes of a word.
fn word_hash(w: &[u8]) -> usize {
    let h = w.iter().fold(0x811c_9dc5u32, |h, &c| (h ^ u32::from(c)).wrapping_mul(0x0100_0193));
    h as usize
}

impl WordTable {
    fn new() -> WordTable {
        let mut slots: Vec<Option<(&'static [u8], Word)>> = vec![None; WORD_SLOTS];
        let words = KEYWORDS
            .iter()
            .map(|&(s, k)| (s, Word::Kw(k)))
            .chain(NAMED_CONSTANTS.iter().map(|&(s, v)| (s, Word::Const(v))));
        let mut max_len = 0;
        for (s, w) in words {
            let s = s.as_bytes();
            if s == b"&&" || s == b"||" {
                continue;
            }
            max_len = max_len.max(s.len());
            let mut h = word_hash(s);
            // Linear probing; the first spelling of a word would win (no
            // word is listed twice).
            while let Some(slot) = slots.get_mut(h % WORD_SLOTS) {
                match slot {
                    None => {
                        *slot = Some((s, w));
                        break;
                    }
                    Some((t, _)) if *t == s => break,
                    Some(_) => h = h.wrapping_add(1),
                }
            }
        }
        WordTable { slots, max_len }
    }

    /// The keyword or constant spelled exactly `w`.
    fn get(&self, w: &[u8]) -> Option<Word> {
        if w.len() > self.max_len {
            return None;
        }
        let mut h = word_hash(w);
        loop {
            match self.slots.get(h % WORD_SLOTS)? {
                None => return None,
                // (An inline comparison: the words are short.)
                Some((t, v)) if t.len() == w.len() && t.iter().zip(w).all(|(x, y)| x == y) => {
                    return Some(*v)
                }
                Some(_) => h = h.wrapping_add(1),
            }
        }
    }
}

fn word_table() -> &'static WordTable {
    static TABLE: OnceLock<WordTable> = OnceLock::new();
    TABLE.get_or_init(WordTable::new)
}

/// The longest spelling of `table` that `rest` starts with: its length and
/// value (the earliest entry among equally long ones). The scanner's
/// definition, used by the exhaustive lexer (tests).
fn longest_prefix<T: Copy>(table: &[(&str, T)], rest: &[u8]) -> Option<(usize, T)> {
    let mut found: Option<(usize, T)> = None;
    for &(word, v) in table {
        let w = word.as_bytes();
        if rest.starts_with(w) && found.is_none_or(|(l, _)| w.len() > l) {
            found = Some((w.len(), v));
        }
    }
    found
}

/// How far [`AddrRun`] looks: far enough to see the separators any MAC-48
/// (17 characters), IPv6 group part (`::` starts within 34 characters, the
/// sixth `:` of a full form within 30) or malformed MAC (its second `:`
/// within 6) needs.
const ADDR_WINDOW: usize = 40;

/// The separators in the run of address characters (`[0-9A-Fa-fxX:.-]`,
/// at most [`ADDR_WINDOW`] of them) at a position: cheap necessary
/// conditions for the address rules, which are costly to try (the
/// patterns backtrack), so that a token like `20` or `tcp` does not try
/// them at all.
#[derive(Clone, Copy, Debug)]
struct AddrRun {
    /// Hex digits at the start.
    hex: usize,
    /// `:` count.
    colons: usize,
    /// `-` count.
    dashes: usize,
    /// `.` count.
    dots: usize,
    /// Whether `::` occurs.
    dcolon: bool,
}

impl AddrRun {
    /// No pruning: every address rule is tried (the exhaustive lexer).
    const ANY: AddrRun =
        AddrRun { hex: usize::MAX, colons: usize::MAX, dashes: usize::MAX, dots: usize::MAX, dcolon: true };

    /// No address rule can match.
    const NONE: AddrRun = AddrRun { hex: 0, colons: 0, dashes: 0, dots: 0, dcolon: false };

    fn at(b: &[u8], i: usize) -> AddrRun {
        let mut r = AddrRun { hex: 0, colons: 0, dashes: 0, dots: 0, dcolon: false };
        let window = b.get(i..(i + ADDR_WINDOW).min(b.len())).unwrap_or_default();
        r.hex = window.iter().take_while(|&&c| is_hex(c)).count();
        let mut prev = 0u8;
        for &c in window.get(r.hex..).unwrap_or_default() {
            match c {
                b':' => {
                    r.colons += 1;
                    r.dcolon |= prev == b':';
                }
                b'-' => r.dashes += 1,
                b'.' => r.dots += 1,
                b'x' | b'X' => {}
                _ if is_hex(c) => {}
                _ => break,
            }
            prev = c;
        }
        r
    }

    /// A MAC-48 is 12 hex digits, 1-2 hex digits and 5 of one separator,
    /// or 4 hex digits and 2 `.` (`xxxx.xxxx.xxxx`).
    fn may_be_mac(&self) -> bool {
        self.hex >= 12
            || (self.hex <= 2 && (self.colons >= 5 || self.dashes >= 5 || self.dots >= 5))
            || (self.hex == 4 && self.dots >= 2)
    }

    /// An IPv6 address has `::`, or 7 groups (6 before an IPv4 part).
    fn may_be_v6(&self) -> bool {
        self.dcolon || self.colons >= 6
    }

    /// `{B}:+({B}:+)+` has two `:`.
    fn may_be_bad_mac(&self) -> bool {
        self.colons >= 2
    }

    /// Whether a MAC-48, IPv6 or malformed MAC rule may match.
    fn may_be_address(&self) -> bool {
        self.may_be_mac() || self.may_be_v6() || self.may_be_bad_mac()
    }
}

/// Lexes the token starting at byte `i` (not whitespace): its length and
/// value. `EXHAUSTIVE` tries every rule at every position the
/// way the scanner is specified (the longest keyword and constant prefix
/// by a scan of the tables, no address pre-checks): the reference the
/// tests compare the fast path with.
fn next_token_with<const EXHAUSTIVE: bool>(source: &str, i: usize) -> Result<(usize, Tok), Error> {
    let b = source.as_bytes();
    // (length, rule): the longest wins, ties go to the earliest rule.
    let mut best: Option<(usize, Rule)> = None;
    let mut consider = |len: usize, rule: Rule| {
        if len == 0 {
            return;
        }
        match best {
            Some((l, r)) if l > len || (l == len && r <= rule) => {}
            _ => best = Some((len, rule)),
        }
    };
    let rest = b.get(i..).unwrap_or_default();
    let c = at(b, i);
    if !EXHAUSTIVE {
        // The commonest tokens no other rule can match longer or first:
        // one-character punctuation that starts no two-character token or
        // keyword, and dotted decimal addresses.
        if lone_punct(c) {
            if let Some(tok) = punct1(c) {
                return Ok((1, tok));
            }
        }
        if let Some(len) = dotted_decimal(b, i) {
            return Ok((len, Tok::Hid(source.get(i..i + len).unwrap_or("").to_string())));
        }
    }
    let two = b.get(i..i + 2).unwrap_or(&[]);
    let ident = match_ident(b, i);
    // The address rules (MAC-48, IPv6, malformed MAC) start with ':' or a
    // hex digit; with a hex digit, they need 12 hex digits or a separator
    // right after the first run of hex digits.
    let shape = if EXHAUSTIVE {
        AddrRun::ANY
    } else if c == b':'
        || (is_hex(c) && {
            let h = run(b, i, is_hex);
            h >= 12 || matches!(at(b, i + h), b':' | b'.' | b'-')
        })
    {
        AddrRun::at(b, i)
    } else {
        AddrRun::NONE
    };
    // A word (letters) or a number (digits) with no address rule in sight
    // (the common case): only the identifier, keyword, constant and
    // number rules can match, the number only as long as the identifier.
    let word_or_number = ident > 0 && !shape.may_be_address() && !(c.is_ascii_digit() && match_hid(b, i) > 0);
    if !EXHAUSTIVE && word_or_number {
        let text = source.get(i..i + ident).unwrap_or("");
        let tok = if match_num(b, i) == ident {
            Tok::Num(parse_number(text, span(i, i + ident))?)
        } else {
            match word_table().get(text.as_bytes()) {
                Some(Word::Kw(k)) => Tok::Kw(k),
                Some(Word::Const(v)) => Tok::Num(v),
                None => Tok::Id(text.to_string()),
            }
        };
        return Ok((ident, tok));
    }
    let (kw, constant) = if EXHAUSTIVE {
        (longest_prefix(KEYWORDS, rest), longest_prefix(NAMED_CONSTANTS, rest))
    } else if c.is_ascii_alphabetic() {
        // Every spelling but `&&` and `||` starts with a letter.
        match word_table().get(rest.get(..ident).unwrap_or_default()) {
            Some(Word::Kw(k)) => (Some((ident, k)), None),
            Some(Word::Const(v)) => (None, Some((ident, v))),
            None => (None, None),
        }
    } else {
        match two {
            b"&&" => (Some((2, Kw::And)), None),
            b"||" => (Some((2, Kw::Or)), None),
            _ => (None, None),
        }
    };
    if let Some((l, _)) = kw {
        consider(l, Rule::Keyword);
    }
    if punct1(c).is_some() {
        consider(1, Rule::Punct1);
    }
    if matches!(two, b">=" | b"<=" | b"!=" | b"==" | b"<<" | b">>") {
        consider(2, Rule::Punct2);
    }
    if c == b'$' {
        let h = run(b, i + 1, is_hex).min(2);
        if h > 0 {
            consider(1 + h, Rule::Aid);
        }
    }
    // The address rules need a hex digit or ':' first.
    if EXHAUSTIVE || is_hex(c) || c == b':' {
        if shape.may_be_mac() {
            consider(match_mac(b, i), Rule::Mac);
        }
        consider(match_num(b, i), Rule::Num);
        consider(match_hid(b, i), Rule::Hid);
        if shape.may_be_v6() {
            consider(match_v6(b, i, &shape), Rule::Hid6);
        }
        if shape.may_be_bad_mac() {
            consider(match_bad_mac(b, i), Rule::BadMac);
        }
    }
    if let Some((l, _)) = constant {
        consider(l, Rule::Constant);
    }
    consider(ident, Rule::Ident);
    if c == b'\\' {
        let n = run(b, i + 1, |c| !matches!(c, b' ' | b'!' | b'(' | b')' | b'\n' | b'\t'));
        if n > 0 {
            consider(1 + n, Rule::Escaped);
        }
    }
    let Some((len, rule)) = best else {
        // Not a token: report the whole (possibly multi-byte) character.
        let ch_len = source.get(i..).and_then(|s| s.chars().next()).map_or(1, char::len_utf8);
        let shown = source.get(i..i + ch_len).unwrap_or("?");
        let what = if c == b'\\' {
            "syntax error: '\\' must be followed by a name".to_string()
        } else {
            format!("syntax error: unexpected character '{}'", shown.escape_debug())
        };
        return Err(Error::new(what, span(i, i + ch_len)));
    };
    // Every rule but `Escaped` matches ASCII only, so `text` is a valid
    // slice; `Escaped` runs until an ASCII delimiter or the end.
    let text = source.get(i..i + len).unwrap_or("");
    let sp = span(i, i + len);
    let tok = match rule {
        Rule::Keyword => Tok::Kw(kw.map_or(Kw::And, |(_, k)| k)),
        // (Considered only where `punct1` gives a token.)
        Rule::Punct1 => punct1(c).unwrap_or(Tok::Kw(Kw::Not)),
        Rule::Punct2 => Tok::Punct(match two {
            b">=" => Punct::Ge,
            b"<=" => Punct::Le,
            b"!=" => Punct::Ne,
            b"==" => Punct::Eq,
            b"<<" => Punct::Shl,
            _ => Punct::Shr,
        }),
        Rule::Aid => Tok::Aid((hex_value(text.get(1..).unwrap_or("").as_bytes()) & 0xff) as u8),
        Rule::Mac => Tok::Eid(parse_mac(text.as_bytes())),
        Rule::Num => Tok::Num(parse_number(text, sp)?),
        Rule::Hid => Tok::Hid(text.to_string()),
        Rule::Hid6 => match text.parse::<std::net::Ipv6Addr>() {
            Ok(a) => Tok::Hid6(text.to_string(), a.octets()),
            Err(_) => return Err(Error::new(format!("invalid IPv6 address {text}"), sp)),
        },
        Rule::BadMac => {
            return Err(Error::new(format!("invalid Ethernet address {text}"), sp));
        }
        Rule::Constant => Tok::Num(constant.map_or(0, |(_, v)| v)),
        Rule::Ident => Tok::Id(text.to_string()),
        Rule::Escaped => Tok::Id(source.get(i + 1..i + len).unwrap_or("").to_string()),
    };
    Ok((len, tok))
}

/// The token of one-character punctuation `c` (`!` is `not`), if it is
/// one.
fn punct1(c: u8) -> Option<Tok> {
    Some(Tok::Punct(match c {
        b'+' => Punct::Plus,
        b'-' => Punct::Minus,
        b'*' => Punct::Star,
        b'/' => Punct::Slash,
        b'%' => Punct::Percent,
        b':' => Punct::Colon,
        b'[' => Punct::LBracket,
        b']' => Punct::RBracket,
        b'<' => Punct::Lt,
        b'>' => Punct::Gt,
        b'(' => Punct::LParen,
        b')' => Punct::RParen,
        b'&' => Punct::Amp,
        b'|' => Punct::Pipe,
        b'^' => Punct::Caret,
        b'=' => Punct::Eq,
        b'!' => return Some(Tok::Kw(Kw::Not)),
        _ => return None,
    }))
}

/// Whether punctuation `c` can only be a one-character token: it starts
/// none of `>=`, `<=`, `!=`, `==`, `<<`, `>>`, `&&`, `||`, nor an address
/// (`:`).
fn lone_punct(c: u8) -> bool {
    matches!(c, b'(' | b')' | b'[' | b']' | b'/' | b'+' | b'-' | b'*' | b'%' | b'^')
}

/// The length of a dotted decimal address at `i` (two to four runs of
/// decimal digits joined by single dots, `10.0.0.0`) when no rule can
/// match it longer or match it as long with a higher priority than the
/// host-address rule: the character after it continues no identifier,
/// number or address (`[A-Za-z0-9._:-]`), and it is not the MAC-48 form
/// `dddd.dddd.dddd`. `None`: leave it to the full scanner.
fn dotted_decimal(b: &[u8], i: usize) -> Option<usize> {
    let (mut pos, mut groups, mut all_four) = (i, 0, true);
    loop {
        let n = run(b, pos, |c| c.is_ascii_digit());
        if n == 0 {
            return None;
        }
        groups += 1;
        all_four &= n == 4;
        pos += n;
        if at(b, pos) != b'.' || groups == 4 {
            break;
        }
        pos += 1;
    }
    let next = at(b, pos);
    let continues = next.is_ascii_alphanumeric() || matches!(next, b'.' | b'_' | b':' | b'-');
    (groups >= 2 && !continues && !(groups == 3 && all_four)).then_some(pos - i)
}

/// Value of a run of hex digits (at most 8 digits are ever passed).
fn hex_value(digits: &[u8]) -> u32 {
    digits.iter().fold(0u32, |acc, &d| {
        let v = match d {
            b'0'..=b'9' => d - b'0',
            b'a'..=b'f' => d - b'a' + 10,
            b'A'..=b'F' => d - b'A' + 10,
            _ => 0,
        };
        acc.wrapping_shl(4) | u32::from(v)
    })
}

/// `[0-9]+|0[xX][0-9A-Fa-f]+`: length of the longest match at `i`.
fn match_num(b: &[u8], i: usize) -> usize {
    let d = run(b, i, |c| c.is_ascii_digit());
    if at(b, i) == b'0' && matches!(at(b, i + 1), b'x' | b'X') {
        let h = run(b, i + 2, is_hex);
        if h > 0 {
            return (2 + h).max(d);
        }
    }
    d
}

/// Converts a number token, with libpcap's checks: digit by digit, an
/// invalid digit is reported before an overflow that happens later.
fn parse_number(text: &str, sp: Span) -> Result<u32, Error> {
    let bytes = text.as_bytes();
    let (digits, radix, kind) = if bytes.len() >= 2 && bytes[0] == b'0' && matches!(bytes[1], b'x' | b'X') {
        (&bytes[2..], 16u32, "hexadecimal")
    } else if bytes.first() == Some(&b'0') {
        (&bytes[1..], 8u32, "octal")
    } else {
        (bytes, 10u32, "decimal")
    };
    let mut n: u32 = 0;
    for &d in digits {
        let v = match (d as char).to_digit(radix) {
            Some(v) => v,
            None => {
                return Err(Error::new(format!("number {text} contains non-octal digit"), sp));
            }
        };
        n = match n.checked_mul(radix).and_then(|m| m.checked_add(v)) {
            Some(m) => m,
            None => return Err(Error::new(format!("{kind} number {text} overflows 32 bits"), sp)),
        };
    }
    Ok(n)
}

/// `{N}.{N}[.{N}[.{N}]]`: the longest dotted match at `i`.
fn match_hid(b: &[u8], i: usize) -> usize {
    let mut best = 0;
    // Each N is deterministic when followed by '.', except that the last
    // one may be shorter: `match_num` gives the longest, which is what a
    // longest-match scanner takes.
    let mut pos = i;
    for part in 0..4 {
        let n = match_num(b, pos);
        if n == 0 {
            break;
        }
        if part >= 1 {
            best = pos + n - i;
        }
        // An N followed by '.' must be the whole run before the dot; the
        // hex form `0x..` and the decimal form can differ in length.
        let next = pos + n;
        if at(b, next) != b'.' {
            // The decimal prefix of a hex number (`0` of `0x1`) cannot be
            // followed by '.', so no other split exists.
            break;
        }
        pos = next + 1;
    }
    best
}

/// `[A-Za-z0-9]([-_.A-Za-z0-9]*[.A-Za-z0-9])?`: longest match at `i`.
fn match_ident(b: &[u8], i: usize) -> usize {
    if !at(b, i).is_ascii_alphanumeric() {
        return 0;
    }
    let n = run(b, i + 1, |c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'));
    // Drop trailing '-' and '_' (the last character must be [.A-Za-z0-9]).
    let body = b.get(i + 1..i + 1 + n).unwrap_or(&[]);
    let keep = body.iter().rposition(|&c| c != b'-' && c != b'_').map_or(0, |p| p + 1);
    1 + keep
}

/// One element of an address pattern.
#[derive(Clone, Copy)]
enum Atom {
    /// A literal byte.
    Lit(u8),
    /// `::`
    DColon,
    /// 1 to `max` hex digits (`min` to `max`).
    Hex(usize, usize),
    /// A number `{N}` (decimal run or `0x` hex).
    N,
}

/// Longest end position (exclusive) at which `atoms` match starting at `i`.
fn match_atoms(b: &[u8], i: usize, atoms: &[Atom]) -> Option<usize> {
    let Some((first, rest)) = atoms.split_first() else {
        return Some(i);
    };
    match *first {
        Atom::Lit(c) => (at(b, i) == c).then(|| match_atoms(b, i + 1, rest)).flatten(),
        Atom::DColon => {
            (at(b, i) == b':' && at(b, i + 1) == b':').then(|| match_atoms(b, i + 2, rest)).flatten()
        }
        Atom::Hex(min, max) => {
            let h = run(b, i, is_hex).min(max);
            (min..=h).rev().filter_map(|l| match_atoms(b, i + l, rest)).max()
        }
        Atom::N => {
            let d = run(b, i, |c| c.is_ascii_digit());
            let h = if at(b, i) == b'0' && matches!(at(b, i + 1), b'x' | b'X') { run(b, i + 2, is_hex) } else { 0 };
            (1..=d).chain((1..=h).map(|l| 2 + l)).filter_map(|l| match_atoms(b, i + l, rest)).max()
        }
    }
}

/// One of libpcap's IPv6 patterns, with what it needs of the text.
struct V6Pattern {
    atoms: Vec<Atom>,
    /// The number of `:` in every match (the IPv4 part has none).
    colons: usize,
    /// Whether a match starts with `:` (`::...`), rather than a hex digit.
    lead_colon: bool,
}

/// The 59 IPv6 patterns of libpcap's scanner, as atom lists.
fn v6_patterns() -> &'static [V6Pattern] {
    static PATTERNS: OnceLock<Vec<V6Pattern>> = OnceLock::new();
    PATTERNS.get_or_init(|| {
        const W: Atom = Atom::Hex(1, 4);
        let ipv4 = [Atom::N, Atom::Lit(b'.'), Atom::N, Atom::Lit(b'.'), Atom::N, Atom::Lit(b'.'), Atom::N];
        let mut all = Vec::new();
        // Eight groups, no '::'.
        let mut full = vec![W];
        for _ in 0..7 {
            full.extend([Atom::Lit(b':'), W]);
        }
        all.push(full);
        // Six groups then an IPv4 address.
        let mut six4 = vec![W];
        for _ in 0..5 {
            six4.extend([Atom::Lit(b':'), W]);
        }
        six4.push(Atom::Lit(b':'));
        six4.extend(ipv4);
        all.push(six4);
        // n groups with '::' after the k-th, optionally then an IPv4 address.
        for with_v4 in [false, true] {
            let max_n = if with_v4 { 5 } else { 7 };
            for n in 0..=max_n {
                for k in 0..=n {
                    let mut p = Vec::new();
                    for g in 0..n {
                        if g == k {
                            p.push(Atom::DColon);
                        } else if g > 0 {
                            p.push(Atom::Lit(b':'));
                        }
                        p.push(W);
                    }
                    if k == n {
                        p.push(Atom::DColon);
                    }
                    if with_v4 {
                        if k != n {
                            p.push(Atom::Lit(b':'));
                        }
                        p.extend(ipv4);
                    }
                    all.push(p);
                }
            }
        }
        all.into_iter()
            .map(|atoms: Vec<Atom>| {
                let colons = atoms
                    .iter()
                    .map(|a| match a {
                        Atom::Lit(b':') => 1,
                        Atom::DColon => 2,
                        _ => 0,
                    })
                    .sum();
                let lead_colon = matches!(atoms.first(), Some(Atom::DColon | Atom::Lit(b':')));
                V6Pattern { atoms, colons, lead_colon }
            })
            .collect()
    })
}

/// Longest IPv6-pattern match at `i` (0: none), trying only the patterns
/// whose `:` count and first character fit `shape`.
fn match_v6(b: &[u8], i: usize, shape: &AddrRun) -> usize {
    // Every pattern contains ':' within its first five characters.
    let c = at(b, i);
    if !(is_hex(c) || c == b':') {
        return 0;
    }
    let window = b.get(i..(i + 6).min(b.len())).unwrap_or(&[]);
    if !window.contains(&b':') {
        return 0;
    }
    let exhaustive = shape.colons == usize::MAX;
    v6_patterns()
        .iter()
        .filter(|p| exhaustive || (p.colons <= shape.colons && p.lead_colon == (c == b':')))
        .filter_map(|p| match_atoms(b, i, &p.atoms))
        .max()
        .map_or(0, |e| e - i)
}

/// Longest MAC-48 match at `i` (0: none).
fn match_mac(b: &[u8], i: usize) -> usize {
    const B: Atom = Atom::Hex(1, 2);
    const B2: Atom = Atom::Hex(4, 4);
    if !is_hex(at(b, i)) {
        return 0;
    }
    /// Six bytes separated by `sep` (a constant pattern, no allocation).
    const fn six(sep: u8) -> [Atom; 11] {
        let s = Atom::Lit(sep);
        [B, s, B, s, B, s, B, s, B, s, B]
    }
    const SIX: [[Atom; 11]; 3] = [six(b':'), six(b'-'), six(b'.')];
    const DOTTED: [Atom; 5] = [B2, Atom::Lit(b'.'), B2, Atom::Lit(b'.'), B2];
    const PLAIN: [Atom; 3] = [B2, B2, B2];
    let mut best = 0;
    for p in SIX.iter().map(|p| &p[..]).chain([&DOTTED[..], &PLAIN[..]]) {
        if let Some(e) = match_atoms(b, i, p) {
            best = best.max(e - i);
        }
    }
    best
}

/// `{B}:+({B}:+)+`: a malformed MAC-like run (longest match at `i`).
fn match_bad_mac(b: &[u8], i: usize) -> usize {
    let mut pos = i;
    let mut groups = 0;
    let mut end = 0;
    loop {
        let h = run(b, pos, is_hex);
        if h == 0 || h > 2 || at(b, pos + h) != b':' {
            break;
        }
        pos += h;
        pos += run(b, pos, |c| c == b':');
        groups += 1;
        if groups >= 2 {
            end = pos - i;
        }
    }
    end
}

/// Converts a matched MAC-48 lexeme: 1-2 hex digits per byte, separators
/// skipped (as libpcap's `pcap_ether_aton`).
fn parse_mac(text: &[u8]) -> [u8; 6] {
    let mut out = [0u8; 6];
    let mut n = 0;
    let mut digits = text.iter().copied().peekable();
    while let Some(c) = digits.next() {
        if matches!(c, b':' | b'-' | b'.') {
            continue;
        }
        let mut d = hex_value(&[c]);
        if let Some(&next) = digits.peek() {
            if is_hex(next) {
                d = (d << 4) | hex_value(&[next]);
                digits.next();
            }
        }
        if let Some(slot) = out.get_mut(n) {
            *slot = (d & 0xff) as u8;
        }
        n += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<Tok> {
        tokenize(s).unwrap_or_else(|e| panic!("{s:?}: {e:?}")).into_iter().map(|t| t.tok).collect()
    }

    fn id(s: &str) -> Tok {
        Tok::Id(s.to_string())
    }

    fn err(s: &str) -> Error {
        match tokenize(s) {
            Ok(t) => panic!("{s:?} lexed as {t:?}"),
            Err(e) => e,
        }
    }

    #[test]
    fn keywords_and_aliases() {
        assert_eq!(toks("tcp"), vec![Tok::Kw(Kw::Tcp)]);
        for w in ["ether", "link", "ppp", "slip", "fddi", "tr", "wlan"] {
            assert_eq!(toks(w), vec![Tok::Kw(Kw::Link)], "{w}");
        }
        assert_eq!(toks("es-is is-is"), vec![Tok::Kw(Kw::Esis), Tok::Kw(Kw::Isis)]);
        assert_eq!(toks("len length"), vec![Tok::Kw(Kw::Len), Tok::Kw(Kw::Len)]);
        assert_eq!(toks("on ifname"), vec![Tok::Kw(Kw::PfIfname); 2]);
        assert_eq!(toks("lsu lssu"), vec![Tok::Kw(Kw::Lssu); 2]);
        assert_eq!(toks("dir direction"), vec![Tok::Kw(Kw::Dir); 2]);
        assert_eq!(toks("addr3 address3"), vec![Tok::Kw(Kw::Addr3); 2]);
        assert_eq!(
            toks("and && or || not !"),
            vec![
                Tok::Kw(Kw::And),
                Tok::Kw(Kw::And),
                Tok::Kw(Kw::Or),
                Tok::Kw(Kw::Or),
                Tok::Kw(Kw::Not),
                Tok::Kw(Kw::Not)
            ]
        );
    }

    #[test]
    fn keywords_are_case_sensitive_and_need_whole_words() {
        assert_eq!(toks("TCP"), vec![id("TCP")]);
        assert_eq!(toks("tcpx"), vec![id("tcpx")]);
        assert_eq!(toks("ip6"), vec![Tok::Kw(Kw::Ip6)]);
        assert_eq!(toks("ip6x"), vec![id("ip6x")]);
        assert_eq!(toks("portrange"), vec![Tok::Kw(Kw::Portrange)]);
    }

    #[test]
    fn named_constants() {
        assert_eq!(toks("tcpflags tcp-syn tcp-cwr"), vec![Tok::Num(13), Tok::Num(2), Tok::Num(0x80)]);
        assert_eq!(toks("icmp-echo icmp-echoreply icmptype"), vec![Tok::Num(8), Tok::Num(0), Tok::Num(0)]);
        assert_eq!(toks("icmp6-echo icmp6-multicastrouterterm"), vec![Tok::Num(128), Tok::Num(153)]);
        // A longer identifier wins over a constant.
        assert_eq!(toks("tcp-synx"), vec![id("tcp-synx")]);
    }

    #[test]
    fn numbers() {
        assert_eq!(
            toks("80 0x50 0X50 0120 0"),
            vec![Tok::Num(80), Tok::Num(0x50), Tok::Num(0x50), Tok::Num(0o120), Tok::Num(0)]
        );
        assert_eq!(toks("4294967295 0xffffffff 0037777777777"), vec![Tok::Num(u32::MAX); 3]);
        assert_eq!(err("08").message, "number 08 contains non-octal digit");
        assert_eq!(err("0037777777778").message, "number 0037777777778 contains non-octal digit");
        assert_eq!(err("4294967296").message, "decimal number 4294967296 overflows 32 bits");
        assert_eq!(err("0X100000000").message, "hexadecimal number 0X100000000 overflows 32 bits");
        assert_eq!(err("0040000000000").message, "octal number 0040000000000 overflows 32 bits");
        assert_eq!(err("003777777777779").message, "octal number 003777777777779 overflows 32 bits");
        assert_eq!(err("port 08").span, Span::new(5, 7));
    }

    #[test]
    fn dashes_make_names() {
        assert_eq!(toks("80-90"), vec![id("80-90")]);
        assert_eq!(toks("len-14"), vec![id("len-14")]);
        assert_eq!(toks("len - 14"), vec![Tok::Kw(Kw::Len), Tok::Punct(Punct::Minus), Tok::Num(14)]);
        assert_eq!(toks("ftp-data"), vec![id("ftp-data")]);
        assert_eq!(toks("foo-"), vec![id("foo"), Tok::Punct(Punct::Minus)]);
        assert_eq!(toks("0x"), vec![id("0x")]);
        assert_eq!(toks("host.invalid."), vec![id("host.invalid.")]);
    }

    #[test]
    fn ipv4() {
        assert_eq!(
            toks("10.1 10.1.2 10.1.2.3"),
            vec![Tok::Hid("10.1".into()), Tok::Hid("10.1.2".into()), Tok::Hid("10.1.2.3".into())]
        );
        assert_eq!(
            toks("10.1.2.3/8"),
            vec![Tok::Hid("10.1.2.3".into()), Tok::Punct(Punct::Slash), Tok::Num(8)]
        );
        assert_eq!(toks("1.2.3.4.5"), vec![id("1.2.3.4.5")]);
        assert_eq!(toks("0x0a.0x0b"), vec![Tok::Hid("0x0a.0x0b".into())]);
        assert_eq!(toks("10.1a"), vec![id("10.1a")]);
    }

    #[test]
    fn ipv6() {
        let v6 = |s: &str| match toks(s).as_slice() {
            [Tok::Hid6(t, a)] => {
                assert_eq!(t, s);
                *a
            }
            other => panic!("{s}: {other:?}"),
        };
        assert_eq!(v6("::1")[15], 1);
        assert_eq!(v6("fe80::1")[..2], [0xfe, 0x80]);
        assert_eq!(v6("::ffff:1.2.3.4")[12..], [1, 2, 3, 4]);
        assert_eq!(v6("1:2:3:4:5:6:7:8")[14..], [0, 8]);
        assert_eq!(v6("1:2:3:4:5:6::7")[12..], [0, 0, 0, 7]);
        assert_eq!(v6("::")[..], [0; 16]);
        assert_eq!(v6("1:2:3:4:5:6:1.2.3.4")[12..], [1, 2, 3, 4]);
        // A fifth hex digit starts a new token.
        assert_eq!(
            toks("::12345"),
            vec![
                Tok::Hid6("::1234".into(), {
                    let mut a = [0; 16];
                    a[14] = 0x12;
                    a[15] = 0x34;
                    a
                }),
                Tok::Num(5)
            ]
        );
        assert_eq!(err("::01.2.3.4").message, "invalid IPv6 address ::01.2.3.4");
        assert_eq!(err("fe80::10.20.30.256").message, "invalid IPv6 address fe80::10.20.30.256");
        assert!(err("1:2:3:4:5:6:7:8:9").message.starts_with("invalid Ethernet address"));
        assert_eq!(err("1::2::3").message, "invalid Ethernet address 1::2::");
    }

    #[test]
    fn mac() {
        let m = [0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff];
        for s in
            ["aa:bb:cc:dd:ee:ff", "aa-bb-cc-dd-ee-ff", "aa.bb.cc.dd.ee.ff", "aabb.ccdd.eeff", "aabbccddeeff"]
        {
            assert_eq!(toks(s), vec![Tok::Eid(m)], "{s}");
        }
        assert_eq!(toks("a:b:c:d:e:f"), vec![Tok::Eid([0xa, 0xb, 0xc, 0xd, 0xe, 0xf])]);
        // The MAC-versus-number quirk: 12 hex digits are a MAC address.
        assert_eq!(toks("012345670123"), vec![Tok::Eid([0x01, 0x23, 0x45, 0x67, 0x01, 0x23])]);
        assert_eq!(err("0123456701234").message, "octal number 0123456701234 overflows 32 bits");
        assert_eq!(toks("1.2.3.4.5.6"), vec![Tok::Eid([1, 2, 3, 4, 5, 6])]);
        let e = err("ab:cd:ef:0g:00:00");
        assert_eq!(e.message, "invalid Ethernet address ab:cd:ef:");
        assert_eq!(e.span, Span::new(0, 9));
    }

    #[test]
    fn mac8() {
        assert_eq!(toks("$2b $0"), vec![Tok::Aid(0x2b), Tok::Aid(0)]);
        assert_eq!(toks("$2bc"), vec![Tok::Aid(0x2b), id("c")]);
        assert!(tokenize("$").is_err());
        assert!(tokenize("$x").is_err());
    }

    #[test]
    fn escapes() {
        assert_eq!(toks("\\tcp"), vec![id("tcp")]);
        assert_eq!(toks("\\tcp)"), vec![id("tcp"), Tok::Punct(Punct::RParen)]);
        assert_eq!(toks("\\\\"), vec![id("\\")]);
        assert_eq!(toks("\\a&&b c"), vec![id("a&&b"), id("c")]);
        assert_eq!(err("\\").span, Span::new(0, 1));
    }

    #[test]
    fn operators() {
        use Punct::*;
        let p = |v: &[Punct]| v.iter().map(|&x| Tok::Punct(x)).collect::<Vec<_>>();
        assert_eq!(
            toks("+-*/%:[]<>()&|^="),
            p(&[
                Plus, Minus, Star, Slash, Percent, Colon, LBracket, RBracket, Lt, Gt, LParen, RParen, Amp,
                Pipe, Caret, Eq
            ])
        );
        assert_eq!(toks(">= <= != == << >>"), p(&[Ge, Le, Ne, Eq, Shl, Shr]));
        assert_eq!(toks("a!=b"), vec![id("a"), Tok::Punct(Ne), id("b")]);
    }

    #[test]
    fn whitespace_and_spans() {
        let t = tokenize(" tcp\r\n\tport\t80 ").unwrap_or_default();
        let spans: Vec<Span> = t.iter().map(|t| t.span).collect();
        assert_eq!(spans, vec![Span::new(1, 4), Span::new(7, 11), Span::new(12, 14)]);
    }

    /// Every keyword and constant spelling but `&&` and `||` is an
    /// identifier ending in a letter or digit, made of `[-a-z0-9]` (what
    /// the exact-lookup shortcut relies on), and the table finds it.
    #[test]
    fn word_table_holds_every_spelling() {
        let words = KEYWORDS
            .iter()
            .map(|&(s, k)| (s, Some(k), None))
            .chain(NAMED_CONSTANTS.iter().map(|&(s, v)| (s, None, Some(v))));
        let mut n = 0;
        for (s, k, v) in words {
            if s == "&&" || s == "||" {
                continue;
            }
            n += 1;
            assert_eq!(match_ident(s.as_bytes(), 0), s.len(), "{s}");
            assert!(s.bytes().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-'), "{s}");
            match word_table().get(s.as_bytes()) {
                Some(Word::Kw(x)) => assert_eq!(Some(x), k, "{s}"),
                Some(Word::Const(x)) => assert_eq!(Some(x), v, "{s}"),
                None => panic!("{s} missing"),
            }
        }
        let filled = word_table().slots.iter().filter(|s| s.is_some()).count();
        assert_eq!(filled, n, "a spelling is listed twice");
        assert!(word_table().get(b"tcpx").is_none());
        assert!(word_table().get(b"").is_none());
    }

    /// The fast lexer (exact word lookups, address pre-checks) and the
    /// exhaustive one give the same tokens, spans and errors on random
    /// texts built from spellings, hex and digit runs and separators.
    #[test]
    fn fast_lexer_agrees_with_exhaustive_one() {
        let mut frags: Vec<&str> =
            KEYWORDS.iter().map(|e| e.0).chain(NAMED_CONSTANTS.iter().map(|e| e.0)).collect();
        let pieces = "0 1 12 123 1234 12345 255 256 0x 0X1f 08 a ab abc abcd F fe80 g z : :: . - _ / $ \\ \
                      ( ) [ ] ! = < > & | é 4294967296 1.2.3.4 aa:bb:cc:dd:ee:ff 1:2:3:4:5:6:7 \
                      aabb.ccdd.eeff aabbccddeeff a-b-c-d-e-f 1.2.3.4.5.6 1.2.3.4.5 ::ffff:1.2.3.4 \
                      fe80::1 1:2:: 1111:2222:3333:4444:5555:6666:7777:: 192.168.2.0 10.0.0.0/8 \
                      1234.5678.9012 123.5678.9012 1234.5678 1.2 1.2.3 123456789012.1 0x1.2 % * + ^ >> << \
                      >= <= != == && ||";
        frags.extend(pieces.split_whitespace());
        frags.push(" ");
        let alphabets: [&[u8]; 4] =
            [b"0123456789abcdefABCDEFx:.-/ ", b"0123456789aAfFxX:.-$\\_g ()[]&|!<>=", b"01:.f", b"0f.-"];
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            usize::try_from(state % n as u64).unwrap_or(0)
        };
        for k in 0..60_000 {
            let mut text = String::new();
            if k % 2 == 0 {
                for _ in 0..next(9) {
                    text.push_str(frags[next(frags.len())]);
                }
            } else {
                let a = alphabets[next(alphabets.len())];
                for _ in 0..next(45) {
                    text.push(char::from(a[next(a.len())]));
                }
            }
            assert_eq!(tokenize_prefix_with::<false>(&text), tokenize_prefix_with::<true>(&text), "{text:?}");
        }
    }

    #[test]
    fn bad_characters() {
        let e = err("tcp @");
        assert_eq!(e.span, Span::new(4, 5));
        let e = err("host é");
        assert_eq!(e.span, Span::new(5, 7));
        assert!(err("_foo").message.contains("unexpected character"));
    }
}
