//! Property test of the code generator: for random predicates and random
//! packets (short ones included), the compiled program accepts exactly when
//! the reference evaluator [`sift_ir::eval::matches`] does, the program
//! passes the kernel validator, and a model of the Linux kernel's execution
//! (signed 32-bit `X + k`, ancillary offsets, masked shift counts) never
//! reaches a point where it could differ from libpcap.
//!
//! The generator is a small deterministic xorshift PRNG: the same cases run
//! every time.

use sift_bpf::codegen::{compile, CodegenError, CodegenOptions};
use sift_bpf::insn::op::*;
use sift_bpf::interp::Program;
use sift_bpf::validate::validate;
use sift_bpf::Insn;
use sift_ir::eval::{matches, PacketView};
use sift_ir::{BinOp, CmpOp, Pred, Size, Value};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len() as u64) as usize]
    }
}

const CONSTS: &[u32] = &[0, 1, 2, 3, 4, 5, 7, 8, 15, 16, 31, 32, 33, 40, 60, 255, 256, 0xffff, 0x8000_0000, 0xffff_ffff];
const HUGE_OFFSETS: &[u32] = &[0x7fff_fff0, 0x7fff_fffb, 0x7fff_fffc, 0x7fff_ffff, 0x8000_0000, 0xffff_f000, 0xffff_f004, 0xffff_ffff];
const OPS: &[BinOp] = &[
    BinOp::Add,
    BinOp::Sub,
    BinOp::Mul,
    BinOp::Div,
    BinOp::Mod,
    BinOp::And,
    BinOp::Or,
    BinOp::Xor,
    BinOp::Shl,
    BinOp::Shr,
];

fn size(rng: &mut Rng) -> Size {
    rng.pick(&[Size::Byte, Size::Half, Size::Word])
}

fn offset(rng: &mut Rng) -> u32 {
    if rng.chance(4) {
        rng.pick(HUGE_OFFSETS)
    } else {
        rng.below(72) as u32
    }
}

fn constant(rng: &mut Rng) -> u32 {
    if rng.chance(15) {
        rng.next() as u32
    } else {
        rng.pick(CONSTS)
    }
}

/// A value likely to be a small index, sometimes not.
fn index(rng: &mut Rng, depth: u32) -> Value {
    match rng.below(11) {
        0 => Value::load(Size::Byte, offset(rng)),
        1 => Value::ipv4_header_len(rng.below(40) as u32),
        8 if depth > 0 => index(rng, depth - 1).bin(BinOp::Add, Value::Const(constant(rng))),
        9 if depth > 0 => Value::Const(constant(rng)).bin(BinOp::Add, index(rng, depth - 1)),
        10 => {
            // The header length idiom over a load with a constant index.
            let byte = Value::load_indexed(Size::Byte, Value::Const(rng.below(20) as u32), rng.below(20) as u32);
            byte.bin(BinOp::And, Value::Const(0xf)).bin(BinOp::Mul, Value::Const(4))
        }
        2 => Value::Const(rng.below(50) as u32),
        3 => Value::Len,
        4 => Value::load(size(rng), offset(rng)),
        5 => Value::load(Size::Byte, rng.below(40) as u32).bin(BinOp::And, Value::Const(0x1f)),
        _ => value(rng, depth),
    }
}

fn value(rng: &mut Rng, depth: u32) -> Value {
    let leaf = depth == 0 || rng.chance(35);
    if leaf {
        return match rng.below(6) {
            0 | 1 => Value::Const(constant(rng)),
            2 => Value::Len,
            _ => Value::load(size(rng), offset(rng)),
        };
    }
    match rng.below(10) {
        0 | 1 => Value::load_indexed(size(rng), index(rng, depth - 1), offset(rng)),
        2 => Value::ipv4_header_len(offset(rng)),
        3 => Value::Neg(Box::new(value(rng, depth - 1))),
        _ => {
            let op = rng.pick(OPS);
            let l = value(rng, depth - 1);
            let r = if rng.chance(40) { Value::Const(constant(rng)) } else { value(rng, depth - 1) };
            l.bin(op, r)
        }
    }
}

fn test(rng: &mut Rng) -> Pred {
    let lhs = value(rng, 3);
    let op = rng.pick(&[CmpOp::Eq, CmpOp::Gt, CmpOp::Ge, CmpOp::Set]);
    let rhs = match rng.below(10) {
        0..=4 => Value::Const(rng.pick(&[0, 1, 2, 3, 4, 5, 8, 17, 60, 255, 0xffff_ffff])),
        5 => Value::Const(constant(rng)),
        _ => value(rng, 3),
    };
    if rng.chance(10) {
        // Constant on the left.
        Pred::test(Value::Const(constant(rng)), op, lhs)
    } else {
        Pred::test(lhs, op, rhs)
    }
}

fn pred(rng: &mut Rng, depth: u32) -> Pred {
    if depth == 0 || rng.chance(30) {
        return match rng.below(20) {
            0 => Pred::True,
            1 => Pred::False,
            _ => test(rng),
        };
    }
    match rng.below(6) {
        0 => pred(rng, depth - 1).not(),
        1..=3 => Pred::And((0..1 + rng.below(4)).map(|_| pred(rng, depth - 1)).collect()),
        _ => Pred::Or((0..1 + rng.below(4)).map(|_| pred(rng, depth - 1)).collect()),
    }
}

fn packet(rng: &mut Rng) -> (Vec<u8>, u32) {
    let len = match rng.below(4) {
        0 => rng.below(16) as usize,
        _ => rng.below(100) as usize,
    };
    let small = rng.chance(50);
    let data: Vec<u8> = (0..len)
        .map(|_| if small && rng.chance(70) { rng.below(5) as u8 } else { rng.next() as u8 })
        .collect();
    let wire_len = match rng.below(4) {
        0 => rng.next() as u32,
        1 => len as u32 + rng.below(1000) as u32,
        _ => len as u32,
    };
    (data, wire_len)
}

/// How the Linux kernel would run a program, as far as it can differ from
/// libpcap: `Err` when the run reaches an instruction whose kernel meaning
/// differs from libpcap's (a negative 32-bit offset, an `X + k` that wraps,
/// a shift by `X >= 32`).
fn kernel_model(prog: &[Insn], data: &[u8], wire_len: u32) -> Result<u32, String> {
    let (mut a, mut x, mut mem, mut pc) = (0u32, 0u32, [0u32; 16], 0usize);
    let load = |at: u32, n: u32| -> Option<u32> {
        let at = at as usize;
        let bytes = data.get(at..at + n as usize)?;
        Some(bytes.iter().fold(0u32, |v, &b| v << 8 | u32::from(b)))
    };
    loop {
        let i = *prog.get(pc).ok_or("ran off the end")?;
        pc += 1;
        let k = i.k;
        let size = |code: u16| match code & 0x18 {
            0x00 => 4,
            0x08 => 2,
            _ => 1,
        };
        match i.code & 0x07 {
            LD | LDX if i.code & 0xe0 == ABS => {
                if k >= 0x8000_0000 {
                    return Err(format!("absolute load at {k:#x}"));
                }
                match load(k, size(i.code)) {
                    Some(v) => a = v,
                    None => return Ok(0),
                }
            }
            LD if i.code & 0xe0 == IND => {
                let sum = x.wrapping_add(k);
                if u64::from(x) + u64::from(k) != u64::from(sum) || sum >= 0x8000_0000 {
                    return Err(format!("indexed load at {x:#x} + {k:#x}"));
                }
                match load(sum, size(i.code)) {
                    Some(v) => a = v,
                    None => return Ok(0),
                }
            }
            LD => {
                a = match i.code & 0xe0 {
                    IMM => k,
                    LEN => wire_len,
                    MEM => mem[k as usize],
                    _ => return Err(format!("opcode {:#x}", i.code)),
                }
            }
            LDX => {
                x = match i.code & 0xe0 {
                    IMM => k,
                    LEN => wire_len,
                    MEM => mem[k as usize],
                    MSH => {
                        if k >= 0x8000_0000 {
                            return Err(format!("ldxb at {k:#x}"));
                        }
                        match load(k, 1) {
                            Some(v) => (v & 0xf) << 2,
                            None => return Ok(0),
                        }
                    }
                    _ => return Err(format!("opcode {:#x}", i.code)),
                }
            }
            ST => mem[k as usize] = a,
            STX => mem[k as usize] = x,
            ALU => {
                let operand = if i.code & X != 0 { x } else { k };
                let opc = i.code & 0xf0;
                if matches!(opc, LSH | RSH) && operand >= 32 {
                    return Err(format!("shift by {operand}"));
                }
                a = match opc {
                    ADD => a.wrapping_add(operand),
                    SUB => a.wrapping_sub(operand),
                    MUL => a.wrapping_mul(operand),
                    DIV => match a.checked_div(operand) {
                        Some(v) => v,
                        None => return Ok(0),
                    },
                    MOD => match a.checked_rem(operand) {
                        Some(v) => v,
                        None => return Ok(0),
                    },
                    AND => a & operand,
                    OR => a | operand,
                    XOR => a ^ operand,
                    LSH => a << operand,
                    RSH => a >> operand,
                    NEG => a.wrapping_neg(),
                    _ => return Err(format!("opcode {:#x}", i.code)),
                }
            }
            JMP => {
                let operand = if i.code & X != 0 { x } else { k };
                let taken = match i.code & 0xf0 {
                    JA => {
                        pc += k as usize;
                        continue;
                    }
                    JEQ => a == operand,
                    JGT => a > operand,
                    JGE => a >= operand,
                    JSET => a & operand != 0,
                    _ => return Err(format!("opcode {:#x}", i.code)),
                };
                pc += usize::from(if taken { i.jt } else { i.jf });
            }
            RET => return Ok(if i.code & 0x18 == A { a } else { k }),
            _ => {
                if i.code == MISC | TAX {
                    x = a;
                } else {
                    a = x;
                }
            }
        }
    }
}

#[test]
fn compiled_programs_agree_with_the_reference_evaluator() {
    let mut rng = Rng(0x5eed_0f51_f7b9_c0de);
    let opts = CodegenOptions::default();
    let (mut pairs, mut accepted, mut programs, mut errors, mut insns) = (0usize, 0usize, 0usize, 0usize, 0usize);
    let mut failures = Vec::new();
    for case in 0..4000 {
        let p = pred(&mut rng, 4);
        let prog = match compile(&p, &opts) {
            Ok(prog) => prog,
            Err(e) => {
                errors += 1;
                assert!(matches!(e, CodegenError::TooManyRegisters), "case {case}: {e}\n{p}");
                continue;
            }
        };
        programs += 1;
        insns += prog.len();
        if let Err(e) = validate(&prog) {
            panic!("case {case}: invalid program: {e}\n{p}\n{}", sift_bpf::text::dump_d(&prog));
        }
        let interp = Program::new(&prog).expect("decodes");
        for _ in 0..8 {
            let (data, wire_len) = packet(&mut rng);
            let want = matches(&p, PacketView { data: &data, wire_len });
            let got = interp.run(&data, wire_len);
            let kernel = kernel_model(&prog, &data, wire_len);
            pairs += 1;
            accepted += usize::from(want);
            let expected_ret = if want { opts.snaplen } else { 0 };
            if got != expected_ret || kernel != Ok(expected_ret) {
                failures.push(format!(
                    "case {case}: data {data:?} wire_len {wire_len}: reference {want}, interp {got}, kernel {kernel:?}\n{p}\n{}",
                    sift_bpf::text::dump_d(&prog)
                ));
            }
        }
    }
    println!(
        "{pairs} predicate×packet pairs over {programs} programs (avg {} insns), {accepted} accepted, {errors} codegen errors",
        insns / programs.max(1)
    );
    if let Some(f) = failures.first() {
        panic!("{} failures; first:\n{f}", failures.len());
    }
    assert!(pairs >= 20_000);
    // The generator must exercise both verdicts.
    assert!(accepted > pairs / 10 && accepted < pairs * 9 / 10, "{accepted} of {pairs} accepted");
}

/// A predicate whose tests compare a few shared values with a few
/// constants, so that tests repeat and decide each other (exercising the
/// redundant-load removal and jump threading).
fn related_pred(rng: &mut Rng, depth: u32, pool: &[Value]) -> Pred {
    if depth == 0 || rng.chance(35) {
        let lhs = rng.pick_value(pool);
        let op = rng.pick(&[CmpOp::Eq, CmpOp::Gt, CmpOp::Ge, CmpOp::Set]);
        let rhs = if rng.chance(20) { rng.pick_value(pool) } else { Value::Const(rng.below(6) as u32) };
        return Pred::test(lhs, op, rhs);
    }
    match rng.below(5) {
        0 => related_pred(rng, depth - 1, pool).not(),
        1 | 2 => Pred::And((0..2 + rng.below(3)).map(|_| related_pred(rng, depth - 1, pool)).collect()),
        _ => Pred::Or((0..2 + rng.below(3)).map(|_| related_pred(rng, depth - 1, pool)).collect()),
    }
}

impl Rng {
    fn pick_value(&mut self, pool: &[Value]) -> Value {
        pool[self.below(pool.len() as u64) as usize].clone()
    }
}

#[test]
fn related_tests_agree_with_the_reference_evaluator() {
    let mut rng = Rng(0x0dd_ba11_cafe_f00d);
    let pool = [
        Value::load(Size::Byte, 0),
        Value::load(Size::Byte, 1),
        Value::load(Size::Half, 0),
        Value::load_indexed(Size::Byte, Value::ipv4_header_len(0), 0),
        Value::Len.bin(BinOp::And, Value::Const(7)),
    ];
    let mut pairs = 0;
    for case in 0..3000 {
        let p = related_pred(&mut rng, 4, &pool);
        let prog = compile(&p, &CodegenOptions::default()).expect("compiles");
        let interp = Program::new(&prog).expect("decodes");
        for _ in 0..8 {
            let len = rng.below(24) as usize;
            let data: Vec<u8> = (0..len).map(|_| rng.below(6) as u8).collect();
            let wire_len = rng.below(16) as u32;
            let want = if matches(&p, PacketView { data: &data, wire_len }) { 262_144 } else { 0 };
            pairs += 1;
            assert_eq!(interp.run(&data, wire_len), want, "case {case}: {data:?} {wire_len}\n{p}\n{}", sift_bpf::text::dump_d(&prog));
            assert_eq!(kernel_model(&prog, &data, wire_len), Ok(want), "case {case}");
        }
    }
    assert!(pairs >= 20_000);
}

#[test]
fn long_disjunctions_need_trampolines_and_still_agree() {
    let mut rng = Rng(0xfeed_beef_1234_5678);
    for _ in 0..20 {
        let n = 150 + rng.below(400) as usize;
        let tests: Vec<Pred> = (0..n).map(|_| test(&mut rng)).collect();
        let p = Pred::Or(tests.clone()).and(Pred::And(tests).not().or(test(&mut rng)));
        let prog = match compile(&p, &CodegenOptions { snaplen: 65535 }) {
            Ok(prog) => prog,
            Err(CodegenError::ProgramTooLarge { len }) => {
                assert!(len > 4096);
                continue;
            }
            Err(e) => panic!("{e}"),
        };
        validate(&prog).expect("valid");
        let interp = Program::new(&prog).expect("decodes");
        for _ in 0..50 {
            let (data, wire_len) = packet(&mut rng);
            let want = matches(&p, PacketView { data: &data, wire_len });
            assert_eq!(interp.run(&data, wire_len), if want { 65535 } else { 0 });
            assert_eq!(kernel_model(&prog, &data, wire_len), Ok(if want { 65535 } else { 0 }));
        }
    }
}

#[test]
fn program_too_large_is_an_error() {
    let tests: Vec<Pred> = (0..3000).map(|i| Pred::eq(Value::load(Size::Half, i), i)).collect();
    let err = compile(&Pred::And(tests), &CodegenOptions::default()).unwrap_err();
    assert!(matches!(err, CodegenError::ProgramTooLarge { len } if len > 4096));
    assert!(err.to_string().starts_with("program too large ("));
    assert!(err.to_string().ends_with(" instructions, the kernel's limit is 4096)"));
}

/// A packet of `n` bytes where byte `i` is `i`, except the `wrong` ones.
fn identity_packet(n: usize, wrong: &[usize]) -> Vec<u8> {
    (0..n).map(|i| if wrong.contains(&i) { 0xff } else { i as u8 }).collect()
}

#[test]
fn branch_distances_around_the_8_bit_limit() {
    // Each test is 2 or 3 instructions (`ldb [i]; [and #0xff;] jeq #i`), so
    // the jumps over the other tests cross 255 as `n` grows, at odd and even
    // distances: to `ret`s (copied) and to the entry of the next group
    // (through `ja`).
    let eq = |i: u32| {
        let v = Value::load(Size::Byte, i);
        Pred::eq(if i.is_multiple_of(3) { v.bin(BinOp::And, Value::Const(0xff)) } else { v }, i)
    };
    for n in 100..300u32 {
        let all: Vec<Pred> = (0..n).map(eq).collect();
        let half = n / 2;
        let shapes = [
            Pred::Or(all.clone()),
            Pred::And(all.clone()),
            Pred::Or(all.clone()).not(),
            Pred::And(vec![Pred::Or((0..half).map(eq).collect()), Pred::Or((half..n).map(eq).collect())]),
            Pred::Or(vec![Pred::And((0..half).map(eq).collect()), Pred::And((half..n).map(eq).collect())]),
        ];
        let len = n as usize + 1;
        let everything_wrong: Vec<usize> = (0..len).collect();
        let mut packets = vec![identity_packet(len, &[]), identity_packet(len, &everything_wrong)];
        for j in 0..n as usize {
            let mut only_j = everything_wrong.clone();
            only_j.retain(|&i| i != j);
            packets.push(identity_packet(len, &only_j));
            packets.push(identity_packet(len, &[j]));
            packets.push(identity_packet(len, &[j, (j + half as usize) % n as usize]));
        }
        packets.push(identity_packet(n as usize / 3, &[])); // too short: aborts part-way
        for p in &shapes {
            let prog = compile(p, &CodegenOptions::default()).expect("compiles");
            validate(&prog).expect("valid");
            let interp = Program::new(&prog).expect("decodes");
            for data in &packets {
                let want = matches(p, PacketView { data, wire_len: 1500 });
                let want = if want { 262_144 } else { 0 };
                assert_eq!(interp.run(data, 1500), want, "n {n}\n{p}");
                assert_eq!(kernel_model(&prog, data, 1500), Ok(want), "n {n}");
            }
        }
    }
}

#[test]
fn guard_distances_around_the_8_bit_limit() {
    // Test i loads a byte at the index u32[4 i] (a guarded indexed load):
    // a packet whose word j is 0xffffffff must be rejected by test j's guard.
    let guarded = |i: u32| {
        let v = Value::load_indexed(Size::Byte, Value::load(Size::Word, 4 * i), 0);
        Pred::eq(if i.is_multiple_of(2) { v.bin(BinOp::And, Value::Const(0xff)) } else { v }, 0)
    };
    for n in 30..110u32 {
        let shapes = [Pred::And((0..n).map(guarded).collect()), Pred::Or((0..n).map(guarded).collect()).not()];
        for p in &shapes {
            let prog = compile(p, &CodegenOptions::default()).expect("compiles");
            validate(&prog).expect("valid");
            let interp = Program::new(&prog).expect("decodes");
            for j in 0..=n as usize {
                let mut data = vec![0u8; 4 * n as usize + 4];
                data[4 * j..4 * j + 4].copy_from_slice(&[0xff; 4]);
                let want = if matches(p, PacketView { data: &data, wire_len: 1500 }) { 262_144 } else { 0 };
                assert_eq!(interp.run(&data, 1500), want, "n {n} j {j}");
                assert_eq!(kernel_model(&prog, &data, 1500), Ok(want), "n {n} j {j}");
            }
        }
    }
}

/// Wide `or`/`and` lists of tests on a few loads: after each load has run
/// once, the rest of a list cannot abort, and the optimizer regroups such
/// chains by load (`opt::reorder_chains`). Verdicts on packets cut at every
/// length must not change.
#[test]
fn regrouped_chains_agree_with_the_reference_evaluator() {
    let mut rng = Rng(0xc4a1_2b5e_77d0_0a91);
    let pool = [
        Value::load(Size::Byte, 2),
        Value::load(Size::Half, 4),
        Value::load_indexed(Size::Byte, Value::ipv4_header_len(0), 1),
        Value::load_indexed(Size::Half, Value::ipv4_header_len(0), 2),
    ];
    let leaf = |rng: &mut Rng| {
        let lhs = rng.pick_value(&pool);
        let op = rng.pick(&[CmpOp::Eq, CmpOp::Eq, CmpOp::Eq, CmpOp::Gt, CmpOp::Set]);
        let t = Pred::test(lhs, op, Value::Const(rng.below(4) as u32));
        if rng.chance(15) {
            t.not()
        } else {
            t
        }
    };
    let mut pairs = 0;
    for case in 0..2000 {
        let list = |rng: &mut Rng| (0..3 + rng.below(10)).map(|_| leaf(rng)).collect::<Vec<_>>();
        let inner = if rng.chance(50) { Pred::Or(list(&mut rng)) } else { Pred::And(list(&mut rng)) };
        let p = match rng.below(5) {
            0 => inner,
            1 => leaf(&mut rng).and(inner),
            2 => inner.or(Pred::Or(list(&mut rng))),
            3 => Pred::And(vec![leaf(&mut rng), inner.not(), Pred::Or(list(&mut rng))]),
            // Several chains one after the other, entered with different
            // values in A.
            _ => Pred::Or(
                (0..2 + rng.below(4))
                    .map(|_| match rng.below(3) {
                        0 => leaf(&mut rng),
                        1 => Pred::Or(list(&mut rng)),
                        _ => leaf(&mut rng).and(Pred::Or(list(&mut rng))),
                    })
                    .collect(),
            ),
        };
        let prog = compile(&p, &CodegenOptions::default()).expect("compiles");
        validate(&prog).unwrap_or_else(|e| panic!("case {case}: {e}"));
        let interp = Program::new(&prog).expect("decodes");
        for _ in 0..4 {
            let full: Vec<u8> = (0..12).map(|i| if i == 0 { rng.below(2) as u8 } else { rng.below(4) as u8 }).collect();
            for len in 0..=full.len() {
                let data = &full[..len];
                let want = if matches(&p, PacketView { data, wire_len: 12 }) { 262_144 } else { 0 };
                pairs += 1;
                assert_eq!(interp.run(data, 12), want, "case {case}: {data:?}\n{p}\n{}", sift_bpf::text::dump_d(&prog));
                assert_eq!(kernel_model(&prog, data, 12), Ok(want), "case {case}");
            }
        }
    }
    assert!(pairs >= 50_000);
}

/// The cBPF optimizer reuses its buffers from one call to the next on a
/// thread: the programs must not depend on what was optimized before.
#[test]
fn programs_do_not_depend_on_what_the_thread_compiled_before() {
    let mut rng = Rng(0x5eed_0fb0_ffe1_25aa);
    let pool = [
        Value::load(Size::Byte, 0),
        Value::load(Size::Half, 0),
        Value::load(Size::Word, 2),
        Value::load_indexed(Size::Byte, Value::ipv4_header_len(0), 0),
        Value::load_indexed(Size::Half, Value::ipv4_header_len(0), 2),
    ];
    let preds: Vec<Pred> = (0..300).map(|_| related_pred(&mut rng, 5, &pool)).collect();
    let compile_all = |preds: &[Pred]| -> Vec<Vec<Insn>> {
        preds.iter().map(|p| compile(p, &CodegenOptions::default()).expect("compiles")).collect()
    };
    // One thread for all (buffers reused), and in reverse order.
    let shared = compile_all(&preds);
    let mut reversed: Vec<Pred> = preds.clone();
    reversed.reverse();
    let mut backwards = compile_all(&reversed);
    backwards.reverse();
    for (i, p) in preds.iter().enumerate().step_by(7) {
        // A fresh thread: nothing to reuse.
        let alone = std::thread::scope(|s| s.spawn(|| compile(p, &CodegenOptions::default())).join())
            .expect("joins")
            .expect("compiles");
        assert_eq!(shared[i], alone, "case {i}\n{p}");
    }
    assert_eq!(shared, backwards);
}
