//! Code generation: [`Pred`] → classic BPF.
//!
//! # Contract
//!
//! The program returned by [`compile`] accepts (returns `snaplen`) exactly the
//! packets [`sift_ir::eval::matches`] accepts, and returns 0 otherwise, both
//! under libpcap's `bpf_filter` and in the Linux kernel (`SO_ATTACH_FILTER`):
//!
//! * tests run in tree order with short-circuit; within a test, every load
//!   and division of the tree is executed exactly once (their order inside
//!   a test is free, since any abort rejects), none is dropped or added;
//! * an abort is the cBPF abort: an out-of-bounds load or a division by
//!   `X == 0` makes the program return 0 at once;
//! * where the kernel reads a load differently from libpcap, the program
//!   avoids the difference. The kernel takes `ld [k]` with `k >= 0xfffff000`
//!   as ancillary data and computes `X + k` as a signed 32-bit number
//!   (negative offsets address link-layer or network headers), while libpcap
//!   treats both as out of bounds. So a load whose last byte lies beyond
//!   `0x7ffffffe` in every case becomes a `ret #0` (it is out of bounds for
//!   every packet), and an indexed load whose index is not known to be small
//!   enough gets a guard `jgt #limit` to the rejection first;
//! * shifts by a computed count take the count modulo 32 (as the IR says):
//!   the count gets an `and #31` unless it is known to be below 32, since
//!   libpcap zeroes A for counts of 32 and more while the kernel masks them;
//! * the output passes [`validate`]: forward
//!   jumps only, at most 4096 instructions, scratch memory written before it
//!   is read.
//!
//! # How it works
//!
//! The program is emitted **backwards**, from its last instruction to its
//! first, into a reversed vector. A *label* is the position of an already
//! emitted instruction; every jump goes forward, to code that already
//! exists, so each jump's offset is known the moment it is emitted and no
//! fix-up pass is needed.
//!
//! 1. The two final instructions are emitted first: `ret #snaplen` (accept)
//!    and `ret #0` (reject).
//! 2. `pred(p, yes, no)` emits the code of `p`, which jumps to `yes` when
//!    `p` holds and to `no` otherwise, and returns its entry label. `and`
//!    emits its operands last to first, each jumping to the entry of the
//!    next one when it holds; `or` dually; `not` swaps `yes` and `no`;
//!    `true`/`false` emit nothing and return `yes`/`no`. A test emits its
//!    conditional jump, then, before it, the straight-line code computing its
//!    operands into A (and X or the constant `k`).
//! 3. `jt`/`jf` are 8 bits wide. When a target is more than 255 instructions
//!    away, a *trampoline* goes right after the conditional jump: a copy of
//!    the target's `ret` (as small as an `ja`, and one jump less), or an
//!    `ja` with its 32-bit offset. Trampolines and `ret` copies are
//!    remembered and reused by later jumps that can reach them.
//! 4. Operands are computed into A; X receives the right operand of an
//!    `x`-form instruction or the index of a `[x + k]` load. Nested
//!    arithmetic that needs A and X at once spills to scratch memory used as
//!    a stack, at most 16 deep (deeper needs are an error, like libpcap's
//!    "too many registers"); the order of the two operands is chosen to use
//!    the fewest slots.
//!    Constant addends of a load index move into the load's offset when the
//!    addition cannot wrap (`u8[(13 + hlen) + 14]` is `ldxb 4*([14]&0xf);
//!    ldb [x + 27]`), and the IPv4 header length idiom becomes `ldxb`.
//!    Values that take at least three instructions and are computed again
//!    where they were computed on every path before (or twice in one test),
//!    e.g. a radiotap header length used as an index by every later test,
//!    are *cached*: stored in a scratch word (counting down from `M[15]`,
//!    below which the spill stack stays) where first computed and reloaded
//!    with one `ld M[k]` afterwards. A pass over the predicate in evaluation
//!    order (`Gen::plan_cache`) finds them and, for each test, which cached
//!    values are available; reloading skips only loads and divisions that
//!    already ran without aborting, so verdicts do not change. If the cache
//!    takes a word a spill needs, or the kernel's scratch check refuses the
//!    result, the program is compiled without it.
//! 5. The program starts at the entry label (what comes before it in the
//!    vector is unreachable). [`opt::optimize`](crate::opt::optimize) then
//!    shrinks it (bounded jump threading on path facts, tail merging,
//!    removal of unreachable code and of redundant or dead loads that cannot
//!    abort), the length limit is checked and the result is validated.

use crate::insn::{op, Insn};
use crate::validate::{validate, ValidateError};
use sift_ir::{BinOp, CmpOp, Pred, Size, Test, Value, PROTOCHAIN_MAX_STEPS};
use std::cell::Cell;
use std::collections::HashMap;

/// A fast hasher for the small integer keys of [`Gen`]'s tables (looked up
/// for every `ret` and long jump emitted; never iterated).
type Mix = std::hash::BuildHasherDefault<crate::opt::MixHasher>;
use std::fmt;

/// The `snaplen` libpcap and tcpdump use by default (`ret #262144`).
pub const DEFAULT_SNAPLEN: u32 = 262_144;

/// Deepest nesting of predicates and values [`compile`] accepts.
pub const MAX_DEPTH: usize = 1000;

/// The largest offset byte a load may touch without being out of bounds on
/// every packet, as the kernel reads offsets as signed 32-bit numbers.
const LAST_OFFSET: u64 = 0x7fff_fffe;

/// Options of [`compile`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CodegenOptions {
    /// What an accepting program returns (`ret #snaplen`): the number of
    /// bytes to capture. 0 means [`DEFAULT_SNAPLEN`], as `tcpdump -s 0`.
    pub snaplen: u32,
}

impl Default for CodegenOptions {
    fn default() -> Self {
        CodegenOptions { snaplen: DEFAULT_SNAPLEN }
    }
}

/// Why [`compile`] failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CodegenError {
    /// An arithmetic expression needs more than the 16 scratch memory words.
    TooManyRegisters,
    /// The program is longer than the kernel's limit.
    ProgramTooLarge {
        /// The program's length.
        len: usize,
    },
    /// The predicate is nested more than [`MAX_DEPTH`] levels deep.
    TooDeep,
    /// The generated program failed validation (a bug in the generator).
    Invalid(ValidateError),
    /// A [`Value::Protochain`] used other than as one side of a test
    /// against a constant (lowering never produces that).
    UnsupportedProtochain,
}

impl fmt::Display for CodegenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CodegenError::TooManyRegisters => f.write_str(
                "expression too complex: it needs more than the 16 scratch memory registers (too many registers)",
            ),
            CodegenError::ProgramTooLarge { len } => write!(
                f,
                "program too large ({len} instructions, the kernel's limit is {})",
                op::MAXINSNS
            ),
            CodegenError::TooDeep => write!(f, "expression nested too deeply (more than {MAX_DEPTH} levels)"),
            CodegenError::Invalid(e) => write!(f, "internal error: generated an invalid program: {e}"),
            CodegenError::UnsupportedProtochain => {
                f.write_str("'protochain' can only be compared with a constant")
            }
        }
    }
}

impl std::error::Error for CodegenError {}

/// Compiles `pred` to a classic BPF program; see the module documentation.
pub fn compile(pred: &Pred, opts: &CodegenOptions) -> Result<Vec<Insn>, CodegenError> {
    match compile_with(pred, opts, true) {
        Ok((prog, _)) => Ok(prog),
        // Caching in scratch memory used slots a spill needed, or the
        // kernel's scratch check refused the result: compile without.
        Err((_, true)) => compile_with(pred, opts, false).map(|(p, _)| p).map_err(|(e, _)| e),
        Err((e, false)) => Err(e),
    }
}

/// [`compile`], caching repeated values in scratch memory if `cache`;
/// the flag says whether any value was cached.
fn compile_with(pred: &Pred, opts: &CodegenOptions, cache: bool) -> Result<(Vec<Insn>, bool), (CodegenError, bool)> {
    let snaplen = if opts.snaplen == 0 { DEFAULT_SNAPLEN } else { opts.snaplen };
    let mut g = Gen::new();
    if cache {
        g.plan_cache(pred);
    }
    let cached = !g.slots.is_empty();
    let fail = |e| (e, cached);
    let reject = g.push_ret(0);
    let accept = g.push_ret(snaplen);
    g.reject = reject;
    let entry = g.pred(pred, accept, reject, 0).map_err(fail)?;
    // The program is the reversed vector up to the entry, turned around
    // (in place: no copy).
    let mut prog = std::mem::take(&mut g.rev);
    prog.truncate(entry + 1);
    prog.reverse();
    g.give_back();
    crate::opt::optimize(&mut prog);
    if prog.len() > op::MAXINSNS {
        return Err(fail(CodegenError::ProgramTooLarge { len: prog.len() }));
    }
    validate(&prog).map_err(|e| fail(CodegenError::Invalid(e)))?;
    // The vector is the emission's (its capacity the unoptimized length,
    // 64 at least); a filter keeps its program as long as it lives, so
    // spare room beyond `SPARE_KEPT` instructions is given back.
    if prog.capacity() - prog.len() > SPARE_KEPT {
        prog.shrink_to_fit();
    }
    Ok((prog, cached))
}

/// Spare capacity a compiled program may keep (1 KiB): giving back less
/// costs a reallocation in every small filter's compile for little.
const SPARE_KEPT: usize = 128;

/// A position in the reversed program: the index of an emitted instruction.
type Label = usize;

/// The latest reusable `ret #k` of each `k`: a few entries searched in
/// order (a program has two, `ret #0` and `ret #snaplen`; a map would cost
/// an allocation and a hash per lookup).
#[derive(Default)]
struct Rets(Vec<(u32, Label)>);

impl Rets {
    fn set(&mut self, k: u32, l: Label) {
        match self.0.iter_mut().find(|(j, _)| *j == k) {
            Some(e) => e.1 = l,
            None => self.0.push((k, l)),
        }
    }

    fn get(&self, k: u32) -> Option<Label> {
        self.0.iter().find(|(j, _)| *j == k).map(|&(_, l)| l)
    }
}

/// One step of a test's straight-line code.
#[derive(Clone, Copy, Debug)]
enum Item {
    Insn(Insn),
    /// `jgt #limit` to the rejection: the index in A is too large for a
    /// load to be in bounds, and the kernel would misread the offset.
    Guard(u32),
}

struct Gen {
    /// The program, last instruction first.
    rev: Vec<Insn>,
    /// The original `ret #0`.
    reject: Label,
    /// The nearest (latest emitted) reusable `ret #k`, by `k`.
    rets: Rets,
    /// The nearest reusable `ja` to a label, by that label.
    trampolines: HashMap<Label, Label, Mix>,
    /// Scratch words in use (the evaluation stack's depth).
    scratch: u32,
    /// Values cached in scratch memory, by slot (slots count down from
    /// the last word; the evaluation stack stays below them).
    slots: HashMap<Value, u32>,
    /// The lowest slot used by the cache (`MEMWORDS` if none).
    cache_floor: u32,
    /// For each test (by address), the cached values (a mask of slots)
    /// computed on every path reaching it.
    avail: HashMap<*const Test, u16>,
    /// The cached values A can be reloaded from scratch memory at this
    /// point of the test being compiled.
    ready: u16,
    /// Room for a test's straight-line code (reused from test to test).
    items: Vec<Item>,
}

/// A generator's item vector and `ret` table, kept for the next one.
type SpareBuffers = (Vec<Item>, Vec<(u32, Label)>);

/// The most items a spare item vector keeps room for.
const MAX_SPARE_ITEMS: usize = 256;

thread_local! {
    /// The item vector and `ret` table of the last [`compile`] on this
    /// thread, emptied (allocating and freeing them costs as much as
    /// emitting a small filter's tests).
    static SPARE: Cell<SpareBuffers> = const { Cell::new((Vec::new(), Vec::new())) };
}

impl Gen {
    /// A generator with the buffers the last one on this thread left, if
    /// any.
    fn new() -> Gen {
        let (mut items, rets) = SPARE.try_with(Cell::take).unwrap_or_default();
        if items.capacity() == 0 {
            // (A test's code is rarely longer.)
            items.reserve(16);
        }
        Gen { items, rets: Rets(rets), ..Gen::default() }
    }

    /// Leaves the buffers to the next generator on this thread.
    fn give_back(&mut self) {
        let (mut items, mut rets) = (std::mem::take(&mut self.items), std::mem::take(&mut self.rets.0));
        if items.capacity() <= MAX_SPARE_ITEMS {
            items.clear();
            rets.clear();
            // (Fails only while the thread exits: the buffers are freed.)
            let _ = SPARE.try_with(|spare| spare.set((items, rets)));
        }
    }
}

impl Default for Gen {
    fn default() -> Self {
        Gen {
            // Room for a typical filter (growing from empty reallocates
            // several times).
            rev: Vec::with_capacity(64),
            reject: 0,
            rets: Rets::default(),
            trampolines: HashMap::default(),
            scratch: 0,
            slots: HashMap::new(),
            cache_floor: op::MEMWORDS,
            avail: HashMap::new(),
            ready: 0,
            items: Vec::new(),
        }
    }
}

impl Gen {
    fn push(&mut self, insn: Insn) -> Label {
        self.rev.push(insn);
        self.rev.len() - 1
    }

    /// Emits a `ret #k` that later jumps may reuse.
    fn push_ret(&mut self, k: u32) -> Label {
        let l = self.push(Insn::stmt(op::RET | op::K, k));
        self.rets.set(k, l);
        l
    }

    /// The offset from the next instruction to be emitted to `target`.
    fn dist(&self, target: Label) -> usize {
        self.rev.len() - target - 1
    }

    /// The nearest instruction equivalent to jumping to `l`: the latest copy
    /// of the same `ret`, or the latest trampoline to the same place.
    fn nearest(&self, l: Label) -> Label {
        let insn = self.rev[l];
        if insn.code == op::RET | op::K {
            return self.rets.get(insn.k).map_or(l, |r| r.max(l));
        }
        let dest = self.final_target(l);
        self.trampolines.get(&dest).map_or(dest, |&t| t.max(dest))
    }

    /// Where control really goes when jumping to `l` (through an `ja`).
    fn final_target(&self, l: Label) -> Label {
        let insn = self.rev[l];
        if insn.code == op::JMP | op::JA {
            // The target of an `ja` at `l` is `k + 1` instructions further
            // in program order, i.e. earlier in the reversed vector.
            l - 1 - insn.k as usize
        } else {
            l
        }
    }

    /// Emits a reusable trampoline to `l`, a `ret` copy or an `ja`.
    fn trampoline(&mut self, l: Label) -> Label {
        let insn = self.rev[l];
        if insn.code == op::RET | op::K {
            return self.push_ret(insn.k);
        }
        let dest = self.final_target(l);
        let k = self.dist(dest) as u32; // programs stay far below 2^32 instructions
        let t = self.push(Insn::stmt(op::JMP | op::JA, k));
        self.trampolines.insert(dest, t);
        t
    }

    /// Emits the conditional jump `code #k` to `yes`/`no`, with trampolines
    /// for far targets, and returns its label.
    fn cond(&mut self, code: u16, k: u32, yes: Label, no: Label) -> Label {
        let mut yes = self.nearest(yes);
        let mut no = self.nearest(no);
        loop {
            if self.dist(yes) > 255 {
                yes = self.trampoline(yes);
            } else if self.dist(no) > 255 {
                no = self.trampoline(no);
            } else {
                break;
            }
        }
        let (jt, jf) = (self.dist(yes) as u8, self.dist(no) as u8);
        self.push(Insn::jump(code, k, jt, jf))
    }

    /// Emits straight-line code in front of what is already emitted and
    /// returns the label of its first instruction.
    fn block(&mut self, items: &[Item]) -> Label {
        for item in items.iter().rev() {
            match *item {
                Item::Insn(insn) => {
                    self.push(insn);
                }
                Item::Guard(limit) => {
                    let next = self.rev.len() - 1;
                    let mut reject = self.nearest(self.reject);
                    if self.dist(reject) > 255 {
                        // A private copy: the kernel's scratch-memory scan
                        // would let the state of unrelated jumps to a shared
                        // `ret` flow into the rest of this block.
                        reject = self.push(Insn::stmt(op::RET | op::K, 0));
                    }
                    let (jt, jf) = (self.dist(reject) as u8, self.dist(next) as u8);
                    self.push(Insn::jump(op::JMP | op::JGT | op::K, limit, jt, jf));
                }
            }
        }
        self.rev.len() - 1
    }

    /// Emits the code of `p` (jumping to `yes` if it holds, to `no` if not)
    /// and returns its entry.
    fn pred(&mut self, p: &Pred, yes: Label, no: Label, depth: usize) -> Result<Label, CodegenError> {
        if depth > MAX_DEPTH {
            return Err(CodegenError::TooDeep);
        }
        Ok(match p {
            Pred::True => yes,
            Pred::False => no,
            Pred::Not(q) => self.pred(q, no, yes, depth + 1)?,
            Pred::And(v) => {
                let mut entry = yes;
                for q in v.iter().rev() {
                    entry = self.pred(q, entry, no, depth + 1)?;
                }
                entry
            }
            Pred::Or(v) => {
                let mut entry = no;
                for q in v.iter().rev() {
                    entry = self.pred(q, yes, entry, depth + 1)?;
                }
                entry
            }
            Pred::Test(t) => self.test(t, yes, no, depth)?,
        })
    }

    fn test(&mut self, t: &Test, yes: Label, no: Label, depth: usize) -> Result<Label, CodegenError> {
        // (Most tests compare a constant-offset load, maybe masked, with a
        // constant: none of the checks below can hold, no need to walk the
        // operands.)
        let budget = MAX_DEPTH.saturating_sub(depth);
        if !plain_operand(&t.lhs, budget) || !plain_operand(&t.rhs, budget) {
            if !within_depth(&t.lhs, MAX_DEPTH - depth) || !within_depth(&t.rhs, MAX_DEPTH - depth) {
                return Err(CodegenError::TooDeep);
            }
            if aborts(&t.lhs) || aborts(&t.rhs) {
                return Ok(self.reject);
            }
            if has_protochain(&t.lhs) || has_protochain(&t.rhs) {
                return self.protochain_test(t, yes, no);
            }
        }
        // (No lookup, hashing the address, when nothing is cached.)
        self.ready = if self.avail.is_empty() { 0 } else { self.avail.get(&(t as *const Test)).copied().unwrap_or(0) };
        let mut items = std::mem::take(&mut self.items);
        items.clear();
        let (code, k, swapped) = match self.test_items(t, &mut items)? {
            None => {
                self.items = items;
                let (a, b) = (fold(&t.lhs).unwrap_or(0), fold(&t.rhs).unwrap_or(0));
                let holds = match t.op {
                    CmpOp::Eq => a == b,
                    CmpOp::Gt => a > b,
                    CmpOp::Ge => a >= b,
                    CmpOp::Set => a & b != 0,
                };
                return Ok(if holds { yes } else { no });
            }
            Some(x) => x,
        };
        // With the operands swapped (A = rhs), `l > r` is `!(A >= l)` and
        // `l >= r` is `!(A > l)`; `==` and `&` are symmetric.
        let (jop, yes, no) = match (t.op, swapped) {
            (CmpOp::Eq, _) => (op::JEQ, yes, no),
            (CmpOp::Set, _) => (op::JSET, yes, no),
            (CmpOp::Gt, false) => (op::JGT, yes, no),
            (CmpOp::Ge, false) => (op::JGE, yes, no),
            (CmpOp::Gt, true) => (op::JGE, no, yes),
            (CmpOp::Ge, true) => (op::JGT, no, yes),
        };
        self.cond(op::JMP | jop | code, k, yes, no);
        let entry = self.block(&items);
        self.items = items;
        Ok(entry)
    }

    /// Appends the straight-line code of a test that neither aborts on
    /// every packet nor involves `protochain`, and returns the jump's
    /// operand form, `k` and whether the operands were swapped; `None` if
    /// both sides are constants.
    fn test_items(&mut self, t: &Test, items: &mut Vec<Item>) -> Result<Option<(u16, u32, bool)>, CodegenError> {
        // The most common tests, a constant-offset load, maybe with a
        // constant operation (a mask), against a constant with nothing
        // cached: what the general case below emits for them.
        if let (Value::Const(k), true) = (&t.rhs, self.slots.is_empty()) {
            let load = |size: Size, offset: u32| Item::Insn(Insn::stmt(op::LD | size_code(size) | op::ABS, offset));
            match &t.lhs {
                Value::Load { size, index: None, offset } => {
                    items.push(load(*size, *offset));
                    return Ok(Some((op::K, *k, false)));
                }
                Value::Bin(bop, l, r) => {
                    if let (Value::Load { size, index: None, offset }, Value::Const(m)) = (&**l, &**r) {
                        items.push(load(*size, *offset));
                        alu_k(*bop, *m, items);
                        return Ok(Some((op::K, *k, false)));
                    }
                }
                // `[x + k]` with X the IPv4 header length (at most 60, so
                // no guard unless `k` is near the last offset).
                Value::Load { size, index: Some(i), offset } if fold(i).is_none() => {
                    let (i, offset) = peel(i, *offset);
                    if let (Some(at), true) = (header_len_offset(i), offset + u64::from(size.bytes()) + 60 <= LAST_OFFSET + 1) {
                        items.push(Item::Insn(Insn::stmt(op::LDX | op::B | op::MSH, at)));
                        items.push(Item::Insn(Insn::stmt(op::LD | size_code(*size) | op::IND, offset as u32)));
                        return Ok(Some((op::K, *k, false)));
                    }
                }
                _ => {}
            }
        }
        self.test_items_general(t, items)
    }

    /// [`Gen::test_items`] without its first case.
    fn test_items_general(&mut self, t: &Test, items: &mut Vec<Item>) -> Result<Option<(u16, u32, bool)>, CodegenError> {
        Ok(Some(match (fold(&t.lhs), fold(&t.rhs)) {
            (Some(_), Some(_)) => return Ok(None),
            (_, Some(k)) => {
                self.value(&t.lhs, false, items)?;
                (op::K, k, false)
            }
            (Some(k), None) => {
                self.value(&t.rhs, false, items)?;
                (op::K, k, true)
            }
            (None, None) => {
                let swapped = self.operands(&t.lhs, &t.rhs, true, false, items)?;
                (op::X, 0, swapped)
            }
        }))
    }

    /// A test of a [`Value::Protochain`] against a constant: the walk,
    /// unrolled, leaves its result in A and jumps to the comparison.
    fn protochain_test(&mut self, t: &Test, yes: Label, no: Label) -> Result<Label, CodegenError> {
        let (walk, k, swapped) = match (&t.lhs, fold(&t.lhs), &t.rhs, fold(&t.rhs)) {
            (Value::Protochain { .. }, _, _, Some(k)) => (&t.lhs, k, false),
            (_, Some(k), Value::Protochain { .. }, _) => (&t.rhs, k, true),
            _ => return Err(CodegenError::UnsupportedProtochain),
        };
        let Value::Protochain { v6, proto, nl } = *walk else {
            return Err(CodegenError::UnsupportedProtochain);
        };
        let (jop, yes, no) = match (t.op, swapped) {
            (CmpOp::Eq, _) => (op::JEQ, yes, no),
            (CmpOp::Set, _) => (op::JSET, yes, no),
            (CmpOp::Gt, false) => (op::JGT, yes, no),
            (CmpOp::Ge, false) => (op::JGE, yes, no),
            (CmpOp::Gt, true) => (op::JGE, no, yes),
            (CmpOp::Ge, true) => (op::JGT, no, yes),
        };
        let end = self.cond(op::JMP | jop | op::K, k, yes, no);
        self.protochain(v6, proto, nl, end)
    }

    /// Emits the `protochain` walk of [`Value::Protochain`], unrolled
    /// [`PROTOCHAIN_MAX_STEPS`] times (forward jumps only), ending at `end`
    /// with the result in A; returns its entry. Uses X and one scratch word.
    fn protochain(&mut self, v6: bool, proto: u8, nl: u32, end: Label) -> Result<Label, CodegenError> {
        // Offsets up to `nl + 9` and `nl + X + 1` with X below 2^18: keep
        // them far from the kernel's signed range (lowering gives small `nl`).
        if nl > PROTOCHAIN_MAX_NL {
            return Err(CodegenError::UnsupportedProtochain);
        }
        let s = self.alloc()?;
        let stmt = |code: u16, k: u32| Item::Insn(Insn::stmt(code, k));
        // The header at X: A = its first byte, X = the next header's offset.
        let advance = |ext: bool| {
            let mut v = vec![
                stmt(op::LD | op::B | op::IND, nl),
                stmt(op::ST, s),
                stmt(op::LD | op::B | op::IND, nl + 1),
            ];
            if ext {
                v.extend([stmt(op::ALU | op::ADD | op::K, 1), stmt(op::ALU | op::LSH | op::K, 3)]);
                v.push(stmt(op::ALU | op::ADD | op::X, 0));
            } else {
                v.extend([stmt(op::ALU | op::ADD | op::K, 2), stmt(op::ALU | op::LSH | op::K, 2)]);
            }
            v.extend([stmt(op::MISC | op::TAX, 0), stmt(op::LD | op::MEM, s)]);
            v
        };
        // The step after the last one may not skip a header: it aborts.
        let mut next = self.reject;
        for step in (0..=PROTOCHAIN_MAX_STEPS).rev() {
            let (ext, ah) = if step == PROTOCHAIN_MAX_STEPS {
                (self.reject, self.reject)
            } else {
                let ja = self.dist(next) as u32;
                self.push(Insn::stmt(op::JMP | op::JA, ja));
                let ah = self.block(&advance(false));
                let ext = if v6 {
                    let ja = self.dist(next) as u32;
                    self.push(Insn::stmt(op::JMP | op::JA, ja));
                    self.block(&advance(true))
                } else {
                    ah
                };
                (ext, ah)
            };
            let mut entry = self.cond(op::JMP | op::JEQ | op::K, 51, ah, end);
            if v6 {
                for h in [44, 43, 60, 0] {
                    entry = self.cond(op::JMP | op::JEQ | op::K, h, ext, entry);
                }
            }
            entry = self.cond(op::JMP | op::JEQ | op::K, 59, end, entry);
            next = self.cond(op::JMP | op::JEQ | op::K, u32::from(proto), end, entry);
        }
        self.scratch -= 1;
        let start = if v6 {
            vec![stmt(op::LD | op::B | op::ABS, nl + 6), stmt(op::LDX | op::IMM, 40)]
        } else {
            vec![stmt(op::LD | op::B | op::ABS, nl + 9), stmt(op::LDX | op::B | op::MSH, nl)]
        };
        Ok(self.block(&start))
    }

    /// Appends code leaving `v` in A. With `keep_x`, X must survive (the
    /// caller only asks this for values that do not need X). A cached
    /// value is reloaded from its slot when it was computed before on every
    /// path, else computed and stored there.
    fn value(&mut self, v: &Value, keep_x: bool, out: &mut Vec<Item>) -> Result<(), CodegenError> {
        if let Some(&slot) = self.slots.get(v) {
            let bit = 1u16 << slot;
            if self.ready & bit != 0 {
                out.push(Item::Insn(Insn::stmt(op::LD | op::MEM, slot)));
            } else {
                self.compute(v, keep_x, out)?;
                out.push(Item::Insn(Insn::stmt(op::ST, slot)));
                self.ready |= bit;
            }
            return Ok(());
        }
        self.compute(v, keep_x, out)
    }

    /// [`Gen::value`] without looking at the cache for `v` itself.
    fn compute(&mut self, v: &Value, keep_x: bool, out: &mut Vec<Item>) -> Result<(), CodegenError> {
        let mut emit = |code: u16, k: u32| out.push(Item::Insn(Insn::stmt(code, k)));
        if let Some(c) = fold(v) {
            emit(op::LD | op::IMM, c);
            return Ok(());
        }
        match v {
            Value::Const(c) => emit(op::LD | op::IMM, *c),
            Value::Len => emit(op::LD | op::W | op::LEN, 0),
            Value::Load { size, index: None, offset } => emit(op::LD | size_code(*size) | op::ABS, *offset),
            Value::Load { size, index: Some(i), offset } => match fold(i) {
                // Not aborting, so the sum fits.
                Some(c) => emit(op::LD | size_code(*size) | op::ABS, c.wrapping_add(*offset)),
                None => {
                    // Not aborting, so the offset fits.
                    let (i, offset) = peel(i, *offset);
                    self.index_to_x(i, offset + u64::from(size.bytes()), out)?;
                    out.push(Item::Insn(Insn::stmt(op::LD | size_code(*size) | op::IND, offset as u32)));
                }
            },
            Value::Protochain { .. } => return Err(CodegenError::UnsupportedProtochain),
            Value::Neg(a) => {
                self.value(a, keep_x, out)?;
                out.push(Item::Insn(Insn::stmt(op::ALU | op::NEG, 0)));
            }
            Value::Bin(bop, l, r) => {
                if let (Some(at), false) = (header_len_offset(v), keep_x) {
                    emit(op::LDX | op::B | op::MSH, at);
                    emit(op::MISC | op::TXA, 0);
                } else if let Some(k) = fold(r) {
                    self.value(l, keep_x, out)?;
                    alu_k(*bop, k, out);
                } else if let (Some(k), true) = (fold(l), commutative(*bop)) {
                    self.value(r, keep_x, out)?;
                    alu_k(*bop, k, out);
                } else {
                    let shift = matches!(bop, BinOp::Shl | BinOp::Shr);
                    let swapped = self.operands(l, r, commutative(*bop), shift, out)?;
                    debug_assert!(!swapped || commutative(*bop));
                    out.push(Item::Insn(Insn::stmt(op::ALU | alu_code(*bop) | op::X, 0)));
                }
            }
        }
        Ok(())
    }

    /// Appends code leaving the index `i` of a load ending `end` bytes after
    /// it in X, guarded if `i` may be so large the kernel would misread it.
    fn index_to_x(&mut self, i: &Value, end: u64, out: &mut Vec<Item>) -> Result<(), CodegenError> {
        let guarded = u64::from(max_value(i)) + end > LAST_OFFSET + 1;
        match header_len_offset(i) {
            Some(at) if !guarded => out.push(Item::Insn(Insn::stmt(op::LDX | op::B | op::MSH, at))),
            _ => {
                self.value(i, false, out)?;
                if guarded {
                    // `end <= LAST_OFFSET + 1`, or the load would abort.
                    out.push(Item::Guard((LAST_OFFSET + 1).saturating_sub(end) as u32));
                }
                out.push(Item::Insn(Insn::stmt(op::MISC | op::TAX, 0)));
            }
        }
        Ok(())
    }

    /// Appends code leaving `l` in A and `r` in X, or (only if `swappable`)
    /// `r` in A and `l` in X, and returns whether it swapped. `mask` asks
    /// for `r % 32` (a shift count) instead of `r`.
    fn operands(
        &mut self,
        l: &Value,
        r: &Value,
        swappable: bool,
        mask: bool,
        out: &mut Vec<Item>,
    ) -> Result<bool, CodegenError> {
        let plan = plan(l, r, swappable, mask).0;
        let mask_a = |out: &mut Vec<Item>| {
            if mask && max_value(r) >= 32 {
                out.push(Item::Insn(Insn::stmt(op::ALU | op::AND | op::K, 31)));
            }
        };
        let stmt = |code: u16, k: u32| Item::Insn(Insn::stmt(code, k));
        Ok(match plan {
            Plan::RhsHeaderLen(at) => {
                self.value(l, false, out)?;
                out.push(stmt(op::LDX | op::B | op::MSH, at));
                false
            }
            Plan::LhsHeaderLen(at) => {
                self.value(r, false, out)?;
                out.push(stmt(op::LDX | op::B | op::MSH, at));
                true
            }
            Plan::RhsViaA => {
                self.value(r, false, out)?;
                mask_a(out);
                out.push(stmt(op::MISC | op::TAX, 0));
                self.value(l, true, out)?;
                false
            }
            Plan::LhsViaA => {
                self.value(l, false, out)?;
                out.push(stmt(op::MISC | op::TAX, 0));
                self.value(r, true, out)?;
                true
            }
            Plan::SpillRhs => {
                self.value(r, false, out)?;
                mask_a(out);
                let s = self.alloc()?;
                out.push(stmt(op::ST, s));
                self.value(l, false, out)?;
                out.push(stmt(op::LDX | op::MEM, s));
                self.scratch -= 1;
                false
            }
            Plan::SpillLhsSwapped => {
                self.value(l, false, out)?;
                let s = self.alloc()?;
                out.push(stmt(op::ST, s));
                self.value(r, false, out)?;
                out.push(stmt(op::LDX | op::MEM, s));
                self.scratch -= 1;
                true
            }
            Plan::SpillLhs => {
                self.value(l, false, out)?;
                let s = self.alloc()?;
                out.push(stmt(op::ST, s));
                self.value(r, false, out)?;
                mask_a(out);
                out.push(stmt(op::MISC | op::TAX, 0));
                out.push(stmt(op::LD | op::MEM, s));
                self.scratch -= 1;
                false
            }
        })
    }

    fn alloc(&mut self) -> Result<u32, CodegenError> {
        if self.scratch >= self.cache_floor {
            return Err(CodegenError::TooManyRegisters);
        }
        self.scratch += 1;
        Ok(self.scratch - 1)
    }
}

/// Values cheaper than this many instructions are recomputed rather than
/// cached in scratch memory (a reload is one instruction, a store one more).
const MIN_CACHED_COST: usize = 3;

/// Pass 1 of [`Gen::plan_cache`]: the candidate values (by id) and how
/// often each is used where it was computed before.
#[derive(Default)]
struct Candidates<'p> {
    ids: HashMap<&'p Value, usize>,
    cost: Vec<usize>,
    reuse: Vec<u32>,
    /// The deepest evaluation stack a test needs (scratch words).
    max_need: u32,
}

/// Is computing `v` surely shorter than [`MIN_CACHED_COST`]? (A quick
/// check before measuring.)
#[inline]
fn cheap(v: &Value) -> bool {
    matches!(v, Value::Const(_) | Value::Len | Value::Load { index: None, .. }) || cheap_compound(v)
}

/// [`cheap`] for values other than constants, the length and constant-offset
/// loads.
fn cheap_compound(v: &Value) -> bool {
    match v {
        Value::Const(_) | Value::Len | Value::Load { index: None, .. } => true,
        Value::Load { index: Some(i), offset, .. } => {
            // `ldxb 4*([k]&0xf); ld [x + k]`, or a constant index.
            matches!(**i, Value::Const(_)) || header_len_offset(peel(i, *offset).0).is_some()
        }
        // One instruction and an ALU one at most (`ld [k]; and #m`: a
        // masked address): what `Gen::compute` emits for them.
        Value::Neg(a) => single(a),
        Value::Bin(bop, l, r) => {
            single(l) && fold(r).is_some()
                || single(r) && fold(l).is_some() && commutative(*bop)
                || header_len_offset(v).is_some()
        }
        _ => false,
    }
}

/// Is `v` computed by one instruction (a constant, the length, a
/// constant-offset load)?
fn single(v: &Value) -> bool {
    matches!(v, Value::Const(_) | Value::Len | Value::Load { index: None, .. })
}

/// Whether a test of `p` compares a value that is not [`cheap`] (one that
/// [`Gen::plan_cache`] may choose to cache); deeper than [`MAX_DEPTH`]
/// counts as yes.
fn has_costly_value(p: &Pred, depth: usize) -> bool {
    if depth > MAX_DEPTH {
        return true;
    }
    match p {
        Pred::True | Pred::False => false,
        Pred::Not(q) => has_costly_value(q, depth + 1),
        // (Tests, most operands, without a call each.)
        Pred::And(v) | Pred::Or(v) => v.iter().any(|q| match q {
            Pred::Test(t) if depth < MAX_DEPTH => !cheap(&t.lhs) || !cheap(&t.rhs),
            _ => has_costly_value(q, depth + 1),
        }),
        Pred::Test(t) => !cheap(&t.lhs) || !cheap(&t.rhs),
    }
}

/// A set of candidate ids, sorted.
type Ids = Vec<usize>;

fn union(a: &[usize], b: &[usize]) -> Ids {
    let mut v: Ids = a.iter().chain(b).copied().collect();
    v.sort_unstable();
    v.dedup();
    v
}

fn intersection(a: &[usize], b: &[usize]) -> Ids {
    a.iter().copied().filter(|x| b.binary_search(x).is_ok()).collect()
}

impl Gen {
    /// Chooses the values to cache in scratch memory and, for each test,
    /// which cached values were computed on every path reaching it.
    ///
    /// A value (an expression of at least [`MIN_CACHED_COST`] instructions)
    /// is worth a slot if a test computes it twice or computes it after
    /// another test computed it on every path before. Such a value is stored
    /// where it is first computed and reloaded afterwards: reloading skips
    /// only loads and divisions that already ran without aborting, so the
    /// verdicts do not change.
    fn plan_cache(&mut self, pred: &Pred) {
        // Only values that are not `cheap` can be candidates: without any,
        // the walk below would choose nothing.
        if !has_costly_value(pred, 0) {
            return;
        }
        let mut cands = Candidates::default();
        self.reuse_walk(pred, &[], &mut cands, 0);
        let mut chosen: Vec<usize> = (0..cands.cost.len()).filter(|&i| cands.reuse[i] > 0).collect();
        if chosen.is_empty() {
            return;
        }
        let room = op::MEMWORDS.saturating_sub(cands.max_need) as usize;
        chosen.sort_by_key(|&i| std::cmp::Reverse((cands.cost[i] as u64) * u64::from(cands.reuse[i])));
        chosen.truncate(room);
        let by_id: HashMap<usize, &Value> = cands.ids.iter().map(|(v, &i)| (i, *v)).collect();
        for (n, i) in chosen.iter().enumerate() {
            if let Some(v) = by_id.get(i) {
                self.slots.insert((*v).clone(), op::MEMWORDS - 1 - n as u32);
            }
        }
        if self.slots.is_empty() {
            return;
        }
        self.cache_floor = op::MEMWORDS - self.slots.len() as u32;
        self.avail_walk(pred, 0, 0);
        self.ready = 0;
        self.scratch = 0;
    }

    /// Does [`Gen::test`] compile `t` through [`Gen::test_items`]?
    fn plain_test(t: &Test, depth: usize) -> bool {
        depth <= MAX_DEPTH
            && within_depth(&t.lhs, MAX_DEPTH - depth)
            && within_depth(&t.rhs, MAX_DEPTH - depth)
            && !aborts(&t.lhs)
            && !aborts(&t.rhs)
            && !has_protochain(&t.lhs)
            && !has_protochain(&t.rhs)
    }

    /// The instructions computing `v` takes (without caching).
    fn cost(&mut self, v: &Value) -> usize {
        let mut items = Vec::new();
        let saved = self.scratch;
        let ok = self.compute(v, false, &mut items).is_ok();
        self.scratch = saved;
        if ok {
            items.len()
        } else {
            0
        }
    }

    /// Pushes the values computing `v` computes through [`Gen::value`] that
    /// are worth caching (a value's parts cost less than the value).
    fn candidates<'p>(&mut self, v: &'p Value, out: &mut Vec<&'p Value>) {
        if cheap(v) || self.cost(v) < MIN_CACHED_COST {
            return;
        }
        out.push(v);
        match v {
            Value::Load { index: Some(i), offset, .. } if fold(i).is_none() => {
                let (rest, _) = peel(i, *offset);
                self.candidates(rest, out);
            }
            Value::Neg(a) => self.candidates(a, out),
            Value::Bin(_, l, r) => {
                self.candidates(l, out);
                self.candidates(r, out);
            }
            _ => {}
        }
    }

    /// Pass 1: walks `p` in evaluation order with the candidates computed
    /// on every path so far; returns those computed when `p` holds and when
    /// it does not.
    fn reuse_walk<'p>(&mut self, p: &'p Pred, avail: &[usize], c: &mut Candidates<'p>, depth: usize) -> (Ids, Ids) {
        if depth > MAX_DEPTH {
            return (avail.to_vec(), avail.to_vec());
        }
        match p {
            Pred::True | Pred::False => (avail.to_vec(), avail.to_vec()),
            Pred::Not(q) => {
                let (t, f) = self.reuse_walk(q, avail, c, depth + 1);
                (f, t)
            }
            Pred::And(v) | Pred::Or(v) => {
                let and = matches!(p, Pred::And(_));
                let mut cur = avail.to_vec();
                let mut other: Option<Ids> = None;
                for q in v {
                    let (t, f) = self.reuse_walk(q, &cur, c, depth + 1);
                    let (go_on, leave) = if and { (t, f) } else { (f, t) };
                    other = Some(match other {
                        None => leave,
                        Some(o) => intersection(&o, &leave),
                    });
                    cur = go_on;
                }
                let other = other.unwrap_or_else(|| avail.to_vec());
                if and {
                    (cur, other)
                } else {
                    (other, cur)
                }
            }
            Pred::Test(t) => {
                if has_protochain(&t.lhs) || has_protochain(&t.rhs) {
                    c.max_need = c.max_need.max(1);
                }
                if !Self::plain_test(t, depth) {
                    return (avail.to_vec(), avail.to_vec());
                }
                let need = match (fold(&t.lhs), fold(&t.rhs)) {
                    (Some(_), Some(_)) => 0,
                    (_, Some(_)) => need(&t.lhs),
                    (Some(_), None) => need(&t.rhs),
                    (None, None) => plan(&t.lhs, &t.rhs, true, false).1,
                };
                c.max_need = c.max_need.max(need);
                let mut found = Vec::new();
                self.candidates(&t.lhs, &mut found);
                self.candidates(&t.rhs, &mut found);
                if found.is_empty() {
                    return (avail.to_vec(), avail.to_vec());
                }
                let mut here: Ids = Vec::new();
                for v in found {
                    let next = c.ids.len();
                    let id = *c.ids.entry(v).or_insert(next);
                    if id == next {
                        c.cost.push(self.cost(v));
                        c.reuse.push(0);
                    }
                    if avail.binary_search(&id).is_ok() || here.contains(&id) {
                        c.reuse[id] += 1;
                    }
                    here.push(id);
                }
                here.sort_unstable();
                let after = union(avail, &here);
                (after.clone(), after)
            }
        }
    }

    /// Pass 3: walks `p` in evaluation order with the cached values
    /// computed on every path so far (a mask of slots), records it for each
    /// test and returns the masks when `p` holds and when it does not. Each
    /// test is compiled to a scratch buffer exactly as it will be, to see
    /// what it stores.
    fn avail_walk(&mut self, p: &Pred, avail: u16, depth: usize) -> (u16, u16) {
        if depth > MAX_DEPTH {
            return (avail, avail);
        }
        match p {
            Pred::True | Pred::False => (avail, avail),
            Pred::Not(q) => {
                let (t, f) = self.avail_walk(q, avail, depth + 1);
                (f, t)
            }
            Pred::And(v) | Pred::Or(v) => {
                let and = matches!(p, Pred::And(_));
                let mut cur = avail;
                let mut other = u16::MAX;
                for q in v {
                    let (t, f) = self.avail_walk(q, cur, depth + 1);
                    let (go_on, leave) = if and { (t, f) } else { (f, t) };
                    other &= leave;
                    cur = go_on;
                }
                if v.is_empty() {
                    other = avail;
                }
                if and {
                    (cur, other)
                } else {
                    (other, cur)
                }
            }
            Pred::Test(t) => {
                if !Self::plain_test(t, depth) {
                    return (avail, avail);
                }
                self.avail.insert(t as *const Test, avail);
                self.ready = avail;
                self.scratch = 0;
                let mut items = Vec::new();
                let after = match self.test_items(t, &mut items) {
                    Ok(_) => self.ready,
                    Err(_) => avail,
                };
                (after, after)
            }
        }
    }
}

/// How to get two operands into A and X.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Plan {
    /// `r` is an IPv4 header length: compute `l`, then `ldxb` `r`.
    RhsHeaderLen(u32),
    /// Swapped: compute `r`, then `ldxb` `l`.
    LhsHeaderLen(u32),
    /// `l` does not need X: `r`; `tax`; `l`.
    RhsViaA,
    /// Swapped, `r` does not need X: `l`; `tax`; `r`.
    LhsViaA,
    /// `r`; `st M[s]`; `l`; `ldx M[s]`.
    SpillRhs,
    /// Swapped: `l`; `st M[s]`; `r`; `ldx M[s]`.
    SpillLhsSwapped,
    /// `l`; `st M[s]`; `r`; `tax`; `ld M[s]`.
    SpillLhs,
}

/// The plan for two operands and the scratch words it needs.
fn plan(l: &Value, r: &Value, swappable: bool, mask: bool) -> (Plan, u32) {
    if !mask {
        if let Some(at) = header_len_offset(r) {
            return (Plan::RhsHeaderLen(at), need(l));
        }
        if let (Some(at), true) = (header_len_offset(l), swappable) {
            return (Plan::LhsHeaderLen(at), need(r));
        }
    }
    if !needs_x(l) {
        return (Plan::RhsViaA, need(r).max(need(l)));
    }
    if swappable && !needs_x(r) {
        return (Plan::LhsViaA, need(l).max(need(r)));
    }
    let (nl, nr) = (need(l), need(r));
    let rhs_first = nr.max(nl + 1);
    let lhs_first = nl.max(nr + 1);
    if rhs_first <= lhs_first {
        (Plan::SpillRhs, rhs_first)
    } else if swappable {
        (Plan::SpillLhsSwapped, lhs_first)
    } else {
        (Plan::SpillLhs, lhs_first)
    }
}

/// Scratch words needed to compute `v` into A (mirrors `Gen::value`).
fn need(v: &Value) -> u32 {
    if fold(v).is_some() {
        return 0;
    }
    match v {
        Value::Const(_) | Value::Len | Value::Load { index: None, .. } => 0,
        Value::Load { index: Some(i), offset, .. } => {
            if fold(i).is_some() {
                0
            } else {
                need(peel(i, *offset).0)
            }
        }
        Value::Neg(a) => need(a),
        Value::Protochain { .. } => 1,
        Value::Bin(bop, l, r) => {
            if header_len_offset(v).is_some() {
                0
            } else if fold(r).is_some() {
                need(l)
            } else if fold(l).is_some() && commutative(*bop) {
                need(r)
            } else {
                plan(l, r, commutative(*bop), matches!(bop, BinOp::Shl | BinOp::Shr)).1
            }
        }
    }
}

/// Does computing `v` into A necessarily use X?
fn needs_x(v: &Value) -> bool {
    if fold(v).is_some() {
        return false;
    }
    match v {
        Value::Const(_) | Value::Len | Value::Load { index: None, .. } => false,
        Value::Load { index: Some(i), .. } => fold(i).is_none(),
        Value::Neg(a) => needs_x(a),
        Value::Protochain { .. } => true,
        Value::Bin(bop, l, r) => {
            if fold(r).is_some() {
                needs_x(l)
            } else if fold(l).is_some() && commutative(*bop) {
                needs_x(r)
            } else {
                true
            }
        }
    }
}

/// The offset `k` if `v` is the IPv4 header length idiom `4 * (u8[k] & 0xf)`
/// (`ldxb 4*([k]&0xf)`).
fn header_len_offset(v: &Value) -> Option<u32> {
    let Value::Bin(outer, a, b) = v else { return None };
    let times4 = matches!((outer, &**b), (BinOp::Shl, Value::Const(2)) | (BinOp::Mul, Value::Const(4)));
    if !times4 {
        return None;
    }
    let Value::Bin(BinOp::And, x, y) = &**a else { return None };
    let load = match (&**x, &**y) {
        (l, Value::Const(0xf)) | (Value::Const(0xf), l) => l,
        _ => return None,
    };
    let Value::Load { size: Size::Byte, index, offset } = load else { return None };
    // A constant index is part of the address.
    let base = index.as_deref().map_or(Some(0), fold)?;
    let at = u64::from(base) + u64::from(*offset);
    if at <= LAST_OFFSET {
        Some(at as u32)
    } else {
        None
    }
}

/// Is `v` a constant, the length or a constant-offset load that does not
/// abort on every packet? (Nested one level: [`within_depth`] holds for
/// any budget from 1, and neither [`aborts`] nor [`has_protochain`] does.)
fn leaf(v: &Value) -> bool {
    match v {
        Value::Const(_) | Value::Len => true,
        Value::Load { size, index: None, offset } => u64::from(*offset) + u64::from(size.bytes()) - 1 <= LAST_OFFSET,
        _ => false,
    }
}

/// Is `v` a [`leaf`], an operation on leaves (a masked load, ...) or a
/// load indexed by the IPv4 header length that does not abort? If so, [`within_depth`] holds for `budget` (when it is
/// large enough) and neither [`aborts`] nor [`has_protochain`] does.
#[inline]
fn plain_operand(v: &Value, budget: usize) -> bool {
    if leaf(v) {
        return budget >= 1;
    }
    plain_compound(v, budget)
}

/// [`plain_operand`] for values other than leaves.
fn plain_compound(v: &Value, budget: usize) -> bool {
    match v {
        Value::Neg(a) => budget >= 2 && leaf(a),
        Value::Bin(bop, l, r) => {
            let by_zero = matches!(bop, BinOp::Div | BinOp::Mod) && matches!(**r, Value::Const(0));
            budget >= 2 && leaf(l) && leaf(r) && !by_zero
        }
        // `[x + k]` with X the IPv4 header length (five levels at most),
        // maybe plus a constant (six).
        Value::Load { size, index: Some(i), offset } => {
            let levels = match &**i {
                Value::Bin(BinOp::Add, a, b) => match (&**a, &**b) {
                    (h, Value::Const(_)) | (Value::Const(_), h) if header_len_offset(h).is_some() => 6,
                    _ => return false,
                },
                _ if header_len_offset(i).is_some() => 5,
                _ => return false,
            };
            // (Where `aborts` says the load starts.)
            let start = peel(i, *offset).1;
            budget >= levels && start + u64::from(size.bytes()) - 1 <= LAST_OFFSET
        }
        _ => false,
    }
}

/// Does `v` contain a [`Value::Protochain`]?
fn has_protochain(v: &Value) -> bool {
    match v {
        Value::Protochain { .. } => true,
        Value::Const(_) | Value::Len => false,
        Value::Load { index, .. } => index.as_deref().is_some_and(has_protochain),
        Value::Neg(a) => has_protochain(a),
        Value::Bin(_, l, r) => has_protochain(l) || has_protochain(r),
    }
}

/// The largest network-layer offset a `protochain` walk is compiled for.
const PROTOCHAIN_MAX_NL: u32 = 0x1000_0000;

/// The value of `v` if it involves no packet data and does not abort.
fn fold(v: &Value) -> Option<u32> {
    match v {
        Value::Const(c) => Some(*c),
        Value::Len | Value::Load { .. } => None,
        Value::Neg(a) => fold(a).map(u32::wrapping_neg),
        Value::Protochain { .. } => None,
        Value::Bin(bop, l, r) => sift_ir::eval::apply(*bop, fold(l)?, fold(r)?).ok(),
    }
}

/// Does computing `v` abort on every packet? (A load beyond the signed
/// 32-bit offset range, or a division by a constant 0.)
fn aborts(v: &Value) -> bool {
    match v {
        Value::Const(_) | Value::Len => false,
        Value::Load { size, index, offset } => {
            // The smallest offset the load can have.
            let start = match index.as_deref() {
                None => u64::from(*offset),
                Some(i) => match fold(i) {
                    Some(c) => u64::from(c) + u64::from(*offset),
                    None => peel(i, *offset).1,
                },
            };
            start + u64::from(size.bytes()) - 1 > LAST_OFFSET || index.as_deref().is_some_and(aborts)
        }
        Value::Neg(a) => aborts(a),
        Value::Protochain { .. } => false,
        Value::Bin(bop, l, r) => {
            (matches!(bop, BinOp::Div | BinOp::Mod) && fold(r) == Some(0)) || aborts(l) || aborts(r)
        }
    }
}

/// Moves constant addends of a load's index into its offset: `[(i + c) + k]`
/// is `[i + (c + k)]` when `i + c` cannot wrap around (the IR adds the index
/// in 32 bits, then the offset exactly). Returns the remaining index and the
/// offset, which may exceed 32 bits (the load then always aborts).
fn peel(index: &Value, offset: u32) -> (&Value, u64) {
    let (mut index, mut offset) = (index, u64::from(offset));
    while let Value::Bin(BinOp::Add, a, b) = index {
        let (rest, c) = match (fold(a), fold(b)) {
            (_, Some(c)) => (&**a, c),
            (Some(c), None) => (&**b, c),
            (None, None) => break,
        };
        if u64::from(max_value(rest)) + u64::from(c) > u64::from(u32::MAX) {
            break;
        }
        index = rest;
        offset += u64::from(c);
    }
    (index, offset)
}

/// Is `v` nested at most `budget` levels deep?
fn within_depth(v: &Value, budget: usize) -> bool {
    if budget == 0 {
        return false;
    }
    match v {
        Value::Const(_) | Value::Len => true,
        Value::Load { index, .. } => index.as_deref().is_none_or(|i| within_depth(i, budget - 1)),
        Value::Neg(a) => within_depth(a, budget - 1),
        Value::Protochain { .. } => true,
        Value::Bin(_, l, r) => within_depth(l, budget - 1) && within_depth(r, budget - 1),
    }
}

/// An upper bound of `v` (when it does not abort).
fn max_value(v: &Value) -> u32 {
    if let Some(c) = fold(v) {
        return c;
    }
    match v {
        Value::Const(c) => *c,
        Value::Len | Value::Neg(_) => u32::MAX,
        Value::Protochain { .. } => 0xff,
        Value::Load { size, .. } => match size {
            Size::Byte => 0xff,
            Size::Half => 0xffff,
            Size::Word => u32::MAX,
        },
        Value::Bin(bop, l, r) => {
            let (a, b) = (max_value(l), max_value(r));
            let bits = |m: u32| if m == 0 { 0 } else { u32::MAX >> m.leading_zeros() };
            match bop {
                BinOp::Add => a.saturating_add(b),
                BinOp::Mul => a.saturating_mul(b),
                BinOp::Sub => u32::MAX,
                BinOp::Div => a,
                BinOp::Mod => a.min(b.saturating_sub(1)),
                BinOp::And => a.min(b),
                BinOp::Or | BinOp::Xor => bits(a.max(b)),
                BinOp::Shl => match fold(r) {
                    Some(k) => u32::try_from(u64::from(a) << (k & 31)).unwrap_or(u32::MAX),
                    None => u32::MAX,
                },
                BinOp::Shr => match fold(r) {
                    Some(k) => a >> (k & 31),
                    None => a,
                },
            }
        }
    }
}

fn commutative(bop: BinOp) -> bool {
    matches!(bop, BinOp::Add | BinOp::Mul | BinOp::And | BinOp::Or | BinOp::Xor)
}

fn size_code(size: Size) -> u16 {
    match size {
        Size::Byte => op::B,
        Size::Half => op::H,
        Size::Word => op::W,
    }
}

fn alu_code(bop: BinOp) -> u16 {
    match bop {
        BinOp::Add => op::ADD,
        BinOp::Sub => op::SUB,
        BinOp::Mul => op::MUL,
        BinOp::Div => op::DIV,
        BinOp::Mod => op::MOD,
        BinOp::And => op::AND,
        BinOp::Or => op::OR,
        BinOp::Xor => op::XOR,
        BinOp::Shl => op::LSH,
        BinOp::Shr => op::RSH,
    }
}

/// Appends `A = A op k`, leaving out operations that change nothing. `k` is
/// not 0 for a division (such tests abort and are never compiled).
fn alu_k(bop: BinOp, k: u32, out: &mut Vec<Item>) {
    let k = if matches!(bop, BinOp::Shl | BinOp::Shr) { k & 31 } else { k };
    let identity = match bop {
        BinOp::Add | BinOp::Sub | BinOp::Or | BinOp::Xor | BinOp::Shl | BinOp::Shr => k == 0,
        BinOp::Mul | BinOp::Div => k == 1,
        BinOp::And => k == u32::MAX,
        BinOp::Mod => false,
    };
    if !identity {
        out.push(Item::Insn(Insn::stmt(op::ALU | alu_code(bop) | op::K, k)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::dump_d;
    use sift_ir::eval::PacketView;

    fn ld(size: Size, off: u32) -> Value {
        Value::load(size, off)
    }
    fn compile_default(p: &Pred) -> Vec<Insn> {
        compile(p, &CodegenOptions::default()).unwrap()
    }
    fn d(p: &Pred) -> String {
        dump_d(&compile_default(p))
    }

    /// What `cheap` says is cheap takes fewer than `MIN_CACHED_COST`
    /// instructions (so `Gen::plan_cache` may skip it: it would not cache
    /// it, nor look inside); what `plain_operand` accepts needs none of the
    /// checks `Gen::test` skips for it.
    #[test]
    fn cheap_values_are_shorter_than_a_cached_one() {
        fn random_value(next: &mut impl FnMut(u64) -> u64, depth: u32) -> Value {
            let leaf = depth == 0 || next(3) == 0;
            match next(if leaf { 3 } else { 8 }) {
                0 => Value::Const([0, 2, 4, 0xf, 0x1fff, 0xffff_ff00][next(6) as usize]),
                1 => Value::Len,
                // (Sometimes beyond the last offset: such a load aborts.)
                2 => ld([Size::Byte, Size::Half, Size::Word][next(3) as usize], [next(1500) as u32, 0x7fff_fffe][next(2) as usize]),
                6 => Value::Protochain { v6: false, proto: 6, nl: 14 },
                3 => Value::Neg(Box::new(random_value(next, depth - 1))),
                4 => Value::load_indexed(Size::Byte, random_value(next, depth - 1), next(64) as u32),
                // Indexed by a header length, `4*([at]&0xf)` in its forms.
                7 => {
                    let at = [14, 0x7fff_fffe, 0x7fff_ffff][next(3) as usize];
                    let byte = match next(2) {
                        0 => ld(Size::Byte, at),
                        _ => Value::load_indexed(Size::Byte, Value::Const(next(3) as u32), at),
                    };
                    let (byte, nibble) = (Box::new(byte), Box::new(Value::Const(0xf)));
                    let masked = if next(2) == 0 { Value::Bin(BinOp::And, byte, nibble) } else { Value::Bin(BinOp::And, nibble, byte) };
                    let times4 = [(BinOp::Mul, 4), (BinOp::Shl, 2), (BinOp::Shl, 3)][next(3) as usize];
                    let hlen = Value::Bin(times4.0, Box::new(masked), Box::new(Value::Const(times4.1)));
                    let size = [Size::Byte, Size::Half, Size::Word][next(3) as usize];
                    let c = Box::new(Value::Const([14, 0x7fff_ff00, 0xffff_fff0][next(3) as usize]));
                    let index = match next(3) {
                        0 => hlen,
                        1 => Value::Bin(BinOp::Add, Box::new(hlen), c),
                        _ => Value::Bin(BinOp::Add, c, Box::new(hlen)),
                    };
                    Value::load_indexed(size, index, [next(64) as u32, 0x7fff_fff8 + next(8) as u32][next(2) as usize])
                }
                _ => {
                    let bop = [BinOp::Add, BinOp::Sub, BinOp::Mul, BinOp::Div, BinOp::And, BinOp::Or, BinOp::Shl][next(7) as usize];
                    Value::Bin(bop, Box::new(random_value(next, depth - 1)), Box::new(random_value(next, depth - 1)))
                }
            }
        }
        let mut seed = 9u64;
        let mut next = |m: u64| {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            (seed >> 33) % m
        };
        let mut cheap_compounds = 0;
        let mut plain = 0;
        for _ in 0..20_000 {
            let v = random_value(&mut next, 3);
            let budget = next(7) as usize;
            if plain_operand(&v, budget) {
                plain += 1;
                assert!(within_depth(&v, budget) && !aborts(&v) && !has_protochain(&v), "{v:?} {budget}");
            }
            // (Not indexed loads: `cheap` takes one indexed by a header
            // length as two instructions, which it is but near the last
            // offset, where a guard makes it five; that only makes the
            // cache planner skip such a value, as it always did.)
            if cheap(&v) && !aborts(&v) && !matches!(v, Value::Load { index: Some(_), .. }) {
                cheap_compounds += usize::from(!single(&v));
                assert!(Gen::default().cost(&v) < MIN_CACHED_COST, "{v:?}");
            }
        }
        assert!(cheap_compounds > 1000 && plain > 1000, "{cheap_compounds} {plain}");
    }

    /// `Gen::test_items`'s first cases (a constant-offset load, maybe with
    /// a constant operation, or an `[x + k]` load indexed by the IPv4
    /// header length, against a constant, nothing cached) emit what its
    /// general case emits.
    #[test]
    fn the_common_test_shortcut_agrees_with_the_general_case() {
        let mut seed = 3u64;
        let mut next = |m: u64| {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            (seed >> 33) % m
        };
        for _ in 0..3000 {
            let size = [Size::Byte, Size::Half, Size::Word][next(3) as usize];
            let offset = [next(64) as u32, next(1 << 31) as u32][next(2) as usize];
            let k = [next(256) as u32, (next(1 << 32)) as u32][next(2) as usize];
            let op = [CmpOp::Eq, CmpOp::Gt, CmpOp::Ge, CmpOp::Set][next(4) as usize];
            let bop = [BinOp::And, BinOp::Add, BinOp::Shl, BinOp::Shr, BinOp::Mul, BinOp::Div, BinOp::Mod][next(7) as usize];
            let m = [0, 1, 31, 32, 0xffff_ff00, u32::MAX][next(6) as usize];
            // The IPv4 header length, `4*([14]&0xf)` in one of its forms.
            let hlen = |next: &mut dyn FnMut(u64) -> u64| {
                let nibble = Value::Bin(BinOp::And, Box::new(ld(Size::Byte, 14)), Box::new(Value::Const(0xf)));
                let times4 = [(BinOp::Mul, 4), (BinOp::Shl, 2)][next(2) as usize];
                Value::Bin(times4.0, Box::new(nibble), Box::new(Value::Const(times4.1)))
            };
            let lhs = match next(4) {
                0 => ld(size, offset),
                1 => Value::Bin(bop, Box::new(ld(size, offset)), Box::new(Value::Const(m))),
                // (Offsets around where the kernel's reading needs a guard.)
                2 => Value::load_indexed(size, hlen(&mut next), [offset, 0x7fff_ffff - 72 + next(16) as u32][next(2) as usize]),
                _ => {
                    let c = [14, 0x7fff_ff00, 0xffff_fff0][next(3) as usize];
                    let index = Value::Bin(BinOp::Add, Box::new(hlen(&mut next)), Box::new(Value::Const(c)));
                    Value::load_indexed(size, index, next(64) as u32)
                }
            };
            let t = Test { lhs, op, rhs: Value::Const(k) };
            let mut g = Gen::default();
            let (mut fast, mut general) = (Vec::new(), Vec::new());
            let a = g.test_items(&t, &mut fast).unwrap();
            let b = g.test_items_general(&t, &mut general).unwrap();
            assert_eq!((a, format!("{fast:?}")), (b, format!("{general:?}")), "{t:?}");
        }
    }

    #[test]
    fn constants() {
        assert_eq!(d(&Pred::True), "(000) ret      #262144\n");
        assert_eq!(d(&Pred::False), "(000) ret      #0\n");
        assert_eq!(d(&Pred::True.not()), "(000) ret      #0\n");
        assert_eq!(d(&Pred::eq(Value::Const(3), 3)), "(000) ret      #262144\n");
        let p = compile(&Pred::True, &CodegenOptions { snaplen: 96 }).unwrap();
        assert_eq!(p, vec![Insn::stmt(op::RET | op::K, 96)]);
        let p = compile(&Pred::True, &CodegenOptions { snaplen: 0 }).unwrap();
        assert_eq!(p, vec![Insn::stmt(op::RET | op::K, DEFAULT_SNAPLEN)]);
    }

    /// A program much shorter than its emission does not keep the
    /// emission's room.
    #[test]
    fn programs_keep_little_spare_room() {
        let ip = Pred::eq(ld(Size::Half, 12), 0x800);
        let many = (0..400).fold(Pred::False, |p, _| p.or(ip.clone()));
        let p = compile_default(&many);
        assert!(p.len() < 10, "{}", dump_d(&p));
        assert!(p.capacity() - p.len() <= SPARE_KEPT, "{} of {}", p.capacity(), p.len());
    }

    #[test]
    fn simple_test_and_or() {
        let ip = Pred::eq(ld(Size::Half, 12), 0x800);
        let udp = Pred::eq(ld(Size::Byte, 23), 17);
        assert_eq!(
            d(&ip.clone().and(udp.clone())),
            "(000) ldh      [12]\n\
             (001) jeq      #0x800           jt 2\tjf 5\n\
             (002) ldb      [23]\n\
             (003) jeq      #0x11            jt 4\tjf 5\n\
             (004) ret      #262144\n\
             (005) ret      #0\n"
        );
        assert_eq!(
            d(&ip.clone().or(udp.clone()).not()),
            "(000) ldh      [12]\n\
             (001) jeq      #0x800           jt 5\tjf 2\n\
             (002) ldb      [23]\n\
             (003) jeq      #0x11            jt 5\tjf 4\n\
             (004) ret      #262144\n\
             (005) ret      #0\n"
        );
    }

    #[test]
    fn comparison_forms() {
        let t = |lhs, op, rhs| d(&Pred::test(lhs, op, rhs));
        assert!(t(Value::Len, CmpOp::Ge, Value::Const(100)).starts_with("(000) ld       #pktlen\n(001) jge      #0x64 "));
        assert!(t(ld(Size::Byte, 0), CmpOp::Set, Value::Const(1)).contains("jset     #0x1 "));
        // Constant on the left: `5 > A` is `!(A >= 5)`.
        assert_eq!(
            t(Value::Const(5), CmpOp::Gt, ld(Size::Byte, 0)),
            "(000) ldb      [0]\n(001) jge      #0x5             jt 3\tjf 2\n(002) ret      #262144\n(003) ret      #0\n"
        );
        // Two loads: X form.
        assert_eq!(
            t(ld(Size::Byte, 0), CmpOp::Gt, ld(Size::Byte, 1)),
            "(000) ldb      [1]\n(001) tax      \n(002) ldb      [0]\n(003) jgt      x                jt 4\tjf 5\n\
             (004) ret      #262144\n(005) ret      #0\n"
        );
    }

    #[test]
    fn header_length_idiom_and_indexed_loads() {
        // tcp[13] & 2 != 0, IPv4 at 14.
        let tcp13 = Value::load_indexed(Size::Byte, Value::ipv4_header_len(14), 14 + 13);
        let p = Pred::test(tcp13, CmpOp::Set, Value::Const(2));
        assert_eq!(
            d(&p),
            "(000) ldxb     4*([14]&0xf)\n(001) ldb      [x + 27]\n(002) jset     #0x2             jt 3\tjf 4\n\
             (003) ret      #262144\n(004) ret      #0\n"
        );
        // A byte index needs no guard; a word index does.
        let small = Value::load_indexed(Size::Half, ld(Size::Byte, 0), 10);
        assert!(!d(&Pred::eq(small, 1)).contains("jgt"));
        let big = Value::load_indexed(Size::Half, ld(Size::Word, 0), 10);
        assert_eq!(
            d(&Pred::eq(big, 1)),
            "(000) ld       [0]\n(001) jgt      #0x7ffffff3      jt 6\tjf 2\n(002) tax      \n(003) ldh      [x + 10]\n\
             (004) jeq      #0x1             jt 5\tjf 6\n(005) ret      #262144\n(006) ret      #0\n"
        );
        // Constant addends of the index move into the offset (tcp[13] as
        // lowered: u8[(13 + hlen) + 14]), unless the addition could wrap.
        let tcp13 = Value::load_indexed(Size::Byte, Value::Const(13).bin(BinOp::Add, Value::ipv4_header_len(14)), 14);
        assert!(d(&Pred::eq(tcp13, 2)).starts_with("(000) ldxb     4*([14]&0xf)\n(001) ldb      [x + 27]\n"));
        let wraps = Value::load_indexed(Size::Byte, ld(Size::Word, 0).bin(BinOp::Add, Value::Const(3)), 14);
        assert!(d(&Pred::eq(wraps, 2)).contains("(001) add      #3\n"));
        // The header length over a byte with a constant index.
        let hlen = Value::load_indexed(Size::Byte, Value::Const(0), 14)
            .bin(BinOp::And, Value::Const(0xf))
            .bin(BinOp::Mul, Value::Const(4));
        let ip_word = Value::load_indexed(Size::Half, hlen.bin(BinOp::Add, Value::Const(2)), 14);
        assert!(d(&Pred::eq(ip_word, 53)).starts_with("(000) ldxb     4*([14]&0xf)\n(001) ldh      [x + 16]\n"));
        // A constant index folds into the offset.
        let c = Value::load_indexed(Size::Byte, Value::Const(4), 10);
        assert!(d(&Pred::eq(c, 1)).starts_with("(000) ldb      [14]\n"));
    }

    #[test]
    fn definite_aborts_become_ret_0() {
        let far = Pred::eq(ld(Size::Word, 0x7fff_fffc), 1);
        assert_eq!(d(&far), "(000) ret      #0\n");
        let near = Pred::eq(ld(Size::Word, 0x7fff_fffb), 1);
        assert!(d(&near).starts_with("(000) ld       [2147483643]\n"));
        let anc = Pred::eq(ld(Size::Half, 0xffff_f004), 1);
        assert_eq!(d(&anc), "(000) ret      #0\n");
        let div0 = Pred::eq(ld(Size::Byte, 0).bin(BinOp::Div, Value::Const(0)), 1);
        assert_eq!(d(&div0), "(000) ret      #0\n");
        // Under `not` and after a test that can accept first.
        let p = Pred::eq(ld(Size::Byte, 0), 1).or(div0.not());
        assert_eq!(
            d(&p),
            "(000) ldb      [0]\n(001) jeq      #0x1             jt 2\tjf 3\n(002) ret      #262144\n(003) ret      #0\n"
        );
    }

    #[test]
    fn computed_shift_counts_are_masked() {
        let p = Pred::eq(ld(Size::Byte, 0).bin(BinOp::Shl, ld(Size::Byte, 1)), 0);
        let text = d(&p);
        assert!(text.contains("and      #0x1f"), "{text}");
        let p = Pred::eq(ld(Size::Byte, 0).bin(BinOp::Shl, ld(Size::Byte, 1).bin(BinOp::And, Value::Const(7))), 0);
        assert!(!d(&p).contains("#0x1f"));
        // Constant counts are reduced.
        let p = Pred::eq(ld(Size::Byte, 0).bin(BinOp::Shl, Value::Const(33)), 0);
        assert!(d(&p).contains("lsh      #1\n"));
    }

    #[test]
    fn scratch_memory_spills() {
        // (u8[0] + u8[x+1]) - (u8[2] * u8[x+3]): both sides need X.
        let ix = |o| Value::load_indexed(Size::Byte, ld(Size::Byte, 9), o);
        let l = ld(Size::Byte, 0).bin(BinOp::Sub, ix(1));
        let r = ld(Size::Byte, 2).bin(BinOp::Sub, ix(3));
        let p = Pred::test(l, CmpOp::Gt, r);
        let prog = compile_default(&p);
        let text = dump_d(&prog);
        assert!(text.contains("st       M[0]") && text.contains("M[0]"), "{text}");
        for data in [&[1u8, 2, 3, 4, 5, 6, 7, 8, 9, 0][..], &[9, 0, 0, 0, 0, 0, 0, 0, 0, 1], &[1, 2]] {
            let want = sift_ir::matches(&p, PacketView { data, wire_len: 60 });
            assert_eq!(crate::interp::run(&prog, data, 60) != 0, want);
        }
    }

    #[test]
    fn too_many_registers() {
        // A balanced tree of subtractions whose leaves all need X needs one
        // more scratch word per level.
        fn tree(depth: u32, next: &mut u32) -> Value {
            if depth == 0 {
                *next += 1;
                return Value::load_indexed(Size::Byte, Value::load(Size::Byte, 0), *next);
            }
            let l = tree(depth - 1, next);
            let r = tree(depth - 1, next);
            l.bin(BinOp::Sub, r)
        }
        let fits = Pred::eq(tree(16, &mut 0), 0);
        assert!(matches!(compile(&fits, &CodegenOptions::default()), Err(CodegenError::ProgramTooLarge { .. })));
        let p = Pred::eq(tree(17, &mut 0), 0);
        assert_eq!(compile(&p, &CodegenOptions::default()), Err(CodegenError::TooManyRegisters));
        assert!(CodegenError::TooManyRegisters.to_string().contains("too many registers"));
    }

    #[test]
    fn too_large() {
        let tests: Vec<Pred> = (0..2100).map(|i| Pred::eq(ld(Size::Word, i), i)).collect();
        let err = compile(&Pred::Or(tests), &CodegenOptions::default()).unwrap_err();
        let CodegenError::ProgramTooLarge { len } = err else { panic!("{err:?}") };
        assert!(len > 4200);
        assert_eq!(err.to_string(), format!("program too large ({len} instructions, the kernel's limit is 4096)"));
    }

    #[test]
    fn long_branches_use_trampolines() {
        // 300 alternatives, each true → accept far away.
        let tests: Vec<Pred> = (0..300).map(|i| Pred::eq(ld(Size::Byte, i), i)).collect();
        let p = Pred::Or(tests).and(Pred::eq(ld(Size::Byte, 0), 7));
        let prog = compile_default(&p);
        validate(&prog).unwrap();
        let mut data = vec![0u8; 400];
        data[200] = 200;
        for (first, want) in [(7u8, true), (8, false)] {
            data[0] = first;
            let expect = sift_ir::matches(&p, PacketView { data: &data, wire_len: 400 });
            assert_eq!(expect, want);
            assert_eq!(crate::interp::run(&prog, &data, 400) != 0, want);
        }
    }

    /// Every truncation of a few pseudo-random packets: the program's
    /// verdict equals the reference evaluator's.
    fn check_exact(p: &Pred, prog: &[Insn]) {
        let mut seed = 0x9e37_79b9_u32;
        for round in 0..64 {
            let mut data = [0u8; 48];
            for b in data.iter_mut() {
                seed ^= seed << 13;
                seed ^= seed >> 17;
                seed ^= seed << 5;
                // Small bytes make small radiotap-like lengths.
                *b = if round % 2 == 0 { (seed % 12) as u8 } else { seed as u8 };
            }
            for len in 0..=data.len() {
                let view = PacketView { data: &data[..len], wire_len: 48 };
                let want = sift_ir::matches(p, view);
                assert_eq!(crate::interp::run(prog, &data[..len], 48) != 0, want, "{p:?} on {:?}", &data[..len]);
            }
        }
    }

    #[test]
    fn repeated_values_are_cached_in_scratch_memory() {
        // A radiotap-like header length, used by several tests.
        let hlen = || ld(Size::Byte, 2).bin(BinOp::Or, ld(Size::Byte, 3).bin(BinOp::Shl, Value::Const(8)));
        let at = |size, off| Value::load_indexed(size, hlen(), off);
        let a = Pred::eq(at(Size::Byte, 0), 8);
        let b = Pred::test(at(Size::Half, 4), CmpOp::Gt, Value::Const(3));
        let c = Pred::eq(at(Size::Byte, 1), 1).or(Pred::eq(at(Size::Byte, 1), 2));
        let p = a.clone().and(b.clone()).and(c.clone());
        let prog = compile_default(&p);
        let text = dump_d(&prog);
        assert_eq!(text.matches("lsh      #8").count(), 1, "{text}");
        assert!(text.contains("st       M[15]") && text.contains("ld       M[15]"), "{text}");
        check_exact(&p, &prog);
        // Not computed on every path before the second alternative: it is
        // computed again there.
        let first = Pred::eq(ld(Size::Byte, 0), 1).and(a.clone());
        let p = first.or(c.clone());
        let prog = compile_default(&p);
        assert_eq!(dump_d(&prog).matches("lsh      #8").count(), 2, "{}", dump_d(&prog));
        check_exact(&p, &prog);
        // Twice in one test, under `not`, after an `or`.
        let twice = Pred::test(at(Size::Byte, 0), CmpOp::Gt, at(Size::Byte, 1));
        for p in [twice.clone(), a.clone().or(b.clone()).and(twice.clone().not()), c.clone().and(b.clone().or(twice))] {
            let prog = compile_default(&p);
            check_exact(&p, &prog);
        }
        // A cheap value is not cached.
        let ip = Pred::eq(ld(Size::Half, 12), 0x800);
        assert!(!d(&ip.clone().and(ip.not())).contains("M["));
    }

    #[test]
    fn too_deep() {
        let mut p = Pred::True;
        for _ in 0..MAX_DEPTH + 5 {
            p = p.not();
        }
        assert_eq!(compile(&p, &CodegenOptions::default()), Err(CodegenError::TooDeep));
    }
}
