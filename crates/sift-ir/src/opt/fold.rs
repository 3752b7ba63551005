//! Pass 1, constant folding: arithmetic on constants, identities that
//! cannot change an abort (`x + 0`, `x & 0xffffffff`, ...), tests between
//! constants, `not not p`, nested `and`/`or` flattened, `true`/`false`
//! operands that evaluate nothing removed. One bottom-up walk.

use super::analysis::size;
use crate::eval::apply;
use crate::pred::{BinOp, CmpOp, Pred, Size, Test, Value};

/// Folds constants in a predicate (its nodes are reused).
pub fn fold(p: Pred) -> Pred {
    fold_sized(p).0
}

/// [`fold`], with the result's [`size`] (counted
/// during the walk).
pub(crate) fn fold_sized(mut p: Pred) -> (Pred, usize) {
    let n = fold_in_place(&mut p);
    (p, n)
}

/// [`fold`] in place: a node is only rewritten when a rule changes it (an
/// already folded tree, what lowering mostly gives, is only read). Returns
/// the size of the folded predicate.
#[inline]
fn fold_in_place(p: &mut Pred) -> usize {
    match p {
        // A test of a leaf against a leaf, not both constants (most tests):
        // nothing to fold, no call.
        Pred::Test(Test { lhs, rhs, .. })
            if is_leaf(lhs) && is_leaf(rhs) && !matches!((&*lhs, &*rhs), (Value::Const(_), Value::Const(_))) =>
        {
            3
        }
        _ => fold_node_in_place(p),
    }
}

/// Whether `v` has no operands (nothing in it to fold).
#[inline]
fn is_leaf(v: &Value) -> bool {
    matches!(v, Value::Const(_) | Value::Len | Value::Protochain { .. } | Value::Load { index: None, .. })
}

/// [`fold_in_place`] of any node.
fn fold_node_in_place(p: &mut Pred) -> usize {
    let is_and = matches!(p, Pred::And(_));
    let (replacement, n) = match p {
        Pred::True | Pred::False => (None, 1),
        Pred::Test(t) => {
            let n = 1 + fold_value_in_place(&mut t.lhs) + fold_value_in_place(&mut t.rhs);
            match (&t.lhs, &t.rhs) {
                (Value::Const(a), Value::Const(b)) => (Some(constant(holds(*a, t.op, *b))), 1),
                _ => (None, n),
            }
        }
        Pred::Not(q) => {
            let n = fold_in_place(q);
            match &mut **q {
                Pred::True => (Some(Pred::False), 1),
                Pred::False => (Some(Pred::True), 1),
                // `not not r`: `r`, two nodes fewer.
                Pred::Not(r) => (Some(std::mem::replace(&mut **r, Pred::True)), n - 1),
                _ => (None, 1 + n),
            }
        }
        Pred::And(v) | Pred::Or(v) => {
            let n = 1 + v.iter_mut().map(fold_in_place).sum::<usize>();
            if v.len() < 2 || v.iter().any(|q| needs_work(q, is_and)) {
                let q = junction(std::mem::take(v), is_and);
                let n = size(&q);
                (Some(q), n)
            } else {
                (None, n)
            }
        }
    };
    if let Some(q) = replacement {
        *p = q;
    }
    n
}

/// [`fold`] of a borrowed predicate: the folded tree is built directly,
/// without copying `p` first.
pub fn fold_ref(p: &Pred) -> Pred {
    match p {
        Pred::True => Pred::True,
        Pred::False => Pred::False,
        Pred::Test(t) => compare(fold_value_ref(&t.lhs), t.op, fold_value_ref(&t.rhs)),
        Pred::Not(q) => negation(Box::new(fold_ref(q))),
        Pred::And(v) => and_vec(v.iter().map(fold_ref).collect()),
        Pred::Or(v) => or_vec(v.iter().map(fold_ref).collect()),
    }
}

/// `not q` for a folded `q`: constants negated, `not not r` is `r`.
fn negation(q: Box<Pred>) -> Pred {
    match *q {
        Pred::True => Pred::False,
        Pred::False => Pred::True,
        Pred::Not(r) => *r,
        _ => Pred::Not(q),
    }
}

/// `and` of already simplified operands: flattened, `true` dropped, cut
/// after a `false` (what follows it is never evaluated).
pub fn and(ps: impl IntoIterator<Item = Pred>) -> Pred {
    junction(ps, true)
}

/// `or` of already simplified operands: flattened, `false` dropped, cut
/// after a `true`.
pub fn or(ps: impl IntoIterator<Item = Pred>) -> Pred {
    junction(ps, false)
}

/// [`and`] of a vector, which is reused when it needs no flattening and
/// holds no constant (the common case: no allocation).
pub fn and_vec(v: Vec<Pred>) -> Pred {
    junction_vec(v, true)
}

/// [`or`] of a vector, reused as in [`and_vec`].
pub fn or_vec(v: Vec<Pred>) -> Pred {
    junction_vec(v, false)
}

/// Whether `p` is an operand that [`junction`] would drop, cut at or
/// flatten in an `and` (`is_and`) or an `or`.
pub(crate) fn needs_work(p: &Pred, is_and: bool) -> bool {
    match p {
        Pred::True | Pred::False => true,
        Pred::And(_) => is_and,
        Pred::Or(_) => !is_and,
        _ => false,
    }
}

fn junction_vec(v: Vec<Pred>, is_and: bool) -> Pred {
    if v.iter().any(|p| needs_work(p, is_and)) {
        return junction(v, is_and);
    }
    from_operands(v, is_and)
}

/// The `and`/`or` of operands that need no further flattening: the unit for
/// none, the operand itself for one.
fn from_operands(mut v: Vec<Pred>, is_and: bool) -> Pred {
    match v.len() {
        0 => constant(is_and),
        1 => v.pop().unwrap_or(constant(is_and)),
        _ if is_and => Pred::And(v),
        _ => Pred::Or(v),
    }
}

/// `true` or `false`.
fn constant(b: bool) -> Pred {
    if b {
        Pred::True
    } else {
        Pred::False
    }
}

/// `and` (`is_and`; `true` is the unit) or `or` (`false` is the unit).
fn junction(ps: impl IntoIterator<Item = Pred>, is_and: bool) -> Pred {
    let ps = ps.into_iter();
    // Room for the operands and a few more (flattening adds some).
    let mut out = Vec::with_capacity(ps.size_hint().0 + 4);
    for p in ps {
        match p {
            Pred::True | Pred::False if (p == Pred::True) == is_and => {}
            Pred::And(v) if is_and => out.extend(v),
            Pred::Or(v) if !is_and => out.extend(v),
            Pred::True | Pred::False => {
                out.push(p);
                break;
            }
            p => out.push(p),
        }
    }
    from_operands(out, is_and)
}

/// The test `lhs op rhs` of folded operands, decided when both are
/// constants.
fn compare(lhs: Value, op: CmpOp, rhs: Value) -> Pred {
    if let (Value::Const(a), Value::Const(b)) = (&lhs, &rhs) {
        return constant(holds(*a, op, *b));
    }
    Pred::Test(Test { lhs, op, rhs })
}

/// Whether `a op b` holds for constants.
fn holds(a: u32, op: CmpOp, b: u32) -> bool {
    match op {
        CmpOp::Eq => a == b,
        CmpOp::Gt => a > b,
        CmpOp::Ge => a >= b,
        CmpOp::Set => a & b != 0,
    }
}

/// Folds a value: constant subtrees are computed (except a division by a
/// constant 0, which must still abort), and operations that return their
/// operand unchanged are removed. The value's nodes are reused.
pub fn fold_value(mut v: Value) -> Value {
    let _ = fold_value_in_place(&mut v);
    v
}

/// [`fold_value`] in place (a value that needs no folding is only read);
/// returns the folded value's [`value_size`](super::analysis::value_size).
#[inline]
fn fold_value_in_place(v: &mut Value) -> usize {
    if is_leaf(v) {
        // Most values: no call.
        return 1;
    }
    fold_compound_in_place(v)
}

/// [`fold_value_in_place`] of a value with operands.
fn fold_compound_in_place(v: &mut Value) -> usize {
    let (replacement, n) = match v {
        Value::Load { index, offset, .. } => {
            let mut n = 1;
            if let Some(i) = index {
                n += fold_value_in_place(i);
                if let Value::Const(k) = **i {
                    if let Some(o) = offset.checked_add(k) {
                        *offset = o;
                        *index = None;
                        n = 1;
                    }
                }
            }
            (None, n)
        }
        Value::Neg(a) => {
            let n = fold_value_in_place(a);
            match **a {
                Value::Const(k) => (Some(Value::Const(k.wrapping_neg())), 1),
                _ => (None, 1 + n),
            }
        }
        Value::Bin(op, a, b) => {
            let (na, nb) = (fold_value_in_place(a), fold_value_in_place(b));
            match simplified(*op, a, b) {
                Simplified::Const(k) => (Some(Value::Const(k)), 1),
                Simplified::Lhs => (Some(std::mem::replace(&mut **a, Value::Len)), na),
                Simplified::Rhs => (Some(std::mem::replace(&mut **b, Value::Len)), nb),
                Simplified::Kept => (None, 1 + na + nb),
            }
        }
        _ => (None, 1),
    };
    if let Some(w) = replacement {
        *v = w;
    }
    n
}

/// [`fold_value`] of a borrowed value: the folded value is built directly.
pub fn fold_value_ref(v: &Value) -> Value {
    let fold_boxed = |b: &Value| Box::new(fold_value_ref(b));
    match v {
        Value::Load { size, index, offset } => load(*size, index.as_deref().map(fold_boxed), *offset),
        Value::Neg(a) => negative(fold_boxed(a)),
        Value::Bin(op, a, b) => operation(*op, fold_boxed(a), fold_boxed(b)),
        v => v.clone(),
    }
}

/// A load with a folded index: a constant index adds to the offset when
/// the sum is exact.
fn load(size: Size, index: Option<Box<Value>>, offset: u32) -> Value {
    match index.as_deref() {
        Some(&Value::Const(k)) if offset.checked_add(k).is_some() => {
            Value::Load { size, index: None, offset: offset + k }
        }
        _ => Value::Load { size, index, offset },
    }
}

/// `-a` of a folded `a`.
fn negative(a: Box<Value>) -> Value {
    match *a {
        Value::Const(k) => Value::Const(k.wrapping_neg()),
        _ => Value::Neg(a),
    }
}

/// `a op b` of folded operands.
fn operation(op: BinOp, a: Box<Value>, b: Box<Value>) -> Value {
    match simplified(op, &a, &b) {
        Simplified::Const(k) => Value::Const(k),
        Simplified::Lhs => *a,
        Simplified::Rhs => *b,
        Simplified::Kept => Value::Bin(op, a, b),
    }
}

/// What `a op b` of folded operands folds to.
enum Simplified {
    /// A constant.
    Const(u32),
    /// Its left operand.
    Lhs,
    /// Its right operand.
    Rhs,
    /// Itself.
    Kept,
}

/// The folding rule for `a op b` (folded operands).
fn simplified(op: BinOp, a: &Value, b: &Value) -> Simplified {
    match (op, a, b) {
        (_, Value::Const(x), Value::Const(y)) => match apply(op, *x, *y) {
            Ok(k) => Simplified::Const(k),
            Err(_) => Simplified::Kept,
        },
        (BinOp::Add | BinOp::Sub | BinOp::Or | BinOp::Xor | BinOp::Shl | BinOp::Shr, _, Value::Const(0))
        | (BinOp::Mul | BinOp::Div, _, Value::Const(1))
        | (BinOp::And, _, Value::Const(u32::MAX)) => Simplified::Lhs,
        (BinOp::Add | BinOp::Or | BinOp::Xor, Value::Const(0), _)
        | (BinOp::Mul, Value::Const(1), _)
        | (BinOp::And, Value::Const(u32::MAX), _) => Simplified::Rhs,
        _ => Simplified::Kept,
    }
}
