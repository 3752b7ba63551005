//! Lowering: AST → [`Pred`], per link type, reproducing libpcap 1.10.3's
//! unoptimized code generation (`gencode.c`): the same tests, in the same
//! order, with the same loads per test (one exception, which keeps every
//! outcome: see "Where the tree is smaller" below).
//!
//! Why the shape matters: an out-of-bounds load (or a division by zero)
//! aborts the whole filter, even under `not` or on the left of an `or`. Two
//! programs that compute the same boolean function on complete packets can
//! therefore disagree on truncated ones unless they perform the same loads in
//! the same order. Every generator below mirrors one libpcap generator:
//!
//! | libpcap                    | here                                   |
//! |----------------------------|----------------------------------------|
//! | `gen_and(b0, b1)`          | `b0.and(b1)` (`b0` evaluated first)    |
//! | `gen_or(b0, b1)`           | `b0.or(b1)`                            |
//! | `gen_not(b)`               | `b.not()`                              |
//! | a block (statements + jump)| one [`Test`](crate::Test) whose values hold all the loads |
//! | `gen_true` / `gen_false`   | [`Pred::True`] / [`Pred::False`]       |
//!
//! The lowering state (`Lowerer`) carries the link-layer description
//! (`link::LinkLayer`: the offsets libpcap's compiler state tracks) and is
//! threaded through the expression left to right, because encapsulation
//! primitives (`vlan`, `mpls`, `pppoes`: see `encap.rs`) change the
//! offsets for everything parsed after them, whatever the boolean
//! structure (across `or`, out of parentheses, under `not`), as libpcap.
//!
//! Files, by concern:
//! - `link.rs`: link-layer offsets, loads relative to a header, comparison
//!   helpers (`gen_cmp` family, `gen_bcmp`), link-type tests (`gen_linktype`);
//! - `host.rs`: `host`/`net` (IPv4, IPv6, MAC, names), `broadcast`, `multicast`;
//! - `port.rs`: `port` and `portrange`;
//! - `proto.rs`: `proto`, `ether proto`, protocol abbreviations (`tcp`, `ip6`);
//! - `arith.rs`: `arith relop arith`, packet accessors, `len`, `less`, `greater`;
//! - `encap.rs`: `vlan`, `mpls`, `pppoed`, `pppoes`, `llc`, the ISO/IS-IS
//!   primitives and DECnet hosts.;
//! - `tunnel.rs`: `geneve` and `vxlan` (the later primitives lowered per
//!   case of the tunnel's run-time offsets);
//! - `links.rs`: the other link types (PPP/HDLC, SLIP, Frame Relay, ARCnet,
//!   ATM, SS7 MTP2/MTP3, pflog, ...) and their primitives (`vpi`, `lane`,
//!   `fisu`, `sio`, `ifname`, `action`, `$XX` hosts, ...).
//!
//! # Deliberate differences from 1.10.3
//!
//! sift follows libpcap master (the future 1.11) where master *rejects*
//! something 1.10.3 accepts, or fixed a 1.10.3 code generation bug:
//!
//! - **value range checks** (master's `assert_maxval`): `proto N`,
//!   `ip proto N`, `ip6 proto N` and `protochain N` need N ≤ 255 ("protocol
//!   number 256 greater than maximum 255"); `byte IDX op N` needs N ≤ 255
//!   ("byte argument ..."); `link proto N` (`ether proto N`) on Ethernet and
//!   Linux cooked captures needs N ≤ 255 when N ≤ 1500 ("LLC DSAP ...") and
//!   N ≤ 65535 otherwise ("EtherType ..."), and N ≤ 65535 on DLT_LINUX_SLL2;
//!   `iso proto N` needs N ≤ 255 and `isis proto N` N ≤ 31. 1.10.3
//!   compiles these into tests that
//!   can never hold (or that compare a truncated value). The error's span
//!   is the offending value;
//! - **`byte IDX & V` and `byte IDX | V`** (libpcap commit 82724cc7, "Fix
//!   the | and & operators of the byte primitive"): 1.10.3 never loads the
//!   byte and tests whatever the accumulator holds; sift loads the byte as
//!   master does, so `&` is "bits intersect" (`(byte & V) != 0`) and `|` is
//!   `(byte | V) != 0`, and a packet too short for the byte is rejected;
//! - **DECnet addresses** are `AREA.NODE` only, as in master (TESTrun
//!   `reject_decnet_1`, `reject_inv_qual_decnet_net_*`): 1.10.3 also takes
//!   a plain number (`decnet host 1034`) and an IPv4 prefix or mask
//!   (`decnet net 1.2.3.0/24`); sift says "invalid DECnet address '1034'"
//!   and "'decnet' is not a valid qualifier for 'net'".
//!
//! # Where the tree is smaller than 1.10.3's program
//!
//! One generator departs from libpcap's shape while keeping its outcome
//! (accept, reject or abort) on every packet, truncated ones included:
//!
//! - **ports without a protocol** (`port 53`, `portrange 1-1023`, also
//!   under `ip`/`ip6`): libpcap repeats the whole port test for SCTP, TCP
//!   and UDP (`proto 132 and ports or proto 6 and ports or proto 17 and
//!   ports`); sift tests the protocol byte against the three, then the
//!   ports once. The three tests load the same byte, so they abort
//!   together, and at most one holds, after which the others fail without
//!   running anything: the optimizer's own rule for exclusive alternatives
//!   with the same rest (`opt::factor`), applied while lowering. The tree is
//!   a third of the size, which is most of what such filters cost to
//!   compile. `lowering_vs_libpcap` compares the outcomes with libpcap's
//!   unoptimized programs as for every other primitive.
//!
//! And where sift keeps 1.10.3's verdicts although master changed them
//! (master rejects nothing 1.10.3 accepts there):
//!
//! - **IS-IS PDU types**: `isis proto N`, `l1`, `l2`, `iih`, `lsp`, `snp`,
//!   `csnp`, `psnp` compare the whole PDU type byte, as 1.10.3; master
//!   masks it with 0x1f first ("Use the correct bit mask for IS-IS PDU
//!   type value"), so a PDU type byte with any of its 3 reserved high bits
//!   set matches in master only.

mod arith;
mod encap;
mod host;
mod link;
mod links;
mod port;
mod proto;
mod tunnel;
mod wlan;

use crate::linktype::LinkType;
use crate::pred::Pred;
use link::LinkLayer;
use std::cell::Cell;
use sift_syntax::ast::{AddrQual, DirQual, Expr, Filter, Id, Primitive, ProtoQual, Qual};
use sift_syntax::resolver::NameTables;
use sift_syntax::{Error, Span};

/// What lowering needs besides the expression.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LowerOptions {
    /// The link-layer header type of the packets.
    pub linktype: LinkType,
    /// The IPv4 netmask for `ip broadcast` (`None`: unknown, and
    /// `ip broadcast` is an error, as `PCAP_NETMASK_UNKNOWN` in libpcap;
    /// `Some(0xffffffff)` is that same sentinel value and means unknown too).
    /// `tcpdump -d` without an interface uses `Some(0)`.
    pub netmask: Option<u32>,
    /// The filter is for packets read from a savefile (`tcpdump -r`), not
    /// for a live capture or a dead handle (`tcpdump -d`, the default).
    /// libpcap then compiles a few primitives differently: on DLT_NULL and
    /// DLT_LOOP, `ip6` accepts the three BSD values of `AF_INET6` (30, 24,
    /// 28) instead of this platform's (10), and [`swapped`](Self::swapped)
    /// applies.
    pub savefile: bool,
    /// The savefile was written on a host whose byte order is the opposite
    /// of this one's (`pcap_is_swapped`; implies [`savefile`](Self::savefile)).
    /// DLT_NULL stores its address family in the writer's byte order;
    /// libpcap byte-swaps the value it compares with in that case, and so
    /// does sift. Default `false`.
    pub swapped: bool,
    /// Where host, network and Ethernet host names are looked up: `None`
    /// (the default) is the system (`getaddrinfo`, `/etc/networks`,
    /// `/etc/ethers`, as libpcap on Linux); tables make the result
    /// independent of the machine (tests: TESTrun's names). A `'static`
    /// borrow keeps the options `Copy`: build the tables once (a `static`,
    /// a `OnceLock`, or `Box::leak`).
    pub names: Option<&'static NameTables>,
    /// Lower a list of numeric ports joined by `or` with the same
    /// qualifiers (`tcp port 21 or tcp port 20`) as one, where it gives the
    /// same verdicts (compat.md row 34). Default `true`. The dynamic engine
    /// turns it off: it builds its own port sets from the ports lowered one
    /// by one, and so does the reference evaluator, whose tree stays
    /// libpcap's primitive by primitive.
    pub port_lists: bool,
}

impl Default for LowerOptions {
    fn default() -> Self {
        LowerOptions {
            linktype: LinkType::EN10MB,
            netmask: None,
            savefile: false,
            swapped: false,
            names: None,
            port_lists: true,
        }
    }
}

/// Can filters be lowered for this link type? (Link types that are not
/// supported make [`lower`] fail with "link-layer type ... is not supported".)
pub fn supports_linktype(lt: LinkType) -> bool {
    LinkLayer::for_linktype(lt).is_some()
}

/// Every link type [`lower`] supports, in libpcap's DLT table order.
pub fn supported_linktypes() -> Vec<LinkType> {
    LinkType::all().filter(|&lt| supports_linktype(lt)).collect()
}

/// Lowers a parsed filter to a predicate. The empty filter is [`Pred::True`].
///
/// Errors carry the span of the primitive (or arithmetic operation) that
/// libpcap would reject, with a message close to libpcap's. Primitives and
/// link types that sift does not support yet are errors of the form
/// `'vlan' is not supported yet by sift`.
pub fn lower(filter: &Filter, opts: &LowerOptions) -> Result<Pred, Error> {
    let Some(expr) = &filter.expr else {
        return Ok(Pred::True);
    };
    let whole = Span::new(0, u32::try_from(filter.source.len()).unwrap_or(u32::MAX));
    let Some(link) = LinkLayer::for_linktype(opts.linktype) else {
        return Err(Error::new(
            format!("link-layer type {} is not supported yet by sift", opts.linktype),
            whole,
        ));
    };
    let new_lowerer = |var_case| Lowerer {
        opts,
        link,
        span: whole,
        source: &filter.source,
        depth: 0,
        var_hdr_used: Cell::new(false),
        var_pl_used: Cell::new(false),
        leaked_regs: Cell::new(0),
        var_case,
        tunnels: Vec::new(),
        tunnel_used: Cell::new(false),
        tunnel_state: Vec::new(),
        exits: (Vec::new(), Vec::new()),
    };
    let mut cx = new_lowerer(wlan::VarCase::default());
    let body = cx.expr(expr)?;
    if links::is_pflog(opts.linktype) {
        return Ok(cx.pflog_prologue(body));
    }
    // Run-time offsets (802.11): lowered again per case (wlan.rs).
    cx.finish(body, &mut |case| new_lowerer(case).expr(expr))
}

/// How deeply expressions may nest (boolean operators whose operands are
/// not simple chains, arithmetic, `not`). libpcap's parser has a similar
/// limit (bison's stack); the bound keeps the recursive passes over the
/// tree, here and in every engine, far from stack exhaustion.
pub const MAX_DEPTH: usize = 1000;

pub(crate) type Result<T, E = Error> = std::result::Result<T, E>;

/// The lowering state, threaded left to right through the expression.
pub(crate) struct Lowerer<'a> {
    pub(crate) opts: &'a LowerOptions,
    /// Where the headers are (libpcap's `off_*` compiler state).
    pub(crate) link: LinkLayer,
    /// Span of the primitive being lowered, for errors.
    pub(crate) span: Span,
    /// The filter text (to point errors at a value inside a primitive).
    source: &'a str,
    /// Current recursion depth.
    depth: usize,
    /// A load used the run-time part of the link-layer header offset (the
    /// radio header length): libpcap then computes it in a prologue.
    pub(crate) var_hdr_used: Cell<bool>,
    /// A load used the run-time part of the payload offset (the 802.11
    /// header length): libpcap then computes it in a prologue.
    pub(crate) var_pl_used: Cell<bool>,
    /// Which form of the run-time offsets loads use (`wlan.rs`).
    pub(crate) var_case: wlan::VarCase,
    /// The `geneve`/`vxlan` primitives lowered so far (`tunnel.rs`).
    pub(crate) tunnels: Vec<tunnel::Tunnel>,
    /// A load used a tunnel's offsets (`tunnel.rs`).
    pub(crate) tunnel_used: Cell<bool>,
    /// Whether each tunnel's offsets block ran, at the point being lowered.
    pub(crate) tunnel_state: tunnel::TunnelStates,
    /// The tunnel states where the expression just lowered exits true and
    /// false.
    exits: (tunnel::TunnelStates, tunnel::TunnelStates),
    /// Scratch registers libpcap allocated and never freed so far (one per
    /// unqualified `protochain`): fewer are left for arithmetic.
    pub(crate) leaked_regs: Cell<usize>,
}

/// The direction qualifier as the generators see it (`None` in the AST is
/// libpcap's `Q_DEFAULT`, which behaves as `src or dst` everywhere).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dir {
    Src,
    Dst,
    /// `src and dst`.
    And,
    /// `src or dst`, and the default.
    Or,
    /// An 802.11 qualifier (`ra`, `ta`, `addr1`..`addr4`).
    Wlan(DirQual),
}

impl Dir {
    pub(crate) fn of(d: Option<DirQual>) -> Dir {
        match d {
            None | Some(DirQual::SrcOrDst) => Dir::Or,
            Some(DirQual::Src) => Dir::Src,
            Some(DirQual::Dst) => Dir::Dst,
            Some(DirQual::SrcAndDst) => Dir::And,
            Some(d) => Dir::Wlan(d),
        }
    }
}

/// `'ra' is` / `'addr1' and 'address1' are`, for messages about 802.11
/// qualifiers used where they do not apply.
pub(crate) fn wlan_dir_words(d: DirQual) -> (&'static str, bool) {
    match d {
        DirQual::Ra => ("'ra'", false),
        DirQual::Ta => ("'ta'", false),
        DirQual::Addr1 => ("'addr1' and 'address1'", true),
        DirQual::Addr2 => ("'addr2' and 'address2'", true),
        DirQual::Addr3 => ("'addr3' and 'address3'", true),
        DirQual::Addr4 => ("'addr4' and 'address4'", true),
        DirQual::Src => ("'src'", false),
        DirQual::Dst => ("'dst'", false),
        DirQual::SrcOrDst => ("'src or dst'", false),
        DirQual::SrcAndDst => ("'src and dst'", false),
    }
}

/// The keyword of a protocol qualifier, for messages (`link` rather than
/// the printer's `ether` for the link-layer qualifier, as libpcap says it).
pub(crate) fn proto_name(p: ProtoQual) -> &'static str {
    match p {
        ProtoQual::Link => "link",
        other => other.keyword(),
    }
}

/// How a boolean node combines its operands (for the iterative walk of
/// left-deep `and`/`or` chains).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Conn {
    And,
    Or,
}

impl<'a> Lowerer<'a> {
    /// An error at the current primitive.
    pub(crate) fn err<T>(&self, message: impl Into<String>) -> Result<T> {
        Err(Error::new(message, self.span))
    }

    /// The span of the value a primitive ends with (the `256` of
    /// `ip proto 256`, of `byte 1 = 256`, or of an inherited `... or 256`):
    /// the trailing run of letters and digits of the primitive's text. The
    /// primitive's span if there is none (or the span does not fit the
    /// text).
    pub(crate) fn value_span(&self) -> Span {
        let Some(text) = self.source.get(self.span.range()) else {
            return self.span;
        };
        let trimmed = text.trim_end();
        let value_len = trimmed.bytes().rev().take_while(u8::is_ascii_alphanumeric).count();
        if value_len == 0 {
            return self.span;
        }
        // Both lengths fit: they are at most the span's length, a u32.
        let end = self.span.start.saturating_add(trimmed.len() as u32);
        Span::new(end.saturating_sub(value_len as u32), end)
    }

    /// An error about a name that does not resolve (`unknown host 'x'`),
    /// pointing at the name: the end of the primitive's text, which is
    /// where the grammar puts the id (the whole primitive if the text does
    /// not end with it).
    pub(crate) fn name_err<T>(&self, name: &str, message: impl Into<String>) -> Result<T> {
        let span = match self.source.get(self.span.range()) {
            Some(text) if !name.is_empty() && text.trim_end().ends_with(name) => {
                // Both lengths fit: they are at most the span's length, a u32.
                let end = self.span.start.saturating_add(text.trim_end().len() as u32);
                Span::new(end.saturating_sub(name.len() as u32), end)
            }
            _ => self.span,
        };
        Err(Error::new(message, span))
    }

    /// libpcap master's `assert_maxval`: the error `NAME V greater than
    /// maximum MAX` at the value's span if `v > max`.
    pub(crate) fn assert_maxval(&self, name: &str, v: u32, max: u32) -> Result<()> {
        if v > max {
            return Err(Error::new(
                format!("{name} {v} greater than maximum {max}"),
                self.value_span(),
            ));
        }
        Ok(())
    }

    /// Compiling for packets of a savefile (`swapped` implies it).
    pub(crate) fn savefile(&self) -> bool {
        self.opts.savefile || self.opts.swapped
    }

    /// The error for a feature sift does not implement yet.
    pub(crate) fn unsupported<T>(&self, what: &str) -> Result<T> {
        self.err(format!("{what} is not supported yet by sift"))
    }

    fn enter(&mut self, span: Span) -> Result<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(Error::new(
                format!("expression nested too deeply (more than {MAX_DEPTH} levels)"),
                span,
            ));
        }
        Ok(())
    }

    fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    /// Lowers an expression. Left-deep chains of `and`/`or` (what a long
    /// `a or b or c ...` parses to) are walked iteratively, so their length
    /// is not limited by the recursion bound; the predicate built for a chain
    /// of one operator is flat.
    pub(crate) fn expr(&mut self, e: &Expr) -> Result<Pred> {
        // Collect the left spine: e = ((first op1 r1) op2 r2) ...
        let mut spine = 0usize;
        let mut x = e;
        while let Expr::And(l, _) | Expr::Or(l, _) = x {
            spine += 1;
            x = l;
        }
        let mut rights: Vec<(Conn, &Expr)> = Vec::with_capacity(spine);
        let mut first = e;
        loop {
            match first {
                Expr::And(l, r) => {
                    rights.push((Conn::And, r));
                    first = l;
                }
                Expr::Or(l, r) => {
                    rights.push((Conn::Or, r));
                    first = l;
                }
                _ => break,
            }
        }
        // Operands lowered together with the one before them (a list of
        // ports, `port_group`), skipped when their turn comes.
        let mut skip = 0usize;
        let mut acc = match self.port_group(first, rights.iter().rev())? {
            Some((pred, n)) => {
                skip = n - 1;
                pred
            }
            None => self.operand(first)?,
        };
        // The tunnel states where `acc` exits true and false.
        let (mut on_true, mut on_false) = std::mem::take(&mut self.exits);
        // Nesting depth of `acc` created by alternating operators.
        let mut nest = 0usize;
        let mut last: Option<Conn> = None;
        let mut run_left = 0usize;
        for (i, &(conn, r)) in rights.iter().enumerate().rev() {
            if run_left == 0 {
                // A run of `conn` starts: its operands go into one vector,
                // sized once (the same predicate as step by step).
                run_left = rights[..=i].iter().rev().take_while(|(c, _)| *c == conn).count();
                acc = acc.with_room(conn == Conn::And, run_left);
            }
            run_left -= 1;
            if skip > 0 {
                // In the port list lowered with an earlier operand (an
                // `or`, leaving the tunnel states as they were).
                skip -= 1;
                last = Some(conn);
                continue;
            }
            // The right operand runs where the left one exits true (`and`)
            // or false (`or`).
            self.tunnel_state = match conn {
                Conn::And => on_true.clone(),
                Conn::Or => on_false.clone(),
            };
            let rhs = match conn {
                Conn::Or => match self.port_group(r, rights[..i].iter().rev())? {
                    Some((pred, n)) => {
                        skip = n - 1;
                        pred
                    }
                    None => self.operand(r)?,
                },
                Conn::And => self.operand(r)?,
            };
            let (t, f) = std::mem::take(&mut self.exits);
            match conn {
                Conn::And => {
                    on_false = tunnel::join(&on_false, &f);
                    on_true = t;
                }
                Conn::Or => {
                    on_true = tunnel::join(&on_true, &t);
                    on_false = f;
                }
            }
            if last.is_some_and(|l| l != conn) {
                nest += 1;
                if nest + self.depth > MAX_DEPTH {
                    return Err(Error::new(
                        format!("expression nested too deeply (more than {MAX_DEPTH} levels)"),
                        self.span,
                    ));
                }
            }
            last = Some(conn);
            acc = match conn {
                Conn::And => acc.and(rhs),
                Conn::Or => acc.or(rhs),
            };
        }
        self.exits = (on_true, on_false);
        Ok(acc)
    }

    /// A list of ports: `e`, a numeric `port` primitive, and the operands
    /// after it joined by `or` that are numeric `port` primitives with the
    /// same qualifiers (`tcp port 21 or tcp port 20`, `tcp port (21 or
    /// 20)`), lowered as one ([`Lowerer::port_list_pred`]), with how many
    /// operands that took; `None` for a single port, outside tunnels only,
    /// where the link layer does not allow it, and unless
    /// [`LowerOptions::port_lists`] (the operands are then lowered one by
    /// one).
    fn port_group<'e>(
        &mut self,
        e: &'e Expr,
        mut next: impl Iterator<Item = &'e (Conn, &'e Expr)>,
    ) -> Result<Option<(Pred, usize)>> {
        if !self.opts.port_lists || !self.tunnels.is_empty() {
            return Ok(None);
        }
        let (Some((qual, first)), Expr::Prim(_, span)) = (port_item(e), e) else {
            return Ok(None);
        };
        let mut ports = vec![first];
        while let Some(&(Conn::Or, r)) = next.next() {
            match port_item(r) {
                Some((q, port)) if q == qual => ports.push(port),
                _ => break,
            }
        }
        if ports.len() < 2 {
            return Ok(None);
        }
        self.span = *span;
        let sel = port::selector(self, qual.proto, "port")?;
        let Some(pred) = self.port_list_pred(&ports, sel, Dir::of(qual.dir))? else {
            return Ok(None);
        };
        // As a primitive without a tunnel leaves them (`operand`).
        let entry = self.tunnel_state.clone();
        self.exits = (entry.clone(), entry);
        Ok(Some((pred, ports.len())))
    }

    /// Lowers an operand of a boolean chain: a primitive, a negation, or a
    /// parenthesized chain (recursively).
    fn operand(&mut self, e: &Expr) -> Result<Pred> {
        match e {
            Expr::Prim(p, span) => {
                self.span = *span;
                let entry = self.tunnel_state.clone();
                let before = self.tunnels.len();
                let pred = self.primitive(p)?;
                // A tunnel's block ran where its test held.
                self.exits = if self.tunnels.len() > before {
                    let t = self.tunnels.len() - 1;
                    (tunnel::with(&entry, t, tunnel::Known::Ran), tunnel::with(&entry, t, tunnel::Known::NotRan))
                } else {
                    (entry.clone(), entry)
                };
                Ok(pred)
            }
            Expr::Not(inner, span) => {
                // `not not not x`: count, then lower x once.
                let mut n = 1usize;
                let mut x: &Expr = inner;
                while let Expr::Not(i, _) = x {
                    n += 1;
                    x = i;
                }
                self.enter(*span)?;
                let r = self.expr(x);
                self.leave();
                let mut p = r?;
                if n > MAX_DEPTH {
                    return Err(Error::new(
                        format!("expression nested too deeply (more than {MAX_DEPTH} levels)"),
                        *span,
                    ));
                }
                for _ in 0..n {
                    p = p.not();
                }
                if n % 2 == 1 {
                    let (t, f) = std::mem::take(&mut self.exits);
                    self.exits = (f, t);
                }
                Ok(p)
            }
            Expr::And(..) | Expr::Or(..) => {
                let span = self.span;
                self.enter(span)?;
                let r = self.expr(e);
                self.leave();
                r
            }
        }
    }

    /// Lowers one primitive (`self.span` is its span); after a tunnel,
    /// once per case of its offsets (`tunnel.rs`).
    fn primitive(&mut self, p: &Primitive) -> Result<Pred> {
        match p {
            // They lower their tests per case themselves.
            Primitive::Geneve(_) | Primitive::Vxlan(_) => self.primitive_here(p),
            _ => self.in_tunnel_cases(&mut |cx| cx.primitive_here(p)),
        }
    }

    /// Lowers one primitive in the current lowering state.
    fn primitive_here(&mut self, p: &Primitive) -> Result<Pred> {
        match p {
            Primitive::Id { qual, id } => self.qualified_id(qual, id),
            Primitive::ProtoAbbrev(proto) => self.proto_abbrev(*proto),
            Primitive::Relation { op, lhs, rhs } => self.relation(*op, lhs, rhs),
            Primitive::Broadcast(proto) => self.broadcast(*proto),
            Primitive::Multicast(proto) => self.multicast(*proto),
            Primitive::Less(n) => Ok(self.less(*n)),
            Primitive::Greater(n) => Ok(self.greater(*n)),
            Primitive::Byte { index, op, value } => self.byte(*index, *op, *value),
            Primitive::Inbound => self.inbound(false),
            Primitive::Outbound => self.inbound(true),
            Primitive::Ifindex(n) => self.ifindex(*n),
            Primitive::Vlan(id) => self.vlan(*id),
            Primitive::Mpls(label) => self.mpls(*label),
            Primitive::Pppoed => self.pppoed(),
            Primitive::Pppoes(id) => self.pppoes(*id),
            Primitive::Geneve(vni) => self.tunnel(tunnel::TunnelKind::Geneve, *vni),
            Primitive::Vxlan(vni) => self.tunnel(tunnel::TunnelKind::Vxlan, *vni),
            Primitive::Llc(kind) => self.llc(kind),
            Primitive::Pflog(p) => self.pflog(p),
            Primitive::Wlan(_, w) => self.wlan_field(w),
            Primitive::Atm(f, t) => self.atm_field(*f, *t),
            Primitive::AtmAbbrev(t) => self.atm_abbrev(*t),
            Primitive::Mtp2(t) => self.mtp2_type(*t),
            Primitive::Mtp3(f, t) => self.mtp3_field(*f, *t),
        }
    }

    /// `head id`: dispatches on the kind of identifier, as libpcap's grammar
    /// does (`gen_ncode`, `gen_mcode`, `gen_mcode6`, `gen_ecode`,
    /// `gen_scode`).
    fn qualified_id(&mut self, q: &Qual, id: &Id) -> Result<Pred> {
        match id {
            Id::Num(v) => self.id_num(q, *v),
            Id::Ipv4 { addr, parts } => {
                match q.addr {
                    Some(AddrQual::Port) => return self.err("'port' modifier applied to ip host"),
                    Some(AddrQual::Portrange) => {
                        return self.err("'portrange' modifier applied to ip host")
                    }
                    Some(AddrQual::Proto) => return self.err("'proto' modifier applied to ip host"),
                    Some(AddrQual::Protochain) => {
                        return self.err("'protochain' modifier applied to ip host")
                    }
                    _ => {}
                }
                self.id_ipv4(q, *addr, *parts)
            }
            Id::Ipv4Prefix { addr, parts, len } => self.id_ipv4_prefix(q, *addr, *parts, *len),
            Id::Ipv4Mask { addr, mask } => self.id_ipv4_mask(q, *addr, *mask),
            Id::Ipv6 { addr, len } => self.id_ipv6(q, addr, *len),
            Id::Mac(mac) => self.id_mac(q, mac),
            Id::Mac8(a) => self.mac8_host(q, *a),
            Id::Decnet { area, node } => {
                let addr = (u32::from(*area) << 10) | u32::from(*node);
                match q.addr {
                    None | Some(AddrQual::Host) | Some(AddrQual::Net) => {
                        self.decnet_host(addr, Dir::of(q.dir))
                    }
                    _ => self.id_num(q, addr),
                }
            }
            Id::Name(name) => self.id_name(q, name),
        }
    }

    /// `id` that is a number (libpcap's `gen_ncode` with no string).
    fn id_num(&mut self, q: &Qual, v: u32) -> Result<Pred> {
        let dir = Dir::of(q.dir);
        match q.addr {
            None | Some(AddrQual::Host) | Some(AddrQual::Net) => {
                if q.proto == Some(ProtoQual::Decnet) {
                    // As libpcap master: a DECnet address is AREA.NODE
                    // (1.10.3 also took a plain 16-bit number).
                    let span = self.value_span();
                    let text = self.source.get(span.range()).unwrap_or("");
                    return Err(Error::new(format!("invalid DECnet address '{text}'"), span));
                }
                if q.proto == Some(ProtoQual::Link) {
                    return self.err("illegal link layer address");
                }
                let is_net = q.addr == Some(AddrQual::Net);
                let (mut v, mut mask) = (v, 0xffff_ffffu32);
                if is_net {
                    // Promote a short network number: `net 10` is 10/8.
                    while v != 0 && v & 0xff00_0000 == 0 {
                        v <<= 8;
                        mask <<= 8;
                    }
                }
                self.host_v4(v, mask, q.proto, dir, is_net)
            }
            Some(AddrQual::Port) => {
                let sel = port::selector(self, q.proto, "port")?;
                if v > 65535 {
                    return self.err(format!("illegal port number {v} > 65535"));
                }
                self.port_pred(v, sel, dir)
            }
            Some(AddrQual::Portrange) => {
                let sel = port::selector(self, q.proto, "portrange")?;
                if v > 65535 {
                    return self.err(format!("illegal port number {v} > 65535"));
                }
                self.portrange_pred(v, v, sel, dir)
            }
            Some(AddrQual::Gateway) => self.err("'gateway' requires a name"),
            Some(AddrQual::Proto) => self.gen_proto(v, q.proto, q.dir),
            Some(AddrQual::Protochain) => {
                // Master checks the value before generating anything.
                self.assert_maxval("protocol number", v, 255)?;
                self.gen_protochain(v, q.proto)
            }
        }
    }

    /// `id` that is a name (libpcap's `gen_scode`).
    fn id_name(&mut self, q: &Qual, name: &str) -> Result<Pred> {
        match q.addr {
            Some(AddrQual::Net) => self.net_name(q, name),
            None | Some(AddrQual::Host) => self.host_name(q, name),
            Some(AddrQual::Port) => self.port_name(q, name),
            Some(AddrQual::Portrange) => self.portrange_name(q, name),
            Some(AddrQual::Gateway) => self.gateway(q, name),
            Some(AddrQual::Proto) => self.proto_by_name(q, name),
            Some(AddrQual::Protochain) => self.protochain_by_name(q, name),
        }
    }
}

/// A numeric `port` primitive that [`Lowerer::port_group`] may lower with
/// others: its qualifiers (protocol `tcp`, `udp`, `sctp` or none; any
/// direction of `src`/`dst`) and its port (at most 65535; others are
/// errors, which the primitive's own lowering reports).
fn port_item(e: &Expr) -> Option<(Qual, u32)> {
    let Expr::Prim(Primitive::Id { qual, id: Id::Num(port) }, _) = e else {
        return None;
    };
    let proto_ok = matches!(qual.proto, None | Some(ProtoQual::Tcp | ProtoQual::Udp | ProtoQual::Sctp));
    let dir_ok = matches!(
        qual.dir,
        None | Some(DirQual::Src | DirQual::Dst | DirQual::SrcOrDst | DirQual::SrcAndDst)
    );
    (qual.addr == Some(AddrQual::Port) && proto_ok && dir_ok && *port <= 65535).then_some((*qual, *port))
}

#[cfg(test)]
mod tests;
