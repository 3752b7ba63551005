//! `protochain`: the unrolled classic BPF walk agrees with the reference
//! evaluator on crafted header chains (extension headers, AH, loops that
//! exceed the step bound, truncations), and stays loop-free and valid.

use sift_bpf::codegen::{compile, CodegenOptions};
use sift_bpf::interp::run;
use sift_ir::eval::eval_pred;
use sift_ir::{PacketView, Pred, Value, PROTOCHAIN_MAX_STEPS};

/// A small deterministic generator (xorshift).
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
}

/// Next-header values worth trying.
const NEXT: [u8; 10] = [0, 60, 43, 44, 51, 59, 6, 17, 58, 1];

/// A packet at `nl` bytes of link header: IPv4 or IPv6 with a chain.
fn packet(rng: &mut Rng, v6: bool, nl: usize) -> Vec<u8> {
    let mut p = vec![0u8; nl];
    let pick = |rng: &mut Rng| NEXT[rng.below(NEXT.len() as u64) as usize];
    if v6 {
        let mut h = vec![0u8; 40];
        h[0] = 0x60;
        h[6] = pick(rng);
        p.extend(h);
    } else {
        let ihl = 5 + rng.below(3) as u8;
        let mut h = vec![0u8; usize::from(ihl) * 4];
        h[0] = 0x40 | ihl;
        h[9] = pick(rng);
        p.extend(h);
    }
    // Extension headers of random lengths; AH lengths sometimes make the
    // absolute-offset quirk loop.
    for _ in 0..rng.below(8) {
        let len = rng.below(4) as u8;
        let mut h = vec![0u8; (usize::from(len) + 1) * 8];
        h[0] = pick(rng);
        h[1] = len;
        p.extend(h);
    }
    p.extend((0..rng.below(16)).map(|_| rng.next() as u8));
    p
}

fn check(pred: &Pred, prog: &[sift_bpf::Insn], data: &[u8]) {
    let want = eval_pred(pred, PacketView { data, wire_len: data.len() as u32 }).unwrap_or(false);
    let got = run(prog, data, data.len() as u32) != 0;
    assert_eq!(want, got, "{pred}on {data:02x?}");
}

#[test]
fn unrolled_walk_matches_the_evaluator() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for v6 in [false, true] {
        for proto in [6u8, 17, 51, 59, 0, 44, 58] {
            for nl in [0u32, 14] {
                let walk = Value::Protochain { v6, proto, nl };
                let preds = [
                    Pred::eq(walk.clone(), u32::from(proto)),
                    Pred::eq(walk.clone(), u32::from(proto)).not(),
                    Pred::eq(walk, u32::from(proto)).not().or(Pred::True),
                ];
                for pred in &preds {
                    let prog = compile(pred, &CodegenOptions::default()).expect("compiles");
                    assert!(prog.len() <= 4096);
                    for _ in 0..300 {
                        let pkt = packet(&mut rng, v6, nl as usize);
                        for cut in 0..=pkt.len() {
                            check(pred, &prog, &pkt[..cut]);
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn ah_loop_aborts_after_the_bound() {
    // IPv6, next header AH at 40 whose length byte sends the walk back to
    // offset 40: (8 + 2) * 4 = 40.
    let mut pkt = vec![0u8; 48];
    pkt[0] = 0x60;
    pkt[6] = 51;
    pkt[40] = 51;
    pkt[41] = 8;
    let view = PacketView { data: &pkt, wire_len: 48 };
    let walk = Value::Protochain { v6: true, proto: 6, nl: 0 };
    let pred = Pred::eq(walk, 6).not();
    assert!(eval_pred(&pred, view).is_err(), "the walk gives up: the packet is rejected");
    let prog = compile(&pred, &CodegenOptions::default()).unwrap();
    assert_eq!(run(&prog, &pkt, 48), 0);
    // A chain of exactly the bound's length is still walked to its end.
    let mut pkt = vec![0u8; 40];
    pkt[0] = 0x60;
    pkt[6] = 60;
    for i in 0..PROTOCHAIN_MAX_STEPS {
        let mut h = [0u8; 8];
        h[0] = if i + 1 == PROTOCHAIN_MAX_STEPS { 6 } else { 60 };
        pkt.extend(h);
    }
    let pred = Pred::eq(Value::Protochain { v6: true, proto: 6, nl: 0 }, 6);
    let view = PacketView { data: &pkt, wire_len: pkt.len() as u32 };
    assert_eq!(eval_pred(&pred, view), Ok(true));
    let prog = compile(&pred, &CodegenOptions::default()).unwrap();
    assert_ne!(run(&prog, &pkt, pkt.len() as u32), 0);
}
