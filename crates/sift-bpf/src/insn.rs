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
    /// Class: load into A.
    pub const LD: u16 = 0x00;
    /// Class: load into X.
    pub const LDX: u16 = 0x01;
    /// Class: store A into scratch memory.
    pub const ST: u16 = 0x02;
    /// Class: store X into scratch memory.
    pub const STX: u16 = 0x03;
    /// Class: arithmetic on A.
    pub const ALU: u16 = 0x04;
    /// Class: jumps.
    pub const JMP: u16 = 0x05;
    /// Class: return.
    pub const RET: u16 = 0x06;
    /// Class: register transfers (`tax`, `txa`).
    pub const MISC: u16 = 0x07;

    // ld/ldx sizes.
    /// Load size: 32-bit word.
    pub const W: u16 = 0x00;
    /// Load size: 16-bit half word.
    pub const H: u16 = 0x08;
    /// Load size: byte.
    pub const B: u16 = 0x10;

    // ld/ldx modes.
    /// Load mode: the constant `k`.
    pub const IMM: u16 = 0x00;
    /// Load mode: packet data at offset `k`.
    pub const ABS: u16 = 0x20;
    /// Load mode: packet data at offset `X + k`.
    pub const IND: u16 = 0x40;
    /// Load mode: scratch memory word `M[k]`.
    pub const MEM: u16 = 0x60;
    /// Load mode: the packet's wire length.
    pub const LEN: u16 = 0x80;
    /// Load mode: `4 * (pkt[k] & 0xf)` (IPv4 header length, `ldxb` only).
    pub const MSH: u16 = 0xa0;

    // alu/jmp operations.
    /// ALU: `A + operand`.
    pub const ADD: u16 = 0x00;
    /// ALU: `A - operand`.
    pub const SUB: u16 = 0x10;
    /// ALU: `A * operand`.
    pub const MUL: u16 = 0x20;
    /// ALU: `A / operand`.
    pub const DIV: u16 = 0x30;
    /// ALU: `A | operand`.
    pub const OR: u16 = 0x40;
    /// ALU: `A & operand`.
    pub const AND: u16 = 0x50;
    /// ALU: `A << operand`.
    pub const LSH: u16 = 0x60;
    /// ALU: `A >> operand`.
    pub const RSH: u16 = 0x70;
    /// ALU: `-A`.
    pub const NEG: u16 = 0x80;
    /// ALU: `A % operand`.
    pub const MOD: u16 = 0x90;
    /// ALU: `A ^ operand`.
    pub const XOR: u16 = 0xa0;

    /// Jump: always, `k` instructions ahead.
    pub const JA: u16 = 0x00;
    /// Jump: if `A == operand`.
    pub const JEQ: u16 = 0x10;
    /// Jump: if `A > operand` (unsigned).
    pub const JGT: u16 = 0x20;
    /// Jump: if `A >= operand` (unsigned).
    pub const JGE: u16 = 0x30;
    /// Jump: if `A & operand != 0`.
    pub const JSET: u16 = 0x40;

    // Operand source.
    /// Operand source: the constant `k`.
    pub const K: u16 = 0x00;
    /// Operand source: the X register.
    pub const X: u16 = 0x08;
    /// `ret a` (return the accumulator).
    pub const A: u16 = 0x10;

    // misc.
    /// Misc: `X = A`.
    pub const TAX: u16 = 0x00;
    /// Misc: `A = X`.
    pub const TXA: u16 = 0x80;

    /// Number of scratch memory words (`M[0]`..`M[15]`).
    pub const MEMWORDS: u32 = 16;
    /// The largest program the Linux kernel accepts (`BPF_MAXINSNS`).
    pub const MAXINSNS: usize = 4096;
}
