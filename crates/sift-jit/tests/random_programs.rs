//! Differential test on random raw cBPF programs: the JIT and
//! `sift_bpf::interp` must return the same value for every program and
//! packet. Programs use every opcode (div/mod/shift by X, indexed loads with
//! huge X, `ldx 4*([k]&0xf)`, scratch memory, `ld #len`), packets are short
//! random byte strings with random wire lengths. Each program also runs
//! through the batch entry point (`JitFilter::count_matches`: the count
//! function; each packet alone, a chunk of copies of it, and the packets
//! of a program five times over: full chunks, a sliding window, a partial
//! chunk), which must accept exactly the packets the per-packet function
//! accepts.
//!
//! Two families: programs that pass the kernel validator
//! (`sift_bpf::validate`, at least 50,000 of them), and programs only the
//! interpreter accepts (backward `ja` loops, `div #0`, constant shifts of 32
//! and more, scratch reads before writes).

use sift_bpf::insn::op::*;
use sift_bpf::interp::Program;
use sift_bpf::validate::validate;
use sift_bpf::Insn;
use sift_jit::JitFilter;
use sift_testkit::Rng;

const CONSTS: &[u32] = &[
    0,
    1,
    2,
    3,
    4,
    7,
    8,
    12,
    14,
    15,
    16,
    20,
    23,
    31,
    32,
    33,
    63,
    64,
    0x80,
    0xff,
    0x100,
    0x800,
    0xffff,
    0x1_0000,
    0x7fff_fff0,
    0x7fff_fffc,
    0x7fff_ffff,
    0x8000_0000,
    0xffff_f000,
    0xffff_fffc,
    0xffff_ffff,
];

fn constant(rng: &mut Rng) -> u32 {
    match rng.below(4) {
        0 => rng.next_u32(),
        1 => rng.below(80) as u32,
        _ => *rng.pick(CONSTS),
    }
}

fn offset(rng: &mut Rng) -> u32 {
    if rng.chance(0.05) {
        *rng.pick(&[
            0x7fff_fffc,
            0x7fff_ffff,
            0x8000_0000,
            0xffff_f000,
            0xffff_fffd,
            0xffff_ffff,
        ])
    } else {
        rng.below(72) as u32
    }
}

const LOADS: &[u16] = &[
    LD | W | ABS,
    LD | H | ABS,
    LD | B | ABS,
    LD | W | IND,
    LD | H | IND,
    LD | B | IND,
];
const ALU_OPS: &[u16] = &[ADD, SUB, MUL, DIV, MOD, AND, OR, XOR, LSH, RSH];
const JUMPS: &[u16] = &[JEQ, JGT, JGE, JSET];

/// A random program of `len` instructions whose jumps all go forward.
/// `strict`: obey the kernel validator's rules (no div/mod #0, constant
/// shifts below 32, only initialized scratch words read, final `ret`).
fn program(rng: &mut Rng, strict: bool) -> Vec<Insn> {
    // Some long programs, so that jumps need 32-bit displacements.
    let len = if rng.chance(0.08) {
        100 + rng.index(500)
    } else {
        2 + rng.index(40)
    };
    let mut p = Vec::with_capacity(len + 4);
    // Scratch words written up front (the validator's scan is linear).
    let mut written = 0u16;
    if strict || rng.chance(0.5) {
        for _ in 0..rng.below(4) {
            let i = rng.below(16) as u32;
            written |= 1 << i;
            p.push(if rng.chance(0.5) {
                Insn::stmt(ST, i)
            } else {
                Insn::stmt(STX, i)
            });
        }
    }
    let body = len - 1;
    while p.len() < body {
        let pc = p.len();
        let room = body - pc; // instructions after this one, before the final ret
        let insn = match rng.below(22) {
            0..=4 => Insn::stmt(*rng.pick(LOADS), offset(rng)),
            5 => Insn::stmt(LD | W | LEN, 0),
            6 => Insn::stmt(LD | IMM, constant(rng)),
            7 => Insn::stmt(
                LDX | IMM,
                if rng.chance(0.6) {
                    rng.below(64) as u32
                } else {
                    constant(rng)
                },
            ),
            8 => Insn::stmt(LDX | B | MSH, offset(rng)),
            9 => Insn::stmt(LDX | W | LEN, 0),
            10 | 11 => {
                let op = *rng.pick(ALU_OPS);
                if rng.chance(0.5) {
                    Insn::stmt(ALU | op | X, 0)
                } else {
                    let mut k = constant(rng);
                    if strict {
                        if matches!(op, DIV | MOD) && k == 0 {
                            k = 1 + rng.below(9) as u32;
                        }
                        if matches!(op, LSH | RSH) {
                            k &= 31;
                        }
                    }
                    Insn::stmt(ALU | op | K, k)
                }
            }
            12 => Insn::stmt(ALU | NEG, 0),
            13 => Insn::stmt(MISC | if rng.chance(0.5) { TAX } else { TXA }, 0),
            14 => {
                let i = rng.below(16) as u32;
                written |= 1 << i;
                Insn::stmt(if rng.chance(0.5) { ST } else { STX }, i)
            }
            15 if !strict || written != 0 => {
                let mut i = rng.below(16) as u32;
                if strict {
                    while written & (1 << i) == 0 {
                        i = (i + 1) % 16;
                    }
                }
                Insn::stmt(if rng.chance(0.5) { LD | MEM } else { LDX | MEM }, i)
            }
            16..=19 => {
                let jt = rng.below(room.min(256) as u64) as u8;
                let jf = rng.below(room.min(256) as u64) as u8;
                let op = *rng.pick(JUMPS);
                let src = if rng.chance(0.3) { X } else { K };
                Insn::jump(JMP | op | src, constant(rng), jt, jf)
            }
            20 => Insn::stmt(JMP | JA, rng.below(room as u64) as u32),
            _ => {
                if rng.chance(0.5) {
                    Insn::stmt(RET | A, 0)
                } else {
                    Insn::stmt(RET | K, constant(rng))
                }
            }
        };
        p.push(insn);
    }
    if !strict && rng.chance(0.15) {
        // A backward jump somewhere (a loop bounded by the 64-jump limit).
        let at = rng.index(p.len());
        let back = rng.index(at + 1) as i32;
        p.insert(at, Insn::stmt(JMP | JA, (-back - 1) as u32));
        // Jumps that crossed the insertion point now land one earlier:
        // harmless, they still land inside the program or are fixed below.
    }
    if !strict && rng.chance(0.1) {
        // Fall off the end.
        p.push(Insn::stmt(ALU | ADD | K, 1));
    } else {
        p.push(if rng.chance(0.5) {
            Insn::stmt(RET | A, 0)
        } else {
            Insn::stmt(RET | K, constant(rng))
        });
    }
    p
}

fn packet(rng: &mut Rng) -> (Vec<u8>, u32) {
    let n = match rng.below(10) {
        0 => rng.index(5),
        1..=6 => rng.index(72),
        _ => rng.index(200),
    };
    let mut data = rng.bytes(n);
    // Small header-length nibbles now and then, so indexed loads land.
    for b in data.iter_mut() {
        if rng.chance(0.2) {
            *b &= 0x1f;
        }
    }
    let wire = match rng.below(8) {
        0 => rng.next_u32(),
        1 => rng.below(n as u64 + 1) as u32,
        _ => n as u32,
    };
    (data, wire)
}

fn check(prog: &[Insn], packets: &[(Vec<u8>, u32)]) -> bool {
    let Ok(interp) = Program::new(prog) else {
        return false;
    };
    let jit = JitFilter::from_program(prog).expect("the JIT accepts what the interpreter accepts");
    // The count function (`count_matches`, in chunks of `sift_jit::BATCH`,
    // its window sliding past them) must accept exactly the packets the
    // per-packet function accepts: each packet alone (a chunk of copies),
    // and the packets five times over (full chunks, slides of the window,
    // a partial chunk at the end).
    let five: Vec<&(Vec<u8>, u32)> = (0..5).flat_map(|_| packets).collect();
    let counted = jit.count_matches(&five, |p| (&p.0[..], p.1));
    let mut accepted = 0;
    for item in packets {
        let (data, wire) = item;
        let want = interp.run(data, *wire);
        let got = jit.run(data, *wire);
        assert_eq!(
            got, want,
            "program {prog:?}\npacket {data:02x?} wire {wire}"
        );
        let alone = jit.count_matches(&[item; sift_jit::BATCH], |p| (&p.0[..], p.1));
        assert_eq!(
            alone,
            sift_jit::BATCH as u64 * u64::from(want != 0),
            "count: program {prog:?}\npacket {data:02x?} wire {wire}"
        );
        accepted += u64::from(want != 0);
    }
    assert_eq!(counted, 5 * accepted, "count: program {prog:?}");
    // And walked in place (`count_packets`).
    let refs: Vec<sift_jit::PacketRef> = five.iter().map(|p| sift_jit::PacketRef::new(&p.0, p.1)).collect();
    assert_eq!(jit.count_packets(&refs), 5 * accepted, "count in place: program {prog:?}");
    // And each verdict (the verdict function).
    let mut verdicts = vec![false; refs.len()];
    assert_eq!(jit.verdicts(&refs, &mut verdicts), 5 * accepted, "verdicts: program {prog:?}");
    for (item, v) in five.iter().zip(&verdicts) {
        assert_eq!(*v, interp.run(&item.0, item.1) != 0, "verdict: program {prog:?}\npacket {:02x?} wire {}", item.0, item.1);
    }
    true
}

fn campaign(
    seed: u64,
    n_programs: usize,
    packets_per_program: usize,
    strict: bool,
) -> (usize, usize) {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 8);
    let per = n_programs.div_ceil(threads);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                s.spawn(move || {
                    let mut rng = Rng::fork(seed, t as u64);
                    let (mut programs, mut runs) = (0, 0);
                    while programs < per {
                        let prog = program(&mut rng, strict);
                        if strict && validate(&prog).is_err() {
                            continue;
                        }
                        let packets: Vec<_> =
                            (0..packets_per_program).map(|_| packet(&mut rng)).collect();
                        if check(&prog, &packets) {
                            programs += 1;
                            runs += packets.len();
                        }
                    }
                    (programs, runs)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("worker"))
            .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
    })
}

#[test]
fn kernel_valid_programs_agree_with_the_interpreter() {
    if !JitFilter::is_supported() {
        return;
    }
    let (programs, runs) = campaign(0x6a69_7431, 50_000, 40, true);
    eprintln!("{programs} validated programs, {runs} runs");
    assert!(programs >= 50_000);
}

#[test]
fn libpcap_only_programs_agree_with_the_interpreter() {
    if !JitFilter::is_supported() {
        return;
    }
    let (programs, runs) = campaign(0x6a69_7432, 20_000, 40, false);
    eprintln!("{programs} unvalidated programs, {runs} runs");
    assert!(programs >= 20_000);
}

#[test]
fn edge_cases() {
    if !JitFilter::is_supported() {
        return;
    }
    let s = Insn::stmt;
    let ret_a = s(RET | A, 0);
    let data: Vec<u8> = (1..=64).collect();
    let mut cases: Vec<Vec<Insn>> = Vec::new();
    for load in LOADS {
        for k in [
            0u32,
            60,
            61,
            62,
            63,
            64,
            0x7fff_fffb,
            0x7fff_fffc,
            0x7fff_ffff,
            0x8000_0000,
            0xffff_fffc,
            u32::MAX,
        ] {
            for x in [0u32, 1, 4, 0x7fff_ffff, 0x8000_0000, 0xffff_fffc, u32::MAX] {
                cases.push(vec![s(LDX | IMM, x), s(*load, k), ret_a]);
                // Fused raw compares, A dead afterwards.
                for (jop, kk) in [
                    (JEQ, 0x3d3e_3f40u32),
                    (JEQ, 0x3f40),
                    (JEQ, 0x40),
                    (JSET, 0x1),
                    (JSET, 0x100),
                    (JEQ, 0),
                ] {
                    cases.push(vec![
                        s(LDX | IMM, x),
                        s(*load, k),
                        Insn::jump(JMP | jop | K, kk, 0, 1),
                        s(RET | K, 1),
                        s(RET | K, 2),
                    ]);
                }
            }
        }
    }
    for op in ALU_OPS {
        for x in [0u32, 1, 2, 3, 31, 32, 33, 64, 0x8000_0000, u32::MAX] {
            cases.push(vec![
                s(LDX | IMM, x),
                s(LD | IMM, 0x8765_4321),
                s(ALU | op | X, 0),
                ret_a,
            ]);
            cases.push(vec![s(LD | IMM, 0x8765_4321), s(ALU | op | K, x), ret_a]);
        }
    }
    cases.push(vec![s(LDX | B | MSH, 63), s(MISC | TXA, 0), ret_a]);
    cases.push(vec![s(LDX | B | MSH, 64), s(MISC | TXA, 0), ret_a]);
    cases.push(vec![s(LDX | B | MSH, u32::MAX), s(MISC | TXA, 0), ret_a]);
    cases.push(vec![s(LD | MEM, 7), ret_a]);
    cases.push(vec![
        s(LD | IMM, 9),
        s(ST, 15),
        s(LDX | MEM, 15),
        s(MISC | TXA, 0),
        ret_a,
    ]);
    cases.push(vec![s(JMP | JA, u32::MAX), ret_a]);
    for n in [0u32, 1, 63, 64, 65, 66, 100] {
        cases.push(vec![
            s(LD | IMM, 0),
            s(ALU | ADD | K, 1),
            Insn::jump(JMP | JEQ | K, n, 1, 0),
            s(JMP | JA, (-3i32) as u32),
            ret_a,
        ]);
    }
    cases.push(vec![s(LD | IMM, 1)]);
    for p in &cases {
        for len in [0usize, 1, 2, 4, 13, 60, 61, 62, 63, 64] {
            for wire in [0u32, 64, u32::MAX] {
                assert!(check(p, &[(data[..len].to_vec(), wire)]) || Program::new(p).is_err());
            }
        }
    }
}
