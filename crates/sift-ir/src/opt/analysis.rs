//! Facts about values and predicates shared by the passes: which parts of a
//! value can abort, what range a value lies in, tree sizes.

use crate::pred::{BinOp, CmpOp, Pred, Size, Test, Value};

/// A part of a value whose evaluation can abort: a packet load, a
/// division or remainder by a value that may be zero, or a `protochain`
/// walk. Once an atom has been evaluated on a path without aborting, it
/// cannot abort again later on that path (the packet does not change).
pub fn atoms<'a>(v: &'a Value, out: &mut Vec<&'a Value>) {
    match v {
        Value::Const(_) | Value::Len => {}
        Value::Load { index, .. } => {
            out.push(v);
            if let Some(i) = index {
                atoms(i, out);
            }
        }
        Value::Bin(op, a, b) => {
            if matches!(op, BinOp::Div | BinOp::Mod) && !matches!(**b, Value::Const(k) if k != 0) {
                out.push(v);
            }
            atoms(a, out);
            atoms(b, out);
        }
        Value::Neg(a) => atoms(a, out),
        Value::Protochain { .. } => out.push(v),
    }
}

/// Calls `f` on each atom of `v`, in the order [`atoms`] lists them,
/// until `f` returns `false`; returns whether every call returned `true`.
/// The same as walking [`atoms`]'s list, without allocating one.
#[inline]
pub fn atoms_all(v: &Value, f: &mut impl FnMut(&Value) -> bool) -> bool {
    match v {
        // Leaves (most values) need no call.
        Value::Const(_) | Value::Len => true,
        Value::Load { index: None, .. } => f(v),
        _ => compound_atoms_all(v, f),
    }
}

/// [`atoms_all`] of a value with operands.
fn compound_atoms_all(v: &Value, f: &mut impl FnMut(&Value) -> bool) -> bool {
    match v {
        Value::Const(_) | Value::Len => true,
        Value::Load { index, .. } => f(v) && index.as_deref().is_none_or(|i| atoms_all(i, f)),
        Value::Bin(op, a, b) => {
            let can_abort = matches!(op, BinOp::Div | BinOp::Mod) && !matches!(**b, Value::Const(k) if k != 0);
            (!can_abort || f(v)) && atoms_all(a, f) && atoms_all(b, f)
        }
        Value::Neg(a) => atoms_all(a, f),
        Value::Protochain { .. } => f(v),
    }
}

/// [`atoms_all`] over every test of `p`, in evaluation order.
pub fn pred_atoms_all(p: &Pred, f: &mut impl FnMut(&Value) -> bool) -> bool {
    match p {
        Pred::True | Pred::False => true,
        Pred::Test(t) => atoms_all(&t.lhs, f) && atoms_all(&t.rhs, f),
        Pred::Not(q) => pred_atoms_all(q, f),
        Pred::And(v) | Pred::Or(v) => v.iter().all(|q| pred_atoms_all(q, f)),
    }
}

/// The atoms of both operands of a test.
pub fn test_atoms<'a>(t: &'a Test, out: &mut Vec<&'a Value>) {
    atoms(&t.lhs, out);
    atoms(&t.rhs, out);
}

/// The atoms of every test in `p`.
pub fn pred_atoms<'a>(p: &'a Pred, out: &mut Vec<&'a Value>) {
    match p {
        Pred::True | Pred::False => {}
        Pred::Test(t) => test_atoms(t, out),
        Pred::Not(q) => pred_atoms(q, out),
        Pred::And(v) | Pred::Or(v) => v.iter().for_each(|q| pred_atoms(q, out)),
    }
}

/// The test evaluated first whenever `p` is evaluated (`None` for a
/// constant, which evaluates nothing).
pub fn first_test(p: &Pred) -> Option<&Test> {
    match p {
        Pred::True | Pred::False => None,
        Pred::Test(t) => Some(t),
        Pred::Not(q) => first_test(q),
        Pred::And(v) | Pred::Or(v) => v.first().and_then(first_test),
    }
}

/// The minimum captured length a successful evaluation of atom `a` proves:
/// a load at `[index + k]` of `n` bytes needs at least `k + n` bytes.
pub fn proven_len(a: &Value) -> u32 {
    match a {
        Value::Load { size, offset, .. } => offset.saturating_add(size.bytes()),
        _ => 0,
    }
}

/// Whether an atom is an absolute load whose bytes end at most at `len`
/// (so it cannot abort once `len` bytes are known to be captured).
pub fn within(a: &Value, len: u32) -> bool {
    match a {
        Value::Load { size, index: None, offset } => u64::from(*offset) + u64::from(size.bytes()) <= u64::from(len),
        _ => false,
    }
}

/// The inclusive range `[lo, hi]` a value always lies in (when it does not
/// abort), from its form alone.
pub fn range(v: &Value) -> (u32, u32) {
    match v {
        Value::Const(k) => (*k, *k),
        Value::Load { size: Size::Byte, .. } => (0, 0xff),
        Value::Load { size: Size::Half, .. } => (0, 0xffff),
        Value::Bin(BinOp::And, a, b) => {
            let hi = range(a).1.min(range(b).1);
            (0, hi)
        }
        Value::Bin(BinOp::Shr, a, b) => match **b {
            Value::Const(k) => {
                let (lo, hi) = range(a);
                (lo >> (k & 31), hi >> (k & 31))
            }
            _ => (0, range(a).1),
        },
        Value::Bin(BinOp::Shl, a, b) => match **b {
            Value::Const(k) => {
                let (lo, hi) = range(a);
                let k = k & 31;
                if hi.leading_zeros() >= k {
                    (lo << k, hi << k)
                } else {
                    (0, u32::MAX)
                }
            }
            _ => (0, u32::MAX),
        },
        Value::Bin(BinOp::Div, a, b) => match **b {
            Value::Const(k) if k != 0 => {
                let (lo, hi) = range(a);
                (lo / k, hi / k)
            }
            _ => (0, range(a).1),
        },
        Value::Bin(BinOp::Mod, _, b) => match **b {
            Value::Const(k) if k != 0 => (0, k - 1),
            _ => (0, u32::MAX),
        },
        Value::Protochain { .. } => (0, 0xff),
        _ => (0, u32::MAX),
    }
}

/// The outcome of `lhs op k` when `lhs` is known to lie in `[lo, hi]`, if
/// that decides it.
pub fn decide_in_range(op: CmpOp, lo: u32, hi: u32, k: u32) -> Option<bool> {
    match op {
        CmpOp::Eq if k < lo || k > hi => Some(false),
        CmpOp::Eq if lo == hi => Some(lo == k),
        CmpOp::Gt if lo > k => Some(true),
        CmpOp::Gt if hi <= k => Some(false),
        CmpOp::Ge if lo >= k => Some(true),
        CmpOp::Ge if hi < k => Some(false),
        CmpOp::Set if k == 0 => Some(false),
        CmpOp::Set if lo == hi => Some(lo & k != 0),
        // Every value in [0, hi] is below the lowest bit of k.
        CmpOp::Set if hi < (k & k.wrapping_neg()) => Some(false),
        _ => None,
    }
}

/// Number of nodes in a predicate (tests count their values' nodes).
pub fn size(p: &Pred) -> usize {
    match p {
        Pred::True | Pred::False => 1,
        Pred::Test(t) => 1 + value_size(&t.lhs) + value_size(&t.rhs),
        Pred::Not(q) => 1 + size(q),
        Pred::And(v) | Pred::Or(v) => 1 + v.iter().map(size).sum::<usize>(),
    }
}

/// Number of nodes in a value.
#[inline]
pub fn value_size(v: &Value) -> usize {
    match v {
        // Leaves (most values, or both operands of most tests) need no call.
        Value::Const(_) | Value::Len | Value::Protochain { .. } | Value::Load { index: None, .. } => 1,
        _ => compound_size(v),
    }
}

/// [`value_size`] of a value with operands.
fn compound_size(v: &Value) -> usize {
    match v {
        Value::Load { index, .. } => 1 + index.as_deref().map_or(0, value_size),
        Value::Bin(_, a, b) => 1 + value_size(a) + value_size(b),
        Value::Neg(a) => 1 + value_size(a),
        Value::Const(_) | Value::Len | Value::Protochain { .. } => 1,
    }
}
