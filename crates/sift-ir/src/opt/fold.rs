//! Pass 1, constant folding: arithmetic on constants, identities that
//! cannot change an abort (`x + 0`, `x & 0xffffffff`, ...), tests between
//! constants, `not not p`, nested `and`/`or` flattened, `true`/`false`
//! operands that evaluate nothing removed. One bottom-up walk.

use crate::eval::apply;
use crate::pred::{BinOp, CmpOp, Pred, Size, Test, Value};

/// Folds constants in a predicate (its nodes are reused).
pub fn fold(p: Pred) -> Pred {
    match p {
        Pred::True | Pred::False => p,
        Pred::Test(t) => compare(fold_value(t.lhs), t.op, fold_value(t.rhs)),
        Pred::Not(mut q) => {
            // The box is reused for the folded operand.
            *q = fold(std::mem::replace(&mut *q, Pred::True));
            negation(q)
        }
        Pred::And(v) => and_vec(fold_each(v)),
        Pred::Or(v) => or_vec(fold_each(v)),
    }
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

/// Folds every operand in place (the vector is reused).
fn fold_each(mut v: Vec<Pred>) -> Vec<Pred> {
    for p in &mut v {
        *p = fold(std::mem::replace(p, Pred::True));
    }
    v
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
        let holds = match op {
            CmpOp::Eq => a == b,
            CmpOp::Gt => a > b,
            CmpOp::Ge => a >= b,
            CmpOp::Set => a & b != 0,
        };
        return if holds { Pred::True } else { Pred::False };
    }
    Pred::Test(Test { lhs, op, rhs })
}

/// Folds a value: constant subtrees are computed (except a division by a
/// constant 0, which must still abort), and operations that return their
/// operand unchanged are removed. The value's nodes are reused.
pub fn fold_value(v: Value) -> Value {
    // Operands are folded in place: their boxes are reused.
    let fold_boxed = |mut b: Box<Value>| {
        *b = fold_value(std::mem::replace(&mut *b, Value::Len));
        b
    };
    match v {
        Value::Load { size, index, offset } => load(size, index.map(fold_boxed), offset),
        Value::Neg(a) => negative(fold_boxed(a)),
        Value::Bin(op, a, b) => operation(op, fold_boxed(a), fold_boxed(b)),
        v => v,
    }
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
    match (op, &*a, &*b) {
        (_, Value::Const(x), Value::Const(y)) => match apply(op, *x, *y) {
            Ok(k) => Value::Const(k),
            Err(_) => Value::Bin(op, a, b),
        },
        (BinOp::Add | BinOp::Sub | BinOp::Or | BinOp::Xor | BinOp::Shl | BinOp::Shr, _, Value::Const(0))
        | (BinOp::Mul | BinOp::Div, _, Value::Const(1))
        | (BinOp::And, _, Value::Const(u32::MAX)) => *a,
        (BinOp::Add | BinOp::Or | BinOp::Xor, Value::Const(0), _)
        | (BinOp::Mul, Value::Const(1), _)
        | (BinOp::And, Value::Const(u32::MAX), _) => *b,
        _ => Value::Bin(op, a, b),
    }
}
