//! Pass 2, factoring: brings the alternatives of an `or` that start with
//! the same test together and factors that test out, and distributes an
//! `and` over an `or` whose alternatives are told apart by their first
//! test, so that later tests see what the first one decided.
//!
//! Both rewrites rest on purity and on the global abort:
//!
//! * `or(and(g, r1), and(g, r2))` ≡ `and(g, or(r1, r2))`: `g` is evaluated
//!   first either way, and a second evaluation of `g` would give the same
//!   result without aborting.
//! * Alternatives whose first tests are *exclusive* (the same value compared
//!   for equality with different constants, e.g. `u16[12] == 0x800` and
//!   `u16[12] == 0x86dd`) commute: they abort together, and when one first
//!   test holds the other fails without evaluating anything else.
//!   So `or(and(ip, a), and(ip6, b), and(ip, c))` ≡
//!   `or(and(ip, a), and(ip, c), and(ip6, b))`.
//! * `and(or(A1, …, An), P)` ≡ `or(and(A1, P), …, and(An, P))` when the
//!   `Ai` start with pairwise exclusive tests: once `Ai`'s first test holds,
//!   every other `Aj` fails at its first test without aborting.
//!
//! * In `and(G, or(A1, …, An), P)`, an `Ai` whose first test an earlier
//!   operand `G` rules out (`G` tests the same value for equality with other
//!   constants) is dropped before distributing: `G` computed that value
//!   without aborting, so `Ai` fails without aborting (`tcp[…]`, IPv4 only,
//!   copies nothing into the IPv6 alternative of its `tcp` test).
//!
//! Distribution copies `P`; a node budget bounds the total growth.

use super::analysis::size;
use super::fold;
use crate::pred::{CmpOp, Pred, Test, Value};

/// How far back an alternative may move (bounds the running time).
const MAX_MOVE: usize = 64;

/// Factors and distributes, copying at most `budget` nodes in all.
pub fn factor(p: Pred, budget: &mut usize) -> Pred {
    factor_noting(p, budget, &mut false)
}

/// [`factor`], setting `changed` when the result may differ from `p` (it
/// is left alone only when the result is certainly `p` itself).
pub(crate) fn factor_noting(mut p: Pred, budget: &mut usize, changed: &mut bool) -> Pred {
    factor_in_place(&mut p, budget, changed);
    p
}

/// [`factor_noting`] in place: a node is only taken apart and rebuilt when
/// there is something to merge or distribute (most nodes of a lowered tree
/// are only read).
fn factor_in_place(p: &mut Pred, budget: &mut usize, changed: &mut bool) {
    match p {
        Pred::Not(q) => {
            factor_in_place(q, budget, changed);
            if let Pred::Not(r) = &mut **q {
                *changed = true;
                *p = std::mem::replace(&mut **r, Pred::True);
            }
        }
        Pred::And(v) => {
            v.iter_mut().for_each(|q| factor_in_place(q, budget, changed));
            if needs_rejoin(v, true) {
                *p = distribute(std::mem::take(v), budget, changed);
            } else if let Some(i) = first_distributable(v) {
                // (What `distribute` does once `rejoin` gave the `and` back.)
                *p = distribute_at(std::mem::take(v), i, None, budget, changed);
            }
        }
        Pred::Or(v) => {
            v.iter_mut().for_each(|q| factor_in_place(q, budget, changed));
            if needs_rejoin(v, false) {
                *p = merge_alternatives(std::mem::take(v), budget, changed);
            } else if let Err(work) = merge_check(v) {
                // (What `merge_alternatives` does once `rejoin` gave the `or`
                // back.)
                *changed = true;
                *p = merge_entries_knowing(std::mem::take(v), work, budget);
            }
        }
        _ => {}
    }
}

/// Whether [`distribute`] would give the `and` of the operands `v` back as
/// it is (no operand to flatten or drop, none to distribute over).
#[cfg(test)]
pub(crate) fn nothing_to_distribute(v: &[Pred]) -> bool {
    !needs_rejoin(v, true) && first_distributable(v).is_none()
}

/// The first operand of the `and` of the operands `v`, other than the
/// last, that distribution is over.
fn first_distributable(v: &[Pred]) -> Option<usize> {
    v[..v.len().saturating_sub(1)].iter().position(distributable)
}

/// Whether [`rejoin`] would not give the operands `v` of an `and`
/// (`is_and`) or `or` back as the same node.
fn needs_rejoin(v: &[Pred], is_and: bool) -> bool {
    v.len() < 2 || v.iter().any(|p| fold::needs_work(p, is_and))
}

/// [`fold::and_vec`] (`is_and`) or [`fold::or_vec`] of the operands of a
/// node, setting `changed` unless it gives the node back as it was.
fn rejoin(v: Vec<Pred>, is_and: bool, changed: &mut bool) -> Pred {
    if needs_rejoin(&v, is_and) {
        *changed = true;
    }
    if is_and {
        fold::and_vec(v)
    } else {
        fold::or_vec(v)
    }
}

/// Whether `p` can serve as a guard: a test, a negated test, or a set
/// membership test (`or` of equalities of one value with constants).
fn is_guard(p: &Pred) -> bool {
    match p {
        Pred::Test(_) => true,
        Pred::Not(q) => matches!(**q, Pred::Test(_)),
        Pred::Or(_) => eq_tests(p).is_some(),
        _ => false,
    }
}

/// The first conjunct of a predicate when it is a guard, and the remaining
/// conjuncts.
fn split_guard(p: Pred) -> Result<(Pred, Vec<Pred>), Pred> {
    match p {
        Pred::And(mut v) if v.first().is_some_and(is_guard) => {
            let g = v.remove(0);
            Ok((g, v))
        }
        p if is_guard(&p) => Ok((p, Vec::new())),
        p => Err(p),
    }
}

/// [`split_guard`] of a predicate known to have a guard ([`guard_of`]).
fn take_guard(p: Pred) -> (Pred, Vec<Pred>) {
    match p {
        Pred::And(mut v) if !v.is_empty() => {
            let g = v.remove(0);
            (g, v)
        }
        p => (p, Vec::new()),
    }
}

/// The guard of a predicate without taking it apart.
#[inline]
fn guard_of(p: &Pred) -> Option<&Pred> {
    match p {
        Pred::And(v) => v.first().filter(|g| is_guard(g)),
        p if is_guard(p) => Some(p),
        _ => None,
    }
}

/// `lhs == k1 or lhs == k2 or ...` (or a single `lhs == k`): the value
/// and the equality tests (one test, or the operands of the `or`); their
/// constants are [`constants`].
pub(crate) fn eq_tests(g: &Pred) -> Option<(&Value, &[Pred])> {
    match g {
        Pred::Test(Test { lhs, op: CmpOp::Eq, rhs: Value::Const(_) }) if !matches!(lhs, Value::Const(_)) => {
            Some((lhs, std::slice::from_ref(g)))
        }
        Pred::Or(v) if v.len() <= 64 => {
            let mut value = None;
            for t in v {
                let Pred::Test(Test { lhs, op: CmpOp::Eq, rhs: Value::Const(_) }) = t else { return None };
                if matches!(lhs, Value::Const(_)) || value.is_some_and(|x| x != lhs) {
                    return None;
                }
                value = Some(lhs);
            }
            value.map(|x| (x, v.as_slice()))
        }
        _ => None,
    }
}

/// The constants of tests from [`eq_tests`].
pub(crate) fn constants(ts: &[Pred]) -> impl Iterator<Item = u32> + '_ {
    ts.iter().filter_map(constant)
}

/// The constant of a test from [`eq_tests`].
fn constant(t: &Pred) -> Option<u32> {
    match t {
        Pred::Test(Test { rhs: Value::Const(k), .. }) => Some(*k),
        _ => None,
    }
}

/// Whether two guards given by their [`eq_tests`] are exclusive: at most
/// one holds, and they abort together (the same value tested against
/// disjoint sets of constants).
fn disjoint(g: Option<(&Value, &[Pred])>, h: Option<(&Value, &[Pred])>) -> bool {
    match (g, h) {
        (Some((a, j)), Some((b, k))) => a == b && !constants(j).any(|x| constants(k).any(|y| y == x)),
        _ => false,
    }
}

/// The [`eq_tests`] of a guard (if it has one).
type Tests<'a> = Option<(&'a Value, &'a [Pred])>;

/// The look-back of [`merge_entries`] and [`nothing_to_merge`] over the
/// guards placed so far: for each of the last [`MAX_MOVE`], whether it has
/// equality tests of the same value as the one before it. So walking back
/// over a long run of tests of one value (`port 1 or port 2 or ...`)
/// compares that value once, not once per guard passed.
#[derive(Default)]
struct LookBack {
    /// How many guards (or alternatives without one) were placed.
    len: usize,
    /// Bit `i`: guard `len - 1 - i` tests the same value as the one before.
    same: u64,
    /// Bit `i`: alternative `len - 1 - i` has a guard.
    guarded: u64,
}

impl LookBack {
    /// Walks back from the last guard placed (`guard_at` gives each one),
    /// at most [`MAX_MOVE`] of them, past guards exclusive with `g` (whose
    /// tests are `g_tests`): `Ok` with the position of the first one equal
    /// to `g` if the walk gets to one, or `Err` with whether `g` tests the
    /// same value as the last guard.
    fn find<'a>(
        &self,
        guard_at: impl Fn(usize) -> Option<&'a Pred>,
        g: &Pred,
        g_tests: Tests<'_>,
    ) -> Result<usize, bool> {
        let n = self.len;
        let mut same_as_last = false;
        for (i, j) in (n.saturating_sub(MAX_MOVE)..n).rev().enumerate() {
            let Some(h) = guard_at(j) else { break };
            let (Some((gv, gt)), Some((hv, ht))) = (g_tests, eq_tests(h)) else {
                // Not two sets of equalities: never exclusive.
                return if h == g { Ok(j) } else { Err(same_as_last) };
            };
            // Past the last guard, the walk only goes on over guards testing
            // the same value as `g`, so the value of guard `j + 1` is `g`'s.
            let same_value = if i == 0 {
                same_as_last = hv == gv;
                same_as_last
            } else {
                self.same >> (i - 1) & 1 == 1
            };
            if !same_value {
                // Neither equal nor exclusive.
                break;
            }
            // Two guards of equalities of one value are equal when they have
            // the same form (a test or an `or`) and the same constants.
            let same_form = matches!(h, Pred::Test(_)) == matches!(g, Pred::Test(_));
            if let ([a], [b]) = (gt, ht) {
                // One constant each (the common case).
                if constant(a) == constant(b) {
                    if same_form {
                        return Ok(j);
                    }
                    break;
                }
                continue;
            }
            if same_form && ht.len() == gt.len() && constants(ht).eq(constants(gt)) {
                return Ok(j);
            }
            if constants(gt).any(|x| constants(ht).any(|y| y == x)) {
                break;
            }
        }
        Err(same_as_last)
    }

    /// Records that a guard was placed after the last one, testing the
    /// same value (`same_as_last`, from [`LookBack::find`]) or not.
    fn push(&mut self, same_as_last: bool) {
        self.len += 1;
        self.same = self.same << 1 | u64::from(same_as_last);
        self.guarded = self.guarded << 1 | 1;
    }

    /// Records that an alternative without a guard was placed.
    fn push_unguarded(&mut self) {
        self.push(false);
        self.guarded &= !1;
    }

    /// The guard of `p`, the alternative placed `k`-th (one of the last
    /// [`MAX_MOVE`]), found when it was placed.
    fn guard_of_placed<'a>(&self, k: usize, p: &'a Pred) -> Option<&'a Pred> {
        let back = u32::try_from(self.len - 1 - k).unwrap_or(u32::MAX);
        if self.guarded.checked_shr(back).unwrap_or(0) & 1 == 0 {
            return None;
        }
        match p {
            Pred::And(v) => v.first(),
            g => Some(g),
        }
    }
}

/// Merges the alternatives of an `or` (see the module documentation),
/// setting `changed` unless the `or` stays as it was.
fn merge_alternatives(alts: Vec<Pred>, budget: &mut usize, changed: &mut bool) -> Pred {
    let alts = match rejoin(alts, false, changed) {
        Pred::Or(v) => v,
        p => return p,
    };
    match merge_check(&alts) {
        Ok(()) => rejoin(alts, false, changed),
        Err(work) => {
            *changed = true;
            merge_entries_knowing(alts, work, budget)
        }
    }
}

/// [`merge_alternatives`] of the alternatives of a flattened `or`, taking
/// each one apart.
#[cfg(test)]
pub(crate) fn merge_entries(alts: Vec<Pred>, budget: &mut usize) -> Pred {
    merge_entries_knowing(alts, Work::default(), budget)
}

/// What [`merge_check`] found out about an `or` with something to merge.
#[derive(Default)]
pub(crate) struct Work {
    /// The alternatives before this one stay where they are, whole: none
    /// joins an earlier guard, each is given back as it is.
    done: usize,
    /// The look-back over those alternatives.
    look: LookBack,
    /// Alternatives `pair` and `pair + 1` have the same rest (they start a
    /// run of [`merge_same_rests`]).
    pair: Option<usize>,
}

impl Work {
    /// The pair with the same rest, if one was found.
    #[cfg(test)]
    pub(crate) fn pair(&self) -> Option<usize> {
        self.pair
    }
}

/// [`merge_entries`], knowing what [`merge_check`] found out (`work`).
pub(crate) fn merge_entries_knowing(mut alts: Vec<Pred>, work: Work, budget: &mut usize) -> Pred {
    let Work { done, mut look, mut pair } = work;
    // The alternatives stay whole where they are (`alts[..w]`, the ones
    // before `done` as `merge_check` left them); one that joins the guard
    // of the `k`-th is taken out, its rest noted with `k` in `joined`.
    let n = alts.len();
    let mut w = done;
    let mut joined: Vec<(usize, Vec<Pred>)> = Vec::new();
    for i in done..n {
        let found = guard_of(&alts[i]).map(|g| look.find(|k| look.guard_of_placed(k, &alts[k]), g, eq_tests(g)));
        match found {
            Some(Ok(k)) => {
                if pair.is_some_and(|p| k <= p + 1) {
                    // The pair's entries are no longer the alternatives.
                    pair = None;
                }
                // The alternative moved before exclusive ones: fine.
                joined.push((k, take_guard(std::mem::replace(&mut alts[i], Pred::True)).1));
                continue;
            }
            Some(Err(same_as_last)) => look.push(same_as_last),
            None => look.push_unguarded(),
        }
        // (`alts[w..i]` holds what is left of alternatives taken out.)
        alts.swap(w, i);
        w += 1;
    }
    alts.truncate(w);
    // Each alternative joined by others becomes its guard and the `or` of
    // the rests (its own first, then theirs in order).
    if !joined.is_sorted_by_key(|j| j.0) {
        // (Stable: a guard's rests stay in order.)
        joined.sort_by_key(|j| j.0);
    }
    // `joined[at..]`: the rests of the alternatives not rebuilt yet.
    let mut at = 0;
    for (k, alt) in alts.iter_mut().enumerate() {
        let end = at + joined[at..].iter().take_while(|j| j.0 == k).count();
        let rebuilt = if end > at {
            let (g, rest) = take_guard(std::mem::replace(alt, Pred::True));
            let mut inner = Vec::with_capacity(1 + end - at);
            inner.push(fold::and_vec(rest));
            inner.extend(joined[at..end].iter_mut().map(|j| fold::and_vec(std::mem::take(&mut j.1))));
            at = end;
            let inner = merge_alternatives(inner, budget, &mut true);
            fold::and([g, inner])
        } else if is_whole(alt) {
            continue;
        } else {
            match split_guard(std::mem::replace(alt, Pred::True)) {
                Ok((g, rest)) => and_with_guard(g, rest),
                Err(p) => p,
            }
        };
        *alt = rebuilt;
    }
    fold::or_vec(merge_same_rests(alts, pair))
}

/// Whether [`merge_alternatives`] would give the alternatives `alts` of a
/// flattened `or` back as they are (checked without taking them apart, the
/// common case): no alternative would join an earlier one with the same
/// guard, none would join the one before it in [`merge_same_rests`], and
/// putting each one back together after splitting off its guard gives it
/// back (an `and` of at least two operands, none of which [`fold::and_vec`]
/// would flatten or drop).
#[cfg(test)]
pub(crate) fn nothing_to_merge(alts: &[Pred]) -> bool {
    merge_check(alts).is_ok()
}

/// [`nothing_to_merge`] as `Ok`; when there is something to merge, what it
/// found out on the way ([`Work`]: how far every alternative stays where it
/// is and is given back as it is by [`merge_entries`], and whether two of
/// them start a run of [`merge_same_rests`]).
pub(crate) fn merge_check(alts: &[Pred]) -> Result<(), Work> {
    // The guard and rest of the alternative before, if it could start a
    // run of `merge_same_rests`.
    let mut run: Option<(Tests<'_>, &[Pred])> = None;
    let mut look = LookBack::default();
    let mut it = alts.iter();
    while let Some(alt) = it.next() {
        let (g, rest): (&Pred, &[Pred]) = match alt {
            Pred::And(v) if v.first().is_some_and(is_guard) => {
                if v.len() < 2 || v.iter().any(|p| fold::needs_work(p, true)) {
                    return Err(Work { done: alts.len() - it.len() - 1, look, pair: None });
                }
                (&v[0], &v[1..])
            }
            p if is_guard(p) => (p, &[]),
            _ => {
                run = None;
                look.push_unguarded();
                continue;
            }
        };
        // The walk of `merge_alternatives` looking for a guard to join.
        let g_tests = eq_tests(g);
        match look.find(|k| guard_of(&alts[k]), g, g_tests) {
            Ok(_) => return Err(Work { done: alts.len() - it.len() - 1, look, pair: None }),
            Err(same_as_last) => look.push(same_as_last),
        }
        if g_tests.is_some() && !rest.is_empty() {
            if run.is_some_and(|(h, r)| disjoint(h, g_tests) && r == rest) {
                // (This alternative and the one before it.)
                let done = alts.len() - it.len();
                return Err(Work { done, look, pair: Some(done - 2) });
            }
            run = Some((g_tests, rest));
        } else {
            run = None;
        }
    }
    Ok(())
}

/// `and(g, rest...)`, reusing `rest`'s vector (split off an `and`, it has
/// room for the guard again).
fn and_with_guard(g: Pred, mut rest: Vec<Pred>) -> Pred {
    if rest.is_empty() {
        // A guard is a test, a negated test or an `or`: nothing to flatten.
        return g;
    }
    rest.insert(0, g);
    fold::and_vec(rest)
}

/// `or(and(g1, r), and(g2, r))` ≡ `and(or(g1, g2), r)` when `g1`, `g2` are
/// exclusive: once `g1` holds, `g2` fails without aborting, so the second
/// `r` is never evaluated on the left either.
///
/// `pair` (from [`merge_check`]): alternatives `pair` and `pair + 1` are
/// known to have the same rest.
fn merge_same_rests(mut alts: Vec<Pred>, pair: Option<usize>) -> Vec<Pred> {
    let n = alts.len();
    // The runs are found on the alternatives as they stand (a run is
    // looked for from `alts[i]` before anything from there on is touched);
    // only those in a run of two or more are taken apart. The result is
    // written over the alternatives already read (`w <= i`).
    let (mut i, mut w) = (0, 0);
    while i < n {
        let j = run_end(&alts, i, pair);
        let merged = if j == i + 1 {
            if is_whole(&alts[i]) {
                alts.swap(w, i);
                w += 1;
                i = j;
                continue;
            }
            match split_guard(std::mem::replace(&mut alts[i], Pred::True)) {
                Ok((g, rest)) => and_with_guard(g, rest),
                Err(p) => p,
            }
        } else {
            // The first alternative's rest is kept, the others' are the same.
            let mut guards = Vec::with_capacity(j - i);
            let mut kept = Vec::new();
            for (k, alt) in alts[i..j].iter_mut().enumerate() {
                if let Ok((g, rest)) = split_guard(std::mem::replace(alt, Pred::True)) {
                    guards.push(g);
                    if k == 0 {
                        kept = rest;
                    }
                }
            }
            and_with_guard(fold::or_vec(guards), kept)
        };
        alts[w] = merged;
        w += 1;
        i = j;
    }
    alts.truncate(w);
    alts
}

/// The guard of an alternative and the rest of its conjuncts, as
/// [`split_guard`] would take them apart.
fn guard_and_rest(p: &Pred) -> Option<(&Pred, &[Pred])> {
    match p {
        Pred::And(v) if v.first().is_some_and(is_guard) => Some((&v[0], &v[1..])),
        p if is_guard(p) => Some((p, &[])),
        _ => None,
    }
}

/// Whether taking the alternative `p` apart with [`split_guard`] and
/// putting it back together with [`and_with_guard`] gives `p` back.
fn is_whole(p: &Pred) -> bool {
    match p {
        Pred::And(v) if v.first().is_some_and(is_guard) => {
            v.len() >= 2 && !v.iter().any(|q| fold::needs_work(q, true))
        }
        _ => true,
    }
}

/// The end of the run of [`merge_same_rests`] that starts at `alts[i]`:
/// the alternatives after it with the same (non-empty) rest whose guards
/// are sets of equalities exclusive with all the guards before them in the
/// run. (`pair` as in [`merge_same_rests`].)
fn run_end(alts: &[Pred], i: usize, pair: Option<usize>) -> usize {
    let run_key = |p| match guard_and_rest(p) {
        Some((g, rest)) if !rest.is_empty() => eq_tests(g).map(|t| (t, rest)),
        _ => None,
    };
    let Some((_, rest)) = run_key(&alts[i]) else { return i + 1 };
    let mut j = i + 1;
    while let Some((t, r)) = alts.get(j).and_then(run_key) {
        let joins = (pair == Some(i) && j == i + 1 || r == rest)
            && alts[i..j].iter().all(|h| guard_and_rest(h).is_some_and(|(h, _)| disjoint(eq_tests(h), Some(t))));
        if !joins {
            break;
        }
        j += 1;
    }
    j
}

/// Whether the alternatives of an `or` start with pairwise exclusive tests.
fn exclusive_alternatives(alts: &[Pred]) -> bool {
    let mut value: Option<&Value> = None;
    // The constants of the alternatives before.
    let mut seen = SeenConstants::default();
    for a in alts {
        let Some((v, ts)) = guard_of(a).and_then(eq_tests) else { return false };
        if value.is_some_and(|x| x != v) || constants(ts).any(|k| seen.contains(k)) {
            return false;
        }
        value = Some(v);
        constants(ts).for_each(|k| seen.push(k));
    }
    alts.len() >= 2
}

/// A set of constants kept in a small array, and in a vector only past
/// its room (most `or`s have a few alternatives: no allocation).
#[derive(Default)]
struct SeenConstants {
    first: [u32; 16],
    len: usize,
    more: Vec<u32>,
}

impl SeenConstants {
    fn contains(&self, k: u32) -> bool {
        self.first[..self.len.min(self.first.len())].contains(&k) || self.more.contains(&k)
    }

    fn push(&mut self, k: u32) {
        match self.first.get_mut(self.len) {
            Some(slot) => *slot = k,
            None => self.more.push(k),
        }
        self.len += 1;
    }
}

/// Distributes an `and` over the first `or` operand it can, setting
/// `changed` unless the `and` stays as it was.
pub(crate) fn distribute(v: Vec<Pred>, budget: &mut usize, changed: &mut bool) -> Pred {
    match rejoin(v, true, changed) {
        Pred::And(v) => distribute_joined(v, None, budget, changed),
        p => p,
    }
}

/// [`distribute`] of the operands of an `and` already joined by
/// [`fold::and_vec`]; `tail`, when known, is the number of operands at the
/// end of `v` and their total [`size`] (the rest moved into the last
/// alternative of an outer distribution, whose size was computed there).
fn distribute_joined(
    v: Vec<Pred>,
    tail: Option<(usize, usize)>,
    budget: &mut usize,
    changed: &mut bool,
) -> Pred {
    match first_distributable(&v) {
        Some(i) => distribute_at(v, i, tail, budget, changed),
        None => Pred::And(v),
    }
}

/// [`distribute_joined`] over the operand `v[i]`, its
/// [`first_distributable`].
fn distribute_at(
    mut v: Vec<Pred>,
    i: usize,
    tail: Option<(usize, usize)>,
    budget: &mut usize,
    changed: &mut bool,
) -> Pred {
    // Alternatives an earlier operand rules out are not copied into.
    let (before, from) = v.split_at_mut(i);
    if let Pred::Or(alts) = &mut from[0] {
        if prune_decided(before, alts) {
            *changed = true;
            if alts.len() < 2 {
                // One alternative left joins the `and`; none: the `or` fails.
                v[i] = alts.pop().unwrap_or(Pred::False);
                return match fold::and_vec(v) {
                    Pred::And(v) => distribute_joined(v, None, budget, changed),
                    p => p,
                };
            }
        }
    }
    let rest: Vec<Pred> = v.split_off(i + 1);
    let copies = match &v[i] {
        Pred::Or(alts) => alts.len() - 1,
        _ => 0,
    };
    let rest_size = match tail {
        Some((len, n)) if len == rest.len() => n,
        _ => rest.iter().map(size).sum::<usize>(),
    };
    let cost = rest_size * copies;
    if cost > *budget {
        v.extend(rest);
        return Pred::And(v);
    }
    let alts = match v.pop() {
        Some(Pred::Or(alts)) => alts,
        other => {
            v.extend(other);
            v.extend(rest);
            *changed = true;
            return Pred::And(v);
        }
    };
    *budget -= cost;
    *changed = true;
    let n = alts.len();
    let mut new_alts = Vec::with_capacity(n);
    let mut rest = Some(rest);
    for (j, a) in alts.into_iter().enumerate() {
        let (r, tail) = match &rest {
            Some(r) if j + 1 < n => (copy_pruned(&v, &a, r), None),
            _ => {
                let r = rest.take().unwrap_or_default();
                // The moved rest ends the joined `and` as it is when `a` is
                // not a constant and no operand of `r` needs work.
                let intact = !matches!(a, Pred::True | Pred::False) && !r.iter().any(|p| fold::needs_work(p, true));
                let tail = intact.then_some((r.len(), rest_size));
                (r, tail)
            }
        };
        new_alts.push(match fold::and(std::iter::once(a).chain(r)) {
            Pred::And(v) => distribute_joined(v, tail, budget, changed),
            p => p,
        });
    }
    v.push(Pred::Or(new_alts));
    fold::and_vec(v)
}

/// Whether an `and` distributes over `p`: an `or` whose alternatives start
/// with exclusive tests and are not all bare tests (those gain nothing, and
/// distributing over them would undo [`merge_same_rests`]).
fn distributable(p: &Pred) -> bool {
    match p {
        Pred::Or(alts) => alts.iter().any(|a| matches!(a, Pred::And(_))) && exclusive_alternatives(alts),
        _ => false,
    }
}

/// Whether one of the operands `before` an `or` in an `and` rules out the
/// `or`'s alternative `a`: see [`prune_decided`].
fn ruled_out<'a>(a: &Pred, before: impl IntoIterator<Item = &'a Pred>) -> bool {
    let Some((av, at)) = guard_of(a).and_then(eq_tests) else { return false };
    before
        .into_iter()
        .filter_map(eq_tests)
        .any(|(bv, bt)| bv == av && !constants(at).any(|x| constants(bt).any(|y| y == x)))
}

/// The copy of `rest` that distribution joins to the alternative `a` of
/// the `or` that followed the operands `before`: the alternatives of the
/// `or`s in `rest` that distribution would drop once it reaches them
/// ([`prune_decided`]) are not copied in the first place.
fn copy_pruned(before: &[Pred], a: &Pred, rest: &[Pred]) -> Vec<Pred> {
    let a_ops = match a {
        Pred::And(w) => w.as_slice(),
        a => std::slice::from_ref(a),
    };
    let mut out = Vec::with_capacity(rest.len());
    for (j, p) in rest.iter().enumerate() {
        // What rules alternatives out: the operands before `p` ([`ruled_out`]
        // looks only at the sets of equalities among them; an `or` pruned
        // here is not one).
        let known = || before.iter().chain(a_ops).chain(&rest[..j]);
        match p {
            Pred::Or(alts) if distributable(p) && alts.iter().any(|x| ruled_out(x, known())) => {
                let mut kept: Vec<Pred> = alts.iter().filter(|x| !ruled_out(x, known())).cloned().collect();
                match kept.len() {
                    0 => {
                        // The `or` fails: nothing after it is evaluated.
                        out.push(Pred::False);
                        break;
                    }
                    1 => out.extend(kept.pop()),
                    _ => out.push(Pred::Or(kept)),
                }
            }
            p => out.push(p.clone()),
        }
    }
    out
}

/// Drops the alternatives whose guard an earlier operand of the `and`
/// (one of `before`) decides false: a test of the same value for equality
/// with other constants. That operand computed the value without aborting,
/// so such an alternative fails without aborting: the `or` is the same
/// without it. Says whether it dropped any.
fn prune_decided(before: &[Pred], alts: &mut Vec<Pred>) -> bool {
    let n = alts.len();
    alts.retain(|a| !ruled_out(a, before));
    alts.len() < n
}
