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
//! packets, `extern "sysv64" fn(slots: *const Slot, n: usize, wires: *const
//! u32, ahead: usize) -> u64` (`Slot` is `exec::Slot`: packet pointer at 0,
//! captured length at 8, [`SLOT_SIZE`] bytes; `n` slots to filter followed
//! by `PREFETCH_AHEAD` more, which are only prefetched; `wires`: their wire
//! lengths, read only by programs that read the wire length; `ahead`: the
//! prefetch distance in bytes of slots, at most `PREFETCH_AHEAD` slots)
//! returning how many packets it accepted: `rbx` walks the slots, `r12`
//! holds their end, `r13` walks the wire lengths, `r14` counts, `r15` holds
//! `ahead` (callee-saved registers, pushed and popped once per call). Each
//! iteration of a program that loads packet bytes prefetches the first
//! cache line of the packet `ahead` bytes of slots further on, loads
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
//! One analysis of the program ([`Plan`]), one emission, buffers reused
//! from one compile to the next on a thread ([`Scratch`]): no allocation
//! in the steady state.

use sift_bpf::insn::op::*;
use sift_bpf::Insn;

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

/// An x86-64 code buffer with forward/backward labels.
///
/// Jumps are emitted short (`jcc rel8`, `jmp rel8`); [`Asm::finish`]
/// widens those whose displacement does not fit to `rel32`.
#[derive(Default)]
struct Asm {
    code: Vec<u8>,
    /// Code offset of each label (`usize::MAX` while unbound).
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
    /// Starts a function at the end of the code with `labels` fresh
    /// labels (the code emitted before stays).
    fn start(&mut self, labels: usize) {
        self.labels.clear();
        self.labels.resize(labels, usize::MAX);
        self.fixups.clear();
        self.bound.clear();
    }

    fn byte(&mut self, b: u8) {
        self.code.push(b);
    }

    fn bytes(&mut self, b: &[u8]) {
        self.code.extend_from_slice(b);
    }

    fn imm32(&mut self, v: u32) {
        self.bytes(&v.to_le_bytes());
    }

    fn rex(&mut self, w: bool, reg: u8, index: u8, base: u8) {
        let rex = 0x40 | (u8::from(w) << 3) | ((reg >> 3) << 2) | ((index >> 3) << 1) | (base >> 3);
        if rex != 0x40 {
            self.byte(rex);
        }
    }

    /// `[prefix] [rex] opcode modrm(reg, mem)`.
    fn op_mem(&mut self, prefix: Option<u8>, w: bool, opc: &[u8], reg: u8, m: Mem) {
        if let Some(p) = prefix {
            self.byte(p);
        }
        self.rex(w, reg, m.index.unwrap_or(0), m.base);
        self.bytes(opc);
        let base = m.base & 7;
        let (md, disp_len) = if m.disp == 0 && base != 5 {
            (0u8, 0)
        } else if fits_i8(i64::from(m.disp)) {
            (1, 1)
        } else {
            (2, 4)
        };
        let reg = (reg & 7) << 3;
        match m.index {
            None if base != 4 => self.byte(md << 6 | reg | base),
            index => {
                self.byte(md << 6 | reg | 4);
                // No index is encoded as index = 4 (rsp) without REX.X.
                self.byte(((index.unwrap_or(4) & 7) << 3) | base);
            }
        }
        match disp_len {
            1 => self.byte(m.disp as i8 as u8),
            4 => self.imm32(m.disp as u32),
            _ => {}
        }
    }

    /// `[prefix] [rex] opcode modrm(reg, rm)` with a register operand.
    fn op_rr(&mut self, prefix: Option<u8>, w: bool, opc: &[u8], reg: u8, rm: u8) {
        if let Some(p) = prefix {
            self.byte(p);
        }
        self.rex(w, reg, 0, rm);
        self.bytes(opc);
        self.byte(0xc0 | ((reg & 7) << 3) | (rm & 7));
    }

    /// `mov r32, imm32` (`xor r32, r32` for 0: clobbers the flags).
    fn mov_ri(&mut self, r: u8, imm: u32) {
        if imm == 0 {
            self.op_rr(None, false, &[0x31], r, r);
        } else {
            self.rex(false, 0, 0, r);
            self.byte(0xb8 + (r & 7));
            self.imm32(imm);
        }
    }

    /// `mov dst32, src32`.
    fn mov_rr(&mut self, dst: u8, src: u8) {
        self.op_rr(None, false, &[0x89], src, dst);
    }

    /// Group-1 ALU `op r, imm` (`ext`: add 0, or 1, and 4, sub 5, xor 6,
    /// cmp 7), 32- or 64-bit.
    fn alu_ri(&mut self, w: bool, ext: u8, r: u8, imm: u32) {
        if fits_i8(i64::from(imm as i32)) {
            self.op_rr(None, w, &[0x83], ext, r);
            self.byte(imm as u8);
        } else {
            self.op_rr(None, w, &[0x81], ext, r);
            self.imm32(imm);
        }
    }

    /// `jcc` to `label` (rel8, widened by [`Asm::finish`] if needed).
    fn jcc(&mut self, cc: Cc, label: usize) {
        self.bytes(&[0x70 | cc as u8, 0]);
        self.fixups.push(Fixup {
            at: self.code.len() - 1,
            label,
            long: false,
        });
    }

    /// `jmp` to `label` (rel8, widened by [`Asm::finish`] if needed).
    fn jmp(&mut self, label: usize) {
        self.bytes(&[0xeb, 0]);
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
        if target == usize::MAX {
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
        loop {
            self.grown.clear();
            let mut added = 0;
            for i in 0..self.fixups.len() {
                let f = self.fixups[i];
                if !f.long && !fits_i8(self.displacement(f)?) {
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
        if self.code.len() > i32::MAX as usize {
            return None;
        }
        for i in 0..self.fixups.len() {
            let f = self.fixups[i];
            let rel = self.displacement(f)?;
            if f.long {
                self.code
                    .get_mut(f.at..f.at + 4)?
                    .copy_from_slice(&(rel as i32).to_le_bytes());
            } else {
                *self.code.get_mut(f.at)? = rel as i8 as u8;
            }
        }
        Some(())
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

/// For each instruction, whether A's value on entry may be read before it
/// is overwritten (conservatively true in programs with backward jumps),
/// into `live` (`prog.len() + 1` entries: the last is the end).
fn a_live_in(prog: &[Insn], has_backward: bool, live: &mut Vec<bool>) {
    let len = prog.len();
    live.clear();
    live.resize(len + 1, has_backward);
    if has_backward {
        return;
    }
    for pc in (0..len).rev() {
        let c = prog[pc].code;
        let next = live[pc + 1];
        live[pc] = match c & 0x07 {
            LD => false,
            LDX | STX => next,
            ST | ALU => true,
            JMP if c & 0xf0 == JA => live.get(ja_target(pc, prog[pc])).copied().unwrap_or(true),
            JMP => true,
            RET => c & 0x18 == A,
            _ => c & 0xf8 == TAX,
        };
    }
}

/// For each instruction, a captured length the packet is known to have
/// when the instruction runs: every path to it passed an absolute load (or
/// `ldx 4*([k]&0xf)`) ending at or beyond that length, whose bounds check
/// would otherwise have rejected the packet. Loads ending within it need no
/// check. All zeros in programs with backward jumps. Into `known`.
fn known_lengths(prog: &[Insn], has_backward: bool, known: &mut Vec<u64>) {
    /// No path reaches the instruction (yet); lengths are below 2^34.
    const UNREACHED: u64 = u64::MAX;
    let len = prog.len();
    known.clear();
    known.resize(len, if has_backward { 0 } else { UNREACHED });
    if has_backward {
        return;
    }
    if let Some(first) = known.first_mut() {
        *first = 0;
    }
    for pc in 0..len {
        let insn = prog[pc];
        let c = insn.code;
        if known[pc] == UNREACHED {
            known[pc] = 0;
        }
        let k_in = known[pc];
        let abs_end = if c & 0x07 == LD && c & 0xe0 == ABS && is_packet_load(c) {
            Some(u64::from(insn.k) + u64::from(Width::of(c).bytes()))
        } else if c == LDX | B | MSH {
            Some(u64::from(insn.k) + 1)
        } else {
            None
        };
        let out = abs_end.map_or(k_in, |end| k_in.max(end));
        let mut flow = |to: usize| {
            if let Some(slot) = known.get_mut(to) {
                *slot = (*slot).min(out);
            }
        };
        match c & 0x07 {
            RET => {}
            JMP if c & 0xf0 == JA => flow(ja_target(pc, insn)),
            JMP => {
                let (t, f) = cond_targets(pc, insn);
                flow(t);
                flow(f);
            }
            ALU if matches!(c & 0xf0, DIV | MOD) && c & X == 0 && insn.k == 0 => {}
            _ => flow(pc + 1),
        }
    }
}

/// What [`compile`] reuses from one call to the next on a thread (no
/// allocation once the buffers have grown to the size of the programs
/// compiled).
#[derive(Default)]
struct Scratch {
    asm: Asm,
    plan: Plan,
}

thread_local! {
    static SCRATCH: std::cell::Cell<Option<Scratch>> = const { std::cell::Cell::new(None) };
}

/// What [`compile`] hands to its `install` function.
pub(crate) struct Compiled<'a> {
    /// The machine code.
    pub(crate) code: &'a [u8],
    /// Whether the program reads the wire length (the count function
    /// then reads the wire lengths it is given).
    pub(crate) reads_len: bool,
    /// Whether the program loads packet bytes.
    pub(crate) reads_packet: bool,
}

/// Scratch buffers larger than this (bytes of code) are not kept.
const SCRATCH_KEEP: usize = 64 * 1024;

/// Compiles a program that `sift_bpf::interp::Program::new` accepted: the
/// per-packet function, or with `count` the count function (see the
/// module documentation), and hands it to `install`. Jumps are emitted
/// short and widened where they do not fit (`Asm::finish`). `None` only if
/// the code would be too large for 32-bit jumps.
pub(crate) fn compile<R>(prog: &[Insn], count: bool, install: impl FnOnce(Compiled<'_>) -> R) -> Option<R> {
    let mut scratch = SCRATCH.with(std::cell::Cell::take).unwrap_or_default();
    let Scratch { asm, plan } = &mut scratch;
    let done = plan.fill(prog).and_then(|()| {
        asm.code.clear();
        asm.code.reserve(prog.len() * 12 + 96);
        emit(prog, plan, count, asm);
        asm.finish()
    });
    let done = done.map(|()| {
        install(Compiled {
            code: &asm.code,
            reads_len: plan.reads_len,
            reads_packet: plan.reads_packet,
        })
    });
    if scratch.asm.code.capacity() <= SCRATCH_KEEP {
        SCRATCH.with(|s| s.set(Some(scratch)));
    }
    done
}

/// Whether an instruction with opcode `code` reads the X register.
fn reads_x_register(code: u16) -> bool {
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

/// Whether the instruction returns 0 (`ret #0`).
fn is_ret0(insn: Insn) -> bool {
    insn.code == RET | K && insn.k == 0
}

/// What emitting `prog` needs to know about it (its vectors are reused,
/// see [`Scratch`]).
#[derive(Default)]
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
    /// Whether each instruction is a jump target (and the end).
    is_target: Vec<bool>,
    /// Whether A is live on entry to each instruction (and the end).
    live: Vec<bool>,
    /// Bytes known to be captured before each instruction.
    known: Vec<u64>,
    /// `fused[pc]`: the load at pc compares raw bytes for the jump at pc + 1.
    fused: Vec<bool>,
    /// Whether the instruction at pc has code of its own.
    emitted: Vec<bool>,
    /// `next_emitted[pc]`: the first emitted instruction after pc (or reject).
    next_emitted: Vec<usize>,
    /// The first instruction from which every emitted one is `ret #0` (the
    /// program's length if the last is not): the count function has no
    /// code for them.
    quiet_tail: usize,
}

impl Plan {
    /// Analyses `prog`; `None` if a jump leaves the program.
    fn fill(&mut self, prog: &[Insn]) -> Option<()> {
        let len = prog.len();
        let reject = len;
        self.is_target.clear();
        self.is_target.resize(len + 1, false);
        let is_target = &mut self.is_target;
        let mut has_backward = false;
        let mut mem_read = 0u16;
        let mut uses_div = false;
        let mut reads_x = false;
        let mut reads_len = false;
        let mut reads_packet = false;
        for (pc, &insn) in prog.iter().enumerate() {
            let c = insn.code;
            reads_packet |= crate::reads_packet(c);
            reads_x |= reads_x_register(c);
            reads_len |= matches!(c & 0x07, LD | LDX) && c & 0xe0 == LEN;
            match c & 0x07 {
                JMP if c & 0xf0 == JA => {
                    let t = ja_target(pc, insn);
                    has_backward |= t <= pc;
                    *is_target.get_mut(t)? = true;
                }
                JMP => {
                    let (t, f) = cond_targets(pc, insn);
                    *is_target.get_mut(t)? = true;
                    *is_target.get_mut(f)? = true;
                }
                LD | LDX if c & 0xe0 == MEM => mem_read |= 1 << (insn.k & 15),
                ALU if matches!(c & 0xf0, DIV | MOD) => uses_div = true,
                _ => {}
            }
        }
        a_live_in(prog, has_backward, &mut self.live);
        known_lengths(prog, has_backward, &mut self.known);
        let live = &self.live;
        self.fused.clear();
        self.fused.resize(len, false);
        for pc in 0..len.saturating_sub(1) {
            let (l, j) = (prog[pc], prog[pc + 1]);
            if !is_packet_load(l.code) || !(j.code == JMP | JEQ | K || j.code == JMP | JSET | K) {
                continue;
            }
            let (t, f) = cond_targets(pc + 1, j);
            let fits = j.code == JMP | JSET | K
                || u64::from(j.k) < 1u64 << (8 * Width::of(l.code).bytes());
            if fits && !live[t] && !live[f] {
                self.fused[pc] = true;
            }
        }
        let (is_target, fused) = (&self.is_target, &self.fused);
        self.emitted.clear();
        self.emitted
            .extend((0..len).map(|pc| pc == 0 || is_target[pc] || !fused[pc - 1]));
        self.next_emitted.clear();
        self.next_emitted.resize(len, reject);
        let mut following = reject;
        self.quiet_tail = len;
        let mut quiet = true;
        for pc in (0..len).rev() {
            self.next_emitted[pc] = following;
            if self.emitted[pc] {
                following = pc;
                quiet &= is_ret0(prog[pc]);
                if quiet {
                    self.quiet_tail = pc;
                }
            }
        }
        self.has_backward = has_backward;
        self.mem_read = mem_read;
        self.uses_div = uses_div;
        self.reads_a_first = live[0];
        self.reads_x = reads_x;
        self.reads_len = reads_len;
        self.reads_packet = reads_packet;
        Some(())
    }
}

/// Emits the code for `prog` at the end of `asm` (jump fields unpatched):
/// the per-packet function, or with `count` the count function (module
/// documentation).
fn emit(prog: &[Insn], plan: &Plan, count: bool, asm: &mut Asm) {
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
    let (known, fused, emitted, next_emitted) =
        (&plan.known, &plan.fused, &plan.emitted, &plan.next_emitted);
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
    if count {
        // push rbx; push r12; push r14 (and r13 for the wire lengths, r15
        // for the prefetch distance)
        asm.bytes(&[0x53, 0x41, 0x54, 0x41, 0x56]);
        if plan.reads_len {
            asm.bytes(&[0x41, 0x55]);
        }
        if plan.reads_packet {
            asm.bytes(&[0x41, 0x57]); // push r15
            asm.bytes(&[0x49, 0x89, 0xcf]); // mov r15, rcx (prefetch distance, bytes of slots)
        }
        asm.bytes(&[0x48, 0x89, 0xfb]); // mov rbx, rdi (slot)
        asm.bytes(&[0x48, 0xc1, 0xe6, 0x04]); // shl rsi, 4
        asm.bytes(&[0x4c, 0x8d, 0x24, 0x37]); // lea r12, [rdi + rsi] (end of the slots)
        asm.bytes(&[0x45, 0x31, 0xf6]); // xor r14d, r14d (the count)
        if plan.reads_len {
            asm.bytes(&[0x49, 0x89, 0xd5]); // mov r13, rdx (wire length)
        }
        asm.bytes(&[0x48, 0x85, 0xf6]); // test rsi, rsi
        asm.jcc(Cc::E, done);
        asm.bind(top);
        asm.bytes(&[0x48, 0x8b, 0x3b]); // mov rdi, [rbx] (packet pointer)
        asm.bytes(&[0x48, 0x8b, 0x73, 0x08]); // mov rsi, [rbx + 8] (captured length)
        if plan.reads_len {
            asm.bytes(&[0x41, 0x8b, 0x55, 0x00]); // mov edx, [r13] (wire length)
        }
        if plan.reads_packet {
            // mov rax, [rbx + r15] (the packet r15 / SLOT_SIZE slots
            // further on); prefetcht0 [rax]
            asm.bytes(&[0x4a, 0x8b, 0x04, 0x3b]);
            asm.bytes(&[0x0f, 0x18, 0x08]);
        }
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
    for i in 0..16 {
        if mem_read & (1 << i) != 0 {
            // mov dword [rsp - 64 + 4i], 0
            asm.op_mem(None, false, &[0xc7], 0, scratch(i));
            asm.imm32(0);
        }
    }
    if has_backward {
        asm.mov_ri(R11, sift_bpf::interp::MAX_BACKWARD_JUMPS);
    }

    let end = if count { quiet_tail } else { len };
    for pc in 0..end {
        if !emitted[pc] {
            continue;
        }
        asm.bind(pc);
        let insn = prog[pc];
        let (c, k) = (insn.code, insn.k);
        // (Past `end` the count function has only its tail.)
        let next = if count && next_emitted[pc] >= end { tail } else { next_emitted[pc] };
        match c & 0x07 {
            LD if is_packet_load(c) => {
                let width = Width::of(c);
                let m = packet_operand(asm, c & 0xe0 == IND, k, width.bytes(), known[pc], reject);
                if fused[pc] {
                    let j = prog[pc + 1];
                    let (t, f) = cond_targets(pc + 1, j);
                    let is_eq = j.code & 0xf0 == JEQ;
                    raw_compare(asm, width, m, j.k, is_eq);
                    branch(asm, if is_eq { Cc::E } else { Cc::Ne }, to(t), to(f), next);
                } else {
                    load_a(asm, width, m);
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
                    let m = packet_operand(asm, false, k, 1, known[pc], reject);
                    asm.op_mem(None, false, &[0x0f, 0xb6], RCX, m); // movzx ecx, byte [m]
                    asm.alu_ri(false, 4, RCX, 0xf);
                    asm.op_rr(None, false, &[0xc1], 4, RCX); // shl ecx, 2
                    asm.byte(2);
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
                    asm.bytes(&[0x49, 0x83, 0xd6, 0x00]); // adc r14, 0
                } else if k != 0 {
                    asm.bytes(&[0x49, 0xff, 0xc6]); // inc r14
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
    asm.bytes(&[0x48, 0x83, 0xc3, SLOT_SIZE]); // add rbx, slot size
    if plan.reads_len {
        asm.bytes(&[0x49, 0x83, 0xc5, 0x04]); // add r13, 4
    }
    asm.bytes(&[0x4c, 0x39, 0xe3]); // cmp rbx, r12
    asm.jcc(Cc::Ne, top);
    asm.bind(done);
    asm.bytes(&[0x4c, 0x89, 0xf0]); // mov rax, r14
    if plan.reads_packet {
        asm.bytes(&[0x41, 0x5f]); // pop r15
    }
    if plan.reads_len {
        asm.bytes(&[0x41, 0x5d]); // pop r13
    }
    asm.bytes(&[0x41, 0x5e, 0x41, 0x5c, 0x5b, 0xc3]); // pop r14; pop r12; pop rbx; ret
}

/// The size of a slot of the count function (`exec::Slot`: packet
/// pointer, captured length; 16 bytes: a copy of the slice's two words).
pub(crate) const SLOT_SIZE: u8 = 16;

/// Emits the bounds check of a `size`-byte packet load at `k` (`X + k` if
/// `indexed`; none for an absolute load ending within `known`, see
/// [`known_lengths`]) and returns the memory operand addressing it.
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

/// A = the big-endian value at `m`.
fn load_a(asm: &mut Asm, width: Width, m: Mem) {
    match width {
        Width::B => asm.op_mem(None, false, &[0x0f, 0xb6], RAX, m), // movzx eax, byte
        Width::H => {
            asm.op_mem(None, false, &[0x0f, 0xb7], RAX, m); // movzx eax, word
            asm.bytes(&[0x66, 0xc1, 0xc0, 0x08]); // rol ax, 8
        }
        Width::W => {
            asm.op_mem(None, false, &[0x8b], RAX, m); // mov eax, [m]
            asm.bytes(&[0x0f, 0xc8]); // bswap eax
        }
    }
}

/// Compares (`cmp`) or tests (`test`) the packet bytes at `m` with `k`
/// converted to network order.
fn raw_compare(asm: &mut Asm, width: Width, m: Mem, k: u32, is_eq: bool) {
    match width {
        Width::B => {
            asm.op_mem(
                None,
                false,
                &[if is_eq { 0x80 } else { 0xf6 }],
                if is_eq { 7 } else { 0 },
                m,
            );
            asm.byte(k as u8);
        }
        Width::H => {
            let v = (k as u16).swap_bytes();
            if is_eq && fits_i8(i64::from(v as i16)) {
                asm.op_mem(Some(0x66), false, &[0x83], 7, m);
                asm.byte(v as u8);
            } else {
                asm.op_mem(
                    Some(0x66),
                    false,
                    &[if is_eq { 0x81 } else { 0xf7 }],
                    if is_eq { 7 } else { 0 },
                    m,
                );
                asm.bytes(&v.to_le_bytes());
            }
        }
        Width::W => {
            let v = k.swap_bytes();
            if is_eq && fits_i8(i64::from(v as i32)) {
                asm.op_mem(None, false, &[0x83], 7, m);
                asm.byte(v as u8);
            } else {
                asm.op_mem(
                    None,
                    false,
                    &[if is_eq { 0x81 } else { 0xf7 }],
                    if is_eq { 7 } else { 0 },
                    m,
                );
                asm.imm32(v);
            }
        }
    }
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
            asm.byte(0xa9); // test eax, imm32
            asm.imm32(k);
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
                asm.op_rr(None, false, &[0x6b], RAX, RAX);
                asm.byte(k as u8);
            } else {
                asm.op_rr(None, false, &[0x69], RAX, RAX);
                asm.imm32(k);
            }
        }
        DIV | MOD if k == 0 => asm.jmp(reject),
        DIV if k.is_power_of_two() => shift_k(asm, 5, k.trailing_zeros()),
        MOD if k.is_power_of_two() => asm.alu_ri(false, 4, RAX, k - 1),
        DIV | MOD => {
            asm.mov_ri(RDX, 0);
            asm.mov_ri(R9, k);
            asm.op_rr(None, false, &[0xf7], 6, R9); // div r9d
            if op == MOD {
                asm.mov_rr(RAX, RDX);
            }
        }
        LSH => shift_k(asm, 4, k & 31),
        _ => shift_k(asm, 5, k & 31),
    }
}

/// `shl`/`shr eax, n` (`ext` 4 or 5); nothing for 0.
fn shift_k(asm: &mut Asm, ext: u8, n: u32) {
    if n != 0 {
        asm.op_rr(None, false, &[0xc1], ext, RAX);
        asm.byte(n as u8);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asm() -> Asm {
        Asm {
            labels: vec![usize::MAX; 1],
            ..Asm::default()
        }
    }

    fn known(p: &[Insn], has_backward: bool) -> Vec<u64> {
        let mut v = Vec::new();
        known_lengths(p, has_backward, &mut v);
        v
    }

    fn live(p: &[Insn], has_backward: bool) -> Vec<bool> {
        let mut v = Vec::new();
        a_live_in(p, has_backward, &mut v);
        v
    }

    #[test]
    fn jumps_that_fit_get_rel8_and_the_rest_moves() {
        let mut a = asm();
        a.labels = vec![usize::MAX; 3];
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
        assert_eq!(known(&p, false), [0, 14, 14, 24, 14, 14, 24, 24]);
        assert_eq!(known(&p, true), [0; 8]);
        // div #0 ends the run: nothing flows to the next instruction.
        let q = [
            Insn::stmt(LD | W | ABS, 100),
            Insn::stmt(ALU | DIV | K, 0),
            Insn::stmt(RET | A, 0),
        ];
        assert_eq!(known(&q, false), [0, 104, 0]);
    }

    #[test]
    fn liveness() {
        let p = [
            Insn::stmt(LD | H | ABS, 12),
            Insn::jump(JMP | JEQ | K, 0x800, 0, 1),
            Insn::stmt(RET | K, 1),
            Insn::stmt(RET | A, 0),
        ];
        assert_eq!(live(&p, false), [false, true, false, true, false]);
        assert_eq!(live(&p, true), [true; 5]);
    }
}
