//! Differential tests of the direct predicate JIT (`JitFilter::from_pred`)
//! against the reference evaluator `sift_ir::eval` (and, for lowered
//! expressions, against `sift_bpf::interp` on the codegen's program):
//!
//! * random filter expressions from `sift_testkit` (the differential
//!   harness's cases), lowered, × random packets;
//! * random predicates built directly (all operators, division by zero,
//!   shifts of 32 and more, indexed loads with huge indexes and offsets,
//!   constants on either side) × random short packets.

use sift_bpf::codegen::{compile, CodegenOptions};
use sift_bpf::interp::Program;
use sift_ir::eval::{eval_pred, PacketView};
use sift_ir::{BinOp, CmpOp, LowerOptions, Pred, Size, Value};
use sift_jit::JitFilter;
use sift_testkit::diff;
use sift_testkit::{packets, Rng};

const SEED: u64 = 0x5052_4544_4a49_5401;

fn reference(pred: &Pred, data: &[u8], wire_len: u32, accept: u32) -> u32 {
    match eval_pred(pred, PacketView { data, wire_len }) {
        Ok(true) => accept,
        _ => 0,
    }
}

fn parallel(n: usize, f: impl Fn(usize, usize) -> (usize, usize) + Sync) -> (usize, usize) {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 8);
    let per = n.div_ceil(threads);
    let f = &f;
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| s.spawn(move || f(t * per, ((t + 1) * per).min(n))))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("worker"))
            .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
    })
}

#[test]
fn lowered_expressions_agree_with_the_evaluator_and_the_interpreter() {
    if !JitFilter::is_supported() {
        return;
    }
    const N: usize = 20_000;
    let (preds, runs) = parallel(N, |from, to| {
        let (mut preds, mut runs) = (0, 0);
        for i in from..to {
            let (lt, netmask, expr) = diff::case(SEED, i, None);
            let Ok(filter) = sift_syntax::parse(&expr) else {
                continue;
            };
            let opts = LowerOptions {
                linktype: lt,
                netmask,
                ..LowerOptions::default()
            };
            let Ok(pred) = sift_ir::lower(&filter, &opts) else {
                continue;
            };
            let snaplen = diff::snaplen_for(SEED, i);
            let jit = match JitFilter::from_pred_with(&pred, snaplen) {
                Ok(j) => j,
                // A protochain filter goes through cBPF, whose programs can
                // exceed BPF_MAXINSNS (a documented limit, exempted in the
                // differential campaigns too).
                Err(sift_jit::JitError::Codegen(sift_bpf::codegen::CodegenError::ProgramTooLarge { .. }))
                    if expr.contains("protochain") =>
                {
                    continue
                }
                Err(e) => panic!("{expr:?}: JIT: {e:?}"),
            };
            // `protochain` (a loop) is the one construct the direct path
            // leaves to cBPF by design.
            if !expr.contains("protochain") {
                assert_eq!(jit.insn_count(), 0, "{expr:?} went through cBPF");
            }
            let interp = compile(&pred, &CodegenOptions { snaplen })
                .ok()
                .and_then(|p| Program::new(&p).ok());
            let mut rng = Rng::fork(SEED, i as u64 * 2 + 1);
            let mut accepted = 0;
            let mut batch = Vec::with_capacity(100);
            for _ in 0..100 {
                let (data, wire) = packets::random_packet(&mut rng, lt);
                let got = jit.run(&data, wire);
                let want = reference(&pred, &data, wire, snaplen);
                accepted += u64::from(want != 0);
                assert_eq!(
                    got, want,
                    "{expr:?} ({lt:?}, netmask {netmask:?})\npacket {data:02x?} wire {wire}"
                );
                if let Some(p) = &interp {
                    assert_eq!(
                        got,
                        p.run(&data, wire),
                        "interp: {expr:?}\npacket {data:02x?} wire {wire}"
                    );
                }
                batch.push((data, wire));
            }
            // The batch entry point (the count function, for at least
            // `BATCH` packets) accepts the same packets.
            assert_eq!(jit.count_matches(&batch, |p| (&p.0, p.1)), accepted, "count: {expr:?}");
            assert_eq!(jit.count_packets(&packet_refs(&batch)), accepted, "count in place: {expr:?}");
            assert_verdicts(&jit, &batch, accepted, &expr);
            preds += 1;
            runs += 100;
        }
        (preds, runs)
    });
    eprintln!("{N} expressions, {preds} predicates, {runs} packet runs");
    assert!(preds > N / 2);
}

const CONSTS: &[u32] = &[
    0,
    1,
    2,
    3,
    4,
    5,
    7,
    8,
    15,
    16,
    31,
    32,
    33,
    40,
    60,
    255,
    256,
    0xffff,
    0x8000_0000,
    0xffff_ffff,
];
const HUGE: &[u32] = &[
    0x7fff_fff0,
    0x7fff_fffb,
    0x7fff_fffc,
    0x7fff_ffff,
    0x8000_0000,
    0xffff_f000,
    0xffff_ffff,
];
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
    *rng.pick(&[Size::Byte, Size::Half, Size::Word])
}

fn offset(rng: &mut Rng) -> u32 {
    if rng.chance(0.04) {
        *rng.pick(HUGE)
    } else {
        rng.below(72) as u32
    }
}

fn constant(rng: &mut Rng) -> u32 {
    if rng.chance(0.15) {
        rng.next_u32()
    } else {
        *rng.pick(CONSTS)
    }
}

fn index(rng: &mut Rng, depth: u32) -> Value {
    match rng.below(8) {
        0 => Value::load(Size::Byte, offset(rng)),
        1 => Value::ipv4_header_len(rng.below(40) as u32),
        2 => Value::Const(rng.below(50) as u32),
        3 => Value::Const(*rng.pick(HUGE)),
        4 => Value::Len,
        5 => Value::load(Size::Byte, rng.below(40) as u32).bin(BinOp::And, Value::Const(0x1f)),
        _ => value(rng, depth),
    }
}

fn value(rng: &mut Rng, depth: u32) -> Value {
    if depth == 0 || rng.chance(0.35) {
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
            let op = *rng.pick(OPS);
            let l = value(rng, depth - 1);
            let r = if rng.chance(0.4) {
                Value::Const(constant(rng))
            } else {
                value(rng, depth - 1)
            };
            l.bin(op, r)
        }
    }
}

fn test(rng: &mut Rng) -> Pred {
    let op = *rng.pick(&[CmpOp::Eq, CmpOp::Gt, CmpOp::Ge, CmpOp::Set]);
    let lhs = if rng.chance(0.3) {
        Value::load(size(rng), offset(rng))
    } else {
        value(rng, 3)
    };
    let rhs = match rng.below(10) {
        0..=4 => Value::Const(*rng.pick(&[
            0,
            1,
            2,
            3,
            4,
            5,
            8,
            17,
            60,
            255,
            0x800,
            0xffff,
            0x1_0000,
            0xffff_ffff,
        ])),
        5 => Value::Const(constant(rng)),
        _ => value(rng, 3),
    };
    if rng.chance(0.1) {
        Pred::test(Value::Const(constant(rng)), op, lhs)
    } else {
        Pred::test(lhs, op, rhs)
    }
}

fn pred(rng: &mut Rng, depth: u32) -> Pred {
    if depth == 0 || rng.chance(0.3) {
        return match rng.below(20) {
            0 => Pred::True,
            1 => Pred::False,
            _ => test(rng),
        };
    }
    match rng.below(6) {
        0 => pred(rng, depth - 1).not(),
        1..=3 => Pred::And((0..rng.below(5)).map(|_| pred(rng, depth - 1)).collect()),
        _ => Pred::Or((0..rng.below(5)).map(|_| pred(rng, depth - 1)).collect()),
    }
}

fn packet(rng: &mut Rng) -> (Vec<u8>, u32) {
    let len = match rng.below(4) {
        0 => rng.index(16),
        _ => rng.index(100),
    };
    let mut data = rng.bytes(len);
    for b in data.iter_mut() {
        if rng.chance(0.3) {
            *b &= 0x0f;
        }
    }
    let wire = if rng.chance(0.2) {
        rng.next_u32()
    } else {
        len as u32
    };
    (data, wire)
}

/// `jit` (compiled from `p`, returning `accept`) gives the evaluator's
/// verdict on 40 random packets, and counts them right through the batch
/// entry point: twice over, so that at least `BATCH` packets go through
/// the count function (where the predicate has one).
fn agrees_on_random_packets(jit: &JitFilter, p: &Pred, accept: u32, rng: &mut Rng) {
    let mut batch = Vec::with_capacity(80);
    let mut accepted = 0;
    for _ in 0..40 {
        let (data, wire) = packet(rng);
        let want = reference(p, &data, wire, accept);
        assert_eq!(jit.run(&data, wire), want, "{p:?}\npacket {data:02x?} wire {wire}");
        accepted += 2 * u64::from(want != 0);
        batch.push((data, wire));
    }
    batch.extend_from_within(..);
    assert_eq!(jit.count_matches(&batch, |p| (&p.0, p.1)), accepted, "count: {p:?}");
    assert_eq!(jit.count_packets(&packet_refs(&batch)), accepted, "count in place: {p:?}");
    assert_verdicts(jit, &batch, accepted, p);
}

/// `n` predicates from `make` (a predicate and its accept value, from a
/// generator forked from `seed` per predicate), each compiled and checked
/// by [`agrees_on_random_packets`]; at least 90% must compile directly.
fn campaign(what: &str, n: usize, seed: u64, make: impl Fn(&mut Rng) -> (Pred, u32) + Sync) {
    let (preds, runs) = parallel(n, |from, to| {
        let (mut preds, mut runs) = (0, 0);
        for i in from..to {
            let mut rng = Rng::fork(seed, i as u64);
            let (p, accept) = make(&mut rng);
            let jit = JitFilter::from_pred_with(&p, accept).expect("JIT");
            if jit.insn_count() == 0 {
                preds += 1;
            }
            agrees_on_random_packets(&jit, &p, accept, &mut rng);
            runs += 40;
        }
        (preds, runs)
    });
    eprintln!("{n} {what} ({preds} compiled directly), {runs} packet runs");
    assert!(preds > n * 9 / 10, "only {preds} compiled directly");
}

#[test]
fn random_predicates_agree_with_the_evaluator() {
    if !JitFilter::is_supported() {
        return;
    }
    campaign("random predicates", 50_000, SEED ^ 2, |rng| {
        let p = pred(rng, 4);
        let accept = if rng.chance(0.5) { 1 } else { constant(rng) };
        (p, accept)
    });
}

#[test]
fn deep_and_wide_predicates() {
    if !JitFilter::is_supported() {
        return;
    }
    // Deeper than the direct compiler's limit: goes through cBPF.
    let mut deep = Pred::eq(Value::load(Size::Byte, 0), 1);
    for _ in 0..600 {
        deep = deep.not();
    }
    // A value needing four registers.
    let leaf = |o| Value::load(Size::Byte, o);
    let v = leaf(0)
        .bin(BinOp::Add, leaf(1))
        .bin(BinOp::Sub, leaf(2).bin(BinOp::Add, leaf(3)));
    let v = v.clone().bin(BinOp::Xor, v);
    let wide = Pred::test(v, CmpOp::Eq, Value::Const(0));
    // Values needing 8 and 10 registers (balanced trees).
    fn balanced(n: u32) -> Value {
        if n == 0 {
            Value::load(Size::Byte, n)
        } else {
            balanced(n - 1).bin(
                if n.is_multiple_of(2) {
                    BinOp::Add
                } else {
                    BinOp::Sub
                },
                balanced(n - 1).bin(BinOp::Add, Value::Len),
            )
        }
    }
    let eight = Pred::test(balanced(7), CmpOp::Gt, Value::Len);
    let ten = Pred::test(Value::Const(9), CmpOp::Ge, balanced(9));
    // Many alternatives (long jumps).
    let many = Pred::Or(
        (0..2000)
            .map(|i| Pred::eq(Value::load(Size::Half, i % 60), i))
            .collect(),
    );
    for (p, direct) in [
        (deep, false),
        (wide, true),
        (eight, true),
        (ten, false),
        (many, true),
        (Pred::And(vec![]), true),
        (Pred::Or(vec![]), true),
        (Pred::True, true),
        (Pred::False, true),
    ] {
        let jit = JitFilter::from_pred(&p).expect("JIT");
        assert_eq!(jit.insn_count() == 0, direct, "{p:?}");
        let mut rng = Rng::new(3);
        for _ in 0..200 {
            let (data, wire) = packet(&mut rng);
            assert_eq!(
                jit.run(&data, wire),
                reference(&p, &data, wire, sift_bpf::codegen::DEFAULT_SNAPLEN)
            );
        }
    }
}

/// A test of a value from `pool` (or a load indexed by one of `indexes`)
/// against a constant or another such value: predicates whose tests share
/// operands and load indexes, which the compiler keeps in registers from
/// one test to the next on the paths where they are still there.
fn pooled_test(rng: &mut Rng, pool: &[Value], indexes: &[Value]) -> Pred {
    let operand = |rng: &mut Rng| {
        if rng.chance(0.5) {
            rng.pick(pool).clone()
        } else {
            let off = if rng.chance(0.05) { *rng.pick(HUGE) } else { rng.below(24) as u32 };
            Value::load_indexed(size(rng), rng.pick(indexes).clone(), off)
        }
    };
    let lhs = operand(rng);
    let op = *rng.pick(&[CmpOp::Eq, CmpOp::Gt, CmpOp::Ge, CmpOp::Set]);
    let rhs = if rng.chance(0.8) {
        Value::Const(*rng.pick(&[0, 1, 2, 5, 17, 255, 0x800, 0xffff, 0x1_0000]))
    } else {
        operand(rng)
    };
    Pred::test(lhs, op, rhs)
}

fn pooled_pred(rng: &mut Rng, depth: u32, pool: &[Value], indexes: &[Value]) -> Pred {
    if depth == 0 || rng.chance(0.25) {
        return pooled_test(rng, pool, indexes);
    }
    match rng.below(7) {
        0 => pooled_pred(rng, depth - 1, pool, indexes).not(),
        1..=3 => Pred::And((0..rng.below(5)).map(|_| pooled_pred(rng, depth - 1, pool, indexes)).collect()),
        4 => {
            // Alternatives starting with equality tests of one value (the
            // shape of `ip or ip6 or arp` after factoring), some of them
            // sets of constants, some constants repeated.
            let x = rng.pick(pool).clone();
            let eq = |rng: &mut Rng| Pred::eq(x.clone(), rng.below(4) as u32);
            Pred::Or(
                (0..rng.below(5))
                    .map(|_| {
                        let first = if rng.chance(0.2) { Pred::Or(vec![eq(rng), eq(rng)]) } else { eq(rng) };
                        let rest = (0..rng.below(3)).map(|_| pooled_pred(rng, depth - 1, pool, indexes));
                        Pred::And(std::iter::once(first).chain(rest).collect())
                    })
                    .collect(),
            )
        }
        _ => Pred::Or((0..rng.below(5)).map(|_| pooled_pred(rng, depth - 1, pool, indexes)).collect()),
    }
}

#[test]
fn predicates_sharing_operands_and_indexes_agree_with_the_evaluator() {
    if !JitFilter::is_supported() {
        return;
    }
    campaign("predicates sharing operands", 20_000, SEED ^ 3, |rng| {
        // Indexes: the IPv4 header length, a byte, and values that divide
        // (which takes rdx, where an index is kept).
        let indexes: Vec<Value> = (0..2)
            .map(|_| match rng.below(4) {
                0 => Value::ipv4_header_len(rng.below(20) as u32),
                1 => Value::load(Size::Byte, rng.below(30) as u32),
                2 => Value::load(Size::Byte, rng.below(30) as u32).bin(BinOp::Div, Value::Const(3)),
                _ => index(rng, 2),
            })
            .collect();
        let pool: Vec<Value> = (0..3)
            .map(|_| match rng.below(3) {
                0 => Value::load_indexed(size(rng), rng.pick(&indexes).clone(), rng.below(20) as u32),
                1 => value(rng, 2).bin(BinOp::Mod, value(rng, 1)),
                _ => value(rng, 2),
            })
            .collect();
        (pooled_pred(rng, 4, &pool, &indexes), 1)
    });
}

/// `load & mask == k`, which the compiler compares on the bytes as loaded
/// (mask and constant in network order): two- and four-byte loads, absolute
/// and indexed, masks wider than the load, constants inside and outside
/// the mask and the load's range, runs of tests of one masked load, and
/// the masked load used again as a value.
#[test]
fn masked_compares_agree_with_the_evaluator() {
    if !JitFilter::is_supported() {
        return;
    }
    campaign("masked compares", 20_000, SEED ^ 4, |rng| {
        let masked = |rng: &mut Rng| {
            let size = *rng.pick(&[Size::Half, Size::Word, Size::Byte]);
            let load = if rng.chance(0.3) {
                Value::load_indexed(size, index(rng, 1), rng.below(30) as u32)
            } else {
                Value::load(size, offset(rng))
            };
            let mask = if rng.chance(0.5) {
                *rng.pick(&[0xff00, 0xfff0, 0x1fff, 0xffff_ff00, 0xffff_0000, 0x00ff_ff00, 0xf0f0_f0f0, 0x1_ff00, 0xffff_ffff])
            } else {
                constant(rng)
            };
            let value = load.bin(BinOp::And, Value::Const(mask));
            let k = match rng.below(4) {
                0 => rng.next_u32() & mask,
                1 => rng.next_u32() & mask & 0xffff,
                2 => constant(rng),
                _ => 0,
            };
            (value, k)
        };
        let mut tests = Vec::new();
        for _ in 0..1 + rng.below(4) {
            let (v, k) = masked(rng);
            tests.push(Pred::eq(v.clone(), k));
            if rng.chance(0.3) {
                // The same masked load again: tested once more, or compared.
                tests.push(Pred::eq(v.clone(), k ^ 0x100));
            }
            if rng.chance(0.2) {
                tests.push(Pred::test(v, CmpOp::Gt, Value::Const(constant(rng))));
            }
        }
        let p = if rng.chance(0.5) { Pred::Or(tests) } else { Pred::And(tests) };
        (if rng.chance(0.2) { p.not() } else { p }, 1)
    });
}

/// The packets of `batch` as the count function walks them in place.
fn packet_refs(batch: &[(Vec<u8>, u32)]) -> Vec<sift_jit::PacketRef<'_>> {
    batch.iter().map(|p| sift_jit::PacketRef::new(&p.0, p.1)).collect()
}

/// The verdict function writes each packet's verdict (the per-packet
/// function's), `accepted` of them true.
fn assert_verdicts(jit: &JitFilter, batch: &[(Vec<u8>, u32)], accepted: u64, what: &impl std::fmt::Debug) {
    let mut verdicts = vec![false; batch.len()];
    assert_eq!(jit.verdicts(&packet_refs(batch), &mut verdicts), accepted, "verdicts: {what:?}");
    for ((data, wire), v) in batch.iter().zip(&verdicts) {
        assert_eq!(*v, jit.run(data, *wire) != 0, "verdict: {what:?}\npacket {data:02x?} wire {wire}");
    }
}
