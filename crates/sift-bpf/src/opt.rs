//! A bounded optimizer for classic BPF programs whose jumps all go forward
//! (the code generator's output), keeping every verdict of libpcap's
//! `bpf_filter` and of the Linux kernel.
//!
//! # What it does
//!
//! [`optimize`] repeats, at most [`MAX_ROUNDS`] times and only while
//! something changes, one round of five steps:
//!
//! 1. **Path facts** (`analyze`): a forward pass in program order (jumps go
//!    forward, so every predecessor comes first) computes, before each
//!    instruction, what holds on *every* path reaching it: what A and X
//!    hold (`Known`: a constant, also as the result of constant ALU
//!    operations and `and #0`, the wire length, a constant-offset load, an
//!    `[x + k]` load with X the IPv4 header length, the header length
//!    itself, a scratch word as last stored) and which scratch words they
//!    equal, which packet bytes were loaded successfully (so loading them
//!    again cannot abort), and what the conditional jumps taken on the way
//!    tell about the values loaded (`[12] == 0x800`, `[20] & 0x1fff == 0`,
//!    `[x + 14] != 21`, ...). A backward pass computes where A and X are
//!    live.
//! 2. **Jump threading**: each edge of a conditional jump is followed
//!    through the instructions it would run next as long as they are jumps
//!    whose outcome the facts decide (`jeq #0x800` taken, then
//!    `jeq #0x86dd`) or loads that cannot abort; the edge then goes straight
//!    to the last point reached where the registers it skipped writing are
//!    equal to what it would have written or dead. Skipped instructions have
//!    no effect but on A and X, so the verdicts do not change. A jump the
//!    facts decide on every path reaching it goes where it always goes.
//! 3. **Tail merging**: instructions that do the same thing and continue in
//!    equivalent places are equivalent; jumps go to the last copy (`ja` and
//!    conditional jumps with equal targets are equivalent to their target,
//!    which also removes `ja` chains).
//! 4. **Removal** of unreachable instructions, `ja 0`, loads of what the
//!    register already holds on every path (such a load ran before, so it
//!    cannot abort), and instructions whose result is dead and which cannot
//!    abort (loads of bytes already loaded on every path, constant ALU).
//! 5. **Chain regrouping**: a run of tests that all leave to the same place
//!    (an `or` of tests jumping to accept, an `and` jumping to reject) and
//!    whose loads cannot abort (each was loaded before on every path) gives
//!    the same verdict in any order. Such a run is rewritten grouped by the
//!    value tested, loading each value once (`[x+14] == 80, [x+16] == 80,
//!    [x+14] == 25, [x+16] == 25` becomes `[x+16] == 80, == 25; [x+14] ==
//!    25`), with duplicates dropped. Tests whose load may abort are never
//!    moved: only what follows the first load of each value is regrouped.
//!
//! The analysis is cheap to run once per step: a program point's facts are
//! a persistent list shared with the points before it, its nodes kept in
//! one arena per analysis (a state is a plain value: copying it costs
//! nothing, and no list is ever freed node by node), and the meet of two
//! paths keeps their shared tail, found with jump pointers. Each node
//! summarizes the values its list has facts about (64-bit filters) and its
//! "A != k" facts (a 256-bit filter), so looking for facts about one value
//! skips the rest. Nothing is learned or met on the way into a `ret` (only
//! its reachability is read), and liveness is computed only when removal
//! needs it. The analysis is only recomputed when a step changed the
//! program (not when removal only took out instructions that do nothing on
//! any path: the facts then stay true, and so does liveness if what was live
//! after each of them was live before it), and its buffers are reused from
//! one step to the next (and, for programs of up to `MAX_SPARE`
//! instructions, from one call to the next on a thread). A step that changed
//! nothing is not run again until another step changes the program: it
//! would change nothing again (see `Steps`); nor is tail merging after a
//! removal of only what it sees through. So the last round, which only
//! confirms that nothing changes any more, runs only the steps that have
//! not seen the program as it is; threading follows only edges whose first
//! instruction it can get past (`edge_may_move`), and removal, when its
//! previous judgments still hold, looks only at jumps. Chain regrouping does
//! not look for chains in a short program that repeats no load and no test
//! of one value and computes nothing (`may_regroup`): no chain of it can
//! be rewritten shorter.
//!
//! Jump offsets only shrink or stay within 8 bits (an edge is never
//! redirected beyond 255 instructions), no instruction is added, scratch
//! memory stores are never skipped or removed. So every path still writes
//! a scratch word before it reads it. The kernel's check of that is more
//! conservative, though (`validate`): its single pass in program order
//! lets the words written before a `ret` count for the instruction after
//! it, even when only jumps reach that instruction. A step that sends a
//! jump to an equivalent copy of its target, or removes the code before a
//! `ret`, can thus make the kernel refuse a program whose every path is
//! fine (tail merging did, on a PPI filter whose arithmetic spills to
//! `M[0]`). So for a program that reads scratch memory, a step after which
//! the kernel's check fails is undone: the result stays valid for the
//! kernel if the input was.

use crate::insn::{op, Insn};
use std::cell::Cell;
use std::hash::Hasher;

/// The most rounds [`optimize`] runs.
pub const MAX_ROUNDS: usize = 12;

/// The fewest facts kept per program point when there are more: a list
/// reaching twice this length keeps only its newest `MAX_FACTS`.
const MAX_FACTS: usize = 48;

/// How many of the newest facts a new fact is compared with before it is
/// added (older duplicates are harmless).
const DEDUP_WINDOW: usize = 2;

/// The most IPv4 header offsets whose `[x + k]` bounds are tracked.
const MAX_IND: usize = 4;

/// The most instructions one threaded edge is followed through.
const MAX_THREAD_STEPS: usize = 256;

/// Optimizes `prog`, a program whose jumps all go forward (see the module
/// documentation). Programs with a backward `ja` are left alone.
pub fn optimize(prog: &mut Vec<Insn>) {
    // (One instruction, a `ret`, leaves nothing to do.)
    if prog.len() <= 1 || !forward_only(prog) {
        return;
    }
    if prog[0].code & 0x07 == op::RET {
        // Nothing else is reachable (the rounds would come to that).
        prog.truncate(1);
        return;
    }
    let mut an = Analysis::take(prog.len());
    let mut steps = Steps::default();
    let mut guard = ScratchGuard::new(prog);
    for _ in 0..MAX_ROUNDS {
        let threaded = guard.run(&mut steps, Step::Thread, prog, &mut an, |p, an| thread_jumps(p, an));
        let merged = guard.run(&mut steps, Step::Merge, prog, &mut an, |p, an| merge_tails(p, &mut an.bufs));
        if merged {
            an.fresh = false;
        }
        let removed = guard.run(&mut steps, Step::Remove, prog, &mut an, remove);
        if removed && an.bufs.merge_complete && an.bufs.removal_merge_neutral {
            // Tail merging, if it saw the program as it was before this
            // removal, would find nothing new: what went were jumps it sees
            // through and unreachable code, so the instructions left are
            // equivalent as they were, and every jump already went to the
            // last of its equivalent targets.
            steps.carry_idle(Step::Merge);
        }
        let reordered = guard.run(&mut steps, Step::Reorder, prog, &mut an, |p, an| reorder_chains(p, an));
        if !threaded && !merged && !removed && !reordered {
            break;
        }
    }
    // What the last reordering left unreachable (or what the rounds, if
    // they ran out, left): nothing if removal saw the program as it is.
    guard.run(&mut steps, Step::Remove, prog, &mut an, remove);
    an.give_back();
}

/// Keeps a program that reads scratch memory valid for the kernel's
/// scratch check (see the module documentation): a step after which the
/// check fails is undone.
struct ScratchGuard {
    /// Whether steps are checked: the program reads scratch memory and
    /// passed the check to begin with.
    on: bool,
    /// The program before the step being checked.
    saved: Vec<Insn>,
}

impl ScratchGuard {
    fn new(prog: &[Insn]) -> ScratchGuard {
        let on = crate::validate::reads_scratch(prog) && crate::validate::check_scratch(prog).is_ok();
        ScratchGuard { on, saved: Vec::new() }
    }

    /// Runs `step` (`f`) through `steps` (see [`Steps::run`]). A step after
    /// which the kernel's scratch check fails is undone, and counts as
    /// having changed nothing (so it is not run again until another step
    /// changes the program).
    fn run(
        &mut self,
        steps: &mut Steps,
        step: Step,
        prog: &mut Vec<Insn>,
        an: &mut Analysis,
        f: impl FnOnce(&mut Vec<Insn>, &mut Analysis) -> bool,
    ) -> bool {
        steps.run(step, || {
            if !self.on {
                return f(prog, an);
            }
            self.saved.clear();
            self.saved.extend_from_slice(prog);
            let changed = f(prog, an);
            if changed && crate::validate::check_scratch(prog).is_err() {
                prog.clear();
                prog.extend_from_slice(&self.saved);
                // What the step left in the analysis describes its result.
                an.fresh = false;
                an.live_fresh = false;
                an.judged = false;
                return false;
            }
            changed
        })
    }
}

/// The steps of a round of [`optimize`] (their order).
#[derive(Clone, Copy)]
enum Step {
    Thread,
    Merge,
    Remove,
    Reorder,
}

/// Which steps are known to change nothing in the program as it is now.
///
/// Each step is a deterministic function of the program and of the
/// [`Analysis`], and the analysis only changes when the program does (it
/// is computed at most once per version of the program: a step that
/// changes nothing leaves it as it was, the arena's temporary facts
/// included). So a step that changed nothing changes nothing again until
/// another step changes the program; running it again would only confirm
/// that (e.g. the last round's chain regrouping, when the round's other
/// steps changed nothing either). Skipping it keeps the result identical.
#[derive(Default)]
struct Steps {
    /// How many times a step changed the program.
    version: u32,
    /// Per step, `version + 1` when it last changed nothing (0: never).
    idle_at: [u32; 4],
}

impl Steps {
    /// `step`, if it changed nothing in the program as it was before the
    /// last change, is known to change nothing in the program as it is.
    fn carry_idle(&mut self, step: Step) {
        let idle = &mut self.idle_at[step as usize];
        if *idle == self.version {
            *idle = self.version + 1;
        }
    }

    /// Runs `step` (`f`) unless it is known to change nothing; returns
    /// whether it changed the program.
    fn run(&mut self, step: Step, f: impl FnOnce() -> bool) -> bool {
        let idle = &mut self.idle_at[step as usize];
        if *idle == self.version + 1 {
            return false;
        }
        let changed = f();
        if changed {
            self.version += 1;
        } else {
            *idle = self.version + 1;
        }
        changed
    }
}

/// Does every jump of `prog` go forward, inside the program?
fn forward_only(prog: &[Insn]) -> bool {
    let len = prog.len();
    prog.iter().enumerate().all(|(pc, insn)| {
        if insn.code == op::JMP | op::JA {
            (pc as u64 + 1 + u64::from(insn.k)) < len as u64
        } else if insn.code & 0x07 == op::JMP {
            pc + 1 + usize::from(insn.jt.max(insn.jf)) < len
        } else {
            true
        }
    })
}

/// Where control may go after the instruction at `pc` (no allocation).
pub(crate) fn successors(pc: usize, insn: Insn) -> impl Iterator<Item = usize> {
    let class = insn.code & 0x07;
    let (a, b) = if class == op::RET {
        (None, None)
    } else if insn.code == op::JMP | op::JA {
        (Some(pc + 1 + insn.k as usize), None)
    } else if class == op::JMP {
        (Some(pc + 1 + usize::from(insn.jt)), Some(pc + 1 + usize::from(insn.jf)))
    } else {
        (Some(pc + 1), None)
    };
    a.into_iter().chain(b)
}

/// A conditional jump (`jeq`/`jgt`/`jge`/`jset` with `k` or `x`): the
/// same as `validate::is_cond_jump`, without searching the opcode table.
fn is_cond(code: u16) -> bool {
    use op::*;
    // `code & !X` is one of `JMP | JEQ`, `JGT`, `JGE`, `JSET`: 0x15 plus
    // 0x00, 0x10, 0x20 or 0x30 (one subtraction and one mask).
    (code & !X).wrapping_sub(JMP | JEQ) & !0x30 == 0
}

/// The number of bytes a load of these size bits reads.
fn bytes(size: u16) -> u64 {
    // A nibble per size (`W`, `H`, `B`, the unused 0x18): 4, 2, 1, 4.
    0x4124 >> (size >> 1 & 0xc) & 0xf
}

/// A value a register may be known to hold. The packet never changes, so
/// the same `Known` always means the same number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Known {
    /// The constant `k`.
    Imm(u32),
    /// The wire length.
    Len,
    /// `ld`/`ldh`/`ldb [k]` (the opcode's size bits and `k`).
    Abs(u16, u32),
    /// `ld`/`ldh`/`ldb [x + k]` with X = `4*([h]&0xf)`: size bits, `k`, `h`.
    Ind(u16, u32, u32),
    /// `4*([k]&0xf)`.
    HeaderLen(u32),
    /// Scratch word `M[k]` as last stored (a store forgets what was known
    /// about it).
    Mem(u32),
}

/// What a conditional jump on A with a constant tells about A along one of
/// its two edges.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fact {
    /// `lo <= A <= hi` and `A != not` (if any).
    Range { lo: u32, hi: u32, not: Option<u32> },
    /// `A & mask != 0` (`any`) or `A & mask == 0`.
    Bits { mask: u32, any: bool },
}

impl Fact {
    /// The fact learned by taking the `taken` edge of `code #k`.
    pub(crate) fn learn(code: u16, k: u32, taken: bool) -> Option<Fact> {
        let range = |lo, hi| Some(Fact::Range { lo, hi, not: None });
        match (code & 0xf0, taken) {
            (op::JEQ, true) => range(k, k),
            (op::JEQ, false) => Some(Fact::Range { lo: 0, hi: u32::MAX, not: Some(k) }),
            (op::JGT, true) => range(k.checked_add(1)?, u32::MAX),
            (op::JGT, false) => range(0, k),
            (op::JGE, true) => range(k, u32::MAX),
            (op::JGE, false) => range(0, k.checked_sub(1)?),
            (op::JSET, any) => Some(Fact::Bits { mask: k, any }),
            _ => None,
        }
    }

    /// If this fact only says `A != k` (learned from a `jeq #k` not
    /// taken), that `k`. Such a fact decides nothing but `jeq #k` (what it
    /// would decide of `jgt #0xffffffff` and `jge #0`, [`always`] decides
    /// first).
    fn only_not(self) -> Option<u32> {
        match self {
            Fact::Range { lo: 0, hi: u32::MAX, not } => not,
            _ => None,
        }
    }

    /// The outcome of `code #k` if this fact decides it.
    #[inline]
    pub(crate) fn decide(self, code: u16, k: u32) -> Option<bool> {
        match (self, code & 0xf0) {
            (Fact::Range { lo, hi, .. }, _) if lo == hi => Some(holds(code, lo, k)),
            (Fact::Range { lo, hi, not }, op::JEQ) => (k < lo || k > hi || not == Some(k)).then_some(false),
            (Fact::Range { lo, hi, .. }, op::JGT) => {
                if lo > k {
                    Some(true)
                } else if hi <= k {
                    Some(false)
                } else {
                    None
                }
            }
            (Fact::Range { lo, hi, .. }, op::JGE) => {
                if lo >= k {
                    Some(true)
                } else if hi < k {
                    Some(false)
                } else {
                    None
                }
            }
            (Fact::Range { hi, .. }, op::JSET) if k != 0 && hi < (1u32 << k.trailing_zeros()) => Some(false),
            // Some bit of `mask` is set, and `k` covers `mask`.
            (Fact::Bits { mask, any: true }, op::JSET) if mask != 0 && mask & !k == 0 => Some(true),
            // No bit of `mask` is set, and `k` is within `mask`.
            (Fact::Bits { mask, any: false }, op::JSET) if k & !mask == 0 => Some(false),
            (Fact::Bits { mask, any: false }, op::JEQ) if k & mask != 0 => Some(false),
            _ => None,
        }
    }
}

/// Does `A <op> k` hold (`op` from `code`)?
fn holds(code: u16, a: u32, k: u32) -> bool {
    match code & 0xf0 {
        op::JEQ => a == k,
        op::JGT => a > k,
        op::JGE => a >= k,
        _ => a & k != 0,
    }
}

/// The outcome of the conditional jump `code #k` whatever A is, if any.
fn always(code: u16, k: u32) -> Option<bool> {
    match code & 0xf0 {
        op::JGE if k == 0 => Some(true),
        op::JGT if k == u32::MAX => Some(false),
        op::JSET if k == 0 => Some(false),
        _ => None,
    }
}

/// What holds before an instruction on every path reaching it. A plain
/// value (`Copy`): its facts live in a [`FactArena`].
#[derive(Clone, Copy, Debug)]
struct State {
    a: Option<Known>,
    x: Option<Known>,
    /// Bytes `[0, min_len)` were loaded on every path: the captured length
    /// is at least this.
    min_len: u64,
    /// `(h, end)`: `[x + k]` loads ending at `end` (X = `4*([h]&0xf)`)
    /// succeeded on every path.
    ind_len: Inline<(u32, u64), MAX_IND>,
    /// Facts about known values.
    facts: Facts,
    /// Scratch words A (and X) equal: bit `k` for `M[k]`.
    a_mem: u16,
    x_mem: u16,
}

/// Facts about known values, newest first: a persistent list whose nodes
/// live in a [`FactArena`], so that copying a state (once per instruction)
/// is free and the states of the two paths of a jump share what they
/// learned before it. The index of the newest node, or [`NIL`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Facts(u32);

/// The empty list.
const NIL: u32 = u32::MAX;

impl Default for Facts {
    fn default() -> Self {
        Facts(NIL)
    }
}

#[derive(Clone, Copy, Debug)]
struct FactNode {
    fact: (Known, Fact),
    /// The list's length from this node on.
    len: u32,
    next: u32,
    /// A node further down the list (or [`NIL`]), for finding the node at
    /// a given length in a logarithmic number of steps: skew-binary jump
    /// pointers, whose lengths depend only on the node's length, so that
    /// two lists of equal length jump in step (see [`FactArena::meet`]).
    jump: u32,
    /// The [`value_bit`]s of the values the list has facts about from this
    /// node on (a walk looking for facts about one value stops where its
    /// bit is clear).
    values: u64,
    /// The same for the facts other than [`Fact::only_not`] ones.
    strong: u64,
    /// The first node from this one on whose fact is not a
    /// [`Fact::only_not`] one (or [`NIL`]).
    strong_head: u32,
    /// The "A != k" facts ([`Fact::only_not`]) from this node on.
    nots: NotFilter,
}

/// A filter of "`v != k`" facts: one bit of 256 per fact, by a hash (lists
/// of up to twice [`MAX_FACTS`] such facts about one or two values, e.g. a
/// host list tested on the source and destination address, would fill
/// most of 64 or 128 bits, and most `jeq` decisions would walk them all).
#[derive(Clone, Copy, Debug, Default)]
struct NotFilter([u64; 4]);

impl NotFilter {
    /// The word and bit of "`v != k`", `v` given by its [`value_bit`].
    fn bit(value_bit: u64, k: u32) -> (usize, u64) {
        let h = (u64::from(k) ^ u64::from(value_bit.trailing_zeros()) << 32).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        ((h >> 62) as usize, 1 << (h >> 56 & 63))
    }

    /// The filter with "`v != k`" added, `v` given by its [`value_bit`].
    fn with_bit(mut self, value_bit: u64, k: u32) -> NotFilter {
        let (word, bit) = NotFilter::bit(value_bit, k);
        self.0[word] |= bit;
        self
    }

    /// Whether "`v != k`" may be in the filter (false: it is not), `v`
    /// given by its [`value_bit`].
    fn may_hold(&self, value_bit: u64, k: u32) -> bool {
        let (word, bit) = NotFilter::bit(value_bit, k);
        self.0[word] & bit != 0
    }
}

/// A value's bit in [`FactNode::values`] (one of 64, by a hash).
fn value_bit(v: Known) -> u64 {
    1 << (value_hash(v) >> 58)
}

/// A hash of a value.
fn value_hash(v: Known) -> u64 {
    let h = match v {
        Known::Imm(k) => u64::from(k) << 3,
        Known::Len => 1,
        Known::Abs(size, k) => u64::from(k) << 5 | u64::from(size >> 3) << 3 | 2,
        Known::Ind(size, k, h) => (u64::from(k) << 5 | u64::from(size >> 3) << 3 | 3) ^ u64::from(h) << 32,
        Known::HeaderLen(k) => u64::from(k) << 3 | 4,
        Known::Mem(k) => u64::from(k) << 3 | 5,
    };
    h.wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

/// The nodes of every fact list of one analysis (nodes are only added;
/// the arena is emptied when the next analysis starts, so no list is
/// ever freed node by node).
#[derive(Debug, Default)]
struct FactArena {
    nodes: Vec<FactNode>,
    /// Scratch room for rebuilding a list (no allocation per rebuild).
    scratch: Vec<(Known, Fact)>,
}

impl FactArena {
    fn clear(&mut self) {
        self.nodes.clear();
    }

    fn node(&self, i: u32) -> Option<&FactNode> {
        self.nodes.get(i as usize)
    }

    fn len(&self, f: Facts) -> usize {
        self.node(f.0).map_or(0, |n| n.len as usize)
    }

    /// The facts of `f` about `v` (its [`value_bit`] is `bit`), newest
    /// first.
    fn about(&self, f: Facts, v: Known, bit: u64) -> impl Iterator<Item = &Fact> + '_ {
        std::iter::successors(self.node(f.0), |n| self.node(n.next))
            .take_while(move |n| n.values & bit != 0)
            .filter(move |n| n.fact.0 == v)
            .map(|n| &n.fact.1)
    }

    /// The facts of `f` about `v` (its [`value_bit`] is `bit`) other than
    /// [`Fact::only_not`] ones, newest first.
    fn strong_about(&self, f: Facts, v: Known, bit: u64) -> impl Iterator<Item = &Fact> + '_ {
        let strong_head = |i: u32| self.node(i).and_then(|n| self.node(n.strong_head));
        std::iter::successors(strong_head(f.0), move |n| strong_head(n.next))
            .take_while(move |n| n.strong & bit != 0)
            .filter(move |n| n.fact.0 == v)
            .map(|n| &n.fact.1)
    }

    /// Whether `f` may hold "`v != k`" as a [`Fact::only_not`] fact
    /// (false: it certainly does not), `v` given by its [`value_bit`].
    fn may_hold_not(&self, f: Facts, value_bit: u64, k: u32) -> bool {
        self.node(f.0).is_some_and(|n| n.nots.may_hold(value_bit, k))
    }

    /// `list` with `fact` on top (no shortening).
    fn cons(&mut self, list: Facts, fact: (Known, Fact)) -> Facts {
        let (len, mut values, jump, below) = match self.node(list.0) {
            None => (0, (0, 0, NotFilter::default()), NIL, NIL),
            Some(n) => {
                // Jump twice as far when the two jumps below are as long.
                let (jump_len, j, j_len) = match self.node(n.jump) {
                    Some(m) => (m.len, m.jump, self.len(Facts(m.jump)) as u32),
                    None => (0, NIL, 0),
                };
                let double = n.len - jump_len == jump_len - j_len;
                (n.len, (n.values, n.strong, n.nots), if double { j } else { list.0 }, n.strong_head)
            }
        };
        let (v, f) = fact;
        let at = self.nodes.len() as u32;
        let bit = value_bit(v);
        values.0 |= bit;
        let strong_head = match f.only_not() {
            Some(k) => {
                values.2 = values.2.with_bit(bit, k);
                below
            }
            None => {
                values.1 |= bit;
                at
            }
        };
        let (values, strong, nots) = values;
        self.nodes.push(FactNode { fact, len: len + 1, next: list.0, jump, values, strong, strong_head, nots });
        Facts(at)
    }

    /// The jump pointer of node `i` ([`NIL`] for [`NIL`]).
    fn jump(&self, i: u32) -> u32 {
        self.node(i).map_or(NIL, |n| n.jump)
    }

    /// The node of `list` (a tail of it) whose list is `len` long.
    fn tail_of_len(&self, list: u32, len: usize) -> u32 {
        let mut a = list;
        while let Some(n) = self.node(a) {
            if n.len as usize <= len {
                break;
            }
            a = if self.len(Facts(n.jump)) >= len { n.jump } else { n.next };
        }
        a
    }

    fn iter(&self, f: Facts) -> impl Iterator<Item = &(Known, Fact)> + '_ {
        std::iter::successors(self.node(f.0), |n| self.node(n.next)).map(|n| &n.fact)
    }

    /// Whether `f` is among the newest [`DEDUP_WINDOW`] facts of `list`.
    fn among_newest(&self, list: Facts, f: &(Known, Fact)) -> bool {
        let mut at = list.0;
        for _ in 0..DEDUP_WINDOW {
            let Some(n) = self.node(at) else { return false };
            // (The tests usually differ in `k`: compare the facts first.)
            if n.fact.1 == f.1 && n.fact.0 == f.0 {
                return true;
            }
            at = n.next;
        }
        false
    }

    fn contains(&self, list: Facts, f: &(Known, Fact)) -> bool {
        let bit = value_bit(f.0);
        match f.1.only_not() {
            Some(k) => self.may_hold_not(list, bit, k) && self.about(list, f.0, bit).any(|g| *g == f.1),
            None => self.strong_about(list, f.0, bit).any(|g| *g == f.1),
        }
    }

    /// `self.scratch` (oldest first) on top of `base`; empties the scratch.
    fn build_from_scratch(&mut self, base: Facts) -> Facts {
        let mut head = base;
        for i in 0..self.scratch.len() {
            head = self.cons(head, self.scratch[i]);
        }
        self.scratch.clear();
        head
    }

    /// `list` with `f` on top.
    fn push(&mut self, list: Facts, f: (Known, Fact)) -> Facts {
        if self.len(list) < 2 * MAX_FACTS {
            return self.cons(list, f);
        }
        // Too long: keep the newest `MAX_FACTS - 1` below `f`.
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        scratch.extend(self.iter(list).take(MAX_FACTS - 1).copied());
        scratch.reverse();
        self.scratch = scratch;
        let base = self.build_from_scratch(Facts(NIL));
        self.scratch.push(f);
        self.build_from_scratch(base)
    }

    /// The facts of `mine` that `other` has too.
    fn meet(&mut self, mine: Facts, other: Facts) -> Facts {
        if mine == other {
            return mine;
        }
        // The longest common tail (shared nodes), then the facts above it.
        let common = self.len(mine).min(self.len(other));
        let (mut a, mut b) = (self.tail_of_len(mine.0, common), self.tail_of_len(other.0, common));
        // Equally long from here: the jumps go equally far.
        while a != b {
            let (ja, jb) = (self.jump(a), self.jump(b));
            if ja != jb {
                (a, b) = (ja, jb);
            } else {
                a = self.nodes[a as usize].next;
                b = self.nodes[b as usize].next;
            }
        }
        let tail = Facts(a);
        let tail_len = self.len(tail);
        let mine_len = self.len(mine);
        if mine_len == tail_len {
            // Nothing above the common tail: `mine` is the tail.
            return mine;
        }
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        scratch.extend(self.iter(mine).take(mine_len - tail_len).filter(|f| self.contains(other, f)).copied());
        scratch.reverse();
        self.scratch = scratch;
        self.build_from_scratch(tail)
    }

    /// `list` without the facts about `v`.
    fn without(&mut self, list: Facts, v: Known) -> Facts {
        if self.about(list, v, value_bit(v)).next().is_none() {
            return list;
        }
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        scratch.extend(self.iter(list).filter(|(w, _)| *w != v).copied());
        scratch.reverse();
        self.scratch = scratch;
        self.build_from_scratch(Facts(NIL))
    }
}

/// A vector of at most `N` elements stored inline (states are copied once
/// per instruction: no allocation).
#[derive(Clone, Copy, Debug)]
struct Inline<T: Copy, const N: usize> {
    len: usize,
    items: [T; N],
}

impl<T: Copy + PartialEq, const N: usize> PartialEq for Inline<T, N> {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl<T: Copy + Eq, const N: usize> Eq for Inline<T, N> {}

impl<T: Copy + PartialEq, const N: usize> Inline<T, N> {
    fn new(fill: T) -> Self {
        Inline { len: 0, items: [fill; N] }
    }

    fn as_slice(&self) -> &[T] {
        &self.items[..self.len]
    }

    fn iter(&self) -> std::slice::Iter<'_, T> {
        self.as_slice().iter()
    }

    fn iter_mut(&mut self) -> std::slice::IterMut<'_, T> {
        self.items[..self.len].iter_mut()
    }

    /// Appends `x`; when full, drops the oldest element first if
    /// `drop_oldest`, else does nothing.
    fn push(&mut self, x: T, drop_oldest: bool) {
        if self.len == N {
            if !drop_oldest || N == 0 {
                return;
            }
            self.items.copy_within(1.., 0);
            self.len -= 1;
        }
        self.items[self.len] = x;
        self.len += 1;
    }

    fn retain_mut(&mut self, mut keep: impl FnMut(&mut T) -> bool) {
        let mut out = 0;
        for i in 0..self.len {
            let mut x = self.items[i];
            if keep(&mut x) {
                self.items[out] = x;
                out += 1;
            }
        }
        self.len = out;
    }
}

impl State {
    fn entry() -> State {
        State {
            a: None,
            x: None,
            min_len: 0,
            ind_len: Inline::new((0, 0)),
            facts: Facts::default(),
            a_mem: 0,
            x_mem: 0,
        }
    }

    /// What holds on both paths.
    fn meet(&mut self, other: &State, arena: &mut FactArena) {
        if self.a != other.a {
            self.a = None;
        }
        if self.x != other.x {
            self.x = None;
        }
        self.min_len = self.min_len.min(other.min_len);
        self.ind_len.retain_mut(|(h, end)| match other.ind_len.iter().find(|(g, _)| g == h) {
            Some(&(_, e)) => {
                *end = (*end).min(e);
                true
            }
            None => false,
        });
        self.facts = arena.meet(self.facts, other.facts);
        self.a_mem &= other.a_mem;
        self.x_mem &= other.x_mem;
    }

    /// The value a load would produce and whether it certainly stays in
    /// bounds, or `None` for instructions that are not such loads.
    fn load(&self, insn: Insn) -> Option<(Known, bool)> {
        use op::*;
        let (code, k) = (insn.code, insn.k);
        // Classes other than LD (0) and LDX (1) load nothing.
        if code & 0x06 != 0 {
            return None;
        }
        let size = code & 0x18;
        // (The cases are disjoint; the most common first.)
        Some(match code {
            _ if code & 0xe7 == LD | ABS && size != 0x18 => {
                (Known::Abs(size, k), u64::from(k) + bytes(size) <= self.min_len)
            }
            _ if code & 0xe7 == LD | IND && size != 0x18 => {
                let Some(Known::HeaderLen(h)) = self.x else { return None };
                let end = u64::from(k) + bytes(size);
                (Known::Ind(size, k, h), self.ind_len.iter().any(|&(g, e)| g == h && end <= e))
            }
            _ if code == LDX | B | MSH => (Known::HeaderLen(k), u64::from(k) < self.min_len),
            _ if code == LD | IMM || code == LDX | IMM => (Known::Imm(k), true),
            _ if code == LD | W | LEN || code == LDX | W | LEN => (Known::Len, true),
            _ if code == LD | MEM || code == LDX | MEM => (Known::Mem(k), true),
            _ => return None,
        })
    }

    /// Applies a non-jump instruction.
    fn apply(&mut self, insn: Insn, arena: &mut FactArena) {
        use op::*;
        let code = insn.code;
        // The most common instruction, `ld`/`ldh`/`ldb [k]`, first (what
        // the general case below does with it).
        if code & 0xe7 == LD | ABS && code & 0x18 != 0x18 {
            let size = code & 0x18;
            self.min_len = self.min_len.max(u64::from(insn.k) + bytes(size));
            self.a_mem = 0;
            self.a = Some(Known::Abs(size, insn.k));
            return;
        }
        self.apply_general(insn, arena);
    }

    /// [`State::apply`] without its first case.
    fn apply_general(&mut self, insn: Insn, arena: &mut FactArena) {
        use op::*;
        let code = insn.code;
        let bit = || 1u16.checked_shl(insn.k).unwrap_or(0);
        match code & 0x07 {
            LD | LDX => {
                let a = code & 0x07 == LD;
                // The scratch words the register equals.
                let mem = if code == LD | MEM || code == LDX | MEM { bit() } else { 0 };
                let v = self.load(insn).map(|(v, _)| v);
                match v {
                    Some(Known::Abs(size, k)) => self.min_len = self.min_len.max(u64::from(k) + bytes(size)),
                    Some(Known::HeaderLen(k)) => self.min_len = self.min_len.max(u64::from(k) + 1),
                    Some(Known::Ind(size, k, h)) => {
                        let end = u64::from(k) + bytes(size);
                        match self.ind_len.iter_mut().find(|(g, _)| *g == h) {
                            Some((_, e)) => *e = (*e).max(end),
                            None => self.ind_len.push((h, end), false),
                        }
                    }
                    _ => {}
                }
                if a {
                    self.a_mem = mem;
                    self.a = v;
                } else {
                    self.x_mem = mem;
                    self.x = v;
                }
            }
            ST if code == ST => {
                self.x_mem &= !bit();
                self.a_mem |= bit();
                self.forget_mem(insn.k, arena);
            }
            STX if code == STX => {
                self.a_mem &= !bit();
                self.x_mem |= bit();
                self.forget_mem(insn.k, arena);
            }
            ALU => {
                self.a_mem = 0;
                self.a = alu(insn, self.a, self.x).map(Known::Imm);
            }
            MISC if code == MISC | TAX => {
                self.x_mem = self.a_mem;
                self.x = self.a;
            }
            MISC if code == MISC | TXA => {
                self.a_mem = self.x_mem;
                self.a = self.x;
            }
            // Other miscellaneous codes would write A (see `uses_defs`).
            MISC => self.a_mem = 0,
            // Other stores, jumps and returns write no register.
            _ => {}
        }
    }

    /// `M[k]` is written: what was known about it no longer holds.
    fn forget_mem(&mut self, k: u32, arena: &mut FactArena) {
        let m = Some(Known::Mem(k));
        if self.a == m {
            self.a = None;
        }
        if self.x == m {
            self.x = None;
        }
        self.facts = arena.without(self.facts, Known::Mem(k));
    }

    /// Records what taking the `taken` edge of the conditional jump `insn`
    /// tells.
    fn learn(&mut self, insn: Insn, taken: bool, arena: &mut FactArena) {
        if insn.code & op::X != 0 {
            return;
        }
        let (Some(v), Some(f)) = (self.a, Fact::learn(insn.code, insn.k, taken)) else { return };
        // Duplicates further back cost a little room, not correctness.
        if matches!(v, Known::Imm(_)) || arena.among_newest(self.facts, &(v, f)) {
            return;
        }
        self.facts = arena.push(self.facts, (v, f));
    }

    /// The outcome of the conditional jump `insn` if the state decides it.
    fn decide(&self, insn: Insn, arena: &FactArena) -> Option<bool> {
        let (code, k) = (insn.code, insn.k);
        if code & op::X != 0 {
            return match (self.a, self.x) {
                (Some(Known::Imm(a)), Some(Known::Imm(x))) => Some(holds(code, a, x)),
                _ => None,
            };
        }
        if let Some(d) = always(code, k) {
            return Some(d);
        }
        let a = self.a?;
        if let Known::Imm(c) = a {
            return Some(holds(code, c, k));
        }
        // No fact about A at all (every walk below starts at the head).
        let bit = value_bit(a);
        if arena.node(self.facts.0).is_none_or(|n| n.values & bit == 0) {
            return None;
        }
        // "A != q" decides nothing but `jeq #q`.
        if code & 0xf0 == op::JEQ && arena.may_hold_not(self.facts, bit, k) {
            arena.about(self.facts, a, bit).find_map(|f| f.decide(code, k))
        } else {
            arena.strong_about(self.facts, a, bit).find_map(|f| f.decide(code, k))
        }
    }
}

/// The constant A holds after the ALU instruction `insn`, if known (an
/// `and #0` or `mul #0` whatever A holds; constants folded; none for a
/// division by zero, which aborts, nor for shifts by 32 or more).
fn alu(insn: Insn, a: Option<Known>, x: Option<Known>) -> Option<u32> {
    use op::*;
    let code = insn.code;
    let op_ = code & 0xf0;
    if code & X == 0 && insn.k == 0 && matches!(op_, AND | MUL) {
        return Some(0);
    }
    let Some(Known::Imm(a)) = a else { return None };
    if op_ == NEG {
        return Some(a.wrapping_neg());
    }
    let b = if code & X != 0 {
        match x {
            Some(Known::Imm(b)) => b,
            _ => return None,
        }
    } else {
        insn.k
    };
    Some(match op_ {
        ADD => a.wrapping_add(b),
        SUB => a.wrapping_sub(b),
        MUL => a.wrapping_mul(b),
        DIV => a.checked_div(b)?,
        MOD => a.checked_rem(b)?,
        AND => a & b,
        OR => a | b,
        XOR => a ^ b,
        LSH if b < 32 => a << b,
        RSH if b < 32 => a >> b,
        _ => return None,
    })
}

/// Register liveness bits.
const LIVE_A: u8 = 1;
const LIVE_X: u8 = 2;

/// The registers `insn` reads and writes.
fn uses_defs(insn: Insn) -> (u8, u8) {
    use op::*;
    let code = insn.code;
    match code & 0x07 {
        LD if code & 0xe0 == IND => (LIVE_X, LIVE_A),
        LD => (0, LIVE_A),
        LDX => (0, LIVE_X),
        ST => (LIVE_A, 0),
        STX => (LIVE_X, 0),
        ALU if code & 0xf0 == NEG => (LIVE_A, LIVE_A),
        ALU if code & X != 0 => (LIVE_A | LIVE_X, LIVE_A),
        ALU => (LIVE_A, LIVE_A),
        JMP if code == JMP | JA => (0, 0),
        JMP if code & X != 0 => (LIVE_A | LIVE_X, 0),
        JMP => (LIVE_A, 0),
        RET if code & 0x18 == A => (LIVE_A, 0),
        RET => (0, 0),
        _ if code == MISC | TAX => (LIVE_A, LIVE_X),
        _ => (LIVE_X, LIVE_A),
    }
}

/// The facts before each instruction (`None`: unreachable) and the
/// registers live before each instruction. One value is reused by every
/// step of [`optimize`] (its buffers are allocated once), and recomputed
/// only when the program changed since it was last computed.
#[derive(Default)]
struct Analysis {
    before: Vec<Option<State>>,
    /// What the backward pass found at each instruction (for removal).
    live: Vec<Live>,
    /// The nodes of the states' fact lists.
    arena: FactArena,
    /// Whether the above describe the program as it is now (every step
    /// that changes the program clears this).
    fresh: bool,
    /// Whether `live` describes the program and `before` as they are now.
    /// Only removal reads it, so the backward pass runs when removal
    /// needs it (after threading changed the program, the analysis it
    /// threaded with is recomputed before any removal).
    live_fresh: bool,
    /// Whether every instruction but the jumps was judged by removal to
    /// stay, with `before` and `live` as they are now (set by a removal
    /// that took out only no-ops and left liveness as it was, see
    /// [`remove`]): the next removal, if nothing changed in between, only
    /// has jumps to look at.
    judged: bool,
    /// Room the steps reuse from one round to the next.
    bufs: Buffers,
}

/// Buffers of the steps of [`optimize`], allocated once per call.
#[derive(Default)]
struct Buffers {
    /// Tail merging: the equivalent instruction each one goes to, and the
    /// first instruction seen with each key.
    canon: Vec<usize>,
    seen: FirstSeen,
    /// Whether the last tail merging redirected every jump it found an
    /// equivalent target for (none was out of 8-bit reach).
    merge_complete: bool,
    /// Removal: the new index of each instruction.
    new_index: Vec<usize>,
    /// Whether the last removal took out only instructions tail merging
    /// sees through (unreachable ones, `ja 0`, tests going to the next
    /// instruction either way) and made `ja`s only of tests going one place
    /// either way: see [`optimize`].
    removal_merge_neutral: bool,
    /// Chain regrouping: predecessors, and where a chain relies on A being
    /// overwritten.
    preds: Vec<u32>,
    relied: Vec<bool>,
    /// The set of hashes of the loads and tests, for [`may_regroup`].
    keys: Vec<u64>,
    /// The links of the chain being looked at.
    links: Vec<Link>,
    /// Room for [`emit_chain`] (made when a chain is found).
    chain: Option<Box<ChainBufs>>,
}

/// Programs up to this long leave their [`Analysis`] buffers to the next
/// [`optimize`] call on the same thread (a few hundred KiB at most).
const MAX_SPARE: usize = 1024;

thread_local! {
    /// The buffers of the last [`optimize`] call on this thread, if its
    /// program was short (allocating and freeing them costs as much as a
    /// step of a short program's optimization).
    static SPARE: Cell<Option<Box<Analysis>>> = const { Cell::new(None) };
}

impl Analysis {
    /// An analysis for a program of `n` instructions, with the buffers a
    /// previous call on this thread left if any (no step reads what they
    /// hold before writing it).
    /// (Boxed: moving the analysis in and out of the thread-local would
    /// copy it twice per call.)
    fn take(n: usize) -> Box<Analysis> {
        match SPARE.try_with(Cell::take).ok().flatten() {
            Some(mut an) => {
                an.before.clear();
                an.before.reserve(n);
                an.live.clear();
                an.live.reserve(n);
                an.arena.nodes.clear();
                an.arena.nodes.reserve(2 * n + 8);
                an.arena.scratch.clear();
                an.fresh = false;
                an
            }
            None => Box::new(Analysis::with_capacity(n)),
        }
    }

    /// Leaves the buffers to the next call on this thread (unless large).
    fn give_back(self: Box<Self>) {
        if self.before.capacity() <= MAX_SPARE && self.arena.nodes.capacity() <= 4 * MAX_SPARE {
            // (Fails only while the thread exits: the buffers are freed.)
            let _ = SPARE.try_with(|spare| spare.set(Some(self)));
        }
    }

    /// An analysis with room for a program of `n` instructions (growing
    /// its buffers one push at a time costs more than the analysis itself
    /// on short programs).
    fn with_capacity(n: usize) -> Analysis {
        Analysis {
            before: Vec::with_capacity(n),
            live: Vec::with_capacity(n),
            arena: FactArena { nodes: Vec::with_capacity(2 * n + 8), scratch: Vec::new() },
            fresh: false,
            live_fresh: false,
            judged: false,
            bufs: Buffers::default(),
        }
    }

    /// Makes the analysis describe `prog` (computing it unless fresh).
    fn update(&mut self, prog: &[Insn]) {
        if !self.fresh {
            analyze(prog, self);
            self.fresh = true;
            self.live_fresh = false;
            self.judged = false;
        }
    }

    /// Makes the analysis and the liveness describe `prog`.
    fn update_with_liveness(&mut self, prog: &[Insn]) {
        self.update(prog);
        if !self.live_fresh {
            liveness(prog, &self.before, &mut self.live);
            self.live_fresh = true;
        }
    }

    /// The state after the instruction at `pc` (a reachable non-jump), or on
    /// the `taken` edge of the conditional jump at `pc`. Its new facts go to
    /// the arena; truncate it to what it held before once the state is no
    /// longer needed.
    fn after(&mut self, prog: &[Insn], pc: usize, taken: bool) -> Option<State> {
        let mut s = self.before[pc]?;
        let insn = prog[pc];
        if is_cond(insn.code) {
            s.learn(insn, taken, &mut self.arena);
        } else if insn.code & 0x07 != op::JMP {
            s.apply(insn, &mut self.arena);
        }
        Some(s)
    }
}

/// If `insn` loads into a register what it holds already (a no-op), that
/// register.
fn redundant(s: &State, insn: Insn) -> Option<u8> {
    // Only loads and register moves can be.
    if !matches!(insn.code & 0x07, op::LD | op::LDX | op::MISC) {
        return None;
    }
    // (`ld [k]` first: what the general case below finds for it.)
    if insn.code & 0xe7 == op::LD | op::ABS && insn.code & 0x18 != 0x18 {
        return (s.a == Some(Known::Abs(insn.code & 0x18, insn.k))).then_some(LIVE_A);
    }
    redundant_general(s, insn)
}

/// [`redundant`] for loads and register moves, without its first case.
fn redundant_general(s: &State, insn: Insn) -> Option<u8> {
    let bit = 1u16.checked_shl(insn.k).unwrap_or(0);
    if insn.code == op::LD | op::MEM && s.a_mem & bit != 0 {
        return Some(LIVE_A);
    }
    if insn.code == op::LDX | op::MEM && s.x_mem & bit != 0 {
        return Some(LIVE_X);
    }
    if let Some((v, _)) = s.load(insn) {
        let (reg, now) = if insn.code & 0x07 == op::LD { (LIVE_A, s.a) } else { (LIVE_X, s.x) };
        return (now == Some(v)).then_some(reg);
    }
    let same = s.a.is_some() && s.a == s.x;
    if insn.code == op::MISC | op::TAX && same {
        Some(LIVE_X)
    } else if insn.code == op::MISC | op::TXA && same {
        Some(LIVE_A)
    } else {
        None
    }
}

/// Computes path facts and liveness (see the module documentation) into
/// `an`, reusing its buffers.
fn analyze(prog: &[Insn], an: &mut Analysis) {
    let n = prog.len();
    let Analysis { before, arena, .. } = an;
    arena.clear();
    before.clear();
    before.resize(n, None);
    if n == 0 {
        return;
    }
    before[0] = Some(State::entry());
    // The state before a `ret` only says that it is reachable: no step
    // reads more of it (a `ret` is no load, no jump to thread, ends every
    // chain, and flows nowhere). So what flows into a `ret` is neither
    // learned nor met: the first state to arrive stays.
    let is_ret = |t: usize| prog.get(t).is_some_and(|i| i.code & 0x07 == op::RET);
    for pc in 0..n {
        // The state before `pc` and those after it (where jumps go).
        let (done, later) = before.split_at_mut(pc + 1);
        let Some(s) = &done[pc] else { continue };
        let insn = prog[pc];
        if is_cond(insn.code) {
            for (taken, off) in [(true, insn.jt), (false, insn.jf)] {
                let off = usize::from(off);
                if let Some(slot) = later.get_mut(off) {
                    flow_into(slot, is_ret(pc + 1 + off), s, arena, |st, arena| st.learn(insn, taken, arena));
                }
            }
        } else if insn.code & 0x07 == op::RET {
            // Nothing flows on.
        } else {
            let ja = insn.code == op::JMP | op::JA;
            let off = if ja { insn.k as usize } else { 0 };
            if let Some(slot) = later.get_mut(off) {
                flow_into(slot, is_ret(pc + 1 + off), s, arena, |st, arena| {
                    if !ja {
                        st.apply(insn, arena);
                    }
                });
            }
        }
    }
}

/// Makes `slot`, the state before an instruction, hold on the paths
/// through an edge too, along which the state `s` becomes what `step`
/// makes of it: a `ret` (`ret`) keeps the first state to arrive, the first
/// state arriving elsewhere is built in place, later ones are met.
#[inline(always)]
fn flow_into(
    slot: &mut Option<State>,
    ret: bool,
    s: &State,
    arena: &mut FactArena,
    step: impl FnOnce(&mut State, &mut FactArena),
) {
    if ret {
        slot.get_or_insert(*s);
        return;
    }
    match slot {
        Some(old) => {
            let mut edge = *s;
            step(&mut edge, arena);
            old.meet(&edge, arena);
        }
        None => step(slot.insert(*s), arena),
    }
}

/// Registers (`LIVE_A`, `LIVE_X` bits) at one instruction, from the
/// backward pass.
#[derive(Clone, Copy, Debug, Default)]
struct Live {
    /// Live before it if the redundant loads were gone.
    in_no_ops: u8,
    /// Live after it (the same, over its successors).
    out: u8,
    /// The register it loads with what that register holds already
    /// ([`redundant`]), or 0.
    redundant: u8,
}

/// The registers live at each instruction of `prog` if the redundant
/// loads were gone, given the facts `before` each one.
fn liveness(prog: &[Insn], before: &[Option<State>], live: &mut Vec<Live>) {
    let n = prog.len();
    live.clear();
    live.resize(n, Live::default());
    for pc in (0..n).rev() {
        let insn = prog[pc];
        let live_at = |t: usize| live.get(t).map_or(0, |l| l.in_no_ops);
        // (What `successors` gives, spelled out: this loop runs after every
        // analysis.)
        let out = match insn.code & 0x07 {
            op::RET => 0,
            op::JMP if insn.code == op::JMP | op::JA => live_at(pc + 1 + insn.k as usize),
            op::JMP => live_at(pc + 1 + usize::from(insn.jt)) | live_at(pc + 1 + usize::from(insn.jf)),
            _ => live_at(pc + 1),
        };
        let redundant = before[pc].as_ref().and_then(|s| redundant(s, insn));
        let (uses, defs) = match redundant {
            // A no-op that relies on the register's value.
            Some(reg) => (reg, 0),
            None => uses_defs(insn),
        };
        live[pc] = Live { in_no_ops: uses | (out & !defs), out, redundant: redundant.unwrap_or(0) };
    }
}

/// Jump threading (step 2 of the module documentation). Returns whether
/// any edge changed.
fn thread_jumps(prog: &mut [Insn], an: &mut Analysis) -> bool {
    an.update(prog);
    let n = prog.len();
    let mut changed = false;
    for pc in 0..n {
        let insn = prog[pc];
        if !is_cond(insn.code) || an.before[pc].is_none() {
            continue;
        }
        // Decided on every path: both edges go where it goes (removal then
        // makes it an `ja`).
        if let Some(taken) = an.before[pc].as_ref().and_then(|st| st.decide(insn, &an.arena)) {
            let off = if taken { insn.jt } else { insn.jf };
            if insn.jt != insn.jf {
                prog[pc].jt = off;
                prog[pc].jf = off;
                changed = true;
            }
            continue;
        }
        for taken in [true, false] {
            let off = usize::from(if taken { insn.jt } else { insn.jf });
            if !edge_may_move(prog, an, pc, taken) {
                continue;
            }
            let mark = an.arena.nodes.len();
            let Some(edge) = an.after(prog, pc, taken) else { continue };
            let start = pc + 1 + off;
            let best = follow(prog, pc, start, edge, &mut an.arena);
            // The facts of `edge` and of the simulation are not needed again.
            an.arena.nodes.truncate(mark);
            if best != start {
                let new_off = (best - pc - 1) as u8;
                if taken {
                    prog[pc].jt = new_off;
                } else {
                    prog[pc].jf = new_off;
                }
                changed = true;
            }
        }
    }
    if changed {
        an.fresh = false;
    }
    changed
}

/// Whether [`follow`] may get past the first instruction of the `taken`
/// edge of the (reachable, undecided) conditional jump at `pc`, decided
/// without building the edge's state: it gets past a `ja`, a conditional
/// jump going one place either way, a conditional jump the edge's state
/// decides and a load that cannot abort, and stops at anything else (most
/// edges stop there at once, and every edge does once threaded).
///
/// The edge's state is the state before `pc` with at most one fact on top,
/// the one [`State::learn`] would push; a load's safety does not depend on
/// facts, and a jump is decided by that fact if it decides it (it would be
/// the newest), else by the state before `pc` (exactly what
/// [`State::decide`] on the edge's state finds).
fn edge_may_move(prog: &[Insn], an: &Analysis, pc: usize, taken: bool) -> bool {
    let (Some(s), jump) = (an.before[pc].as_ref(), prog[pc]) else { return false };
    let start = pc + 1 + usize::from(if taken { jump.jt } else { jump.jf });
    let Some(&insn) = prog.get(start) else { return false };
    // (Most edges land on a `ret`, which is neither a jump nor a load.)
    if insn.code & 0x07 == op::RET {
        return false;
    }
    if insn.code == op::JMP | op::JA || is_cond(insn.code) && insn.jt == insn.jf {
        return true;
    }
    if !is_cond(insn.code) {
        return matches!(s.load(insn), Some((_, true)));
    }
    // The fact `learn` would push, if any (its conditions, in its order),
    // or a fact among the newest the list has already: one that decides
    // the jump then decides it through the list (the walk for a `jeq #k`
    // sees "A != k" facts; only `jeq` is decided by such a fact), and only
    // whether it is decided matters here.
    let pushed = match (jump.code & op::X, s.a, Fact::learn(jump.code, jump.k, taken)) {
        (0, Some(v), Some(f)) if !matches!(v, Known::Imm(_)) => Some(f),
        _ => None,
    };
    // `decide` consults facts only for a `k` test of a known non-constant
    // A that `always` does not settle.
    let by_facts = insn.code & op::X == 0 && always(insn.code, insn.k).is_none();
    match pushed {
        Some(f) if by_facts => f.decide(insn.code, insn.k).is_some() || s.decide(insn, &an.arena).is_some(),
        _ => s.decide(insn, &an.arena).is_some(),
    }
}

/// Follows an edge from the jump at `pc` landing on `start` with the
/// state `edge`; returns the furthest point it may land on instead.
fn follow(prog: &[Insn], pc: usize, start: usize, edge: State, arena: &mut FactArena) -> usize {
    let (edge_a, edge_x) = (edge.a, edge.x);
    let mut sim = edge;
    let mut cur = start;
    let mut best = start;
    let (mut a_written, mut x_written) = (false, false);
    for _ in 0..MAX_THREAD_STEPS {
        let Some(&insn) = prog.get(cur) else { break };
        let next = if insn.code == op::JMP | op::JA {
            cur + 1 + insn.k as usize
        } else if is_cond(insn.code) && insn.jt == insn.jf {
            // Goes there either way (and tells nothing).
            cur + 1 + usize::from(insn.jt)
        } else if is_cond(insn.code) {
            match sim.decide(insn, arena) {
                Some(taken) => {
                    sim.learn(insn, taken, arena);
                    cur + 1 + usize::from(if taken { insn.jt } else { insn.jf })
                }
                None => break,
            }
        } else {
            match sim.load(insn) {
                Some((_, true)) => {
                    sim.apply(insn, arena);
                    cur + 1
                }
                _ => break,
            }
        };
        if next - pc - 1 > 255 || next >= prog.len() {
            break;
        }
        if insn.code & 0x07 == op::LD {
            a_written = true;
        } else if insn.code & 0x07 == op::LDX {
            x_written = true;
        }
        cur = next;
        let a_ok = !a_written || sim.a.is_some() && sim.a == edge_a || overwritten(prog, cur, LIVE_A);
        let x_ok = !x_written || sim.x.is_some() && sim.x == edge_x || overwritten(prog, cur, LIVE_X);
        if a_ok && x_ok {
            best = cur;
        }
    }
    best
}

/// Is register `reg` written before it is read by the straight-line code
/// starting at `pc` (or not read before a `ret`)? Unlike liveness, this
/// stays true whatever other jumps are redirected.
fn overwritten(prog: &[Insn], pc: usize, reg: u8) -> bool {
    for &insn in prog.get(pc..).unwrap_or(&[]) {
        let (uses, defs) = uses_defs(insn);
        if uses & reg != 0 {
            return false;
        }
        if defs & reg != 0 || insn.code & 0x07 == op::RET {
            return true;
        }
        if insn.code & 0x07 == op::JMP {
            return false;
        }
    }
    false
}

/// One test of a [chain](reorder_chains): `A = value` (loaded by `load`
/// unless A holds it already), then `code #k`, leaving the chain when the
/// outcome is `exit_on`.
#[derive(Clone, Copy, Debug)]
struct Link {
    value: Known,
    load: Option<Insn>,
    code: u16,
    k: u32,
    exit_on: bool,
}

/// Reorders chains of tests that cannot abort (step 5 of the module
/// documentation). Returns whether any chain changed.
fn reorder_chains(prog: &mut [Insn], analysis: &mut Analysis) -> bool {
    let n = prog.len();
    analysis.update(prog);
    if n <= MAX_PRECHECKED && !may_regroup(prog, analysis) {
        return false;
    }
    regroup(prog, analysis)
}

/// [`reorder_chains`] without the check of [`may_regroup`].
fn regroup(prog: &mut [Insn], analysis: &mut Analysis) -> bool {
    let n = prog.len();
    let mut preds = std::mem::take(&mut analysis.bufs.preds);
    let mut relied = std::mem::take(&mut analysis.bufs.relied);
    let mut links = std::mem::take(&mut analysis.bufs.links);
    let mut chain = analysis.bufs.chain.take();
    let an = &*analysis;
    preds.clear();
    preds.resize(n, 0);
    for (pc, &insn) in prog.iter().enumerate() {
        for t in successors(pc, insn) {
            if let Some(c) = preds.get_mut(t) {
                *c += 1;
            }
        }
    }
    // Positions where a rewritten chain relies on A being overwritten: a
    // chain starting there must not start by testing the A it finds.
    relied.clear();
    relied.resize(n + 1, false);
    let mut changed = false;
    let mut pc = 0;
    while pc < n {
        // A chain starts with a test, or with a load into A and a test.
        let may_start = |pc: usize| {
            is_cond(prog[pc].code) || prog[pc].code & 0x07 == op::LD && prog.get(pc + 1).is_some_and(|j| is_cond(j.code))
        };
        if !may_start(pc) {
            pc += 1;
            continue;
        }
        match chain_at(prog, an, &preds, pc, &mut links) {
            Some((end, exit, next)) => {
                let inner_relied = relied[pc + 1..=end].iter().any(|&r| r);
                if !inner_relied
                    && overwritten(prog, exit, LIVE_A)
                    && overwritten(prog, next, LIVE_A)
                    && emit_chain(prog, an, pc, end, &links, exit, next, relied[pc], chain.get_or_insert_default())
                {
                    relied[exit] = true;
                    relied[next] = true;
                    changed = true;
                }
                pc = end + 1;
            }
            None => pc += 1,
        }
    }
    analysis.bufs.preds = preds;
    analysis.bufs.relied = relied;
    analysis.bufs.links = links;
    analysis.bufs.chain = chain;
    if changed {
        analysis.fresh = false;
    }
    changed
}

/// The longest program [`reorder_chains`] first checks with [`may_regroup`]
/// (longer ones nearly always repeat a load or a test, and sorting their
/// keys costs more than it saves).
const MAX_PRECHECKED: usize = 64;

/// Whether [`reorder_chains`] may find a chain to rewrite shorter. A
/// rewritten chain is shorter only if it drops a test (a duplicate: the
/// same `code #k` on the same value) or a load: one of a value loaded by
/// two links, or one of the value A holds where the chain starts. A holds
/// a value only through a load of it (an instruction equal to the link's)
/// or through an ALU or `txa` instruction. So a program without ALU and
/// miscellaneous instructions, without two equal loads into A and without
/// two equal tests of one value has no chain to rewrite. (Hashes stand for
/// the loads and tests: a collision only means looking for chains.)
fn may_regroup(prog: &[Insn], an: &mut Analysis) -> bool {
    let Analysis { before, bufs, .. } = an;
    // An open-addressing set of the keys (0: empty), at most half full.
    let keys = &mut bufs.keys;
    keys.clear();
    keys.resize(2 * MAX_PRECHECKED, 0);
    let mask = keys.len() - 1;
    for (pc, &insn) in prog.iter().enumerate() {
        let op = u64::from(insn.code) << 32 | u64::from(insn.k);
        let key = match insn.code & 0x07 {
            op::ALU | op::MISC => return true,
            op::LD => op | 1 << 62,
            op::JMP if is_cond(insn.code) => match before[pc].as_ref().and_then(|s| s.a) {
                Some(a) => (op ^ value_hash(a)) | 1 << 63,
                None => continue,
            },
            _ => continue,
        };
        let mut i = (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40) as usize & mask;
        loop {
            match keys[i] {
                0 => {
                    keys[i] = key;
                    break;
                }
                k if k == key => return true,
                _ => i = (i + 1) & mask,
            }
        }
    }
    false
}

/// The chain of tests starting at `start`, if any: its links (into
/// `links`), its last instruction, the common exit and where it goes when
/// no link exits.
fn chain_at(
    prog: &[Insn],
    an: &Analysis,
    preds: &[u32],
    start: usize,
    links: &mut Vec<Link>,
) -> Option<(usize, usize, usize)> {
    links.clear();
    let mut exit: Option<usize> = None;
    let mut cur = start;
    loop {
        let s = an.before.get(cur)?.as_ref()?;
        if cur != start && preds[cur] != 1 {
            break;
        }
        let mut at = cur;
        let (value, load) = match s.load(prog[at]) {
            Some((v, true)) if prog[at].code & 0x07 == op::LD => {
                at += 1;
                if preds.get(at) != Some(&1) {
                    break;
                }
                (v, Some(prog[cur]))
            }
            Some(_) => break,
            None => match s.a {
                Some(v) => (v, None),
                None => break,
            },
        };
        let j = *prog.get(at)?;
        if !is_cond(j.code) || j.code & op::X != 0 || j.jt == j.jf {
            break;
        }
        let (t, f) = (at + 1 + usize::from(j.jt), at + 1 + usize::from(j.jf));
        let (exit_on, out, next) = match exit {
            Some(e) if t == e => (true, t, f),
            Some(e) if f == e => (false, f, t),
            Some(_) => break,
            None if j.jf == 0 => (true, t, f),
            None if j.jt == 0 => (false, f, t),
            None => break,
        };
        exit = Some(out);
        links.push(Link { value, load, code: j.code, k: j.k, exit_on });
        if next != at + 1 {
            // The last link.
            return (links.len() >= 2).then_some((at, out, next));
        }
        cur = next;
    }
    // The chain ended at `cur`, where the last link's other edge goes.
    if links.len() < 2 {
        return None;
    }
    let end = cur - 1;
    Some((end, exit?, cur))
}

/// [`emit_chain`]'s buffers (kept from chain to chain).
#[derive(Default)]
struct ChainBufs {
    /// The values tested, in the order they are first tested (A's value on
    /// entry first, if it is used), with the load to use for each.
    groups: Vec<(Known, Option<Insn>)>,
    /// `(group, link)` for each link kept (not a duplicate of an earlier
    /// test of its group).
    order: Vec<(u32, u32)>,
    /// Room for finding the duplicates: `(group, test, link)`.
    tests: Vec<(u32, u16, u32, bool, u32)>,
    /// The rewritten chain.
    out: Vec<Insn>,
}

/// Writes the chain `links` (occupying `start..=end`) grouped by the value
/// tested, each value loaded once (A's value on entry is used unless
/// `reload`), a group's tests in chain order without duplicates; returns
/// false (and changes nothing) if that is not shorter or a jump would not
/// fit.
#[allow(clippy::too_many_arguments)]
fn emit_chain(
    prog: &mut [Insn],
    an: &Analysis,
    start: usize,
    end: usize,
    links: &[Link],
    exit: usize,
    next: usize,
    reload: bool,
    bufs: &mut ChainBufs,
) -> bool {
    if exit <= end || next <= end {
        return false;
    }
    // With `reload`, what A holds on entry may change: do not use it.
    let entry_a = if reload { None } else { an.before[start].as_ref().and_then(|s| s.a) };
    let ChainBufs { groups, order, tests, out } = bufs;
    groups.clear();
    tests.clear();
    if let Some(a) = entry_a {
        if links.iter().any(|l| l.value == a) {
            groups.push((a, None));
        }
    }
    for (i, l) in links.iter().enumerate() {
        let g = match groups.iter().position(|g| g.0 == l.value) {
            Some(g) => {
                let group = &mut groups[g];
                if group.1.is_none() && Some(group.0) != entry_a {
                    group.1 = l.load;
                }
                g
            }
            None => {
                groups.push((l.value, if Some(l.value) == entry_a { None } else { l.load }));
                groups.len() - 1
            }
        };
        tests.push((g as u32, l.code, l.k, l.exit_on, i as u32));
    }
    // A test is a duplicate if an earlier link of its group does the same
    // test: sorted by group and test, the first of equal ones stays.
    tests.sort_unstable();
    tests.dedup_by_key(|t| (t.0, t.1, t.2, t.3));
    // Group by group, each group's tests in chain order (the pairs are
    // distinct: no order among equal keys to keep).
    order.clear();
    order.extend(tests.iter().map(|t| (t.0, t.4)));
    order.sort_unstable();
    // Only a first group testing A's value on entry needs no load.
    let needs_load = |&(value, load): &(Known, Option<Insn>)| Some(value) != entry_a || load.is_some();
    if groups.iter().any(|g| needs_load(g) && g.1.is_none()) {
        return false;
    }
    let len = groups.iter().filter(|g| needs_load(g)).count() + order.len();
    if len >= end + 1 - start {
        return false;
    }
    // The exit edge of each test goes to `exit`, the other to the next
    // instruction, or to `next` for the last test.
    out.clear();
    let mut group = u32::MAX;
    for (n, &(g, i)) in order.iter().enumerate() {
        if g != group {
            group = g;
            if let (value, Some(load)) = groups[g as usize] {
                if needs_load(&(value, Some(load))) {
                    out.push(load);
                }
            }
        }
        let l = &links[i as usize];
        let p = start + out.len();
        let to_exit = exit - p - 1;
        let to_next = if n == order.len() - 1 { next - p - 1 } else { 0 };
        if to_exit > 255 || to_next > 255 {
            return false;
        }
        let (jt, jf) = if l.exit_on { (to_exit, to_next) } else { (to_next, to_exit) };
        out.push(Insn::jump(l.code, l.k, jt as u8, jf as u8));
    }
    prog[start..start + out.len()].copy_from_slice(out);
    true
}

/// Tail merging (step 3 of the module documentation). Returns whether any
/// jump changed.
fn merge_tails(prog: &mut [Insn], bufs: &mut Buffers) -> bool {
    let n = prog.len();
    let Buffers { canon, seen, .. } = bufs;
    canon.clear();
    canon.extend(0..n);
    seen.reset(n);
    for pc in (0..n).rev() {
        let insn = prog[pc];
        let c = |t: usize| if t < n { canon[t] } else { n };
        let key = if insn.code == op::JMP | op::JA {
            canon[pc] = c(pc + 1 + insn.k as usize);
            continue;
        } else if is_cond(insn.code) {
            let (t, f) = (c(pc + 1 + usize::from(insn.jt)), c(pc + 1 + usize::from(insn.jf)));
            if t == f {
                canon[pc] = t;
                continue;
            }
            (insn.code, insn.k, t, f)
        } else if insn.code & 0x07 == op::RET {
            (insn.code, insn.k, n, n)
        } else {
            (insn.code, insn.k, c(pc + 1), n)
        };
        canon[pc] = seen.first_or_insert(key, pc);
    }
    let mut changed = false;
    bufs.merge_complete = true;
    for (pc, slot) in prog.iter_mut().enumerate().take(n) {
        let insn = *slot;
        if insn.code == op::JMP | op::JA {
            let t = pc + 1 + insn.k as usize;
            if t < n && canon[t] != t {
                slot.k = (canon[t] - pc - 1) as u32;
                changed = true;
            }
        } else if is_cond(insn.code) {
            for taken in [true, false] {
                let off = usize::from(if taken { insn.jt } else { insn.jf });
                let t = pc + 1 + off;
                if t < n && canon[t] != t && canon[t] - pc - 1 > 255 {
                    bufs.merge_complete = false;
                } else if t < n && canon[t] != t {
                    let new_off = (canon[t] - pc - 1) as u8;
                    if taken {
                        slot.jt = new_off;
                    } else {
                        slot.jf = new_off;
                    }
                    changed = true;
                }
            }
        }
    }
    changed
}

/// What makes two instructions equivalent in tail merging: opcode, `k`
/// and where they continue (canonical targets; the program's length for
/// none).
type TailKey = (u16, u32, usize, usize);

/// Tail merging's table: the first instruction seen with each key. Open
/// addressing with linear probing in a table of at least twice as many
/// slots as instructions, emptied per use (its allocation is kept): a
/// lookup costs a multiply and a compare or two.
#[derive(Default)]
struct FirstSeen {
    /// `(key, pc + 1)`, or a `0` value for an empty slot.
    slots: Vec<(TailKey, usize)>,
}

impl FirstSeen {
    /// Empties the table, with room for `n` keys.
    fn reset(&mut self, n: usize) {
        let size = (2 * n + 2).next_power_of_two();
        self.slots.clear();
        self.slots.resize(size, ((0, 0, 0, 0), 0));
    }

    /// The instruction first given with `key`; `pc` (recorded) if none.
    fn first_or_insert(&mut self, key: TailKey, pc: usize) -> usize {
        let mask = self.slots.len() - 1;
        let (code, k, t, f) = key;
        let mut h = MixHasher::default();
        h.write_u64(u64::from(code) << 32 | u64::from(k));
        h.write_u64((t as u64) << 32 ^ f as u64);
        let mut i = (h.finish() >> 32) as usize & mask;
        loop {
            match self.slots[i] {
                (_, 0) => {
                    self.slots[i] = (key, pc + 1);
                    return pc;
                }
                (seen, first) if seen == key => return first - 1,
                _ => i = (i + 1) & mask,
            }
        }
    }
}

/// A fast hasher for small integer keys (tail merging's table; no
/// untrusted-key concerns: the keys come from the program itself).
#[derive(Default)]
pub(crate) struct MixHasher(u64);

impl Hasher for MixHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u64(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(5) ^ x).wrapping_mul(0x517c_c1b7_2722_0a95);
    }

    fn write_u16(&mut self, x: u16) {
        self.write_u64(u64::from(x));
    }

    fn write_u32(&mut self, x: u32) {
        self.write_u64(u64::from(x));
    }

    fn write_usize(&mut self, x: usize) {
        self.write_u64(x as u64);
    }
}

/// Removal (step 4 of the module documentation). Returns whether anything
/// was removed.
fn remove(prog: &mut Vec<Insn>, an: &mut Analysis) -> bool {
    let mut changed = false;
    for insn in prog.iter_mut() {
        // A conditional jump going to the same place either way.
        if is_cond(insn.code) && insn.jt == insn.jf && insn.jt != 0 {
            *insn = Insn::stmt(op::JMP | op::JA, u32::from(insn.jt));
            changed = true;
        }
    }
    if changed {
        an.fresh = false;
    }
    let jump_goes = |i: &Insn| *i == Insn::stmt(op::JMP | op::JA, 0) || is_cond(i.code) && i.jt == 0 && i.jf == 0;
    if an.fresh && an.live_fresh && an.judged && !prog.iter().any(jump_goes) {
        // Nothing else changed since every other instruction was judged
        // to stay (see `Analysis::judged`).
        return false;
    }
    an.update_with_liveness(prog);
    let n = prog.len();
    // new_index[pc]: how many kept instructions come before pc; a jump to a
    // removed instruction lands on the next kept one.
    let mut new_index = std::mem::take(&mut an.bufs.new_index);
    new_index.clear();
    let mut count = 0usize;
    // Whether every instruction removed does nothing (see below), and
    // whether removing them leaves the liveness of the others as it is:
    // each reachable one passes on what is live after it (a `ja 0`; a
    // test or redundant load whose register stays live after it anyway).
    let mut no_ops_only = true;
    let mut liveness_kept = true;
    an.bufs.removal_merge_neutral = true;
    for pc in 0..n {
        new_index.push(count);
        if removable(prog, an, pc) {
            no_ops_only &= no_op(prog, an, pc);
            an.bufs.removal_merge_neutral &= an.before[pc].is_none() || jump_goes(&prog[pc]);
            let live = an.live[pc];
            liveness_kept &= an.before[pc].is_none() || live.in_no_ops == live.out;
        } else {
            count += 1;
        }
    }
    new_index.push(count);
    if count == n || count == 0 {
        an.bufs.new_index = new_index;
        // (Nothing left would not be a program: keep it as it is, but for
        // the jumps made `ja` above.)
        return changed;
    }
    // In place: instruction pc moves to new_index[pc] <= pc.
    for pc in 0..n {
        if new_index[pc + 1] == new_index[pc] {
            continue;
        }
        let mut insn = prog[pc];
        let rel = |off: usize| new_index[(pc + 1 + off).min(n)] - new_index[pc] - 1;
        if insn.code == op::JMP | op::JA {
            insn.k = rel(insn.k as usize) as u32;
        } else if insn.code & 0x07 == op::JMP {
            insn.jt = rel(usize::from(insn.jt)) as u8;
            insn.jf = rel(usize::from(insn.jf)) as u8;
        }
        prog[new_index[pc]] = insn;
        // (Up to the first instruction removed, everything stays in place.)
        if no_ops_only && new_index[pc] != pc {
            an.before[new_index[pc]] = an.before[pc];
            an.live[new_index[pc]] = an.live[pc];
        }
    }
    prog.truncate(count);
    if no_ops_only && an.fresh {
        // The instructions removed were unreachable or changed nothing on
        // any path (jumps to the next instruction, loads of what the
        // register held): the program's paths, with those left out, are
        // the same, and what held before each instruction still does. The
        // facts stay; no new analysis. If what was live after each removed
        // instruction was live before it, what is live at the others is
        // as it was (going back from the end, each one's successors are
        // live as before), so each stays for the reasons it stayed now,
        // and only jumps, whose offsets changed, may go next time.
        an.before.truncate(count);
        an.live.truncate(count);
        an.live_fresh = liveness_kept;
        an.judged = liveness_kept;
    } else {
        an.fresh = false;
    }
    an.bufs.new_index = new_index;
    true
}

/// Does the instruction at `pc` do nothing on any path (unreachable, a
/// jump to the next instruction, a load of what the register holds)?
fn no_op(prog: &[Insn], an: &Analysis, pc: usize) -> bool {
    if an.before[pc].is_none() {
        return true;
    }
    let insn = prog[pc];
    insn == Insn::stmt(op::JMP | op::JA, 0)
        || is_cond(insn.code) && insn.jt == 0 && insn.jf == 0
        || an.live[pc].redundant != 0
}

/// Can the instruction at `pc` go (unreachable, `ja 0`, a redundant or
/// dead load)?
fn removable(prog: &[Insn], an: &Analysis, pc: usize) -> bool {
    use op::*;
    let Some(s) = &an.before[pc] else { return true };
    let insn = prog[pc];
    let code = insn.code;
    if insn == Insn::stmt(JMP | JA, 0) || is_cond(code) && insn.jt == 0 && insn.jf == 0 {
        return true;
    }
    let class = code & 0x07;
    // Already there: such a load ran before on every path.
    let Live { out: live_out, redundant, .. } = an.live[pc];
    if redundant != 0 {
        return true;
    }
    let (_, defs) = uses_defs(insn);
    if let Some((_, safe)) = s.load(insn) {
        return safe && live_out & defs == 0;
    }
    match class {
        MISC => live_out & defs == 0,
        ALU => {
            let divides = matches!(code & 0xf0, DIV | MOD);
            let divisor = if code & X != 0 {
                match s.x {
                    Some(Known::Imm(v)) => v,
                    _ => 0,
                }
            } else {
                insn.k
            };
            let aborts = divides && divisor == 0;
            !aborts && live_out & LIVE_A == 0
        }
        LD if code & 0xe0 == MEM => live_out & LIVE_A == 0,
        LDX if code & 0xe0 == MEM => live_out & LIVE_X == 0,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use op::*;

    fn s(code: u16, k: u32) -> Insn {
        Insn::stmt(code, k)
    }
    fn j(code: u16, k: u32, jt: u8, jf: u8) -> Insn {
        Insn::jump(code, k, jt, jf)
    }

    /// Random forward-only programs of `len` instructions (loads of a few
    /// packet values, constant tests on them, `ja`, `ret`), from `seed`.
    fn random_program(seed: &mut u64, len: usize) -> Vec<Insn> {
        let mut next = |m: u64| {
            *seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            (*seed >> 33) % m
        };
        let mut p = Vec::with_capacity(len);
        for pc in 0..len {
            let room = (len - pc - 1) as u64;
            let insn = match next(if room == 0 { 1 } else { 12 }) {
                0 => s(RET | K, [0, 9][next(2) as usize]),
                1 => s(LD | H | ABS, [12, 14][next(2) as usize]),
                2 => s(LD | B | ABS, [20, 23][next(2) as usize]),
                3 => s(LDX | B | MSH, 14),
                4 => s(LD | H | IND, [14, 16][next(2) as usize]),
                5 => s(JMP | JA, next(room.min(4)) as u32),
                6 => s(LD | IMM, 6),
                _ => {
                    let code = [JEQ, JEQ, JGT, JGE, JSET][next(5) as usize];
                    let k = [6, 0x800, 0x86dd, 5, 0x1fff, 0][next(6) as usize];
                    j(JMP | code | K, k, next(room.min(6)) as u8, next(room.min(6)) as u8)
                }
            };
            p.push(insn);
        }
        p
    }

    /// A random program of 8 to 31 instructions (by `round`) and its
    /// analysis.
    fn analysed_random_program(seed: &mut u64, round: usize) -> (Vec<Insn>, Analysis) {
        let p = random_program(seed, 8 + round % 24);
        let mut an = Analysis::with_capacity(p.len());
        an.update(&p);
        (p, an)
    }

    /// Random programs of chains of tests that leave to a common place
    /// (loads that cannot abort first; sometimes an ALU instruction or a
    /// register move), from `seed`.
    fn random_chains(seed: &mut u64) -> Vec<Insn> {
        let mut next = |m: u64| {
            *seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            (*seed >> 33) % m
        };
        let mut body = vec![s(LD | B | ABS, 23), s(LDX | B | MSH, 14), s(LD | H | IND, 16)];
        let loads = [s(LD | H | ABS, 12), s(LD | B | ABS, 23), s(LD | B | IND, 14), s(LD | H | IND, 16), s(LD | IMM, 7)];
        // Jumps to the end are filled in below: (index, exit on, to accept).
        let mut exits = Vec::new();
        for _ in 0..1 + next(3) {
            let to_accept = next(2) == 0;
            let exit_on = next(2) == 0;
            // A = 7 computed, not loaded, where the chain starts.
            match next(4) {
                0 => body.extend([s(LD | IMM, 6), s(ALU | ADD | K, 1)]),
                1 => body.extend([s(LDX | IMM, 7), s(MISC | TXA, 0)]),
                _ => {}
            }
            for _ in 0..2 + next(5) {
                match next(12) {
                    0 => body.push(s(ALU | ADD | K, 1)),
                    1 => body.push(s(MISC | TXA, 0)),
                    2..=8 => body.push(loads[next(5) as usize]),
                    _ => {}
                }
                let code = [JEQ, JEQ, JGT, JSET][next(4) as usize];
                exits.push((body.len(), exit_on, to_accept));
                body.push(j(JMP | code | K, [6, 7, 17, 80, 0x800, 0x1fff][next(6) as usize], 0, 0));
            }
        }
        let (accept, reject) = (body.len(), body.len() + 1);
        for (at, exit_on, to_accept) in exits {
            let off = ((if to_accept { accept } else { reject }) - at - 1) as u8;
            let (jt, jf) = if exit_on { (off, 0) } else { (0, off) };
            body[at].jt = jt;
            body[at].jf = jf;
        }
        body.extend([s(RET | K, 9), s(RET | K, 0)]);
        body
    }

    /// `State::decide` (which returns at once when the list's head says it
    /// has no fact about A, and walks only the facts that may decide) finds
    /// what a walk through every fact about A finds; and the first case
    /// (`ld [k]`) of `State::apply` and of `redundant` does what their
    /// general case does.
    #[test]
    fn shortcuts_of_decide_and_apply_agree_with_the_general_case() {
        let mut seed = 11;
        let (mut decided, mut loads, mut redundant_loads) = (0, 0, 0);
        for round in 0..2000 {
            let (p, mut an) = analysed_random_program(&mut seed, round);
            for st in an.before.iter().flatten() {
                for &t in p.iter().filter(|t| is_cond(t.code)) {
                    let walk = match st.a {
                        _ if t.code & X != 0 || always(t.code, t.k).is_some() => st.decide(t, &an.arena),
                        Some(Known::Imm(_)) | None => st.decide(t, &an.arena),
                        Some(a) => an.arena.iter(st.facts).filter(|f| f.0 == a).find_map(|f| f.1.decide(t.code, t.k)),
                    };
                    decided += usize::from(walk.is_some());
                    assert_eq!(st.decide(t, &an.arena), walk, "{p:?} {st:?} {t:?}");
                }
                for &l in p.iter().filter(|l| l.code & 0x07 == LD) {
                    let (mut fast, mut general) = (*st, *st);
                    fast.apply(l, &mut an.arena);
                    general.apply_general(l, &mut an.arena);
                    loads += 1;
                    assert_eq!(format!("{fast:?}"), format!("{general:?}"), "{l:?}");
                    redundant_loads += usize::from(redundant(st, l).is_some());
                    assert_eq!(redundant(st, l), redundant_general(st, l), "{st:?} {l:?}");
                }
            }
        }
        assert!(decided > 1000 && loads > 1000 && redundant_loads > 1000, "{decided} {loads} {redundant_loads}");
    }

    /// The cheap test of threading agrees with following the edge: when
    /// it says an edge cannot move, `follow` returns where it lands.
    #[test]
    fn edges_said_not_to_move_do_not_move() {
        let mut seed = 1;
        let mut moved = 0;
        for round in 0..3000 {
            let (p, mut an) = analysed_random_program(&mut seed, round);
            for pc in 0..p.len() {
                let insn = p[pc];
                let Some(st) = an.before[pc] else { continue };
                if !is_cond(insn.code) || st.decide(insn, &an.arena).is_some() {
                    continue;
                }
                for taken in [true, false] {
                    let start = pc + 1 + usize::from(if taken { insn.jt } else { insn.jf });
                    let edge = an.after(&p, pc, taken).expect("reachable");
                    let best = follow(&p, pc, start, edge, &mut an.arena);
                    if edge_may_move(&p, &an, pc, taken) {
                        moved += 1;
                    } else {
                        assert_eq!(best, start, "{p:?} at {pc} ({taken})");
                    }
                }
            }
        }
        assert!(moved > 100, "{moved}");
    }

    /// What `edge_may_move` relies on when it does not ask whether the
    /// edge's fact would be pushed: a fact among the newest of a list
    /// decides a test only if the list decides it.
    #[test]
    fn a_fact_already_listed_decides_only_what_the_list_decides() {
        let mut seed = 5;
        let mut checked = 0;
        for round in 0..3000 {
            let (p, an) = analysed_random_program(&mut seed, round);
            for (pc, &jump) in p.iter().enumerate() {
                let Some(st) = an.before[pc] else { continue };
                let Some(v) = st.a.filter(|v| !matches!(v, Known::Imm(_))) else { continue };
                if !is_cond(jump.code) || jump.code & X != 0 {
                    continue;
                }
                for taken in [true, false] {
                    let Some(f) = Fact::learn(jump.code, jump.k, taken) else { continue };
                    if !an.arena.among_newest(st.facts, &(v, f)) {
                        continue;
                    }
                    for &t in p.iter().filter(|t| is_cond(t.code) && t.code & X == 0) {
                        if always(t.code, t.k).is_none() && f.decide(t.code, t.k).is_some() {
                            checked += 1;
                            assert!(st.decide(t, &an.arena).is_some(), "{p:?} at {pc} ({taken}), {t:?}");
                        }
                    }
                }
            }
        }
        assert!(checked > 100, "{checked}");
    }

    /// Chain regrouping finds nothing to rewrite in the programs
    /// `may_regroup` rules out.
    #[test]
    fn programs_ruled_out_have_no_chain_to_regroup() {
        let mut seed = 13;
        let (mut ruled_out, mut regrouped) = (0, 0);
        for round in 0..20000 {
            let mut p = if round % 2 == 0 {
                random_program(&mut seed, 4 + round % 20)
            } else {
                random_chains(&mut seed)
            };
            if !forward_only(&p) {
                continue;
            }
            let mut an = Analysis::with_capacity(p.len());
            if round % 4 == 0 {
                thread_jumps(&mut p, &mut an);
                remove(&mut p, &mut an);
            }
            an.update(&p);
            let before = p.clone();
            let may = p.len() > MAX_PRECHECKED || may_regroup(&p, &mut an);
            let changed = regroup(&mut p, &mut an);
            regrouped += usize::from(changed);
            if !may {
                ruled_out += 1;
                assert!(!changed, "{before:?} -> {p:?}");
            }
        }
        assert!(ruled_out > 1000 && regrouped > 100, "{ruled_out} {regrouped}");
    }

    /// When removal keeps the liveness of what it leaves (`judged`), that
    /// liveness is what the backward pass computes, and the next removal's
    /// shortcut finds what a full removal finds.
    #[test]
    fn removal_keeps_liveness_only_when_it_is_unchanged() {
        let mut seed = 7;
        let mut judged = 0;
        for round in 0..4000 {
            let mut p = random_program(&mut seed, 8 + round % 24);
            if !forward_only(&p) {
                continue;
            }
            let mut an = Analysis::with_capacity(p.len());
            thread_jumps(&mut p, &mut an);
            if !remove(&mut p, &mut an) || !an.judged {
                continue;
            }
            judged += 1;
            let mut live = Vec::new();
            liveness(&p, &an.before, &mut live);
            let fields = |l: &[Live]| l.iter().map(|l| (l.in_no_ops, l.out, l.redundant)).collect::<Vec<_>>();
            assert_eq!(fields(&an.live), fields(&live), "{p:?}");
            if p.iter().any(|i| *i == s(JMP | JA, 0) || is_cond(i.code) && i.jt == 0 && i.jf == 0) {
                // (The shortcut does not apply.)
                continue;
            }
            let mut fast = p.clone();
            let fast_changed = remove(&mut fast, &mut an);
            an.judged = false;
            let mut full = p.clone();
            assert_eq!(remove(&mut full, &mut an), fast_changed, "{p:?}");
            assert_eq!(full, fast, "{p:?}");
        }
        assert!(judged > 100, "{judged}");
    }

    /// A removal that only took out what tail merging sees through leaves
    /// tail merging, which had nothing to do before it, nothing to do.
    #[test]
    fn merge_neutral_removal_leaves_merging_nothing() {
        let mut seed = 11;
        let mut carried = 0;
        for round in 0..6000 {
            let mut p = random_program(&mut seed, 8 + round % 24);
            if !forward_only(&p) {
                continue;
            }
            let mut an = Analysis::with_capacity(p.len());
            thread_jumps(&mut p, &mut an);
            if merge_tails(&mut p, &mut an.bufs) || !an.bufs.merge_complete {
                continue;
            }
            if !remove(&mut p, &mut an) || !an.bufs.removal_merge_neutral {
                continue;
            }
            carried += 1;
            let before = p.clone();
            assert!(!merge_tails(&mut p, &mut an.bufs), "{before:?} -> {p:?}");
        }
        assert!(carried > 100, "{carried}");
    }

    #[test]
    fn is_cond_agrees_with_the_opcode_table() {
        for code in 0..=u16::MAX {
            assert_eq!(is_cond(code), crate::validate::is_cond_jump(code), "{code:#x}");
        }
    }

    #[test]
    fn facts_decide_later_tests() {
        let decide = |code: u16, k: u32, taken: bool, code2: u16, k2: u32| {
            Fact::learn(JMP | code | K, k, taken).and_then(|f| f.decide(JMP | code2 | K, k2))
        };
        assert_eq!(decide(JEQ, 5, true, JEQ, 5), Some(true));
        assert_eq!(decide(JEQ, 5, true, JEQ, 6), Some(false));
        assert_eq!(decide(JEQ, 5, true, JGT, 4), Some(true));
        assert_eq!(decide(JEQ, 5, true, JSET, 4), Some(true));
        assert_eq!(decide(JEQ, 5, true, JSET, 2), Some(false));
        assert_eq!(decide(JEQ, 5, false, JEQ, 5), Some(false));
        assert_eq!(decide(JEQ, 5, false, JEQ, 6), None);
        assert_eq!(decide(JGT, 5, true, JGT, 5), Some(true));
        assert_eq!(decide(JGT, 5, true, JGE, 6), Some(true));
        assert_eq!(decide(JGT, 5, true, JGE, 7), None);
        assert_eq!(decide(JGT, 5, true, JEQ, 5), Some(false));
        assert_eq!(decide(JGT, 5, false, JGT, 5), Some(false));
        assert_eq!(decide(JGT, 5, false, JGE, 6), Some(false));
        assert_eq!(decide(JGT, 5, false, JGE, 5), None);
        assert_eq!(decide(JGT, 5, false, JSET, 8), Some(false));
        assert_eq!(decide(JGT, 5, false, JSET, 4), None);
        assert_eq!(decide(JGT, 5, false, JSET, 0xc), None);
        assert_eq!(decide(JGT, u32::MAX, true, JEQ, 0), None);
        assert_eq!(decide(JGE, 5, true, JGT, 4), Some(true));
        assert_eq!(decide(JGE, 5, false, JGE, 5), Some(false));
        assert_eq!(decide(JGE, 0, false, JEQ, 0), None);
        assert_eq!(decide(JSET, 0x6, true, JSET, 0xe), Some(true));
        assert_eq!(decide(JSET, 0x6, true, JSET, 0x2), None);
        assert_eq!(decide(JSET, 0x6, false, JSET, 0x2), Some(false));
        assert_eq!(decide(JSET, 0x6, false, JSET, 0x3), None);
        assert_eq!(decide(JSET, 0x6, false, JEQ, 4), Some(false));
        assert_eq!(decide(JSET, 0x6, false, JEQ, 1), None);
        assert_eq!(decide(JSET, 0, true, JSET, 0), None);
        assert_eq!(always(JMP | JGE | K, 0), Some(true));
        assert_eq!(always(JMP | JGT | K, u32::MAX), Some(false));
        assert_eq!(always(JMP | JSET | K, 0), Some(false));
        assert_eq!(always(JMP | JEQ | K, 0), None);
    }

    #[test]
    fn jumps_thread_through_decided_tests() {
        let mut p = vec![
            s(LD | H | ABS, 12),
            j(JMP | JEQ | K, 0x800, 0, 2),
            j(JMP | JGT | K, 0x5dc, 0, 2), // decided true after jeq 0x800
            s(RET | K, 1),
            j(JMP | JEQ | K, 0x800, 1, 0), // decided false after jf of jeq 0x800
            s(RET | K, 2),
            s(RET | K, 3),
        ];
        optimize(&mut p);
        assert_eq!(p, vec![s(LD | H | ABS, 12), j(JMP | JEQ | K, 0x800, 0, 1), s(RET | K, 1), s(RET | K, 2)]);
    }

    #[test]
    fn threading_skips_loads_of_known_values() {
        // (ip and [26] == 1) or (ip and [30] == 1) or (arp and [28] == 1):
        // after [26] != 1 the second `ldh [12]; jeq #0x800` is known true,
        // after [30] != 1 the ARP test is known false.
        let mut p = vec![
            s(LD | H | ABS, 12),
            j(JMP | JEQ | K, 0x800, 0, 2),
            s(LD | W | ABS, 26),
            j(JMP | JEQ | K, 1, 8, 0),
            s(LD | H | ABS, 12),
            j(JMP | JEQ | K, 0x800, 0, 2),
            s(LD | W | ABS, 30),
            j(JMP | JEQ | K, 1, 4, 0),
            s(LD | H | ABS, 12),
            j(JMP | JEQ | K, 0x806, 0, 3),
            s(LD | W | ABS, 28),
            j(JMP | JEQ | K, 1, 0, 1),
            s(RET | K, 9),
            s(RET | K, 0),
        ];
        optimize(&mut p);
        assert_eq!(
            p,
            vec![
                s(LD | H | ABS, 12),
                j(JMP | JEQ | K, 0x800, 0, 4),
                s(LD | W | ABS, 26),
                j(JMP | JEQ | K, 1, 5, 0),
                s(LD | W | ABS, 30),
                j(JMP | JEQ | K, 1, 3, 4),
                j(JMP | JEQ | K, 0x806, 0, 3),
                s(LD | W | ABS, 28),
                j(JMP | JEQ | K, 1, 0, 1),
                s(RET | K, 9),
                s(RET | K, 0),
            ]
        );
    }

    /// `tcp` as the code generator emits it: threading the edge that
    /// leaves `[23] == 6` past the reload of `[12]` and the test it decides
    /// makes the reloads no-ops; removing them keeps the facts (no new
    /// analysis), and the next round must still see the whole program right.
    #[test]
    fn reloads_go_after_threading_and_the_facts_stay_right() {
        let mut p = vec![
            s(LD | H | ABS, 12),
            j(JMP | JEQ | K, 0x800, 0, 2),
            s(LD | B | ABS, 23),
            j(JMP | JEQ | K, 6, 8, 0),
            s(LD | H | ABS, 12),
            j(JMP | JEQ | K, 0x86dd, 0, 7),
            s(LD | B | ABS, 20),
            j(JMP | JEQ | K, 6, 4, 0),
            s(LD | B | ABS, 20),
            j(JMP | JEQ | K, 0x2c, 0, 3),
            s(LD | B | ABS, 54),
            j(JMP | JEQ | K, 6, 0, 1),
            s(RET | K, 262_144),
            s(RET | K, 0),
        ];
        optimize(&mut p);
        assert_eq!(
            p,
            vec![
                s(LD | H | ABS, 12),
                j(JMP | JEQ | K, 0x800, 0, 2),
                s(LD | B | ABS, 23),
                j(JMP | JEQ | K, 6, 6, 7),
                j(JMP | JEQ | K, 0x86dd, 0, 6),
                s(LD | B | ABS, 20),
                j(JMP | JEQ | K, 6, 3, 0),
                j(JMP | JEQ | K, 0x2c, 0, 3),
                s(LD | B | ABS, 54),
                j(JMP | JEQ | K, 6, 0, 1),
                s(RET | K, 262_144),
                s(RET | K, 0),
            ]
        );
    }

    #[test]
    fn redundant_and_dead_loads_go() {
        let mut p = vec![
            s(LDX | B | MSH, 14),
            s(LD | H | IND, 14),
            j(JMP | JGE | K, 0, 0, 0),
            s(LD | H | IND, 14), // A already holds it
            j(JMP | JEQ | K, 80, 0, 4),
            s(LDX | B | MSH, 14), // X unchanged
            s(LD | H | IND, 14),  // dead, cannot abort
            s(LD | H | IND, 16),
            s(RET | A, 0),
            s(RET | K, 0),
        ];
        optimize(&mut p);
        assert_eq!(
            p,
            vec![
                s(LDX | B | MSH, 14),
                s(LD | H | IND, 14),
                j(JMP | JEQ | K, 80, 0, 2),
                s(LD | H | IND, 16),
                s(RET | A, 0),
                s(RET | K, 0),
            ]
        );
    }

    #[test]
    fn loads_that_may_abort_stay() {
        // The first load of [30] may abort: it stays although A is dead.
        let p0 = vec![s(LD | W | ABS, 30), s(LD | H | ABS, 12), s(RET | A, 0)];
        let mut p = p0.clone();
        optimize(&mut p);
        assert_eq!(p, p0);
        // Division by X may abort too.
        let p0 = vec![s(LDX | IMM, 0), s(ALU | DIV | X, 0), s(RET | K, 1)];
        let mut p = p0.clone();
        optimize(&mut p);
        assert_eq!(p, vec![s(LDX | IMM, 0), s(ALU | DIV | X, 0), s(RET | K, 1)]);
    }

    #[test]
    fn tails_merge() {
        // (6, 7) repeat (3, 4): the jump to (3) goes to (6).
        let mut p = vec![
            s(LD | B | ABS, 0),
            j(JMP | JEQ | K, 1, 0, 2),
            s(LD | B | ABS, 1),
            j(JMP | JEQ | K, 2, 3, 4),
            j(JMP | JEQ | K, 3, 0, 3),
            s(LD | B | ABS, 1),
            j(JMP | JEQ | K, 2, 0, 1),
            s(RET | K, 9),
            s(RET | K, 0),
        ];
        optimize(&mut p);
        assert_eq!(
            p,
            vec![
                s(LD | B | ABS, 0),
                j(JMP | JEQ | K, 1, 1, 0),
                j(JMP | JEQ | K, 3, 0, 3),
                s(LD | B | ABS, 1),
                j(JMP | JEQ | K, 2, 0, 1),
                s(RET | K, 9),
                s(RET | K, 0),
            ]
        );
    }

    #[test]
    fn chains_regroup_by_value() {
        // [x+14] == 80 || [x+16] == 80 || [x+14] == 25 || [x+16] == 25 || [x+14] == 80
        let mut p = vec![
            s(LDX | B | MSH, 14),
            s(LD | H | IND, 14),
            j(JMP | JEQ | K, 80, 9, 0),
            s(LD | H | IND, 16),
            j(JMP | JEQ | K, 80, 7, 0),
            s(LD | H | IND, 14),
            j(JMP | JEQ | K, 25, 5, 0),
            s(LD | H | IND, 16),
            j(JMP | JEQ | K, 25, 3, 0),
            s(LD | H | IND, 14),
            j(JMP | JEQ | K, 80, 1, 0),
            s(RET | K, 0),
            s(RET | K, 9),
        ];
        optimize(&mut p);
        assert_eq!(
            p,
            vec![
                s(LDX | B | MSH, 14),
                s(LD | H | IND, 14),
                j(JMP | JEQ | K, 80, 6, 0),
                s(LD | H | IND, 16),
                j(JMP | JEQ | K, 80, 4, 0),
                j(JMP | JEQ | K, 25, 3, 0),
                s(LD | H | IND, 14),
                j(JMP | JEQ | K, 25, 1, 0),
                s(RET | K, 0),
                s(RET | K, 9),
            ]
        );
    }

    #[test]
    fn chains_do_not_rely_on_a_that_another_chain_changes() {
        // A regression: the chains at (22) and (30) were both regrouped; (22)
        // relied on A being overwritten at (30), (30) on A holding [62] on
        // entry. Found by sift-jit's pred_programs (ip6 port lists, SLL2).
        let p0 = vec![
            s(LD | H | ABS, 0),
            j(JMP | JEQ | K, 0x86dd, 0, 8),
            s(LD | B | ABS, 26),
            j(JMP | JEQ | K, 0x84, 2, 0),
            j(JMP | JEQ | K, 0x6, 1, 0),
            j(JMP | JEQ | K, 0x11, 0, 37),
            s(LD | H | ABS, 60),
            j(JMP | JEQ | K, 0x202, 34, 0),
            s(LD | H | ABS, 62),
            j(JMP | JEQ | K, 0x202, 32, 12),
            j(JMP | JEQ | K, 0x800, 0, 32),
            s(LD | B | ABS, 29),
            j(JMP | JEQ | K, 0x84, 2, 0),
            j(JMP | JEQ | K, 0x6, 1, 0),
            j(JMP | JEQ | K, 0x11, 0, 23),
            s(LD | H | ABS, 26),
            j(JMP | JSET | K, 0x1fff, 21, 0),
            s(LDX | B | MSH, 20),
            s(LD | H | IND, 20),
            j(JMP | JEQ | K, 0x202, 22, 0),
            s(LD | H | IND, 22),
            j(JMP | JEQ | K, 0x202, 20, 4),
            s(LD | H | ABS, 60),
            j(JMP | JEQ | K, 0x15, 18, 0),
            s(LD | H | ABS, 62),
            j(JMP | JEQ | K, 0x15, 16, 4),
            s(LD | H | IND, 20),
            j(JMP | JEQ | K, 0x15, 14, 0),
            s(LD | H | IND, 22),
            j(JMP | JEQ | K, 0x15, 12, 4),
            s(LD | H | ABS, 60),
            j(JMP | JEQ | K, 0x14, 10, 0),
            s(LD | H | ABS, 62),
            j(JMP | JEQ | K, 0x14, 8, 9),
            s(LD | H | IND, 20),
            j(JMP | JEQ | K, 0x14, 6, 0),
            s(LD | H | IND, 22),
            j(JMP | JEQ | K, 0x14, 4, 0),
            s(LD | W | ABS, 32),
            j(JMP | JEQ | K, 0xa000002, 2, 0),
            s(LD | W | ABS, 36),
            j(JMP | JEQ | K, 0xa000002, 0, 1),
            s(RET | K, 262144),
            s(RET | K, 0),
        ];
        let data = [
            134, 221, 0, 0, 0, 0, 0, 0, 3, 4, 2, 6, 2, 0, 0, 0, 0, 1, 0, 0, 100, 160, 88, 110, 0, 8, 17, 190, 255, 2, 0,
            0, 0, 0, 0, 0, 0, 0, 0, 1, 255, 0, 0, 1, 254, 128, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 178, 97, 0, 20,
            0, 20, 132, 170,
        ];
        assert_eq!(crate::interp::run(&p0, &data, 68), 262144);
        let mut p = p0.clone();
        optimize(&mut p);
        assert!(p.len() < p0.len());
        assert_eq!(crate::interp::run(&p, &data, 68), 262144);
        for len in 0..data.len() {
            assert_eq!(crate::interp::run(&p, &data[..len], 68), crate::interp::run(&p0, &data[..len], 68), "{len}");
        }
    }

    #[test]
    fn scratch_reloads_of_what_a_holds_go_until_a_store() {
        let mut p = vec![
            s(LD | B | ABS, 2),
            s(ST, 15),
            s(LD | MEM, 15), // A holds M[15] already
            j(JMP | JGT | K, 1, 0, 4),
            s(LD | MEM, 15), // still
            j(JMP | JSET | K, 4, 0, 2),
            s(ST, 15),
            s(LD | MEM, 15), // A was just stored there
            s(RET | A, 0),
            s(RET | K, 0),
        ];
        optimize(&mut p);
        assert_eq!(
            p,
            vec![
                s(LD | B | ABS, 2),
                s(ST, 15),
                j(JMP | JGT | K, 1, 0, 2),
                j(JMP | JSET | K, 4, 0, 1),
                s(ST, 15),
                s(RET | A, 0),
            ]
        );
    }

    #[test]
    fn constant_alu_results_decide_jumps() {
        // `ld [34]; and #0; jeq #0`: the load may abort and stays, the test
        // always holds.
        let mut p = vec![
            s(LD | W | ABS, 34),
            s(ALU | AND | K, 0),
            j(JMP | JEQ | K, 0, 0, 1),
            s(RET | K, 9),
            s(RET | K, 0),
        ];
        optimize(&mut p);
        assert_eq!(p, vec![s(LD | W | ABS, 34), s(RET | K, 9)]);
        let mut p = vec![
            s(LD | IMM, 6),
            s(ALU | ADD | K, 4),
            s(LDX | IMM, 3),
            s(ALU | DIV | X, 0),
            j(JMP | JEQ | K, 3, 0, 1),
            s(RET | K, 9),
            s(RET | K, 0),
        ];
        optimize(&mut p);
        assert_eq!(p, vec![s(RET | K, 9)]);
    }

    #[test]
    fn backward_jumps_are_left_alone() {
        let p0 = vec![s(LD | IMM, 0), s(JMP | JA, 0), s(JMP | JA, u32::MAX - 1), s(RET | A, 0)];
        let mut p = p0.clone();
        optimize(&mut p);
        assert_eq!(p, p0);
    }

    #[test]
    fn compact_removes_dead_code_and_ja_0() {
        let mut p = vec![j(JMP | JEQ | K, 1, 1, 2), s(RET | K, 9), s(JMP | JA, 0), s(RET | K, 1)];
        optimize(&mut p);
        assert_eq!(p, vec![s(RET | K, 1)]);
    }
}
