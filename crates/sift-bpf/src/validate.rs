//! The Linux kernel's classic-BPF validator.
//!
//! [`validate`] accepts exactly the programs `SO_ATTACH_FILTER` accepts
//! (`bpf_check_classic()` and `check_load_and_stores()` in
//! `net/core/filter.c`):
//!
//! * 1 to 4096 instructions;
//! * only the 49 known opcodes (the kernel's list, which includes
//!   `ldx #pktlen`, code 0x81);
//! * `div #0` and `mod #0` are rejected, and so are constant shifts by 32 or
//!   more;
//! * scratch memory indexes (`ld M[k]`, `ldx M[k]`, `st`, `stx`) below 16;
//! * every jump lands inside the program (all jumps are forward: `ja`'s `k`
//!   is unsigned);
//! * absolute loads at `k >= SKF_AD_OFF` (0xfffff000) must name a known
//!   ancillary field (`[proto]`, `[type]`, ... `[vlan_tpid]`);
//! * the last instruction is a `ret`;
//! * no scratch word is read before it is written. This is the kernel's
//!   linear scan, which is conservative: the state after a `ret` flows into
//!   the next instruction as if it were reachable from there.

use crate::insn::{op, Insn};
use crate::text::{ancillary_name, image, SKF_AD_OFF};
use std::fmt;

/// Why a program is invalid.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ValidateErrorKind {
    /// The program has no instructions.
    Empty,
    /// The program is longer than the limit.
    TooLong {
        /// The program's length.
        len: usize,
        /// The largest length allowed.
        max: usize,
    },
    /// An opcode that is not a classic BPF instruction.
    UnknownOpcode,
    /// `div #0` or `mod #0`.
    DivisionByZero,
    /// `lsh #k` or `rsh #k` with `k >= 32`.
    ShiftTooLarge,
    /// A scratch memory index of 16 or more.
    BadScratchIndex,
    /// A jump past the end of the program (`target` counts from 0).
    JumpOutOfRange {
        /// Where the jump would go.
        target: i64,
    },
    /// An absolute load at an unknown `SKF_AD_OFF + n` ancillary offset.
    UnknownAncillary,
    /// The last instruction is not a `ret`.
    NoFinalReturn,
    /// A scratch word read on a path where it was not written before.
    UninitializedScratch {
        /// The scratch index.
        index: u32,
    },
}

/// An invalid program: which instruction (if the error is about one) and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ValidateError {
    /// Index of the offending instruction (`None` for errors about the whole
    /// program: [`ValidateErrorKind::Empty`], [`ValidateErrorKind::TooLong`]).
    pub pc: Option<usize>,
    /// The offending instruction itself.
    pub insn: Option<Insn>,
    /// What is wrong.
    pub kind: ValidateErrorKind,
}

impl ValidateError {
    pub(crate) fn program(kind: ValidateErrorKind) -> ValidateError {
        ValidateError { pc: None, insn: None, kind }
    }

    pub(crate) fn at(pc: usize, insn: Insn, kind: ValidateErrorKind) -> ValidateError {
        ValidateError { pc: Some(pc), insn: Some(insn), kind }
    }
}

impl fmt::Display for ValidateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let (Some(pc), Some(insn)) = (self.pc, self.insn) {
            let text = image(&insn, pc);
            write!(f, "instruction {pc} `{}`: ", text.trim_end().replace('\t', " "))?;
        }
        match self.kind {
            ValidateErrorKind::Empty => f.write_str("the program is empty"),
            ValidateErrorKind::TooLong { len, max } => {
                write!(f, "the program has {len} instructions, more than the limit of {max}")
            }
            ValidateErrorKind::UnknownOpcode => {
                let code = self.insn.map_or(0, |i| i.code);
                write!(f, "unknown opcode {code:#x}")
            }
            ValidateErrorKind::DivisionByZero => f.write_str("division by the constant 0"),
            ValidateErrorKind::ShiftTooLarge => f.write_str("constant shift by 32 or more"),
            ValidateErrorKind::BadScratchIndex => f.write_str("scratch memory index out of range (0..=15)"),
            ValidateErrorKind::JumpOutOfRange { target } => {
                write!(f, "jump target {target} is outside the program")
            }
            ValidateErrorKind::UnknownAncillary => f.write_str("unknown ancillary data offset"),
            ValidateErrorKind::NoFinalReturn => f.write_str("the last instruction is not a ret"),
            ValidateErrorKind::UninitializedScratch { index } => {
                write!(f, "M[{index}] may be read before it is written")
            }
        }
    }
}

impl std::error::Error for ValidateError {}

/// The opcodes the Linux kernel accepts in a classic BPF program (the same
/// set libpcap's `bpf_filter` runs).
pub const KNOWN_OPCODES: [u16; 49] = {
    use op::*;
    [
        ALU | ADD | K, ALU | ADD | X, ALU | SUB | K, ALU | SUB | X,
        ALU | MUL | K, ALU | MUL | X, ALU | DIV | K, ALU | DIV | X,
        ALU | MOD | K, ALU | MOD | X, ALU | AND | K, ALU | AND | X,
        ALU | OR | K, ALU | OR | X, ALU | XOR | K, ALU | XOR | X,
        ALU | LSH | K, ALU | LSH | X, ALU | RSH | K, ALU | RSH | X,
        ALU | NEG,
        LD | W | ABS, LD | H | ABS, LD | B | ABS, LD | W | LEN,
        LD | W | IND, LD | H | IND, LD | B | IND, LD | IMM, LD | MEM,
        LDX | W | LEN, LDX | B | MSH, LDX | IMM, LDX | MEM,
        ST, STX, MISC | TAX, MISC | TXA, RET | K, RET | A,
        JMP | JA, JMP | JEQ | K, JMP | JEQ | X, JMP | JGE | K, JMP | JGE | X,
        JMP | JGT | K, JMP | JGT | X, JMP | JSET | K, JMP | JSET | X,
    ]
};

/// [`KNOWN_OPCODES`] as a table indexed by opcode (every one is below
/// 0x100): a lookup instead of a search per instruction.
const IS_KNOWN: [bool; 256] = {
    let mut table = [false; 256];
    let mut i = 0;
    while i < KNOWN_OPCODES.len() {
        table[KNOWN_OPCODES[i] as usize] = true;
        i += 1;
    }
    table
};

/// Is `code` one of the [`KNOWN_OPCODES`]?
pub fn is_known_opcode(code: u16) -> bool {
    IS_KNOWN.get(usize::from(code)).copied().unwrap_or(false)
}

/// Is `code` a conditional jump?
pub(crate) fn is_cond_jump(code: u16) -> bool {
    code & 0x07 == op::JMP && code != op::JMP | op::JA && is_known_opcode(code)
}

/// Checks `prog` with the Linux kernel's rules for classic BPF socket filters
/// (see the module documentation). The first problem found is reported, in
/// the kernel's order: length, then each instruction in turn, then the final
/// `ret`, then scratch memory initialization.
pub fn validate(prog: &[Insn]) -> Result<(), ValidateError> {
    use op::*;
    let len = prog.len();
    if len == 0 {
        return Err(ValidateError::program(ValidateErrorKind::Empty));
    }
    if len > MAXINSNS {
        return Err(ValidateError::program(ValidateErrorKind::TooLong { len, max: MAXINSNS }));
    }
    for (pc, &insn) in prog.iter().enumerate() {
        let fail = |kind| Err(ValidateError::at(pc, insn, kind));
        let code = insn.code;
        if !is_known_opcode(code) {
            return fail(ValidateErrorKind::UnknownOpcode);
        }
        if code == ALU | DIV | K || code == ALU | MOD | K {
            if insn.k == 0 {
                return fail(ValidateErrorKind::DivisionByZero);
            }
        } else if code == ALU | LSH | K || code == ALU | RSH | K {
            if insn.k >= 32 {
                return fail(ValidateErrorKind::ShiftTooLarge);
            }
        } else if code == LD | MEM || code == LDX | MEM || code == ST || code == STX {
            if insn.k >= MEMWORDS {
                return fail(ValidateErrorKind::BadScratchIndex);
            }
        } else if code == JMP | JA {
            let target = pc as i64 + 1 + i64::from(insn.k);
            if target >= len as i64 {
                return fail(ValidateErrorKind::JumpOutOfRange { target });
            }
        } else if code == LD | W | ABS || code == LD | H | ABS || code == LD | B | ABS {
            // (Before the conditional jumps: the cases are disjoint, and
            // these loads are common.)
            if insn.k >= SKF_AD_OFF && ancillary_name(insn.k).is_none() {
                return fail(ValidateErrorKind::UnknownAncillary);
            }
        } else if is_cond_jump(code) {
            for off in [insn.jt, insn.jf] {
                let target = pc as i64 + 1 + i64::from(off);
                if target >= len as i64 {
                    return fail(ValidateErrorKind::JumpOutOfRange { target });
                }
            }
        }
    }
    let last = prog[len - 1];
    if last.code != RET | K && last.code != RET | A {
        return Err(ValidateError::at(len - 1, last, ValidateErrorKind::NoFinalReturn));
    }
    check_scratch(prog)
}

/// Does the program read scratch memory (`ld M[k]`, `ldx M[k]`)? Only such
/// a program can fail [`check_scratch`].
pub(crate) fn reads_scratch(prog: &[Insn]) -> bool {
    prog.iter().any(|i| i.code == op::LD | op::MEM || i.code == op::LDX | op::MEM)
}

/// The kernel's `check_load_and_stores()`: one pass in program order, with
/// the set of written scratch words flowing both along jumps and into the
/// next instruction. Jump targets are known to be in range.
pub(crate) fn check_scratch(prog: &[Insn]) -> Result<(), ValidateError> {
    use op::*;
    // Only scratch loads can fail the check.
    if !reads_scratch(prog) {
        return Ok(());
    }
    let mut masks = vec![u16::MAX; prog.len()];
    let mut valid: u16 = 0;
    for (pc, &insn) in prog.iter().enumerate() {
        valid &= masks[pc];
        let bit = 1u16.checked_shl(insn.k).unwrap_or(0);
        let code = insn.code;
        if code == ST || code == STX {
            valid |= bit;
        } else if code == LD | MEM || code == LDX | MEM {
            if valid & bit == 0 {
                return Err(ValidateError::at(pc, insn, ValidateErrorKind::UninitializedScratch { index: insn.k }));
            }
        } else if code == JMP | JA {
            if let Some(m) = usize::try_from(insn.k).ok().and_then(|k| masks.get_mut(pc + 1 + k)) {
                *m &= valid;
            }
            valid = u16::MAX;
        } else if is_cond_jump(code) {
            for off in [insn.jt, insn.jf] {
                if let Some(m) = masks.get_mut(pc + 1 + usize::from(off)) {
                    *m &= valid;
                }
            }
            valid = u16::MAX;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use op::*;

    fn s(code: u16, k: u32) -> Insn {
        Insn::stmt(code, k)
    }
    fn j(code: u16, k: u32, jt: u8, jf: u8) -> Insn {
        Insn::jump(code, k, jt, jf)
    }
    fn kind(prog: &[Insn]) -> Option<(Option<usize>, ValidateErrorKind)> {
        validate(prog).err().map(|e| (e.pc, e.kind))
    }
    const RET0: Insn = Insn::stmt(RET | K, 0);

    #[test]
    fn minimal_programs() {
        assert_eq!(kind(&[RET0]), None);
        assert_eq!(kind(&[s(RET | A, 0)]), None);
        assert_eq!(kind(&[]), Some((None, ValidateErrorKind::Empty)));
    }

    #[test]
    fn length_limit() {
        let mut p = vec![s(LD | IMM, 1); MAXINSNS - 1];
        p.push(RET0);
        assert_eq!(kind(&p), None);
        p.insert(0, s(LD | IMM, 1));
        assert_eq!(kind(&p), Some((None, ValidateErrorKind::TooLong { len: 4097, max: 4096 })));
    }

    #[test]
    fn opcodes() {
        let known: Vec<u16> = (0..=u16::MAX).filter(|&c| is_known_opcode(c)).collect();
        assert_eq!(known.len(), 49);
        assert!(is_known_opcode(LDX | W | LEN));
        for bad in [0x08u16, 0x0e, 0x105, 0x0f, 0x8c, 0x17, 0xffff] {
            assert_eq!(kind(&[s(bad, 0), RET0]), Some((Some(0), ValidateErrorKind::UnknownOpcode)), "{bad:#x}");
        }
    }

    #[test]
    fn constant_division_by_zero() {
        for code in [ALU | DIV | K, ALU | MOD | K] {
            assert_eq!(kind(&[s(code, 0), RET0]), Some((Some(0), ValidateErrorKind::DivisionByZero)));
            assert_eq!(kind(&[s(code, 3), RET0]), None);
        }
        // Division by X is checked at run time.
        assert_eq!(kind(&[s(ALU | DIV | X, 0), RET0]), None);
    }

    #[test]
    fn constant_shifts() {
        for code in [ALU | LSH | K, ALU | RSH | K] {
            assert_eq!(kind(&[s(code, 31), RET0]), None);
            assert_eq!(kind(&[s(code, 32), RET0]), Some((Some(0), ValidateErrorKind::ShiftTooLarge)));
        }
    }

    #[test]
    fn scratch_index() {
        for code in [LD | MEM, LDX | MEM, ST, STX] {
            let p = [s(ST, 15), s(code, 16), RET0];
            assert_eq!(kind(&p), Some((Some(1), ValidateErrorKind::BadScratchIndex)), "{code:#x}");
        }
        assert_eq!(kind(&[s(ST, 15), s(LD | MEM, 15), RET0]), None);
    }

    #[test]
    fn jumps_stay_inside() {
        assert_eq!(kind(&[s(JMP | JA, 0), RET0]), None);
        assert_eq!(kind(&[s(JMP | JA, 1), RET0]), Some((Some(0), ValidateErrorKind::JumpOutOfRange { target: 2 })));
        assert_eq!(
            kind(&[s(JMP | JA, u32::MAX), RET0]),
            Some((Some(0), ValidateErrorKind::JumpOutOfRange { target: 1 << 32 }))
        );
        assert_eq!(kind(&[j(JMP | JEQ | K, 0, 1, 0), RET0, RET0]), None);
        assert_eq!(kind(&[j(JMP | JEQ | K, 0, 2, 0), RET0, RET0]), Some((Some(0), ValidateErrorKind::JumpOutOfRange { target: 3 })));
        assert_eq!(kind(&[j(JMP | JSET | X, 0, 0, 2), RET0, RET0]), Some((Some(0), ValidateErrorKind::JumpOutOfRange { target: 3 })));
    }

    #[test]
    fn ancillary_loads() {
        assert_eq!(kind(&[s(LD | H | ABS, 0xfffff004), RET0]), None);
        assert_eq!(kind(&[s(LD | B | ABS, 0xfffff03c), RET0]), None);
        assert_eq!(kind(&[s(LD | W | ABS, 0xfffff040), RET0]), Some((Some(0), ValidateErrorKind::UnknownAncillary)));
        assert_eq!(kind(&[s(LD | W | ABS, 0xfffff001), RET0]), Some((Some(0), ValidateErrorKind::UnknownAncillary)));
        // SKF_NET_OFF / SKF_LL_OFF and other negative offsets are not ancillary.
        assert_eq!(kind(&[s(LD | W | ABS, 0xfff00000), RET0]), None);
        assert_eq!(kind(&[s(LD | W | ABS, 0x80000000), RET0]), None);
        // Indexed loads are not checked.
        assert_eq!(kind(&[s(LD | W | IND, 0xffffffff), RET0]), None);
    }

    #[test]
    fn final_return() {
        assert_eq!(kind(&[s(LD | IMM, 0)]), Some((Some(0), ValidateErrorKind::NoFinalReturn)));
        assert_eq!(kind(&[RET0, s(JMP | JA, 0)]), Some((Some(1), ValidateErrorKind::JumpOutOfRange { target: 2 })));
    }

    #[test]
    fn scratch_written_before_read() {
        let uninit = |i| Some((Some(1), ValidateErrorKind::UninitializedScratch { index: i }));
        assert_eq!(kind(&[s(LD | IMM, 0), s(LD | MEM, 3), RET0]), uninit(3));
        assert_eq!(kind(&[s(LD | IMM, 0), s(LDX | MEM, 0), RET0]), uninit(0));
        assert_eq!(kind(&[s(STX, 3), s(LDX | MEM, 3), RET0]), None);
        // Written on one path only.
        let p = [
            j(JMP | JEQ | K, 0, 0, 1),
            s(ST, 2),
            s(LD | MEM, 2),
            RET0,
        ];
        assert_eq!(kind(&p).map(|k| k.1), Some(ValidateErrorKind::UninitializedScratch { index: 2 }));
        // Written on both paths.
        let p = [
            j(JMP | JEQ | K, 0, 0, 2),
            s(ST, 2),
            s(JMP | JA, 1),
            s(ST, 2),
            s(LD | MEM, 2),
            RET0,
        ];
        assert_eq!(kind(&p), None);
        // Skipped by an ja.
        let p = [s(JMP | JA, 1), s(ST, 2), s(LD | MEM, 2), RET0];
        assert_eq!(kind(&p).map(|k| k.1), Some(ValidateErrorKind::UninitializedScratch { index: 2 }));
        // The kernel's scan lets the state before a `ret` flow into the next
        // instruction even when only jumps reach it: unreachable code reading
        // scratch memory is rejected.
        let p = [s(RET | K, 1), s(LD | MEM, 0), RET0];
        assert_eq!(kind(&p).map(|k| k.1), Some(ValidateErrorKind::UninitializedScratch { index: 0 }));
    }

    #[test]
    fn libpcap_bug_834_shape_is_rejected() {
        // `ldx M[0]` before any store, as libpcap 1.10.3 emits for `pppoes`
        // on IEEE802_11_RADIO.
        let p = [s(LDX | MEM, 0), s(LD | B | IND, 0), RET0];
        assert_eq!(kind(&p), Some((Some(0), ValidateErrorKind::UninitializedScratch { index: 0 })));
    }

    #[test]
    fn error_messages() {
        let e = validate(&[s(LD | IMM, 0), s(LD | MEM, 3), RET0]).unwrap_err();
        assert_eq!(e.to_string(), "instruction 1 `(001) ld       M[3]`: M[3] may be read before it is written");
        let e = validate(&[j(JMP | JEQ | K, 5, 9, 0), RET0]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "instruction 0 `(000) jeq      #0x5             jt 10 jf 1`: jump target 10 is outside the program"
        );
        assert_eq!(validate(&[]).unwrap_err().to_string(), "the program is empty");
    }
}
