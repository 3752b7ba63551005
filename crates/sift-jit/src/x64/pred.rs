//! The predicate IR (`sift_ir::Pred`) → x86-64 machine code, without going
//! through classic BPF.
//!
//! Same function signature and register conventions as the cBPF compiler,
//! except: the wire length lives in `r8d`, values are computed in `r9d`,
//! `r10d`, `r11d`, then `ebx`, `ebp`, `r12d`..`r15d` (pushed and popped by
//! functions that need them), in Sethi–Ullman order (within one test the
//! evaluation order is free, since any abort rejects the packet); `eax`,
//! `ecx` are scratch (bounds checks, `div`, shift counts), `edx` holds a
//! load index (or `div`'s high half).
//!
//! The predicate tree becomes jumps between an accept and a reject exit,
//! each test falling through to whatever code comes next. One walk before
//! emission ([`scan`]) finds the registers the tests need and a length
//! every accepted packet has (the loads on every path to the accept exit):
//! one bounds check against it comes first (length-check hoisting), and the
//! loads ending within it need none. What every path
//! to a test has established is tracked through `and`/`or`/`not` (the
//! facts of each exit met where exits join, [`Known`]): a captured length
//! checked (absolute loads ending within it skip their bounds check); the
//! index of an indexed load, kept in `rdx` for the next loads with the
//! same index (e.g. the IPv4 header length for both ports), with the end
//! offset already checked against it; and the operand of the last test,
//! kept in the first value register for the next tests of the same value.
//! A test of a packet load against a constant (`==` or `&`) compares the
//! bytes in memory with the constant in network order, and a masked two-
//! or four-byte load (`ld & mask == k`, as in `net`) is loaded as it is and
//! compared with the mask and constant in network order (no byte swap),
//! unless the next test has the same operand (a run of compares of one
//! value loads it once).
//!
//! Trees too deep for the recursion limit, values needing more than
//! nine registers, and `protochain` walks are refused (`None`); the caller
//! then goes through classic BPF.

use super::*;
use sift_ir::{BinOp, CmpOp, Pred, Size, Test, Value};

/// Value registers, in allocation order: three caller-saved ones, then
/// callee-saved ones, pushed on entry and popped on exit by functions that
/// need them.
const REGS: [u8; 9] = [R9, R10, R11, 3, 5, 12, 13, 14, 15];

/// Value registers of a count function, whose loop state holds `rbx` and
/// `r12`..`r15`: a predicate needing more has no count function.
const COUNT_REGS: [u8; 4] = [R9, R10, R11, 5];

/// How many of [`REGS`] are caller-saved.
const FREE_REGS: usize = 3;

/// How deep `Pred`/`Value` trees may nest.
const MAX_DEPTH: u32 = 400;

/// The registers a value needs (Sethi–Ullman number); `None` beyond
/// [`MAX_DEPTH`].
fn need(v: &Value, depth: u32) -> Option<usize> {
    let depth = depth.checked_sub(1)?;
    Some(match v {
        Value::Const(_) | Value::Len | Value::Load { index: None, .. } => 1,
        Value::Load { index: Some(i), .. } => need(i, depth)?,
        Value::Neg(a) => need(a, depth)?,
        // The walk has branches: such predicates go through classic BPF.
        Value::Protochain { .. } => return None,
        Value::Bin(_, a, b) if matches!(**b, Value::Const(_)) => need(a, depth)?,
        Value::Bin(_, a, b) => need_both(need(a, depth)?, need(b, depth)?),
    })
}

/// The registers two values computed together need, given what each needs
/// alone: the larger first, the other in the registers left.
fn need_both(na: usize, nb: usize) -> usize {
    if na == nb {
        na + 1
    } else {
        na.max(nb)
    }
}

/// Whether `load op k` can compare the packet bytes in memory with `k` in
/// network order (`==` on a constant that fits the load, or `&`).
fn is_raw_op(op: CmpOp, size: Size, k: u32) -> bool {
    op == CmpOp::Set || (op == CmpOp::Eq && u64::from(k) < 1u64 << (8 * size.bytes()))
}

/// `v` as a masked packet load, `load & mask`: the load's size, index and
/// offset, and the mask.
fn masked_load(v: &Value) -> Option<(Size, &Option<Box<Value>>, u32, u32)> {
    match v {
        Value::Bin(BinOp::And, a, b) => match (&**a, &**b) {
            (Value::Load { size, index, offset }, Value::Const(mask)) => Some((*size, index, *offset, *mask)),
            _ => None,
        },
        _ => None,
    }
}

/// Whether `load & mask == k` can compare the loaded bytes with the mask
/// and `k` in network order: a two- or four-byte load and a `k` that fits
/// it (the loaded value is zero-extended, so a mask's bits above it only
/// meet zeros).
fn is_raw_masked(size: Size, k: u32) -> bool {
    size != Size::Byte && u64::from(k) < 1u64 << (8 * size.bytes())
}

/// Whether a test compares an absolute packet load with a constant in
/// memory (needing no register).
fn is_raw_compare(t: &Test) -> bool {
    match (&t.lhs, &t.rhs) {
        (
            Value::Load {
                size, index: None, ..
            },
            Value::Const(k),
        ) => is_raw_op(t.op, *size, *k),
        _ => false,
    }
}

/// The registers test `t` needs.
fn test_need(t: &Test, depth: u32) -> Option<usize> {
    Some(match (&t.lhs, &t.rhs) {
        (Value::Const(_), Value::Const(_)) => 0,
        _ if is_raw_compare(t) => 0,
        (v, Value::Const(_)) | (Value::Const(_), v) => need(v, depth)?,
        (a, b) => need_both(need(a, depth)?, need(b, depth)?),
    })
}

/// The largest `offset + size` of the loads computing `v`: a captured
/// length the packet has if they do not abort (an indexed load's index
/// only adds to it).
fn load_end(v: &Value, depth: u32) -> Option<u64> {
    max_over_loads(v, depth, &|end, _| Some(end))
}

/// The largest `rule(offset + size, index)` over the loads computing `v`
/// (those computing an index included); 0 without loads.
fn max_over_loads(v: &Value, depth: u32, rule: &impl Fn(u64, Option<&Value>) -> Option<u64>) -> Option<u64> {
    let depth = depth.checked_sub(1)?;
    Some(match v {
        Value::Const(_) | Value::Len | Value::Protochain { .. } => 0,
        Value::Load { size, index, offset } => {
            let own = rule(u64::from(*offset) + u64::from(size.bytes()), index.as_deref())?;
            match index {
                Some(i) => own.max(max_over_loads(i, depth, rule)?),
                None => own,
            }
        }
        Value::Neg(a) => max_over_loads(a, depth, rule)?,
        Value::Bin(_, a, b) => max_over_loads(a, depth, rule)?.max(max_over_loads(b, depth, rule)?),
    })
}

/// For a predicate of at least [`DEEP_LINE_TESTS`] tests (for any
/// predicate where [`crate::prefetch_header_lines`]), the offset of the
/// deepest header byte it reads that may lie on a packet's second cache
/// line when its first does not: the last byte of its
/// loads at fixed offsets ending within 48 bytes, and of its loads behind
/// an index (each part of the index computed from the packet counted as 20,
/// the usual IPv4 header length: `tcp port 21` reads bytes 34 to 37 of an
/// Ethernet frame, `tcp[20]` byte 54), at most 63; `None` below 16
/// (byte 15 and all before it lie on the line of byte 0 of a packet at any
/// 16-byte boundary) or for a tree deeper than the recursion limit.
///
/// The count function prefetches that byte's line too when the packets lie
/// far apart beyond the caches (`crate::Prefetch`), or always where
/// [`crate::prefetch_header_lines`]. Deeper fixed offsets
/// are left out: those are the bytes of IPv6 and extension headers, which
/// most packets do not reach (`tcp` reads byte 54 only behind an IPv6
/// fragment header), so prefetching their line would mostly cost
/// bandwidth.
pub(crate) fn deep_line(p: &Pred) -> Option<u8> {
    deep_line_for(p, crate::prefetch_header_lines())
}

/// [`deep_line`] under the given choice of [`crate::prefetch_header_lines`]:
/// when `every_predicate`, whatever its number of tests.
fn deep_line_for(p: &Pred, every_predicate: bool) -> Option<u8> {
    let (last, tests) = header_reach(p)?;
    (tests >= DEEP_LINE_TESTS || every_predicate).then_some(last?)
}

/// [`deep_line`]'s offset whatever the number of tests (`None` below 16),
/// and the number of tests of `p`; `None` for a tree deeper than the
/// recursion limit.
fn header_reach(p: &Pred) -> Option<(Option<u8>, usize)> {
    /// An index's usual value: its constants added, 20 for each other part.
    fn usual(i: &Value, depth: u32) -> Option<u64> {
        let depth = depth.checked_sub(1)?;
        Some(match i {
            Value::Const(k) => u64::from(*k),
            Value::Bin(BinOp::Add, a, b) => usual(a, depth)?.saturating_add(usual(b, depth)?),
            _ => 20,
        })
    }
    /// The largest end offset of the loads counted in `v`.
    fn value(v: &Value, depth: u32) -> Option<u64> {
        max_over_loads(v, depth, &|end, index| match index {
            Some(i) => Some(end.saturating_add(usual(i, depth)?)),
            None => Some(if end <= 48 { end } else { 0 }),
        })
    }
    /// The largest end offset of the loads counted in `p`, and its number
    /// of tests.
    fn pred(p: &Pred, depth: u32) -> Option<(u64, usize)> {
        let depth = depth.checked_sub(1)?;
        Some(match p {
            Pred::True | Pred::False => (0, 0),
            Pred::Not(q) => pred(q, depth)?,
            Pred::And(v) | Pred::Or(v) => v.iter().try_fold((0, 0), |(end, tests), q| {
                let (e, t) = pred(q, depth)?;
                Some((end.max(e), tests + t))
            })?,
            Pred::Test(t) => (value(&t.lhs, depth)?.max(value(&t.rhs, depth)?), 1),
        })
    }
    let (end, tests) = pred(p, MAX_DEPTH)?;
    let last = end.saturating_sub(1).min(63);
    Some(((last >= 16).then_some(last as u8), tests))
}

/// The fewest tests for which a predicate's count function prefetches the
/// deeper line ([`deep_line`]). Where a packet's bytes on its second line
/// are not in the caches, the processor waits for them while it runs the
/// rest of that packet's code, and overlaps the wait with the next
/// packets' loads only if that code is short. With many tests (long host
/// and port lists), prefetching the line saves most of that wait:
/// `swift6` (87 tests) took 24–26% less time per packet on `mixed` and
/// `tcp5555`, `ftp200` (447) 7–9% less. With few, a prefetch that is
/// wasted (the line is not needed: the other protocols, IPv6 against an
/// IPv4 test) costs more than the waits it saves: `host`, `net`,
/// `swift3` and `tcp[20]` were 5–10% slower on `mixed`, `swift5` (17
/// tests) 23% faster on `tcp5555` but 7% slower on `mixed`, and
/// `bpfperf1`/`bpfperf2` (18, 24) slower on one of the two (`sift bench`,
/// 2026-11-27, alternated runs).
const DEEP_LINE_TESTS: usize = 32;

/// One walk over `p` before code is emitted: raises `regs` to the
/// registers its tests need, and returns the captured lengths every path
/// to its true exit, and every path to its false exit, has shown the
/// packet to have (by loads that did not abort), given `entry` on entry
/// (`u64::MAX`: no path gets there).
fn scan(p: &Pred, entry: u64, regs: &mut usize, depth: u32) -> Option<(u64, u64)> {
    let depth = depth.checked_sub(1)?;
    Some(match p {
        Pred::True => (entry, u64::MAX),
        Pred::False => (u64::MAX, entry),
        Pred::Not(q) => {
            let (t, f) = scan(q, entry, regs, depth)?;
            (f, t)
        }
        Pred::And(v) | Pred::Or(v) => {
            let is_and = matches!(p, Pred::And(_));
            // The exit the items share (f for and, t for or), and the
            // other one, on which the next item runs.
            let (mut shared, mut go_on) = (u64::MAX, entry);
            for q in v {
                let (t, f) = scan(q, go_on, regs, depth)?;
                let out;
                (go_on, out) = if is_and { (t, f) } else { (f, t) };
                shared = shared.min(out);
            }
            if is_and {
                (go_on, shared)
            } else {
                (shared, go_on)
            }
        }
        Pred::Test(t) => {
            *regs = (*regs).max(test_need(t, depth)?);
            let end = entry.max(load_end(&t.lhs, depth)?.max(load_end(&t.rhs, depth)?));
            (end, end)
        }
    })
}

fn width(size: Size) -> Width {
    match size {
        Size::Byte => Width::B,
        Size::Half => Width::H,
        Size::Word => Width::W,
    }
}

/// What every path to the code being emitted has established (a
/// register's content is named by the predicate's own `Value`).
#[derive(Clone, Copy)]
struct Known<'p> {
    /// A captured length checked: absolute loads ending within it need no
    /// bounds check.
    len: u64,
    /// The value `rdx` holds: the index of an indexed load, kept for the
    /// next loads with the same index ...
    index: Option<&'p Value>,
    /// ... for which `index + index_end <= caplen` was checked.
    index_end: u64,
    /// The value the first value register holds: a test's operand, kept
    /// for the next tests of the same value.
    value: Option<&'p Value>,
}

/// Whether `p` and `q` are tests of the same left operand against a
/// constant.
fn same_operand(p: &Pred, q: &Pred) -> bool {
    match (p, q) {
        (Pred::Test(a), Pred::Test(b)) => {
            matches!((&a.rhs, &b.rhs), (Value::Const(_), Value::Const(_))) && a.lhs == b.lhs
        }
        _ => false,
    }
}

/// The first test of `p` (`p` itself if it is no conjunction).
fn head(p: &Pred) -> &Pred {
    match p {
        Pred::And(v) => v.first().unwrap_or(p),
        _ => p,
    }
}

/// `(x, c)` if `p` is the test `x == c` (a constant).
fn as_eq(p: &Pred) -> Option<(&Value, u32)> {
    match p {
        Pred::Test(Test {
            lhs,
            op: CmpOp::Eq,
            rhs: Value::Const(c),
        }) => Some((lhs, *c)),
        _ => None,
    }
}

/// Whether `p` fails (without computing anything that could abort) where
/// `x == c` held: `p` is `x == c'` or a disjunction of such tests, every
/// `c'` other than `c`.
fn excluded_by(x: &Value, c: u32, p: &Pred) -> bool {
    let other = |q: &Pred| as_eq(q).is_some_and(|(y, d)| d != c && same_value(x, y));
    match p {
        Pred::Or(v) => !v.is_empty() && v.iter().all(other),
        _ => other(p),
    }
}

/// How many alternatives after one may be skipped at most (a bound on the
/// compile time of long disjunctions).
const MAX_SKIP: usize = 64;

/// For alternative `i` of a disjunction, `and(x == c, rest...)` with a
/// rest: the first later alternative `k` (up to `items.len()`) whose
/// first test is not [`excluded_by`] `x == c`, when that skips at least
/// one.
fn skip_to(items: &[Pred], i: usize) -> Option<usize> {
    let Pred::And(parts) = &items[i] else {
        return None;
    };
    if parts.len() < 2 {
        return None;
    }
    let (x, c) = as_eq(&parts[0])?;
    let later = &items[i + 1..items.len().min(i + 1 + MAX_SKIP)];
    let excluded = later.iter().take_while(|q| excluded_by(x, c, head(q))).count();
    (excluded > 0).then_some(i + 1 + excluded)
}

/// Whether two values are the same (often the same node of the tree).
fn same_value(a: &Value, b: &Value) -> bool {
    std::ptr::eq(a, b) || a == b
}

/// Whether two values held in registers are the same value.
fn same(a: Option<&Value>, b: Option<&Value>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => same_value(a, b),
        _ => false,
    }
}

impl<'p> Known<'p> {
    /// Nothing known (a function's entry).
    const NOTHING: Known<'static> = Known {
        len: 0,
        index: None,
        index_end: 0,
        value: None,
    };

    /// What holds on both of two paths.
    fn meet(self, other: Known<'p>) -> Known<'p> {
        let index = same(self.index, other.index);
        Known {
            len: self.len.min(other.len),
            index: if index { self.index } else { None },
            index_end: if index { self.index_end.min(other.index_end) } else { 0 },
            value: if same(self.value, other.value) { self.value } else { None },
        }
    }
}

/// What holds on every one of the paths met so far (`None`: none yet).
fn meet<'p>(acc: Option<Known<'p>>, k: Known<'p>) -> Option<Known<'p>> {
    Some(match acc {
        Some(a) => a.meet(k),
        None => k,
    })
}

struct Ctx<'p> {
    asm: Asm,
    reject: usize,
    /// The value registers this function may use ([`REGS`], or
    /// [`COUNT_REGS`] in a count function).
    regs: &'static [u8],
    /// What every path to the code being emitted has established.
    known: Known<'p>,
    /// The test being emitted is followed by a test of the same operand:
    /// worth loading it into a register rather than comparing in memory.
    operand_reused: bool,
}

impl<'p> Ctx<'p> {
    fn new_label(&mut self) -> usize {
        self.asm.new_label()
    }

    /// Jumps to `t` when the predicate holds, else to `f`; `next` is the
    /// label bound right after this code. `self.known` on entry is what
    /// every path here has established; returns what every path to `t`,
    /// and every path to `f`, has established.
    fn pred(
        &mut self,
        p: &'p Pred,
        t: usize,
        f: usize,
        next: usize,
        depth: u32,
    ) -> Option<(Known<'p>, Known<'p>)> {
        let depth = depth.checked_sub(1)?;
        let known = self.known;
        Some(match p {
            Pred::True => {
                if t != next {
                    self.asm.jmp(t);
                }
                (known, known)
            }
            Pred::False => {
                if f != next {
                    self.asm.jmp(f);
                }
                (known, known)
            }
            Pred::Not(q) => {
                let (kt, kf) = self.pred(q, f, t, next, depth)?;
                (kf, kt)
            }
            Pred::And(v) => self.chain(v, true, t, f, next, depth)?,
            Pred::Or(v) => self.chain(v, false, t, f, next, depth)?,
            Pred::Test(test) => {
                self.test(test, t, f, next, depth)?;
                // Every load of a test runs before either exit.
                (self.known, self.known)
            }
        })
    }

    /// The conjunction (`is_and`) or disjunction of `items`, as
    /// [`Ctx::pred`]. In a disjunction, an alternative `and(x == c, ...)`
    /// whose rest fails after `x == c` held goes straight past the
    /// alternatives that follow it and start with `x == c'` (`c' != c`, or
    /// a disjunction of such tests): their first tests would compute `x`
    /// again (pure, and it did not abort) and fail.
    fn chain(
        &mut self,
        items: &'p [Pred],
        is_and: bool,
        t: usize,
        f: usize,
        next: usize,
        depth: u32,
    ) -> Option<(Known<'p>, Known<'p>)> {
        let n = items.len();
        if n == 0 {
            // Empty and = true, empty or = false.
            let p = if is_and { &Pred::True } else { &Pred::False };
            return self.pred(p, t, f, next, depth);
        }
        // The label before item `i` (1 <= i < n) is `first + i - 1`.
        let first = self.asm.labels.len();
        for _ in 1..n {
            self.new_label();
        }
        // What the jumps past excluded alternatives bring to item `i`
        // (index `i`; `n`: the exit `f`), once there are any.
        let mut skipped: Vec<Option<Known<'p>>> = Vec::new();
        // What the exit the items share (f for and, t for or) gets.
        let mut shared = None;
        for (i, q) in items.iter().enumerate() {
            let last = i + 1 == n;
            let after = if last { next } else { first + i };
            self.operand_reused = !last && same_operand(q, &items[i + 1]);
            let (kt, kf) = if is_and {
                self.pred(q, if last { t } else { after }, f, after, depth)?
            } else {
                let on_fail = if last { f } else { after };
                match (q, skip_to(items, i)) {
                    (Pred::And(parts), Some(k)) => {
                        // The first test, then the rest, failing to item k.
                        let to = if k == n { f } else { first + k - 1 };
                        let passed = self.new_label();
                        self.operand_reused = same_operand(&parts[0], &parts[1]);
                        let (kt0, kf0) = self.pred(&parts[0], passed, on_fail, passed, depth)?;
                        self.asm.bind(passed);
                        self.known = kt0;
                        let (kt1, kf1) = self.chain(&parts[1..], true, t, to, after, depth)?;
                        if skipped.is_empty() {
                            skipped.resize(n + 1, None);
                        }
                        skipped[k] = meet(skipped[k], kf1);
                        (kt1, kf0)
                    }
                    _ => self.pred(q, t, on_fail, after, depth)?,
                }
            };
            let (go_on, out) = if is_and { (kt, kf) } else { (kf, kt) };
            if last {
                let skipped = skipped.get(n).copied().flatten();
                return Some(if is_and {
                    (kt, meet(shared, kf)?)
                } else {
                    (meet(shared, kt)?, meet(skipped, kf)?)
                });
            }
            shared = meet(shared, out);
            self.asm.bind(after);
            // The next item runs on the other exit (and on the jumps past
            // excluded alternatives that lead to it).
            self.known = meet(skipped.get(i + 1).copied().flatten(), go_on)?;
        }
        None
    }

    /// Whether the first value register holds `v` on every path here.
    fn holds(&self, v: &Value) -> bool {
        same(self.known.value, Some(v))
    }

    fn test(&mut self, test: &'p Test, t: usize, f: usize, next: usize, depth: u32) -> Option<()> {
        let Test { lhs, op, rhs } = test;
        let cc = match op {
            CmpOp::Eq => Cc::E,
            CmpOp::Gt => Cc::A,
            CmpOp::Ge => Cc::Ae,
            CmpOp::Set => Cc::Ne,
        };
        match (lhs, rhs) {
            (Value::Const(a), Value::Const(b)) => {
                let holds = match op {
                    CmpOp::Eq => a == b,
                    CmpOp::Gt => a > b,
                    CmpOp::Ge => a >= b,
                    CmpOp::Set => a & b != 0,
                };
                let to = if holds { t } else { f };
                if to != next {
                    self.asm.jmp(to);
                }
            }
            (Value::Load { size, index, offset }, Value::Const(k))
                if is_raw_op(*op, *size, *k) && !self.holds(lhs) && !self.operand_reused =>
            {
                // Raw network-order compare in memory.
                let m = self.load_operand(*size, index, *offset, self.regs, depth)?;
                raw_compare(&mut self.asm, width(*size), m, *k, *op == CmpOp::Eq);
                branch(&mut self.asm, cc, t, f, next);
            }
            (_, Value::Const(k))
                if *op == CmpOp::Eq
                    && masked_load(lhs).is_some_and(|(size, ..)| is_raw_masked(size, *k))
                    && !self.holds(lhs)
                    && !self.operand_reused =>
            {
                // Raw network-order masked compare: the bytes as loaded,
                // the mask and the constant swapped (no byte swap of the
                // loaded value).
                let (size, index, offset, mask) = masked_load(lhs)?;
                let m = self.load_operand(size, index, offset, self.regs, depth)?;
                let d = self.regs[0];
                self.known.value = None;
                let (mask, k) = match size {
                    Size::Half => {
                        // movzx d, word [m]
                        self.asm.op_mem(None, false, &[0x0f, 0xb7], d, m);
                        (u32::from((mask as u16).swap_bytes()), u32::from((*k as u16).swap_bytes()))
                    }
                    _ => {
                        self.asm.op_mem(None, false, &[0x8b], d, m); // mov d, [m]
                        (mask.swap_bytes(), k.swap_bytes())
                    }
                };
                self.asm.alu_ri(false, 4, d, mask); // and d, mask
                self.compare_imm(d, CmpOp::Eq, k);
                branch(&mut self.asm, cc, t, f, next);
            }
            (v, Value::Const(k)) => {
                self.operand(v, depth)?;
                self.compare_imm(self.regs[0], *op, *k);
                branch(&mut self.asm, cc, t, f, next);
            }
            (Value::Const(k), v) => {
                self.operand(v, depth)?;
                // k op v, with v in the register.
                self.compare_imm(
                    self.regs[0],
                    if *op == CmpOp::Set {
                        CmpOp::Set
                    } else {
                        CmpOp::Eq
                    },
                    *k,
                );
                let cc = match op {
                    CmpOp::Eq => Cc::E,
                    CmpOp::Gt => Cc::B,  // v < k
                    CmpOp::Ge => Cc::Be, // v <= k
                    CmpOp::Set => Cc::Ne,
                };
                branch(&mut self.asm, cc, t, f, next);
            }
            (a, b) => {
                let (na, nb) = (need(a, depth)?, need(b, depth)?);
                if need_both(na, nb) > self.regs.len() {
                    return None;
                }
                let regs = self.regs;
                let (ra, rb) = if na >= nb {
                    self.value(a, regs, depth)?;
                    self.value(b, &regs[1..], depth)?;
                    self.known.value = Some(a);
                    (regs[0], regs[1])
                } else {
                    self.value(b, regs, depth)?;
                    self.value(a, &regs[1..], depth)?;
                    self.known.value = Some(b);
                    (regs[1], regs[0])
                };
                if *op == CmpOp::Set {
                    self.asm.op_rr(None, false, &[0x85], rb, ra); // test ra, rb
                } else {
                    self.asm.op_rr(None, false, &[0x39], rb, ra); // cmp ra, rb
                }
                branch(&mut self.asm, cc, t, f, next);
            }
        }
        Some(())
    }

    /// Puts `v` (a test's operand) in the first value register, unless it
    /// is there already on every path here.
    fn operand(&mut self, v: &'p Value, depth: u32) -> Option<()> {
        if self.holds(v) {
            return Some(());
        }
        if need(v, depth)? > self.regs.len() {
            return None;
        }
        self.value(v, self.regs, depth)?;
        self.known.value = Some(v);
        Some(())
    }

    /// `cmp r, k` (Eq/Gt/Ge) or `test r, k` (Set).
    fn compare_imm(&mut self, r: u8, op: CmpOp, k: u32) {
        if op == CmpOp::Set || (op == CmpOp::Eq && k == 0) {
            if op == CmpOp::Eq {
                self.asm.op_rr(None, false, &[0x85], r, r); // test r, r
            } else {
                self.asm.op_rr(None, false, &[0xf7], 0, r); // test r, imm32
                self.asm.imm32(k);
            }
        } else {
            self.asm.alu_ri(false, 7, r, k);
        }
    }

    /// Bounds check of an absolute load (`rax` as scratch) and its operand.
    fn abs_operand(&mut self, k: u32, size: u32) -> Mem {
        let end = u64::from(k) + u64::from(size);
        if end > self.known.len {
            if end <= i32::MAX as u64 {
                self.asm.alu_ri(true, 7, RSI, end as u32); // cmp rsi, end
            } else {
                self.asm.rex(true, 0, 0, RAX);
                self.asm.byte(0xb8);
                self.asm.bytes(&end.to_le_bytes()); // mov rax, imm64
                self.asm.op_rr(None, true, &[0x39], RAX, RSI); // cmp rsi, rax
            }
            self.asm.jcc(Cc::B, self.reject);
            // Past this point the packet has at least `end` bytes.
            self.known.len = end;
        }
        if k <= i32::MAX as u32 {
            Mem {
                base: RDI,
                index: None,
                disp: k as i32,
            }
        } else {
            self.asm.mov_ri(RAX, k);
            Mem {
                base: RDI,
                index: Some(RAX),
                disp: 0,
            }
        }
    }

    /// Rejects the packet unless `base + disp <= caplen` (64-bit; `rax`
    /// as scratch).
    fn check_end(&mut self, base: u8, disp: i32) {
        let end = Mem {
            base,
            index: None,
            disp,
        };
        self.asm.op_mem(None, true, &[0x8d], RAX, end); // lea rax, [base + disp]
        self.asm.op_rr(None, true, &[0x39], RAX, RSI); // cmp rsi, rax
        self.asm.jcc(Cc::B, self.reject);
    }

    /// The memory operand of a packet load (`index` computed into the
    /// first of `regs` if there is one), after its bounds check.
    fn load_operand(
        &mut self,
        size: Size,
        index: &'p Option<Box<Value>>,
        offset: u32,
        regs: &[u8],
        depth: u32,
    ) -> Option<Mem> {
        match index {
            None => Some(self.abs_operand(offset, size.bytes())),
            Some(i) => self.indexed_operand(i, offset, size, regs, depth),
        }
    }

    /// The bounds check of a `size`-byte load at `i + offset` (`i`
    /// computed with `regs`, or kept in `rdx` from an earlier load on every
    /// path here) and its operand.
    fn indexed_operand(&mut self, i: &'p Value, offset: u32, size: Size, regs: &[u8], depth: u32) -> Option<Mem> {
        let d = *regs.first()?;
        if offset > i32::MAX as u32 - 4 {
            // d = i + offset in 64 bits (no wrap); `rdx` keeps nothing.
            self.value(i, regs, depth)?;
            self.asm.mov_ri(RAX, offset);
            self.asm.op_rr(None, true, &[0x01], RAX, d); // add d64, rax
            self.check_end(d, size.bytes() as i32);
            return Some(Mem {
                base: RDI,
                index: Some(d),
                disp: 0,
            });
        }
        if !same(self.known.index, Some(i)) {
            self.value(i, regs, depth)?;
            // (A 32-bit move: the upper half of rdx is 0.)
            self.asm.mov_rr(RDX, d);
            self.known.index = Some(i);
            self.known.index_end = 0;
        }
        // rdx + offset + size <= caplen, in 64 bits.
        let end = offset + size.bytes();
        if u64::from(end) > self.known.index_end {
            self.check_end(RDX, end as i32);
            self.known.index_end = u64::from(end);
            // (The index is not negative: the packet has `end` bytes.)
            self.known.len = self.known.len.max(u64::from(end));
        }
        Some(Mem {
            base: RDI,
            index: Some(RDX),
            disp: offset as i32,
        })
    }

    /// Computes `v` into `regs[0]`, using `regs[..need(v)]`.
    fn value(&mut self, v: &'p Value, regs: &[u8], depth: u32) -> Option<()> {
        let depth = depth.checked_sub(1)?;
        let d = *regs.first()?;
        if d == self.regs[0] {
            self.known.value = None;
        }
        match v {
            Value::Const(k) => self.asm.mov_ri(d, *k),
            Value::Len => self.asm.mov_rr(d, R8),
            Value::Protochain { .. } => return None,
            Value::Load { size, index, offset } => {
                let m = self.load_operand(*size, index, *offset, regs, depth)?;
                load_be(&mut self.asm, d, width(*size), m);
            }
            Value::Neg(a) => {
                self.value(a, regs, depth)?;
                self.asm.op_rr(None, false, &[0xf7], 3, d); // neg d
            }
            Value::Bin(op, a, b) => {
                if let Value::Const(k) = **b {
                    self.value(a, regs, depth)?;
                    self.bin_imm(*op, d, k);
                    return Some(());
                }
                let (na, nb) = (need(a, depth)?, need(b, depth)?);
                let s = *regs.get(1)?;
                if na >= nb {
                    self.value(a, regs, depth)?;
                    self.value(b, &regs[1..], depth)?;
                    self.bin_rr(*op, d, s);
                } else {
                    self.value(b, regs, depth)?;
                    self.value(a, &regs[1..], depth)?;
                    // s = a, d = b: compute into s, then move.
                    self.bin_rr(*op, s, d);
                    self.asm.mov_rr(d, s);
                }
            }
        }
        Some(())
    }

    /// `d = d op s`.
    fn bin_rr(&mut self, op: BinOp, d: u8, s: u8) {
        if matches!(op, BinOp::Div | BinOp::Mod) {
            // `div` takes rdx.
            self.known.index = None;
        }
        let a = &mut self.asm;
        match op {
            BinOp::Add => a.op_rr(None, false, &[0x01], s, d),
            BinOp::Sub => a.op_rr(None, false, &[0x29], s, d),
            BinOp::And => a.op_rr(None, false, &[0x21], s, d),
            BinOp::Or => a.op_rr(None, false, &[0x09], s, d),
            BinOp::Xor => a.op_rr(None, false, &[0x31], s, d),
            BinOp::Mul => a.op_rr(None, false, &[0x0f, 0xaf], d, s),
            BinOp::Div | BinOp::Mod => {
                a.op_rr(None, false, &[0x85], s, s); // test s, s
                a.jcc(Cc::E, self.reject);
                a.mov_rr(RAX, d);
                a.mov_ri(RDX, 0);
                a.op_rr(None, false, &[0xf7], 6, s); // div s
                a.mov_rr(d, if op == BinOp::Div { RAX } else { RDX });
            }
            BinOp::Shl | BinOp::Shr => {
                // The count modulo 32, as x86 takes it.
                a.mov_rr(RCX, s);
                a.op_rr(
                    None,
                    false,
                    &[0xd3],
                    if op == BinOp::Shl { 4 } else { 5 },
                    d,
                );
            }
        }
    }

    /// `d = d op k`.
    fn bin_imm(&mut self, op: BinOp, d: u8, k: u32) {
        if matches!(op, BinOp::Div | BinOp::Mod) {
            // `div` takes rdx.
            self.known.index = None;
        }
        let reject = self.reject;
        let a = &mut self.asm;
        match op {
            BinOp::Add => a.alu_ri(false, 0, d, k),
            BinOp::Sub => a.alu_ri(false, 5, d, k),
            BinOp::And => a.alu_ri(false, 4, d, k),
            BinOp::Or => a.alu_ri(false, 1, d, k),
            BinOp::Xor => a.alu_ri(false, 6, d, k),
            BinOp::Mul => {
                if fits_i8(i64::from(k as i32)) {
                    a.op_rr(None, false, &[0x6b], d, d);
                    a.byte(k as u8);
                } else {
                    a.op_rr(None, false, &[0x69], d, d);
                    a.imm32(k);
                }
            }
            BinOp::Div | BinOp::Mod if k == 0 => a.jmp(reject),
            BinOp::Div if k.is_power_of_two() => shift_imm(a, 5, d, k.trailing_zeros()),
            BinOp::Mod if k.is_power_of_two() => a.alu_ri(false, 4, d, k - 1),
            BinOp::Div | BinOp::Mod => {
                a.mov_rr(RAX, d);
                a.mov_ri(RDX, 0);
                a.mov_ri(RCX, k);
                a.op_rr(None, false, &[0xf7], 6, RCX); // div ecx
                a.mov_rr(d, if op == BinOp::Div { RAX } else { RDX });
            }
            BinOp::Shl => shift_imm(a, 4, d, k & 31),
            BinOp::Shr => shift_imm(a, 5, d, k & 31),
        }
    }
}

/// Whether `p` reads the wire length (`len`).
fn reads_len(p: &Pred) -> bool {
    fn value(v: &Value) -> bool {
        match v {
            Value::Len => true,
            Value::Const(_) | Value::Protochain { .. } => false,
            Value::Load { index, .. } => index.as_deref().is_some_and(value),
            Value::Neg(a) => value(a),
            Value::Bin(_, a, b) => value(a) || value(b),
        }
    }
    match p {
        Pred::True | Pred::False => false,
        Pred::Not(q) => reads_len(q),
        Pred::And(v) | Pred::Or(v) => v.iter().any(reads_len),
        Pred::Test(t) => value(&t.lhs) || value(&t.rhs),
    }
}

/// Emits the whole `function` (jumps unpatched, see [`Asm::finish`]): the
/// per-packet function, or the count or verdict function (the signatures
/// and loop of the cBPF compiler's, see the module documentation of `x64`:
/// `rbx` walks the `PacketRef`s, `r12` holds their end, `r14` counts, `r15`
/// holds the prefetch distance, `r13` walks the verdict bytes; the wire
/// length of the packet goes to `r8d`). Also returns whether the code reads
/// the wire length.
fn emit(pred: &Pred, accept: u32, function: Function, asm: &mut Asm) -> Option<bool> {
    let count = function != Function::Single;
    let mut regs = 0;
    // Every packet the predicate accepts has at least `accept_len` bytes.
    let (accept_len, _) = scan(pred, 0, &mut regs, MAX_DEPTH)?;
    let reads_len = count && reads_len(pred);
    let saved: &[u8] = if count {
        // rbp, if the predicate needs it.
        COUNT_REGS.get(FREE_REGS..regs.max(FREE_REGS))?
    } else {
        REGS.get(FREE_REGS..regs.max(FREE_REGS))?
    };
    let mut cx = Ctx {
        asm: std::mem::take(asm),
        reject: 0,
        regs: if count { &COUNT_REGS } else { &REGS },
        known: Known::NOTHING,
        operand_reused: false,
    };
    let done = emit_body(&mut cx, pred, accept, accept_len, function, reads_len, saved);
    // The buffers go back to the scratch assembler in any case.
    *asm = cx.asm;
    done.map(|()| reads_len)
}

/// [`emit`]'s code, into `cx`; `accept_len`: a length every packet the
/// predicate accepts has; `saved`: the value registers pushed.
fn emit_body<'p>(
    cx: &mut Ctx<'p>,
    pred: &'p Pred,
    accept: u32,
    accept_len: u64,
    function: Function,
    reads_len: bool,
    saved: &[u8],
) -> Option<()> {
    let count = function != Function::Single;
    let accept_label = cx.new_label();
    cx.reject = cx.new_label();
    let (top, done) = (cx.new_label(), cx.new_label());
    // (Predicates always read packet bytes, or are constants with no code.)
    let counting = CountLoop {
        reads_len,
        reads_packet: true,
        verdicts: function == Function::Verdicts,
        wire: R8,
        saved,
        deep_line: if count { deep_line(pred) } else { None },
    };
    if count {
        counting.head(&mut cx.asm, top, done);
    } else {
        saved.iter().for_each(|&r| cx.asm.push(r));
        cx.asm.mov_rr(R8, RDX);
    }
    // One bounds check up front for the packets too short to be accepted
    // (however the tests would go, a load would abort or a test fail):
    // the loads ending within it need none.
    if accept_len > 0 && accept_len <= i32::MAX as u64 {
        cx.asm.alu_ri(true, 7, RSI, accept_len as u32); // cmp rsi, accept_len
        cx.asm.jcc(Cc::B, cx.reject);
        cx.known.len = accept_len;
    }
    // The accept exit follows the body, which may fall through to it.
    cx.pred(pred, accept_label, cx.reject, accept_label, MAX_DEPTH)?;
    if count {
        cx.asm.bind(accept_label);
        if accept != 0 {
            counting.accept(&mut cx.asm);
        }
        cx.asm.bind(cx.reject);
        counting.tail(&mut cx.asm, top, done);
        return Some(());
    }
    for (label, value) in [(accept_label, accept), (cx.reject, 0)] {
        cx.asm.bind(label);
        cx.asm.mov_ri(RAX, value);
        saved.iter().rev().for_each(|&r| cx.asm.pop(r));
        cx.asm.byte(0xc3);
    }
    Some(())
}

/// Compiles a predicate to `function` and hands its code to `install`:
/// the per-packet function returns `accept` when the predicate holds and 0
/// when it does not or evaluation aborts; the count and verdict functions
/// (the signatures of the cBPF compiler's, see `x64`'s module
/// documentation) count the packets for which it holds (`accept`
/// non-zero). `None`: too deep, or more registers needed than the function
/// has.
pub(crate) fn compile<R>(pred: &Pred, accept: u32, function: Function, install: impl FnOnce(&[u8]) -> R) -> Option<R> {
    with_scratch_asm(|asm| {
        emit(pred, accept, function, asm)?;
        asm.finish()?;
        Some(install(&asm.code))
    })
}

#[cfg(test)]
mod tests {
    use super::{deep_line, deep_line_for, header_reach, DEEP_LINE_TESTS};
    use sift_ir::{LinkType, LowerOptions, Pred};

    fn pred(expr: &str) -> Pred {
        let opts = LowerOptions { linktype: LinkType::EN10MB, ..LowerOptions::default() };
        let ast = sift_syntax::parse(expr).expect("parses");
        sift_ir::optimize(&sift_ir::lower(&ast, &opts).expect("lowers"))
    }

    fn line(expr: &str) -> Option<u8> {
        header_reach(&pred(expr)).expect("not too deep").0
    }

    /// The deeper line a count function may prefetch: the last byte of the
    /// IPv4 (and ARP) headers and ports a filter reads on Ethernet; none
    /// for a filter that reads only the first 16 bytes, and IPv6's deeper
    /// bytes left out.
    #[test]
    fn the_deep_line_is_the_last_header_byte_of_the_usual_path() {
        assert_eq!(line("ip"), None);
        assert_eq!(line("ether host 1:2:3:4:5:6"), None);
        assert_eq!(line("tcp"), Some(23)); // not byte 54, behind an IPv6 fragment header
        assert_eq!(line("icmp"), Some(23));
        assert_eq!(line("src net 10.0.0.0/8"), Some(31)); // ARP's source address at 28
        assert_eq!(line("host 10.1.2.3"), Some(41)); // ARP's target address at 38
        assert_eq!(line("tcp port 21"), Some(37)); // behind a 20-byte IPv4 header
        assert_eq!(line("tcp[20] > 65"), Some(54));
        assert_eq!(line("ether[100] = 1"), None);
        assert_eq!(line("ip6 host ::1"), Some(45)); // loads ending within 48 bytes, up to the destination's second word
    }

    /// Only predicates of many tests get the deeper line prefetched,
    /// unless every predicate does (`crate::prefetch_header_lines`).
    #[test]
    fn only_long_predicates_prefetch_the_deep_line() {
        let ports = |n: u32| (1..=n).map(|p| p.to_string()).collect::<Vec<_>>().join(" or ");
        assert_eq!(deep_line_for(&pred("tcp port 21"), false), None);
        let short = pred(&format!("ip and tcp port ({})", ports(4)));
        let long = pred(&format!("ip and tcp port ({})", ports(20)));
        assert!(header_reach(&short).expect("reach").1 < DEEP_LINE_TESTS);
        assert!(header_reach(&long).expect("reach").1 >= DEEP_LINE_TESTS);
        assert_eq!(deep_line_for(&short, false), None);
        assert_eq!(deep_line_for(&long, false), Some(37));
        // Every predicate that reads past its first 16 bytes.
        assert_eq!(deep_line_for(&pred("tcp port 21"), true), Some(37));
        assert_eq!(deep_line_for(&short, true), Some(37));
        assert_eq!(deep_line_for(&long, true), Some(37));
        assert_eq!(deep_line_for(&pred("ip"), true), None);
        // And the process's own choice is one of the two.
        let chosen = deep_line(&short);
        assert_eq!(chosen, deep_line_for(&short, crate::prefetch_header_lines()));
    }
}
