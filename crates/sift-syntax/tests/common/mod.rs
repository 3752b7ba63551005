//! Helpers shared by the integration tests.

#![allow(dead_code)]

use sift_syntax::ast::*;
use sift_syntax::Span;

const Z: Span = Span::new(0, 0);

/// A copy of `e` with every span zeroed, for comparing trees "modulo
/// spans". Left-deep `and`/`or` chains are walked iteratively.
pub fn strip_spans(e: &Expr) -> Expr {
    let mut rights = Vec::new();
    let mut first = e;
    loop {
        match first {
            Expr::And(l, r) => {
                rights.push((true, &**r));
                first = l;
            }
            Expr::Or(l, r) => {
                rights.push((false, &**r));
                first = l;
            }
            _ => break,
        }
    }
    let mut acc = strip_operand(first);
    for (is_and, r) in rights.into_iter().rev() {
        let r = Box::new(strip_operand(r));
        acc = if is_and { Expr::And(Box::new(acc), r) } else { Expr::Or(Box::new(acc), r) };
    }
    acc
}

fn strip_operand(e: &Expr) -> Expr {
    match e {
        Expr::Prim(p, _) => Expr::Prim(strip_prim(p), Z),
        Expr::Not(x, _) => Expr::Not(Box::new(strip_spans(x)), Z),
        other => strip_spans(other),
    }
}

fn strip_prim(p: &Primitive) -> Primitive {
    match p {
        Primitive::Relation { op, lhs, rhs } => {
            Primitive::Relation { op: *op, lhs: strip_arith(lhs), rhs: strip_arith(rhs) }
        }
        other => other.clone(),
    }
}

fn strip_arith(a: &Arith) -> Arith {
    match a {
        Arith::Num(n, _) => Arith::Num(*n, Z),
        Arith::Len(_) => Arith::Len(Z),
        Arith::Load { proto, index, size, .. } => {
            Arith::Load { proto: *proto, index: Box::new(strip_arith(index)), size: *size, span: Z }
        }
        Arith::Binary { op, lhs, rhs, .. } => Arith::Binary {
            op: *op,
            lhs: Box::new(strip_arith(lhs)),
            rhs: Box::new(strip_arith(rhs)),
            span: Z,
        },
        Arith::Neg(x, _) => Arith::Neg(Box::new(strip_arith(x)), Z),
    }
}

/// Checks that printing `f` and parsing the text gives the same tree
/// (modulo spans); returns a description of the problem otherwise.
pub fn round_trip(f: &Filter) -> Result<(), String> {
    let printed = f.to_string();
    let again = sift_syntax::parse(&printed)
        .map_err(|e| format!("printed form {printed:?} does not parse: {}", e.message))?;
    let a = f.expr.as_ref().map(strip_spans);
    let b = again.expr.as_ref().map(strip_spans);
    if a != b {
        return Err(format!("printed form {printed:?} parses to a different tree"));
    }
    Ok(())
}
