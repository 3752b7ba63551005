//! sift: an exact, fast implementation of the pcap filter language.
//!
//! The whole pipeline, one stage per crate:
//!
//! ```text
//! text ──parse──▶ AST ──lower(link type)──▶ predicate IR ──optimize──▶ predicate IR ──JIT──▶ x86-64 code
//!      sift-syntax        sift-ir                      sift-ir::opt     │         sift-jit
//!                                                                       └─codegen──▶ classic BPF ──▶ interpreter
//!                                                                         sift-bpf  (on demand)  └─▶ kernel, -d
//! ```
//!
//! The JIT (the default engine on x86-64 Linux) compiles the optimized
//! predicate directly; classic BPF is generated only for what needs it: the
//! interpreter, the kernel, and [`Filter::program`] (on its first call).
//!
//! The optimizer is on by default; [`CompileOptions::optimize`] `= false`
//! (the CLI's `-O`, as in tcpdump) compiles the lowered predicate as it is.
//!
//! Verdicts equal libpcap 1.10.3's unoptimized programs on every packet,
//! truncated ones included (see `docs/compat.md` for deliberate differences).
//!
//! ```
//! use sift::{Filter, CompileOptions};
//! let f = Filter::new("tcp port 80", &CompileOptions::default()).unwrap();
//! assert!(!f.matches(&[0u8; 60], 60));
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

use std::fmt;
use std::str::FromStr;
use std::sync::{Arc, OnceLock};

pub use sift_bpf::Insn;
pub use sift_jit::PacketRef;
pub use sift_ir::{LinkType, Pred};
pub use sift_syntax::ast;

/// The snapshot length libpcap and tcpdump use by default; accepting
/// programs return it.
pub const DEFAULT_SNAPLEN: u32 = 262_144;

/// How to compile a filter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompileOptions {
    /// Link-layer type of the packets (default Ethernet).
    pub linktype: LinkType,
    /// Value returned by the cBPF program on accept (libpcap: the snapshot length).
    pub snaplen: u32,
    /// IPv4 netmask for `ip broadcast`; `None` is libpcap's PCAP_NETMASK_UNKNOWN.
    pub netmask: Option<u32>,
    /// The packets come from a savefile (`-r`) rather than a live capture:
    /// libpcap then accepts every BSD AF_INET6 value on DLT_NULL/LOOP and
    /// refuses live-only primitives (`inbound` on most link types).
    pub savefile: bool,
    /// The savefile was written on a machine of the other byte order
    /// (matters for DLT_NULL's host-order address family); implies `savefile`.
    pub swapped: bool,
    /// Run the IR optimizer (`sift_ir::opt`) between lowering and code
    /// generation (default). It never changes a verdict; turning it off
    /// (tcpdump's `-O`) gives the program shaped exactly as lowering
    /// produced it.
    pub optimize: bool,
    /// Name tables for host, network and Ethernet host names instead of the
    /// system's (`None`, the default); see [`sift_ir::LowerOptions::names`].
    pub names: Option<&'static sift_ir::NameTables>,
}

impl Default for CompileOptions {
    fn default() -> Self {
        CompileOptions {
            linktype: LinkType::EN10MB,
            snaplen: DEFAULT_SNAPLEN,
            netmask: None,
            savefile: false,
            swapped: false,
            optimize: true,
            names: None,
        }
    }
}

/// Every stage of a compilation, for `sift explain` and for engines that
/// start from an intermediate form.
#[derive(Clone, Debug)]
pub struct Compiled {
    /// The parsed expression.
    pub ast: ast::Filter,
    /// The lowered predicate (reference semantics).
    pub pred: Pred,
    /// The predicate the engines run: the optimizer's output, or a copy of
    /// `pred` when [`CompileOptions::optimize`] is off.
    pub optimized: Pred,
    /// The classic BPF program of `optimized` (validated: the Linux kernel
    /// accepts it).
    pub program: Vec<Insn>,
}

/// Why a filter could not be compiled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error {
    /// The expression is malformed or names something unknown/unsupported;
    /// carries the span to point at.
    Expression {
        /// The filter text.
        source: String,
        /// What and where.
        error: sift_syntax::Error,
    },
    /// The expression is valid but cannot be turned into classic BPF
    /// (too large, too many scratch registers): from [`compile`], from
    /// [`Filter::program`], and from engines that run classic BPF.
    Codegen(String),
    /// A classic BPF program (e.g. from `--bpf-file`) failed validation.
    Program(String),
    /// The chosen engine cannot run this filter (e.g. arithmetic on the
    /// dynamic engine); another engine can.
    Engine(String),
}

impl Error {
    /// A multi-line rendering for terminals: for expression errors, the
    /// expression with a caret under the offending text.
    pub fn render(&self) -> String {
        match self {
            Error::Expression { source, error } => error.render(source),
            other => other.to_string(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Expression { error, .. } => write!(f, "{}", error.message),
            Error::Codegen(m) => write!(f, "{m}"),
            Error::Program(m) => write!(f, "invalid BPF program: {m}"),
            Error::Engine(m) => write!(f, "{m}"),
        }
    }
}

impl std::error::Error for Error {}

/// Parses and lowers `expr`: the stages up to the predicate IR.
pub fn lower(expr: &str, opts: &CompileOptions) -> Result<(ast::Filter, Pred), Error> {
    let ast = sift_syntax::parse(expr).map_err(|error| Error::Expression { source: expr.to_string(), error })?;
    let pred = lower_parsed(expr, &ast, opts, true)?;
    Ok((ast, pred))
}

/// Lowers `ast`, parsed from `expr`, with lists of ports as one or not
/// (`sift_ir::LowerOptions::port_lists`).
fn lower_parsed(expr: &str, ast: &ast::Filter, opts: &CompileOptions, port_lists: bool) -> Result<Pred, Error> {
    let lopts = sift_ir::LowerOptions {
        linktype: opts.linktype,
        netmask: opts.netmask,
        savefile: opts.savefile,
        swapped: opts.swapped,
        names: opts.names,
        port_lists,
    };
    sift_ir::lower(ast, &lopts).map_err(|error| Error::Expression { source: expr.to_string(), error })
}

/// Parses, lowers and (unless turned off) optimizes `expr`: the stages up
/// to the predicate the engines run, without code generation.
pub fn lower_optimized(expr: &str, opts: &CompileOptions) -> Result<(ast::Filter, Pred, Pred), Error> {
    let (ast, pred) = lower(expr, opts)?;
    let optimized = if opts.optimize { sift_ir::optimize(&pred) } else { pred.clone() };
    Ok((ast, pred, optimized))
}

/// Compiles `expr` through every stage to classic BPF.
pub fn compile(expr: &str, opts: &CompileOptions) -> Result<Compiled, Error> {
    let (ast, pred, optimized) = lower_optimized(expr, opts)?;
    let program = codegen(&optimized, opts.snaplen)?;
    Ok(Compiled { ast, pred, optimized, program })
}

fn codegen(pred: &Pred, snaplen: u32) -> Result<Vec<Insn>, Error> {
    sift_bpf::codegen::compile(pred, &sift_bpf::codegen::CodegenOptions { snaplen }).map_err(codegen_error)
}

fn codegen_error(e: sift_bpf::codegen::CodegenError) -> Error {
    Error::Codegen(e.to_string())
}

/// The engines that can run a filter.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Engine {
    /// The best engine available here: the JIT on x86-64 Linux, the
    /// interpreter elsewhere.
    #[default]
    Meta,
    /// Native x86-64 code compiled straight from the optimized predicate
    /// (`sift_jit::JitFilter::from_shared_pred`: no classic BPF in
    /// between); predicates the direct compiler refuses (`protochain`,
    /// very deep or register-hungry trees) go through classic BPF.
    Jit,
    /// The classic BPF interpreter (libpcap `bpf_filter` semantics).
    Interp,
    /// The dynamic engine (passes of CISC instructions, updatable while
    /// packets flow); only expressions that fit its instruction set.
    Dynamic,
    /// The dynamic engine where the expression fits its instruction set,
    /// else what [`Engine::Meta`] picks (the JIT where available): for a
    /// caller that wants dynamic filtering when possible and a filter in
    /// any case. [`Filter::engine`] tells which one runs. ([`Engine::Dynamic`]
    /// itself is strict: it fails with [`Error::Engine`] naming what does
    /// not fit.)
    DynamicOrJit,
    /// The reference evaluator over the predicate IR as lowered (before
    /// the optimizer): slow, the in-house oracle.
    Reference,
}

impl Engine {
    /// Every engine, with its command-line name.
    pub const ALL: &'static [(&'static str, Engine)] = &[
        ("meta", Engine::Meta),
        ("jit", Engine::Jit),
        ("interp", Engine::Interp),
        ("dynamic", Engine::Dynamic),
        ("dynamic-or-jit", Engine::DynamicOrJit),
        ("reference", Engine::Reference),
    ];

    /// The engine's command-line name.
    pub fn name(self) -> &'static str {
        Engine::ALL.iter().find(|e| e.1 == self).map_or("?", |e| e.0)
    }
}

impl FromStr for Engine {
    type Err = String;
    fn from_str(s: &str) -> Result<Engine, String> {
        Engine::ALL.iter().find(|e| e.0 == s).map(|e| e.1).ok_or_else(|| {
            let names: Vec<_> = Engine::ALL.iter().map(|e| e.0).collect();
            format!("unknown engine '{s}' (known: {})", names.join(", "))
        })
    }
}

enum Runner {
    Jit(sift_jit::JitFilter),
    Interp(sift_bpf::interp::Program),
    Dynamic(sift_dynamic::DynamicFilter),
    Reference(Pred),
}

impl Runner {
    #[inline(never)]
    fn matches_out_of_line(&self, data: &[u8], wire_len: u32) -> bool {
        match self {
            Runner::Jit(j) => j.run(data, wire_len) != 0,
            Runner::Interp(p) => p.run(data, wire_len) != 0,
            Runner::Dynamic(d) => d.matches(data, wire_len),
            Runner::Reference(pred) => sift_ir::matches(pred, sift_ir::PacketView { data, wire_len }),
        }
    }
}

/// The interpreter's batch loop, compiled on its own: inlined into
/// [`Filter::count_matches`] beside the JIT's batch code, its speed moved
/// with whatever the JIT's side of the function looked like (accept-all
/// on 1M packets: 560-650 or 460-480 Mpps from one build to the next).
#[inline(never)]
fn count_interp<T>(p: &sift_bpf::interp::Program, items: &[T], packet: impl Fn(&T) -> (&[u8], u32)) -> u64 {
    let header_line = sift_jit::prefetch_header_lines();
    p.count_matches_hinted(items, packet, sift_jit::PREFETCH_AHEAD, header_line, sift_jit::simd::prefetch)
}

/// A compiled filter, ready to run on packets.
///
/// It keeps the predicate it was compiled from (the optimizer's output,
/// shared with the JIT: no copy of the tree), from which
/// [`Filter::program`] generates the classic BPF program on its first call;
/// engines that run classic BPF (the interpreter) generate it at once.
pub struct Filter {
    runner: Runner,
    /// The predicate `program` is generated from and what an accepting
    /// program returns; `None` for a filter made from a program
    /// ([`Filter::from_program`]).
    source: Option<(Arc<Pred>, u32)>,
    /// The classic BPF program, or why there is none, once generated.
    program: OnceLock<Result<Vec<Insn>, Error>>,
}

impl Filter {
    /// Compiles `expr` for the default engine.
    pub fn new(expr: &str, opts: &CompileOptions) -> Result<Filter, Error> {
        Filter::with_engine(expr, opts, Engine::default())
    }

    /// Compiles `expr` for `engine`.
    ///
    /// Classic BPF is generated here only for the interpreter (also when
    /// [`Engine::Meta`] falls back to it): a filter too large for classic
    /// BPF (the kernel's 4096 instructions) runs on the JIT, the dynamic
    /// engine and the reference evaluator, and fails with
    /// [`Error::Codegen`] on the interpreter and in [`Filter::program`].
    pub fn with_engine(expr: &str, opts: &CompileOptions, engine: Engine) -> Result<Filter, Error> {
        // The stages of `compile`, keeping only what the engine needs: the
        // lowered predicate is optimized in place unless the dynamic engine
        // or the reference evaluator wants it as it is (no copy of the tree).
        let (lowered, optimized) = match engine {
            Engine::Dynamic | Engine::DynamicOrJit | Engine::Reference => {
                // Ports one by one for the engine itself: the dynamic engine
                // builds its own port sets from that form, and the oracle
                // keeps libpcap's tree. The optimized predicate (the JIT's,
                // `Filter::program`'s) is the other engines' own, lowered
                // with lists of ports as one.
                let (ast, with_lists) = lower(expr, opts)?;
                let lowered = lower_parsed(expr, &ast, opts, false)?;
                let optimized = if opts.optimize { sift_ir::opt::optimize_owned(with_lists) } else { with_lists };
                (Some(lowered), optimized)
            }
            _ => {
                let (_, lowered) = lower(expr, opts)?;
                (None, if opts.optimize { sift_ir::opt::optimize_owned(lowered) } else { lowered })
            }
        };
        let optimized = Arc::new(optimized);
        let program = OnceLock::new();
        let interp = || {
            let program = program.get_or_init(|| codegen(&optimized, opts.snaplen)).as_deref().map_err(Error::clone)?;
            sift_bpf::interp::Program::new(program).map(Runner::Interp).map_err(|e| Error::Program(e.to_string()))
        };
        // The JIT compiles the optimized predicate itself (falling back to
        // classic BPF for what the direct compiler refuses); `sift bench
        // --engines jit,jit-cbpf` compares it with the JIT of the optimized
        // cBPF program.
        let jit = || sift_jit::JitFilter::from_shared_pred(Arc::clone(&optimized), opts.snaplen);
        let jit_or_interp = || match jit() {
            Ok(j) => Ok(Runner::Jit(j)),
            Err(_) => interp(),
        };
        let runner = match engine {
            Engine::Meta => jit_or_interp()?,
            Engine::Jit => Runner::Jit(jit().map_err(|e| match e {
                sift_jit::JitError::Codegen(e) => codegen_error(e),
                e => Error::Engine(format!("jit: {e}")),
            })?),
            Engine::Interp => interp()?,
            Engine::Dynamic => {
                let pred = lowered.as_ref().unwrap_or(&optimized);
                let hint = "engine dynamic-or-jit runs such a filter with the JIT";
                Runner::Dynamic(
                    sift_dynamic::DynamicFilter::from_pred(pred, opts.linktype)
                        .map_err(|e| Error::Engine(format!("dynamic engine: {e} ({hint})")))?,
                )
            }
            Engine::DynamicOrJit => {
                match sift_dynamic::DynamicFilter::from_pred(lowered.as_ref().unwrap_or(&optimized), opts.linktype) {
                    Ok(d) => Runner::Dynamic(d),
                    Err(_) => jit_or_interp()?,
                }
            }
            // The oracle evaluates the predicate as lowered, not the
            // optimizer's output (`-O` or not, verdicts are the same).
            Engine::Reference => Runner::Reference(lowered.unwrap_or_else(|| Pred::clone(&optimized))),
        };
        Ok(Filter { runner, source: Some((optimized, opts.snaplen)), program })
    }

    /// A filter from a classic BPF program written elsewhere (e.g. `tcpdump
    /// -ddd` output), validated with the kernel's rules, then run by the JIT
    /// where available (the interpreter elsewhere).
    pub fn from_program(program: Vec<Insn>) -> Result<Filter, Error> {
        sift_bpf::validate::validate(&program).map_err(|e| Error::Program(e.to_string()))?;
        let runner = match sift_jit::JitFilter::from_program(&program) {
            Ok(j) => Runner::Jit(j),
            Err(_) => Runner::Interp(
                sift_bpf::interp::Program::new(&program).map_err(|e| Error::Program(e.to_string()))?,
            ),
        };
        Ok(Filter { runner, source: None, program: OnceLock::from(Ok(program)) })
    }

    /// Does the packet (`data` = captured bytes, `wire_len` = original length) match?
    #[inline]
    pub fn matches(&self, data: &[u8], wire_len: u32) -> bool {
        // The JIT's call stays inline; the other engines' larger bodies go
        // out of line so that this function stays small enough to inline.
        match &self.runner {
            Runner::Jit(j) => j.run(data, wire_len) != 0,
            // The interpreter's entry is small too (a call of the first node).
            Runner::Interp(p) => p.run(data, wire_len) != 0,
            other => other.matches_out_of_line(data, wire_len),
        }
    }

    /// How many of `items` match; `packet` gives an item's captured bytes
    /// and wire length. The batch entry point: the engine is chosen once
    /// per call, and the JIT prefetches the headers of the packets a few
    /// places ahead (`sift_jit::JitFilter::count_matches`), so does the
    /// interpreter (`sift_bpf::interp::Program::count_matches_hinted` with
    /// `sift_jit::simd::prefetch`; unless its program loads nothing),
    /// the dynamic engine prefetches like the JIT (`sift_dynamic::Program::count_matches`).
    pub fn count_matches<T>(&self, items: &[T], packet: impl Fn(&T) -> (&[u8], u32)) -> u64 {
        let packets = items.iter().map(&packet);
        let n = match &self.runner {
            Runner::Jit(j) => return j.count_matches(items, packet),
            Runner::Interp(p) => return count_interp(p, items, packet),
            Runner::Dynamic(dy) => return dy.count_matches(items, packet),
            Runner::Reference(pred) => packets
                .filter(|&(data, wire_len)| sift_ir::matches(pred, sift_ir::PacketView { data, wire_len }))
                .count(),
        };
        n as u64
    }

    /// How many of `packets` match: [`Filter::count_matches`] for packets
    /// kept as [`PacketRef`]s (captured bytes and wire length, 16 bytes
    /// each), which the JIT's count function walks in place, one call for
    /// the whole slice (`sift_jit::JitFilter::count_packets`) instead of
    /// copying each packet's address and lengths into a window of its own
    /// first. The other engines run as [`Filter::count_matches`] does.
    ///
    /// ```
    /// use sift::{CompileOptions, Filter, PacketRef};
    ///
    /// let filter = Filter::new("ip", &CompileOptions::default()).unwrap();
    /// let mut ipv4 = [0u8; 34];
    /// ipv4[12] = 0x08;
    /// let arp = [0u8; 42];
    /// let packets: Vec<PacketRef> = (0..100)
    ///     .map(|i| if i % 4 == 0 { PacketRef::new(&ipv4, 60) } else { PacketRef::new(&arp, 60) })
    ///     .collect();
    /// assert_eq!(filter.count_packets(&packets), 25);
    /// ```
    pub fn count_packets(&self, packets: &[PacketRef<'_>]) -> u64 {
        match &self.runner {
            Runner::Jit(j) => j.count_packets(packets),
            _ => self.count_matches(packets, |p| (p.data(), p.wire_len())),
        }
    }

    /// Each packet's verdict: `verdicts[i]` is set to whether `packets[i]`
    /// matches (stopping at the shorter of the two slices); returns how
    /// many match. The JIT runs its verdict function, which walks the
    /// packets in place in one call and writes each verdict
    /// (`sift_jit::JitFilter::verdicts`); the other engines run
    /// [`Filter::matches`] on each packet.
    ///
    /// ```
    /// use sift::{CompileOptions, Filter, PacketRef};
    ///
    /// let filter = Filter::new("ip", &CompileOptions::default()).unwrap();
    /// let mut ipv4 = [0u8; 34];
    /// ipv4[12] = 0x08;
    /// let arp = [0u8; 42];
    /// let packets: Vec<PacketRef> = (0..100)
    ///     .map(|i| if i % 4 == 0 { PacketRef::new(&ipv4, 60) } else { PacketRef::new(&arp, 60) })
    ///     .collect();
    /// let mut verdicts = vec![false; packets.len()];
    /// assert_eq!(filter.verdicts(&packets, &mut verdicts), 25);
    /// assert!(verdicts[0] && !verdicts[1]);
    /// ```
    pub fn verdicts(&self, packets: &[PacketRef<'_>], verdicts: &mut [bool]) -> u64 {
        if let Runner::Jit(j) = &self.runner {
            return j.verdicts(packets, verdicts);
        }
        let mut accepted = 0;
        for (p, v) in packets.iter().zip(verdicts.iter_mut()) {
            *v = self.matches(p.data(), p.wire_len());
            accepted += u64::from(*v);
        }
        accepted
    }

    /// The engine actually running the filter (`Meta` resolves to one).
    pub fn engine(&self) -> Engine {
        match self.runner {
            Runner::Jit(_) => Engine::Jit,
            Runner::Interp(_) => Engine::Interp,
            Runner::Dynamic(_) => Engine::Dynamic,
            Runner::Reference(_) => Engine::Reference,
        }
    }

    /// The classic BPF program (what `-d` prints and the kernel would
    /// run), the same as [`compile`]'s: generated from the optimized
    /// predicate on the first call (unless the engine needed it), then kept.
    /// Fails with [`Error::Codegen`] for a filter classic BPF cannot
    /// express (more than the kernel's 4096 instructions, too many scratch
    /// registers), which the JIT, the dynamic engine and the reference
    /// evaluator run all the same.
    pub fn program(&self) -> Result<&[Insn], Error> {
        self.program
            .get_or_init(|| match &self.source {
                Some((pred, snaplen)) => codegen(pred, *snaplen),
                // Not reached: a filter without a predicate was made from
                // its program.
                None => Err(Error::Program("no program".into())),
            })
            .as_deref()
            .map_err(Error::clone)
    }

    /// The dynamic engine's passes when it runs the filter
    /// ([`Filter::engine`] is [`Engine::Dynamic`]), else `None`: one line
    /// per pass, then one per instruction with its kind, a `*` when it is
    /// marked copied from the pass before, the kind of step that runs it,
    /// and its expression text (what `sift explain` prints).
    pub fn dynamic_listing(&self) -> Option<String> {
        match &self.runner {
            Runner::Dynamic(d) => Some(d.program().to_string()),
            _ => None,
        }
    }

    /// The size in bytes of the machine code of the JIT's per-packet
    /// function when the JIT runs the filter ([`Filter::engine`] is
    /// [`Engine::Jit`]; 0 for a constant filter), else `None`.
    pub fn code_size(&self) -> Option<usize> {
        match &self.runner {
            Runner::Jit(j) => Some(j.code_size()),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sift_testkit::{exprs, packets, Rng};

    /// Random packets for `lt`.
    fn packets(rng: &mut Rng, lt: LinkType, n: usize) -> Vec<(Vec<u8>, u32)> {
        (0..n).map(|_| packets::random_packet(rng, lt)).collect()
    }

    /// Whether the JIT runs `f` from machine code compiled straight from
    /// the predicate (no classic BPF: `insn_count` 0), `None` if the JIT
    /// does not run it.
    fn direct(f: &Filter) -> Option<bool> {
        match &f.runner {
            Runner::Jit(j) => Some(j.insn_count() == 0),
            _ => None,
        }
    }

    /// `f`'s verdicts equal `want`'s on `packets`, one by one and counted.
    fn same_verdicts(f: &Filter, want: &Filter, packets: &[(Vec<u8>, u32)], what: &str) {
        for (data, wire) in packets {
            assert_eq!(f.matches(data, *wire), want.matches(data, *wire), "{what}: {data:02x?} (wire {wire})");
        }
        fn parts(p: &(Vec<u8>, u32)) -> (&[u8], u32) {
            (&p.0, p.1)
        }
        let want_count = want.count_matches(packets, parts);
        assert_eq!(f.count_matches(packets, parts), want_count, "{what}: count");
        let refs: Vec<PacketRef> = packets.iter().map(|p| PacketRef::new(&p.0, p.1)).collect();
        assert_eq!(f.count_packets(&refs), want_count, "{what}: count in place");
        let mut verdicts = vec![false; refs.len()];
        assert_eq!(f.verdicts(&refs, &mut verdicts), want_count, "{what}: verdicts");
        for ((data, wire), v) in packets.iter().zip(verdicts) {
            assert_eq!(v, want.matches(data, *wire), "{what}: verdict of {data:02x?} (wire {wire})");
        }
    }

    /// The JIT engine compiles the optimized predicate directly (classic
    /// BPF for `protochain`) and gives the interpreter's verdicts; the
    /// program generated on demand is `compile`'s, for every engine.
    #[test]
    fn jit_from_the_predicate_runs_as_the_interpreter() {
        let mut rng = Rng::new(0x5eed_fa0d);
        let lt = LinkType::EN10MB;
        let pkts = packets(&mut rng, lt, 3000);
        let opts = CompileOptions::default();
        let mut fixed: Vec<String> = [
            "tcp",
            "tcp port 80",
            "ip host 10.0.0.1 and (tcp or udp)",
            "vlan and ip6 and udp dst port 53",
            "tcp[tcpflags] & (tcp-syn|tcp-ack) = tcp-syn",
            "ip[2:2] - ((ip[0] & 0xf) << 2) > 40",
            "ip protochain 6",
            "ip6 protochain 17 or tcp port 22",
            "not ip protochain 1",
            "",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let chosen = fixed.len();
        fixed.extend((0..300).map(|_| exprs::random_expr(&mut rng, lt)));
        let (mut directs, mut fallbacks) = (0, 0);
        for (i, expr) in fixed.iter().enumerate() {
            let Ok(compiled) = compile(expr, &opts) else { continue };
            let interp = Filter::with_engine(expr, &opts, Engine::Interp).expect("interp");
            for engine in [Engine::Jit, Engine::Meta, Engine::DynamicOrJit, Engine::Interp] {
                let f = Filter::with_engine(expr, &opts, engine).expect("compiles");
                same_verdicts(&f, &interp, &pkts, &format!("{expr:?} on {engine:?}"));
                assert_eq!(f.program(), Ok(compiled.program.as_slice()), "{expr:?} on {engine:?}");
                if engine == Engine::Jit {
                    match direct(&f) {
                        Some(true) => directs += 1,
                        Some(false) => fallbacks += 1,
                        None => {}
                    }
                    // (The optimizer may drop a random expression's `protochain`.)
                    if sift_jit::JitFilter::is_supported() && i < chosen && !expr.is_empty() {
                        let protochain = expr.contains("protochain");
                        assert_eq!(direct(&f), Some(!protochain), "{expr:?}: direct path");
                    }
                }
            }
        }
        if sift_jit::JitFilter::is_supported() {
            assert!(directs > 200 && fallbacks >= 3, "{directs} {fallbacks}");
        }
    }

    /// A filter too large for classic BPF runs on the JIT (and the engines
    /// that need no classic BPF) with the reference evaluator's verdicts;
    /// its program, and the interpreter, fail as `compile` does.
    #[test]
    fn too_large_for_classic_bpf() {
        let hosts: Vec<String> = (0..1200).map(|i| format!("host 10.0.{}.{}", i / 250, i % 250)).collect();
        let expr = format!("{} or tcp port 80", hosts.join(" or "));
        let opts = CompileOptions::default();
        let err = compile(&expr, &opts).expect_err("too large");
        assert!(matches!(err, Error::Codegen(_)), "{err:?}");
        assert_eq!(Filter::with_engine(&expr, &opts, Engine::Interp).err(), Some(err.clone()));
        let reference = Filter::with_engine(&expr, &opts, Engine::Reference).expect("reference");
        assert_eq!(reference.program().err(), Some(err.clone()));
        let mut rng = Rng::new(0x5eed_fa0e);
        let pkts = packets(&mut rng, LinkType::EN10MB, 2000);
        for engine in [Engine::Jit, Engine::Meta, Engine::DynamicOrJit] {
            match Filter::with_engine(&expr, &opts, engine) {
                Ok(f) => {
                    assert_eq!(direct(&f), Some(true), "{engine:?}");
                    same_verdicts(&f, &reference, &pkts, &format!("{engine:?}"));
                    assert_eq!(f.program().err(), Some(err.clone()));
                }
                // No JIT here: the interpreter needs the program.
                Err(e) => assert!(!sift_jit::JitFilter::is_supported() && e == err, "{engine:?}: {e}"),
            }
        }
        let matched = pkts.iter().filter(|(d, w)| reference.matches(d, *w)).count();
        assert!(matched > 0, "no packet matches");
    }

    /// A filter keeps one optimized predicate, shared with its JIT code.
    #[test]
    fn the_predicate_is_shared() {
        let f = Filter::with_engine("tcp port 80", &CompileOptions::default(), Engine::Jit).expect("compiles");
        let (pred, _) = f.source.as_ref().expect("from an expression");
        let users = if matches!(direct(&f), Some(true)) { 2 } else { 1 };
        assert_eq!(Arc::strong_count(pred), users);
    }
}
