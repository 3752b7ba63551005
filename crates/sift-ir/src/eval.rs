//! The reference evaluator: runs a [`Pred`] directly on a packet.
//!
//! This is the in-house oracle: slow and obviously correct, it defines what
//! every engine must compute. See [`crate::pred`] for the semantics.

use crate::pred::{BinOp, CmpOp, Pred, Size, Test, Value, PROTOCHAIN_MAX_STEPS};

/// Evaluation stopped: a load was out of bounds or a divisor was zero. The
/// packet is rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Abort;

/// A packet as a filter sees it: the captured bytes and the wire length.
#[derive(Clone, Copy, Debug)]
pub struct PacketView<'a> {
    /// The captured bytes (`caplen` of them).
    pub data: &'a [u8],
    /// The original length on the wire (`len`), at least `data.len()` in
    /// well-formed captures but not assumed to be.
    pub wire_len: u32,
}

/// Does `pred` accept the packet? An abort rejects.
pub fn matches(pred: &Pred, pkt: PacketView<'_>) -> bool {
    eval_pred(pred, pkt).unwrap_or(false)
}

/// Evaluates a predicate; `Err(Abort)` when evaluation aborted.
pub fn eval_pred(pred: &Pred, pkt: PacketView<'_>) -> Result<bool, Abort> {
    Ok(match pred {
        Pred::True => true,
        Pred::False => false,
        Pred::Not(p) => !eval_pred(p, pkt)?,
        Pred::And(v) => {
            for p in v {
                if !eval_pred(p, pkt)? {
                    return Ok(false);
                }
            }
            true
        }
        Pred::Or(v) => {
            for p in v {
                if eval_pred(p, pkt)? {
                    return Ok(true);
                }
            }
            false
        }
        Pred::Test(t) => eval_test(t, pkt)?,
    })
}

/// Evaluates one test: both values, then the comparison.
pub fn eval_test(t: &Test, pkt: PacketView<'_>) -> Result<bool, Abort> {
    let a = eval_value(&t.lhs, pkt)?;
    let b = eval_value(&t.rhs, pkt)?;
    Ok(match t.op {
        CmpOp::Eq => a == b,
        CmpOp::Gt => a > b,
        CmpOp::Ge => a >= b,
        CmpOp::Set => a & b != 0,
    })
}

/// Computes a value.
pub fn eval_value(v: &Value, pkt: PacketView<'_>) -> Result<u32, Abort> {
    Ok(match v {
        Value::Const(k) => *k,
        Value::Len => pkt.wire_len,
        Value::Load { size, index, offset } => {
            let base = match index {
                Some(i) => u64::from(eval_value(i, pkt)?),
                None => 0,
            };
            load(pkt.data, base + u64::from(*offset), *size)?
        }
        Value::Bin(op, a, b) => {
            let a = eval_value(a, pkt)?;
            let b = eval_value(b, pkt)?;
            apply(*op, a, b)?
        }
        Value::Neg(a) => eval_value(a, pkt)?.wrapping_neg(),
        Value::Protochain { v6, proto, nl } => protochain(pkt.data, *v6, *proto, *nl)?,
    })
}

/// The `protochain` walk of [`Value::Protochain`]: the protocol number where
/// it stopped.
pub fn protochain(data: &[u8], v6: bool, proto: u8, nl: u32) -> Result<u32, Abort> {
    let nl = u64::from(nl);
    let (mut next, mut hdr) = if v6 {
        (load(data, nl + 6, Size::Byte)?, 40u32)
    } else {
        let hlen = (load(data, nl, Size::Byte)? & 0xf) << 2;
        (load(data, nl + 9, Size::Byte)?, hlen)
    };
    let mut skipped = 0u32;
    loop {
        if next == u32::from(proto) || next == 59 {
            return Ok(next);
        }
        let ext = v6 && matches!(next, 0 | 60 | 43 | 44);
        if !ext && next != 51 {
            return Ok(next);
        }
        if skipped == PROTOCHAIN_MAX_STEPS {
            return Err(Abort);
        }
        skipped += 1;
        let at = nl + u64::from(hdr);
        let following = load(data, at, Size::Byte)?;
        let len = load(data, at + 1, Size::Byte)?;
        hdr = if ext {
            // At most 64 steps of at most 2048 bytes: no wrap-around.
            hdr.wrapping_add((len + 1) << 3)
        } else {
            (len + 2) << 2
        };
        next = following;
    }
}

/// A big-endian load of `size` bytes at byte offset `at`.
pub fn load(data: &[u8], at: u64, size: Size) -> Result<u32, Abort> {
    let n = u64::from(size.bytes());
    if at + n > data.len() as u64 {
        return Err(Abort);
    }
    let at = at as usize;
    Ok(match size {
        Size::Byte => u32::from(data[at]),
        Size::Half => u32::from(u16::from_be_bytes([data[at], data[at + 1]])),
        Size::Word => u32::from_be_bytes([data[at], data[at + 1], data[at + 2], data[at + 3]]),
    })
}

/// Applies an arithmetic operator with cBPF semantics.
pub fn apply(op: BinOp, a: u32, b: u32) -> Result<u32, Abort> {
    Ok(match op {
        BinOp::Add => a.wrapping_add(b),
        BinOp::Sub => a.wrapping_sub(b),
        BinOp::Mul => a.wrapping_mul(b),
        BinOp::Div => a.checked_div(b).ok_or(Abort)?,
        BinOp::Mod => a.checked_rem(b).ok_or(Abort)?,
        BinOp::And => a & b,
        BinOp::Or => a | b,
        BinOp::Xor => a ^ b,
        BinOp::Shl => a.wrapping_shl(b),
        BinOp::Shr => a.wrapping_shr(b),
    })
}
