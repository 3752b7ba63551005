//! Classic BPF instructions (`struct sock_filter` / `struct bpf_insn`).

/// One classic BPF instruction, laid out as Linux's `struct sock_filter` and
/// libpcap's `struct bpf_insn` (so a slice of them can be handed to the kernel).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Insn {
    /// Opcode: class | size/op | mode/source.
    pub code: u16,
    /// Jump offset if true (conditional jumps), relative to the next insn.
    pub jt: u8,
    /// Jump offset if false (conditional jumps), relative to the next insn.
    pub jf: u8,
    /// Generic operand: constant, offset, scratch index.
    pub k: u32,
}

impl Insn {
    /// A non-jump instruction `code` with operand `k`.
    pub const fn stmt(code: u16, k: u32) -> Insn {
        Insn { code, jt: 0, jf: 0, k }
    }

    /// A conditional jump `code` with operand `k` and branch offsets.
    pub const fn jump(code: u16, k: u32, jt: u8, jf: u8) -> Insn {
        Insn { code, jt, jf, k }
    }
}

/// Opcode field values (as in `<linux/filter.h>` / `<pcap/bpf.h>`).
pub mod op {
    // Instruction classes.
    pub const LD: u16 = 0x00;
    pub const LDX: u16 = 0x01;
    pub const ST: u16 = 0x02;
    pub const STX: u16 = 0x03;
    pub const ALU: u16 = 0x04;
    pub const JMP: u16 = 0x05;
    pub const RET: u16 = 0x06;
    pub const MISC: u16 = 0x07;

    // ld/ldx sizes.
    pub const W: u16 = 0x00;
    pub const H: u16 = 0x08;
    pub const B: u16 = 0x10;

    // ld/ldx modes.
    pub const IMM: u16 = 0x00;
    pub const ABS: u16 = 0x20;
    pub const IND: u16 = 0x40;
    pub const MEM: u16 = 0x60;
    pub const LEN: u16 = 0x80;
    pub const MSH: u16 = 0xa0;

    // alu/jmp operations.
    pub const ADD: u16 = 0x00;
    pub const SUB: u16 = 0x10;
    pub const MUL: u16 = 0x20;
    pub const DIV: u16 = 0x30;
    pub const OR: u16 = 0x40;
    pub const AND: u16 = 0x50;
    pub const LSH: u16 = 0x60;
    pub const RSH: u16 = 0x70;
    pub const NEG: u16 = 0x80;
    pub const MOD: u16 = 0x90;
    pub const XOR: u16 = 0xa0;

    pub const JA: u16 = 0x00;
    pub const JEQ: u16 = 0x10;
    pub const JGT: u16 = 0x20;
    pub const JGE: u16 = 0x30;
    pub const JSET: u16 = 0x40;

    // Operand source.
    pub const K: u16 = 0x00;
    pub const X: u16 = 0x08;
    /// `ret a` (return the accumulator).
    pub const A: u16 = 0x10;

    // misc.
    pub const TAX: u16 = 0x00;
    pub const TXA: u16 = 0x80;

    /// Number of scratch memory words (`M[0]`..`M[15]`).
    pub const MEMWORDS: u32 = 16;
    /// The largest program the Linux kernel accepts (`BPF_MAXINSNS`).
    pub const MAXINSNS: usize = 4096;
}
