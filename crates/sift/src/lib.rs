//! sift: an exact, fast implementation of the pcap filter language.
//!
//! The whole pipeline, one stage per crate:
//!
//! ```text
//! text ──parse──▶ AST ──lower(link type)──▶ predicate IR ──optimize──▶ predicate IR ──codegen──▶ classic BPF
//!      sift-syntax        sift-ir                      sift-ir::opt     │         sift-bpf      │
//!                                                                       └─▶ JIT (sift-jit)      ├─▶ interpreter
//!                                                                                               └─▶ kernel
//! ```
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

pub use sift_bpf::Insn;
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
    /// (too large, too many scratch registers).
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
    let wrap = |error| Error::Expression { source: expr.to_string(), error };
    let ast = sift_syntax::parse(expr).map_err(wrap)?;
    let lopts = sift_ir::LowerOptions {
        linktype: opts.linktype,
        netmask: opts.netmask,
        savefile: opts.savefile,
        swapped: opts.swapped,
        names: opts.names,
    };
    let pred = sift_ir::lower(&ast, &lopts).map_err(wrap)?;
    Ok((ast, pred))
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
    let program = codegen(&optimized, opts)?;
    Ok(Compiled { ast, pred, optimized, program })
}

fn codegen(pred: &Pred, opts: &CompileOptions) -> Result<Vec<Insn>, Error> {
    sift_bpf::codegen::compile(pred, &sift_bpf::codegen::CodegenOptions { snaplen: opts.snaplen })
        .map_err(|e| Error::Codegen(e.to_string()))
}

/// The engines that can run a filter.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Engine {
    /// The best engine available here: the JIT on x86-64 Linux, the
    /// interpreter elsewhere.
    #[default]
    Meta,
    /// Native x86-64 code compiled from the (optimized) classic BPF program.
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

/// A compiled filter, ready to run on packets.
pub struct Filter {
    runner: Runner,
    program: Vec<Insn>,
}

impl Filter {
    /// Compiles `expr` for the default engine.
    pub fn new(expr: &str, opts: &CompileOptions) -> Result<Filter, Error> {
        Filter::with_engine(expr, opts, Engine::default())
    }

    /// Compiles `expr` for `engine`.
    pub fn with_engine(expr: &str, opts: &CompileOptions, engine: Engine) -> Result<Filter, Error> {
        // The stages of `compile`, keeping only what the engine needs: the
        // lowered predicate is optimized in place unless the dynamic engine
        // or the reference evaluator wants it as it is (no copy of the tree).
        let (pred, optimized) = match engine {
            Engine::Dynamic | Engine::DynamicOrJit | Engine::Reference => {
                let (_, lowered, optimized) = lower_optimized(expr, opts)?;
                (Some(lowered), optimized)
            }
            _ => {
                let (_, lowered) = lower(expr, opts)?;
                (None, if opts.optimize { sift_ir::opt::optimize_owned(lowered) } else { lowered })
            }
        };
        let program = codegen(&optimized, opts)?;
        let interp = |program: &[Insn]| {
            sift_bpf::interp::Program::new(program).map(Runner::Interp).map_err(|e| Error::Program(e.to_string()))
        };
        // The JIT compiles the classic BPF program rather than the predicate
        // (`JitFilter::from_pred_with`): the cBPF optimizer underneath shares
        // loads and regroups compares of one value, which the direct path
        // does not do yet; `sift bench --engines jit,jit-pred` compares them.
        let jit = || sift_jit::JitFilter::from_program(&program);
        let runner = match engine {
            Engine::Meta => match jit() {
                Ok(j) => Runner::Jit(j),
                Err(_) => interp(&program)?,
            },
            Engine::Jit => Runner::Jit(jit().map_err(|e| Error::Engine(format!("jit: {e}")))?),
            Engine::Interp => interp(&program)?,
            Engine::Dynamic => {
                let pred = pred.as_ref().unwrap_or(&optimized);
                let hint = "engine dynamic-or-jit runs such a filter with the JIT";
                Runner::Dynamic(
                    sift_dynamic::DynamicFilter::from_pred(pred, opts.linktype)
                        .map_err(|e| Error::Engine(format!("dynamic engine: {e} ({hint})")))?,
                )
            }
            Engine::DynamicOrJit => {
                match sift_dynamic::DynamicFilter::from_pred(pred.as_ref().unwrap_or(&optimized), opts.linktype) {
                    Ok(d) => Runner::Dynamic(d),
                    Err(_) => match jit() {
                        Ok(j) => Runner::Jit(j),
                        Err(_) => interp(&program)?,
                    },
                }
            }
            // The oracle evaluates the predicate as lowered, not the
            // optimizer's output (`-O` or not, verdicts are the same).
            Engine::Reference => Runner::Reference(pred.unwrap_or(optimized)),
        };
        Ok(Filter { runner, program })
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
        Ok(Filter { runner, program })
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
            Runner::Interp(p) => {
                return p.count_matches_hinted(items, packet, sift_jit::PREFETCH_AHEAD, sift_jit::simd::prefetch)
            }
            Runner::Dynamic(dy) => return dy.count_matches(items, packet),
            Runner::Reference(pred) => packets
                .filter(|&(data, wire_len)| sift_ir::matches(pred, sift_ir::PacketView { data, wire_len }))
                .count(),
        };
        n as u64
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

    /// The classic BPF program (what `-d` prints and the kernel would run).
    pub fn program(&self) -> &[Insn] {
        &self.program
    }
}
