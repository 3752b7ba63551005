//! The engines a benchmark compares, as a name → constructor table.
//!
//! Adding an engine is one entry in [`ENGINES`]; for a new
//! [`sift::Engine`] variant it is, e.g.
//! `EngineSpec { name: "jit", default: true, about: "…", build: |f, s| build_sift(f, s, sift::Engine::Jit) },`

use std::time::Instant;

use crate::filters::FilterSpec;
use sift::PacketRef;
use crate::handwritten;
use crate::libpcap::Libpcap;

/// A compiled filter, ready to run over packets.
pub trait Runner {
    /// Does the packet (captured bytes, original length) match?
    fn matches(&self, data: &[u8], wire_len: u32) -> bool;

    /// Matching packets in `packets` (one whole pass). The default loop is
    /// monomorphized for each implementation, so `matches` is called
    /// statically; engines with a batch entry point override it.
    fn count(&self, packets: &[PacketRef<'_>]) -> u64 {
        let mut n = 0u64;
        for p in packets {
            n += u64::from(self.matches(p.data(), p.wire_len()));
        }
        n
    }

    /// The program's size: cBPF instructions for BPF engines, machine-code
    /// bytes for native ones; `None` when the notion does not apply.
    fn program_size(&self) -> Option<usize> {
        None
    }
}

/// What an engine compiles for.
#[derive(Clone, Debug)]
pub struct Setup {
    /// sift's compile options (link type, snapshot length, savefile mode).
    pub opts: sift::CompileOptions,
    /// The capture's LINKTYPE_* value.
    pub linktype: u32,
    /// The DLT value to give libpcap.
    pub dlt: u32,
}

impl Setup {
    /// The setup for a savefile of `linktype` (LINKTYPE_*) and `snaplen`,
    /// compiled as `tcpdump -r` does.
    pub fn for_capture(linktype: u32, snaplen: u32) -> Setup {
        let lt = sift::LinkType::from_linktype(linktype);
        Setup {
            opts: sift::CompileOptions {
                linktype: lt,
                snaplen,
                netmask: None,
                savefile: true,
                swapped: false,
                optimize: true,
                names: None,
            },
            linktype,
            dlt: lt.0,
        }
    }
}

/// A built engine: the runner and how long compiling took.
pub struct Built {
    /// The compiled filter.
    pub runner: Box<dyn Runner>,
    /// Compile time in nanoseconds (for sift: parse + lower + optimize +
    /// the engine's compile (the JIT's, or cBPF codegen and the
    /// interpreter's preparation); for libpcap: `pcap_compile` alone).
    pub compile_ns: u64,
}

/// An engine's constructor: `Ok(None)` when the engine does not apply (no
/// hand-written version of this filter, libpcap not installed), `Err`
/// when compiling fails.
pub type BuildFn = fn(&FilterSpec, &Setup) -> Result<Option<Built>, String>;

/// One row of the engine table.
#[derive(Clone, Copy)]
pub struct EngineSpec {
    /// Command-line name.
    pub name: &'static str,
    /// Part of the default `--engines` list.
    pub default: bool,
    /// One-line description.
    pub about: &'static str,
    /// The constructor.
    pub build: BuildFn,
}

/// Nanoseconds since `t`.
pub fn elapsed_ns(t: Instant) -> u64 {
    u64::try_from(t.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// Which of the facade's entry points a [`SiftRunner`] counts with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Entry {
    /// `Filter::count_packets`: the batch entry point for packets kept as
    /// `PacketRef`s (the JIT's count function walks them in place).
    CountPackets,
    /// `Filter::count_matches`: packets in any structure (the JIT gathers
    /// them 64 at a time).
    CountMatches,
    /// `Filter::verdicts`: each packet's verdict written (the JIT's
    /// verdict function), then the `true`s counted.
    Verdicts,
    /// `Filter::matches`, one call per packet.
    Matches,
}

/// A sift engine behind the facade, counting through one of its entry
/// points.
pub struct SiftRunner {
    /// The filter.
    pub filter: sift::Filter,
    /// The entry point.
    pub entry: Entry,
    /// [`Entry::Verdicts`]'s verdicts, kept from one pass to the next (so
    /// that passes do not time an allocation).
    verdicts: std::cell::RefCell<Vec<bool>>,
}

impl Runner for SiftRunner {
    #[inline]
    fn matches(&self, data: &[u8], wire_len: u32) -> bool {
        self.filter.matches(data, wire_len)
    }

    fn count(&self, packets: &[PacketRef<'_>]) -> u64 {
        match self.entry {
            Entry::CountPackets => self.filter.count_packets(packets),
            Entry::CountMatches => self.filter.count_matches(packets, |p| (p.data(), p.wire_len())),
            Entry::Verdicts => {
                let mut verdicts = self.verdicts.borrow_mut();
                verdicts.resize(packets.len(), false);
                self.filter.verdicts(packets, &mut verdicts);
                verdicts.iter().filter(|&&v| v).count() as u64
            }
            Entry::Matches => packets.iter().filter(|p| self.filter.matches(p.data(), p.wire_len())).count() as u64,
        }
    }

    /// Machine-code bytes when the JIT runs the filter, else cBPF
    /// instructions (`None` if there is no classic BPF program).
    fn program_size(&self) -> Option<usize> {
        self.filter.code_size().or_else(|| self.filter.program().ok().map(<[sift::Insn]>::len))
    }
}

/// Builds `filter` with sift's `engine`, timing `Filter::with_engine`,
/// counting through `Filter::count_packets`.
pub fn build_sift(
    filter: &FilterSpec,
    setup: &Setup,
    engine: sift::Engine,
) -> Result<Option<Built>, String> {
    build_sift_with(filter, setup, engine, Entry::CountPackets)
}

/// Builds `filter` with sift's `engine`, timing `Filter::with_engine`,
/// counting through `entry`.
pub fn build_sift_with(
    filter: &FilterSpec,
    setup: &Setup,
    engine: sift::Engine,
    entry: Entry,
) -> Result<Option<Built>, String> {
    let t = Instant::now();
    let f = sift::Filter::with_engine(&filter.expr, &setup.opts, engine).map_err(|e| e.render())?;
    let compile_ns = elapsed_ns(t);
    Ok(Some(Built {
        runner: Box::new(SiftRunner { filter: f, entry, verdicts: Default::default() }),
        compile_ns,
    }))
}

/// sift's JIT of the optimized classic BPF program (the facade's `jit`
/// engine compiles the optimized predicate directly): to compare the two
/// paths.
struct JitCbpfRunner {
    jit: sift_jit::JitFilter,
}

impl Runner for JitCbpfRunner {
    #[inline]
    fn matches(&self, data: &[u8], wire_len: u32) -> bool {
        self.jit.run(data, wire_len) != 0
    }

    fn count(&self, packets: &[PacketRef<'_>]) -> u64 {
        self.jit.count_packets(packets)
    }

    fn program_size(&self) -> Option<usize> {
        Some(self.jit.code_size())
    }
}

/// Compiles through classic BPF (`sift::compile`: parse, lower, optimize,
/// codegen + cBPF optimizer), then JITs the program; the whole pipeline is
/// timed.
fn build_jit_cbpf(filter: &FilterSpec, setup: &Setup) -> Result<Option<Built>, String> {
    let t = Instant::now();
    let compiled = sift::compile(&filter.expr, &setup.opts).map_err(|e| e.render())?;
    let jit = sift_jit::JitFilter::from_program(&compiled.program).map_err(|e| e.to_string())?;
    let compile_ns = elapsed_ns(t);
    Ok(Some(Built {
        runner: Box::new(JitCbpfRunner { jit }),
        compile_ns,
    }))
}

/// The reference evaluator has no program: report no size.
struct ReferenceRunner(sift::Filter);

impl Runner for ReferenceRunner {
    #[inline]
    fn matches(&self, data: &[u8], wire_len: u32) -> bool {
        self.0.matches(data, wire_len)
    }
}

fn build_reference(filter: &FilterSpec, setup: &Setup) -> Result<Option<Built>, String> {
    let t = Instant::now();
    let f = sift::Filter::with_engine(&filter.expr, &setup.opts, sift::Engine::Reference)
        .map_err(|e| e.render())?;
    let compile_ns = elapsed_ns(t);
    Ok(Some(Built {
        runner: Box::new(ReferenceRunner(f)),
        compile_ns,
    }))
}

fn build_libpcap(filter: &FilterSpec, setup: &Setup) -> Result<Option<Built>, String> {
    let Some(lib) = Libpcap::get() else {
        return Ok(None);
    };
    let (f, compile_ns) = lib.compile(&filter.expr, setup.dlt, setup.opts.snaplen, true)?;
    Ok(Some(Built {
        runner: Box::new(f),
        compile_ns,
    }))
}

fn build_handwritten(filter: &FilterSpec, setup: &Setup) -> Result<Option<Built>, String> {
    let t = Instant::now();
    let r = handwritten::lookup(filter, setup.linktype);
    let compile_ns = elapsed_ns(t);
    Ok(r.map(|runner| Built { runner, compile_ns }))
}

/// Accepts every packet: the cost of the loop itself.
struct AcceptAll;

impl Runner for AcceptAll {
    #[inline]
    fn matches(&self, data: &[u8], _wire_len: u32) -> bool {
        // Keep the packet "used" so the loop is not optimized away.
        std::hint::black_box(data);
        true
    }
}

/// `accept-all` applies to the empty expression only (its count must
/// agree with the others'), and is reported once per workload.
fn build_accept_all(filter: &FilterSpec, _setup: &Setup) -> Result<Option<Built>, String> {
    if !filter.expr.trim().is_empty() {
        return Ok(None);
    }
    Ok(Some(Built {
        runner: Box::new(AcceptAll),
        compile_ns: 0,
    }))
}

/// Every engine the harness knows, in presentation order.
pub const ENGINES: &[EngineSpec] = &[
    EngineSpec {
        name: "libpcap",
        default: true,
        about: "installed libpcap via dlopen: pcap_compile (optimizer on) + pcap_offline_filter",
        build: build_libpcap,
    },
    EngineSpec {
        name: "jit",
        default: true,
        about: "sift's x86-64 JIT straight from the optimized predicate (sift::Engine::Jit; size = code bytes)",
        build: |f, s| build_sift(f, s, sift::Engine::Jit),
    },
    EngineSpec {
        name: "jit-gather",
        default: false,
        about: "jit through the generic batch entry point (Filter::count_matches: packets gathered 64 at a time), not in place",
        build: |f, s| build_sift_with(f, s, sift::Engine::Jit, Entry::CountMatches),
    },
    EngineSpec {
        name: "jit-verdicts",
        default: false,
        about: "jit writing each packet's verdict (Filter::verdicts: the verdict function), then counting them",
        build: |f, s| build_sift_with(f, s, sift::Engine::Jit, Entry::Verdicts),
    },
    EngineSpec {
        name: "jit-single",
        default: false,
        about: "jit one call per packet (Filter::matches)",
        build: |f, s| build_sift_with(f, s, sift::Engine::Jit, Entry::Matches),
    },
    EngineSpec {
        name: "jit-cbpf",
        default: false,
        about: "sift's x86-64 JIT of the optimized cBPF program (sift::compile + JitFilter::from_program; size = code bytes)",
        build: build_jit_cbpf,
    },
    EngineSpec {
        name: "dynamic",
        default: false,
        about: "sift's dynamic engine (passes of CISC instructions; filters outside its instruction set are skipped)",
        build: |f, s| match build_sift(f, s, sift::Engine::Dynamic) {
            Err(e) if e.contains("dynamic engine:") => Ok(None),
            other => other,
        },
    },
    EngineSpec {
        name: "interp",
        default: true,
        about: "sift's cBPF interpreter (sift::Engine::Interp)",
        build: |f, s| build_sift(f, s, sift::Engine::Interp),
    },
    EngineSpec {
        name: "reference",
        default: false,
        about: "sift's reference evaluator over the predicate IR (slow)",
        build: build_reference,
    },
    EngineSpec {
        name: "handwritten",
        default: true,
        about: "hand-coded Rust filters for the standard set (Ethernet)",
        build: build_handwritten,
    },
    EngineSpec {
        name: "accept-all",
        default: true,
        about: "a filter that accepts everything (the loop's own cost; empty expression only)",
        build: build_accept_all,
    },
];

/// Resolves a comma-separated engine list (`all` = every engine).
pub fn select_engines(list: &str) -> Result<Vec<EngineSpec>, String> {
    let mut out: Vec<EngineSpec> = Vec::new();
    for word in list.split(',').map(str::trim).filter(|w| !w.is_empty()) {
        if word == "all" {
            for e in ENGINES {
                if !out.iter().any(|o| o.name == e.name) {
                    out.push(*e);
                }
            }
            continue;
        }
        let e = ENGINES.iter().find(|e| e.name == word).ok_or_else(|| {
            let names: Vec<&str> = ENGINES.iter().map(|e| e.name).collect();
            format!("unknown engine '{word}' (known: {})", names.join(", "))
        })?;
        if !out.iter().any(|o| o.name == e.name) {
            out.push(*e);
        }
    }
    if out.is_empty() {
        return Err("no engines selected".into());
    }
    Ok(out)
}

/// The default engine list.
pub fn default_engines() -> Vec<EngineSpec> {
    ENGINES.iter().filter(|e| e.default).copied().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_selection() {
        assert_eq!(
            select_engines("interp,interp,handwritten").unwrap().len(),
            2
        );
        assert_eq!(select_engines("all").unwrap().len(), ENGINES.len());
        assert!(select_engines("nope").is_err());
        assert!(select_engines("").is_err());
        assert!(default_engines().iter().all(|e| e.name != "reference"));
    }
}
