//! Arithmetic relations (`arth relop arth`), packet accessors
//! (`proto[expr:size]`), `len`, `less`, `greater`, and the small
//! link-header primitives (`byte`, `inbound`/`outbound`, `ifindex`).
//!
//! libpcap compiles an arithmetic expression into straight-line statements
//! (through scratch registers) plus, for accessors of protocols above the
//! link layer, a chain of protocol-check blocks (`struct arth`'s `b`). A
//! relation ANDs the checks of the left side, then of the right side, then
//! one block holding every statement of both sides; so here a relation is
//! `and(checks..., Test(lhs, op, rhs))`, the test's values holding all the
//! loads. libpcap quirks reproduced:
//!
//! - `a op b` keeps only the protocol checks of `a` (`gen_arth` drops those
//!   of `b`), so `1 + tcp[0] = 0` checks nothing;
//! - a transport accessor checks `ip`, then its index's checks, then the
//!   protocol (IPv4 or IPv6!), then "first fragment";
//! - there is no constant folding, but a divisor, modulus or shift count
//!   whose *first statement* loads a constant is checked: `x / 0`,
//!   `x / (0 + 1)` and even `x / ip[0]` (its index 0 is loaded first) are
//!   "division by zero", `x << ip[40]` is "shift by more than 31 bits";
//! - at most 16 scratch registers: deeper right-nested arithmetic is
//!   "too many registers needed to evaluate expression";
//! - `lsh x`/`rsh x` by 32 or more give 0 in `bpf_filter`, whereas the IR's
//!   shifts take the count modulo 32: shifts by anything but a constant
//!   below 32 are masked accordingly (see `shift`).

use super::link::{LinkKind, Rel};
use super::{Lowerer, Result};
use crate::pred::{BinOp, CmpOp, Pred, Size, Value};
use sift_syntax::ast::{Arith, ArithOp, ByteOp, ProtoQual, RelOp};
use sift_syntax::Span;

/// cBPF scratch memory words (`BPF_MEMWORDS`).
const MEMWORDS: usize = 16;

/// A lowered arithmetic expression (libpcap's `struct arth`).
struct Arth {
    /// The computed value.
    value: Value,
    /// Protocol checks to run before the relation.
    checks: Option<Pred>,
    /// The constant loaded by the first statement, if the first statement
    /// is `ld #k` (what `gen_arth`'s divisor checks look at).
    first_imm: Option<u32>,
    /// Scratch registers needed to compute it.
    regs: usize,
}

/// A shift with libpcap's `lsh x`/`rsh x` semantics: a count of 32 or more
/// gives 0 (`bpf_filter` checks `X < 32`), whereas [`BinOp::Shl`] and
/// [`BinOp::Shr`] take the count modulo 32. A constant count below 32 needs
/// nothing more; otherwise the shifted value is masked with
/// `-(1 / ((count >> 5) + 1))`, all ones when the count is below 32 and 0
/// otherwise. The count is computed twice, which changes nothing: its loads
/// are the same, in the same test, and the divisor is never zero.
fn shift(op: BinOp, value: Value, count: Value) -> Value {
    if matches!(count, Value::Const(k) if k < 32) {
        return value.bin(op, count);
    }
    let small = Value::Const(1).bin(
        BinOp::Div,
        count.clone().bin(BinOp::Shr, Value::Const(5)).bin(BinOp::Add, Value::Const(1)),
    );
    value.bin(op, count).bin(BinOp::And, Value::Neg(Box::new(small)))
}

fn and_opt(a: Option<Pred>, b: Option<Pred>) -> Option<Pred> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.and(b)),
        (a, None) => a,
        (None, b) => b,
    }
}

impl Lowerer<'_> {
    /// `arth relop arth` (`gen_relation`).
    pub(crate) fn relation(&mut self, op: RelOp, lhs: &Arith, rhs: &Arith) -> Result<Pred> {
        let a0 = self.arith(lhs, 0)?;
        let a1 = self.arith(rhs, 0)?;
        self.check_regs(a0.regs.max(1 + a1.regs))?;
        let test = |op| Pred::test(a0.value.clone(), op, a1.value.clone());
        let t = match op {
            RelOp::Eq => test(CmpOp::Eq),
            RelOp::Ne => test(CmpOp::Eq).not(),
            RelOp::Gt => test(CmpOp::Gt),
            RelOp::Ge => test(CmpOp::Ge),
            RelOp::Lt => test(CmpOp::Ge).not(),
            RelOp::Le => test(CmpOp::Gt).not(),
        };
        Ok(match and_opt(a0.checks, a1.checks) {
            Some(c) => c.and(t),
            None => t,
        })
    }

    /// libpcap's `alloc_reg` fails when `n` more registers are needed at
    /// once besides the ones it never freed ([`Lowerer::leaked_regs`]).
    pub(crate) fn check_regs(&self, n: usize) -> Result<()> {
        if n + self.leaked_regs.get() > MEMWORDS {
            return self.err("too many registers needed to evaluate expression");
        }
        Ok(())
    }

    fn arith(&mut self, a: &Arith, depth: usize) -> Result<Arth> {
        if depth > super::MAX_DEPTH {
            return self.err(format!(
                "expression nested too deeply (more than {} levels)",
                super::MAX_DEPTH
            ));
        }
        match a {
            Arith::Num(k, _) => {
                Ok(Arth { value: Value::Const(*k), checks: None, first_imm: Some(*k), regs: 1 })
            }
            Arith::Len(_) => Ok(Arth { value: Value::Len, checks: None, first_imm: None, regs: 1 }),
            Arith::Neg(x, _) => {
                let x = self.arith(x, depth + 1)?;
                Ok(Arth { value: Value::Neg(Box::new(x.value)), ..x })
            }
            Arith::Binary { op, lhs, rhs, span } => {
                let a0 = self.arith(lhs, depth + 1)?;
                let a1 = self.arith(rhs, depth + 1)?;
                let at = |cx: &Self, msg: &str| -> Result<Arth> {
                    Err(sift_syntax::Error::new(msg, if *span == Span::default() { cx.span } else { *span }))
                };
                match (op, a1.first_imm) {
                    (ArithOp::Div, Some(0)) => return at(self, "division by zero"),
                    (ArithOp::Mod, Some(0)) => return at(self, "modulus by zero"),
                    (ArithOp::Shl | ArithOp::Shr, Some(k)) if k > 31 => {
                        return at(self, "shift by more than 31 bits")
                    }
                    _ => {}
                }
                let regs = a0.regs.max(1 + a1.regs);
                self.check_regs(regs)?;
                let op = match op {
                    ArithOp::Add => BinOp::Add,
                    ArithOp::Sub => BinOp::Sub,
                    ArithOp::Mul => BinOp::Mul,
                    ArithOp::Div => BinOp::Div,
                    ArithOp::Mod => BinOp::Mod,
                    ArithOp::And => BinOp::And,
                    ArithOp::Or => BinOp::Or,
                    ArithOp::Xor => BinOp::Xor,
                    ArithOp::Shl => BinOp::Shl,
                    ArithOp::Shr => BinOp::Shr,
                };
                let value = match op {
                    BinOp::Shl | BinOp::Shr => shift(op, a0.value, a1.value),
                    _ => a0.value.bin(op, a1.value),
                };
                Ok(Arth {
                    value,
                    checks: a0.checks,
                    first_imm: a0.first_imm,
                    regs,
                })
            }
            Arith::Load { proto, index, size, span } => {
                let idx = self.arith(index, depth + 1)?;
                let saved = self.span;
                if *span != Span::default() {
                    self.span = *span;
                }
                let r = self.accessor(*proto, idx, *size);
                self.span = saved;
                r
            }
        }
    }

    /// `proto[index:size]` (`gen_load`).
    fn accessor(&mut self, proto: ProtoQual, idx: Arth, size: u8) -> Result<Arth> {
        let regs = idx.regs.max(2);
        self.check_regs(regs)?;
        let Some(size) = Size::from_bytes(u32::from(size)) else {
            return self.err("data size must be 1, 2, or 4");
        };
        let nl = self.link.nl();
        let first_imm = idx.first_imm;
        let (value, checks) = match proto {
            ProtoQual::Radio if self.radio_available() => {
                (Value::load_indexed(size, idx.value, 0), idx.checks)
            }
            ProtoQual::Radio => return self.err("radio information not present in capture"),
            ProtoQual::Link => {
                let index = self.with_var(idx.value, self.link.hdr_var);
                (Value::load_indexed(size, index, self.link.off_linkhdr), idx.checks)
            }
            ProtoQual::Ip
            | ProtoQual::Arp
            | ProtoQual::Rarp
            | ProtoQual::Atalk
            | ProtoQual::Decnet
            | ProtoQual::Sca
            | ProtoQual::Lat
            | ProtoQual::Moprc
            | ProtoQual::Mopdl
            | ProtoQual::Ip6 => {
                let index = self.with_var(idx.value, self.link.pl_var);
                let here = self.proto_abbrev(proto)?;
                (Value::load_indexed(size, index, nl), and_opt(idx.checks, Some(here)))
            }
            ProtoQual::Sctp
            | ProtoQual::Tcp
            | ProtoQual::Udp
            | ProtoQual::Icmp
            | ProtoQual::Igmp
            | ProtoQual::Igrp
            | ProtoQual::Pim
            | ProtoQual::Vrrp
            | ProtoQual::Carp => {
                let ip = self.proto_abbrev(ProtoQual::Ip)?;
                let here = self.proto_abbrev(proto)?.and(self.ipfrag());
                let checks = match idx.checks {
                    Some(c) => ip.and(c).and(here),
                    None => ip.and(here),
                };
                let index = idx.value.bin(BinOp::Add, self.iphdrlen_x());
                (Value::load_indexed(size, index, nl), Some(checks))
            }
            ProtoQual::Icmp6 => {
                let ip6 = self.proto_abbrev(ProtoQual::Ip6)?;
                let next = self.cmp(Rel::LinkPl, 6, Size::Byte, 58);
                let checks = and_opt(idx.checks, Some(ip6)).map(|c| c.and(next));
                let index = self.with_var(idx.value, self.link.pl_var);
                (Value::load_indexed(size, index, nl.wrapping_add(40)), checks)
            }
            _ => return self.err("unsupported index operation"),
        };
        Ok(Arth { value, checks, first_imm, regs })
    }

    /// `index + var` when the header offset has a run-time part (libpcap:
    /// `ldx M[r]; ld <index>; add x; tax`).
    fn with_var(&self, index: Value, var: super::link::VarPart) -> Value {
        match self.var_value(var) {
            Some(v) => index.bin(BinOp::Add, v),
            None => index,
        }
    }

    /// `less N`: `len <= N`, built as `not (len > N)`.
    pub(crate) fn less(&self, n: u32) -> Pred {
        Pred::test(Value::Len, CmpOp::Gt, Value::Const(n)).not()
    }

    /// `greater N`: `len >= N`.
    pub(crate) fn greater(&self, n: u32) -> Pred {
        Pred::test(Value::Len, CmpOp::Ge, Value::Const(n))
    }

    /// `byte IDX op VALUE`, relative to the link-layer header, with libpcap
    /// master's semantics (a deliberate difference from 1.10.3):
    ///
    /// - VALUE above 255 is an error ("byte argument 256 greater than
    ///   maximum 255"), as in master;
    /// - `&` and `|` load the byte, as master does since commit 82724cc7:
    ///   `byte IDX & V` is `(byte & V) != 0` (the bits intersect) and
    ///   `byte IDX | V` is `(byte | V) != 0`. 1.10.3 never loads the byte
    ///   for these two and tests whatever its accumulator holds, which
    ///   depends on its code layout (0 at the start of a program).
    pub(crate) fn byte(&mut self, index: u32, op: ByteOp, value: u32) -> Result<Pred> {
        self.assert_maxval("byte argument", value, 255)?;
        let load = || self.load(Rel::LinkHdr, index, Size::Byte);
        Ok(match op {
            ByteOp::Eq => self.cmp(Rel::LinkHdr, index, Size::Byte, value),
            ByteOp::Lt => self.cmp_lt(Rel::LinkHdr, index, Size::Byte, value),
            ByteOp::Gt => self.cmp_gt(Rel::LinkHdr, index, Size::Byte, value),
            // Master: `ldb [IDX]; and #V; jeq #0` with the branches swapped.
            ByteOp::And => self.jset(Rel::LinkHdr, index, Size::Byte, value),
            // Master: `ldb [IDX]; or #V; jeq #0` with the branches swapped.
            ByteOp::Or => Pred::eq(load().bin(BinOp::Or, Value::Const(value)), 0).not(),
        })
    }

    /// `inbound` / `outbound` on Linux cooked captures.
    pub(crate) fn inbound(&mut self, outbound: bool) -> Result<Pred> {
        const LINUX_SLL_OUTGOING: u32 = 4;
        if let Some(out) = self.other_inbound(outbound) {
            return Ok(out);
        }
        let out = match self.link.kind {
            LinkKind::LinuxSll => self.cmp(Rel::LinkHdr, 0, Size::Half, LINUX_SLL_OUTGOING),
            LinkKind::LinuxSll2 => self.cmp(Rel::LinkHdr, 10, Size::Byte, LINUX_SLL_OUTGOING),
            _ if self.savefile() => {
                return self.err(format!(
                    "inbound/outbound not supported on {} when reading savefiles",
                    self.opts.linktype
                ))
            }
            _ => return self.unsupported("'inbound'/'outbound' on this link type"),
        };
        Ok(if outbound { out } else { out.not() })
    }

    /// `ifindex N` on DLT_LINUX_SLL2.
    pub(crate) fn ifindex(&mut self, n: u32) -> Result<Pred> {
        match self.link.kind {
            LinkKind::LinuxSll2 => Ok(self.cmp(Rel::LinkHdr, 4, Size::Word, n)),
            _ if self.savefile() => self.err(format!(
                "ifindex not supported on {} when reading savefiles",
                self.opts.linktype
            )),
            _ => self.unsupported("'ifindex' on this link type"),
        }
    }
}
