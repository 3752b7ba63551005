//! The guarded predicate IR.
//!
//! A filter is a [`Pred`]: a boolean tree evaluated left to right with
//! short-circuit, whose leaves are [`Test`]s. A test computes two [`Value`]s
//! from the packet and compares them. Computing a value can **abort**: a load
//! past the captured bytes, or a division/modulo by zero. An abort anywhere
//! rejects the whole packet at once (libpcap's `bpf_filter` returns 0), even
//! under a `not` or on the left of an `or`. This is exactly the semantics of
//! libpcap's unoptimized programs, whose blocks run their statements and then
//! jump; lowering reproduces libpcap's tree shape, so verdicts agree on every
//! packet, truncated ones included.
//!
//! ```text
//! Pred  := true | false | not Pred | and(Pred, ...) | or(Pred, ...) | Test
//! Test  := Value (== | > | >= | &) Value          ("&" is jset: (a & b) != 0)
//! Value := const | len | load(size, [Value +] k) | Value op Value | -Value
//!        | protochain(ip|ip6, proto, nl)
//! ```
//!
//! Within one test every value is computed before the comparison, so the order
//! of loads inside a test does not matter (any abort aborts). Between tests the
//! order is the tree order.

use std::fmt;

/// Width of a packet load, in bytes (loads are big-endian).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Size {
    /// One byte (`ldb`).
    Byte = 1,
    /// Two bytes, big-endian (`ldh`).
    Half = 2,
    /// Four bytes, big-endian (`ld`).
    Word = 4,
}

impl Size {
    /// The width in bytes.
    pub fn bytes(self) -> u32 {
        self as u32
    }

    /// The size for a width of 1, 2 or 4 bytes.
    pub fn from_bytes(n: u32) -> Option<Size> {
        match n {
            1 => Some(Size::Byte),
            2 => Some(Size::Half),
            4 => Some(Size::Word),
            _ => None,
        }
    }
}

/// A binary arithmetic operator on unsigned 32-bit values (wrapping).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    /// Addition.
    Add,
    /// Subtraction.
    Sub,
    /// Multiplication.
    Mul,
    /// Division; a zero divisor aborts.
    Div,
    /// Remainder; a zero divisor aborts.
    Mod,
    /// Bitwise and.
    And,
    /// Bitwise or.
    Or,
    /// Bitwise exclusive or.
    Xor,
    /// Left shift; the shift count is taken modulo 32 (as x86 and the Linux
    /// kernel do for a register count).
    Shl,
    /// Logical right shift; the shift count is taken modulo 32.
    Shr,
}

/// A 32-bit unsigned value computed from the packet.
///
/// Equality is structural (as derived), but compares the cheap parts first
/// (a load's offset before its index, an operation's right operand, often
/// a constant, before its left one): the optimizer compares many values
/// that differ only there.
// The same relation as a derived `PartialEq` (only the order of the field
// comparisons differs), so the derived `Hash` agrees with it.
#[allow(clippy::derived_hash_with_manual_eq)]
#[derive(Clone, Debug, Eq, Hash)]
pub enum Value {
    /// A constant.
    Const(u32),
    /// The packet's wire length (`len`; `ld #pktlen`).
    Len,
    /// A big-endian load of `size` bytes at offset `index + offset`, where
    /// `index` (if any) is a computed value. The sum is computed without
    /// wrapping: the load is in bounds iff `index + offset + size <= caplen`
    /// in exact arithmetic; otherwise the whole filter aborts (rejects).
    Load {
        /// Width of the load.
        size: Size,
        /// Computed part of the offset (cBPF's X register), if any.
        index: Option<Box<Value>>,
        /// Constant part of the offset.
        offset: u32,
    },
    /// `lhs op rhs`, wrapping; division/modulo by zero aborts.
    Bin(BinOp, Box<Value>, Box<Value>),
    /// Two's complement negation (wrapping).
    Neg(Box<Value>),
    /// libpcap 1.10.3's `protochain` walk over the header chain of the IPv4
    /// (`v6 == false`) or IPv6 packet whose network header starts at `nl`.
    /// Its value is the protocol number where the walk stopped, which equals
    /// `proto` exactly when the chain contains `proto`.
    ///
    /// The walk starts with the next-protocol field (IPv6: byte 6, header
    /// length 40; IPv4: byte 9, header length `4 * (u8[nl] & 0xf)`), and
    /// repeats: stop if the value is `proto` or 59 (no next header); on IPv6,
    /// for 0, 60, 43 and 44 (hop-by-hop, destination options, routing,
    /// fragment), the next value is the byte at the current header offset and
    /// the offset grows by `(next byte + 1) * 8`; for 51 (AH), the next value
    /// is the byte at the current offset and the offset *becomes*
    /// `(next byte + 2) * 4` (absolute, not added: a 1.10.3 quirk kept for
    /// compatibility); anything else stops. Loads are relative to `nl` and
    /// abort as usual. At most [`PROTOCHAIN_MAX_STEPS`] headers are skipped:
    /// a walk needing one more aborts (rejects the packet), where libpcap's
    /// own loop can run forever on a crafted AH chain.
    Protochain {
        /// IPv6 (`true`) or IPv4 (`false`).
        v6: bool,
        /// The protocol looked for.
        proto: u8,
        /// Offset of the network-layer header.
        nl: u32,
    },
}

/// How many headers a [`Value::Protochain`] walk may skip before it aborts:
/// the bound sift's interpreter puts on backward jumps (64, as later
/// libpcap releases), so that libpcap's looping program and sift's
/// unrolled one agree on every packet.
pub const PROTOCHAIN_MAX_STEPS: u32 = 64;

/// Comparison of a [`Test`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CmpOp {
    /// `lhs == rhs`.
    Eq,
    /// `lhs > rhs` (unsigned).
    Gt,
    /// `lhs >= rhs` (unsigned).
    Ge,
    /// `(lhs & rhs) != 0` (cBPF `jset`).
    Set,
}

/// A leaf of the predicate tree: compute both values, then compare.
///
/// Equality is structural; the comparison and the right operand (usually a
/// constant) are compared before the left operand.
// The same relation as a derived `PartialEq` (see `Value`).
#[allow(clippy::derived_hash_with_manual_eq)]
#[derive(Clone, Debug, Eq, Hash)]
pub struct Test {
    /// Left operand (cBPF's accumulator).
    pub lhs: Value,
    /// The comparison.
    pub op: CmpOp,
    /// Right operand (a constant `k` or the X register in cBPF).
    pub rhs: Value,
}

/// A boolean predicate over a packet, evaluated left to right with
/// short-circuit; see the module documentation for the abort rule.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Pred {
    /// Always holds.
    True,
    /// Never holds.
    False,
    /// Negation.
    Not(Box<Pred>),
    /// All hold, tried in order, stopping at the first that fails.
    And(Vec<Pred>),
    /// One holds, tried in order, stopping at the first that holds.
    Or(Vec<Pred>),
    /// A comparison.
    Test(Test),
}

impl PartialEq for Value {
    #[inline]
    fn eq(&self, other: &Value) -> bool {
        match (self, other) {
            (Value::Const(a), Value::Const(b)) => a == b,
            (Value::Len, Value::Len) => true,
            (Value::Load { size, index, offset }, Value::Load { size: s, index: i, offset: o }) => {
                offset == o && size == s && index == i
            }
            (Value::Bin(op, a, b), Value::Bin(p, c, d)) => op == p && b == d && a == c,
            (Value::Neg(a), Value::Neg(b)) => a == b,
            (
                Value::Protochain { v6, proto, nl },
                Value::Protochain { v6: w6, proto: p, nl: n },
            ) => v6 == w6 && proto == p && nl == n,
            _ => false,
        }
    }
}

impl PartialEq for Test {
    #[inline]
    fn eq(&self, other: &Test) -> bool {
        self.op == other.op && self.rhs == other.rhs && self.lhs == other.lhs
    }
}

/// Convenience constructors used by lowering.
impl Value {
    /// A load of `size` bytes at the constant offset `offset`.
    pub fn load(size: Size, offset: u32) -> Value {
        Value::Load { size, index: None, offset }
    }

    /// A load of `size` bytes at `index + offset`.
    pub fn load_indexed(size: Size, index: Value, offset: u32) -> Value {
        Value::Load { size, index: Some(Box::new(index)), offset }
    }

    /// `self op rhs`.
    pub fn bin(self, op: BinOp, rhs: Value) -> Value {
        Value::Bin(op, Box::new(self), Box::new(rhs))
    }

    /// The IPv4 header length idiom `4 * (pkt[offset] & 0xf)` (cBPF
    /// `ldxb 4*([offset]&0xf)`).
    pub fn ipv4_header_len(offset: u32) -> Value {
        Value::load(Size::Byte, offset)
            .bin(BinOp::And, Value::Const(0xf))
            .bin(BinOp::Shl, Value::Const(2))
    }
}

impl Pred {
    /// A test `lhs op rhs`.
    pub fn test(lhs: Value, op: CmpOp, rhs: Value) -> Pred {
        Pred::Test(Test { lhs, op, rhs })
    }

    /// `lhs == k`.
    pub fn eq(lhs: Value, k: u32) -> Pred {
        Pred::test(lhs, CmpOp::Eq, Value::Const(k))
    }

    /// Negation.
    #[allow(clippy::should_implement_trait)]
    pub fn not(self) -> Pred {
        Pred::Not(Box::new(self))
    }

    /// `self and other`, flattening nested conjunctions (evaluation order is
    /// unchanged: `self` first).
    pub fn and(self, other: Pred) -> Pred {
        Pred::And(self.joined(other, true))
    }

    /// `self or other`, flattening nested disjunctions (evaluation order is
    /// unchanged: `self` first).
    pub fn or(self, other: Pred) -> Pred {
        Pred::Or(self.joined(other, false))
    }

    /// Prepares `self` for `calls` calls of [`and`](Self::and) (`is_and`)
    /// or [`or`](Self::or) with it on the left, expecting each to add as
    /// many operands as `self` has (it is the first of a list of similar
    /// operands): a conjunction (disjunction) gets the room; anything else
    /// becomes the only operand of one with that room. What those calls
    /// build is unchanged; it just does not grow step by step. The result
    /// is not a well-formed predicate until one of them is made.
    pub(crate) fn with_room(self, is_and: bool, calls: usize) -> Pred {
        let want = self.operands_in(is_and).saturating_mul(calls.saturating_add(1));
        let v = match self {
            Pred::And(mut v) if is_and => {
                reserve_exact(&mut v, want);
                v
            }
            Pred::Or(mut v) if !is_and => {
                reserve_exact(&mut v, want);
                v
            }
            p => {
                let mut v = Vec::with_capacity(want);
                v.push(p);
                v
            }
        };
        Pred::junction(is_and, v)
    }

    /// `ps[0] and ps[1] and ...`: the same predicate as chaining
    /// [`and`](Self::and) calls left to right (nested conjunctions
    /// flattened one level), built in one vector of the exact size. One
    /// operand is returned as it is; none is [`Pred::True`].
    #[inline]
    pub fn all<const N: usize>(ps: [Pred; N]) -> Pred {
        Pred::chain(ps, true)
    }

    /// `ps[0] or ps[1] or ...`: the same predicate as chaining
    /// [`or`](Self::or) calls left to right (nested disjunctions flattened
    /// one level), built in one vector of the exact size. One operand is
    /// returned as it is; none is [`Pred::False`].
    #[inline]
    pub fn any<const N: usize>(ps: [Pred; N]) -> Pred {
        Pred::chain(ps, false)
    }

    /// The conjunction (`is_and`) or disjunction of the operands `v`.
    #[inline]
    fn junction(is_and: bool, v: Vec<Pred>) -> Pred {
        if is_and {
            Pred::And(v)
        } else {
            Pred::Or(v)
        }
    }

    /// The operands `self` contributes to a conjunction (`is_and`) or
    /// disjunction: its own operands if it is one, else itself.
    #[inline]
    fn operands_in(&self, is_and: bool) -> usize {
        match self {
            Pred::And(v) if is_and => v.len(),
            Pred::Or(v) if !is_and => v.len(),
            _ => 1,
        }
    }

    /// [`all`](Self::all) (`is_and`) or [`any`](Self::any).
    #[inline]
    fn chain<const N: usize>(mut ps: [Pred; N], is_and: bool) -> Pred {
        if N < 2 {
            let empty = if is_and { Pred::True } else { Pred::False };
            return ps.into_iter().next().unwrap_or(empty);
        }
        let len = ps.iter().map(|p| p.operands_in(is_and)).sum();
        let mut v = Vec::with_capacity(len);
        // Taken out in place (an iterator by value would copy the array
        // first).
        for p in &mut ps {
            match p {
                Pred::And(w) if is_and => v.append(w),
                Pred::Or(w) if !is_and => v.append(w),
                p => v.push(std::mem::replace(p, Pred::True)),
            }
        }
        Pred::junction(is_and, v)
    }

    /// The operands of `self and other` (`is_and`) or `self or other`, in
    /// order, flattened one level. A vector of up to [`EXACT_OPERANDS`]
    /// operands has room for exactly its operands (most of what lowering
    /// builds has two: small blocks, the allocator's fastest free lists);
    /// a longer one grows by doubling (a filter's long `and`/`or` chains).
    /// A vector that must grow is moved to a new block rather than
    /// reallocated (glibc's `realloc` bypasses its per-thread cache).
    fn joined(self, other: Pred, is_and: bool) -> Vec<Pred> {
        // Written to move each (56-byte) operand once.
        let mut v = match self {
            Pred::And(v) if is_and => v,
            Pred::Or(v) if !is_and => v,
            p => match other {
                Pred::And(w) if is_and => return prepended(p, w),
                Pred::Or(w) if !is_and => return prepended(p, w),
                q => return vec![p, q],
            },
        };
        match other {
            Pred::And(mut w) if is_and => {
                reserve(&mut v, w.len());
                v.append(&mut w);
            }
            Pred::Or(mut w) if !is_and => {
                reserve(&mut v, w.len());
                v.append(&mut w);
            }
            q => {
                reserve(&mut v, 1);
                v.push(q);
            }
        }
        v
    }
}

/// The room for `len` operands where `more` are added to `len - more`:
/// exactly `len` up to [`EXACT_OPERANDS`], else at least double `cap`.
fn grown(cap: usize, len: usize) -> usize {
    if len <= EXACT_OPERANDS {
        len
    } else {
        len.max(2 * cap)
    }
}

/// `p` followed by the operands of `w`.
fn prepended(p: Pred, mut w: Vec<Pred>) -> Vec<Pred> {
    if w.capacity() > w.len() {
        w.insert(0, p);
        return w;
    }
    let mut v = Vec::with_capacity(grown(w.capacity(), w.len() + 1));
    v.push(p);
    v.append(&mut w);
    v
}

/// Makes room for `more` operands in `v` (see [`grown`]), moving them to a
/// new block if they do not fit.
#[inline]
fn reserve(v: &mut Vec<Pred>, more: usize) {
    if v.capacity() - v.len() < more {
        reserve_exact(v, grown(v.capacity(), v.len() + more));
    }
}

/// Gives `v` room for `cap` operands at least, moving them to a new block
/// of exactly that room if needed.
fn reserve_exact(v: &mut Vec<Pred>, cap: usize) {
    if v.capacity() < cap {
        let mut n = Vec::with_capacity(cap);
        n.append(v);
        *v = n;
    }
}

/// Up to how many operands [`Pred::and`] and [`Pred::or`] size a
/// conjunction's or disjunction's vector exactly.
const EXACT_OPERANDS: usize = 4;

impl fmt::Display for BinOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Mod => "%",
            BinOp::And => "&",
            BinOp::Or => "|",
            BinOp::Xor => "^",
            BinOp::Shl => "<<",
            BinOp::Shr => ">>",
        })
    }
}

impl fmt::Display for CmpOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CmpOp::Eq => "==",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
            CmpOp::Set => "&",
        })
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Const(k) if *k < 10 => write!(f, "{k}"),
            Value::Const(k) => write!(f, "{k:#x}"),
            Value::Len => f.write_str("len"),
            Value::Load { size, index, offset } => {
                let w = match size {
                    Size::Byte => "u8",
                    Size::Half => "u16",
                    Size::Word => "u32",
                };
                match index {
                    None => write!(f, "{w}[{offset}]"),
                    Some(i) => write!(f, "{w}[{i} + {offset}]"),
                }
            }
            Value::Bin(op, a, b) => write!(f, "({a} {op} {b})"),
            Value::Neg(a) => write!(f, "-{a}"),
            Value::Protochain { v6, proto, nl } => {
                let ip = if *v6 { "ip6" } else { "ip" };
                write!(f, "protochain_{ip}({proto}, nl {nl})")
            }
        }
    }
}

impl fmt::Display for Test {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.op {
            CmpOp::Set => write!(f, "{} & {} != 0", self.lhs, self.rhs),
            op => write!(f, "{} {op} {}", self.lhs, self.rhs),
        }
    }
}

impl Pred {
    fn fmt_indented(&self, f: &mut fmt::Formatter<'_>, depth: usize) -> fmt::Result {
        let pad = "  ".repeat(depth);
        match self {
            Pred::True => writeln!(f, "{pad}true"),
            Pred::False => writeln!(f, "{pad}false"),
            Pred::Test(t) => writeln!(f, "{pad}{t}"),
            Pred::Not(p) => {
                writeln!(f, "{pad}not")?;
                p.fmt_indented(f, depth + 1)
            }
            Pred::And(v) | Pred::Or(v) => {
                writeln!(f, "{pad}{}", if matches!(self, Pred::And(_)) { "and" } else { "or" })?;
                v.iter().try_for_each(|p| p.fmt_indented(f, depth + 1))
            }
        }
    }
}

/// Prints the tree one node per line, children indented under `and`, `or`
/// and `not`.
impl fmt::Display for Pred {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.fmt_indented(f, 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Leaves, conjunctions, disjunctions and negations of a few sizes.
    fn samples() -> Vec<Pred> {
        let t = |k| Pred::eq(Value::load(Size::Byte, k), k);
        vec![
            t(1),
            Pred::True,
            Pred::And(vec![t(2), t(3)]),
            Pred::Or(vec![t(4), t(5), t(6)]),
            Pred::And(Vec::new()),
            t(7).not(),
            Pred::Or(vec![Pred::And(vec![t(8), t(9)]), t(10)]),
        ]
    }

    #[test]
    fn all_and_any_are_chains_of_and_and_or() {
        for a in samples() {
            assert_eq!(Pred::all([a.clone()]), a);
            assert_eq!(Pred::any([a.clone()]), a);
            for b in samples() {
                assert_eq!(Pred::all([a.clone(), b.clone()]), a.clone().and(b.clone()));
                assert_eq!(Pred::any([a.clone(), b.clone()]), a.clone().or(b.clone()));
                for c in samples() {
                    let all = Pred::all([a.clone(), b.clone(), c.clone()]);
                    assert_eq!(all, a.clone().and(b.clone()).and(c.clone()));
                    let any = Pred::any([a.clone(), b.clone(), c.clone()]);
                    assert_eq!(any, a.clone().or(b.clone()).or(c.clone()));
                    if let (Pred::And(v), Pred::Or(w)) = (&all, &any) {
                        assert_eq!((v.capacity(), w.capacity()), (v.len(), w.len()));
                    }
                }
            }
        }
        assert_eq!(Pred::all([]), Pred::True);
        assert_eq!(Pred::any([]), Pred::False);
    }

    #[test]
    fn room_does_not_change_chains() {
        for calls in 1..4 {
            for a in samples() {
                for b in samples() {
                    let (mut x, mut y) = (a.clone(), a.clone());
                    let (mut xr, mut yr) = (a.clone().with_room(true, calls), a.clone().with_room(false, calls));
                    for _ in 0..calls {
                        (x, y) = (x.and(b.clone()), y.or(b.clone()));
                        (xr, yr) = (xr.and(b.clone()), yr.or(b.clone()));
                    }
                    assert_eq!((xr, yr), (x, y));
                }
            }
        }
    }

    #[test]
    fn small_operand_lists_are_sized_exactly() {
        let t = |k| Pred::eq(Value::load(Size::Byte, k), k);
        let mut p = t(0).or(t(1));
        for n in 2..40 {
            let Pred::Or(v) = &p else { unreachable!() };
            assert_eq!(v.len(), n);
            if n <= EXACT_OPERANDS {
                assert_eq!(v.capacity(), n);
            }
            p = p.or(t(n as u32));
        }
        let Pred::And(v) = t(0).and(Pred::And(vec![t(1), t(2)])) else { unreachable!() };
        assert_eq!((v.len(), v.capacity()), (3, 3));
    }
}
