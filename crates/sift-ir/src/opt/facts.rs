//! Pass 3, path facts: one top-down walk that carries what the tests
//! already evaluated on the current path established, and rewrites every
//! test whose outcome that decides.
//!
//! What the walk knows at a node (all of it true on every path reaching the
//! node without an abort):
//!
//! * the outcomes of earlier tests (`and` operands before this one held,
//!   `or` operands before this one failed), used exactly (the same test) and
//!   through ranges (`u8[23] == 6` decides `u8[23] == 17`; `u16[54] > 1023`
//!   decides `u16[54] >= 80`), together with the range a value has by its
//!   form (`u16[k] >= 0`, `(u8[14] & 0xf) << 2 <= 60`), and through sets:
//!   after `u8[23] == 6 or u8[23] == 17` held, `u8[23] == 1` fails, and
//!   `u8[23] == 17` holds once `u8[23] == 6` failed;
//! * the *atoms* already evaluated (loads, divisions by a variable, walks):
//!   evaluating one again cannot abort; and the captured length every
//!   successful load proves (`u16[54]` proves 56 bytes, so `u8[23]` cannot
//!   abort any more).
//!
//! A test whose outcome is decided becomes `true`/`false` when it cannot
//! abort. When it could abort it stays, unless (a) its abort would be the
//! same as its outcome where it stands (an abort rejects the packet: at the
//! root, a `false` and an abort are the same), or (b) the next operand of
//! the same `and`/`or` evaluates the same atoms first (then it aborts
//! exactly when the dropped test would have). A sequence of tests that can
//! no longer abort is reordered so that tests of the same value are
//! adjacent (`src port 1 or dst port 1 or src port 2 or ...` becomes all
//! `src` tests, then all `dst` tests), which lets a backend load the value
//! once for all of them.

use std::cell::Cell;

use super::analysis::{
    atoms_all, decide_in_range, first_test, pred_atoms_all, proven_len, range, within,
};
use super::factor::{constants, eq_tests};
use super::numbering::{Vacancy, ValueNumbers};
use crate::pred::{CmpOp, Pred, Test, Value};

/// How an abort compares with the outcomes where a node stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ctx {
    /// An abort has the same effect as `false` (e.g. the root).
    AbortIsFalse,
    /// An abort has the same effect as `true` (e.g. the root under `not`).
    AbortIsTrue,
    /// An abort differs from both outcomes.
    Strict,
}

impl Ctx {
    fn negated(self) -> Ctx {
        match self {
            Ctx::AbortIsFalse => Ctx::AbortIsTrue,
            Ctx::AbortIsTrue => Ctx::AbortIsFalse,
            Ctx::Strict => Ctx::Strict,
        }
    }
}

/// At most this many facts are kept per value (bounds the running time).
const MAX_FACTS_PER_VALUE: usize = 64;
/// Operand positions at which a non-aborting rest is looked for.
const MAX_GROUP_START: usize = 8;

/// `value op rhs` evaluated to `holds` (no copy of a value: facts are
/// added and dropped all along the walk).
#[derive(Clone, Copy)]
struct Fact {
    op: CmpOp,
    rhs: Rhs,
    holds: bool,
}

/// The right operand of a [`Fact`].
#[derive(Clone, Copy, PartialEq, Eq)]
enum Rhs {
    /// A constant.
    Const(u32),
    /// The value of this number ([`Env::id`]).
    Value(u32),
    /// The value is one of the constants `Env::sets[start..end]` (from an
    /// `or` of equalities that held); `op` and `holds` are then unused.
    OneOf(u32, u32),
}

/// What to undo when leaving a node (values by their [`Env::id`]).
enum Undo {
    Len(u32),
    Done(u32),
    Fact(u32),
}

/// What the path to the current node established. Values (atoms, tested
/// values) are numbered once per pass ([`Env::id`]: one copy of each
/// distinct value), so the path state and its undo log hold numbers only.
#[derive(Default)]
struct Env {
    len: u32,
    /// The number of each value seen.
    ids: ValueNumbers,
    /// Per value number: an atom evaluated on the path.
    done: Vec<bool>,
    /// Per value number: what the path's tests established about it.
    facts: Vec<Vec<Fact>>,
    /// The constants of the [`Rhs::OneOf`] facts.
    sets: Vec<u32>,
    /// What the operands of the `and`/`or` nodes being rebuilt (innermost
    /// last) are known to be (see [`S::known`]); one vector for all.
    known: Vec<Option<bool>>,
    log: Vec<Undo>,
    /// Whether the pass changed anything so far (set whenever the result
    /// may differ from the input).
    changed: bool,
}

/// Passes with at most this many values leave their [`Env`] to the next
/// pass on the same thread.
const MAX_SPARE_VALUES: usize = 1024;

thread_local! {
    /// The [`Env`] of the last pass on this thread, emptied (allocating and
    /// freeing its tables costs more than the pass itself on short filters);
    /// boxed, so that taking and giving it back moves a pointer.
    static SPARE_ENV: Cell<Option<Box<Env>>> = const { Cell::new(None) };
}

impl Env {
    /// An empty `Env`, with the room a previous pass on this thread left.
    ///
    /// With `keep_numbers`, the values the last pass on this thread
    /// numbered keep their numbers (the second pass of one optimization
    /// meets mostly the same values: no new copies of them). A pass ends
    /// with everything it recorded undone, so their slots are empty.
    #[inline]
    fn take(keep_numbers: bool) -> Box<Env> {
        let mut env = SPARE_ENV.try_with(Cell::take).ok().flatten().unwrap_or_default();
        if !keep_numbers {
            // The slots stay, emptied, for the values numbered next: those
            // of the last pass's values (the ones after them were never
            // used or are empty already).
            let used = env.done.len();
            env.facts.iter_mut().take(used).for_each(Vec::clear);
            env.ids.clear();
            env.done.clear();
        }
        env.len = 0;
        env.changed = false;
        env.log.clear();
        env.known.clear();
        env.sets.clear();
        env
    }

    /// Leaves the room to the next pass on this thread (unless large).
    fn give_back(self: Box<Env>) {
        if self.facts.len() <= MAX_SPARE_VALUES {
            // (Fails only while the thread exits: the room is freed.)
            let _ = SPARE_ENV.try_with(|spare| spare.set(Some(self)));
        }
    }

    fn mark(&self) -> usize {
        self.log.len()
    }

    fn reset(&mut self, mark: usize) {
        while self.log.len() > mark {
            match self.log.pop() {
                Some(Undo::Len(l)) => self.len = l,
                Some(Undo::Done(i)) => self.done[i as usize] = false,
                Some(Undo::Fact(i)) => {
                    self.facts[i as usize].pop();
                }
                None => break,
            }
        }
    }

    /// The number of `v`, given on first sight (`v` is copied once).
    fn id(&mut self, v: &Value) -> u32 {
        let i = self.ids.number(v);
        self.slots_for(i)
    }

    /// [`Env::id`] of a test's left operand `v`, given what was known of
    /// its number when the test was looked at.
    fn lhs_id(&mut self, v: &Value, lhs: Lhs) -> u32 {
        match lhs {
            Lhs::Numbered(i) => i,
            Lhs::Vacant(vacancy) => {
                let i = self.ids.number_vacant(v, vacancy);
                self.slots_for(i)
            }
            Lhs::Unknown => self.id(v),
        }
    }

    /// Gives the value numbered `i` its slots if it was just numbered.
    fn slots_for(&mut self, i: u32) -> u32 {
        if i as usize != self.done.len() {
            return i;
        }
        self.done.push(false);
        // (A reused `Env` may have the slot already, emptied.)
        if self.facts.len() <= i as usize {
            self.facts.push(Vec::new());
        }
        i
    }

    /// Adds a fact about `v` (unless it has too many already).
    fn add_fact(&mut self, v: &Value, f: Fact) {
        let i = self.id(v);
        self.add_fact_about(i, f);
    }

    /// Adds a fact about the value numbered `i`.
    fn add_fact_about(&mut self, i: u32, f: Fact) {
        let fs = &mut self.facts[i as usize];
        if fs.len() < MAX_FACTS_PER_VALUE {
            fs.push(f);
            self.log.push(Undo::Fact(i));
        }
    }

    fn covered(&self, a: &Value) -> bool {
        within(a, self.len) || self.ids.get(a).is_some_and(|i| self.done[i as usize])
    }

    /// Whether no atom of `t` can abort any more; `lhs` is the number of
    /// `t.lhs` if it has one (looked up once for all the test's uses).
    fn test_covered(&self, t: &Test, lhs: Option<u32>) -> bool {
        let mut covered = |a: &Value| {
            if std::ptr::eq(a, &t.lhs) {
                within(a, self.len) || lhs.is_some_and(|i| self.done[i as usize])
            } else {
                self.covered(a)
            }
        };
        atoms_all(&t.lhs, &mut covered) && atoms_all(&t.rhs, &mut covered)
    }

    fn pred_covered(&self, p: &Pred) -> bool {
        pred_atoms_all(p, &mut |a| self.covered(a))
    }

    /// Records that the atoms of `t` evaluated without aborting; `lhs` is
    /// what is known of the number of `t.lhs` (it gets its number if it is
    /// numbered here).
    fn evaluated(&mut self, t: &Test, lhs: &mut Lhs) {
        let mut record = |a: &Value| {
            let l = proven_len(a);
            if l > self.len {
                self.log.push(Undo::Len(self.len));
                self.len = l;
            }
            if !within(a, self.len) {
                let i = if std::ptr::eq(a, &t.lhs) {
                    let i = self.lhs_id(a, *lhs);
                    *lhs = Lhs::Numbered(i);
                    i
                } else {
                    self.id(a)
                };
                if !self.done[i as usize] {
                    self.done[i as usize] = true;
                    self.log.push(Undo::Done(i));
                }
            }
            true
        };
        atoms_all(&t.lhs, &mut record);
        atoms_all(&t.rhs, &mut record);
    }

    /// Records what `p` evaluating to `outcome` (without aborting) proves;
    /// `lhs` is what is known of the number of the left operand of `p`'s
    /// test, if `p` is a (negated) test.
    fn assume(&mut self, p: &Pred, outcome: bool, lhs: Lhs) {
        match p {
            Pred::True | Pred::False => {}
            Pred::Test(t) => {
                let mut lhs = lhs;
                self.evaluated(t, &mut lhs);
                let i = self.lhs_id(&t.lhs, lhs);
                let rhs = match t.rhs {
                    Value::Const(k) => Rhs::Const(k),
                    ref v => Rhs::Value(self.id(v)),
                };
                self.add_fact_about(i, Fact { op: t.op, rhs, holds: outcome });
            }
            Pred::Not(q) => self.assume(q, !outcome, lhs),
            Pred::And(v) if outcome => v.iter().for_each(|q| self.assume(q, true, Lhs::Unknown)),
            Pred::Or(v) if !outcome => v.iter().for_each(|q| self.assume(q, false, Lhs::Unknown)),
            Pred::Or(_) => match (first_test(p), eq_tests(p)) {
                (Some(t), Some((value, ts))) => {
                    self.evaluated(t, &mut Lhs::Unknown);
                    let start = self.sets.len() as u32;
                    self.sets.extend(constants(ts));
                    let rhs = Rhs::OneOf(start, self.sets.len() as u32);
                    self.add_fact(value, Fact { op: CmpOp::Eq, rhs, holds: false });
                }
                (Some(t), None) => self.evaluated(t, &mut Lhs::Unknown),
                (None, _) => {}
            },
            Pred::And(_) => {
                if let Some(t) = first_test(p) {
                    self.evaluated(t, &mut Lhs::Unknown);
                }
            }
        }
    }

    /// The outcome of `t` if the facts (or the form of its values) decide
    /// it; `lhs` is the number of `t.lhs`, if it has one.
    fn decide(&self, t: &Test, lhs: Option<u32>) -> Option<bool> {
        let facts = lhs.map(|i| &self.facts[i as usize]);
        if let Some(fs) = facts {
            // `t.rhs` as a fact would have it (no fact has an unnumbered value).
            let rhs = match t.rhs {
                Value::Const(k) => Some(Rhs::Const(k)),
                ref v => self.ids.get(v).map(Rhs::Value),
            };
            if let Some(f) = rhs.and_then(|rhs| fs.iter().find(|f| f.op == t.op && f.rhs == rhs)) {
                return Some(f.holds);
            }
            if let (CmpOp::Eq, Value::Const(k)) = (t.op, &t.rhs) {
                // Constants the value was found to differ from.
                let excluded = |x: u32| fs.iter().any(|f| f.op == CmpOp::Eq && !f.holds && f.rhs == Rhs::Const(x));
                for f in fs {
                    let Rhs::OneOf(start, end) = f.rhs else { continue };
                    let ks = &self.sets[start as usize..end as usize];
                    if !ks.contains(k) {
                        return Some(false);
                    }
                    // `k` is the only candidate left.
                    if ks.iter().all(|&x| x == *k || excluded(x)) {
                        return Some(true);
                    }
                }
            }
        }
        let Value::Const(k) = t.rhs else { return None };
        let (mut lo, mut hi) = range(&t.lhs);
        for f in facts.map(|v| v.as_slice()).unwrap_or_default() {
            let Rhs::Const(c) = f.rhs else { continue };
            match (f.op, f.holds) {
                (CmpOp::Eq, true) => {
                    lo = lo.max(c);
                    hi = hi.min(c);
                }
                (CmpOp::Eq, false) => {
                    if t.op == CmpOp::Eq && c == k {
                        return Some(false);
                    }
                }
                (CmpOp::Gt, true) => lo = lo.max(c.saturating_add(1)),
                (CmpOp::Gt, false) => hi = hi.min(c),
                (CmpOp::Ge, true) => lo = lo.max(c),
                (CmpOp::Ge, false) => hi = hi.min(c.saturating_sub(1)),
                (CmpOp::Set, holds) => {
                    if t.op == CmpOp::Set {
                        if !holds && k & !c == 0 {
                            return Some(false);
                        }
                        if holds && c & !k == 0 {
                            return Some(true);
                        }
                    }
                }
            }
        }
        if lo > hi {
            // No packet gets here without aborting: any answer will do.
            return Some(false);
        }
        decide_in_range(t.op, lo, hi, k)
    }
}

/// What [`simp`] found out about the node it simplified (in place).
#[derive(Clone, Copy)]
struct S {
    /// The node's outcome if it does not abort, when known.
    known: Option<bool>,
    /// When the node is a (negated) test: what is known of the number of
    /// its left operand (what [`Env::assume`] needs next).
    lhs: Lhs,
}

/// What is known of the number ([`Env::id`]) of a test's left operand.
#[derive(Clone, Copy)]
enum Lhs {
    /// It has this number.
    Numbered(u32),
    /// It has none yet, and would go there.
    Vacant(Vacancy),
    /// Not looked up.
    Unknown,
}

impl Lhs {
    /// The number, if known.
    fn number(self) -> Option<u32> {
        match self {
            Lhs::Numbered(i) => Some(i),
            _ => None,
        }
    }
}

/// Makes `p` the constant `b` (known to be `b`).
fn set_constant(p: &mut Pred, b: bool) -> S {
    *p = if b { Pred::True } else { Pred::False };
    S { known: Some(b), lhs: Lhs::Unknown }
}

/// Rewrites `p` with what each path has already established.
pub fn simplify(p: Pred) -> Pred {
    simplify_noting(p, &mut false)
}

/// [`simplify`], setting `changed` when the result may differ from `p` (it
/// is left alone only when the result is certainly `p` itself).
pub(crate) fn simplify_noting(p: Pred, changed: &mut bool) -> Pred {
    simplify_numbered(p, false, changed)
}

/// [`simplify_noting`]; with `again`, the values the last pass on this
/// thread numbered keep their numbers (for the second pass of one
/// optimization; the numbers do not change what the pass does).
#[inline]
pub(crate) fn simplify_numbered(mut p: Pred, again: bool, changed: &mut bool) -> Pred {
    let mut env = Env::take(again);
    simp(&mut p, &mut env, Ctx::AbortIsFalse);
    // Everything recorded was undone on the way back up (the next pass
    // may keep the numbers: their slots must be empty).
    debug_assert!(env.log.is_empty() && env.len == 0);
    *changed |= env.changed;
    env.give_back();
    p
}

/// Simplifies `p` in place: a node is only rewritten when something is
/// decided about it or below it.
fn simp(p: &mut Pred, env: &mut Env, ctx: Ctx) -> S {
    match p {
        Pred::True => S { known: Some(true), lhs: Lhs::Unknown },
        Pred::False => S { known: Some(false), lhs: Lhs::Unknown },
        Pred::Test(t) => {
            let lhs = match env.ids.lookup(&t.lhs) {
                Ok(i) => Lhs::Numbered(i),
                Err(vacancy) => Lhs::Vacant(vacancy),
            };
            match env.decide(t, lhs.number()) {
                Some(b) if env.test_covered(t, lhs.number()) || allows(ctx, b) => {
                    env.changed = true;
                    set_constant(p, b)
                }
                known => S { known, lhs },
            }
        }
        Pred::Not(q) => {
            let s = simp(q, env, ctx.negated());
            let lhs = match &mut **q {
                Pred::True | Pred::False | Pred::Not(_) => {
                    env.changed = true;
                    *p = match std::mem::replace(&mut **q, Pred::True) {
                        Pred::True => Pred::False,
                        Pred::Not(r) => *r,
                        _ => Pred::True,
                    };
                    Lhs::Unknown
                }
                _ => s.lhs,
            };
            S { known: s.known.map(|b| !b), lhs }
        }
        Pred::And(_) => junction(p, env, ctx, true),
        Pred::Or(_) => junction(p, env, ctx, false),
    }
}

/// Whether an abort may stand in for `outcome` in this context.
fn allows(ctx: Ctx, outcome: bool) -> bool {
    matches!((ctx, outcome), (Ctx::AbortIsFalse, false) | (Ctx::AbortIsTrue, true))
}

/// A test or a negated test.
fn simple_lhs(p: &Pred) -> Option<&Value> {
    match p {
        Pred::Test(t) => Some(&t.lhs),
        Pred::Not(q) => match &**q {
            Pred::Test(t) => Some(&t.lhs),
            _ => None,
        },
        _ => None,
    }
}

/// Stable grouping of simple tests by their left operand (groups in the
/// order of their first test, except that the tests of `before`, the value
/// the operand before them tests, come first: a backend holds that value
/// already; other operands count as `Const(0)`); whether that moved any.
fn group_by_value(ps: &mut [Pred], before: Option<&Value>) -> bool {
    static OTHER: Value = Value::Const(0);
    fn key(p: &Pred) -> &Value {
        simple_lhs(p).unwrap_or(&OTHER)
    }
    // The group that goes first: `before`'s, when some test has it.
    let lead = before.filter(|b| ps.iter().any(|p| simple_lhs(p) == Some(*b)));
    // Grouped already when each operand tests the value of the one before
    // it or one not tested before (checked without allocating: the common
    // case), and `lead`'s tests come first.
    let new_or_same = |i: usize| {
        let k = key(&ps[i]);
        i == 0 || key(&ps[i - 1]) == k || !ps[..i - 1].iter().any(|q| key(q) == k)
    };
    if lead.is_none_or(|b| key(&ps[0]) == b) && (0..ps.len()).all(new_or_same) {
        return false;
    }
    // The group of each operand: the position of its group's first operand
    // among the first operands (no copy of the values).
    // (`lead`'s group is number 0, the others count from 1.)
    let mut firsts: Vec<usize> = Vec::new();
    let mut tagged: Vec<(usize, Pred)> = Vec::with_capacity(ps.len());
    for i in 0..ps.len() {
        let g = if lead == Some(key(&ps[i])) {
            0
        } else {
            match firsts.iter().position(|&j| key(&ps[j]) == key(&ps[i])) {
                Some(g) => g + 1,
                None => {
                    firsts.push(i);
                    firsts.len()
                }
            }
        };
        tagged.push((g, Pred::True));
    }
    if tagged.windows(2).all(|w| w[0].0 <= w[1].0) {
        // Grouped already.
        return false;
    }
    for (t, p) in tagged.iter_mut().zip(ps.iter_mut()) {
        t.1 = std::mem::replace(p, Pred::True);
    }
    // Stable: within a group, the original order.
    tagged.sort_by_key(|t| t.0);
    for (slot, (_, p)) in ps.iter_mut().zip(tagged) {
        *slot = p;
    }
    true
}

/// `and` (`is_and`) or `or` (the node `p`): `unit` is the operand value
/// that lets evaluation go on (`true` for `and`), `!unit` the one that
/// decides.
fn junction(p: &mut Pred, env: &mut Env, ctx: Ctx, is_and: bool) -> S {
    let (Pred::And(v) | Pred::Or(v)) = p else { return S { known: None, lhs: Lhs::Unknown } };
    let unit = is_and;
    let mark = env.mark();
    let n = v.len();
    // The operands are simplified where they stand, and the ones kept move
    // down: `v[..k]` holds them, `v[r..]` the operands still to simplify
    // (the operands from `i` on), `k <= r`; `v[k..r]` holds what is left
    // of operands dropped or moved. From `known_base` on, `env.known`
    // holds what each kept operand is known to be.
    let (mut k, mut r) = (0usize, 0usize);
    let known_base = env.known.len();
    let mut grouped = false;
    for i in 0..n {
        if !grouped && (1..=MAX_GROUP_START).contains(&i) && n - i >= 2 {
            let (done, rest) = v.split_at_mut(r);
            if rest.iter().all(|p| simple_lhs(p).is_some() && env.pred_covered(p)) {
                // The last operand kept is the one evaluated before them.
                let before = k.checked_sub(1).and_then(|l| simple_lhs(&done[l]));
                env.changed |= group_by_value(rest, before);
                grouped = true;
            }
        }
        let j = r;
        r += 1;
        let cctx = if i + 1 == n || allows(ctx, !unit) { ctx } else { Ctx::Strict };
        let s = simp(&mut v[j], env, cctx);
        match (&v[j], s.known) {
            (Pred::True, _) if unit => env.changed = true,
            (Pred::False, _) if !unit => env.changed = true,
            (Pred::True | Pred::False, _) => {
                move_down(v, k, j);
                k += 1;
                env.known.push(s.known);
                env.changed |= i + 1 < n;
                break;
            }
            (_, Some(b)) if b != unit => {
                move_down(v, k, j);
                k += 1;
                env.known.push(s.known);
                env.changed |= i + 1 < n;
                break;
            }
            _ => {
                // What the last operand establishes would only be undone
                // below: nothing after it on this path is simplified here.
                if i + 1 < n {
                    env.assume(&v[j], unit, s.lhs);
                }
                let flattened = match &mut v[j] {
                    Pred::And(w) if is_and => Some(std::mem::take(w)),
                    Pred::Or(w) if !is_and => Some(std::mem::take(w)),
                    _ => None,
                };
                match flattened {
                    Some(w) => {
                        env.changed = true;
                        env.known.extend(w.iter().map(|_| None));
                        if k + w.len() <= r {
                            for p in w {
                                v[k] = p;
                                k += 1;
                            }
                        } else {
                            // No room before the operands still to
                            // simplify: they move up.
                            k += w.len();
                            v.splice(k - w.len()..r, w);
                            r = k;
                        }
                    }
                    None => {
                        move_down(v, k, j);
                        k += 1;
                        env.known.push(s.known);
                    }
                }
            }
        }
    }
    v.truncate(k);
    env.reset(mark);
    // Drop operands that always let evaluation go on when the next operand
    // evaluates their atoms first (it aborts exactly when they would); the
    // kept ones move to the front, in order.
    // (What each kept operand is known to be moves along with it.)
    let mut kept = 0;
    for j in 0..v.len() {
        let known = env.known[known_base + j];
        if known == Some(unit) && j + 1 < v.len() && covers(&v[j + 1], &v[j]) {
            continue;
        }
        env.known[known_base + kept] = known;
        move_down(v, kept, j);
        kept += 1;
    }
    // Where an abort is as good as `unit`, operands at the end known to be
    // `unit` go too (the last one was simplified so already; one before it
    // becomes last when the ones after it go).
    if allows(ctx, unit) {
        while kept > 0 && env.known[known_base + kept - 1] == Some(unit) {
            kept -= 1;
        }
    }
    env.changed |= kept < v.len();
    v.truncate(kept);
    // What the last operand kept is known to be, and whether all are known
    // to be `unit`.
    let knowns = &env.known[known_base..known_base + kept];
    let (last, all_unit) = (knowns.last().copied(), knowns.iter().all(|k| *k == Some(unit)));
    env.known.truncate(known_base);
    let known = match last {
        None => Some(unit),
        Some(k) if k == Some(!unit) => Some(!unit),
        _ if all_unit => Some(unit),
        _ => None,
    };
    env.changed |= v.len() < 2;
    match v.len() {
        0 => *p = if unit { Pred::True } else { Pred::False },
        1 => *p = v.pop().unwrap_or(Pred::True),
        _ => {}
    }
    if let Some(b) = known {
        if allows(ctx, b) || env.pred_covered(p) {
            env.changed = true;
            return set_constant(p, b);
        }
    }
    S { known, lhs: Lhs::Unknown }
}

/// Moves the operand `v[j]` down to `v[k]` (`k <= j`), whose content is no
/// longer needed; usually `k == j` (nothing dropped before it): no copy.
#[inline]
fn move_down(v: &mut [Pred], k: usize, j: usize) {
    if k != j {
        v.swap(k, j);
    }
}

/// Whether evaluating `next` starts with atoms that abort whenever an atom
/// of `p` would.
fn covers(next: &Pred, p: &Pred) -> bool {
    let Some(t) = first_test(next) else { return false };
    let mut len = 0;
    test_atoms_all(t, &mut |a| {
        len = len.max(proven_len(a));
        true
    });
    // Whether `a` is one of the atoms of `t`.
    let first = |a: &Value| !test_atoms_all(t, &mut |b| b != a);
    pred_atoms_all(p, &mut |a| within(a, len) || first(a))
}

/// [`atoms_all`] over both operands of a test.
fn test_atoms_all(t: &Test, f: &mut impl FnMut(&Value) -> bool) -> bool {
    atoms_all(&t.lhs, f) && atoms_all(&t.rhs, f)
}

