//! The direct-threaded form of a loop-free program.
//!
//! Every instruction becomes a [`Node`]: a function pointer specialized for
//! the operation (and for the shape of its targets) plus its operands and
//! pointers to the nodes that follow. A node does its work and ends by
//! calling the next node's function in tail position, which the compiler
//! turns into a jump: there is no program counter, no fetch-and-decode loop
//! and no shared dispatch branch (each node kind has its own, so the CPU
//! predicts them separately). Built by [`Tree::build`] from the decoded
//! program, never run on programs with backward jumps or very long paths
//! (the loop of [`super::Program`] runs those).
//!
//! Specializations, chosen when the tree is built:
//!
//! * a load into A followed by a conditional jump on a constant is one node
//!   (the jump's own node still exists for other jumps landing on it);
//! * a jump target that is `ret #k` (directly or through `ja`) is folded into
//!   the jumping node, which returns `k` itself instead of calling a node;
//! * `ja` is no node at all: jumps go straight to its target;
//! * a chain of `jeq #k1`, `jeq #k2`, ... on A where every taken branch goes
//!   to the same place and every other one to the next `jeq` (`port (ssh or
//!   http or ...)`, `ip proto` sets) is one set-membership node, fused with
//!   the load before it when there is one.

use super::{half, indexed, word, Op};
use std::hint::cold_path;
use std::sync::Arc;

/// Paths longer than this (in instructions) make [`Tree::build`] refuse the
/// program. Optimized builds turn every call between nodes into a jump, so
/// the stack does not grow along a path; unoptimized ones may not, and this
/// bounds their stack use.
pub(super) const MAX_PATH: u32 = 2048;

/// The state of one run besides A, X and the packet.
pub(super) struct Ctx {
    wire_len: u32,
    mem: [u32; 16],
}

impl Ctx {
    /// A fresh state: zeroed scratch memory.
    pub(super) fn new() -> Ctx {
        Ctx { wire_len: 0, mem: [0; 16] }
    }
}

/// A node's code: `(node, packet, A, X, state)` → what the program returns.
type Run = fn(&Node, &[u8], u32, u32, &mut Ctx) -> u32;

/// One instruction (or fused pair) of the threaded form.
pub(super) struct Node {
    run: Run,
    /// Load offset / scratch index (operation-specific).
    off: u32,
    /// The instruction's constant.
    k: u32,
    /// The value returned when the jump is taken and its target is folded.
    tv: u32,
    /// The value returned when the jump is not taken and its target is folded.
    fv: u32,
    /// The next node (taken side of a conditional jump).
    t: Option<Arc<Node>>,
    /// The not-taken side of a conditional jump.
    f: Option<Arc<Node>>,
    /// The constants of a chain of `jeq` on the same value with one common
    /// taken target (padded by repeating the first).
    set: Option<Box<[u32; SET_MAX]>>,
}

/// The longest chain of `jeq` one set node tests.
const SET_MAX: usize = 8;

/// A built program: the first node, plus every node in program order (so
/// that dropping the tree never recurses along a long chain).
#[derive(Clone)]
pub(super) struct Tree {
    root: Arc<Node>,
    arena: Vec<Arc<Node>>,
    /// The most instructions a run can go through.
    longest_path: u32,
    /// Whether the program reads scratch memory (`ld M[i]`, `ldx M[i]`).
    reads_mem: bool,
}

impl std::fmt::Debug for Tree {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tree").field("nodes", &self.arena.len()).finish()
    }
}

/// Continues with `next` (in tail position: a jump once optimized).
#[inline(always)]
fn go(next: &Option<Arc<Node>>, d: &[u8], a: u32, x: u32, c: &mut Ctx) -> u32 {
    match next {
        Some(n) => (n.run)(n, d, a, x, c),
        None => 0,
    }
}

/// Where a value compared by a jump comes from.
trait Src {
    fn get(d: &[u8], off: u32, a: u32, x: u32) -> Option<u32>;
}
/// The accumulator (a plain conditional jump).
struct AccSrc;
struct AbsB;
struct AbsH;
struct AbsW;
struct IndB;
struct IndH;
struct IndW;

impl Src for AccSrc {
    #[inline(always)]
    fn get(_: &[u8], _: u32, a: u32, _: u32) -> Option<u32> {
        Some(a)
    }
}
impl Src for AbsB {
    #[inline(always)]
    fn get(d: &[u8], off: u32, _: u32, _: u32) -> Option<u32> {
        d.get(off as usize).map(|&b| u32::from(b))
    }
}
impl Src for AbsH {
    #[inline(always)]
    fn get(d: &[u8], off: u32, _: u32, _: u32) -> Option<u32> {
        half(d, off as usize)
    }
}
impl Src for AbsW {
    #[inline(always)]
    fn get(d: &[u8], off: u32, _: u32, _: u32) -> Option<u32> {
        word(d, off as usize)
    }
}
impl Src for IndB {
    #[inline(always)]
    fn get(d: &[u8], off: u32, _: u32, x: u32) -> Option<u32> {
        indexed(x, off).and_then(|at| d.get(at)).map(|&b| u32::from(b))
    }
}
impl Src for IndH {
    #[inline(always)]
    fn get(d: &[u8], off: u32, _: u32, x: u32) -> Option<u32> {
        indexed(x, off).and_then(|at| half(d, at))
    }
}
impl Src for IndW {
    #[inline(always)]
    fn get(d: &[u8], off: u32, _: u32, x: u32) -> Option<u32> {
        indexed(x, off).and_then(|at| word(d, at))
    }
}

/// What a jump compares with: its constant or X.
trait Operand {
    fn get(n: &Node, x: u32) -> u32;
}
struct ConstK;
struct RegX;
impl Operand for ConstK {
    #[inline(always)]
    fn get(n: &Node, _: u32) -> u32 {
        n.k
    }
}
impl Operand for RegX {
    #[inline(always)]
    fn get(_: &Node, x: u32) -> u32 {
        x
    }
}

/// A jump's condition.
trait Cond {
    fn holds(v: u32, k: u32) -> bool;
}
struct Eq;
struct Gt;
struct Ge;
struct Set;
impl Cond for Eq {
    #[inline(always)]
    fn holds(v: u32, k: u32) -> bool {
        v == k
    }
}
impl Cond for Gt {
    #[inline(always)]
    fn holds(v: u32, k: u32) -> bool {
        v > k
    }
}
impl Cond for Ge {
    #[inline(always)]
    fn holds(v: u32, k: u32) -> bool {
        v >= k
    }
}
impl Cond for Set {
    #[inline(always)]
    fn holds(v: u32, k: u32) -> bool {
        v & k != 0
    }
}

/// Load (or take A), compare, branch; `TR`/`FR`: the taken/not-taken target
/// is a folded `ret` (return `tv`/`fv`).
fn cond<S: Src, O: Operand, C: Cond, const TR: bool, const FR: bool>(
    n: &Node,
    d: &[u8],
    a: u32,
    x: u32,
    c: &mut Ctx,
) -> u32 {
    let Some(v) = S::get(d, n.off, a, x) else {
        return 0;
    };
    if C::holds(v, O::get(n, x)) {
        if TR {
            n.tv
        } else {
            go(&n.t, d, v, x, c)
        }
    } else {
        cold_path();
        if FR {
            n.fv
        } else {
            go(&n.f, d, v, x, c)
        }
    }
}

/// Load (or take A), then branch on membership in the node's set.
fn member<S: Src, const TR: bool, const FR: bool>(n: &Node, d: &[u8], a: u32, x: u32, c: &mut Ctx) -> u32 {
    let Some(v) = S::get(d, n.off, a, x) else {
        return 0;
    };
    let Some(set) = &n.set else {
        return 0;
    };
    // Every element compared, no early exit: no branch to mispredict.
    if set.iter().fold(false, |found, &k| found | (k == v)) {
        if TR {
            n.tv
        } else {
            go(&n.t, d, v, x, c)
        }
    } else {
        cold_path();
        if FR {
            n.fv
        } else {
            go(&n.f, d, v, x, c)
        }
    }
}

fn pick_member<S: Src>(tr: bool, fr: bool) -> Run {
    match (tr, fr) {
        (false, false) => member::<S, false, false>,
        (true, false) => member::<S, true, false>,
        (false, true) => member::<S, false, true>,
        (true, true) => member::<S, true, true>,
    }
}

fn pick_load_member(load: Option<LoadKind>, tr: bool, fr: bool) -> Run {
    match load {
        None => pick_member::<AccSrc>(tr, fr),
        Some(LoadKind::AbsB) => pick_member::<AbsB>(tr, fr),
        Some(LoadKind::AbsH) => pick_member::<AbsH>(tr, fr),
        Some(LoadKind::AbsW) => pick_member::<AbsW>(tr, fr),
        Some(LoadKind::IndB) => pick_member::<IndB>(tr, fr),
        Some(LoadKind::IndH) => pick_member::<IndH>(tr, fr),
        Some(LoadKind::IndW) => pick_member::<IndW>(tr, fr),
    }
}

fn pick_shape<S: Src, O: Operand, C: Cond>(tr: bool, fr: bool) -> Run {
    match (tr, fr) {
        (false, false) => cond::<S, O, C, false, false>,
        (true, false) => cond::<S, O, C, true, false>,
        (false, true) => cond::<S, O, C, false, true>,
        (true, true) => cond::<S, O, C, true, true>,
    }
}

/// The comparisons, numbered as [`JumpKind`].
fn pick_cond<S: Src, O: Operand>(kind: JumpKind, tr: bool, fr: bool) -> Run {
    match kind {
        JumpKind::Eq => pick_shape::<S, O, Eq>(tr, fr),
        JumpKind::Gt => pick_shape::<S, O, Gt>(tr, fr),
        JumpKind::Ge => pick_shape::<S, O, Ge>(tr, fr),
        JumpKind::Set => pick_shape::<S, O, Set>(tr, fr),
    }
}

/// A plain load into A, then the next node.
fn load_a<S: Src>(n: &Node, d: &[u8], a: u32, x: u32, c: &mut Ctx) -> u32 {
    match S::get(d, n.off, a, x) {
        Some(v) => go(&n.t, d, v, x, c),
        None => 0,
    }
}

fn ret_k(n: &Node, _: &[u8], _: u32, _: u32, _: &mut Ctx) -> u32 {
    n.k
}

fn ret_a(_: &Node, _: &[u8], a: u32, _: u32, _: &mut Ctx) -> u32 {
    a
}

/// Straight-line operations: `step!(name, |n, d, a, x, c| (new A, new X))`.
macro_rules! step {
    ($name:ident, |$n:ident, $d:ident, $a:ident, $x:ident, $c:ident| $body:expr) => {
        #[allow(unused_variables)]
        fn $name($n: &Node, $d: &[u8], $a: u32, $x: u32, $c: &mut Ctx) -> u32 {
            let (a2, x2): (u32, u32) = $body;
            go(&$n.t, $d, a2, x2, $c)
        }
    };
}

step!(ld_len, |n, d, a, x, c| (c.wire_len, x));
step!(ldx_len, |n, d, a, x, c| (a, c.wire_len));
step!(ld_imm, |n, d, a, x, c| (n.k, x));
step!(ldx_imm, |n, d, a, x, c| (a, n.k));
step!(ld_mem, |n, d, a, x, c| (c.mem[n.off as usize & 15], x));
step!(ldx_mem, |n, d, a, x, c| (a, c.mem[n.off as usize & 15]));
step!(st, |n, d, a, x, c| {
    c.mem[n.off as usize & 15] = a;
    (a, x)
});
step!(stx, |n, d, a, x, c| {
    c.mem[n.off as usize & 15] = x;
    (a, x)
});
step!(add_k, |n, d, a, x, c| (a.wrapping_add(n.k), x));
step!(sub_k, |n, d, a, x, c| (a.wrapping_sub(n.k), x));
step!(mul_k, |n, d, a, x, c| (a.wrapping_mul(n.k), x));
// k is never 0 here (decoding turns a constant division by zero into `ret #0`).
step!(div_k, |n, d, a, x, c| (a.checked_div(n.k).unwrap_or(0), x));
step!(mod_k, |n, d, a, x, c| (a.checked_rem(n.k).unwrap_or(0), x));
step!(and_k, |n, d, a, x, c| (a & n.k, x));
step!(or_k, |n, d, a, x, c| (a | n.k, x));
step!(xor_k, |n, d, a, x, c| (a ^ n.k, x));
step!(lsh_k, |n, d, a, x, c| (a.wrapping_shl(n.k), x));
step!(rsh_k, |n, d, a, x, c| (a.wrapping_shr(n.k), x));
step!(add_x, |n, d, a, x, c| (a.wrapping_add(x), x));
step!(sub_x, |n, d, a, x, c| (a.wrapping_sub(x), x));
step!(mul_x, |n, d, a, x, c| (a.wrapping_mul(x), x));
step!(and_x, |n, d, a, x, c| (a & x, x));
step!(or_x, |n, d, a, x, c| (a | x, x));
step!(xor_x, |n, d, a, x, c| (a ^ x, x));
step!(lsh_x, |n, d, a, x, c| (a.checked_shl(x).unwrap_or(0), x));
step!(rsh_x, |n, d, a, x, c| (a.checked_shr(x).unwrap_or(0), x));
step!(neg, |n, d, a, x, c| (a.wrapping_neg(), x));
step!(tax, |n, d, a, x, c| (a, a));
step!(txa, |n, d, a, x, c| (x, x));

fn div_x(n: &Node, d: &[u8], a: u32, x: u32, c: &mut Ctx) -> u32 {
    match a.checked_div(x) {
        Some(v) => go(&n.t, d, v, x, c),
        None => 0,
    }
}

fn mod_x(n: &Node, d: &[u8], a: u32, x: u32, c: &mut Ctx) -> u32 {
    match a.checked_rem(x) {
        Some(v) => go(&n.t, d, v, x, c),
        None => 0,
    }
}

fn ldx_msh(n: &Node, d: &[u8], a: u32, _: u32, c: &mut Ctx) -> u32 {
    match d.get(n.off as usize) {
        Some(&b) => go(&n.t, d, a, u32::from(b & 0xf) << 2, c),
        None => 0,
    }
}

#[derive(Clone, Copy)]
enum JumpKind {
    Eq,
    Gt,
    Ge,
    Set,
}

#[derive(Clone, Copy)]
enum LoadKind {
    AbsB,
    AbsH,
    AbsW,
    IndB,
    IndH,
    IndW,
}

/// A conditional jump's kind, operand (true = X) and targets.
fn as_jump(op: Op) -> Option<(JumpKind, bool, u32, u32, u32)> {
    Some(match op {
        Op::JeqK { k, t, f } => (JumpKind::Eq, false, k, t, f),
        Op::JgtK { k, t, f } => (JumpKind::Gt, false, k, t, f),
        Op::JgeK { k, t, f } => (JumpKind::Ge, false, k, t, f),
        Op::JsetK { k, t, f } => (JumpKind::Set, false, k, t, f),
        Op::JeqX { t, f } => (JumpKind::Eq, true, 0, t, f),
        Op::JgtX { t, f } => (JumpKind::Gt, true, 0, t, f),
        Op::JgeX { t, f } => (JumpKind::Ge, true, 0, t, f),
        Op::JsetX { t, f } => (JumpKind::Set, true, 0, t, f),
        _ => return None,
    })
}

fn as_load(op: Op) -> Option<(LoadKind, u32)> {
    Some(match op {
        Op::LdAbsB(k) => (LoadKind::AbsB, k),
        Op::LdAbsH(k) => (LoadKind::AbsH, k),
        Op::LdAbsW(k) => (LoadKind::AbsW, k),
        Op::LdIndB(k) => (LoadKind::IndB, k),
        Op::LdIndH(k) => (LoadKind::IndH, k),
        Op::LdIndW(k) => (LoadKind::IndW, k),
        _ => return None,
    })
}

fn pick_load_cond(load: LoadKind, kind: JumpKind, tr: bool, fr: bool) -> Run {
    match load {
        LoadKind::AbsB => pick_cond::<AbsB, ConstK>(kind, tr, fr),
        LoadKind::AbsH => pick_cond::<AbsH, ConstK>(kind, tr, fr),
        LoadKind::AbsW => pick_cond::<AbsW, ConstK>(kind, tr, fr),
        LoadKind::IndB => pick_cond::<IndB, ConstK>(kind, tr, fr),
        LoadKind::IndH => pick_cond::<IndH, ConstK>(kind, tr, fr),
        LoadKind::IndW => pick_cond::<IndW, ConstK>(kind, tr, fr),
    }
}

fn pick_load(load: LoadKind) -> Run {
    match load {
        LoadKind::AbsB => load_a::<AbsB>,
        LoadKind::AbsH => load_a::<AbsH>,
        LoadKind::AbsW => load_a::<AbsW>,
        LoadKind::IndB => load_a::<IndB>,
        LoadKind::IndH => load_a::<IndH>,
        LoadKind::IndW => load_a::<IndW>,
    }
}

/// The straight-line operations' code and their operand in `off`/`k`.
fn pick_step(op: Op) -> Option<(Run, u32)> {
    Some(match op {
        Op::LdLen => (ld_len, 0),
        Op::LdxLen => (ldx_len, 0),
        Op::LdImm(k) => (ld_imm, k),
        Op::LdxImm(k) => (ldx_imm, k),
        Op::LdxMsh(k) => (ldx_msh, k),
        Op::LdMem(i) => (ld_mem, u32::from(i)),
        Op::LdxMem(i) => (ldx_mem, u32::from(i)),
        Op::St(i) => (st, u32::from(i)),
        Op::Stx(i) => (stx, u32::from(i)),
        Op::AddK(k) => (add_k, k),
        Op::SubK(k) => (sub_k, k),
        Op::MulK(k) => (mul_k, k),
        Op::DivK(k) => (div_k, k.get()),
        Op::ModK(k) => (mod_k, k.get()),
        Op::AndK(k) => (and_k, k),
        Op::OrK(k) => (or_k, k),
        Op::XorK(k) => (xor_k, k),
        Op::LshK(k) => (lsh_k, k),
        Op::RshK(k) => (rsh_k, k),
        Op::AddX => (add_x, 0),
        Op::SubX => (sub_x, 0),
        Op::MulX => (mul_x, 0),
        Op::DivX => (div_x, 0),
        Op::ModX => (mod_x, 0),
        Op::AndX => (and_x, 0),
        Op::OrX => (or_x, 0),
        Op::XorX => (xor_x, 0),
        Op::LshX => (lsh_x, 0),
        Op::RshX => (rsh_x, 0),
        Op::Neg => (neg, 0),
        Op::Tax => (tax, 0),
        Op::Txa => (txa, 0),
        _ => return None,
    })
}

/// The chain of `jeq #k` on A starting at `pc`, if it has at least two
/// links: the constants (at most [`SET_MAX`], padded), the common taken
/// target and the last link's not-taken target (both as landing places).
/// `land` must be filled in for every instruction after `pc`.
fn eq_chain(ops: &[Op], land: &[usize], pc: usize) -> Option<(Box<[u32; SET_MAX]>, usize, usize)> {
    let landing = |to: u32| land.get(to as usize).copied().unwrap_or(to as usize);
    let Some(Op::JeqK { k, t, f }) = ops.get(pc).copied() else {
        return None;
    };
    let t = landing(t);
    let mut ks = vec![k];
    let mut f = landing(f);
    while ks.len() < SET_MAX {
        match ops.get(f).copied() {
            Some(Op::JeqK { k, t: t2, f: f2 }) if landing(t2) == t => {
                ks.push(k);
                f = landing(f2);
            }
            _ => break,
        }
    }
    if ks.len() < 2 {
        return None;
    }
    let mut set = [ks[0]; SET_MAX];
    set[..ks.len()].copy_from_slice(&ks);
    Some((Box::new(set), t, f))
}

impl Tree {
    /// Builds the threaded form of `ops` (decoded, unfused, ending with the
    /// `ret #0` sentinel), or `None` if the program has a backward jump or a
    /// path longer than [`MAX_PATH`].
    pub(super) fn build(ops: &[Op]) -> Option<Tree> {
        let n = ops.len();
        // Per instruction: its node, the constant it returns if it is
        // (or jumps straight to) `ret #k`, and its longest path to a return.
        let mut node: Vec<Option<Arc<Node>>> = vec![None; n];
        let mut ret: Vec<Option<u32>> = vec![None; n];
        let mut depth: Vec<u32> = vec![0; n];
        let mut arena: Vec<Arc<Node>> = Vec::with_capacity(n);
        // Where a jump to each instruction really lands (through `ja`).
        let mut land: Vec<usize> = (0..n).collect();
        let leaf = |run: Run, k: u32| Node { run, off: 0, k, tv: 0, fv: 0, t: None, f: None, set: None };
        for pc in (0..n).rev() {
            let op = ops[pc];
            let next = pc + 1;
            // The target `to` of a jump: (node, folded return).
            let target = |node: &[Option<Arc<Node>>], to: usize| -> (Option<Arc<Node>>, Option<u32>) {
                match ret.get(to).copied().flatten() {
                    Some(k) => (None, Some(k)),
                    None => (node.get(to).cloned().flatten(), None),
                }
            };
            let built = match op {
                Op::RetK(k) => {
                    ret[pc] = Some(k);
                    depth[pc] = 1;
                    leaf(ret_k, k)
                }
                Op::RetA => {
                    depth[pc] = 1;
                    leaf(ret_a, 0)
                }
                Op::JaBack(_) => return None,
                Op::Ja(to) => {
                    let to = to as usize;
                    ret[pc] = ret.get(to).copied().flatten();
                    land[pc] = land.get(to).copied().unwrap_or(to);
                    depth[pc] = depth.get(to).copied().unwrap_or(0);
                    node[pc] = node.get(to).cloned().flatten();
                    continue;
                }
                _ => {
                    if let Some((ks, t, f)) = eq_chain(ops, &land, pc) {
                        depth[pc] = 1 + depth.get(t).copied().unwrap_or(0).max(depth.get(f).copied().unwrap_or(0));
                        let ((tn, tv), (fnode, fv)) = (target(&node, t), target(&node, f));
                        let run = pick_load_member(None, tv.is_some(), fv.is_some());
                        let (tv, fv) = (tv.unwrap_or(0), fv.unwrap_or(0));
                        Node { run, off: 0, k: 0, tv, fv, t: tn, f: fnode, set: Some(ks) }
                    } else if let Some((kind, use_x, k, t, f)) = as_jump(op) {
                        let (t, f) = (t as usize, f as usize);
                        depth[pc] = 1 + depth.get(t).copied().unwrap_or(0).max(depth.get(f).copied().unwrap_or(0));
                        let ((tn, tv), (fnode, fv)) = (target(&node, t), target(&node, f));
                        let run = if use_x {
                            pick_cond::<AccSrc, RegX>(kind, tv.is_some(), fv.is_some())
                        } else {
                            pick_cond::<AccSrc, ConstK>(kind, tv.is_some(), fv.is_some())
                        };
                        Node { run, off: 0, k, tv: tv.unwrap_or(0), fv: fv.unwrap_or(0), t: tn, f: fnode, set: None }
                    } else if let Some((lk, off)) = as_load(op) {
                        if let Some((ks, t, f)) = eq_chain(ops, &land, next) {
                            // Fused with the following chain of `jeq`.
                            depth[pc] = 1 + depth.get(t).copied().unwrap_or(0).max(depth.get(f).copied().unwrap_or(0));
                            let ((tn, tv), (fnode, fv)) = (target(&node, t), target(&node, f));
                            let run = pick_load_member(Some(lk), tv.is_some(), fv.is_some());
                            let (tv, fv) = (tv.unwrap_or(0), fv.unwrap_or(0));
                            Node { run, off, k: 0, tv, fv, t: tn, f: fnode, set: Some(ks) }
                        } else { match ops.get(next).copied().and_then(as_jump) {
                            Some((kind, false, k, t, f)) => {
                                // Fused with the following jump on a constant.
                                let (t, f) = (t as usize, f as usize);
                                depth[pc] =
                                    1 + depth.get(t).copied().unwrap_or(0).max(depth.get(f).copied().unwrap_or(0));
                                let ((tn, tv), (fnode, fv)) = (target(&node, t), target(&node, f));
                                let run = pick_load_cond(lk, kind, tv.is_some(), fv.is_some());
                                Node { run, off, k, tv: tv.unwrap_or(0), fv: fv.unwrap_or(0), t: tn, f: fnode, set: None }
                            }
                            _ => {
                                depth[pc] = 1 + depth.get(next).copied().unwrap_or(0);
                                let t = node.get(next).cloned().flatten();
                                Node { run: pick_load(lk), off, k: 0, tv: 0, fv: 0, t, f: None, set: None }
                            }
                        } }
                    } else {
                        let (run, operand) = pick_step(op)?;
                        depth[pc] = 1 + depth.get(next).copied().unwrap_or(0);
                        let t = node.get(next).cloned().flatten();
                        Node { run, off: operand, k: operand, tv: 0, fv: 0, t, f: None, set: None }
                    }
                }
            };
            if depth[pc] > MAX_PATH {
                return None;
            }
            let built = Arc::new(built);
            node[pc] = Some(built.clone());
            arena.push(built);
        }
        let root = node.first().cloned().flatten()?;
        let longest_path = depth.first().copied().unwrap_or(0);
        // Program order: dropping node i first only decrements the counts of
        // later nodes, which the arena still holds.
        arena.reverse();
        let reads_mem = ops.iter().any(|op| matches!(op, Op::LdMem(_) | Op::LdxMem(_)));
        Some(Tree { root, arena, longest_path, reads_mem })
    }

    /// Runs the program (see [`super::Program::run`]).
    #[inline]
    pub(super) fn run(&self, data: &[u8], wire_len: u32) -> u32 {
        let mut c = Ctx { wire_len, mem: [0; 16] };
        (self.root.run)(&self.root, data, 0, 0, &mut c)
    }

    /// Runs the program with `c` as its state, which may come from an
    /// earlier run: the scratch memory is zeroed first if the program reads
    /// it (a program that only writes it cannot tell).
    #[inline]
    pub(super) fn run_in(&self, c: &mut Ctx, data: &[u8], wire_len: u32) -> u32 {
        c.wire_len = wire_len;
        if self.reads_mem {
            c.mem = [0; 16];
        }
        (self.root.run)(&self.root, data, 0, 0, c)
    }

    /// The most instructions a run can go through.
    pub(super) fn longest_path(&self) -> u32 {
        self.longest_path
    }

    /// The number of nodes.
    #[cfg(test)]
    pub(super) fn nodes(&self) -> usize {
        self.arena.len()
    }
}
