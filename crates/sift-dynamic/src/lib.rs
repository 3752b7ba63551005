//! Dynamic filtering after the Swift paper (Wu, Xie, Wang): filters that
//! change while packets flow, without recompiling.
//!
//! A [`DynamicFilter`] is an OR of **passes**; a pass is an AND of CISC
//! [`Instr`]uctions, each one whole primitive (a field loaded at a direct
//! offset or past the IPv4 header, compared for equality against a set of
//! values, masked, against a range, ...). Passes are tried in order; the
//! first whose instructions all hold accepts the packet. An out-of-bounds
//! load anywhere rejects the packet at once, exactly as the static program of
//! the equivalent expression ([`DynamicFilter::to_expr`]) would.
//!
//! **Hierarchical execution**: every instruction of a pass carries a
//! "copied" mark when it is the very same instruction as the one at the same
//! position in the previous pass (as after [`DynamicFilter::duplicate_pass`]).
//! When the previous pass got past that position (everything before the
//! failing instruction held, without aborting), a copied instruction is known
//! to hold and is skipped.
//!
//! **Translation** ([`DynamicFilter::from_expr`]): sift's lowered predicate
//! becomes passes (negations pushed to the tests, the last conjunct of an
//! `and` distributed, earlier alternatives kept inside one instruction),
//! then passes differing in one value set are merged where no pass between
//! them can preempt (so `tcp port (a or b or ...)` is two passes with port
//! sets) and runs such as `not host a and not host b ...` become set tests,
//! every step keeping the loads and verdicts of the original. What does
//! not fit (computed operands, arithmetic, an alternative of complex
//! branches followed by more conditions) is an [`Error::Unsupported`]
//! naming it: run the expression with a static engine then.
//!
//! **Update cost**: an update copies the changed pass (its instruction
//! pointers and its steps, only the changed one prepared again), the
//! changed instruction (its value set), one chunk of pass pointers (16 to
//! 31) and the chunk list (passes / 16): it never recompiles and does not
//! depend on the other passes' contents.
//!
//! **Concurrency**: the filter publishes immutable snapshots through an
//! [`arc_swap::ArcSwap`]; [`FilterHandle`]s (cheap to clone, `Send + Sync`)
//! read the current snapshot without taking a lock, and an update becomes
//! visible atomically; the updates made in one [`DynamicFilter::atomically`]
//! call become visible together. Snapshots share passes and instructions
//! through `Arc`s, so an update copies the pass list (pointers) and the
//! changed pass only; old snapshots are freed when the last reader lets go.
//!
//! ```
//! use sift_dynamic::{DynamicFilter, LinkType};
//!
//! let mut f = DynamicFilter::from_expr("tcp dst port 21", LinkType::EN10MB).unwrap();
//! let mut reader = f.handle().reader(); // give this to the capture thread
//! // Pass 1 is IPv4: [IPv4 non-fragment TCP, dst port in {21}].
//! assert_eq!(f.pass(1).unwrap().instrs().map(|i| i.kind()).collect::<Vec<_>>(), ["ipv4-l4", "test"]);
//! f.add_value(1, 1, 50_000).unwrap(); // follow a passive-mode data port
//! let copy = f.duplicate_pass(1).unwrap(); // or a pass of its own
//! f.poke(copy, 1, 50_001).unwrap();
//! let mut pkt = vec![0u8; 54];
//! pkt[12] = 8; pkt[14] = 0x45; pkt[23] = 6; // IPv4, TCP
//! pkt[36..38].copy_from_slice(&50_001u16.to_be_bytes());
//! assert!(reader.matches(&pkt, 54));
//! assert!(f.to_expr().contains("0xc351")); // the equivalent expression
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

/// The batch loop: `$body` (the verdict of the packet `$data`,
/// `$wire_len`) on every item of `$items` in order, handing `(index,
/// verdict)` to `$verdict`, while the headers of the packet
/// [`PREFETCH_AHEAD`] places further are prefetched. A macro, not a
/// function taking a closure: the body (calls of `inline(always)`
/// functions) is then compiled into the loop itself, with no call per
/// packet.
macro_rules! batch {
    ($items:expr, $packet:expr, $verdict:expr, |$data:ident, $wire_len:ident| $body:expr) => {{
        let (items, packet, mut verdict) = ($items, $packet, $verdict);
        for (i, item) in items.iter().enumerate() {
            if let Some(ahead) = items.get(i + $crate::PREFETCH_AHEAD) {
                sift_jit::simd::prefetch(packet(ahead).0);
            }
            let ($data, $wire_len): (&[u8], u32) = packet(item);
            verdict(i, $body);
        }
    }};
}

mod exec;
mod list;
mod model;
mod translate;

use std::fmt;
use std::sync::Arc;

use arc_swap::ArcSwap;
use exec::{Fused, Pkt, Step};
use list::List;
use model::Origin;

pub use model::{Abort, Addr, Atom, Cmp, Field, HashTable, Instr, Size, Source, ValueSet, SMALL_SET};
pub use sift_ir::LinkType;
pub use translate::MAX_PASSES;

/// Why a translation or an update failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error {
    /// The expression does not compile.
    Compile(String),
    /// The expression compiles but does not fit passes of instructions; names
    /// what does not fit. Run it with a static engine instead.
    Unsupported(String),
    /// No pass at this index.
    NoSuchPass(usize),
    /// No instruction at this index in the pass.
    NoSuchInstr {
        /// The pass.
        pass: usize,
        /// The instruction index.
        instr: usize,
    },
    /// The instruction has no single comparison to update (values or constant).
    NotUpdatable(&'static str),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Compile(m) => write!(f, "{m}"),
            Error::Unsupported(m) => write!(f, "not expressible for the dynamic engine: {m}"),
            Error::NoSuchPass(p) => write!(f, "no pass {p}"),
            Error::NoSuchInstr { pass, instr } => write!(f, "no instruction {instr} in pass {pass}"),
            Error::NotUpdatable(m) => write!(f, "instruction cannot be updated: {m}"),
        }
    }
}

impl std::error::Error for Error {}

/// One pass: an AND of instructions, with their copied marks.
#[derive(Debug)]
pub struct Pass {
    instrs: Vec<Arc<Instr>>,
    copied: Vec<bool>,
    /// What the packet path runs: one prepared step per instruction.
    steps: Box<[Step]>,
}

impl Pass {
    fn new(instrs: Vec<Arc<Instr>>, prev: Option<&Pass>) -> Pass {
        let copied = marks(&instrs, prev);
        Pass::build(instrs, copied)
    }

    fn build(instrs: Vec<Arc<Instr>>, copied: Vec<bool>) -> Pass {
        let steps = instrs.iter().zip(&copied).map(|(i, &c)| Step::new(i, c)).collect();
        Pass { instrs, copied, steps }
    }

    /// This pass with `instrs` and `copied` marks, where only instruction
    /// `changed` (if any) differs from this pass's: the other steps are
    /// copied (their tables shared), not prepared again.
    fn rebuild(&self, instrs: Vec<Arc<Instr>>, copied: Vec<bool>, changed: Option<usize>) -> Pass {
        let steps = instrs
            .iter()
            .zip(&copied)
            .enumerate()
            .map(|(k, (i, &c))| match self.steps.get(k) {
                Some(s) if Some(k) != changed => s.marked(c),
                _ => Step::new(i, c),
            })
            .collect();
        Pass { instrs, copied, steps }
    }

    /// The instructions, in evaluation order.
    pub fn instrs(&self) -> impl ExactSizeIterator<Item = &Instr> {
        self.instrs.iter().map(|i| &**i)
    }

    /// The copied marks: `copied()[i]` when instruction `i` is the same as
    /// the previous pass's instruction `i` (skipped when that one held).
    pub fn copied(&self) -> &[bool] {
        &self.copied
    }

    /// How the packet path runs each instruction: `eq` (one value),
    /// `simd-sse2` (2 to [`SMALL_SET`] values in SIMD lanes; `lanes` off
    /// x86-64), `hash` (a larger set: its hash table), `ipv4-l4` (the fused IPv4 + protocol +
    /// not-a-fragment test), `either/...`, `all(...)`, `any(...)`,
    /// `alternatives(...)`, `unless(...)` / `unless-l4(...)` (alternatives
    /// of single tests, then none of a field pair's values), `range`,
    /// `order`, `bits`, `never`.
    pub fn exec_kinds(&self) -> Vec<String> {
        self.steps.iter().map(|s| s.kind()).collect()
    }

    /// The pass as expression text, for a link type whose link-layer
    /// header starts the packet (see [`Field::to_expr`]).
    pub fn to_expr(&self) -> String {
        self.print(Origin::default())
    }

    /// The pass as expression text on `linktype` (see [`Field::to_expr_on`]).
    pub fn to_expr_on(&self, linktype: LinkType) -> String {
        self.print(Origin::of(linktype))
    }

    fn print(&self, o: Origin) -> String {
        if self.instrs.is_empty() {
            return "len >= 0".to_string();
        }
        let parts: Vec<String> = self.instrs.iter().map(|i| i.print(o)).collect();
        format!("({})", parts.join(" and "))
    }
}

fn marks(instrs: &[Arc<Instr>], prev: Option<&Pass>) -> Vec<bool> {
    instrs
        .iter()
        .enumerate()
        .map(|(i, x)| prev.and_then(|p| p.instrs.get(i)).is_some_and(|y| Arc::ptr_eq(x, y)))
        .collect()
}

/// An immutable snapshot of a filter: what the packet path runs.
#[derive(Debug, Default)]
pub struct Program {
    passes: List<Pass>,
    /// Copies of the first pass's first steps, held inline: the packet's
    /// first loads then depend on no pointer chase through the pass list,
    /// and a one-pass filter of up to [`HEAD`] instructions runs from here
    /// alone. `None` without passes. Shared with the previous snapshot
    /// when an update left the first pass (and whether it is the only one)
    /// as it was.
    head: Option<Arc<Head>>,
    /// How the printed form addresses packet offsets (from the link type).
    origin: Origin,
    /// Runs of passes starting with `host X` tests for different `X`,
    /// indexed by `X`: built by the first reader that needs it (the writer
    /// never pays for it, so an update stays O(size of the change)).
    index: std::sync::OnceLock<Option<exec::HostIndex>>,
}

/// How many steps of the first pass a snapshot holds inline.
const HEAD: usize = 4;

/// The first pass's first steps (see [`Program`]).
#[derive(Debug)]
struct Head {
    steps: [Step; HEAD],
    /// How many of `steps` are the pass's.
    len: usize,
    /// The first pass has more steps than `len`.
    more: bool,
    /// The first pass is the only one.
    single: bool,
    /// The whole program as one fused function, when it is a single pass
    /// of a shape [`Fused`] knows.
    fused: Option<Fused>,
}

impl Head {
    fn new(passes: &List<Pass>) -> Option<Head> {
        let first = passes.get(0)?;
        let len = first.steps.len().min(HEAD);
        let steps = std::array::from_fn(|i| first.steps.get(i).filter(|_| i < len).cloned().unwrap_or_else(Step::always));
        let single = passes.len() == 1;
        let fused = if single { Fused::new(&first.instrs, &first.steps) } else { None };
        Some(Head { steps, len, more: first.steps.len() > HEAD, single, fused })
    }
}

impl Program {
    /// Does the packet (`data` = captured bytes, `wire_len` = original length) match?
    #[inline]
    pub fn matches(&self, data: &[u8], wire_len: u32) -> bool {
        let Some(head) = &self.head else { return false };
        match &head.fused {
            Some(f) => f.matches(data, wire_len),
            None if head.single && !head.more => Self::matches_inline(head, data, wire_len),
            None => self.matches_passes(head, data, wire_len),
        }
    }

    /// How many of `items` match; `packet` gives an item's captured bytes
    /// and wire length. The batch entry point: the program's form (fused,
    /// one inline pass, passes) is chosen once per call, and while one
    /// packet is filtered the first cache line (the headers) of the packet
    /// [`PREFETCH_AHEAD`] places further is prefetched, as the JIT's batch
    /// entry does.
    #[inline]
    pub fn count_matches<T>(&self, items: &[T], packet: impl Fn(&T) -> (&[u8], u32)) -> u64 {
        let mut n = 0u64;
        self.for_each_verdict(items, packet, |_, v| n += u64::from(v));
        n
    }

    /// Runs the filter on every item, in order, handing `(index, verdict)`
    /// to `verdict`; prefetches as [`Program::count_matches`] does.
    #[inline]
    pub fn for_each_verdict<T>(
        &self,
        items: &[T],
        packet: impl Fn(&T) -> (&[u8], u32),
        mut verdict: impl FnMut(usize, bool),
    ) {
        let Some(head) = &self.head else {
            (0..items.len()).for_each(|i| verdict(i, false));
            return;
        };
        match &head.fused {
            Some(f) => f.for_each_verdict(items, packet, verdict),
            None if head.single && !head.more => {
                batch!(items, packet, verdict, |d, w| Self::matches_inline(head, d, w))
            }
            None => batch!(items, packet, verdict, |d, w| self.matches_passes(head, d, w)),
        }
    }

    /// A one-pass filter held whole in the head: a straight run of steps.
    #[inline(never)]
    fn matches_inline(head: &Head, data: &[u8], wire_len: u32) -> bool {
        let mut pkt = Pkt::new(data, wire_len);
        let Some((last, init)) = head.steps[..head.len].split_last() else { return true };
        for step in init {
            if !matches!(step.eval(&mut pkt), Ok(true)) {
                return false;
            }
        }
        matches!(last.eval(&mut pkt), Ok(true))
    }

    /// Every pass in order, with hierarchical execution: a step marked
    /// copied is known to hold when the previous pass got past its position,
    /// and known to fail when the previous pass failed right there (the same
    /// instruction on the same packet, which did not abort); either way it is
    /// not evaluated again.
    #[inline(never)]
    fn matches_passes(&self, head: &Head, data: &[u8], wire_len: u32) -> bool {
        let mut pkt = Pkt::new(data, wire_len);
        // The first pass's first steps, from the inline copies.
        let mut head_held = true;
        // Where the previous pass failed (every earlier step held).
        let mut prev_failed = head.len;
        for (i, step) in head.steps.iter().take(head.len).enumerate() {
            match step.eval(&mut pkt) {
                Ok(true) => {}
                Ok(false) => {
                    head_held = false;
                    prev_failed = i;
                    break;
                }
                Err(Abort) => return false,
            }
        }
        if head_held && !head.more {
            return true;
        }
        if !head_held && head.single {
            return false;
        }
        let index = self.index.get_or_init(|| exec::HostIndex::build(self.passes.iter()));
        if let Some(index) = index {
            return index.matches(&mut pkt, head.len, head_held, prev_failed);
        }
        let mut first = true;
        for chunk in self.passes.chunks() {
            'pass: for pass in chunk.iter() {
                let mut start = 0;
                if first {
                    first = false;
                    if !head_held {
                        continue 'pass;
                    }
                    start = head.len;
                }
                for (i, step) in pass.steps.iter().enumerate().skip(start) {
                    if step.copied && i <= prev_failed {
                        if i == prev_failed {
                            // Failed in the previous pass: fails here too.
                            continue 'pass;
                        }
                        continue;
                    }
                    match step.eval(&mut pkt) {
                        Ok(true) => {}
                        Ok(false) => {
                            prev_failed = i;
                            continue 'pass;
                        }
                        Err(Abort) => return false,
                    }
                }
                return true;
            }
        }
        false
    }

    /// The passes, in evaluation order.
    pub fn passes(&self) -> impl Iterator<Item = &Pass> {
        self.passes.iter().map(|p| &**p)
    }

    /// The equivalent expression: `(pass) or (pass) ...`; `len < 0` (never
    /// true, no load) without passes.
    pub fn to_expr(&self) -> String {
        if self.passes.len() == 0 {
            return "len < 0".to_string();
        }
        let parts: Vec<String> = self.passes.iter().map(|p| p.print(self.origin)).collect();
        parts.join(" or ")
    }
}

/// How many packets ahead a batch loop prefetches (the JIT's distance).
pub const PREFETCH_AHEAD: usize = sift_jit::PREFETCH_AHEAD;

/// A listing: one line per pass, then one per instruction with its kind,
/// a `*` when marked copied, and its expression text.
impl fmt::Display for Program {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (n, pass) in self.passes().enumerate() {
            writeln!(f, "pass {n}:")?;
            for (i, (ins, c)) in pass.instrs().zip(pass.copied()).enumerate() {
                let run = pass.steps.get(i).map(|s| s.kind()).unwrap_or_default();
                writeln!(f, "  {i}{} {:<12} [{run}] {}", if *c { "*" } else { " " }, ins.kind(), ins.print(self.origin))?;
            }
        }
        Ok(())
    }
}

/// A reader of a [`DynamicFilter`], for the packet path of any thread: it
/// always runs the latest published snapshot, without locking.
#[derive(Clone, Debug)]
pub struct FilterHandle {
    shared: Arc<ArcSwap<Program>>,
}

impl FilterHandle {
    /// Does the packet match the current filter?
    #[inline]
    pub fn matches(&self, data: &[u8], wire_len: u32) -> bool {
        self.shared.load().matches(data, wire_len)
    }

    /// The current snapshot (to run a batch of packets on one version).
    pub fn snapshot(&self) -> Arc<Program> {
        self.shared.load_full()
    }

    /// How many of `items` match the current filter, the whole batch on
    /// one snapshot (see [`Program::count_matches`]).
    pub fn count_matches<T>(&self, items: &[T], packet: impl Fn(&T) -> (&[u8], u32)) -> u64 {
        self.shared.load().count_matches(items, packet)
    }

    /// A per-thread reader that keeps the current snapshot cached: one
    /// atomic load per packet while nothing changes.
    pub fn reader(&self) -> Reader {
        Reader { cache: arc_swap::Cache::new(self.shared.clone()) }
    }
}

/// A filtering thread's cached view of a [`DynamicFilter`] (from
/// [`FilterHandle::reader`]): always runs the latest snapshot; holds on to
/// the previous one until its next call.
pub struct Reader {
    cache: arc_swap::Cache<Arc<ArcSwap<Program>>, Arc<Program>>,
}

impl Reader {
    /// Does the packet match the current filter?
    #[inline]
    pub fn matches(&mut self, data: &[u8], wire_len: u32) -> bool {
        self.cache.load().matches(data, wire_len)
    }

    /// How many of `items` match the current filter, the whole batch on
    /// one snapshot (see [`Program::count_matches`]).
    pub fn count_matches<T>(&mut self, items: &[T], packet: impl Fn(&T) -> (&[u8], u32)) -> u64 {
        self.cache.load().count_matches(items, packet)
    }
}

impl fmt::Debug for Reader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Reader")
    }
}

/// A filter that can be updated while other threads filter with it.
///
/// The owner is the (single) writer; [`DynamicFilter::handle`] gives readers.
#[derive(Debug)]
pub struct DynamicFilter {
    linktype: LinkType,
    current: Arc<Program>,
    shared: Arc<ArcSwap<Program>>,
    /// Inside [`DynamicFilter::atomically`]: the passes as edited so far,
    /// not yet published.
    staged: Option<List<Pass>>,
    /// Inside [`DynamicFilter::atomically`].
    batching: bool,
}

impl DynamicFilter {
    /// An empty filter (no pass: rejects everything).
    pub fn new(linktype: LinkType) -> DynamicFilter {
        let current = Arc::new(Program { origin: Origin::of(linktype), ..Program::default() });
        DynamicFilter {
            linktype,
            shared: Arc::new(ArcSwap::new(current.clone())),
            current,
            staged: None,
            batching: false,
        }
    }

    /// Translates `expr` (compiled for `linktype`) into passes, or says what
    /// does not fit.
    pub fn from_expr(expr: &str, linktype: LinkType) -> Result<DynamicFilter, Error> {
        let opts = sift_ir::LowerOptions { linktype, ..sift_ir::LowerOptions::default() };
        DynamicFilter::from_expr_with(expr, &opts)
    }

    /// Like [`DynamicFilter::from_expr`] with every lowering option (netmask,
    /// savefile, byte order), as the facade's `CompileOptions` carry them.
    /// Lists of ports are lowered port by port whatever `opts` says
    /// ([`sift_ir::LowerOptions::port_lists`]): the engine builds its own
    /// port sets from that form.
    pub fn from_expr_with(expr: &str, opts: &sift_ir::LowerOptions) -> Result<DynamicFilter, Error> {
        let ast = sift_syntax::parse(expr).map_err(|e| Error::Compile(e.message))?;
        let opts = &sift_ir::LowerOptions { port_lists: false, ..*opts };
        let pred = sift_ir::lower(&ast, opts).map_err(|e| Error::Compile(e.message))?;
        DynamicFilter::from_pred(&pred, opts.linktype)
    }

    /// Translates a lowered predicate into passes.
    pub fn from_pred(pred: &sift_ir::Pred, linktype: LinkType) -> Result<DynamicFilter, Error> {
        let passes = translate::translate(pred).map_err(Error::Unsupported)?;
        let mut f = DynamicFilter::new(linktype);
        let mut out: List<Pass> = List::default();
        let mut prev: Option<Arc<Pass>> = None;
        for p in passes {
            // Equal instructions (not only shared ones) get copied marks here.
            let copied = p
                .iter()
                .enumerate()
                .map(|(i, x)| prev.as_ref().and_then(|q| q.instrs.get(i)).is_some_and(|y| Arc::ptr_eq(x, y) || **x == **y))
                .collect();
            let pass = Arc::new(Pass::build(p, copied));
            out.insert(out.len(), pass.clone());
            prev = Some(pass);
        }
        f.publish(out);
        Ok(f)
    }

    /// The link type the filter's offsets are for.
    pub fn linktype(&self) -> LinkType {
        self.linktype
    }

    /// A reader for other threads.
    pub fn handle(&self) -> FilterHandle {
        FilterHandle { shared: self.shared.clone() }
    }

    /// The current snapshot.
    pub fn program(&self) -> &Program {
        &self.current
    }

    /// Does the packet match the current filter?
    #[inline]
    pub fn matches(&self, data: &[u8], wire_len: u32) -> bool {
        self.current.matches(data, wire_len)
    }

    /// How many of `items` match (the batch entry point, see
    /// [`Program::count_matches`]).
    #[inline]
    pub fn count_matches<T>(&self, items: &[T], packet: impl Fn(&T) -> (&[u8], u32)) -> u64 {
        self.current.count_matches(items, packet)
    }

    /// The equivalent expression (see [`Program::to_expr`]).
    pub fn to_expr(&self) -> String {
        self.current.to_expr()
    }

    /// Number of passes (inside [`DynamicFilter::atomically`]: as edited
    /// so far).
    pub fn pass_count(&self) -> usize {
        self.passes_now().len()
    }

    /// Pass `index` (inside [`DynamicFilter::atomically`]: as edited so
    /// far).
    pub fn pass(&self, index: usize) -> Option<&Pass> {
        self.passes_now().get(index).map(|p| &**p)
    }

    /// Runs `edits` (any of the update methods, any number of times) and
    /// publishes their result as one snapshot: readers see every edit or
    /// none, and the filter is published once (a server's IPv4 and IPv6
    /// passes following a new data port together cost one publication). If
    /// `edits` fails, none of its edits is kept. Nested calls join the
    /// outer one. Between the edits, [`DynamicFilter::pass`] and
    /// [`DynamicFilter::pass_count`] show the filter as edited so far; the
    /// snapshot ([`DynamicFilter::program`], [`DynamicFilter::matches`])
    /// stays the published one until the end.
    pub fn atomically<R>(&mut self, edits: impl FnOnce(&mut DynamicFilter) -> Result<R, Error>) -> Result<R, Error> {
        if self.batching {
            return edits(self);
        }
        /// Ends the batch however `edits` ends, unwinding included (a
        /// caught panic leaves the filter as published, not stuck batching).
        struct EndBatch<'a>(&'a mut DynamicFilter);
        impl Drop for EndBatch<'_> {
            fn drop(&mut self) {
                self.0.batching = false;
                self.0.staged = None;
            }
        }
        self.batching = true;
        let guard = EndBatch(self);
        let r = edits(&mut *guard.0);
        let staged = guard.0.staged.take();
        drop(guard);
        if let (Ok(_), Some(passes)) = (&r, staged) {
            self.publish(passes);
        }
        r
    }

    /// The passes edits apply to: the staged ones inside
    /// [`DynamicFilter::atomically`], else the published ones.
    fn passes_now(&self) -> &List<Pass> {
        self.staged.as_ref().unwrap_or(&self.current.passes)
    }

    /// The passes to edit: the staged list itself, or a copy of the
    /// published one (chunk pointers only).
    fn take_passes(&mut self) -> List<Pass> {
        self.staged.take().unwrap_or_else(|| self.current.passes.clone())
    }

    /// Publishes edited passes, or stages them inside
    /// [`DynamicFilter::atomically`].
    fn commit(&mut self, passes: List<Pass>) {
        if self.batching {
            self.staged = Some(passes);
        } else {
            self.publish(passes);
        }
    }

    fn publish(&mut self, passes: List<Pass>) {
        let old = &self.current;
        let same_first = match (passes.get(0), old.passes.get(0)) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b) && (passes.len() == 1) == (old.passes.len() == 1),
            _ => false,
        };
        let head = match &old.head {
            Some(h) if same_first => Some(h.clone()),
            _ => Head::new(&passes).map(Arc::new),
        };
        let p = Arc::new(Program { passes, head, origin: Origin::of(self.linktype), index: Default::default() });
        self.shared.store(p.clone());
        self.current = p;
    }

    fn check_pass(&self, pass: usize) -> Result<&Pass, Error> {
        self.passes_now().get(pass).map(|p| &**p).ok_or(Error::NoSuchPass(pass))
    }

    /// Recomputes the marks of pass `at` (relative to `at - 1`) after a
    /// neighbour changed; O(length of that pass).
    fn relink(passes: &mut List<Pass>, at: usize) {
        let Some(p) = passes.get(at) else { return };
        let prev = at.checked_sub(1).and_then(|i| passes.get(i)).map(|p| &**p);
        let m = marks(&p.instrs, prev);
        if m != p.copied {
            let np = p.rebuild(p.instrs.clone(), m, None);
            passes.set(at, Arc::new(np));
        }
    }

    /// Inserts a new pass of `instrs` at position `at` (0 = tried first;
    /// `pass_count()` = last).
    pub fn new_pass(&mut self, at: usize, instrs: Vec<Instr>) -> Result<(), Error> {
        if at > self.pass_count() {
            return Err(Error::NoSuchPass(at));
        }
        let mut passes = self.take_passes();
        let prev = at.checked_sub(1).and_then(|i| passes.get(i)).map(|p| &**p);
        // An instruction equal to the previous pass's at the same position
        // shares it (and gets the copied mark): a pass added after its
        // sibling, such as the IPv4 branch after the IPv6 one of `host X
        // and tcp port Y`, then does not re-test what the sibling did. The
        // comparison covers the new pass's instructions only.
        let instrs: Vec<Arc<Instr>> = instrs
            .into_iter()
            .enumerate()
            .map(|(i, x)| match prev.and_then(|p| p.instrs.get(i)) {
                Some(y) if **y == x => y.clone(),
                _ => Arc::new(x),
            })
            .collect();
        let pass = Pass::new(instrs, prev);
        passes.insert(at, Arc::new(pass));
        Self::relink(&mut passes, at + 1);
        self.commit(passes);
        Ok(())
    }

    /// Deletes pass `at`.
    pub fn delete_pass(&mut self, at: usize) -> Result<(), Error> {
        self.check_pass(at)?;
        let mut passes = self.take_passes();
        passes.remove(at);
        Self::relink(&mut passes, at);
        self.commit(passes);
        Ok(())
    }

    /// Duplicates pass `at`: the copy is inserted right after it, every
    /// instruction marked copied. Returns the copy's index.
    pub fn duplicate_pass(&mut self, at: usize) -> Result<usize, Error> {
        let p = self.check_pass(at)?;
        let copy = p.rebuild(p.instrs.clone(), vec![true; p.instrs.len()], None);
        let mut passes = self.take_passes();
        passes.insert(at + 1, Arc::new(copy));
        Self::relink(&mut passes, at + 2);
        self.commit(passes);
        Ok(at + 1)
    }

    /// Replaces instruction `instr` of pass `pass` with the result of `f`
    /// applied to a copy (copy-on-write; the marks of this pass and the next
    /// are updated).
    fn update_instr(
        &mut self,
        pass: usize,
        instr: usize,
        f: impl FnOnce(&mut Instr) -> Result<(), Error>,
    ) -> Result<(), Error> {
        let p = self.check_pass(pass)?;
        let old = p.instrs.get(instr).ok_or(Error::NoSuchInstr { pass, instr })?;
        let mut new = Instr::clone(old);
        f(&mut new)?;
        let mut instrs = p.instrs.clone();
        instrs[instr] = Arc::new(new);
        let mut copied = p.copied.clone();
        copied[instr] = false;
        let rebuilt = p.rebuild(instrs, copied, Some(instr));
        let mut passes = self.take_passes();
        passes.set(pass, Arc::new(rebuilt));
        Self::relink(&mut passes, pass + 1);
        self.commit(passes);
        Ok(())
    }

    /// Replaces instruction `instr` of pass `pass` (Swift's "select
    /// operation").
    pub fn replace_instr(&mut self, pass: usize, instr: usize, with: Instr) -> Result<(), Error> {
        self.update_instr(pass, instr, |i| {
            *i = with;
            Ok(())
        })
    }

    /// Adds `value` to the value set of an equality instruction (Swift's
    /// "add parameter"). Adding a value already there changes nothing.
    ///
    /// On a "src or dst" instruction ([`Instr::Either`]) the value is tested
    /// as if in a later pass: `tcp port 21`, then 22 added, is exactly `tcp
    /// port (21 or 22)` = `tcp port 21 or tcp port 22`, also on packets cut
    /// between the two ports (a source port 22 needs the destination port
    /// loadable, 21 does not): the values before the first addition become
    /// the instruction's first values (`first`), as a translation merging
    /// the two passes makes them.
    pub fn add_value(&mut self, pass: usize, instr: usize, value: u32) -> Result<(), Error> {
        self.update_instr(pass, instr, |i| {
            if let Instr::Either { cmp: Cmp::In(s), first: first @ None, .. } = i {
                if !s.is_empty() && !s.contains(value) {
                    *first = Some(s.clone());
                }
            }
            match i.cmp_mut() {
                Some(Cmp::In(s)) => {
                    s.insert(value);
                    Ok(())
                }
                _ => Err(Error::NotUpdatable("not a set of values")),
            }
        })
    }

    /// Removes `value` from the value set of an equality instruction
    /// (Swift's "remove parameter"); an emptied set never holds. On a
    /// merged "src or dst" set the value also leaves the first values
    /// ([`Instr::Either`]'s `first`), so they stay within the set.
    pub fn remove_value(&mut self, pass: usize, instr: usize, value: u32) -> Result<(), Error> {
        self.update_instr(pass, instr, |i| {
            match i.cmp_mut() {
                Some(Cmp::In(s)) => s.remove(value),
                _ => return Err(Error::NotUpdatable("not a set of values")),
            };
            if let Instr::Either { first: Some(a1), .. } = i {
                a1.remove(value);
            }
            Ok(())
        })
    }

    /// Replaces the constant of an instruction (Swift's "poke"): the set of
    /// an equality becomes `{value}`; `>`, `>=` and bit tests take `value`.
    /// A merged "src or dst" instruction becomes the plain `src or dst`.
    pub fn poke(&mut self, pass: usize, instr: usize, value: u32) -> Result<(), Error> {
        self.update_instr(pass, instr, |i| {
            match i.cmp_mut() {
                Some(c @ Cmp::In(_)) => *c = Cmp::eq(value),
                Some(Cmp::Gt(k) | Cmp::Ge(k) | Cmp::AnyBits(k)) => *k = value,
                Some(Cmp::Range(..)) => {
                    return Err(Error::NotUpdatable("a range has two constants: replace the instruction"))
                }
                None => return Err(Error::NotUpdatable("a compound instruction: replace it")),
            }
            if let Instr::Either { first, .. } = i {
                *first = None;
            }
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tcp4(sport: u16, dport: u16, cut: usize) -> Vec<u8> {
        let mut p = vec![0u8; 54];
        p[12] = 8;
        p[14] = 0x45;
        p[23] = 6;
        p[26..30].copy_from_slice(&[10, 0, 0, 1]);
        p[30..34].copy_from_slice(&[10, 0, 0, 2]);
        p[34..36].copy_from_slice(&sport.to_be_bytes());
        p[36..38].copy_from_slice(&dport.to_be_bytes());
        p.truncate(cut);
        p
    }

    #[test]
    fn tcp_port_translates_to_power_instructions() {
        let f = DynamicFilter::from_expr("tcp port 80", LinkType::EN10MB).unwrap();
        assert_eq!(f.pass_count(), 2);
        let kinds: Vec<&str> = f.pass(1).unwrap().instrs().map(|i| i.kind()).collect();
        assert_eq!(kinds, ["ipv4-l4", "either"]);
        assert!(f.matches(&tcp4(1, 80, 54), 54));
        assert!(f.matches(&tcp4(80, 1, 54), 54));
        assert!(!f.matches(&tcp4(1, 81, 54), 54));
        // Source port matches before the cut: accepted; destination needed but cut: rejected.
        assert!(f.matches(&tcp4(80, 1, 36), 54));
        assert!(!f.matches(&tcp4(1, 80, 37), 54));
    }

    #[test]
    fn updates_and_copied_marks() {
        let mut f = DynamicFilter::from_expr("tcp port 80", LinkType::EN10MB).unwrap();
        let h = f.handle();
        assert!(!h.matches(&tcp4(1, 21, 54), 54));
        f.add_value(1, 1, 21).unwrap();
        assert!(h.matches(&tcp4(1, 21, 54), 54));
        let d = f.duplicate_pass(1).unwrap();
        assert_eq!(f.pass(d).unwrap().copied(), &[true, true]);
        f.poke(d, 1, 443).unwrap();
        assert_eq!(f.pass(d).unwrap().copied(), &[true, false]);
        assert!(h.matches(&tcp4(443, 2, 54), 54));
        f.remove_value(1, 1, 21).unwrap();
        assert!(!h.matches(&tcp4(1, 21, 54), 54));
        f.delete_pass(1).unwrap();
        assert_eq!(f.pass(1).unwrap().copied(), &[false, false]);
        assert!(!h.matches(&tcp4(1, 80, 54), 54));
        assert!(h.matches(&tcp4(443, 2, 54), 54));
        assert!(matches!(f.add_value(1, 0, 1), Err(Error::NotUpdatable(_))));
        assert_eq!(f.delete_pass(9), Err(Error::NoSuchPass(9)));
    }

    #[test]
    fn negated_host_runs_keep_their_loads() {
        // `not host a and not host b` after `ip`: src, dst, src, dst tests
        // become three set tests; a truncated destination must still abort
        // when the source is not `a`, letting no later pass accept.
        let expr = "(ip and not host 10.0.0.1 and not host 10.0.0.2 and not host 10.0.0.3) or ip";
        let f = DynamicFilter::from_expr(expr, LinkType::EN10MB).unwrap();
        let kinds: Vec<&str> = f.pass(0).unwrap().instrs().map(|i| i.kind()).collect();
        assert_eq!(kinds, ["test"; 4], "{}", f.to_expr());
        let s = sift::Filter::with_engine(expr, &sift::CompileOptions::default(), sift::Engine::Interp).unwrap();
        for src in [1u8, 2, 3, 9] {
            for dst in [1u8, 2, 3, 9] {
                for cut in [30, 32, 34, 54] {
                    let mut p = tcp4(1, 2, 54);
                    p[29] = src;
                    p[33] = dst;
                    p.truncate(cut);
                    assert_eq!(f.matches(&p, 54), s.matches(&p, 54), "src {src} dst {dst} cut {cut}");
                }
            }
        }
    }

    #[test]
    fn http_get_uses_l2_indirect_addressing() {
        let expr = "tcp[((tcp[12]&0xf0)>>2):4] = 0x47455420";
        let f = DynamicFilter::from_expr(expr, LinkType::EN10MB).unwrap();
        assert_eq!(f.pass_count(), 1, "{}", f.program());
        let layered = f.pass(0).unwrap().instrs().any(|i| {
            matches!(i, Instr::Test(Atom { field: Field { source: Source::Load { addr: Addr::Layered { .. }, .. }, .. }, .. }))
        });
        assert!(layered, "{}", f.program());
        let s = sift::Filter::with_engine(expr, &sift::CompileOptions::default(), sift::Engine::Interp).unwrap();
        let mut accepted = 0;
        for ihl in [5u8, 6, 15] {
            for doff in [0u8, 5, 8, 15] {
                for get in [true, false] {
                    let ip_end = 14 + 4 * usize::from(ihl);
                    let payload = ip_end + 4 * usize::from(doff);
                    let mut p = vec![0u8; (payload + 8).max(ip_end + 20)];
                    p[12] = 8;
                    p[14] = 0x40 | ihl;
                    p[23] = 6;
                    p[ip_end + 12] = doff << 4;
                    p[payload..payload + 4].copy_from_slice(if get { b"GET " } else { b"PUT " });
                    for cut in [p.len(), payload + 4, payload + 3, ip_end + 13, ip_end + 12, 15, 14] {
                        let q = &p[..cut.min(p.len())];
                        let want = s.matches(q, p.len() as u32);
                        accepted += usize::from(want);
                        assert_eq!(f.matches(q, p.len() as u32), want, "ihl {ihl} doff {doff} get {get} cut {cut}");
                    }
                }
            }
        }
        assert!(accepted > 0);
        // The same field by hand.
        let tcp = Instr::Test(Atom::new(Field::tcp_payload(Size::Word, 14, 0), Cmp::eq(0x4745_5420)));
        assert_eq!(f.pass(0).unwrap().instrs().nth(1), Some(&tcp), "{}", f.program());
    }

    #[test]
    fn set_operands_run_as_simd_lanes_or_hash_tables() {
        let f = DynamicFilter::from_expr("ip and tcp port (ssh or http or imap or smtp or pop3 or ftp)", LinkType::EN10MB)
            .unwrap();
        let simd = if sift_jit::simd::U32x8::IS_SIMD { "ports/simd-sse2" } else { "ports/lanes" };
        assert_eq!(f.pass(0).unwrap().exec_kinds(), ["ipv4-l4", simd]);
        #[cfg(target_arch = "x86_64")]
        assert_eq!(simd, "ports/simd-sse2");
        // A set past the SIMD width becomes a hash table, O(1) whatever its size.
        let mut g = f;
        for port in 1000..1200 {
            g.add_value(0, 1, port).unwrap();
        }
        assert_eq!(g.pass(0).unwrap().exec_kinds(), ["ipv4-l4", "ports/hash"]);
        assert!(g.matches(&tcp4(1, 1199, 54), 54) && g.matches(&tcp4(22, 7, 54), 54));
        assert!(!g.matches(&tcp4(1, 1200, 54), 54));
    }

    /// Every cut of `tcp4(sport, dport)` and variants, against the interpreter.
    fn agrees_on_cuts(f: &DynamicFilter, expr: &str) {
        let s = sift::Filter::with_engine(expr, &sift::CompileOptions::default(), sift::Engine::Interp).unwrap();
        for (sport, dport) in [(21, 1), (1, 21), (22, 80), (80, 22), (1, 2), (443, 25), (50_000, 443)] {
            for ihl in [5u8, 6] {
                let mut p = tcp4(sport, dport, 54);
                if ihl == 6 {
                    p.splice(34..34, [0u8; 4]);
                    p[14] = 0x46;
                }
                for frag in [0u8, 1] {
                    p[21] = frag;
                    for cut in 0..=p.len() {
                        let q = &p[..cut];
                        assert_eq!(f.matches(q, 54), s.matches(q, 54), "{expr}: {sport}->{dport} ihl {ihl} frag {frag} cut {cut}");
                        assert_eq!(f.handle().reader().matches(q, 54), s.matches(q, 54));
                    }
                }
            }
        }
    }

    #[test]
    fn fused_one_pass_programs_keep_loads_and_verdicts() {
        for expr in ["ip and not tcp port 22", "ip and tcp port 21", "ip and tcp src port 80", "ip and tcp portrange 20-23", "ip", ""] {
            let f = DynamicFilter::from_expr(expr, LinkType::EN10MB).unwrap();
            agrees_on_cuts(&f, expr);
        }
        // Merged port sets: against the filter's own printed form (see
        // `merged_port_sets_abort_like_the_original` for the original's).
        let f = DynamicFilter::from_expr("ip and tcp port (ssh or http or imap or smtp or pop3 or ftp)", LinkType::EN10MB).unwrap();
        assert_eq!(f.pass(0).unwrap().exec_kinds().len(), 2);
        agrees_on_cuts(&f, &f.to_expr());
        // Both ports tested from one 4-byte load there.
        let plan = format!("{:?}", f.program().head);
        assert!(plan.contains("L4PortsLanes") && plan.contains("pairs: Some"), "{plan}");
    }

    /// Swift filter 6's shape: `not tcp port (...)` after `ip` runs as one
    /// `unless-l4` step, a run of `not host` tests as one `none-of` step
    /// of a straight single-pass plan; loads and verdicts unchanged on
    /// every cut (source in the first host tested, in a later one, in none).
    #[test]
    fn fused_negated_runs_keep_loads_and_verdicts() {
        let exprs = [
            "ip and (not tcp port (80 or 25 or 143) and not ip host (10.0.0.1 or 10.0.0.9 or 10.0.0.2))",
            "ip and (not tcp port (22 or 21) and not ip host (10.0.0.9 or 10.0.0.1 or 10.0.0.8))",
            "ip and not tcp port (80 or 21) and not ip host (10.0.0.2 or 10.0.0.3)",
            "ip and not host 10.0.0.1 and not host 10.0.0.7",
            "ip and not host 10.0.0.7 and not host 10.0.0.2 and not host 10.0.0.1",
            "ip and not ip host (10.0.0.5 or 10.0.0.6 or 10.0.0.7 or 10.0.0.8 or 10.0.0.9 or 10.0.0.10 or 10.0.0.11 or 10.0.0.12 or 10.0.0.13 or 10.0.0.2)",
            "not tcp port (80 or 25 or 143)",
            "ip and not udp port (53 or 21)",
            "ip and not tcp port (1 or 22 or 80)",
        ];
        for expr in exprs {
            let f = DynamicFilter::from_expr(expr, LinkType::EN10MB).unwrap();
            agrees_on_cuts(&f, expr);
        }
        let f = DynamicFilter::from_expr(exprs[0], LinkType::EN10MB).unwrap();
        let kinds = f.pass(0).unwrap().exec_kinds();
        assert!(kinds[1].starts_with("unless-l4(none-of"), "{kinds:?}");
        // The two ports in one test (adjacent halfwords, three values).
        #[cfg(target_arch = "x86_64")]
        assert_eq!(kinds[1], "unless-l4(none-of/halves-sse2)");
        let plan = format!("{:?}", f.program().head);
        assert!(plan.contains("Straight") && plan.contains("NoneOf"), "{plan}");
    }

    /// FTP-style filters (`host X and (tcp port ...)` groups for several
    /// `X`) run through the host index: same verdicts on every cut, with
    /// the packet's hosts in no group, one, two, or a group twice.
    #[test]
    fn host_index_keeps_verdicts() {
        let exprs = [
            "(ip and tcp port 21) or (host 10.0.0.9 and (tcp port 80 or tcp port 22)) or (host 10.0.0.2 and (tcp port 1 or tcp port 443)) or (host 10.0.0.7 and tcp port 2) or (host 10.0.0.1 and (tcp port 25 or tcp port 50000))",
            "(ip and tcp port 21) or (host 10.0.0.1 and tcp port 7) or (host 10.0.0.3 and tcp port 1) or (host 10.0.0.2 and tcp port 9) or (host 10.0.0.1 and tcp port 80)",
            "(ip and tcp port 21) or (host 10.0.0.3 and tcp port 1) or (host 10.0.0.4 and tcp port 2) or (host 10.0.0.5 and tcp port 2) or (host 10.0.0.6 and tcp port 2)",
            "(ip and udp port 53) or (host 10.0.0.3 and tcp port 1) or (host 10.0.0.1 and tcp port 2) or (host 10.0.0.5 and tcp port 80) or ip",
        ];
        for expr in exprs {
            let f = DynamicFilter::from_expr(expr, LinkType::EN10MB).unwrap();
            agrees_on_cuts(&f, expr);
            assert!(f.program().index.get().is_some_and(|i| i.is_some()), "{expr}: no index\n{}", f.program());
            // ARP and RARP packets: the index's other arms.
            let s = sift::Filter::with_engine(expr, &sift::CompileOptions::default(), sift::Engine::Interp).unwrap();
            for ethertype in [0x0806u16, 0x8035] {
                for (spa, tpa) in [(1u8, 2u8), (9, 3), (5, 1), (8, 8)] {
                    let mut p = [0u8; 42];
                    p[12..14].copy_from_slice(&ethertype.to_be_bytes());
                    p[28..32].copy_from_slice(&[10, 0, 0, spa]);
                    p[38..42].copy_from_slice(&[10, 0, 0, tpa]);
                    for cut in 0..=p.len() {
                        assert_eq!(f.matches(&p[..cut], 42), s.matches(&p[..cut], 42), "{expr}: arp {spa}->{tpa} cut {cut}");
                    }
                }
            }
        }
    }

    #[test]
    fn copied_steps_known_false_are_skipped_with_the_same_verdicts() {
        // Passes sharing their first instructions: a pass that fails at a
        // copied position makes the next fail there too, unevaluated.
        let expr = "(host 10.0.0.1 and tcp port 21) or (host 10.0.0.2 and tcp port 80)";
        let mut f = DynamicFilter::from_expr(expr, LinkType::EN10MB).unwrap();
        // `host` (ip src, ip dst, arp, rarp alternatives) loads the ethertype once.
        assert!(f.pass(1).unwrap().exec_kinds()[0].starts_with("keyed("), "{}", f.program());
        agrees_on_cuts(&f, expr);
        let d = f.duplicate_pass(1).unwrap();
        let last = f.pass(d).unwrap().instrs().len() - 1;
        f.poke(d, last, 22).unwrap();
        assert!(f.pass(d).unwrap().copied()[0]);
        let printed = f.to_expr();
        agrees_on_cuts(&f, &printed);
        f.add_value(d, last, 80).unwrap();
        let printed = f.to_expr();
        agrees_on_cuts(&f, &printed);
    }

    #[test]
    fn a_new_pass_shares_what_equals_its_predecessor() {
        let mut f = DynamicFilter::from_expr("tcp port 80", LinkType::EN10MB).unwrap();
        let instrs: Vec<Instr> = f.pass(1).unwrap().instrs().cloned().collect();
        f.new_pass(2, instrs.clone()).unwrap();
        assert_eq!(f.pass(2).unwrap().copied(), &[true, true]);
        let mut other = instrs;
        other[1] = Instr::Test(Atom::new(Field::direct(Size::Byte, 0), Cmp::eq(1)));
        f.new_pass(3, other).unwrap();
        assert_eq!(f.pass(3).unwrap().copied(), &[true, false]);
        agrees_on_cuts(&f, &f.to_expr());
    }

    /// Issue 5 (fixed): passes `(src = a or dst = a) or (src = b or dst =
    /// b)` merge into one `src-or-dst in {a, b}` instruction; with the
    /// destination port cut off, a source port `b` must still reject (the
    /// original loads the destination for `a` first and aborts), while `a`
    /// accepts. The merged instruction keeps the first pass's values.
    #[test]
    fn merged_port_sets_abort_like_the_original() {
        for expr in [
            "tcp port (21 or 22)",
            "ip and tcp port (21 or 22)",
            "tcp port (22 or 21 or 80)",
            "ip and tcp port (ssh or http or imap or smtp or pop3 or ftp)",
            "port (21 or 22 or 80)",
        ] {
            let f = DynamicFilter::from_expr(expr, LinkType::EN10MB).unwrap();
            assert!(!eithers_at(&f, true).is_empty(), "{expr}: {}", f.program());
            // One pass per IP version (the protocols of `port` in a set).
            assert!(f.pass_count() <= 2, "{expr}: {}", f.program());
            agrees_on_cuts(&f, expr);
            agrees_on_cuts(&f, &f.to_expr());
        }
        // Still one (fused) pass, printed with the first values first.
        let f = DynamicFilter::from_expr("ip and tcp port (21 or 22)", LinkType::EN10MB).unwrap();
        assert_eq!(f.pass_count(), 1);
        let printed = f.pass(0).unwrap().instrs().last().unwrap().to_expr();
        assert!(printed.matches("= 0x15").count() == 3 && printed.matches("= 0x16").count() == 2, "{printed}");
    }

    /// The "src or dst" instructions of `f` (only the merged ones if
    /// `merged`), as (pass, instruction).
    fn eithers_at(f: &DynamicFilter, merged: bool) -> Vec<(usize, usize)> {
        let mut at = Vec::new();
        for p in 0..f.pass_count() {
            for (i, instr) in f.pass(p).unwrap().instrs().enumerate() {
                if let Instr::Either { first, .. } = instr {
                    if first.is_some() || !merged {
                        at.push((p, i));
                    }
                }
            }
        }
        at
    }

    #[test]
    fn merged_port_sets_stay_exact_under_updates() {
        for (expr, merged) in [("tcp port (21 or 22 or 80)", true), ("port (21 or 22 or 80)", true)] {
            let mut f = DynamicFilter::from_expr(expr, LinkType::EN10MB).unwrap();
            let at = eithers_at(&f, merged);
            assert!(!at.is_empty());
            // A value added joins the union only: as if tested in a later pass.
            for &(p, i) in &at {
                f.add_value(p, i, 443).unwrap();
            }
            if merged {
                agrees_on_cuts(&f, &expr.replace(" 80)", " 80 or 443)"));
            }
            agrees_on_cuts(&f, &f.to_expr());
            // A value removed leaves the first values too. With a first
            // value removed, every other value needs the second field
            // loadable, as the printed expression says.
            let without_22 = expr.replace("(21 or 22 or 80)", "(21 or 80 or 443)");
            for (v, same_as) in [(22, without_22.as_str()), (21, ""), (80, "")] {
                for &(p, i) in &at {
                    f.remove_value(p, i, v).unwrap();
                }
                if merged && !same_as.is_empty() {
                    agrees_on_cuts(&f, same_as);
                }
                agrees_on_cuts(&f, &f.to_expr());
            }
            assert_eq!(eithers_at(&f, true).len(), if merged { at.len() } else { 0 });
            for &(p, i) in &at {
                f.add_value(p, i, 21).unwrap();
            }
            agrees_on_cuts(&f, &f.to_expr());
            // A poke makes it a plain single value.
            for &(p, i) in &at {
                f.poke(p, i, 22).unwrap();
            }
            assert!(eithers_at(&f, true).is_empty());
            agrees_on_cuts(&f, &f.to_expr());
        }
    }

    /// Issue 5: a value added to an unmerged "src or dst" set (`tcp port
    /// 21`, then 22) behaves as `tcp port (21 or 22)`: with the destination
    /// port cut off, a source port 22 rejects (the static program tests 21
    /// on both ports first), 21 accepts. Further additions and a removal
    /// stay exact too, against the expression with the ports in order.
    #[test]
    fn added_values_behave_like_the_expression_with_them() {
        for (expr, proto) in [("tcp port 21", "tcp "), ("port 21", ""), ("ip and tcp port 21", "ip and tcp ")] {
            let mut f = DynamicFilter::from_expr(expr, LinkType::EN10MB).unwrap();
            let at = eithers_at(&f, false);
            assert!(!at.is_empty() && eithers_at(&f, true).is_empty(), "{expr}: {}", f.program());
            let mut ports = vec![21];
            for add in [22, 80, 22, 443] {
                for &(p, i) in &at {
                    f.add_value(p, i, add).unwrap();
                }
                if !ports.contains(&add) {
                    ports.push(add);
                }
                let list: Vec<String> = ports.iter().map(|p| p.to_string()).collect();
                let same = format!("{proto}port ({})", list.join(" or "));
                agrees_on_cuts(&f, &same);
                agrees_on_cuts(&f, &f.to_expr());
            }
            // Removing a later value: the expression without it.
            for &(p, i) in &at {
                f.remove_value(p, i, 80).unwrap();
            }
            agrees_on_cuts(&f, &format!("{proto}port (21 or 22 or 443)"));
            agrees_on_cuts(&f, &f.to_expr());
        }
    }

    #[test]
    fn shareable_across_threads() {
        fn send_sync<T: Send + Sync>() {}
        fn send<T: Send>() {}
        send_sync::<DynamicFilter>();
        send_sync::<FilterHandle>();
        send_sync::<Program>();
        send::<Reader>();
    }

    #[test]
    fn compile_errors_are_reported() {
        assert!(matches!(DynamicFilter::from_expr("tcp port", LinkType::EN10MB), Err(Error::Compile(m)) if !m.is_empty()));
        assert!(matches!(DynamicFilter::from_expr("host nosuch..", LinkType::EN10MB), Err(Error::Compile(_))));
    }

    #[test]
    fn facade_dynamic_is_strict_and_dynamic_or_jit_falls_back() {
        use sift::{CompileOptions, Engine, Filter};
        let opts = CompileOptions::default();
        let e = Filter::with_engine("ip[2:2] - ip[0] = 4", &opts, Engine::Dynamic).err().expect("strict");
        assert!(matches!(&e, sift::Error::Engine(m) if m.contains("does not fit") && m.contains("dynamic-or-jit")), "{e}");
        let f = Filter::with_engine("ip[2:2] - ip[0] = 4", &opts, Engine::DynamicOrJit).unwrap();
        assert_eq!(f.engine(), Filter::new("ip", &opts).unwrap().engine(), "falls back to what meta picks");
        let f = Filter::with_engine("tcp port 80", &opts, Engine::DynamicOrJit).unwrap();
        assert_eq!(f.engine(), Engine::Dynamic);
        assert!(f.matches(&tcp4(1, 80, 54), 54) && !f.matches(&tcp4(1, 81, 54), 54));
        assert_eq!("dynamic-or-jit".parse::<Engine>(), Ok(Engine::DynamicOrJit));
    }

    #[test]
    fn arithmetic_does_not_fit() {
        let e = DynamicFilter::from_expr("ip[2:2] - ip[0] = 4", LinkType::EN10MB).unwrap_err();
        assert!(matches!(&e, Error::Unsupported(m) if m.contains("arithmetic")), "{e}");
    }
}

