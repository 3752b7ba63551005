//! A JIT compiler from classic BPF to x86-64 machine code, with exactly the
//! semantics of `sift_bpf::interp` (libpcap 1.10.3 `bpf_filter`): an
//! out-of-bounds load, `div`/`mod` by 0 and running off the end return 0,
//! shifts by `X >= 32` give 0, constant shifts act modulo 32, scratch memory
//! starts zeroed, and a run gives up (returns 0) after 64 backward jumps.
//!
//! ```
//! use sift_bpf::insn::op::*;
//! use sift_bpf::Insn;
//! use sift_jit::{JitError, JitFilter};
//!
//! // ldh [12]; jeq #0x800 jt 2 jf 3; ret #262144; ret #0
//! let prog = [
//!     Insn::stmt(LD | H | ABS, 12),
//!     Insn::jump(JMP | JEQ | K, 0x800, 0, 1),
//!     Insn::stmt(RET | K, 262144),
//!     Insn::stmt(RET | K, 0),
//! ];
//! match JitFilter::from_program(&prog) {
//!     Ok(filter) => {
//!         let mut packet = [0u8; 60];
//!         packet[12] = 0x08;
//!         assert_eq!(filter.run(&packet, 60), 262144);
//!         assert_eq!(filter.run(&packet[..13], 60), 0); // too short
//!     }
//!     Err(JitError::Unsupported) => {} // not x86-64 Linux
//!     Err(e) => panic!("{e}"),
//! }
//! ```
//!
//! [`JitFilter::from_pred`] compiles a `sift_ir::Pred` straight to machine
//! code (no cBPF in between) with the semantics of `sift_ir::eval`;
//! [`JitFilter::from_shared_pred`] does so from a predicate shared with the
//! caller (`Arc`), which the filter keeps for its count function.
//!
//! What the generated code does: A and X live in `eax`/`ecx`, the packet
//! pointer and captured length in `rdi`/`rsi`, scratch memory in the stack
//! red zone (only the words a program reads are zeroed); each load has one
//! bounds compare, none when every path already checked a longer length;
//! loads byte-swap with `bswap`/`rol`; a load followed by `jeq`/`jset` on a
//! constant compares the packet bytes with the constant in network order
//! when A is dead afterwards; branches fall through to the next block and
//! use 8-bit displacements where they fit (every jump that can has one). A
//! program whose first instruction is `ret #k` (the empty expression) gets
//! no code at all: its verdict is `k`.
//!
//! Filters also get a count function, compiled by the first
//! [`JitFilter::count_packets`] or [`JitFilter::count_matches`] given at
//! least [`BATCH`] packets (so that filters never counted with do not pay
//! for it): the same code looping over the packets, every `ret` (every
//! accept, for a predicate) an increment of a count (or nothing, for
//! `ret #0`), and no verdict written anywhere. It walks a slice of [`PacketRef`]s (address,
//! captured length and wire length of each packet): the caller's own,
//! in place and in one call, with [`JitFilter::count_packets`]; or, with
//! [`JitFilter::count_matches`] (packets held in any structure), a window
//! of them gathered from the caller's items, one call per [`BATCH`]
//! packets. [`JitFilter::verdicts`] runs the same loop writing each
//! packet's verdict too (the *verdict function*). (A predicate whose values
//! need more than four registers at once has neither: these functions keep
//! their loop in the others.)
//! [`JitFilter::for_each_verdict`] and [`JitFilter::run_batch`] call the
//! per-packet function for each packet.
//!
//! Code pages are never both writable and executable: code up to 64 KiB
//! goes into a process-private memory file mapped read + execute only and
//! written with `pwrite` (one system call per function, made by the
//! function's first use: the per-packet function's first call, the count
//! or verdict function's first batch; filters share pages;
//! the file is copied for the child after `fork`); elsewhere (no
//! `memfd_create`, larger code, or `SIFT_JIT_CODE=mprotect`) pages are
//! mapped read + write while the code is copied in, then switched to read +
//! execute with `mprotect`.
//! On targets other than x86-64 Linux the crate compiles and
//! [`JitFilter::from_program`] returns [`JitError::Unsupported`].
#![deny(unsafe_code)]
#![warn(missing_docs)]

use sift_bpf::validate::ValidateError;
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
use sift_bpf::validate::ValidateErrorKind;
use sift_bpf::Insn;
use sift_ir::Pred;
use std::fmt;
use std::sync::Arc;

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
#[allow(unsafe_code)]
mod exec;
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod x64;

mod packet;
pub mod simd;

pub use packet::PacketRef;

/// How many packets ahead [`JitFilter::for_each_verdict`] prefetches the
/// headers of, and [`JitFilter::count_matches`] when the packets span much
/// memory (else [`PREFETCH_NEAR`]).
/// (Measured with `sift bench` on `mixed` and `web`: 32 was the best of
/// 0, 1, 4, 8, 16, 32, 64; 0 was up to 2.4× slower on `mixed`.)
pub const PREFETCH_AHEAD: usize = 32;

/// How many packets [`JitFilter::count_matches`] hands to the count
/// function at once (and the fewest it compiles the count function for).
/// (Measured with `sift bench` on `web` and `pingflood`, 2026-11-26: 32,
/// 64 and 256 within noise of each other.)
pub const BATCH: usize = 64;

/// On the per-packet path ([`JitFilter::for_each_verdict`], and
/// [`JitFilter::count_matches`] without a count function), packets
/// whose bytes lie at most this far apart on average (small packets stored
/// one after another, as in a capture file read whole) are not prefetched:
/// the processor's own prefetcher streams them, and a prefetch issued
/// between two calls only competes with it (on the 1M-packet `pingflood`
/// workload, 98-byte packets 144 bytes apart, it cost 10-30%). The count
/// function prefetches whatever the gap: issued from inside its loop, the
/// prefetch makes that same workload 10-30% *faster* (`sift bench
/// --workload pingflood`, 2026-11-26), and so does the interpreter's when
/// the facade gives it a prefetch (`Program::count_matches_hinted`).
pub const PREFETCH_MIN_GAP: usize = 256;

/// Whether a cBPF opcode loads packet bytes (`ld`/`ldx` with `abs`, `ind`
/// or `msh` addressing).
pub(crate) const fn reads_packet(code: u16) -> bool {
    use sift_bpf::insn::op::*;
    matches!(code & 0x07, LD | LDX) && matches!(code & 0xe0, ABS | IND | MSH)
}

/// What the per-packet path prefetches while item `i` (captured bytes
/// `data`) is filtered: the headers of the item [`PREFETCH_AHEAD`] places
/// further, unless the packets lie close together ([`PREFETCH_MIN_GAP`]).
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
#[inline(always)]
fn prefetch_target<T>(
    items: &[T],
    i: usize,
    data: &[u8],
    packet: &impl Fn(&T) -> (&[u8], u32),
) -> Option<*const u8> {
    let far = packet(items.get(i + PREFETCH_AHEAD)?).0.as_ptr();
    ((far as usize).abs_diff(data.as_ptr() as usize) > PREFETCH_MIN_GAP * PREFETCH_AHEAD)
        .then_some(far)
}

/// How many packets ahead the count function prefetches when the packets
/// to count span less than [`PREFETCH_FAR_SPAN`] bytes: lines within the
/// last-level cache arrive sooner, and prefetched further ahead they can
/// be lost before they are used.
pub const PREFETCH_NEAR: usize = 8;

/// The memory packets to count must span (estimated from the first ones)
/// for the count function to prefetch [`PREFETCH_AHEAD`] packets ahead
/// rather than [`PREFETCH_NEAR`].
pub const PREFETCH_FAR_SPAN: usize = 64 << 20;

const _: () = assert!(PREFETCH_NEAR <= PREFETCH_AHEAD);

/// Whether the batch entry points prefetch every packet's header line
/// too, whatever the filter and wherever the packets lie, [`PREFETCH_AHEAD`]
/// packets ahead: the line of the deepest header byte the filter reads
/// that may lie on a packet's second line (`x64::pred::deep_line` for the
/// JIT's count function, `sift_bpf::interp::Program::header_line` for the
/// interpreter's batch loop). Otherwise only long predicates get it, only
/// for packets far apart beyond the caches, and packets within the caches
/// are prefetched [`PREFETCH_NEAR`] ahead.
///
/// Chosen once per process from the processor: on for AMD processors, off
/// for the others. The environment variable `SIFT_PREFETCH=header-lines`
/// or `SIFT_PREFETCH=first-line` chooses instead (to measure both on one
/// machine). Measured with `sift bench` (docs/performance.md,
/// performance-history.md session 17): on an AMD EPYC Zen 5 (family 0x1A)
/// the header line took the JIT from 8.2 to 5.8–6.1 ns per packet at the
/// median filter on `tcp5555` and from 8.8 to 7.6–8.5 on `mixed`, and the
/// interpreter from 23–25 to 8–12 ns on both; on `web`, 32 ahead
/// instead of 8 took the JIT from 2.1–2.5 to 1.8–1.9 ns. On the virtual
/// Intel Xeon of the earlier sessions the same prefetch made the shorter
/// filters up to 27% slower on those workloads, and 32 ahead within the
/// caches lost lines before their use. Other AMD generations and other
/// vendors were not measured.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
pub fn prefetch_header_lines() -> bool {
    static CHOICE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *CHOICE.get_or_init(|| match std::env::var("SIFT_PREFETCH").as_deref() {
        Ok("header-lines") => true,
        Ok("first-line") => false,
        _ => {
            let id = std::arch::x86_64::__cpuid(0);
            // The vendor string "AuthenticAMD": ebx, edx, ecx.
            (id.ebx, id.edx, id.ecx) == (0x6874_7541, 0x6974_6e65, 0x444d_4163)
        }
    })
}

/// Whether the batch entry points prefetch every packet's header line (see
/// the x86-64 Linux version): never on other targets, which have no JIT.
#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
pub fn prefetch_header_lines() -> bool {
    false
}

/// How the count function prefetches the packets it filters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Prefetch {
    /// How many packets ahead.
    pub(crate) ahead: usize,
    /// Whether it also prefetches the line of the deepest header byte the
    /// filter reads (when that may be a packet's second line; see
    /// `x64::pred::deep_line`), not only the first.
    pub(crate) deep: bool,
}

impl Prefetch {
    /// Each packet prefetched as it is filtered: nothing ahead.
    pub(crate) const NONE: Prefetch = Prefetch { ahead: 0, deep: false };
}

/// How the count function prefetches, from the `first` packets (the
/// average distance in memory of up to a window's worth of them) and the
/// number of packets to count: [`PREFETCH_AHEAD`] ahead when they span more
/// than [`PREFETCH_FAR_SPAN`] bytes, else [`PREFETCH_NEAR`]; the deeper line
/// too when they span that much and lie at least [`PREFETCH_MIN_GAP`] bytes
/// apart on average.
///
/// The distance should cover the time a packet's first line takes to
/// arrive. Packets far beyond the caches (the 1M-packet workloads: hundreds
/// of megabytes) come from memory and need the long distance (`mixed`:
/// 3.44× libpcap with 32, 3.15× with 8). Packets that fit in the
/// last-level cache (`web`: 20,000 packets, 15 MB) arrive sooner, and
/// prefetching them 32 ahead can lose the lines before they are used: in
/// some processes (every engine slower then, the JIT most) the JIT filtered
/// `icmp`, `host` and `swift4` in ~9 ns per packet 32 ahead and 5–6 ns 8
/// ahead (the hand-written filter 4–7 ns), 2026-11-26.
///
/// The deeper line: a packet whose first line is prefetched but whose
/// ports or addresses lie on its second waits for that line, and a filter
/// whose code per packet is long cannot run far enough ahead to overlap
/// those waits. Prefetching that line too (`sift bench --workload
/// mixed,tcp5555`, 2026-11-27, five alternated runs) took `swift6` from
/// 40.1 to 26.9 ns per packet on `mixed` and from 44.6 to 33.8 on
/// `tcp5555`, `ftp200` from 28.6 to 25.6 on `tcp5555`; only the count
/// functions of long predicates act on the flag (shorter filters lost up
/// to 27%: `x64::pred::DEEP_LINE_TESTS`). Where the packets lie close
/// together (`pingflood`: 98-byte packets 144 bytes apart) the processor
/// streams those lines anyway, and the extra prefetch made most filters
/// 5–40% slower; on the caches' data (`web`) a second prefetch was slower
/// too (sessions 9 and 14 of docs/performance-history.md).
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
fn prefetch_plan(first: &[PacketRef<'_>], packets: usize) -> Prefetch {
    prefetch_plan_for(first, packets, prefetch_header_lines())
}

/// [`prefetch_plan`] under the given choice of [`prefetch_header_lines`]:
/// when `header_lines`, [`PREFETCH_AHEAD`] ahead and the deeper line for
/// any packets.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
fn prefetch_plan_for(first: &[PacketRef<'_>], packets: usize, header_lines: bool) -> Prefetch {
    if header_lines {
        return Prefetch { ahead: PREFETCH_AHEAD, deep: true };
    }
    let first = &first[..first.len().min(exec::WINDOW)];
    let (Some(a), Some(b)) = (first.first(), first.last()) else {
        return Prefetch { ahead: PREFETCH_NEAR, deep: false };
    };
    let gap = b.addr().abs_diff(a.addr()) / first.len().saturating_sub(1).max(1);
    if gap.saturating_mul(packets) > PREFETCH_FAR_SPAN {
        Prefetch { ahead: PREFETCH_AHEAD, deep: gap >= PREFETCH_MIN_GAP }
    } else {
        Prefetch { ahead: PREFETCH_NEAR, deep: false }
    }
}

/// The checks of `sift_bpf::interp::Program::new` (those of
/// `sift_bpf::validate`, stricter, first: cheaper than building an
/// interpreter program, which only the programs it refuses get).
fn check_runnable(prog: &[Insn]) -> Result<(), JitError> {
    if sift_bpf::validate::validate(prog).is_err() {
        sift_bpf::interp::Program::new(prog).map_err(JitError::Invalid)?;
    }
    Ok(())
}

/// Why a program could not be compiled.
#[derive(Debug)]
pub enum JitError {
    /// The program is not runnable (the checks of
    /// `sift_bpf::interp::Program::new`: empty, too long, unknown opcode,
    /// scratch index >= 16, jump outside the program).
    Invalid(ValidateError),
    /// This target has no JIT (only x86-64 Linux has one).
    Unsupported,
    /// The generated code would be too large for 32-bit jump offsets.
    TooLarge,
    /// A predicate the direct compiler refused could not be compiled to
    /// classic BPF either.
    Codegen(sift_bpf::codegen::CodegenError),
    /// Mapping or protecting the code pages failed.
    Memory(std::io::Error),
}

impl fmt::Display for JitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JitError::Invalid(e) => write!(f, "invalid program: {e}"),
            JitError::Unsupported => f.write_str("no JIT for this target (x86-64 Linux only)"),
            JitError::TooLarge => f.write_str("the program is too large to JIT"),
            JitError::Codegen(e) => write!(f, "cannot compile the predicate: {e}"),
            JitError::Memory(e) => write!(f, "cannot map executable memory: {e}"),
        }
    }
}

impl std::error::Error for JitError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            JitError::Invalid(e) => Some(e),
            JitError::Memory(e) => Some(e),
            JitError::Codegen(e) => Some(e),
            _ => None,
        }
    }
}

/// What a filter's count function is compiled from.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
#[derive(Debug)]
enum CountSource {
    /// Nothing: a constant filter.
    None,
    /// The classic BPF program the filter was compiled from.
    Program(Box<[Insn]>),
    /// The predicate the filter was compiled from (shared with the
    /// caller, not copied), and its accept value.
    Pred(Arc<Pred>, u32),
}

/// A filter's batch functions, each compiled on first use (`None` inside:
/// the filter has none).
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
#[derive(Debug, Default)]
struct BatchCode {
    count: std::sync::OnceLock<Option<exec::CountBuffer>>,
    verdicts: std::sync::OnceLock<Option<exec::VerdictBuffer>>,
    /// The interpreter's form of a classic BPF source, for
    /// `JitFilter::run_uninstalled` (built by its first call).
    interp: std::sync::OnceLock<Option<sift_bpf::interp::Program>>,
}

/// A classic BPF program or a predicate compiled to native code.
///
/// Immutable once built (but for the count function, compiled on first
/// use); `Send + Sync`, so one filter can run on many threads. Dropping it
/// removes the code.
#[derive(Debug)]
pub struct JitFilter {
    /// The per-packet function, installed by its first call (see
    /// `exec::LazyExec`); none for a constant program (its verdict is
    /// `constant`).
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    code: Option<exec::LazyExec>,
    /// The count and verdict functions, each compiled from `source` by the
    /// first batch call that needs it ([`JitFilter::count_packets`] or
    /// [`JitFilter::count_matches`], [`JitFilter::verdicts`]) given at
    /// least [`BATCH`] packets. Boxed: a filter is moved around whole and
    /// most are never counted with; kept small (120 bytes; test
    /// `a_filter_is_small`), it is copied without a call to `memcpy`.
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    batch: std::sync::OnceLock<Box<BatchCode>>,
    /// What the count function is compiled from.
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    source: CountSource,
    insns: usize,
    /// Whether the code may read packet bytes (if not, the batch entry
    /// points prefetch nothing).
    #[cfg_attr(not(all(target_arch = "x86_64", target_os = "linux")), allow(dead_code))]
    reads_packet: bool,
    /// The verdict of every packet when the program starts with `ret #k`
    /// (the empty expression): no code is generated, none runs.
    constant: Option<u32>,
}

impl JitFilter {
    /// Compiles `prog`. It must pass the checks of
    /// `sift_bpf::interp::Program::new` (which accepts everything libpcap
    /// runs, including backward `ja` and scratch reads before writes); use
    /// `sift_bpf::validate::validate` first for the kernel's stricter rules.
    pub fn from_program(prog: &[Insn]) -> Result<JitFilter, JitError> {
        #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
        return Self::compile_program(prog);
        #[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
        {
            check_runnable(prog)?;
            Err(JitError::Unsupported)
        }
    }

    /// A filter with per-packet code `code` and what its count function
    /// is compiled from.
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    fn with_code(code: exec::LazyExec, source: CountSource, insns: usize, reads_packet: bool) -> JitFilter {
        JitFilter { code: Some(code), batch: std::sync::OnceLock::new(), source, insns, reads_packet, constant: None }
    }

    /// The filter of a program whose verdict is always `k`: no code.
    fn constant(insns: usize, k: u32) -> JitFilter {
        JitFilter {
            #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
            code: None,
            #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
            batch: std::sync::OnceLock::new(),
            #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
            source: CountSource::None,
            insns,
            reads_packet: false,
            constant: Some(k),
        }
    }

    /// [`JitFilter::from_program`] on x86-64 Linux: the compiler makes the
    /// checks of `sift_bpf::interp::Program::new` in its first pass over
    /// the program.
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    fn compile_program(prog: &[Insn]) -> Result<JitFilter, JitError> {
        if let Some(first) = prog.first().filter(|i| i.code == sift_bpf::insn::op::RET | sift_bpf::insn::op::K) {
            check_runnable(prog)?;
            return Ok(Self::constant(prog.len(), first.k));
        }
        let compiled = x64::compile(prog, x64::Function::Single, |c| {
            let code = exec::LazyExec::compiled(c.code).map_err(JitError::Memory)?;
            Ok(Self::with_code(code, CountSource::Program(prog.into()), prog.len(), c.reads_packet))
        });
        match compiled {
            Ok(filter) => filter,
            Err(x64::CompileError::TooLarge) => Err(JitError::TooLarge),
            Err(x64::CompileError::NotRunnable) => Err(JitError::Invalid(match sift_bpf::interp::Program::new(prog) {
                Err(e) => e,
                // Not reached: the compiler refuses what `Program::new`
                // refuses (test `runnable_is_what_the_interpreter_runs`).
                Ok(_) => ValidateError { pc: None, insn: None, kind: ValidateErrorKind::UnknownOpcode },
            })),
        }
    }

    /// Compiles a predicate straight to machine code (no classic BPF in
    /// between), returning `sift_bpf::codegen::DEFAULT_SNAPLEN` (262144)
    /// for accepted packets, like the cBPF `codegen` with default options.
    /// See [`JitFilter::from_pred_with`].
    pub fn from_pred(pred: &Pred) -> Result<JitFilter, JitError> {
        Self::from_pred_with(pred, sift_bpf::codegen::DEFAULT_SNAPLEN)
    }

    /// Compiles a predicate straight to machine code: the filter returns
    /// `accept` when `pred` holds and 0 when it does not or its evaluation
    /// aborts (`sift_ir::eval` semantics). `protochain` (a bounded loop),
    /// trees nested deeper than 400 levels, or values needing more than
    /// nine registers go through `sift_bpf::codegen` and
    /// [`JitFilter::from_program`] instead; [`JitFilter::insn_count`] is
    /// then the cBPF length (0 for the direct path). The filter keeps a
    /// copy of `pred` for its count function;
    /// [`JitFilter::from_shared_pred`] shares the caller's instead.
    pub fn from_pred_with(pred: &Pred, accept: u32) -> Result<JitFilter, JitError> {
        Self::from_shared_pred(Arc::new(pred.clone()), accept)
    }

    /// [`JitFilter::from_pred_with`] on a shared predicate: the filter
    /// keeps `pred` itself (one more reference, no copy of the tree) to
    /// compile its count function from on first use.
    pub fn from_shared_pred(pred: Arc<Pred>, accept: u32) -> Result<JitFilter, JitError> {
        match *pred {
            Pred::True => return Ok(Self::constant(0, accept)),
            Pred::False => return Ok(Self::constant(0, 0)),
            _ => {}
        }
        #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
        if let Some(code) = x64::pred::compile(&pred, accept, x64::Function::Single, exec::LazyExec::compiled) {
            let code = code.map_err(JitError::Memory)?;
            return Ok(Self::with_code(code, CountSource::Pred(pred, accept), 0, true));
        }
        if !Self::is_supported() {
            return Err(JitError::Unsupported);
        }
        let opts = sift_bpf::codegen::CodegenOptions { snaplen: accept };
        let prog = sift_bpf::codegen::compile(&pred, &opts).map_err(JitError::Codegen)?;
        Self::from_program(&prog)
    }

    /// Whether this target has a JIT (x86-64 Linux).
    pub const fn is_supported() -> bool {
        cfg!(all(target_arch = "x86_64", target_os = "linux"))
    }

    /// Runs the filter on a packet: `data` holds the captured bytes,
    /// `wire_len` is the original length. Returns what the program returns
    /// (0 = reject), exactly as `sift_bpf::interp::Program::run` does.
    #[inline]
    pub fn run(&self, data: &[u8], wire_len: u32) -> u32 {
        #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
        if let Some(code) = &self.code {
            return match code.installed() {
                Some(installed) => installed.call(data, wire_len),
                None => self.run_first(data, wire_len),
            };
        }
        let _ = (data, wire_len);
        self.constant.unwrap_or(0)
    }

    /// [`JitFilter::run`]'s first call: installs the per-packet function,
    /// then runs it (or, if it cannot be installed, `run_uninstalled`).
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    #[cold]
    #[inline(never)]
    fn run_first(&self, data: &[u8], wire_len: u32) -> u32 {
        match self.code.as_ref().and_then(|c| c.get()) {
            Some(code) => code.call(data, wire_len),
            None => self.run_uninstalled(data, wire_len),
        }
    }

    /// [`JitFilter::run`] where the per-packet function could not be
    /// installed after the filter was compiled (memory ran out): the same
    /// verdict from what the filter was compiled from, through the
    /// interpreter (its program built once) or the reference evaluator.
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    #[cold]
    #[inline(never)]
    fn run_uninstalled(&self, data: &[u8], wire_len: u32) -> u32 {
        match &self.source {
            CountSource::None => self.constant.unwrap_or(0),
            CountSource::Program(prog) => {
                let interp = &self.batch.get_or_init(Box::default).interp;
                interp.get_or_init(|| sift_bpf::interp::Program::new(prog).ok()).as_ref().map_or(0, |p| p.run(data, wire_len))
            }
            CountSource::Pred(pred, accept) => {
                if sift_ir::matches(pred, sift_ir::PacketView { data, wire_len }) {
                    *accept
                } else {
                    0
                }
            }
        }
    }

    /// Runs the filter on many packets, `(captured bytes, wire length)`
    /// each, writing verdict `i` to `out[i]`; stops at the shorter of the
    /// two slices. Runs as [`JitFilter::for_each_verdict`] does.
    pub fn run_batch(&self, packets: &[(&[u8], u32)], out: &mut [u32]) {
        let n = packets.len().min(out.len());
        self.for_each_verdict(&packets[..n], |&(d, w)| (d, w), |i, v| out[i] = v);
    }

    /// The number of items of `items` the filter accepts; `packet` gives
    /// an item's captured bytes and wire length. The batch entry point for
    /// packets held in any structure: a filter has a count function
    /// (compiled by the first call given at least [`BATCH`] items), which
    /// filters [`BATCH`] packets per call and
    /// counts the accepted ones itself, prefetching the first cache line
    /// (the headers) of the packet [`PREFETCH_AHEAD`] places further, or
    /// [`PREFETCH_NEAR`] when the items' packets span less than
    /// [`PREFETCH_FAR_SPAN`] bytes (if the filter reads packets at all),
    /// and, for packets spanning more that lie far apart, the line of the
    /// deepest header byte the filter reads as well.
    /// Fewer items, and other filters,
    /// run as [`JitFilter::for_each_verdict`] does; a constant filter (the
    /// empty expression) runs no code and calls `packet` for no item.
    #[inline]
    pub fn count_matches<T>(&self, items: &[T], packet: impl Fn(&T) -> (&[u8], u32)) -> u64 {
        #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
        if self.code.is_some() && items.len() >= BATCH {
            if let Some(counter) = self.counter() {
                return count_batched(counter, items, packet);
            }
        }
        if let Some(v) = self.constant {
            return if v != 0 { items.len() as u64 } else { 0 };
        }
        let mut n = 0u64;
        self.for_each_verdict(items, packet, |_, v| n += u64::from(v != 0));
        n
    }

    /// The number of `packets` the filter accepts: the batch entry point
    /// for packets kept as [`PacketRef`]s. The count function (compiled by
    /// the first call given at least [`BATCH`] packets) walks the slice in
    /// place, one call for all of it, prefetching the first cache line
    /// (the headers) of the packet [`PREFETCH_AHEAD`] places further, or
    /// [`PREFETCH_NEAR`] when the packets span less than
    /// [`PREFETCH_FAR_SPAN`] bytes (if the filter reads packets at all;
    /// the deeper line too as [`JitFilter::count_matches`] says):
    /// [`JitFilter::count_matches`] without gathering the packets first.
    /// Fewer packets, and other filters, run as
    /// [`JitFilter::for_each_verdict`] does.
    #[inline]
    pub fn count_packets(&self, packets: &[PacketRef<'_>]) -> u64 {
        #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
        if self.code.is_some() && packets.len() >= BATCH {
            if let Some(counter) = self.counter() {
                return counter.count_in_place(packets, prefetch_plan(packets, packets.len()));
            }
        }
        self.count_matches(packets, |p| (p.data(), p.wire_len()))
    }

    /// Each packet's verdict: `verdicts[i]` is set to whether the filter
    /// accepts `packets[i]` (stopping at the shorter of the two slices);
    /// returns how many it accepts. The verdict function (the count
    /// function that also writes each verdict, compiled by the first call
    /// given at least [`BATCH`] packets) walks the packets in place, one
    /// call for all of them, prefetching as [`JitFilter::count_packets`]
    /// does. Fewer packets, and other filters, run as
    /// [`JitFilter::for_each_verdict`] does.
    pub fn verdicts(&self, packets: &[PacketRef<'_>], verdicts: &mut [bool]) -> u64 {
        let n = packets.len().min(verdicts.len());
        let (packets, verdicts) = (&packets[..n], &mut verdicts[..n]);
        #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
        if self.code.is_some() && n >= BATCH {
            if let Some(verdicter) = self.verdicter() {
                return verdicter.verdicts_in_place(packets, prefetch_plan(packets, n), verdicts);
            }
        }
        let mut accepted = 0;
        self.for_each_verdict(packets, |p| (p.data(), p.wire_len()), |i, v| {
            verdicts[i] = v != 0;
            accepted += u64::from(v != 0);
        });
        accepted
    }

    /// The count function, compiled if it was not yet; `None` if the
    /// filter has none.
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    fn counter(&self) -> Option<&exec::CountBuffer> {
        let batch = self.batch.get_or_init(Box::default);
        batch.count.get_or_init(|| self.compile_batch(x64::Function::Count, exec::CountBuffer::new)).as_ref()
    }

    /// The verdict function, compiled if it was not yet; `None` if the
    /// filter has none (exactly when it has no count function).
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    fn verdicter(&self) -> Option<&exec::VerdictBuffer> {
        let batch = self.batch.get_or_init(Box::default);
        batch.verdicts.get_or_init(|| self.compile_batch(x64::Function::Verdicts, exec::VerdictBuffer::new)).as_ref()
    }

    /// Compiles `function` (a count or verdict function) from the filter's
    /// source and installs it with `install`.
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    fn compile_batch<B>(&self, function: x64::Function, install: fn(&[u8]) -> std::io::Result<B>) -> Option<B> {
        match &self.source {
            CountSource::None => None,
            CountSource::Program(prog) => x64::compile(prog, function, |c| install(c.code).ok()).ok().flatten(),
            CountSource::Pred(pred, accept) => x64::pred::compile(pred, *accept, function, install)?.ok(),
        }
    }

    /// Runs the filter on every item, in order, handing `(index, verdict)`
    /// to `verdict`, one call of the compiled code per item; while one
    /// packet is filtered the first cache line of the packet
    /// [`PREFETCH_AHEAD`] places further is prefetched (if the filter reads
    /// packets at all, and unless the packets lie close together in memory:
    /// [`PREFETCH_MIN_GAP`]).
    #[inline]
    pub fn for_each_verdict<T>(
        &self,
        items: &[T],
        packet: impl Fn(&T) -> (&[u8], u32),
        mut verdict: impl FnMut(usize, u32),
    ) {
        #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
        if let Some(code) = self.code.as_ref().and_then(|c| c.get()) {
            if !self.reads_packet {
                for (i, item) in items.iter().enumerate() {
                    let (data, wire_len) = packet(item);
                    verdict(i, code.call(data, wire_len));
                }
                return;
            }
            for (i, item) in items.iter().enumerate() {
                let (data, wire_len) = packet(item);
                if let Some(far) = prefetch_target(items, i, data, &packet) {
                    exec::prefetch(far);
                }
                verdict(i, code.call(data, wire_len));
            }
            return;
        }
        for (i, item) in items.iter().enumerate() {
            let (data, wire_len) = packet(item);
            verdict(i, self.run(data, wire_len));
        }
    }

    /// The number of cBPF instructions compiled.
    pub fn insn_count(&self) -> usize {
        self.insns
    }

    /// The size of the machine code in bytes.
    pub fn code_size(&self) -> usize {
        #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
        if let Some(code) = &self.code {
            return code.code_len();
        }
        0
    }

    /// A copy of the machine code of the count function (for
    /// disassembling), compiling it if it was not yet; empty if the filter
    /// has none (constant, a predicate needing more than four registers, no
    /// JIT here).
    pub fn count_code_bytes(&self) -> Vec<u8> {
        #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
        if let Some(counter) = self.counter() {
            return counter.code_bytes();
        }
        Vec::new()
    }

    /// A copy of the machine code of the per-packet function (for
    /// disassembling; empty where there is no JIT or no code).
    pub fn code_bytes(&self) -> Vec<u8> {
        #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
        if let Some(code) = &self.code {
            return code.code_bytes();
        }
        Vec::new()
    }

    /// The address of the first byte of machine code (for diagnostics,
    /// e.g. finding the mapping in `/proc/self/maps`).
    /// Installs the per-packet function if it was not yet (see
    /// [`JitFilter::run`]); 0 if there is none or it cannot be installed.
    pub fn code_addr(&self) -> usize {
        #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
        if let Some(code) = self.code.as_ref().and_then(|c| c.get()) {
            return code.addr();
        }
        0
    }
}

/// [`JitFilter::count_matches`] through the count function: packets
/// are gathered [`BATCH`] at a time into a window of [`PacketRef`]s and
/// counted by one call, which prefetches the packet [`prefetch_plan`]
/// says, from the gathered window.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
#[inline]
fn count_batched<T>(counter: &exec::CountBuffer, items: &[T], packet: impl Fn(&T) -> (&[u8], u32)) -> u64 {
    use exec::WINDOW;
    // A window of BATCH packets to filter and the PREFETCH_AHEAD after
    // them (which the count function prefetches), sliding by BATCH:
    // each item is gathered once. Places past the last item keep stale
    // (or empty) packets: those are only ever prefetched.
    let mut window = [PacketRef::EMPTY; WINDOW];
    /// Fills `window` from `items[from..]`.
    #[inline(always)]
    fn gather<'a, T>(
        window: &mut [PacketRef<'a>],
        items: &'a [T],
        from: usize,
        packet: &impl Fn(&T) -> (&[u8], u32),
    ) {
        for (place, item) in window.iter_mut().zip(items.get(from..).unwrap_or_default()) {
            let (data, wire_len) = packet(item);
            *place = PacketRef::new(data, wire_len);
        }
    }
    gather(&mut window, items, 0, &packet);
    let prefetch = prefetch_plan(&window[..items.len().min(WINDOW)], items.len());
    let mut base = 0;
    let mut count = 0;
    while base < items.len() {
        let n = (items.len() - base).min(BATCH);
        count += counter.count(&window, n, prefetch);
        base += n;
        window.copy_within(BATCH.., 0);
        gather(&mut window[PREFETCH_AHEAD..], items, base + PREFETCH_AHEAD, &packet);
    }
    count
}

#[cfg(test)]
mod tests {
    use sift_bpf::insn::op::*;
    use sift_bpf::validate::{validate, KNOWN_OPCODES};
    use sift_bpf::Insn;

    /// The count function prefetches far ahead only for packets spanning
    /// more than `PREFETCH_FAR_SPAN` bytes (estimated from the first ones),
    /// and the deeper line only for those that also lie at least
    /// `PREFETCH_MIN_GAP` bytes apart.
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    #[test]
    fn prefetch_plan_follows_the_span_and_the_gap() {
        use super::{prefetch_plan_for, PacketRef, Prefetch, PREFETCH_AHEAD, PREFETCH_NEAR};
        let prefetch_plan = |first: &[PacketRef<'_>], packets| prefetch_plan_for(first, packets, false);
        let buffer = vec![0u8; 4 << 20];
        let slots = |stride: usize| -> Vec<PacketRef<'_>> {
            (0..4).map(|i| PacketRef::new(&buffer[i * stride..i * stride + 1], 1)).collect()
        };
        let (far, deep, near) = (
            Prefetch { ahead: PREFETCH_AHEAD, deep: false },
            Prefetch { ahead: PREFETCH_AHEAD, deep: true },
            Prefetch { ahead: PREFETCH_NEAR, deep: false },
        );
        assert_eq!(prefetch_plan(&slots(1 << 20), 100), deep); // 100 MiB, 1 MiB apart
        assert_eq!(prefetch_plan(&slots(1 << 20), 10), near); // 10 MiB
        assert_eq!(prefetch_plan(&slots(1000), 100_000), deep); // 100 MB, 1,000 bytes apart
        assert_eq!(prefetch_plan(&slots(100), 1_000_000), far); // 100 MB, 100 bytes apart
        assert_eq!(prefetch_plan(&slots(100), 20_000), near); // 2 MB
        assert_eq!(prefetch_plan(&slots(0), 1 << 40), near); // one packet, again and again
        assert_eq!(prefetch_plan(&[], 5), near);
        // Header lines chosen: far ahead and the deeper line, always.
        for (stride, packets) in [(1 << 20, 100), (1 << 20, 10), (100, 1_000_000), (100, 20_000), (0, 1 << 40)] {
            assert_eq!(prefetch_plan_for(&slots(stride), packets, true), deep);
        }
        assert_eq!(prefetch_plan_for(&[], 5, true), deep);
    }

    /// The per-packet function is installed by its first call, not by the
    /// compile, and the batch entry points never install it; where it
    /// cannot be installed, `run` gives the same verdicts another way.
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    #[test]
    fn the_per_packet_function_is_installed_on_first_use() {
        use super::{JitFilter, PacketRef, BATCH};
        use sift_bpf::insn::op::*;
        use sift_bpf::Insn;
        let installed = |f: &JitFilter| f.code.as_ref().is_some_and(|c| c.is_installed());
        let opts = sift_ir::LowerOptions { linktype: sift_ir::LinkType::EN10MB, ..Default::default() };
        let pred = sift_ir::lower(&sift_syntax::parse("ip and udp port 53").unwrap(), &opts).unwrap();
        let prog = [
            Insn::stmt(LD | H | ABS, 12),
            Insn::jump(JMP | JEQ | K, 0x800, 0, 1),
            Insn::stmt(RET | K, 7),
            Insn::stmt(RET | K, 0),
        ];
        let mut packets: Vec<Vec<u8>> = Vec::new();
        for i in 0..200u32 {
            let mut p = vec![0u8; (i % 70) as usize];
            for (j, b) in p.iter_mut().enumerate() {
                *b = (i.wrapping_mul(31) ^ j as u32) as u8;
            }
            if p.len() > 37 && i % 3 == 0 {
                p[12..14].copy_from_slice(&[8, 0]);
                p[14] = 0x45;
                p[20..22].copy_from_slice(&[0, 0]);
                p[23] = 17;
                p[36..38].copy_from_slice(&[0, 53]);
            }
            packets.push(p);
        }
        let refs: Vec<PacketRef<'_>> = packets.iter().map(|p| PacketRef::new(p, p.len() as u32)).collect();
        assert!(refs.len() >= BATCH);
        for f in [JitFilter::from_pred_with(&pred, 9).unwrap(), JitFilter::from_program(&prog).unwrap()] {
            assert!(f.code.is_some() && !installed(&f));
            let counted = f.count_packets(&refs);
            assert!(!installed(&f), "the count function ran, the per-packet one stays uninstalled");
            let fallback: Vec<u32> = packets.iter().map(|p| f.run_uninstalled(p, p.len() as u32)).collect();
            assert!(!installed(&f));
            let run: Vec<u32> = packets.iter().map(|p| f.run(p, p.len() as u32)).collect();
            assert!(installed(&f));
            assert_eq!(run, fallback);
            assert_eq!(counted, run.iter().filter(|&&v| v != 0).count() as u64);
            assert!(counted > 0 && counted < packets.len() as u64);
            assert_eq!(f.code_bytes().len(), f.code_size());
        }
        // Code longer than `exec::LAZY_MAX` is installed when compiled.
        let ports = (1..=80).map(|p| p.to_string()).collect::<Vec<_>>().join(" or ");
        let long = sift_ir::lower(&sift_syntax::parse(&format!("tcp port ({ports})")).unwrap(), &opts).unwrap();
        let f = JitFilter::from_pred(&long).unwrap();
        assert!(f.code_size() > super::exec::LAZY_MAX);
        assert!(installed(&f));
        assert_eq!(f.code_bytes().len(), f.code_size());
    }

    /// A filter stays small enough to be moved without a call to
    /// `memcpy` (see `JitFilter::count`).
    #[test]
    fn a_filter_is_small() {
        assert!(std::mem::size_of::<super::JitFilter>() <= 128, "{}", std::mem::size_of::<super::JitFilter>());
    }

    /// `JitFilter::from_program` refuses exactly the programs
    /// `sift_bpf::interp::Program::new` refuses, with its error (the
    /// compiler's first pass makes the same checks): every opcode below
    /// 0x100 and some above, with scratch indexes, constants and jump
    /// offsets around the limits, at the start of a program (then a `ret`
    /// may start it: no code, checked all the same) and after a load.
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    #[test]
    fn runnable_is_what_the_interpreter_runs() {
        use super::{JitError, JitFilter};
        use sift_bpf::interp::Program;
        let ks = [0u32, 1, 2, 15, 16, 0x8000_0000, u32::MAX, (-2i32) as u32, (-3i32) as u32];
        let offs = [0u8, 1, 2, 3];
        let codes = (0..0x100u16).chain([0x100, 0x105, 0x1000, 0x8006, 0xffff]);
        let (mut refused, mut compiled) = (0, 0);
        for code in codes {
            for &k in &ks {
                for &jt in &offs {
                    for &jf in &offs {
                        let insn = Insn::jump(code, k, jt, jf);
                        let load = Insn::stmt(LD | H | ABS, 12);
                        let ret = Insn::stmt(RET | A, 0);
                        for p in [
                            vec![insn],
                            vec![insn, ret, ret],
                            vec![load, insn, ret],
                            vec![load, insn, ret, ret],
                            vec![Insn::stmt(RET | K, 1), insn],
                        ] {
                            match (JitFilter::from_program(&p), Program::new(&p)) {
                                (Ok(_), Ok(_)) => compiled += 1,
                                (Err(JitError::Invalid(got)), Err(want)) => {
                                    assert_eq!(got, want, "{p:?}");
                                    refused += 1;
                                }
                                (got, want) => panic!("{p:?}: {got:?} vs {:?}", want.err()),
                            }
                        }
                    }
                }
            }
        }
        assert!(refused > 10_000 && compiled > 10_000, "{refused} {compiled}");
        let want = Program::new(&[]).expect_err("refused");
        assert!(matches!(JitFilter::from_program(&[]), Err(JitError::Invalid(e)) if e == want));
    }

    /// Every program the kernel's rules accept passes the interpreter's
    /// checks, which `check_runnable` therefore skips for it.
    #[test]
    fn kernel_valid_is_runnable() {
        let ks = [0u32, 1, 2, 15, 16, 31, 32, 0x1000, 0xffff_f000, u32::MAX];
        let offs = [0u8, 1, 2, 3, 255];
        let mut n = 0;
        for &code in &KNOWN_OPCODES {
            for &k in &ks {
                for &jt in &offs {
                    for &jf in &offs {
                        for len in [1usize, 2, 4] {
                            // The instruction under test, then returns; and
                            // after a store, before `ret a`.
                            let mut prog = vec![Insn::jump(code, k, jt, jf)];
                            prog.resize(len, Insn::stmt(RET | K, 0));
                            let stored = [
                                Insn::stmt(ST, 1),
                                Insn::jump(code, k, jt, jf),
                                Insn::stmt(RET | A, 0),
                            ];
                            for p in [&prog[..], &stored[..]] {
                                if validate(p).is_ok() {
                                    n += 1;
                                    assert!(sift_bpf::interp::Program::new(p).is_ok(), "{p:?}");
                                }
                            }
                        }
                    }
                }
            }
        }
        assert!(n > 1000, "{n}");
    }
}
