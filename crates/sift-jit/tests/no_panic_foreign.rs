//! No panics on foreign classic BPF, and the interpreter and the JIT agree
//! on it: the stable driver of the `foreign_cbpf` fuzz target (the check
//! itself lives in `fuzz/checks/foreign_cbpf.rs`, shared with the target).
//!
//! Inputs: random byte strings decoded as programs (mostly known opcodes,
//! random jumps and operands), and real programs — libpcap 1.10.3's own,
//! optimized and not, for the corpus expressions — mutated (a field
//! changed, instructions dropped, duplicated or swapped), each run on
//! structured random packets at several truncations.

#[path = "../../../fuzz/checks/input.rs"]
mod input;
#[path = "../../../fuzz/checks/foreign_cbpf.rs"]
mod foreign_cbpf;

use sift_bpf::validate::KNOWN_OPCODES;
use sift_bpf::Insn;
use sift_ir::LinkType;
use sift_testkit::{env_number, packets, Rng};

const EXPRESSIONS: &str = include_str!("../../sift-cli/tests/corpus/expressions.txt");

fn random_packets(rng: &mut Rng, n: usize) -> Vec<(Vec<u8>, u32)> {
    let mut out = foreign_cbpf::sample_packets();
    for _ in 0..n {
        let (data, wire) = packets::random_packet(rng, LinkType::EN10MB);
        out.extend(input::variants(&data, rng.next_u32()));
        out.push((data, wire));
    }
    out
}

/// Sized from the environment for longer runs:
/// `SIFT_FOREIGN_SEED=7 SIFT_FOREIGN_ROUNDS=1000000 cargo test --release
/// --locked -p sift-jit --test no_panic_foreign` (both tests; the
/// mutations run half as many rounds).
fn rounds(default: u64) -> u64 {
    env_number("SIFT_FOREIGN_ROUNDS", default)
}

/// A test's seed: its own, or derived from `SIFT_FOREIGN_SEED`.
fn seed(own: u64) -> u64 {
    match env_number("SIFT_FOREIGN_SEED", 0) {
        0 => own,
        s => s ^ own,
    }
}

#[test]
fn random_bytes_as_programs() {
    let mut rng = Rng::new(seed(0x5eed_f0e1));
    let (mut runnable, mut kernel_ok) = (0, 0);
    let rounds = rounds(20_000);
    for round in 0..rounds {
        let len = rng.index(400);
        let data = rng.bytes(len);
        foreign_cbpf::check(&data);
        if round % 4 == 0 {
            let mut input = input::Input::new(&data);
            let prog = foreign_cbpf::decode_program(&mut input);
            let pkts = random_packets(&mut rng, 2);
            foreign_cbpf::check_program(&prog, &pkts);
            runnable += usize::from(sift_bpf::interp::Program::new(&prog).is_ok());
            kernel_ok += usize::from(sift_bpf::validate::validate(&prog).is_ok());
        }
    }
    eprintln!("of {} decoded programs: {runnable} runnable, {kernel_ok} pass the kernel's rules", rounds.div_ceil(4));
    assert!(runnable * 25 > rounds.div_ceil(4) as usize * 2, "only {runnable} runnable programs");
}

fn mutate(rng: &mut Rng, prog: &mut Vec<Insn>) {
    for _ in 0..=rng.below(3) {
        if prog.is_empty() {
            prog.push(Insn { code: *rng.pick(&KNOWN_OPCODES), jt: 0, jf: 0, k: 0 });
        }
        let i = rng.index(prog.len());
        match rng.below(9) {
            0 => prog[i].code = *rng.pick(&KNOWN_OPCODES),
            1 => prog[i].code = rng.next_u32() as u16,
            2 => prog[i].jt = rng.byte(),
            3 => prog[i].jf = rng.byte() % 8,
            4 => prog[i].k = *rng.pick(&[0, 1, 4, 14, 15, 16, 0x7fff_ffff, 0xffff_fffe, 0xffff_ffff]),
            5 => prog[i].k = rng.next_u32(),
            6 => {
                prog.remove(i);
            }
            7 => {
                let insn = prog[i];
                prog.insert(rng.index(prog.len() + 1), insn);
            }
            _ => {
                let j = rng.index(prog.len());
                prog.swap(i, j);
            }
        }
    }
}

#[test]
fn mutated_libpcap_programs() {
    let mut rng = Rng::new(seed(0xf0e1_97a3));
    let mut seeds = Vec::new();
    for line in EXPRESSIONS.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
        for optimize in [false, true] {
            if let Ok(prog) = sift_testkit::libpcap::compile(line, 1, 262_144, None, optimize) {
                seeds.push(prog);
            }
        }
    }
    assert!(seeds.len() > 100, "only {} programs from libpcap", seeds.len());
    let pkts = random_packets(&mut rng, 8);
    for prog in &seeds {
        foreign_cbpf::check_program(prog, &pkts);
    }
    for _ in 0..rounds(20_000) / 2 {
        let mut prog = rng.pick(&seeds).clone();
        mutate(&mut rng, &mut prog);
        let pkts = random_packets(&mut rng, 2);
        foreign_cbpf::check_program(&prog, &pkts);
    }
}
