//! Pass 1, constant folding: arithmetic on constants, identities that
//! cannot change an abort (`x + 0`, `x & 0xffffffff`, ...), tests between
//! constants, `not not p`, nested `and`/`or` flattened, `true`/`false`
//! operands that evaluate nothing removed. One bottom-up walk.

use crate::eval::apply;
use crate::pred::{BinOp, CmpOp, Pred, Test, Value};

/// Folds constants in a predicate.
pub fn fold(p: Pred) -> Pred {
    match p {
        Pred::True | Pred::False => p,
        Pred::Test(t) => fold_test(t),
        Pred::Not(q) => match fold(*q) {
            Pred::True => Pred::False,
            Pred::False => Pred::True,
            Pred::Not(r) => *r,
            q => Pred::Not(Box::new(q)),
        },
        Pred::And(v) => and(v.into_iter().map(fold)),
        Pred::Or(v) => or(v.into_iter().map(fold)),
    }
}

/// `and` of already simplified operands: flattened, `true` dropped, cut
/// after a `false` (what follows it is never evaluated).
pub fn and(ps: impl IntoIterator<Item = Pred>) -> Pred {
    let mut out = Vec::new();
    for p in ps {
        match p {
            Pred::True => {}
            Pred::And(v) => out.extend(v),
            Pred::False => {
                out.push(Pred::False);
                break;
            }
            p => out.push(p),
        }
    }
    match out.len() {
        0 => Pred::True,
        1 => out.pop().unwrap_or(Pred::True),
        _ => Pred::And(out),
    }
}

/// `or` of already simplified operands: flattened, `false` dropped, cut
/// after a `true`.
pub fn or(ps: impl IntoIterator<Item = Pred>) -> Pred {
    let mut out = Vec::new();
    for p in ps {
        match p {
            Pred::False => {}
            Pred::Or(v) => out.extend(v),
            Pred::True => {
                out.push(Pred::True);
                break;
            }
            p => out.push(p),
        }
    }
    match out.len() {
        0 => Pred::False,
        1 => out.pop().unwrap_or(Pred::False),
        _ => Pred::Or(out),
    }
}

fn fold_test(t: Test) -> Pred {
    let lhs = fold_value(t.lhs);
    let rhs = fold_value(t.rhs);
    if let (Value::Const(a), Value::Const(b)) = (&lhs, &rhs) {
        let holds = match t.op {
            CmpOp::Eq => a == b,
            CmpOp::Gt => a > b,
            CmpOp::Ge => a >= b,
            CmpOp::Set => a & b != 0,
        };
        return if holds { Pred::True } else { Pred::False };
    }
    Pred::Test(Test { lhs, op: t.op, rhs })
}

/// Folds a value: constant subtrees are computed (except a division by a
/// constant 0, which must still abort), and operations that return their
/// operand unchanged are removed.
pub fn fold_value(v: Value) -> Value {
    match v {
        Value::Load { size, index, offset } => {
            let index = index.map(|i| fold_value(*i));
            match index {
                // A constant index adds to the offset when the sum is exact.
                Some(Value::Const(k)) if offset.checked_add(k).is_some() => {
                    Value::Load { size, index: None, offset: offset + k }
                }
                index => Value::Load { size, index: index.map(Box::new), offset },
            }
        }
        Value::Neg(a) => match fold_value(*a) {
            Value::Const(k) => Value::Const(k.wrapping_neg()),
            a => Value::Neg(Box::new(a)),
        },
        Value::Bin(op, a, b) => {
            let (a, b) = (fold_value(*a), fold_value(*b));
            match (op, &a, &b) {
                (_, Value::Const(x), Value::Const(y)) => match apply(op, *x, *y) {
                    Ok(k) => Value::Const(k),
                    Err(_) => Value::Bin(op, Box::new(a), Box::new(b)),
                },
                (BinOp::Add | BinOp::Sub | BinOp::Or | BinOp::Xor | BinOp::Shl | BinOp::Shr, _, Value::Const(0))
                | (BinOp::Mul | BinOp::Div, _, Value::Const(1))
                | (BinOp::And, _, Value::Const(u32::MAX)) => a,
                (BinOp::Add | BinOp::Or | BinOp::Xor, Value::Const(0), _)
                | (BinOp::Mul, Value::Const(1), _)
                | (BinOp::And, Value::Const(u32::MAX), _) => b,
                _ => Value::Bin(op, Box::new(a), Box::new(b)),
            }
        }
        v => v,
    }
}
