//! A classic BPF interpreter with libpcap 1.10.3 `bpf_filter()` semantics.
//!
//! [`Program::new`] checks a program once and decodes it into a compact
//! internal form (absolute jump targets, constant divisions by zero turned
//! into rejections, shift counts pre-masked); [`Program::run`] then runs it
//! on packets without any per-instruction decoding. [`run`] does both.
//!
//! # Semantics (libpcap 1.10.3, measured on the installed library)
//!
//! * A load is in bounds iff `offset + size <= caplen` in exact arithmetic;
//!   for `[x + k]` the offset is `X + k` without 32-bit wrap-around. An
//!   out-of-bounds load (including `ldxb 4*([k]&0xf)`) rejects the packet:
//!   `run` returns 0.
//! * Offsets at and above `SKF_AD_OFF` (0xfffff000) are ordinary offsets,
//!   so out of bounds: libpcap's offline filter has no ancillary data.
//! * `div x` / `mod x` with `X == 0` return 0.
//! * `lsh x` / `rsh x` with `X >= 32` set A to 0 (1.10.3 checks `X < 32`).
//! * `lsh #k` / `rsh #k` shift by `k % 32`: 1.10.3 shifts by the raw `k`,
//!   undefined in C, and x86 masks the count (measured: `lsh #33` = `lsh #1`).
//!   The kernel refuses such programs.
//! * `div #0` / `mod #0` return 0 (1.10.3 crashes with SIGFPE; the kernel
//!   refuses such programs).
//! * Scratch memory starts zeroed (1.10.3 leaves it uninitialized; the
//!   kernel refuses programs that read it before writing it).
//! * `ja` takes its offset as signed, as libpcap does for `ip6 protochain`
//!   loops. After 64 backward jumps a run gives up and returns 0 (the bound
//!   of later libpcap releases; 1.10.3 has none, and its `protochain` code can
//!   loop forever on a crafted packet).
//! * Running past the last instruction returns 0.
//!
//! # Performance
//!
//! A program without backward jumps (every program sift generates) runs in
//! a direct-threaded form (`interp/threaded.rs`): one node per instruction,
//! each with code specialized for its operation and the shape of its
//! targets, ending in a tail call of the next node's code; loads fused with
//! the following jump, `ret #k` targets folded into the jump, `ja` resolved
//! away, and chains of `jeq` on one value turned into one set-membership
//! test. [`Program::count_matches`] filters many packets per call and, for
//! long programs, reads the next packets' first bytes ahead.
//!
//! The other programs run in a loop: the decoded program is a boxed slice of
//! 16-byte operations dispatched by one
//! `match` in a loop; jump targets are absolute indexes, so a jump is an
//! assignment. A load into A followed by a conditional jump on a constant
//! (`ldh [12]; jeq #0x800`, `ldb [x + 14]; jset #0x2`), the bulk of every
//! filter, is fused into one operation; the jump keeps its own slot, as other
//! jumps may land on it. Conditional jumps are compiled as real branches (the
//! `jf` side marked cold) rather than conditional moves: the CPU then
//! predicts the next instruction instead of waiting for the packet load and
//! the comparison. Bounds checks are slice `get`s that end the run with 0;
//! nothing can panic. Measured over the tcpdump test captures (4,076
//! Ethernet packets, a loop calling `run` per packet), typical filters take
//! 13-19% less time per packet than libpcap 1.10.3's `bpf_filter` (same
//! programs), trivial ones (`ip`, a lone `ret`) 4-9% more.

use crate::insn::{op, Insn};
use crate::validate::{ValidateError, ValidateErrorKind};
use std::num::NonZeroU32;

mod threaded;

/// The longest program [`Program::new`] accepts. libpcap's unoptimized
/// output for big expressions can exceed the kernel's 4096 instructions.
pub const MAX_PROGRAM_LEN: usize = 1 << 24;

/// How many backward jumps one run may take before giving up.
pub const MAX_BACKWARD_JUMPS: u32 = 64;

/// A decoded instruction. Jump targets are absolute indexes into the decoded
/// program, which has the same numbering as the original one plus a final
/// `ret #0` sentinel. [`Program::run`] documents the semantics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    LdAbsW(u32),
    LdAbsH(u32),
    LdAbsB(u32),
    LdIndW(u32),
    LdIndH(u32),
    LdIndB(u32),
    LdLen,
    LdxLen,
    LdImm(u32),
    LdxImm(u32),
    LdxMsh(u32),
    LdMem(u8),
    LdxMem(u8),
    St(u8),
    Stx(u8),
    AddK(u32),
    SubK(u32),
    MulK(u32),
    DivK(NonZeroU32),
    ModK(NonZeroU32),
    AndK(u32),
    OrK(u32),
    XorK(u32),
    LshK(u32),
    RshK(u32),
    AddX,
    SubX,
    MulX,
    DivX,
    ModX,
    AndX,
    OrX,
    XorX,
    LshX,
    RshX,
    Neg,
    Tax,
    Txa,
    Ja(u32),
    JaBack(u32),
    JeqK { k: u32, t: u32, f: u32 },
    JgtK { k: u32, t: u32, f: u32 },
    JgeK { k: u32, t: u32, f: u32 },
    JsetK { k: u32, t: u32, f: u32 },
    JeqX { t: u32, f: u32 },
    JgtX { t: u32, f: u32 },
    JgeX { t: u32, f: u32 },
    JsetX { t: u32, f: u32 },
    RetK(u32),
    RetA,
    // Fused "load into A, then compare with k and branch" pairs (programs
    // shorter than 65536 instructions only, for the 16-bit targets).
    AbsBJeq(Fused),
    AbsBJgt(Fused),
    AbsBJge(Fused),
    AbsBJset(Fused),
    AbsHJeq(Fused),
    AbsHJgt(Fused),
    AbsHJge(Fused),
    AbsHJset(Fused),
    AbsWJeq(Fused),
    AbsWJgt(Fused),
    AbsWJge(Fused),
    AbsWJset(Fused),
    IndBJeq(Fused),
    IndBJgt(Fused),
    IndBJge(Fused),
    IndBJset(Fused),
    IndHJeq(Fused),
    IndHJgt(Fused),
    IndHJge(Fused),
    IndHJset(Fused),
    IndWJeq(Fused),
    IndWJgt(Fused),
    IndWJge(Fused),
    IndWJset(Fused),
}

/// The operands of a fused load-and-branch: the load's offset, the
/// comparison's constant and the two targets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Fused {
    off: u32,
    k: u32,
    t: u16,
    f: u16,
}

/// A checked, decoded classic BPF program, ready to run on packets.
#[derive(Clone, Debug)]
pub struct Program {
    ops: Box<[Op]>,
    /// The direct-threaded form, for programs without backward jumps or very
    /// long paths (`ops` runs the others).
    threaded: Option<threaded::Tree>,
    /// The two packet offsets [`Program::count_matches`] reads ahead (the
    /// lowest and the highest byte the program's loads are likely to
    /// read), or `None` for programs that load nothing or are very short.
    read_ahead: Option<(usize, usize)>,
    /// Whether the program loads packet bytes at all (what
    /// [`Program::count_matches_hinted`] prefetches for).
    loads_packet: bool,
    /// The offset of the deepest header byte the program reads that may
    /// lie on a packet's second cache line ([`header_line`]), whose line
    /// [`Program::count_matches_hinted`] prefetches too.
    header_line: Option<usize>,
}

/// The shortest longest path (in instructions) for which
/// [`Program::count_matches`] reads ahead: below, touching the packets
/// costs more than it saves when they are in cache.
const READ_AHEAD_PATH: u32 = 4;

/// Packets [`Program::count_matches`] reads ahead at a time.
const READ_AHEAD: usize = 8;

/// The average distance in memory between consecutive packets' bytes at
/// or below which [`Program::count_matches`] does not read ahead.
const READ_AHEAD_GAP: usize = 256;

/// The distance in memory between the first and the last packet of a batch
/// at or below which [`Program::count_matches`] does not read ahead: such a
/// batch may well be in the last-level cache (a capture ring's block, just
/// written; the repeated passes of a benchmark over 20,000 packets), where
/// reading ahead only costs (on `web`, 20,000 packets spanning 17 MB, it
/// halved the speed of `tcp`).
const READ_AHEAD_SPAN: usize = 32 << 20;

/// How a packet load addresses the packet.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Addressing {
    /// `ld [k]`.
    Abs,
    /// `ld [x + k]`.
    Ind,
    /// `ldx 4 * ([k] & 0xf)`.
    Msh,
}

/// The packet loads of `prog`: how each addresses the packet, its
/// constant and its size in bytes (1 for `msh`).
fn packet_loads(prog: &[Insn]) -> impl Iterator<Item = (Addressing, usize, usize)> + '_ {
    use op::*;
    prog.iter().filter_map(|insn| {
        let class = insn.code & 0x07;
        let size = match insn.code & 0x18 {
            W => 4,
            H => 2,
            _ => 1,
        };
        let addressing = match (class, insn.code & 0xe0) {
            (LD, ABS) => Addressing::Abs,
            (LD, IND) => Addressing::Ind,
            (LDX, MSH) => Addressing::Msh,
            _ => return None,
        };
        Some((addressing, insn.k as usize, size))
    })
}

/// The bytes worth reading ahead for `prog`: the lowest offset it loads
/// from and the highest byte it loads (for `[x + k]`, assuming X is at
/// least 20, an IPv4 header), capped; `None` if it loads nothing.
fn read_ahead_span(prog: &[Insn]) -> Option<(usize, usize)> {
    const CAP: usize = 4096;
    let mut span: Option<(usize, usize)> = None;
    for (addressing, k, size) in packet_loads(prog) {
        let k = k.min(CAP);
        let last = match addressing {
            Addressing::Abs => k + size - 1,
            Addressing::Ind => k + size - 1 + 20,
            Addressing::Msh => k,
        };
        let (lo, hi) = span.unwrap_or((k, last));
        span = Some((lo.min(k), hi.max(last).min(CAP)));
    }
    span
}

/// The offset of the deepest header byte `prog` reads that may lie on a
/// packet's second cache line when its first does not (what
/// [`Program::header_line`] gives for it, and the line the JIT's count
/// function of `prog` prefetches where `sift_jit::prefetch_header_lines`): the last byte of
/// its absolute loads ending within 48 bytes, of its indexed loads
/// (`[x + k]`, assuming X is 20, an IPv4 header: `tcp port 80` reads byte
/// 37 of an Ethernet frame) and of its `msh` loads, at most 63; `None`
/// below 16 (byte 15 and all before it lie on the line of byte 0 of a
/// packet at any 16-byte boundary). The rule of the JIT's count function
/// (`sift_jit`'s `deep_line`): deeper absolute offsets are the bytes of
/// IPv6 and extension headers, which most packets do not reach.
pub fn header_line(prog: &[Insn]) -> Option<usize> {
    packet_loads(prog)
        .filter_map(|(addressing, k, size)| match addressing {
            Addressing::Abs if k.saturating_add(size) <= 49 => Some(k + size - 1),
            Addressing::Ind => Some(k.saturating_add(size + 19).min(63)),
            Addressing::Msh if k <= 63 => Some(k),
            _ => None,
        })
        .max()
        .filter(|&d| d >= 16)
}

impl Program {
    /// Checks and decodes `prog`. Accepted: 1 to [`MAX_PROGRAM_LEN`]
    /// instructions, every opcode known (the 49 of
    /// [`KNOWN_OPCODES`](crate::validate::KNOWN_OPCODES)), scratch indexes
    /// below 16, and every jump target inside the program (`ja` may jump
    /// backward). This is weaker than [`validate`](crate::validate::validate):
    /// it accepts programs libpcap runs but the kernel refuses.
    pub fn new(prog: &[Insn]) -> Result<Program, ValidateError> {
        Program::decode(prog, true)
    }

    /// [`Program::new`], building the threaded form only if `threaded` (it
    /// costs an allocation per instruction: not worth it for one packet).
    fn decode(prog: &[Insn], threaded: bool) -> Result<Program, ValidateError> {
        let len = prog.len();
        if len == 0 {
            return Err(ValidateError::program(ValidateErrorKind::Empty));
        }
        if len > MAX_PROGRAM_LEN {
            return Err(ValidateError::program(ValidateErrorKind::TooLong { len, max: MAX_PROGRAM_LEN }));
        }
        let mut ops = Vec::with_capacity(len + 1);
        for (pc, &insn) in prog.iter().enumerate() {
            ops.push(decode(pc, insn, len)?);
        }
        ops.push(Op::RetK(0));
        let threaded = if threaded { threaded::Tree::build(&ops) } else { None };
        if len < usize::from(u16::MAX) {
            for pc in 0..len - 1 {
                if let Some(fused) = fuse(ops[pc], ops[pc + 1]) {
                    // The jump keeps its own slot: other jumps may land on it.
                    ops[pc] = fused;
                }
            }
        }
        let long = match &threaded {
            Some(tree) => tree.longest_path() >= READ_AHEAD_PATH,
            None => len >= READ_AHEAD_PATH as usize,
        };
        let span = read_ahead_span(prog);
        let read_ahead = if long { span } else { None };
        Ok(Program {
            ops: ops.into_boxed_slice(),
            threaded,
            read_ahead,
            loads_packet: span.is_some(),
            header_line: header_line(prog),
        })
    }

    /// The number of instructions (as given to [`Program::new`]).
    pub fn len(&self) -> usize {
        self.ops.len() - 1
    }

    /// Always false: a program has at least one instruction.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Runs the program on a packet: `data` holds the captured bytes,
    /// `wire_len` is the original length (`len`, `ld #pktlen`). Returns what
    /// the program returns; 0 means "reject".
    #[inline]
    pub fn run(&self, data: &[u8], wire_len: u32) -> u32 {
        match &self.threaded {
            Some(tree) => tree.run(data, wire_len),
            None => self.run_loop(data, wire_len),
        }
    }

    /// Counts the packets among `packets` for which the program returns
    /// non-zero; `parts` gives a packet's captured bytes and wire length.
    /// The verdicts are those of [`Program::run`].
    ///
    /// The batch pays the per-run setup once: the threaded form's state
    /// (wire length, scratch memory) lives across the packets, and only
    /// programs that read scratch memory get it zeroed again per packet.
    ///
    /// Unless the program is very short or loads nothing, the first and
    /// last header bytes it loads are read from the next 8 packets on the
    /// way, so that those cache lines are (being) brought in
    /// by the time the packets are filtered: with packets out of cache, the
    /// misses of several packets then overlap instead of each stalling a run
    /// that is too long for the processor to look past. This is skipped for
    /// batches whose bytes span at most 32 MiB (likely in cache), and while
    /// the packets' bytes lie close together in memory (at most 256 bytes
    /// apart on average, e.g. small packets stored one after another): the
    /// processor's own prefetcher streams those, and reading ahead only gets
    /// in its way (on the 1M-packet `pingflood` workload, 98-byte packets
    /// 144 bytes apart, it cost 20-30%).
    #[inline]
    pub fn count_matches<P>(&self, packets: &[P], parts: impl Fn(&P) -> (&[u8], u32)) -> u64 {
        let mut n = 0u64;
        let mut ctx = threaded::Ctx::new();
        // Pointer values only: how far apart the packets' bytes are.
        let at = |p: &P| parts(p).0.as_ptr() as usize;
        let span = match (packets.first(), packets.last()) {
            (Some(first), Some(last)) => at(first).abs_diff(at(last)),
            _ => 0,
        };
        let read_ahead = if span > READ_AHEAD_SPAN { self.read_ahead } else { None };
        for (i, chunk) in packets.chunks(READ_AHEAD).enumerate() {
            if let (Some((lo, hi)), Some(first), Some(last)) = (read_ahead, chunk.first(), chunk.last()) {
                if at(last).abs_diff(at(first)) > READ_AHEAD_GAP * (chunk.len() - 1) {
                    let mut touched = 0u8;
                    for q in packets.iter().skip((i + 1) * READ_AHEAD).take(READ_AHEAD) {
                        let data = parts(q).0;
                        touched ^= data.get(lo).copied().unwrap_or(0) ^ data.get(hi).copied().unwrap_or(0);
                    }
                    std::hint::black_box(touched);
                }
            }
            match &self.threaded {
                Some(tree) => {
                    for q in chunk {
                        let (data, wire_len) = parts(q);
                        n += u64::from(tree.run_in(&mut ctx, data, wire_len) != 0);
                    }
                }
                None => {
                    for q in chunk {
                        let (data, wire_len) = parts(q);
                        n += u64::from(self.run_loop(data, wire_len) != 0);
                    }
                }
            }
        }
        n
    }

    /// The offset of the deepest header byte the program reads that may lie
    /// on a packet's second cache line when its first does not (16 to 63),
    /// if any: the bytes [`Program::count_matches_hinted`] also hints when
    /// asked to. Absolute loads ending within 48 bytes count, indexed loads
    /// (`[x + k]`) as if X were 20 (an IPv4 header: `tcp port 80` reads
    /// byte 37 of an Ethernet frame), `msh` loads by the byte they read;
    /// deeper absolute offsets are IPv6 and extension headers, which most
    /// packets do not reach. The JIT's count function prefetches by the
    /// same rule.
    pub fn header_line(&self) -> Option<usize> {
        self.header_line
    }

    /// [`Program::count_matches`] with the caller's prefetch instead of
    /// reading ahead: while packet `i` is filtered, `hint` gets the bytes
    /// of packet `i + ahead` (the facade passes `sift_jit::simd::prefetch`,
    /// which this crate cannot issue without `unsafe`), and, if
    /// `header_line`, also its bytes from [`Program::header_line`] on
    /// (where the packet has that many). On the 1M-packet `pingflood`
    /// workload this is what lifts the interpreter where reading ahead with
    /// loads did not pay (see `READ_AHEAD_GAP`); the header line halves its
    /// time on `mixed` and `tcp5555` on an AMD Zen 5 (docs/performance.md).
    #[inline]
    pub fn count_matches_hinted<P>(
        &self,
        packets: &[P],
        parts: impl Fn(&P) -> (&[u8], u32),
        ahead: usize,
        header_line: bool,
        hint: impl Fn(&[u8]),
    ) -> u64 {
        let mut n = 0u64;
        let mut ctx = threaded::Ctx::new();
        let mut run = |q: &P| {
            let (data, wire_len) = parts(q);
            u64::from(match &self.threaded {
                Some(tree) => tree.run_in(&mut ctx, data, wire_len),
                None => self.run_loop(data, wire_len),
            } != 0)
        };
        // The packets with one `ahead` places further (hinted), then the
        // last `ahead` (none): no test per packet of whether there is one.
        let ahead = if self.loads_packet { ahead.min(packets.len()) } else { packets.len() };
        let (hinted, rest) = packets.split_at(packets.len() - ahead);
        let line = self.header_line.filter(|_| header_line);
        for (q, far) in hinted.iter().zip(&packets[ahead..]) {
            let far = parts(far).0;
            hint(far);
            if let Some(deep) = line.and_then(|l| far.get(l..)) {
                hint(deep);
            }
            n += run(q);
        }
        for q in rest {
            n += run(q);
        }
        n
    }

    /// Runs the decoded operations in a fetch-and-dispatch loop.
    fn run_loop(&self, data: &[u8], wire_len: u32) -> u32 {
        let ops = &self.ops[..];
        let mut a: u32 = 0;
        let mut x: u32 = 0;
        let mut mem = [0u32; 16];
        let mut backward = 0u32;
        let mut pc: usize = 0;
        macro_rules! load {
            ($e:expr) => {
                match $e {
                    Some(v) => a = v,
                    None => return 0,
                }
            };
        }
        macro_rules! branch {
            ($cond:expr, $t:expr, $f:expr) => {
                pc = if $cond {
                    $t as usize
                } else {
                    std::hint::cold_path();
                    $f as usize
                }
            };
        }
        macro_rules! fused {
            ($load:expr, $o:expr, &) => {
                match $load {
                    Some(v) => {
                        a = v;
                        branch!(a & $o.k != 0, $o.t, $o.f)
                    }
                    None => return 0,
                }
            };
            ($load:expr, $o:expr, $cmp:tt) => {
                match $load {
                    Some(v) => {
                        a = v;
                        branch!(a $cmp $o.k, $o.t, $o.f)
                    }
                    None => return 0,
                }
            };
        }
        loop {
            let Some(&insn) = ops.get(pc) else { return 0 };
            pc += 1;
            match insn {
                Op::LdAbsW(k) => load!(word(data, k as usize)),
                Op::LdAbsH(k) => load!(half(data, k as usize)),
                Op::LdAbsB(k) => load!(data.get(k as usize).map(|&b| u32::from(b))),
                Op::LdIndW(k) => load!(indexed(x, k).and_then(|at| word(data, at))),
                Op::LdIndH(k) => load!(indexed(x, k).and_then(|at| half(data, at))),
                Op::LdIndB(k) => load!(indexed(x, k).and_then(|at| data.get(at)).map(|&b| u32::from(b))),
                Op::LdLen => a = wire_len,
                Op::LdxLen => x = wire_len,
                Op::LdImm(k) => a = k,
                Op::LdxImm(k) => x = k,
                Op::LdxMsh(k) => match data.get(k as usize) {
                    Some(&b) => x = u32::from(b & 0xf) << 2,
                    None => return 0,
                },
                Op::LdMem(i) => a = mem[usize::from(i & 15)],
                Op::LdxMem(i) => x = mem[usize::from(i & 15)],
                Op::St(i) => mem[usize::from(i & 15)] = a,
                Op::Stx(i) => mem[usize::from(i & 15)] = x,
                Op::AddK(k) => a = a.wrapping_add(k),
                Op::SubK(k) => a = a.wrapping_sub(k),
                Op::MulK(k) => a = a.wrapping_mul(k),
                Op::DivK(k) => a /= k,
                Op::ModK(k) => a %= k,
                Op::AndK(k) => a &= k,
                Op::OrK(k) => a |= k,
                Op::XorK(k) => a ^= k,
                Op::LshK(k) => a = a.wrapping_shl(k),
                Op::RshK(k) => a = a.wrapping_shr(k),
                Op::AddX => a = a.wrapping_add(x),
                Op::SubX => a = a.wrapping_sub(x),
                Op::MulX => a = a.wrapping_mul(x),
                Op::DivX => match NonZeroU32::new(x) {
                    Some(d) => a /= d,
                    None => return 0,
                },
                Op::ModX => match NonZeroU32::new(x) {
                    Some(d) => a %= d,
                    None => return 0,
                },
                Op::AndX => a &= x,
                Op::OrX => a |= x,
                Op::XorX => a ^= x,
                Op::LshX => a = a.checked_shl(x).unwrap_or(0),
                Op::RshX => a = a.checked_shr(x).unwrap_or(0),
                Op::Neg => a = a.wrapping_neg(),
                Op::Tax => x = a,
                Op::Txa => a = x,
                Op::Ja(t) => pc = t as usize,
                Op::JaBack(t) => {
                    backward += 1;
                    if backward > MAX_BACKWARD_JUMPS {
                        return 0;
                    }
                    pc = t as usize;
                }
                Op::JeqK { k, t, f } => branch!(a == k, t, f),
                Op::JgtK { k, t, f } => branch!(a > k, t, f),
                Op::JgeK { k, t, f } => branch!(a >= k, t, f),
                Op::JsetK { k, t, f } => branch!(a & k != 0, t, f),
                Op::JeqX { t, f } => branch!(a == x, t, f),
                Op::JgtX { t, f } => branch!(a > x, t, f),
                Op::JgeX { t, f } => branch!(a >= x, t, f),
                Op::JsetX { t, f } => branch!(a & x != 0, t, f),
                Op::RetK(k) => return k,
                Op::RetA => return a,
                Op::AbsBJeq(o) => fused!(data.get(o.off as usize).map(|&b| u32::from(b)), o, ==),
                Op::AbsBJgt(o) => fused!(data.get(o.off as usize).map(|&b| u32::from(b)), o, >),
                Op::AbsBJge(o) => fused!(data.get(o.off as usize).map(|&b| u32::from(b)), o, >=),
                Op::AbsBJset(o) => fused!(data.get(o.off as usize).map(|&b| u32::from(b)), o, &),
                Op::AbsHJeq(o) => fused!(half(data, o.off as usize), o, ==),
                Op::AbsHJgt(o) => fused!(half(data, o.off as usize), o, >),
                Op::AbsHJge(o) => fused!(half(data, o.off as usize), o, >=),
                Op::AbsHJset(o) => fused!(half(data, o.off as usize), o, &),
                Op::AbsWJeq(o) => fused!(word(data, o.off as usize), o, ==),
                Op::AbsWJgt(o) => fused!(word(data, o.off as usize), o, >),
                Op::AbsWJge(o) => fused!(word(data, o.off as usize), o, >=),
                Op::AbsWJset(o) => fused!(word(data, o.off as usize), o, &),
                Op::IndBJeq(o) => fused!(indexed(x, o.off).and_then(|at| data.get(at)).map(|&b| u32::from(b)), o, ==),
                Op::IndBJgt(o) => fused!(indexed(x, o.off).and_then(|at| data.get(at)).map(|&b| u32::from(b)), o, >),
                Op::IndBJge(o) => fused!(indexed(x, o.off).and_then(|at| data.get(at)).map(|&b| u32::from(b)), o, >=),
                Op::IndBJset(o) => fused!(indexed(x, o.off).and_then(|at| data.get(at)).map(|&b| u32::from(b)), o, &),
                Op::IndHJeq(o) => fused!(indexed(x, o.off).and_then(|at| half(data, at)), o, ==),
                Op::IndHJgt(o) => fused!(indexed(x, o.off).and_then(|at| half(data, at)), o, >),
                Op::IndHJge(o) => fused!(indexed(x, o.off).and_then(|at| half(data, at)), o, >=),
                Op::IndHJset(o) => fused!(indexed(x, o.off).and_then(|at| half(data, at)), o, &),
                Op::IndWJeq(o) => fused!(indexed(x, o.off).and_then(|at| word(data, at)), o, ==),
                Op::IndWJgt(o) => fused!(indexed(x, o.off).and_then(|at| word(data, at)), o, >),
                Op::IndWJge(o) => fused!(indexed(x, o.off).and_then(|at| word(data, at)), o, >=),
                Op::IndWJset(o) => fused!(indexed(x, o.off).and_then(|at| word(data, at)), o, &),
            }
        }
    }
}

/// Runs `prog` on one packet (see [`Program::run`]). A program that
/// [`Program::new`] refuses rejects every packet (returns 0).
pub fn run(prog: &[Insn], data: &[u8], wire_len: u32) -> u32 {
    match Program::decode(prog, false) {
        Ok(p) => p.run(data, wire_len),
        Err(_) => 0,
    }
}

/// `X + k` as a byte offset, without wrap-around.
#[inline(always)]
fn indexed(x: u32, k: u32) -> Option<usize> {
    (x as usize).checked_add(k as usize)
}

#[inline(always)]
fn word(data: &[u8], at: usize) -> Option<u32> {
    data.get(at..)?.first_chunk::<4>().map(|b| u32::from_be_bytes(*b))
}

#[inline(always)]
fn half(data: &[u8], at: usize) -> Option<u32> {
    data.get(at..)?.first_chunk::<2>().map(|b| u32::from(u16::from_be_bytes(*b)))
}

/// The fused form of a load into A followed by a conditional jump on `k`,
/// if there is one. Targets must fit in 16 bits.
fn fuse(load: Op, jump: Op) -> Option<Op> {
    let (cond, k, t, f) = match jump {
        Op::JeqK { k, t, f } => (0, k, t, f),
        Op::JgtK { k, t, f } => (1, k, t, f),
        Op::JgeK { k, t, f } => (2, k, t, f),
        Op::JsetK { k, t, f } => (3, k, t, f),
        _ => return None,
    };
    let (t, f) = (u16::try_from(t).ok()?, u16::try_from(f).ok()?);
    let (kind, off) = match load {
        Op::LdAbsB(off) => (0, off),
        Op::LdAbsH(off) => (1, off),
        Op::LdAbsW(off) => (2, off),
        Op::LdIndB(off) => (3, off),
        Op::LdIndH(off) => (4, off),
        Op::LdIndW(off) => (5, off),
        _ => return None,
    };
    let o = Fused { off, k, t, f };
    type Make = fn(Fused) -> Op;
    const TABLE: [[Make; 4]; 6] = [
        [Op::AbsBJeq, Op::AbsBJgt, Op::AbsBJge, Op::AbsBJset],
        [Op::AbsHJeq, Op::AbsHJgt, Op::AbsHJge, Op::AbsHJset],
        [Op::AbsWJeq, Op::AbsWJgt, Op::AbsWJge, Op::AbsWJset],
        [Op::IndBJeq, Op::IndBJgt, Op::IndBJge, Op::IndBJset],
        [Op::IndHJeq, Op::IndHJgt, Op::IndHJge, Op::IndHJset],
        [Op::IndWJeq, Op::IndWJgt, Op::IndWJge, Op::IndWJset],
    ];
    Some(TABLE[kind][cond](o))
}

/// Decodes one instruction of a program of `len` instructions.
fn decode(pc: usize, insn: Insn, len: usize) -> Result<Op, ValidateError> {
    use op::*;
    let fail = |kind| Err(ValidateError::at(pc, insn, kind));
    let k = insn.k;
    let scratch = |k: u32| -> Result<u8, ValidateError> {
        if k < MEMWORDS {
            Ok(k as u8)
        } else {
            Err(ValidateError::at(pc, insn, ValidateErrorKind::BadScratchIndex))
        }
    };
    // Conditional jump targets; in range iff below `len`.
    let targets = || -> Result<(u32, u32), ValidateError> {
        let t = pc + 1 + usize::from(insn.jt);
        let f = pc + 1 + usize::from(insn.jf);
        for target in [t, f] {
            if target >= len {
                return Err(ValidateError::at(pc, insn, ValidateErrorKind::JumpOutOfRange { target: target as i64 }));
            }
        }
        // len <= MAX_PROGRAM_LEN, so the targets fit in u32.
        Ok((t as u32, f as u32))
    };
    let c = insn.code;
    Ok(match c {
        _ if c == LD | W | ABS => Op::LdAbsW(k),
        _ if c == LD | H | ABS => Op::LdAbsH(k),
        _ if c == LD | B | ABS => Op::LdAbsB(k),
        _ if c == LD | W | IND => Op::LdIndW(k),
        _ if c == LD | H | IND => Op::LdIndH(k),
        _ if c == LD | B | IND => Op::LdIndB(k),
        _ if c == LD | W | LEN => Op::LdLen,
        _ if c == LDX | W | LEN => Op::LdxLen,
        _ if c == LD | IMM => Op::LdImm(k),
        _ if c == LDX | IMM => Op::LdxImm(k),
        _ if c == LDX | B | MSH => Op::LdxMsh(k),
        _ if c == LD | MEM => Op::LdMem(scratch(k)?),
        _ if c == LDX | MEM => Op::LdxMem(scratch(k)?),
        _ if c == ST => Op::St(scratch(k)?),
        _ if c == STX => Op::Stx(scratch(k)?),
        _ if c == ALU | ADD | K => Op::AddK(k),
        _ if c == ALU | SUB | K => Op::SubK(k),
        _ if c == ALU | MUL | K => Op::MulK(k),
        _ if c == ALU | DIV | K => NonZeroU32::new(k).map_or(Op::RetK(0), Op::DivK),
        _ if c == ALU | MOD | K => NonZeroU32::new(k).map_or(Op::RetK(0), Op::ModK),
        _ if c == ALU | AND | K => Op::AndK(k),
        _ if c == ALU | OR | K => Op::OrK(k),
        _ if c == ALU | XOR | K => Op::XorK(k),
        _ if c == ALU | LSH | K => Op::LshK(k & 31),
        _ if c == ALU | RSH | K => Op::RshK(k & 31),
        _ if c == ALU | ADD | X => Op::AddX,
        _ if c == ALU | SUB | X => Op::SubX,
        _ if c == ALU | MUL | X => Op::MulX,
        _ if c == ALU | DIV | X => Op::DivX,
        _ if c == ALU | MOD | X => Op::ModX,
        _ if c == ALU | AND | X => Op::AndX,
        _ if c == ALU | OR | X => Op::OrX,
        _ if c == ALU | XOR | X => Op::XorX,
        _ if c == ALU | LSH | X => Op::LshX,
        _ if c == ALU | RSH | X => Op::RshX,
        _ if c == ALU | NEG => Op::Neg,
        _ if c == MISC | TAX => Op::Tax,
        _ if c == MISC | TXA => Op::Txa,
        _ if c == RET | K => Op::RetK(k),
        _ if c == RET | A => Op::RetA,
        _ if c == JMP | JA => {
            // Signed offset, as libpcap reads it.
            let target = pc as i64 + 1 + i64::from(k as i32);
            if target < 0 || target >= len as i64 {
                return fail(ValidateErrorKind::JumpOutOfRange { target });
            }
            if target <= pc as i64 {
                Op::JaBack(target as u32)
            } else {
                Op::Ja(target as u32)
            }
        }
        _ if c == JMP | JEQ | K => {
            let (t, f) = targets()?;
            Op::JeqK { k, t, f }
        }
        _ if c == JMP | JGT | K => {
            let (t, f) = targets()?;
            Op::JgtK { k, t, f }
        }
        _ if c == JMP | JGE | K => {
            let (t, f) = targets()?;
            Op::JgeK { k, t, f }
        }
        _ if c == JMP | JSET | K => {
            let (t, f) = targets()?;
            Op::JsetK { k, t, f }
        }
        _ if c == JMP | JEQ | X => {
            let (t, f) = targets()?;
            Op::JeqX { t, f }
        }
        _ if c == JMP | JGT | X => {
            let (t, f) = targets()?;
            Op::JgtX { t, f }
        }
        _ if c == JMP | JGE | X => {
            let (t, f) = targets()?;
            Op::JgeX { t, f }
        }
        _ if c == JMP | JSET | X => {
            let (t, f) = targets()?;
            Op::JsetX { t, f }
        }
        _ => return fail(ValidateErrorKind::UnknownOpcode),
    })
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
    const RET_A: Insn = Insn::stmt(RET | A, 0);

    /// Packet bytes 1, 2, 3, ..., 64.
    fn packet() -> Vec<u8> {
        (1..=64).collect()
    }

    /// Runs `prog` then `ret a` on the test packet with wire length 1000.
    fn a_after(prog: &[Insn]) -> u32 {
        let mut p = prog.to_vec();
        p.push(RET_A);
        run(&p, &packet(), 1000)
    }

    #[test]
    fn returns() {
        assert_eq!(run(&[s(RET | K, 77)], &[], 0), 77);
        assert_eq!(run(&[s(RET | K, u32::MAX)], &[], 0), u32::MAX);
        assert_eq!(run(&[s(LD | IMM, 5), RET_A], &[], 0), 5);
    }

    #[test]
    fn absolute_loads_and_bounds() {
        // Expectations measured with libpcap 1.10.3's bpf_filter().
        assert_eq!(a_after(&[s(LD | W | ABS, 0)]), 0x01020304);
        assert_eq!(a_after(&[s(LD | W | ABS, 60)]), 0x3d3e3f40);
        assert_eq!(a_after(&[s(LD | W | ABS, 61)]), 0);
        assert_eq!(a_after(&[s(LD | H | ABS, 62)]), 0x3f40);
        assert_eq!(a_after(&[s(LD | H | ABS, 63)]), 0);
        assert_eq!(a_after(&[s(LD | B | ABS, 63)]), 64);
        assert_eq!(a_after(&[s(LD | B | ABS, 64)]), 0);
        for k in [0xffff_f000, 0xffff_f02c, 0xffff_f030, u32::MAX, 0x8000_0000] {
            assert_eq!(run(&[s(LD | B | ABS, k), s(RET | K, 9)], &packet(), 1000), 0, "{k:#x}");
            assert_eq!(run(&[s(LD | W | ABS, k), s(RET | K, 9)], &packet(), 1000), 0, "{k:#x}");
        }
        assert_eq!(run(&[s(LD | B | ABS, 0), s(RET | K, 9)], &[], 1000), 0);
    }

    #[test]
    fn indexed_loads_do_not_wrap() {
        assert_eq!(a_after(&[s(LDX | IMM, 60), s(LD | W | IND, 0)]), 0x3d3e3f40);
        assert_eq!(a_after(&[s(LDX | IMM, 61), s(LD | W | IND, 0)]), 0);
        assert_eq!(a_after(&[s(LDX | IMM, 2), s(LD | H | IND, 60)]), 0x3f40);
        assert_eq!(a_after(&[s(LDX | IMM, 3), s(LD | H | IND, 60)]), 0);
        assert_eq!(a_after(&[s(LDX | IMM, 3), s(LD | B | IND, 60)]), 64);
        assert_eq!(a_after(&[s(LDX | IMM, 4), s(LD | B | IND, 60)]), 0);
        // X + k would wrap to a small offset in 32 bits: out of bounds.
        let ret9 = s(RET | K, 9);
        assert_eq!(run(&[s(LDX | IMM, u32::MAX), s(LD | B | IND, 1), ret9], &packet(), 1000), 0);
        assert_eq!(run(&[s(LDX | IMM, 0xffff_fffe), s(LD | H | IND, 2), ret9], &packet(), 1000), 0);
        assert_eq!(run(&[s(LDX | IMM, 0xffff_fffc), s(LD | W | IND, 4), ret9], &packet(), 1000), 0);
        assert_eq!(run(&[s(LDX | IMM, 4), s(LD | W | IND, 0xffff_fffc), ret9], &packet(), 1000), 0);
    }

    #[test]
    fn header_length_load() {
        // Byte 15 is 0x0f: 4 * 15 = 60; byte 16 is 0x10: 0.
        assert_eq!(a_after(&[s(LDX | B | MSH, 14), s(MISC | TXA, 0)]), 60);
        assert_eq!(a_after(&[s(LDX | B | MSH, 15), s(MISC | TXA, 0)]), 0);
        assert_eq!(a_after(&[s(LDX | B | MSH, 0), s(MISC | TXA, 0)]), 4);
        assert_eq!(run(&[s(LDX | B | MSH, 64), s(RET | K, 9)], &packet(), 1000), 0);
    }

    #[test]
    fn lengths_and_immediates() {
        assert_eq!(a_after(&[s(LD | W | LEN, 0)]), 1000);
        assert_eq!(a_after(&[s(LDX | W | LEN, 0), s(MISC | TXA, 0)]), 1000);
        assert_eq!(a_after(&[s(LD | IMM, 0xdead_beef)]), 0xdead_beef);
        assert_eq!(a_after(&[s(LDX | IMM, 7), s(MISC | TXA, 0)]), 7);
        assert_eq!(a_after(&[s(LD | IMM, 7), s(MISC | TAX, 0), s(LD | IMM, 1), s(MISC | TXA, 0)]), 7);
    }

    #[test]
    fn scratch_memory() {
        assert_eq!(a_after(&[s(LD | IMM, 7), s(ST, 3), s(LD | IMM, 0), s(LD | MEM, 3)]), 7);
        assert_eq!(a_after(&[s(LDX | IMM, 8), s(STX, 15), s(LDX | MEM, 15), s(MISC | TXA, 0)]), 8);
        // Unwritten words read as 0.
        assert_eq!(a_after(&[s(LD | IMM, 7), s(LD | MEM, 5)]), 0);
    }

    #[test]
    fn alu_with_constants() {
        let alu = |code: u16, a: u32, k: u32| a_after(&[s(LD | IMM, a), s(ALU | code | K, k)]);
        assert_eq!(alu(ADD, u32::MAX, 2), 1);
        assert_eq!(alu(SUB, 1, 2), u32::MAX);
        assert_eq!(alu(MUL, 0x8000_0001, 2), 2);
        assert_eq!(alu(DIV, 7, 2), 3);
        assert_eq!(alu(MOD, 7, 4), 3);
        assert_eq!(alu(AND, 0xf0f0, 0xff00), 0xf000);
        assert_eq!(alu(OR, 0xf0f0, 0x0f00), 0xfff0);
        assert_eq!(alu(XOR, 0xff, 0x0f), 0xf0);
        assert_eq!(alu(LSH, 0x8000_0001, 1), 2);
        assert_eq!(alu(RSH, 0x8000_0001, 31), 1);
        // libpcap 1.10.3 on x86: constant shift counts act modulo 32.
        assert_eq!(alu(LSH, 0x8000_0001, 32), 0x8000_0001);
        assert_eq!(alu(LSH, 0x8000_0001, 33), 2);
        assert_eq!(alu(RSH, 0x8000_0001, 100), 0x0800_0000);
        // Constant division by zero rejects (libpcap 1.10.3 crashes).
        assert_eq!(run(&[s(LD | IMM, 7), s(ALU | DIV | K, 0), s(RET | K, 9)], &[], 0), 0);
        assert_eq!(run(&[s(LD | IMM, 7), s(ALU | MOD | K, 0), s(RET | K, 9)], &[], 0), 0);
        assert_eq!(a_after(&[s(LD | IMM, 5), s(ALU | NEG, 0)]), 5u32.wrapping_neg());
    }

    #[test]
    fn alu_with_x() {
        let alu = |code: u16, a: u32, x: u32| a_after(&[s(LDX | IMM, x), s(LD | IMM, a), s(ALU | code | X, 0)]);
        assert_eq!(alu(ADD, 5, 3), 8);
        assert_eq!(alu(SUB, 5, 7), 5u32.wrapping_sub(7));
        assert_eq!(alu(MUL, 5, 3), 15);
        assert_eq!(alu(DIV, 7, 2), 3);
        assert_eq!(alu(MOD, 7, 2), 1);
        assert_eq!(alu(AND, 6, 3), 2);
        assert_eq!(alu(OR, 6, 3), 7);
        assert_eq!(alu(XOR, 6, 3), 5);
        assert_eq!(alu(LSH, 0x8000_0001, 31), 0x8000_0000);
        assert_eq!(alu(RSH, 0x8000_0001, 31), 1);
        // libpcap 1.10.3: shift counts of 32 and more give 0.
        for x in [32, 33, 64, 100, u32::MAX] {
            assert_eq!(alu(LSH, 0x8000_0001, x), 0, "{x}");
            assert_eq!(alu(RSH, 0x8000_0001, x), 0, "{x}");
        }
        // Division by X == 0 rejects the packet.
        for code in [DIV, MOD] {
            let p = [s(LDX | IMM, 0), s(LD | IMM, 7), s(ALU | code | X, 0), s(RET | K, 9)];
            assert_eq!(run(&p, &[], 0), 0);
        }
    }

    #[test]
    fn jumps() {
        let cond = |code: u16, a: u32, k: u32| {
            let p = [s(LD | IMM, a), s(LDX | IMM, k), j(JMP | code, k, 1, 0), s(RET | K, 0), s(RET | K, 1)];
            run(&p, &[], 0)
        };
        for (code, a, k, want) in [
            (JEQ | K, 5, 5, 1),
            (JEQ | K, 5, 6, 0),
            (JGT | K, 6, 5, 1),
            (JGT | K, 5, 5, 0),
            (JGE | K, 5, 5, 1),
            (JGE | K, 4, 5, 0),
            (JSET | K, 6, 2, 1),
            (JSET | K, 6, 1, 0),
            (JEQ | X, 5, 5, 1),
            (JEQ | X, 5, 6, 0),
            (JGT | X, 6, 5, 1),
            (JGT | X, 5, 5, 0),
            (JGE | X, 5, 5, 1),
            (JGE | X, 4, 5, 0),
            (JSET | X, 6, 2, 1),
            (JSET | X, 6, 1, 0),
            // Unsigned comparisons.
            (JGT | K, 0x8000_0000, 1, 1),
        ] {
            assert_eq!(cond(code, a, k), want, "{code:#x} {a} {k}");
        }
        let p = [s(JMP | JA, 1), s(RET | K, 1), s(RET | K, 2)];
        assert_eq!(run(&p, &[], 0), 2);
    }

    #[test]
    fn backward_jumps_are_bounded() {
        // A counting loop: A += 1 until A == 5 (libpcap 1.10.3 returns 5).
        let p = [s(LD | IMM, 0), s(ALU | ADD | K, 1), j(JMP | JEQ | K, 5, 1, 0), s(JMP | JA, (-3i32) as u32), RET_A];
        assert_eq!(run(&p, &[], 0), 5);
        // 64 backward jumps are allowed, the 65th rejects.
        let count = |n: u32| [s(LD | IMM, 0), s(ALU | ADD | K, 1), j(JMP | JEQ | K, n, 1, 0), s(JMP | JA, (-3i32) as u32), RET_A];
        assert_eq!(run(&count(65), &[], 0), 65);
        assert_eq!(run(&count(66), &[], 0), 0);
        // A jump to itself.
        assert_eq!(run(&[s(JMP | JA, u32::MAX), RET_A], &[], 0), 0);
    }

    #[test]
    fn falling_off_the_end_rejects() {
        assert_eq!(run(&[s(LD | IMM, 1)], &[], 0), 0);
        assert_eq!(run(&[s(LD | IMM, 1), j(JMP | JEQ | K, 1, 0, 0)], &[], 0), 0);
    }

    #[test]
    fn decoding_errors() {
        let kind = |p: &[Insn]| Program::new(p).err().map(|e| e.kind);
        assert_eq!(kind(&[]), Some(ValidateErrorKind::Empty));
        assert_eq!(kind(&[s(0x08, 0), RET_A]), Some(ValidateErrorKind::UnknownOpcode));
        assert_eq!(kind(&[s(ST, 16), RET_A]), Some(ValidateErrorKind::BadScratchIndex));
        assert_eq!(kind(&[s(JMP | JA, 1), RET_A]), Some(ValidateErrorKind::JumpOutOfRange { target: 2 }));
        assert_eq!(kind(&[s(JMP | JA, (-2i32) as u32), RET_A]), Some(ValidateErrorKind::JumpOutOfRange { target: -1 }));
        assert_eq!(kind(&[j(JMP | JGT | X, 0, 0, 1), RET_A]), Some(ValidateErrorKind::JumpOutOfRange { target: 2 }));
        assert_eq!(run(&[s(0x08, 0), s(RET | K, 1)], &[], 0), 0);
        let p = Program::new(&[s(LD | IMM, 1), RET_A]).unwrap();
        assert_eq!(p.len(), 2);
        assert!(!p.is_empty());
    }

    #[test]
    fn fused_pairs_keep_the_jump_reachable() {
        // (2) ldh [0] fuses with (3) jeq; (1) jumps straight to (3) with
        // another A.
        let p = [
            s(LD | W | LEN, 0),
            j(JMP | JEQ | K, 1, 1, 0),
            s(LD | H | ABS, 0),
            j(JMP | JEQ | K, 0x0102, 0, 1),
            s(RET | K, 7),
            s(RET | K, 9),
        ];
        let prog = Program::new(&p).unwrap();
        assert!(matches!(prog.ops[2], Op::AbsHJeq(_)));
        assert!(matches!(prog.ops[3], Op::JeqK { .. }));
        assert_eq!(prog.run(&[1, 2], 2), 7);
        assert_eq!(prog.run(&[1, 2], 1), 9); // A = 1 at (3)
        assert_eq!(prog.run(&[1, 3], 2), 9);
        assert_eq!(prog.run(&[1], 2), 0);
        // Each fused form against its unfused meaning.
        for load in [LD | B | ABS, LD | H | ABS, LD | W | ABS, LD | B | IND, LD | H | IND, LD | W | IND] {
            for jop in [JEQ, JGT, JGE, JSET] {
                for k in [0u32, 1, 2, 3, 0x0102, 0x01020304] {
                    let p = [s(LDX | IMM, 1), s(load, 0), j(JMP | jop | K, k, 0, 1), RET_A, s(RET | K, 0xffff)];
                    let fused = Program::new(&p).unwrap();
                    assert!(!matches!(fused.ops[1], Op::LdAbsB(_) | Op::LdIndB(_)));
                    for data in [&[0u8, 1, 2, 3, 4, 5][..], &[1], &[0, 1], &[]] {
                        let x_off = if load & IND != 0 { 1 } else { 0 };
                        let bytes = match load & 0x18 { B => 1, H => 2, _ => 4 };
                        let a = data.get(x_off..x_off + bytes).map(|b| b.iter().fold(0u32, |v, &b| v << 8 | u32::from(b)));
                        let want = match a {
                            None => 0,
                            Some(a) => {
                                let holds = match jop {
                                    JEQ => a == k,
                                    JGT => a > k,
                                    JGE => a >= k,
                                    _ => a & k != 0,
                                };
                                if holds { a } else { 0xffff }
                            }
                        };
                        assert_eq!(fused.run(data, 9), want, "load {load:#x} jop {jop:#x} k {k:#x} data {data:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn long_programs_run_unfused() {
        let mut p = vec![s(LD | B | ABS, 0), j(JMP | JEQ | K, 5, 0, 1), s(JMP | JA, 70_000)];
        p.extend(std::iter::repeat_n(s(ALU | ADD | K, 1), 70_000));
        p.extend([RET_A, s(RET | K, 3)]);
        let prog = Program::new(&p).unwrap();
        assert!(matches!(prog.ops[0], Op::LdAbsB(_)));
        assert_eq!(prog.run(&[5], 1), 5);
        assert_eq!(prog.run(&[4], 1), 70_004);
    }

    /// A small deterministic generator for the tests below.
    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self) -> u32 {
            self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (self.0 >> 33) as u32
        }
        fn below(&mut self, n: u32) -> u32 {
            self.next() % n
        }
    }

    /// A random loop-free program over every opcode (forward jumps only),
    /// with loads near the start of the packet so that both in- and
    /// out-of-bounds loads happen.
    fn random_program(r: &mut Lcg, len: usize) -> Vec<Insn> {
        let stmt_codes = [
            LD | W | ABS, LD | H | ABS, LD | B | ABS, LD | W | IND, LD | H | IND, LD | B | IND,
            LD | W | LEN, LDX | W | LEN, LD | IMM, LDX | IMM, LDX | B | MSH, LD | MEM, LDX | MEM, ST, STX,
            ALU | ADD | K, ALU | SUB | K, ALU | MUL | K, ALU | DIV | K, ALU | MOD | K, ALU | AND | K,
            ALU | OR | K, ALU | XOR | K, ALU | LSH | K, ALU | RSH | K, ALU | ADD | X, ALU | SUB | X,
            ALU | MUL | X, ALU | DIV | X, ALU | MOD | X, ALU | AND | X, ALU | OR | X, ALU | XOR | X,
            ALU | LSH | X, ALU | RSH | X, ALU | NEG, MISC | TAX, MISC | TXA, RET | K, RET | A,
        ];
        let jump_codes = [JMP | JEQ | K, JMP | JGT | K, JMP | JGE | K, JMP | JSET | K, JMP | JEQ | X, JMP | JGT | X, JMP | JGE | X, JMP | JSET | X];
        let mut p = Vec::with_capacity(len);
        for pc in 0..len {
            let room = (len - pc - 1) as u32;
            let k = match r.below(4) {
                0 => r.below(70),
                1 => r.below(8),
                2 => r.next(),
                _ => [0, 1, 0x800, 6, 0xffff_ffff, 33][r.below(6) as usize],
            };
            let insn = if r.below(3) == 0 && room > 0 {
                let jt = r.below(room.min(6)) as u8;
                let jf = r.below(room.min(6)) as u8;
                Insn::jump(jump_codes[r.below(8) as usize], k, jt, jf)
            } else if r.below(8) == 0 && room > 0 {
                Insn::stmt(JMP | JA, r.below(room.min(4)))
            } else {
                let code = stmt_codes[r.below(stmt_codes.len() as u32) as usize];
                let k = if matches!(code, LD_MEM | LDX_MEM | ST | STX) { k % 16 } else { k };
                Insn::stmt(code, k)
            };
            p.push(insn);
        }
        p
    }
    const LD_MEM: u16 = LD | MEM;
    const LDX_MEM: u16 = LDX | MEM;

    #[test]
    fn threaded_form_agrees_with_the_loop() {
        let mut r = Lcg(7);
        let mut threaded = 0;
        for round in 0..3000 {
            let len = 1 + r.below(24) as usize;
            let prog = random_program(&mut r, len);
            let p = Program::new(&prog).unwrap();
            threaded += usize::from(p.threaded.is_some());
            for _ in 0..12 {
                let n = r.below(72) as usize;
                let data: Vec<u8> = (0..n).map(|_| if r.below(3) == 0 { r.below(4) as u8 } else { r.next() as u8 }).collect();
                let wire_len = [n as u32, 1000, 0][r.below(3) as usize];
                assert_eq!(p.run(&data, wire_len), p.run_loop(&data, wire_len), "round {round}: {prog:?} on {data:?}");
            }
        }
        assert_eq!(threaded, 3000);
    }

    #[test]
    fn counting_many_packets_agrees_with_running_each() {
        let mut r = Lcg(3);
        let mut read_ahead = 0;
        for _ in 0..300 {
            let len = 1 + r.below(40) as usize;
            let p = Program::new(&random_program(&mut r, len)).unwrap();
            read_ahead += usize::from(p.read_ahead.is_some());
            let packets: Vec<(Vec<u8>, u32)> = (0..r.below(40))
                .map(|_| {
                    let n = r.below(72) as usize;
                    ((0..n).map(|_| r.below(4) as u8).collect(), [n as u32, 1000][r.below(2) as usize])
                })
                .collect();
            let want = packets.iter().filter(|(d, w)| p.run(d, *w) != 0).count() as u64;
            assert_eq!(p.count_matches(&packets, |(d, w)| (d.as_slice(), *w)), want);
            // The hinted loop: same count; the hint sees packet i + ahead
            // while packet i is filtered (only for programs that load
            // packet bytes).
            let ahead = 1 + r.below(4) as usize;
            let header_line = r.below(2) == 1;
            let hinted = std::cell::RefCell::new(Vec::new());
            let got = p.count_matches_hinted(&packets, |(d, w)| (d.as_slice(), *w), ahead, header_line, |d| {
                hinted.borrow_mut().push(d.as_ptr())
            });
            assert_eq!(got, want);
            // Each packet's first byte, then (when asked for and the packet
            // reaches it) its header line's.
            let deep = p.header_line().filter(|_| header_line);
            let expect: Vec<*const u8> = match p.loads_packet {
                true => packets
                    .iter()
                    .skip(ahead)
                    .flat_map(|(d, _)| {
                        let line = deep.filter(|&h| h <= d.len()).map(|h| d[h..].as_ptr());
                        std::iter::once(d.as_ptr()).chain(line)
                    })
                    .collect(),
                false => Vec::new(),
            };
            assert_eq!(hinted.into_inner(), expect);
        }
        assert!(read_ahead > 0);
    }

    /// The header line is the last byte of the loads a packet's headers
    /// usually reach, from byte 16 to 63 (the rule of the JIT's count
    /// function).
    #[test]
    fn the_header_line_is_the_deepest_usual_header_byte() {
        let line = |p: &[Insn]| Program::new(p).unwrap().header_line();
        let ret = s(RET | K, 1);
        // `ip`: the EtherType only, on the first 16 bytes.
        assert_eq!(line(&[s(LD | H | ABS, 12), j(JMP | JEQ | K, 0x800, 0, 1), ret, ret]), None);
        // An IPv4 destination address: bytes 30 to 33.
        assert_eq!(line(&[s(LD | H | ABS, 12), s(LD | W | ABS, 30), ret]), Some(33));
        // A port behind the IPv4 header (X = 20): bytes 34 and 35, and
        // the `msh` load of byte 14.
        assert_eq!(line(&[s(LDX | B | MSH, 14), s(LD | H | IND, 14), ret]), Some(35));
        assert_eq!(line(&[s(LDX | B | MSH, 14), s(LD | H | IND, 16), ret]), Some(37));
        // IPv6 addresses past byte 48 do not count; far indexed loads stop at 63.
        assert_eq!(line(&[s(LD | W | ABS, 50), ret]), None);
        assert_eq!(line(&[s(LD | W | ABS, 42), s(LD | W | ABS, 54), ret]), Some(45));
        assert_eq!(line(&[s(LDX | B | MSH, 14), s(LD | B | IND, 4000), ret]), Some(63));
        // No packet load at all.
        assert_eq!(line(&[s(LD | IMM, 1), s(RET | A, 0)]), None);
    }

    #[test]
    fn counting_starts_every_packet_with_zeroed_scratch_memory() {
        // M[0] == 0 → store 5 there, accept; else reject. Scratch memory
        // carried over from the previous packet would reject all but one.
        let p = [s(LD | MEM, 0), j(JMP | JEQ | K, 0, 0, 3), s(LD | IMM, 5), s(ST, 0), s(RET | K, 1), s(RET | K, 0)];
        let prog = Program::new(&p).unwrap();
        assert!(prog.threaded.is_some());
        let packets = vec![(vec![0u8; 4], 4u32); 20];
        assert_eq!(prog.count_matches(&packets, |(d, w)| (d.as_slice(), *w)), 20);
    }

    #[test]
    fn counting_agrees_whether_packets_are_close_or_far_apart() {
        // The same packets back to back in one buffer (no reading ahead)
        // and 400 kB apart in a 40 MB one (reading ahead).
        let p = Program::new(&[
            s(LD | H | ABS, 12),
            s(ALU | ADD | K, 1),
            s(ALU | AND | K, 0xffff),
            j(JMP | JEQ | K, 0x801, 0, 3),
            s(LD | B | ABS, 23),
            j(JMP | JEQ | K, 6, 0, 1),
            s(RET | K, 1),
            s(RET | K, 0),
        ])
        .unwrap();
        assert!(p.read_ahead.is_some());
        let mut r = Lcg(5);
        let lens: Vec<usize> = (0..100).map(|_| r.below(40) as usize).collect();
        let buf: Vec<u8> = (0..lens.iter().sum::<usize>()).map(|_| [8, 0, 6][r.below(3) as usize]).collect();
        let mut close = Vec::new();
        let mut at = 0;
        for &n in &lens {
            close.push(&buf[at..at + n]);
            at += n;
        }
        const APART: usize = 400_000;
        let mut big = vec![0u8; close.len() * APART];
        for (i, d) in close.iter().enumerate() {
            big[i * APART..i * APART + d.len()].copy_from_slice(d);
        }
        let far: Vec<&[u8]> = close.iter().enumerate().map(|(i, d)| &big[i * APART..i * APART + d.len()]).collect();
        let want = close.iter().filter(|d| p.run(d, 60) != 0).count() as u64;
        assert!(want > 0);
        assert_eq!(p.count_matches(&close, |d| (*d, 60)), want);
        assert_eq!(p.count_matches(&far, |d| (*d, 60)), want);
    }

    #[test]
    fn read_ahead_spans() {
        assert_eq!(read_ahead_span(&[s(RET | K, 1)]), None);
        assert_eq!(read_ahead_span(&[s(LD | W | LEN, 0), s(LD | MEM, 3), RET_A]), None);
        let p = [s(LD | H | ABS, 12), s(LDX | B | MSH, 14), s(LD | H | IND, 16), s(LD | W | ABS, 30), RET_A];
        assert_eq!(read_ahead_span(&p), Some((12, 37)));
        assert_eq!(read_ahead_span(&[s(LD | B | ABS, u32::MAX), RET_A]), Some((4096, 4096)));
    }

    #[test]
    fn jeq_chains_agree_with_the_loop() {
        // [load] jeq k1..kn (each taken side to T, through `ja` sometimes),
        // with a few other jumps landing in the middle of the chain.
        let mut r = Lcg(11);
        for round in 0..3000 {
            let n = 1 + r.below(12) as usize;
            let mut p = vec![s(LDX | IMM, r.below(4)), s(LD | W | LEN, 0)];
            // An entry that skips the load.
            p.push(j(JMP | JGT | K, 40, 1, 0));
            p.push(s([LD | B | ABS, LD | H | ABS, LD | W | ABS, LD | B | IND, LD | H | IND][r.below(5) as usize], r.below(8)));
            let chain_at = p.len();
            let via_ja = r.below(3) == 0;
            // Layout: chain (n jumps), [ja T], F: ret #1 , T: ret a
            let t_at = chain_at + n + usize::from(via_ja) + 1;
            let ja_at = chain_at + n;
            for i in 0..n {
                let pc = chain_at + i;
                let taken = if via_ja && r.below(2) == 0 { ja_at } else { t_at };
                let k = [0x16, 0x50, 0x8f, 0x0102, 0x0304, 3, 1, 2][r.below(8) as usize];
                let code = if r.below(10) == 0 { JMP | JGT | K } else { JMP | JEQ | K };
                p.push(j(code, k, (taken - pc - 1) as u8, 0));
            }
            if via_ja {
                p.push(s(JMP | JA, 1));
            }
            p.push(s(RET | K, 1));
            p.push(RET_A);
            let prog = Program::new(&p).unwrap();
            assert!(prog.threaded.is_some());
            for _ in 0..16 {
                let len = r.below(10) as usize;
                let data: Vec<u8> = (0..len).map(|_| r.below(5) as u8).collect();
                let wire_len = [len as u32, 100, 0][r.below(3) as usize];
                assert_eq!(prog.run(&data, wire_len), prog.run_loop(&data, wire_len), "round {round}: {p:?} on {data:?}");
            }
        }
    }

    #[test]
    fn threaded_form_only_without_loops_and_long_paths() {
        let loop_prog = [s(LD | IMM, 0), s(ALU | ADD | K, 1), j(JMP | JEQ | K, 5, 1, 0), s(JMP | JA, (-3i32) as u32), RET_A];
        assert!(Program::new(&loop_prog).unwrap().threaded.is_none());
        let mut long = vec![s(ALU | ADD | K, 1); threaded::MAX_PATH as usize];
        long.push(RET_A);
        let p = Program::new(&long).unwrap();
        assert!(p.threaded.is_none());
        assert_eq!(p.run(&[], 0), threaded::MAX_PATH);
        long.remove(0);
        let p = Program::new(&long).unwrap();
        assert_eq!(p.threaded.as_ref().map(|t| t.nodes()), Some(long.len() + 1));
        assert_eq!(p.run(&[], 0), threaded::MAX_PATH - 1);
        // `ja` needs no node; a folded `ret` target is still a node of its own.
        let p = Program::new(&[s(LD | H | ABS, 0), j(JMP | JEQ | K, 0x102, 0, 2), s(JMP | JA, 0), s(RET | K, 7), s(RET | K, 9)]).unwrap();
        assert_eq!(p.threaded.as_ref().map(|t| t.nodes()), Some(5));
        assert_eq!(p.run(&[1, 2], 2), 7);
        assert_eq!(p.run(&[1, 3], 2), 9);
        assert_eq!(p.run(&[1], 2), 0);
    }

    #[test]
    fn dropping_a_long_threaded_chain_does_not_recurse() {
        // 100,000 programs' worth of nodes is not needed: a chain of the
        // longest accepted path, cloned and dropped in both orders.
        let mut long = vec![s(ALU | ADD | K, 1); threaded::MAX_PATH as usize - 1];
        long.push(RET_A);
        let p = Program::new(&long).unwrap();
        let q = p.clone();
        drop(p);
        assert_eq!(q.run(&[], 0), threaded::MAX_PATH - 1);
        drop(q);
    }

    #[test]
    fn decoded_ops_stay_small() {
        assert!(std::mem::size_of::<Op>() <= 16);
    }
}
