//! Classic BPF → x86-64 machine code (a small hand-written encoder).
//!
//! # Calling convention and register use
//!
//! The generated function is `extern "sysv64" fn(data: *const u8,
//! caplen: usize, wire_len: u32) -> u32`, a leaf function without a frame:
//!
//! | register | holds |
//! |----------|-------|
//! | `eax`    | A (and the return value) |
//! | `ecx`    | X (so `shl eax, cl` shifts by X); its upper half is always 0 |
//! | `rdi`    | packet pointer |
//! | `rsi`    | captured length (64-bit: `X + k` offsets never wrap) |
//! | `edx` / `r8d` | wire length (moved to `r8d` when `div` needs `edx`) |
//! | `r9`, `r10` | temporaries (indexed offsets, divisors) |
//! | `r11d`   | remaining backward jumps (programs with a backward `ja`) |
//!
//! Scratch memory `M[0..16]` lives in the System V red zone
//! (`[rsp - 64 .. rsp]`); the words a program reads are zeroed on entry.
//!
//! # The count function
//!
//! With `count`, [`compile`] emits the same program as a loop over many
//! packets, `extern "sysv64" fn(packets: *const PacketRef, n: usize,
//! ahead: usize) -> u64` (`PacketRef` is `crate::PacketRef`: packet
//! pointer at 0, captured length at 8, wire length at 12, 16 bytes; `n` of
//! them to filter, each followed `ahead` bytes further (at most
//! `PREFETCH_AHEAD` of them) by one whose packet is prefetched)
//! returning how many packets it accepted: `rbx` walks the `PacketRef`s,
//! `r12` holds their end, `r14` counts, `r15` holds `ahead`
//! (callee-saved registers, pushed and popped once per call). Each
//! iteration of a program that loads packet bytes prefetches the first
//! cache line of the packet `ahead` bytes of `PacketRef`s further on, loads
//! `rdi`/`rsi` (and `edx`) and
//! runs the per-packet code (A, X, the scratch words read and the
//! backward-jump budget are reset per packet; A and X only in programs
//! that could see their initial zero), except that `ret #k` becomes
//! `inc r14` (nothing for `ret #0`), `ret a` `neg eax; adc r14, 0`, then a
//! jump to the shared tail moving to the next packet: jumps to `ret #0`
//! and a failed bounds check go straight to that tail, and the `ret #0` at
//! the end of a program have no code. The packets it counts are exactly
//! those the per-packet function accepts, without a call or a stored
//! verdict per packet.
//!
//! A last argument, `deep: usize`, asks for the line of the deepest header
//! byte the filter reads to be prefetched as well: the caller sets it for
//! packets far apart in memory beyond the caches (`crate::Prefetch`), or
//! for any packets where [`crate::prefetch_header_lines`]. Only the count
//! functions of long predicates (of any predicate, where
//! `prefetch_header_lines`) that read past a packet's first 16 bytes
//! ([`pred::deep_line`]), and where `prefetch_header_lines` the count
//! functions of classic BPF programs that do
//! (`sift_bpf::interp::header_line`), act on it (the flag pushed last,
//! tested once per packet); the others ignore it.
//!
//! # The verdict function
//!
//! The count function that also writes each packet's verdict, 1 or 0, to a
//! byte of its own: `extern "sysv64" fn(packets: *const PacketRef, n:
//! usize, ahead: usize, verdicts: *mut u8, deep: usize) -> u64`; `r13`
//! walks the verdict bytes. Each packet's byte is set to 0 before its run and to 1 where the
//! count is incremented (`setc` for `ret a`).
//!
//! # Semantics (those of `sift_bpf::interp`, i.e. libpcap `bpf_filter`)
//!
//! Every packet load is preceded by one unsigned compare of its end offset
//! with the captured length, jumping to a shared `return 0` on failure
//! (absolute loads that every path to them has already checked, such as
//! `ldh [12]` repeated in each alternative of `ip or ip6 or arp`, skip it);
//! `div x`/`mod x` with `X == 0` return 0, as do `div #0`/`mod #0`; shifts
//! by `X >= 32` give 0; constant shifts act modulo 32; after 64 backward
//! jumps the run returns 0; running off the end returns 0.
//!
//! # Code shape
//!
//! Conditional jumps fall through to whichever target comes next. A packet
//! load followed by `jeq #k`/`jset #k` whose targets do not read A compares
//! the packet bytes in memory with the constant byte-swapped to network
//! order (`cmp word [rdi + 12], 0x0008`): no load into A, no byte swap.
//! Jumps are emitted with 8-bit displacements and widened to 32 bits only
//! where those do not fit (`Asm::finish`): the fewest long jumps possible.
//!
//! # Compile cost
//!
//! Two passes of analysis ([`Plan::fill`]: forward, making the checks of
//! `sift_bpf::interp::Program::new` on the way, so that no separate
//! validation runs; then backward), one emission (each x86 instruction
//! gathered in a register, [`Enc`], and appended with one store), one pass
//! patching the jumps (more only where some must be widened), buffers
//! borrowed in place from one compile to the next on a thread
//! ([`Scratch`]): no allocation in the steady state.

use sift_bpf::insn::op::*;
use sift_bpf::Insn;
use crate::packet;

pub(crate) mod pred;

const RAX: u8 = 0;
const RCX: u8 = 1;
const RDX: u8 = 2;
const RSP: u8 = 4;
const RSI: u8 = 6;
const RDI: u8 = 7;
const R8: u8 = 8;
const R9: u8 = 9;
const R10: u8 = 10;
const R11: u8 = 11;

/// Condition codes (the low nibble of `jcc`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cc {
    B = 2,
    Ae = 3,
    E = 4,
    Ne = 5,
    Be = 6,
    A = 7,
}

impl Cc {
    fn not(self) -> Cc {
        match self {
            Cc::B => Cc::Ae,
            Cc::Ae => Cc::B,
            Cc::E => Cc::Ne,
            Cc::Ne => Cc::E,
            Cc::Be => Cc::A,
            Cc::A => Cc::Be,
        }
    }
}

/// A memory operand `[base + index + disp]`.
#[derive(Clone, Copy, Debug)]
struct Mem {
    base: u8,
    index: Option<u8>,
    disp: i32,
}

/// Byte offset of `M[0]` from `rsp` (in the red zone).
const SCRATCH_DISP: i32 = -64;

fn scratch(i: u32) -> Mem {
    Mem {
        base: RSP,
        index: None,
        disp: SCRATCH_DISP + 4 * (i & 15) as i32,
    }
}

fn fits_i8(v: i64) -> bool {
    (-128..=127).contains(&v)
}

/// A jump whose displacement is patched by [`Asm::finish`].
#[derive(Clone, Copy, Debug)]
struct Fixup {
    /// Position of the displacement field.
    at: usize,
    /// The label jumped to.
    label: usize,
    /// 32-bit displacement (else 8-bit).
    long: bool,
}

/// The position of a label not bound (yet).
const NONE: usize = usize::MAX;

/// The bytes of one instruction (at most 16), gathered in a register
/// before [`Asm::put`] appends them at once.
#[derive(Clone, Copy)]
struct Enc {
    /// The bytes, the first in the low byte.
    bits: u128,
    len: u32,
}

impl Enc {
    const EMPTY: Enc = Enc { bits: 0, len: 0 };

    /// Appends byte `b`.
    #[inline(always)]
    fn b(self, b: u8) -> Enc {
        self.le(u32::from(b), 1)
    }

    /// Appends the `size` low bytes of `v`, little-endian.
    #[inline(always)]
    fn le(self, v: u32, size: u32) -> Enc {
        let v = if size >= 4 { v } else { v & ((1 << (8 * size)) - 1) };
        Enc {
            bits: self.bits | u128::from(v) << (8 * self.len),
            len: self.len + size,
        }
    }

    /// Appends the bytes of `b`.
    #[inline(always)]
    fn all(mut self, b: &[u8]) -> Enc {
        for &x in b {
            self = self.b(x);
        }
        self
    }

    /// Appends a REX prefix if one is needed.
    #[inline(always)]
    fn rex(self, w: bool, reg: u8, index: u8, base: u8) -> Enc {
        let rex = 0x40 | (u8::from(w) << 3) | ((reg >> 3) << 2) | ((index >> 3) << 1) | (base >> 3);
        if rex != 0x40 {
            self.b(rex)
        } else {
            self
        }
    }

    /// `[prefix] [rex] opcode modrm(reg, mem)`.
    #[inline(always)]
    fn mem(prefix: Option<u8>, w: bool, opc: &[u8], reg: u8, m: Mem) -> Enc {
        let mut e = Enc::EMPTY;
        if let Some(p) = prefix {
            e = e.b(p);
        }
        e = e.rex(w, reg, m.index.unwrap_or(0), m.base).all(opc);
        let base = m.base & 7;
        let (md, disp_len) = if m.disp == 0 && base != 5 {
            (0u8, 0)
        } else if fits_i8(i64::from(m.disp)) {
            (1, 1)
        } else {
            (2, 4)
        };
        let reg = (reg & 7) << 3;
        e = match m.index {
            None if base != 4 => e.b(md << 6 | reg | base),
            // No index is encoded as index = 4 (rsp) without REX.X.
            index => e.b(md << 6 | reg | 4).b(((index.unwrap_or(4) & 7) << 3) | base),
        };
        e.le(m.disp as u32, disp_len)
    }

    /// `[prefix] [rex] opcode modrm(reg, rm)` with a register operand.
    #[inline(always)]
    fn rr(prefix: Option<u8>, w: bool, opc: &[u8], reg: u8, rm: u8) -> Enc {
        let mut e = Enc::EMPTY;
        if let Some(p) = prefix {
            e = e.b(p);
        }
        e.rex(w, reg, 0, rm).all(opc).b(0xc0 | ((reg & 7) << 3) | (rm & 7))
    }
}

/// An x86-64 code buffer with forward/backward labels.
///
/// Jumps are emitted short (`jcc rel8`, `jmp rel8`); [`Asm::finish`]
/// widens those whose displacement does not fit to `rel32`.
#[derive(Default)]
struct Asm {
    code: Vec<u8>,
    /// Code offset of each label ([`NONE`] while unbound).
    labels: Vec<usize>,
    /// Every jump of the function being emitted, in emission order.
    fixups: Vec<Fixup>,
    /// The labels bound, in the order they were (their offsets never
    /// decrease along it).
    bound: Vec<usize>,
    /// [`Asm::finish`]'s work list: (old start of a jump to widen, bytes
    /// inserted up to and with it, bytes it grows by).
    grown: Vec<(usize, usize, usize)>,
}

impl Asm {
    const EMPTY: Asm = Asm {
        code: Vec::new(),
        labels: Vec::new(),
        fixups: Vec::new(),
        bound: Vec::new(),
        grown: Vec::new(),
    };

    /// Starts a function at the end of the code with `labels` fresh
    /// labels (the code emitted before stays).
    fn start(&mut self, labels: usize) {
        self.labels.clear();
        self.labels.resize(labels, NONE);
        self.fixups.clear();
        self.bound.clear();
    }

    /// A fresh label.
    fn new_label(&mut self) -> usize {
        self.labels.push(NONE);
        self.labels.len() - 1
    }

    #[inline(always)]
    fn byte(&mut self, b: u8) {
        self.code.push(b);
    }

    #[inline(always)]
    fn bytes(&mut self, b: &[u8]) {
        self.code.extend_from_slice(b);
    }

    #[inline(always)]
    fn imm32(&mut self, v: u32) {
        self.bytes(&v.to_le_bytes());
    }

    /// Appends the bytes gathered in `e`: one 16-byte store, the length
    /// then cut to those bytes (cheaper than a store per byte).
    #[inline(always)]
    fn put(&mut self, e: Enc) {
        let len = self.code.len();
        self.code.extend_from_slice(&e.bits.to_le_bytes());
        self.code.truncate(len + e.len as usize);
    }

    #[inline(always)]
    fn rex(&mut self, w: bool, reg: u8, index: u8, base: u8) {
        self.put(Enc::EMPTY.rex(w, reg, index, base));
    }

    /// `[prefix] [rex] opcode modrm(reg, mem)`.
    #[inline]
    fn op_mem(&mut self, prefix: Option<u8>, w: bool, opc: &[u8], reg: u8, m: Mem) {
        self.put(Enc::mem(prefix, w, opc, reg, m));
    }

    /// `[prefix] [rex] opcode modrm(reg, rm)` with a register operand.
    #[inline]
    fn op_rr(&mut self, prefix: Option<u8>, w: bool, opc: &[u8], reg: u8, rm: u8) {
        self.put(Enc::rr(prefix, w, opc, reg, rm));
    }

    /// `mov r32, imm32` (`xor r32, r32` for 0: clobbers the flags).
    #[inline]
    fn mov_ri(&mut self, r: u8, imm: u32) {
        if imm == 0 {
            self.op_rr(None, false, &[0x31], r, r);
        } else {
            self.put(Enc::EMPTY.rex(false, 0, 0, r).b(0xb8 + (r & 7)).le(imm, 4));
        }
    }

    /// `mov dst32, src32`.
    #[inline]
    /// `push r` (64-bit).
    fn push(&mut self, r: u8) {
        self.rex(false, 0, 0, r);
        self.byte(0x50 + (r & 7));
    }

    /// `pop r` (64-bit).
    fn pop(&mut self, r: u8) {
        self.rex(false, 0, 0, r);
        self.byte(0x58 + (r & 7));
    }

    fn mov_rr(&mut self, dst: u8, src: u8) {
        self.op_rr(None, false, &[0x89], src, dst);
    }

    /// Group-1 ALU `op r, imm` (`ext`: add 0, or 1, and 4, sub 5, xor 6,
    /// cmp 7), 32- or 64-bit.
    #[inline]
    fn alu_ri(&mut self, w: bool, ext: u8, r: u8, imm: u32) {
        if fits_i8(i64::from(imm as i32)) {
            self.put(Enc::rr(None, w, &[0x83], ext, r).le(imm, 1));
        } else {
            self.put(Enc::rr(None, w, &[0x81], ext, r).le(imm, 4));
        }
    }

    /// `jcc` to `label` (rel8, widened by [`Asm::finish`] if needed).
    fn jcc(&mut self, cc: Cc, label: usize) {
        self.bytes(&[0x70 | cc as u8, 0]);
        self.link(label);
    }

    /// `jmp` to `label` (rel8, widened by [`Asm::finish`] if needed).
    fn jmp(&mut self, label: usize) {
        self.bytes(&[0xeb, 0]);
        self.link(label);
    }

    /// Records the short jump just emitted (its displacement byte last).
    fn link(&mut self, label: usize) {
        self.fixups.push(Fixup {
            at: self.code.len() - 1,
            label,
            long: false,
        });
    }

    fn bind(&mut self, label: usize) {
        self.labels[label] = self.code.len();
        self.bound.push(label);
    }

    /// The displacement of jump `f`; `None` if its label is unbound.
    fn displacement(&self, f: Fixup) -> Option<i64> {
        let target = *self.labels.get(f.label)?;
        if target == NONE {
            return None;
        }
        let end = f.at + if f.long { 4 } else { 1 };
        Some(target as i64 - end as i64)
    }

    /// Widens every short jump whose displacement does not fit in 8 bits
    /// to `rel32` (`jcc` 2 → 6 bytes, `jmp` 2 → 5), moving the code and
    /// labels after it, until all fit; then patches every jump. Code only
    /// grows, so a jump found too far stays too far: the result has the
    /// fewest long jumps any assignment could have. `None` if a label is
    /// unbound or the code is too large for 32-bit displacements.
    fn finish(&mut self) -> Option<()> {
        // Each round patches every jump; the last (nothing to widen) leaves
        // them all right.
        loop {
            self.grown.clear();
            let mut added = 0;
            for i in 0..self.fixups.len() {
                let f = self.fixups[i];
                let rel = self.displacement(f)?;
                if f.long {
                    self.code
                        .get_mut(f.at..f.at + 4)?
                        .copy_from_slice(&(rel as i32).to_le_bytes());
                } else if fits_i8(rel) {
                    *self.code.get_mut(f.at)? = rel as i8 as u8;
                } else {
                    let start = f.at - 1;
                    let extra = if self.code[start] == 0xeb { 3 } else { 4 };
                    added += extra;
                    self.grown.push((start, added, extra));
                }
            }
            if added == 0 {
                break;
            }
            self.widen(added);
        }
        (self.code.len() <= i32::MAX as usize).then_some(())
    }

    /// Rewrites the jumps listed in `self.grown` as `rel32` jumps (`added`
    /// bytes in all), moving the code, labels and jump fields after each.
    fn widen(&mut self, added: usize) {
        let old_len = self.code.len();
        self.code.resize(old_len + added, 0);
        // From the last jump back: the code after a jump moves by
        // everything inserted up to and with it.
        let mut end = old_len;
        for &(start, upto, extra) in self.grown.iter().rev() {
            self.code.copy_within(start + 2..end, start + 2 + upto);
            let (op, at) = (self.code[start], start + upto - extra);
            if op == 0xeb {
                self.code[at] = 0xe9;
            } else {
                self.code[at..at + 2].copy_from_slice(&[0x0f, 0x80 | (op & 0x0f)]);
            }
            end = start;
        }
        // Labels and jump fields (in ascending order both) move by the
        // bytes inserted before them (none lies inside a widened jump).
        let grown = &self.grown;
        let (mut g, mut shift) = (0, 0);
        for &label in &self.bound {
            let p = &mut self.labels[label];
            while g < grown.len() && grown[g].0 < *p {
                shift = grown[g].1;
                g += 1;
            }
            *p += shift;
        }
        let (mut g, mut shift) = (0, 0);
        for f in &mut self.fixups {
            // The jump's first byte if short; a byte inside it if long.
            let start = f.at - 1;
            while g < grown.len() && grown[g].0 < start {
                shift = grown[g].1;
                g += 1;
            }
            match grown.get(g) {
                Some(&(at, upto, extra)) if at == start && !f.long => {
                    // Widened: it starts `upto - extra` bytes further on.
                    f.at = start + upto - extra + if extra == 3 { 1 } else { 2 };
                    f.long = true;
                }
                _ => f.at += shift,
            }
        }
    }
}

/// The load of a packet-reading instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Width {
    B,
    H,
    W,
}

impl Width {
    fn bytes(self) -> u32 {
        match self {
            Width::B => 1,
            Width::H => 2,
            Width::W => 4,
        }
    }
    fn of(code: u16) -> Width {
        match code & 0x18 {
            B => Width::B,
            H => Width::H,
            _ => Width::W,
        }
    }
}

/// Where each instruction's jumps go (absolute indexes; `pc + 1` for
/// non-jumps).
fn cond_targets(pc: usize, insn: Insn) -> (usize, usize) {
    (pc + 1 + usize::from(insn.jt), pc + 1 + usize::from(insn.jf))
}

fn ja_target(pc: usize, insn: Insn) -> usize {
    // Program::new checked that the target is inside the program.
    (pc as i64 + 1 + i64::from(insn.k as i32)) as usize
}

fn is_packet_load(code: u16) -> bool {
    code & 0x07 == LD && matches!(code & 0xe0, ABS | IND) && code & 0x18 != 0x18
}

/// What [`compile`] reuses from one call to the next on a thread (no
/// allocation once the buffers have grown to the size of the programs
/// compiled).
struct Scratch {
    asm: Asm,
    plan: Plan,
}

impl Scratch {
    const EMPTY: Scratch = Scratch {
        asm: Asm::EMPTY,
        plan: Plan::EMPTY,
    };
}

thread_local! {
    /// Borrowed in place by [`compile`] (a compile inside `install` gets
    /// buffers of its own).
    static SCRATCH: std::cell::RefCell<Scratch> = const { std::cell::RefCell::new(Scratch::EMPTY) };
}

/// What [`compile`] hands to its `install` function.
pub(crate) struct Compiled<'a> {
    /// The machine code.
    pub(crate) code: &'a [u8],
    /// Whether the program loads packet bytes.
    pub(crate) reads_packet: bool,
}

/// Why [`compile`] gave no code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CompileError {
    /// `sift_bpf::interp::Program::new` refuses the program.
    NotRunnable,
    /// The code would be too large for 32-bit jumps.
    TooLarge,
}

/// Scratch buffers larger than this (bytes of code) are not kept.
const SCRATCH_KEEP: usize = 64 * 1024;

/// Which function [`compile`] (and `pred::compile`) emits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Function {
    /// The per-packet function.
    Single,
    /// The count function (see the module documentation).
    Count,
    /// The verdict function: the count function that also writes each
    /// packet's verdict, 1 or 0, to a byte of its own.
    Verdicts,
}

/// Compiles `prog` to `function` (see the module documentation) and
/// hands it to `install`.
/// The program gets the checks of `sift_bpf::interp::Program::new`
/// ([`Plan::fill`]: [`CompileError::NotRunnable`] where that refuses it).
/// Jumps are emitted short and widened where they do not fit
/// (`Asm::finish`).
pub(crate) fn compile<R>(
    prog: &[Insn],
    function: Function,
    install: impl FnOnce(Compiled<'_>) -> R,
) -> Result<R, CompileError> {
    with_scratch(|scratch| compile_with(scratch, prog, function, install))
}

/// Runs `f` with the thread's scratch buffers (fresh ones inside another
/// compile's `install`), dropping them afterwards if they grew past
/// [`SCRATCH_KEEP`].
fn with_scratch<R>(f: impl FnOnce(&mut Scratch) -> R) -> R {
    SCRATCH.with(|cell| match cell.try_borrow_mut() {
        Ok(mut scratch) => {
            let done = f(&mut scratch);
            if scratch.asm.code.capacity() > SCRATCH_KEEP {
                *scratch = Scratch::EMPTY;
            }
            done
        }
        Err(_) => {
            let mut fresh = Scratch::EMPTY;
            f(&mut fresh)
        }
    })
}

/// Runs `f` with the thread's scratch assembler (see [`with_scratch`]),
/// emptied.
fn with_scratch_asm<R>(f: impl FnOnce(&mut Asm) -> R) -> R {
    with_scratch(|scratch| {
        scratch.asm.code.clear();
        scratch.asm.start(0);
        f(&mut scratch.asm)
    })
}

fn compile_with<R>(
    scratch: &mut Scratch,
    prog: &[Insn],
    function: Function,
    install: impl FnOnce(Compiled<'_>) -> R,
) -> Result<R, CompileError> {
    let Scratch { asm, plan } = scratch;
    plan.fill(prog).ok_or(CompileError::NotRunnable)?;
    asm.code.clear();
    asm.code.reserve(prog.len() * 12 + 96);
    emit(prog, plan, function, asm);
    asm.finish().ok_or(CompileError::TooLarge)?;
    Ok(install(Compiled {
        code: &asm.code,
        reads_packet: plan.reads_packet,
    }))
}

/// Whether an instruction with opcode `code` reads the X register.
const fn reads_x_register(code: u16) -> bool {
    match code & 0x07 {
        LD => code & 0xe0 == IND,
        ALU => code & 0xf0 != NEG && code & X != 0,
        JMP => code & 0xf0 != JA && code & X != 0,
        STX => true,
        RET => code & 0x18 == X,
        MISC => code & 0xf8 == TXA,
        _ => false,
    }
}

/// [`OPCODES`]: the opcode is one of `sift_bpf::validate::KNOWN_OPCODES`
/// (those `sift_bpf::interp::Program::new` runs).
const KNOWN: u8 = 1;
/// [`OPCODES`]: the instruction reads X ([`reads_x_register`]).
const READS_X: u8 = 2;
/// [`OPCODES`]: the instruction loads packet bytes (`crate::reads_packet`).
const READS_PACKET: u8 = 4;

/// What [`Plan::fill`] needs to know of an opcode, by opcode (every known
/// one is below 0x100): one load instead of a test per property.
const OPCODES: [u8; 256] = {
    let mut table = [0; 256];
    let known = sift_bpf::validate::KNOWN_OPCODES;
    let mut i = 0;
    while i < known.len() {
        let c = known[i];
        table[c as usize] = KNOWN
            | if reads_x_register(c) { READS_X } else { 0 }
            | if crate::reads_packet(c) { READS_PACKET } else { 0 };
        i += 1;
    }
    table
};

/// Whether the instruction returns 0 (`ret #0`).
fn is_ret0(insn: Insn) -> bool {
    insn.code == RET | K && insn.k == 0
}

/// What [`Plan::fill`] finds out about one instruction (and, in the entry
/// after the last, about the end of the program).
#[derive(Clone, Copy, Debug)]
struct Info {
    /// A captured length the packet is known to have when the instruction
    /// runs: every path to it passed an absolute load (or `ldx
    /// 4*([k]&0xf)`) ending at or beyond that length, whose bounds check
    /// would otherwise have rejected the packet. Loads ending within it
    /// need no check. 0 in programs with backward jumps.
    known: u64,
    /// The first instruction after this one that has code of its own (or
    /// the program's length: reject).
    next: u32,
    /// A jump lands here.
    target: bool,
    /// A's value on entry may be read before it is overwritten
    /// (conservatively true in programs with backward jumps).
    live: bool,
    /// This packet load compares raw bytes for the jump after it.
    fused: bool,
    /// The instruction has code of its own.
    emitted: bool,
}

/// No path reaches the instruction (yet); lengths are below 2^34.
const UNREACHED: u64 = u64::MAX;

/// What emitting `prog` needs to know about it (its vector is reused,
/// see [`Scratch`]).
struct Plan {
    has_backward: bool,
    /// Scratch words read (bit `k` for `M[k]`): zeroed on entry.
    mem_read: u16,
    uses_div: bool,
    /// Whether A may be read before it is written (else it needs no zero
    /// on entry).
    reads_a_first: bool,
    /// Whether any instruction reads X (else it needs no zero on entry).
    reads_x: bool,
    /// Whether the program reads the wire length (`ld`/`ldx len`; else the
    /// count function does not load it).
    reads_len: bool,
    /// Whether the program loads packet bytes (else the count function
    /// prefetches nothing).
    reads_packet: bool,
    /// The first instruction from which every emitted one is `ret #0` (the
    /// program's length if the last is not): the count function has no
    /// code for them.
    quiet_tail: usize,
    /// Per instruction, and the end.
    info: Vec<Info>,
}

impl Plan {
    const EMPTY: Plan = Plan {
        has_backward: false,
        mem_read: 0,
        uses_div: false,
        reads_a_first: false,
        reads_x: false,
        reads_len: false,
        reads_packet: false,
        quiet_tail: 0,
        info: Vec::new(),
    };

    /// Analyses `prog` in two passes: forward, the checks of
    /// `sift_bpf::interp::Program::new` (`None` where it fails: empty, too
    /// long, unknown opcode, scratch index >= 16, jump outside the
    /// program), jump targets, known lengths and what the program uses;
    /// backward, A's liveness, fused loads and which instructions have
    /// code.
    fn fill(&mut self, prog: &[Insn]) -> Option<()> {
        let len = prog.len();
        if len == 0 || len > sift_bpf::interp::MAX_PROGRAM_LEN {
            return None;
        }
        let info = &mut self.info;
        info.clear();
        info.resize(
            len + 1,
            Info {
                known: UNREACHED,
                next: 0,
                target: false,
                live: false,
                fused: false,
                emitted: false,
            },
        );
        info[0].known = 0;
        let mut has_backward = false;
        let mut mem_read = 0u16;
        let mut uses_div = false;
        let mut reads_len = false;
        // The opcodes' flags ([`OPCODES`]), or-ed.
        let mut seen = 0u8;
        for (pc, &insn) in prog.iter().enumerate() {
            let (c, k) = (insn.code, insn.k);
            let flags = OPCODES.get(usize::from(c)).copied().unwrap_or(0);
            if flags & KNOWN == 0 {
                return None;
            }
            seen |= flags;
            let known = &mut info[pc].known;
            if *known == UNREACHED {
                *known = 0;
            }
            let mut out = *known;
            // The known length flows to where control goes next (`len`:
            // off the end); a jump's targets are marked.
            let flow = |info: &mut [Info], t: usize, out: u64| info[t].known = info[t].known.min(out);
            match c & 0x07 {
                LD | LDX => {
                    match c & 0xe0 {
                        LEN => reads_len = true,
                        MEM if k >= 16 => return None,
                        MEM => mem_read |= 1 << k,
                        ABS if c & 0x07 == LD => out = out.max(u64::from(k) + u64::from(Width::of(c).bytes())),
                        MSH => out = out.max(u64::from(k) + 1),
                        _ => {}
                    }
                    flow(info, pc + 1, out);
                }
                ST | STX if k >= 16 => return None,
                ALU if matches!(c & 0xf0, DIV | MOD) => {
                    uses_div = true;
                    if c & X != 0 || k != 0 {
                        flow(info, pc + 1, out);
                    }
                }
                RET => {}
                JMP if c & 0xf0 == JA => {
                    // Signed, as libpcap reads it.
                    let t = pc as i64 + 1 + i64::from(k as i32);
                    if t < 0 || t >= len as i64 {
                        return None;
                    }
                    has_backward |= t <= pc as i64;
                    let t = t as usize;
                    flow(info, t, out);
                    info[t].target = true;
                }
                JMP => {
                    let (t, f) = cond_targets(pc, insn);
                    if t >= len || f >= len {
                        return None;
                    }
                    flow(info, t, out);
                    flow(info, f, out);
                    info[t].target = true;
                    info[f].target = true;
                }
                _ => flow(info, pc + 1, out),
            }
        }
        if has_backward {
            info.iter_mut().for_each(|i| i.known = 0);
        }
        let reject = len as u32;
        info[len].live = has_backward;
        let mut following = reject;
        let mut quiet = true;
        self.quiet_tail = len;
        // Settles whether instruction `q` has code (in descending order).
        let mut settle = |info: &mut [Info], q: usize, emitted: bool| {
            info[q].next = following;
            info[q].emitted = emitted;
            if emitted {
                following = q as u32;
                quiet &= is_ret0(prog[q]);
                if quiet {
                    self.quiet_tail = q;
                }
            }
        };
        for pc in (0..len).rev() {
            let insn = prog[pc];
            let c = insn.code;
            let live = has_backward
                || match c & 0x07 {
                    LD => false,
                    LDX | STX => info[pc + 1].live,
                    ST | ALU => true,
                    JMP if c & 0xf0 == JA => info[ja_target(pc, insn)].live,
                    JMP => true,
                    RET => c & 0x18 == A,
                    _ => c & 0xf8 == TAX,
                };
            info[pc].live = live;
            if let Some(&j) = prog.get(pc + 1) {
                // A load followed by `jeq #k`/`jset #k` whose targets (both
                // after it: settled) do not read A.
                if is_packet_load(c) && (j.code == JMP | JEQ | K || j.code == JMP | JSET | K) {
                    let (t, f) = cond_targets(pc + 1, j);
                    let fits = j.code == JMP | JSET | K || u64::from(j.k) < 1u64 << (8 * Width::of(c).bytes());
                    info[pc].fused = fits && !info[t].live && !info[f].live;
                }
                let emitted = info[pc + 1].target || !info[pc].fused;
                settle(info, pc + 1, emitted);
            }
        }
        settle(info, 0, true);
        self.has_backward = has_backward;
        self.mem_read = mem_read;
        self.uses_div = uses_div;
        self.reads_a_first = info[0].live;
        self.reads_x = seen & READS_X != 0;
        self.reads_len = reads_len;
        self.reads_packet = seen & READS_PACKET != 0;
        Some(())
    }
}

/// Emits the code for `prog` at the end of `asm` (jump fields unpatched):
/// `function` (module documentation).
fn emit(prog: &[Insn], plan: &Plan, function: Function, asm: &mut Asm) {
    let count = function != Function::Single;
    let len = prog.len();
    let reject = len;
    // Count function only: the end of a packet's run (where the next one
    // starts), the loop top, the exit.
    let (tail, top, done) = (len + 1, len + 2, len + 3);
    let Plan {
        has_backward,
        mem_read,
        uses_div,
        quiet_tail,
        ..
    } = *plan;
    let info = &plan.info;
    asm.start(len + 4);
    // In the count function a jump to `ret #0` goes to the tail, and the
    // `ret #0` instructions at the end have no code.
    let to = |t: usize| {
        if count && prog.get(t).is_some_and(|&i| is_ret0(i)) {
            tail
        } else {
            t
        }
    };
    let counting = CountLoop {
        reads_len: plan.reads_len,
        reads_packet: plan.reads_packet,
        verdicts: function == Function::Verdicts,
        wire: RDX,
        saved: &[],
        // The header line of the program (the interpreter's rule) where
        // every count function prefetches it.
        deep_line: if count && crate::prefetch_header_lines() {
            sift_bpf::interp::header_line(prog).and_then(|l| u8::try_from(l).ok())
        } else {
            None
        },
    };
    if count {
        counting.head(asm, top, done);
    }
    let wire = if uses_div {
        if plan.reads_len {
            asm.mov_rr(R8, RDX);
        }
        R8
    } else {
        RDX
    };
    // A and X start at 0 (where that can be seen).
    if plan.reads_a_first {
        asm.mov_ri(RAX, 0);
    }
    if plan.reads_x {
        asm.mov_ri(RCX, 0);
    }
    let mut unset = mem_read;
    while unset != 0 {
        // mov dword [rsp - 64 + 4i], 0
        asm.put(Enc::mem(None, false, &[0xc7], 0, scratch(unset.trailing_zeros())).le(0, 4));
        unset &= unset - 1;
    }
    if has_backward {
        asm.mov_ri(R11, sift_bpf::interp::MAX_BACKWARD_JUMPS);
    }

    let end = if count { quiet_tail } else { len };
    for (pc, &insn) in prog[..end].iter().enumerate() {
        let Info {
            known, fused, emitted, next, ..
        } = info[pc];
        if !emitted {
            continue;
        }
        asm.bind(pc);
        let (c, k) = (insn.code, insn.k);
        let next = next as usize;
        // (Past `end` the count function has only its tail.)
        let next = if count && next >= end { tail } else { next };
        match c & 0x07 {
            LD if is_packet_load(c) => {
                let width = Width::of(c);
                let m = packet_operand(asm, c & 0xe0 == IND, k, width.bytes(), known, reject);
                if fused {
                    let j = prog[pc + 1];
                    let (t, f) = cond_targets(pc + 1, j);
                    let is_eq = j.code & 0xf0 == JEQ;
                    raw_compare(asm, width, m, j.k, is_eq);
                    branch(asm, if is_eq { Cc::E } else { Cc::Ne }, to(t), to(f), next);
                } else {
                    load_be(asm, RAX, width, m);
                }
            }
            LD => match c & 0xe0 {
                LEN => asm.mov_rr(RAX, wire),
                MEM => asm.op_mem(None, false, &[0x8b], RAX, scratch(k)),
                _ => asm.mov_ri(RAX, k),
            },
            LDX => match c & 0xe0 {
                LEN => asm.mov_rr(RCX, wire),
                MEM => asm.op_mem(None, false, &[0x8b], RCX, scratch(k)),
                MSH => {
                    let m = packet_operand(asm, false, k, 1, known, reject);
                    asm.op_mem(None, false, &[0x0f, 0xb6], RCX, m); // movzx ecx, byte [m]
                    asm.alu_ri(false, 4, RCX, 0xf);
                    asm.put(Enc::rr(None, false, &[0xc1], 4, RCX).le(2, 1)); // shl ecx, 2
                }
                _ => asm.mov_ri(RCX, k),
            },
            ST => asm.op_mem(None, false, &[0x89], RAX, scratch(k)),
            STX => asm.op_mem(None, false, &[0x89], RCX, scratch(k)),
            ALU => alu(asm, c, k, reject),
            JMP if c & 0xf0 == JA => {
                let t = ja_target(pc, insn);
                if t <= pc {
                    asm.alu_ri(false, 5, R11, 1); // sub r11d, 1
                    asm.jcc(Cc::B, reject);
                    asm.jmp(to(t));
                } else if to(t) != next {
                    asm.jmp(to(t));
                }
            }
            JMP => {
                let (t, f) = cond_targets(pc, insn);
                let cc = compare_a(asm, c, k);
                branch(asm, cc, to(t), to(f), next);
            }
            RET if count => {
                if c & 0x18 == A {
                    asm.bytes(&[0xf7, 0xd8]); // neg eax (CF: A != 0)
                    if counting.verdicts {
                        asm.bytes(&[0x41, 0x0f, 0x92, 0x45, 0x00]); // setc byte [r13]
                    }
                    asm.bytes(&[0x49, 0x83, 0xd6, 0x00]); // adc r14, 0
                } else if k != 0 {
                    counting.accept(asm);
                }
                if next != tail {
                    asm.jmp(tail);
                }
            }
            RET => {
                if c & 0x18 != A {
                    asm.mov_ri(RAX, k);
                }
                asm.byte(0xc3);
            }
            _ => {
                if c & 0xf8 == TAX {
                    asm.mov_rr(RCX, RAX);
                } else {
                    asm.mov_rr(RAX, RCX);
                }
            }
        }
    }
    asm.bind(reject);
    if !count {
        asm.mov_ri(RAX, 0);
        asm.byte(0xc3);
        return;
    }
    asm.bind(tail);
    counting.tail(asm, top, done);
}

/// The loop of a count function around its per-packet code (see the
/// module documentation: `rbx` walks the packets, `r12` holds their end,
/// `r14` counts, `r15` holds the prefetch distance).
struct CountLoop<'a> {
    /// The per-packet code reads the wire length.
    reads_len: bool,
    /// A verdict function: `r13` walks the verdict bytes.
    verdicts: bool,
    /// It reads packet bytes (each packet `r15` bytes of `PacketRef`s
    /// ahead is prefetched).
    reads_packet: bool,
    /// Where the per-packet code wants the wire length.
    wire: u8,
    /// Value registers of the per-packet code to save as well.
    saved: &'a [u8],
    /// The offset of the deepest header byte the per-packet code reads
    /// (16 to 63, see [`pred::deep_line`]): its line is prefetched too,
    /// from a packet `ahead` on, when the `deep` argument is non-zero.
    deep_line: Option<u8>,
}

impl CountLoop<'_> {
    /// Saves the registers, sets up the loop (to `done` if there is no
    /// packet), and binds `top`, where a packet's run starts: its pointer
    /// in `rdi`, its captured length in `rsi`, its wire length in `wire`.
    fn head(&self, asm: &mut Asm, top: usize, done: usize) {
        // push rbx; push r12; push r14 (and r15 for the prefetch
        // distance), then the saved registers
        asm.bytes(&[0x53, 0x41, 0x54, 0x41, 0x56]);
        if self.reads_packet {
            asm.bytes(&[0x41, 0x57]); // push r15
            asm.bytes(&[0x49, 0x89, 0xd7]); // mov r15, rdx (prefetch distance, bytes of PacketRefs)
        }
        if self.verdicts {
            asm.bytes(&[0x41, 0x55]); // push r13
            asm.bytes(&[0x49, 0x89, 0xcd]); // mov r13, rcx (the verdict bytes)
        }
        self.saved.iter().for_each(|&r| asm.push(r));
        if self.deep_prefetch().is_some() {
            // The `deep` argument, last pushed: at [rsp] in the loop.
            asm.push(if self.verdicts { R8 } else { RCX });
        }
        const _: () = assert!(packet::layout::SIZE == 16);
        asm.bytes(&[0x48, 0x89, 0xfb]); // mov rbx, rdi (the first PacketRef)
        asm.bytes(&[0x48, 0xc1, 0xe6, 0x04]); // shl rsi, 4
        asm.bytes(&[0x4c, 0x8d, 0x24, 0x37]); // lea r12, [rdi + rsi] (the end)
        asm.bytes(&[0x45, 0x31, 0xf6]); // xor r14d, r14d (the count)
        asm.bytes(&[0x48, 0x85, 0xf6]); // test rsi, rsi
        asm.jcc(Cc::E, done);
        asm.bind(top);
        const _: () = assert!(packet::layout::PTR == 0);
        asm.bytes(&[0x48, 0x8b, 0x3b]); // mov rdi, [rbx] (packet pointer)
        // mov esi, [rbx + 8] (captured length, zero-extended to rsi)
        asm.bytes(&[0x8b, 0x73, packet::layout::CAPLEN]);
        if self.reads_len {
            let wire_len = Mem {
                base: 3, // rbx
                index: None,
                disp: i32::from(packet::layout::WIRE_LEN),
            };
            asm.op_mem(None, false, &[0x8b], self.wire, wire_len); // mov wire, [rbx + 12] (wire length)
        }
        if self.verdicts {
            asm.bytes(&[0x41, 0xc6, 0x45, 0x00, 0x00]); // mov byte [r13], 0 (rejected unless accepted)
        }
        if self.reads_packet {
            // mov rax, [rbx + r15] (the packet r15 / 16 PacketRefs
            // further on); prefetcht0 [rax]
            asm.bytes(&[0x4a, 0x8b, 0x04, 0x3b]);
            asm.bytes(&[0x0f, 0x18, 0x08]);
        }
        if let Some(line) = self.deep_prefetch() {
            // cmp byte [rsp], 0; je +4; prefetcht0 [rax + line]
            asm.bytes(&[0x80, 0x3c, 0x24, 0x00, 0x74, 0x04]);
            asm.bytes(&[0x0f, 0x18, 0x48, line]);
        }
    }

    /// The offset of the deeper line the loop prefetches when its `deep`
    /// argument asks (one that fits the positive 8-bit displacement of its
    /// `prefetcht0`).
    fn deep_prefetch(&self) -> Option<u8> {
        self.deep_line.filter(|&l| self.reads_packet && l < 0x80)
    }

    /// An accepted packet: counted (and its verdict byte set to 1).
    fn accept(&self, asm: &mut Asm) {
        asm.bytes(&[0x49, 0xff, 0xc6]); // inc r14
        if self.verdicts {
            asm.bytes(&[0x41, 0xc6, 0x45, 0x00, 0x01]); // mov byte [r13], 1
        }
    }

    /// The end of a packet's run (where the caller bound its tail): moves
    /// to the next packet (to `top`), and at `done` returns the count,
    /// restoring the registers.
    fn tail(&self, asm: &mut Asm, top: usize, done: usize) {
        if self.verdicts {
            asm.bytes(&[0x49, 0xff, 0xc5]); // inc r13
        }
        asm.bytes(&[0x48, 0x83, 0xc3, packet::layout::SIZE]); // add rbx, 16
        asm.bytes(&[0x4c, 0x39, 0xe3]); // cmp rbx, r12
        asm.jcc(Cc::Ne, top);
        asm.bind(done);
        asm.bytes(&[0x4c, 0x89, 0xf0]); // mov rax, r14
        if self.deep_prefetch().is_some() {
            asm.pop(RCX); // the `deep` argument
        }
        self.saved.iter().rev().for_each(|&r| asm.pop(r));
        if self.verdicts {
            asm.bytes(&[0x41, 0x5d]); // pop r13
        }
        if self.reads_packet {
            asm.bytes(&[0x41, 0x5f]); // pop r15
        }
        asm.bytes(&[0x41, 0x5e, 0x41, 0x5c, 0x5b, 0xc3]); // pop r14; pop r12; pop rbx; ret
    }
}

/// Emits the bounds check of a `size`-byte packet load at `k` (`X + k` if
/// `indexed`; none for an absolute load ending within `known`, see
/// [`Info::known`]) and returns the memory operand addressing it.
fn packet_operand(
    asm: &mut Asm,
    indexed: bool,
    k: u32,
    size: u32,
    known: u64,
    reject: usize,
) -> Mem {
    if indexed {
        // r9 = X + k in 64 bits (X's upper half is 0: no wrap-around).
        if k <= i32::MAX as u32 - 4 {
            asm.op_mem(
                None,
                true,
                &[0x8d],
                R9,
                Mem {
                    base: RCX,
                    index: None,
                    disp: k as i32,
                },
            );
        } else {
            asm.mov_ri(R9, k);
            asm.op_rr(None, true, &[0x01], RCX, R9); // add r9, rcx
        }
        // lea r10, [r9 + size]; cmp rsi, r10; jb reject
        asm.op_mem(
            None,
            true,
            &[0x8d],
            R10,
            Mem {
                base: R9,
                index: None,
                disp: size as i32,
            },
        );
        asm.op_rr(None, true, &[0x39], R10, RSI);
        asm.jcc(Cc::B, reject);
        Mem {
            base: RDI,
            index: Some(R9),
            disp: 0,
        }
    } else {
        let end = u64::from(k) + u64::from(size);
        if end <= known {
            // Every path here checked a length of at least `end`.
        } else if end <= i32::MAX as u64 {
            asm.alu_ri(true, 7, RSI, end as u32); // cmp rsi, end
        } else {
            // end < 2^33; mov r9d zero-extends only up to 2^32 - 1.
            asm.rex(true, 0, 0, R9);
            asm.byte(0xb8 + (R9 & 7));
            asm.bytes(&end.to_le_bytes()); // mov r9, imm64
            asm.op_rr(None, true, &[0x39], R9, RSI); // cmp rsi, r9
        }
        if end > known {
            asm.jcc(Cc::B, reject);
        }
        if k <= i32::MAX as u32 {
            Mem {
                base: RDI,
                index: None,
                disp: k as i32,
            }
        } else {
            asm.mov_ri(R9, k);
            Mem {
                base: RDI,
                index: Some(R9),
                disp: 0,
            }
        }
    }
}

/// `d` = the big-endian value at `m` (A in the cBPF compiler, a value
/// register in the predicate compiler).
fn load_be(asm: &mut Asm, d: u8, width: Width, m: Mem) {
    match width {
        Width::B => asm.op_mem(None, false, &[0x0f, 0xb6], d, m), // movzx d, byte
        Width::H => {
            asm.op_mem(None, false, &[0x0f, 0xb7], d, m); // movzx d, word
            asm.put(Enc::rr(Some(0x66), false, &[0xc1], 0, d).b(8)); // rol d16, 8
        }
        Width::W => {
            asm.op_mem(None, false, &[0x8b], d, m); // mov d, [m]
            asm.put(Enc::EMPTY.rex(false, 0, 0, d).all(&[0x0f, 0xc8 + (d & 7)])); // bswap d
        }
    }
}

/// Compares (`cmp`) or tests (`test`) the packet bytes at `m` with `k`
/// converted to network order.
fn raw_compare(asm: &mut Asm, width: Width, m: Mem, k: u32, is_eq: bool) {
    // cmp: 0x80 (byte), 0x81 (imm16/32), 0x83 (sign-extended imm8), /7;
    // test: 0xf6 (byte), 0xf7, /0.
    let ext = if is_eq { 7 } else { 0 };
    let (prefix, v, size) = match width {
        Width::B => {
            asm.put(Enc::mem(None, false, &[if is_eq { 0x80 } else { 0xf6 }], ext, m).le(k, 1));
            return;
        }
        Width::H => {
            let v = (k as u16).swap_bytes();
            (Some(0x66), u32::from(v), if is_eq && fits_i8(i64::from(v as i16)) { 1 } else { 2 })
        }
        Width::W => {
            let v = k.swap_bytes();
            (None, v, if is_eq && fits_i8(i64::from(v as i32)) { 1 } else { 4 })
        }
    };
    let opc = match (is_eq, size) {
        (true, 1) => 0x83,
        (true, _) => 0x81,
        _ => 0xf7,
    };
    asm.put(Enc::mem(prefix, false, &[opc], ext, m).le(v, size));
}

/// Sets the flags for a conditional jump on A and returns the condition
/// under which the jump goes to its `jt` target.
fn compare_a(asm: &mut Asm, c: u16, k: u32) -> Cc {
    let op = c & 0xf0;
    if c & X != 0 {
        if op == JSET {
            asm.op_rr(None, false, &[0x85], RCX, RAX); // test eax, ecx
        } else {
            asm.op_rr(None, false, &[0x39], RCX, RAX); // cmp eax, ecx
        }
    } else if op == JSET || (op == JEQ && k == 0) {
        if op == JEQ {
            asm.op_rr(None, false, &[0x85], RAX, RAX); // test eax, eax
        } else if k <= 0xff {
            asm.bytes(&[0xa8, k as u8]); // test al, imm8
        } else {
            asm.put(Enc::EMPTY.b(0xa9).le(k, 4)); // test eax, imm32
        }
    } else {
        asm.alu_ri(false, 7, RAX, k); // cmp eax, k
    }
    match op {
        JEQ => Cc::E,
        JGT => Cc::A,
        JGE => Cc::Ae,
        _ => Cc::Ne,
    }
}

/// Jumps to `t` if `cc` holds, else to `f`, falling through to `next`.
fn branch(asm: &mut Asm, cc: Cc, t: usize, f: usize, next: usize) {
    if t == f {
        if t != next {
            asm.jmp(t);
        }
    } else if t == next {
        asm.jcc(cc.not(), f);
    } else {
        asm.jcc(cc, t);
        if f != next {
            asm.jmp(f);
        }
    }
}

/// One ALU instruction on A.
fn alu(asm: &mut Asm, c: u16, k: u32, reject: usize) {
    let op = c & 0xf0;
    if op == NEG {
        asm.op_rr(None, false, &[0xf7], 3, RAX); // neg eax
        return;
    }
    if c & X != 0 {
        match op {
            ADD => asm.op_rr(None, false, &[0x01], RCX, RAX),
            SUB => asm.op_rr(None, false, &[0x29], RCX, RAX),
            AND => asm.op_rr(None, false, &[0x21], RCX, RAX),
            OR => asm.op_rr(None, false, &[0x09], RCX, RAX),
            XOR => asm.op_rr(None, false, &[0x31], RCX, RAX),
            MUL => asm.op_rr(None, false, &[0x0f, 0xaf], RAX, RCX), // imul eax, ecx
            DIV | MOD => {
                asm.op_rr(None, false, &[0x85], RCX, RCX); // test ecx, ecx
                asm.jcc(Cc::E, reject);
                asm.mov_ri(RDX, 0);
                asm.op_rr(None, false, &[0xf7], 6, RCX); // div ecx
                if op == MOD {
                    asm.mov_rr(RAX, RDX);
                }
            }
            _ => {
                // lsh/rsh x: 0 when X >= 32.
                asm.mov_ri(R9, 0);
                asm.op_rr(None, false, &[0xd3], if op == LSH { 4 } else { 5 }, RAX);
                asm.alu_ri(false, 7, RCX, 32); // cmp ecx, 32
                asm.op_rr(None, false, &[0x0f, 0x40 | Cc::Ae as u8], RAX, R9); // cmovae eax, r9d
            }
        }
        return;
    }
    match op {
        ADD => asm.alu_ri(false, 0, RAX, k),
        SUB => asm.alu_ri(false, 5, RAX, k),
        AND => asm.alu_ri(false, 4, RAX, k),
        OR => asm.alu_ri(false, 1, RAX, k),
        XOR => asm.alu_ri(false, 6, RAX, k),
        MUL => {
            if fits_i8(i64::from(k as i32)) {
                asm.put(Enc::rr(None, false, &[0x6b], RAX, RAX).le(k, 1));
            } else {
                asm.put(Enc::rr(None, false, &[0x69], RAX, RAX).le(k, 4));
            }
        }
        DIV | MOD if k == 0 => asm.jmp(reject),
        DIV if k.is_power_of_two() => shift_imm(asm, 5, RAX, k.trailing_zeros()),
        MOD if k.is_power_of_two() => asm.alu_ri(false, 4, RAX, k - 1),
        DIV | MOD => {
            asm.mov_ri(RDX, 0);
            asm.mov_ri(R9, k);
            asm.op_rr(None, false, &[0xf7], 6, R9); // div r9d
            if op == MOD {
                asm.mov_rr(RAX, RDX);
            }
        }
        LSH => shift_imm(asm, 4, RAX, k & 31),
        _ => shift_imm(asm, 5, RAX, k & 31),
    }
}

/// `shl`/`shr r, n` (`ext` 4 or 5); nothing for 0.
fn shift_imm(asm: &mut Asm, ext: u8, r: u8, n: u32) {
    if n != 0 {
        asm.put(Enc::rr(None, false, &[0xc1], ext, r).le(n, 1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asm() -> Asm {
        let mut a = Asm::default();
        a.start(1);
        a
    }

    fn plan(p: &[Insn]) -> Plan {
        let mut plan = Plan::EMPTY;
        plan.fill(p).expect("runnable");
        plan
    }

    fn known(p: &[Insn]) -> Vec<u64> {
        plan(p).info[..p.len()].iter().map(|i| i.known).collect()
    }

    fn live(p: &[Insn]) -> Vec<bool> {
        plan(p).info.iter().map(|i| i.live).collect()
    }

    /// `ld #0; ja -2` after `p` (a backward jump that never runs).
    fn with_loop(p: &[Insn]) -> Vec<Insn> {
        let mut p = p.to_vec();
        p.extend([Insn::stmt(LD | IMM, 0), Insn::stmt(JMP | JA, -2i32 as u32)]);
        p
    }

    #[test]
    fn jumps_that_fit_get_rel8_and_the_rest_moves() {
        let mut a = Asm::default();
        a.start(3);
        a.bind(0); // 0
        a.byte(0x90);
        a.jcc(Cc::E, 1); // short: over the nop
        a.byte(0x90);
        a.bind(1);
        a.jmp(2); // long: over 200 nops
        a.bytes(&[0x90; 200]);
        a.bind(2);
        a.jcc(Cc::Ne, 2); // short, backward (to itself)
        a.jmp(1); // long, backward
        a.byte(0xc3);
        a.finish().expect("fits");
        let code = a.code;
        let mut want = vec![0x90, 0x74, 0x01, 0x90, 0xe9, 200, 0, 0, 0];
        want.extend([0x90; 200]);
        // jne rel8 from 211 back to 209; jmp rel32 from 216 back to 4.
        want.extend([0x75, (-2i8) as u8, 0xe9]);
        want.extend((4i32 - 216).to_le_bytes());
        want.push(0xc3);
        assert_eq!(code, want);
    }

    #[test]
    fn encodings() {
        // Checked against a disassembler.
        let mut a = asm();
        a.op_mem(
            None,
            false,
            &[0x0f, 0xb6],
            RAX,
            Mem {
                base: RDI,
                index: None,
                disp: 23,
            },
        );
        assert_eq!(a.code, [0x0f, 0xb6, 0x47, 0x17]); // movzx eax, byte [rdi+0x17]
        let mut a = asm();
        a.op_mem(None, false, &[0x8b], RAX, scratch(3));
        assert_eq!(a.code, [0x8b, 0x44, 0x24, 0xcc]); // mov eax, [rsp-0x34]
        let mut a = asm();
        a.op_mem(
            None,
            false,
            &[0x0f, 0xb7],
            RAX,
            Mem {
                base: RDI,
                index: Some(R9),
                disp: 0,
            },
        );
        assert_eq!(a.code, [0x42, 0x0f, 0xb7, 0x04, 0x0f]); // movzx eax, word [rdi+r9]
        let mut a = asm();
        a.alu_ri(true, 7, RSI, 14);
        assert_eq!(a.code, [0x48, 0x83, 0xfe, 0x0e]); // cmp rsi, 14
        let mut a = asm();
        a.op_mem(
            None,
            true,
            &[0x8d],
            R10,
            Mem {
                base: R9,
                index: None,
                disp: 2,
            },
        );
        assert_eq!(a.code, [0x4d, 0x8d, 0x51, 0x02]); // lea r10, [r9+2]
        let mut a = asm();
        a.op_rr(None, true, &[0x39], R10, RSI);
        assert_eq!(a.code, [0x4c, 0x39, 0xd6]); // cmp rsi, r10
        let mut a = asm();
        a.mov_ri(R11, 64);
        assert_eq!(a.code, [0x41, 0xbb, 0x40, 0, 0, 0]); // mov r11d, 64
        let mut a = asm();
        a.op_rr(None, false, &[0x0f, 0x43], RAX, R9);
        assert_eq!(a.code, [0x41, 0x0f, 0x43, 0xc1]); // cmovae eax, r9d
        let mut a = asm();
        a.op_mem(
            Some(0x66),
            false,
            &[0x81],
            7,
            Mem {
                base: RDI,
                index: None,
                disp: 12,
            },
        );
        assert_eq!(a.code, [0x66, 0x81, 0x7f, 0x0c]); // cmp word [rdi+12], imm16
    }

    #[test]
    fn known_lengths_take_the_minimum_over_paths() {
        let p = [
            Insn::stmt(LD | H | ABS, 12),           // 0: needs 14
            Insn::jump(JMP | JEQ | K, 0x800, 0, 2), // 1
            Insn::stmt(LD | B | ABS, 23),           // 2: needs 24
            Insn::jump(JMP | JEQ | K, 6, 2, 0),     // 3 -> 6 or 4
            Insn::stmt(LD | H | ABS, 12),           // 4: from 1 (14) and 3 (24)
            Insn::stmt(RET | K, 0),                 // 5
            Insn::stmt(LDX | B | MSH, 14),          // 6: 24
            Insn::stmt(RET | K, 1),                 // 7: 24
        ];
        assert_eq!(known(&p), [0, 14, 14, 24, 14, 14, 24, 24]);
        assert_eq!(known(&with_loop(&p)), [0; 10]);
        // div #0 ends the run: nothing flows to the next instruction.
        let q = [
            Insn::stmt(LD | W | ABS, 100),
            Insn::stmt(ALU | DIV | K, 0),
            Insn::stmt(RET | A, 0),
        ];
        assert_eq!(known(&q), [0, 104, 0]);
    }

    #[test]
    fn liveness() {
        let p = [
            Insn::stmt(LD | H | ABS, 12),
            Insn::jump(JMP | JEQ | K, 0x800, 0, 1),
            Insn::stmt(RET | K, 1),
            Insn::stmt(RET | A, 0),
        ];
        assert_eq!(live(&p), [false, true, false, true, false]);
        assert_eq!(live(&with_loop(&p)), [true; 7]);
    }
}
