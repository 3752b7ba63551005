//! Translation of sift's predicate IR into passes of instructions.
//!
//! The translation is exact (same verdicts on every packet, truncated ones
//! included):
//! - `not` is pushed down to the tests (De Morgan keeps the evaluation order
//!   and the short-circuits, hence the loads);
//! - an `or` of passes stays an `or` of passes;
//! - in an `and`, every conjunct but the last must be one instruction (a
//!   test, a fused "power" test, an `or` of single tests, or an `or` of
//!   conjunctions of tests, one "alternatives" instruction); the last may
//!   be several passes and is distributed: `and(x, or(a, b))` becomes
//!   `or(and(x, a), and(x, b))`. Re-running `x` in the second pass repeats
//!   loads that already succeeded, so nothing changes; the copied marks then
//!   skip it. An `or` followed by more conjuncts is refused: its later
//!   branches would run again where the static program does not run them,
//!   and could abort.

use std::sync::Arc;

use crate::model::{Addr, Atom, Cmp, Field, Instr, Size, Source, ValueSet};
use sift_ir::{BinOp, CmpOp, Pred, Test, Value};

/// The most passes a translation may produce.
pub const MAX_PASSES: usize = 4096;

/// A predicate after `not` was pushed to the leaves and tests became
/// instructions.
#[derive(Clone, Debug)]
enum Node {
    Instr(Instr),
    And(Vec<Node>),
    Or(Vec<Node>),
}

/// Translates a predicate into passes (an OR of ANDs of instructions).
/// Instructions shared by consecutive passes are the same `Arc`.
pub(crate) fn translate(pred: &Pred) -> Result<Vec<Vec<Arc<Instr>>>, String> {
    let node = fuse(nnf(pred, false)?);
    let passes = passes(&node)?;
    // Merging again until nothing changes: `port (21 or 22)` first merges
    // each port's protocol passes (sctp, tcp, udp) into protocol sets, and
    // only then do the ports' passes differ in one set.
    let mut passes = merge_passes(passes);
    loop {
        let n = passes.len();
        passes = merge_passes(passes);
        if passes.len() == n {
            break;
        }
    }
    let passes: Vec<Vec<Arc<Instr>>> = passes.into_iter().map(simplify).collect();
    Ok(factor(drop_dead(passes)))
}

/// What `a` certainly gives (in bounds, no abort) when `h` held earlier in
/// the pass: `Some(true)`, `Some(false)`, or `None` when unknown. Both test
/// the same field, so `a`'s loads succeeded already.
fn implied(a: &Atom, h: &Atom) -> Option<bool> {
    if a.field != h.field {
        return None;
    }
    if a.cmp == h.cmp {
        return Some(a.negate == h.negate);
    }
    let (Cmp::In(sa), Cmp::In(sh)) = (&a.cmp, &h.cmp) else { return None };
    let test = if !h.negate {
        // The value is in `sh`.
        if sh.sorted().iter().all(|v| sa.contains(*v)) {
            true
        } else if sh.sorted().iter().all(|v| !sa.contains(*v)) {
            false
        } else {
            return None;
        }
    } else if sa.sorted().iter().all(|v| sh.contains(*v)) {
        // The value is not in `sh`, a superset of `sa`.
        false
    } else {
        return None;
    };
    Some(test != a.negate)
}

/// Is `a` certainly false (and in bounds) given that `h` held earlier?
/// (`ether proto ip6` after `ether proto ip`.)
fn refuted_by(a: &Atom, h: &Atom) -> bool {
    implied(a, h) == Some(false)
}

/// Is `a` certainly true (and in bounds) given that `h` held earlier?
/// (`not ether proto arp` after `ether proto ip`.)
fn confirmed_by(a: &Atom, h: &Atom) -> bool {
    implied(a, h) == Some(true)
}

/// The instruction that never holds and loads nothing (what remains of a
/// pass after a test refuted by an earlier one).
fn never() -> Arc<Instr> {
    Arc::new(Instr::Any(Vec::new()))
}

fn is_never(i: &Instr) -> bool {
    matches!(i, Instr::Any(v) if v.is_empty())
}

/// Drops passes that can neither accept nor abort where their neighbours
/// would not: a pass ending in [`never`] whose instructions before it are
/// the first instructions of the pass before it (which failed: if it failed
/// inside that prefix, this pass fails at the same place, else it reaches
/// `never`) or of the pass after it (which repeats the same loads first).
fn drop_dead(mut passes: Vec<Vec<Arc<Instr>>>) -> Vec<Vec<Arc<Instr>>> {
    // The leading tests of a pass, as one conjunction.
    let leading = |p: &[Arc<Instr>]| -> Vec<Atom> {
        let mut v = Vec::new();
        for i in p {
            match &**i {
                Instr::Test(a) => v.push(a.clone()),
                Instr::All(w) => v.extend(w.iter().cloned()),
                _ => break,
            }
        }
        v
    };
    let starts_with = |p: &[Arc<Instr>], prefix: &[Arc<Instr>]| {
        if p.len() >= prefix.len() && p.iter().zip(prefix).all(|(x, y)| same(x, y)) {
            return true;
        }
        // Both conjunctions of tests, the prefix's tests first in `p`: the
        // same tests in the same order, however grouped into instructions.
        let (lp, lq) = (leading(p), leading(prefix));
        let plain = prefix.iter().all(|i| matches!(&**i, Instr::Test(_) | Instr::All(_)));
        plain && lp.len() >= lq.len() && lp[..lq.len()] == lq[..]
    };
    let mut i = 0;
    while i < passes.len() {
        let dead = passes[i].last().is_some_and(|x| is_never(x)) && {
            let prefix = &passes[i][..passes[i].len() - 1];
            (i > 0 && starts_with(&passes[i - 1], prefix))
                || passes.get(i + 1).is_some_and(|n| starts_with(n, prefix))
                || passes.len() == 1
        };
        if dead {
            passes.remove(i);
            i = i.saturating_sub(1);
        } else {
            i += 1;
        }
    }
    passes
}

/// The atoms of an instruction that is an `or` of single tests.
fn or_atoms(i: &Instr) -> Option<Vec<Atom>> {
    match i {
        Instr::Test(a) => Some(vec![a.clone()]),
        Instr::Any(v) if !v.is_empty() => Some(v.clone()),
        Instr::Either { fields, cmp, negate: false, first: None } => {
            Some(fields.iter().map(|f| Atom::new(*f, cmp.clone())).collect())
        }
        _ => None,
    }
}

/// Joins consecutive passes `[p.., x]`, `[p.., y]` (the same prefix) whose
/// last instructions are `or`s of tests into one pass `[p.., x or y]`: the
/// second pass ran `p` again (same loads, same results) before `y` only
/// when `x` failed without aborting, exactly as `x or y` does.
fn factor(passes: Vec<Vec<Arc<Instr>>>) -> Vec<Vec<Arc<Instr>>> {
    let mut out: Vec<Vec<Arc<Instr>>> = Vec::with_capacity(passes.len());
    for p in passes {
        if let Some(q) = out.last_mut() {
            let n = p.len();
            if n > 0
                && q.len() == n
                && q[..n - 1].iter().zip(&p[..n - 1]).all(|(x, y)| same(x, y))
            {
                if let (Some(mut a), Some(b)) = (or_atoms(&q[n - 1]), or_atoms(&p[n - 1])) {
                    a.extend(b);
                    q[n - 1] = Arc::new(or_of_atoms(a));
                    continue;
                }
            }
        }
        out.push(p);
    }
    out
}

/// `not (f in S)` as (field, set).
fn negated_eq(i: &Instr) -> Option<(Field, &ValueSet)> {
    match i {
        Instr::Test(Atom { field, cmp: Cmp::In(s), negate: true }) => Some((*field, s)),
        _ => None,
    }
}

fn union<'a>(sets: impl Iterator<Item = &'a ValueSet>) -> ValueSet {
    let mut u = ValueSet::from_values([]);
    for s in sets {
        for v in s.sorted() {
            u.insert(v);
        }
    }
    u
}

fn not_in(field: Field, set: ValueSet) -> Arc<Instr> {
    Arc::new(Instr::Test(Atom { field, cmp: Cmp::In(set), negate: true }))
}

/// Simplifies one pass without changing any outcome:
/// - in an `any`, an atom refuted by a test that held earlier in the pass
///   (`not ip` after `ip`) is false without aborting: dropped; an `any`
///   whose first remaining atom is confirmed (`not arp` after `ip`) holds
///   without aborting: dropped;
/// - a run of `not f = v` tests over two fields `f`, `g` (as `not host a
///   and not host b` gives: src, dst, src, dst...) becomes `not f in A`,
///   `not g in G`, `not f in F`, where `A` are the `f` values before the
///   first `g` test: the same loads in the same order (`f`, then `g` only
///   when `f` is not in `A`), the same verdict.
fn simplify(pass: Vec<Arc<Instr>>) -> Vec<Arc<Instr>> {
    // A test right before a power instruction that starts with the same
    // test: the power instruction repeats it first (same load, same result).
    let pass: Vec<Arc<Instr>> = pass
        .iter()
        .enumerate()
        .filter(|(i, ins)| {
            let Instr::Test(a) = &***ins else { return true };
            !matches!(pass.get(i + 1).map(|x| &**x), Some(Instr::All(v)) if v.first() == Some(a))
        })
        .map(|(_, x)| x.clone())
        .collect();
    let mut held: Vec<Atom> = Vec::new();
    let mut out: Vec<Arc<Instr>> = Vec::with_capacity(pass.len());
    let refuted = |a: &Atom, held: &[Atom]| held.iter().any(|h| refuted_by(a, h));
    let confirmed = |a: &Atom, held: &[Atom]| held.iter().any(|h| confirmed_by(a, h));
    for ins in pass {
        let new = match &*ins {
            Instr::Test(a) if confirmed(a, &held) => continue,
            Instr::Test(a) if refuted(a, &held) => never(),
            Instr::All(v) if v.iter().all(|a| confirmed(a, &held)) => continue,
            Instr::Any(atoms) => {
                let kept: Vec<Atom> = atoms.iter().filter(|a| !refuted(a, &held)).cloned().collect();
                // First remaining atom certainly true: the whole `any` holds.
                if kept.first().is_some_and(|a| confirmed(a, &held)) {
                    continue;
                }
                match kept.len() {
                    n if n == atoms.len() => ins.clone(),
                    1 => Arc::new(Instr::Test(kept.into_iter().next().unwrap_or_else(|| atoms[0].clone()))),
                    _ => Arc::new(Instr::Any(kept)),
                }
            }
            Instr::Alternatives(alts) => {
                // An alternative whose first test is refuted fails without
                // loading anything else: dropped.
                let kept: Vec<Vec<Atom>> = alts
                    .iter()
                    .filter(|c| !c.first().is_some_and(|a| refuted(a, &held)))
                    .cloned()
                    .collect();
                if kept.first().is_some_and(|c| c.iter().all(|a| confirmed(a, &held))) {
                    continue;
                }
                match kept.len() {
                    n if n == alts.len() => ins.clone(),
                    0 => never(),
                    1 => match &kept[0][..] {
                        [a] => Arc::new(Instr::Test(a.clone())),
                        _ => Arc::new(Instr::All(kept[0].clone())),
                    },
                    _ => Arc::new(Instr::Alternatives(kept)),
                }
            }
            _ => ins.clone(),
        };
        match &*new {
            Instr::Test(a) => held.push(a.clone()),
            Instr::All(v) => held.extend(v.iter().cloned()),
            _ => {}
        }
        let stop = is_never(&new);
        out.push(new);
        if stop {
            // Nothing after a test that never holds runs.
            break;
        }
    }
    let out = merge_alternatives(out);
    fuse_prefix(merge_negated_runs(out))
}

/// After the rewrites above, two more without any change of loads:
/// `not a fragment` right after an IPv4 + protocol power instruction joins
/// it (the same tests in the same order), and a test right before a power
/// instruction that starts with the same test is dropped (the power
/// instruction repeats it first: same load, same result).
fn fuse_prefix(pass: Vec<Arc<Instr>>) -> Vec<Arc<Instr>> {
    let mut out: Vec<Arc<Instr>> = Vec::with_capacity(pass.len());
    for ins in pass {
        if let (Some(last), Instr::Test(c)) = (out.last_mut(), &*ins) {
            if let Instr::All(v) = &**last {
                let is_frag = c.negate
                    && c.cmp == Cmp::AnyBits(0x1fff)
                    && matches!(c.field.source, Source::Load { size: Size::Half, addr: Addr::Direct(_) })
                    && c.field.mask.is_none();
                if v.len() == 2 && is_ipv4_proto(v) && is_frag {
                    let mut w = v.clone();
                    w.push(c.clone());
                    *last = Arc::new(Instr::All(w));
                    continue;
                }
            }
        }
        out.push(ins);
    }
    let keep: Vec<bool> = (0..out.len())
        .map(|i| {
            let Instr::Test(a) = &*out[i] else { return true };
            !matches!(out.get(i + 1).map(|x| &**x), Some(Instr::All(v)) if v.first() == Some(a))
        })
        .collect();
    out.into_iter().zip(keep).filter(|(_, k)| *k).map(|(x, _)| x).collect()
}

/// `[ether type = 0x800, ip proto = p]`, as [`fuse`] builds it.
fn is_ipv4_proto(v: &[Atom]) -> bool {
    let [a, b] = v else { return false };
    !a.negate
        && a.field.mask.is_none()
        && matches!(a.field.source, Source::Load { size: Size::Half, addr: Addr::Direct(_) })
        && matches!(&a.cmp, Cmp::In(s) if *s == ValueSet::from_values([0x800]))
        && !b.negate
        && b.field.mask.is_none()
        && matches!(b.field.source, Source::Load { size: Size::Byte, addr: Addr::Direct(_) })
        && matches!(b.cmp, Cmp::In(_))
}

/// Consecutive alternatives instructions that differ only in their last
/// alternative, `g1 or .. or gk or c1` and `g1 or .. or gk or c2`, become
/// `g1 or .. or gk or (c1 and c2)`: when a guard `gi` holds in the first,
/// the second re-runs the same guards (same loads, same results) and holds
/// too; when none does, both run `c1` then `c2`. The joined conjunction's
/// negated equalities are then gathered into sets ([`merge_negated_runs`]),
/// so `not tcp port (80 or 25 or 143)` is one instruction.
fn merge_alternatives(pass: Vec<Arc<Instr>>) -> Vec<Arc<Instr>> {
    let mut out: Vec<Arc<Instr>> = Vec::with_capacity(pass.len());
    let mut joined = false;
    for ins in pass {
        if let Some(last) = out.last_mut() {
            if let (Instr::Alternatives(a), Instr::Alternatives(b)) = (&**last, &*ins) {
                let k = a.len();
                if k >= 2 && b.len() == k && a[..k - 1] == b[..k - 1] {
                    let mut alts = a.clone();
                    alts[k - 1].extend(b[k - 1].iter().cloned());
                    *last = Arc::new(Instr::Alternatives(alts));
                    joined = true;
                    continue;
                }
            }
        }
        out.push(ins);
    }
    if !joined {
        return out;
    }
    out.into_iter()
        .map(|ins| match &*ins {
            Instr::Alternatives(alts) => {
                let mut alts = alts.clone();
                if let Some(last) = alts.last_mut() {
                    let tests: Vec<Arc<Instr>> = last.iter().map(|a| Arc::new(Instr::Test(a.clone()))).collect();
                    *last = merge_negated_runs(tests)
                        .iter()
                        .filter_map(|i| match &**i {
                            Instr::Test(a) => Some(a.clone()),
                            _ => None,
                        })
                        .collect();
                }
                Arc::new(Instr::Alternatives(alts))
            }
            _ => ins,
        })
        .collect()
}

/// Runs of negated equalities over at most two fields become set tests
/// (see [`simplify`]).
fn merge_negated_runs(out: Vec<Arc<Instr>>) -> Vec<Arc<Instr>> {
    let mut res: Vec<Arc<Instr>> = Vec::with_capacity(out.len());
    let mut i = 0;
    while i < out.len() {
        let Some((f, _)) = negated_eq(&out[i]) else {
            res.push(out[i].clone());
            i += 1;
            continue;
        };
        let mut g: Option<Field> = None;
        let mut j = i;
        while let Some((x, _)) = out.get(j).and_then(|k| negated_eq(k)) {
            if x != f {
                match g {
                    None => g = Some(x),
                    Some(g) if g != x => break,
                    Some(_) => {}
                }
            }
            j += 1;
        }
        let run = &out[i..j];
        if run.len() < 2 {
            res.push(out[i].clone());
            i += 1;
            continue;
        }
        let sets = |pred: &dyn Fn(Field) -> bool, upto: usize| {
            union(run[..upto].iter().filter_map(|k| negated_eq(k)).filter(|(x, _)| pred(*x)).map(|(_, s)| s))
        };
        let first_g = run.iter().position(|k| negated_eq(k).is_some_and(|(x, _)| x != f)).unwrap_or(run.len());
        let a = sets(&|x| x == f, first_g);
        let all_f = sets(&|x| x == f, run.len());
        res.push(not_in(f, a.clone()));
        if let Some(g) = g {
            res.push(not_in(g, sets(&|x| x == g, run.len())));
            if all_f != a {
                res.push(not_in(f, all_f));
            }
        }
        i = j;
    }
    res
}

/// Above this many passes, translation does not try to merge them.
const MERGE_LIMIT: usize = 512;

/// The value set of an equality instruction (not negated), with its fields.
fn set_of(i: &Instr) -> Option<(&ValueSet, Vec<Field>)> {
    match i {
        Instr::Test(Atom { field, cmp: Cmp::In(s), negate: false }) => Some((s, vec![*field])),
        Instr::Either { fields, cmp: Cmp::In(s), negate: false, .. } => Some((s, fields.to_vec())),
        _ => None,
    }
}

/// The equality an instruction's truth implies, tested first: `(field, set)`.
fn key(i: &Instr) -> Option<(Field, &ValueSet)> {
    let a = match i {
        Instr::Test(a) => a,
        Instr::All(v) => v.first()?,
        _ => return None,
    };
    match a {
        Atom { field, cmp: Cmp::In(s), negate: false } => Some((*field, s)),
        _ => None,
    }
}

fn same(a: &Arc<Instr>, b: &Arc<Instr>) -> bool {
    Arc::ptr_eq(a, b) || **a == **b
}

/// `Some(None)` if identical, `Some(Some(d))` if the passes differ only in
/// the value set of instruction `d` (same fields), else `None`.
fn differ_in_one_set(a: &[Arc<Instr>], b: &[Arc<Instr>]) -> Option<Option<usize>> {
    if a.len() != b.len() {
        return None;
    }
    let mut diff = None;
    for (d, (x, y)) in a.iter().zip(b).enumerate() {
        if same(x, y) {
            continue;
        }
        let ((_, fx), (_, fy)) = (set_of(x)?, set_of(y)?);
        if diff.is_some() || fx != fy || std::mem::discriminant(&**x) != std::mem::discriminant(&**y) {
            return None;
        }
        diff = Some(d);
    }
    Some(diff)
}

/// Whenever pass `p` gets past its common prefix with `m`, `m` fails
/// without aborting: after a shared prefix, `m` and `p` each start with an
/// equality on the same field with disjoint sets.
fn exclusive(m: &[Arc<Instr>], p: &[Arc<Instr>]) -> bool {
    for (x, y) in m.iter().zip(p) {
        if same(x, y) {
            continue;
        }
        return match (key(x), key(y)) {
            (Some((fx, sx)), Some((fy, sy))) => fx == fy && sx.sorted().iter().all(|v| !sy.contains(*v)),
            _ => false,
        };
    }
    false
}

/// Merges later passes into earlier ones where verdicts cannot change:
/// a pass identical to an earlier one is dropped (it can only fail the
/// same way); a pass differing from an earlier one `i` only in the value
/// set of one instruction joins `i`'s set when every pass between them is
/// [`exclusive`] with it (so running its values earlier cannot preempt
/// an accept or an abort of a pass in between). `tcp port (22 or 80)` thus
/// becomes 2 passes (IPv6, IPv4) with port sets instead of 4.
fn merge_passes(passes: Vec<Vec<Arc<Instr>>>) -> Vec<Vec<Arc<Instr>>> {
    if passes.len() > MERGE_LIMIT {
        return passes;
    }
    let mut out: Vec<Vec<Arc<Instr>>> = Vec::with_capacity(passes.len());
    'next: for p in passes {
        for i in (0..out.len()).rev() {
            match differ_in_one_set(&out[i], &p) {
                Some(None) => continue 'next,
                Some(Some(d)) => {
                    if let (Some((sa, _)), Some((sb, _))) = (set_of(&out[i][d]), set_of(&p[d])) {
                        let mut merged = Instr::clone(&out[i][d]);
                        let union: Vec<u32> = sa.sorted().into_iter().chain(sb.sorted()).collect();
                        // "src or dst" keeps the first pass's values: only
                        // they may hold with the second field cut off (the
                        // first pass aborted before a later one ran).
                        if let Instr::Either { first: first @ None, .. } = &mut merged {
                            *first = Some(sa.clone());
                        }
                        if let Some(Cmp::In(s)) = merged.cmp_mut() {
                            *s = ValueSet::from_values(union);
                        }
                        out[i][d] = Arc::new(merged);
                        continue 'next;
                    }
                }
                None => {}
            }
            if !exclusive(&out[i], &p) {
                break;
            }
        }
        out.push(p);
    }
    out
}

fn nnf(p: &Pred, neg: bool) -> Result<Node, String> {
    Ok(match p {
        Pred::True if neg => Node::Or(Vec::new()),
        Pred::True => Node::And(Vec::new()),
        Pred::False if neg => Node::And(Vec::new()),
        Pred::False => Node::Or(Vec::new()),
        Pred::Not(q) => nnf(q, !neg)?,
        Pred::And(v) | Pred::Or(v) => {
            let and = matches!(p, Pred::And(_)) != neg;
            // Nested conjunctions (disjunctions) flatten: same order, same
            // short-circuits.
            let mut kids = Vec::with_capacity(v.len());
            for q in v {
                match nnf(q, neg)? {
                    Node::And(w) if and => kids.extend(w),
                    Node::Or(w) if !and => kids.extend(w),
                    k => kids.push(k),
                }
            }
            if and {
                Node::And(kids)
            } else {
                Node::Or(kids)
            }
        }
        Pred::Test(t) => {
            let mut a = atom(t)?;
            a.negate = neg;
            Node::Instr(Instr::Test(a))
        }
    })
}

fn constant(v: &Value) -> Option<u32> {
    match v {
        Value::Const(k) => Some(*k),
        _ => None,
    }
}

/// `4 * (u8[k] & 0xf)` → `k`.
fn ipv4_header_len(v: &Value) -> Option<u32> {
    if let Value::Bin(BinOp::Shl, a, two) = v {
        if constant(two) == Some(2) {
            if let Value::Bin(BinOp::And, b, m) = &**a {
                if constant(m) == Some(0xf) {
                    if let Value::Load { size: Size::Byte, index, offset } = &**b {
                        return match index.as_deref() {
                            None => Some(*offset),
                            Some(i) => constant(i)?.checked_add(*offset),
                        };
                    }
                }
            }
        }
    }
    None
}

/// The second header's length in an L2-indirect index:
/// `((u8[at] & mask) >> shr) << shl`, the byte at a constant offset,
/// possibly past the IPv4 header.
#[derive(Clone, Copy, Debug, PartialEq)]
struct LenTerm {
    ihl_at: Option<u32>,
    at: u32,
    mask: u32,
    shr: u32,
    shl: u32,
}

/// An index as a sum: constants, at most one IPv4 header length, at most
/// one [`LenTerm`].
#[derive(Default)]
struct Terms {
    konst: u64,
    ihl_at: Option<u32>,
    len: Option<LenTerm>,
}

/// Below this, constants in an index cannot make the sum wrap (the header
/// lengths add at most 60 + 255 << 8).
const NO_WRAP: u64 = 1 << 31;

fn add_terms(v: &Value, t: &mut Terms, allow_len: bool) -> Option<()> {
    match v {
        Value::Const(k) => t.konst += u64::from(*k),
        Value::Bin(BinOp::Add, a, b) => {
            add_terms(a, t, allow_len)?;
            add_terms(b, t, allow_len)?;
        }
        _ => {
            if let Some(at) = ipv4_header_len(v) {
                if t.ihl_at.is_some() {
                    return None;
                }
                t.ihl_at = Some(at);
            } else if allow_len && t.len.is_none() {
                t.len = Some(len_term(v)?);
            } else {
                return None;
            }
        }
    }
    (t.konst < NO_WRAP).then_some(())
}

/// `((u8[..] & mask) >> shr) << shl`, every part optional.
fn len_term(v: &Value) -> Option<LenTerm> {
    let (v, shl) = match v {
        Value::Bin(BinOp::Shl, a, k) => (&**a, constant(k)?),
        _ => (v, 0),
    };
    let (v, shr) = match v {
        Value::Bin(BinOp::Shr, a, k) => (&**a, constant(k)?),
        _ => (v, 0),
    };
    let (v, mask) = match v {
        Value::Bin(BinOp::And, a, k) => match (constant(k), constant(a)) {
            (Some(m), _) => (&**a, m),
            (None, Some(m)) => (&**k, m),
            _ => return None,
        },
        _ => (v, 0xff),
    };
    let Value::Load { size: Size::Byte, index, offset } = v else { return None };
    let mut t = Terms::default();
    if let Some(i) = index {
        add_terms(i, &mut t, false)?;
    }
    let at = u32::try_from(t.konst + u64::from(*offset)).ok()?;
    (shl <= 8 && shr < 32).then_some(LenTerm { ihl_at: t.ihl_at, at, mask, shr, shl })
}

/// The address of a load at `index + offset` where `index` is computed:
/// past the IPv4 header (L1-indirect) or past two headers (L2-indirect),
/// when no sum can wrap.
fn indirect(i: &Value, offset: u32) -> Option<Addr> {
    if let Some(ihl_at) = ipv4_header_len(i) {
        return Some(Addr::Ipv4Payload { ihl_at, offset });
    }
    let mut t = Terms::default();
    add_terms(i, &mut t, true)?;
    let total = t.konst + u64::from(offset);
    if total >= NO_WRAP {
        return None;
    }
    let total = u32::try_from(total).ok()?;
    match (t.ihl_at, t.len) {
        (None, None) => Some(Addr::Direct(total)),
        (Some(ihl_at), None) => Some(Addr::Ipv4Payload { ihl_at, offset: total }),
        (ihl_at, Some(l)) if l.ihl_at == ihl_at => Some(Addr::Layered {
            ihl_at,
            len_at: l.at,
            len_mask: l.mask,
            len_shr: l.shr,
            len_shl: l.shl,
            offset: total,
        }),
        _ => None,
    }
}

fn field(v: &Value) -> Option<Field> {
    match v {
        Value::Len => Some(Field { source: Source::Len, mask: None }),
        Value::Load { size, index, offset } => {
            let addr = match index.as_deref() {
                None => Addr::Direct(*offset),
                Some(i) => match constant(i) {
                    Some(k) => Addr::Direct(k.checked_add(*offset)?),
                    None => indirect(i, *offset)?,
                },
            };
            Some(Field { source: Source::Load { size: *size, addr }, mask: None })
        }
        Value::Bin(BinOp::And, a, b) => {
            let (f, m) = match (field(a), constant(b), constant(a), field(b)) {
                (Some(f), Some(m), _, _) => (f, m),
                (_, _, Some(m), Some(f)) => (f, m),
                _ => return None,
            };
            match f.mask {
                None => Some(f.masked(m)),
                Some(m0) => Some(f.masked(m0 & m)),
            }
        }
        _ => None,
    }
}

fn atom(t: &Test) -> Result<Atom, String> {
    let unfit = || format!("`{t}` does not fit the instruction set (arithmetic or a computed operand)");
    let f = field(&t.lhs).ok_or_else(unfit)?;
    let k = constant(&t.rhs).ok_or_else(unfit)?;
    let cmp = match t.op {
        CmpOp::Eq => Cmp::eq(k),
        CmpOp::Gt => Cmp::Gt(k),
        CmpOp::Ge => Cmp::Ge(k),
        CmpOp::Set => Cmp::AnyBits(k),
    };
    Ok(Atom::new(f, cmp))
}

fn as_test(n: &Node) -> Option<&Atom> {
    match n {
        Node::Instr(Instr::Test(a)) => Some(a),
        _ => None,
    }
}

/// Fuses consecutive conjuncts into power instructions and `or`s of single
/// tests into one instruction, bottom-up.
fn fuse(n: Node) -> Node {
    match n {
        Node::Instr(_) => n,
        Node::And(v) => {
            let v: Vec<Node> = v.into_iter().map(fuse).collect();
            let mut out: Vec<Node> = Vec::with_capacity(v.len());
            let mut i = 0;
            while i < v.len() {
                // Range: `f >= lo and not f > hi`.
                if let (Some(a), Some(b)) = (as_test(&v[i]), v.get(i + 1).and_then(as_test)) {
                    if let (Cmp::Ge(lo), Cmp::Gt(hi), false, true) = (&a.cmp, &b.cmp, a.negate, b.negate) {
                        if a.field == b.field {
                            out.push(Node::Instr(Instr::Test(Atom::new(a.field, Cmp::Range(*lo, *hi)))));
                            i += 2;
                            continue;
                        }
                    }
                }
                // IPv4 + protocol (+ not a fragment).
                if let (Some(a), Some(b)) = (as_test(&v[i]), v.get(i + 1).and_then(as_test)) {
                    let is_ip = !a.negate
                        && a.field.mask.is_none()
                        && matches!(a.field.source, Source::Load { size: Size::Half, addr: Addr::Direct(_) })
                        && matches!(&a.cmp, Cmp::In(s) if *s == ValueSet::from_values([0x800]));
                    let is_proto = !b.negate
                        && b.field.mask.is_none()
                        && matches!(b.field.source, Source::Load { size: Size::Byte, addr: Addr::Direct(_) })
                        && matches!(b.cmp, Cmp::In(_));
                    if is_ip && is_proto {
                        let mut atoms = vec![a.clone(), b.clone()];
                        let frag = v.get(i + 2).and_then(as_test).filter(|c| {
                            c.negate
                                && c.cmp == Cmp::AnyBits(0x1fff)
                                && matches!(c.field.source, Source::Load { size: Size::Half, addr: Addr::Direct(_) })
                        });
                        if let Some(c) = frag {
                            atoms.push(c.clone());
                        }
                        i += atoms.len();
                        out.push(Node::Instr(Instr::All(atoms)));
                        continue;
                    }
                }
                out.push(v[i].clone());
                i += 1;
            }
            if out.len() == 1 {
                out.pop().unwrap_or(Node::And(Vec::new()))
            } else {
                Node::And(out)
            }
        }
        Node::Or(v) => {
            let v: Vec<Node> = v.into_iter().map(fuse).collect();
            if v.len() == 1 {
                return v.into_iter().next().unwrap_or(Node::Or(Vec::new()));
            }
            let atoms: Option<Vec<Atom>> = v.iter().map(|n| as_test(n).cloned()).collect();
            match atoms {
                Some(atoms) if !atoms.is_empty() => Node::Instr(or_of_atoms(atoms)),
                _ => Node::Or(v),
            }
        }
    }
}

/// One instruction for an `or` of tests: a set when all test one field for
/// equality, "either" for `src or dst`, else a generic "any".
fn or_of_atoms(atoms: Vec<Atom>) -> Instr {
    let eq_only = atoms.iter().all(|a| !a.negate && matches!(a.cmp, Cmp::In(_)));
    if eq_only && atoms.iter().all(|a| a.field == atoms[0].field) {
        let mut set = ValueSet::from_values([]);
        for a in &atoms {
            if let Cmp::In(s) = &a.cmp {
                for v in s.sorted() {
                    set.insert(v);
                }
            }
        }
        return Instr::Test(Atom::new(atoms[0].field, Cmp::In(set)));
    }
    if let [a, b] = &atoms[..] {
        if !a.negate && !b.negate && a.cmp == b.cmp && a.field != b.field {
            return Instr::Either { fields: [a.field, b.field], cmp: a.cmp.clone(), negate: false, first: None };
        }
    }
    Instr::Any(atoms)
}

fn passes(n: &Node) -> Result<Vec<Vec<Arc<Instr>>>, String> {
    match n {
        Node::Instr(i) => Ok(vec![vec![Arc::new(i.clone())]]),
        Node::Or(v) => {
            let mut out = Vec::new();
            for k in v {
                out.extend(passes(k)?);
                if out.len() > MAX_PASSES {
                    return Err(format!("the expression expands to more than {MAX_PASSES} passes"));
                }
            }
            Ok(out)
        }
        Node::And(v) => {
            let mut prefix: Vec<Arc<Instr>> = Vec::new();
            for (i, k) in v.iter().enumerate() {
                let last = i + 1 == v.len();
                let ps = passes(k)?;
                match ps.len() {
                    // `false` still runs what precedes it: an empty "any".
                    0 => prefix.push(Arc::new(Instr::Any(Vec::new()))),
                    1 => prefix.extend(ps.into_iter().flatten()),
                    _ if last => {
                        return Ok(ps
                            .into_iter()
                            .map(|p| {
                                let mut q = prefix.clone();
                                q.extend(p);
                                q
                            })
                            .collect())
                    }
                    _ if ps.iter().flatten().all(|i| matches!(&**i, Instr::Test(_) | Instr::All(_))) => {
                        let alts = ps
                            .iter()
                            .map(|p| {
                                p.iter()
                                    .flat_map(|i| match &**i {
                                        Instr::Test(a) => vec![a.clone()],
                                        Instr::All(v) => v.clone(),
                                        _ => Vec::new(),
                                    })
                                    .collect()
                            })
                            .collect();
                        prefix.push(Arc::new(Instr::Alternatives(alts)));
                    }
                    n => {
                        return Err(format!(
                            "an alternative of {n} branches followed by more conditions (in `and`) does not fit \
                             passes: its later branches would run where the static program skips them"
                        ))
                    }
                }
            }
            Ok(vec![prefix])
        }
    }
}
