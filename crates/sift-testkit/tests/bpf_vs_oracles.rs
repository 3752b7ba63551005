//! sift's classic-BPF components against the oracles, independently of the
//! parser and lowering:
//!
//! * `sift_bpf::interp` must return exactly what libpcap's `bpf_filter`
//!   returns, on libpcap's own programs for random expressions and on
//!   random (checked) instruction sequences;
//! * `sift_bpf::validate` must accept exactly the programs the kernel's
//!   checker accepts, on libpcap's programs and on random mutations of them.

use sift_bpf::insn::{op, Insn};
use sift_testkit::diff;
use sift_testkit::kernel::{self, KernelFilter};
use sift_testkit::libpcap::{self, CheckedProgram};
use sift_testkit::packets;
use sift_testkit::Rng;

#[test]
fn interp_matches_libpcap_on_libpcap_programs() {
    let (mut programs, mut runs, mut uninit) = (0, 0, 0);
    for i in 0..2_000 {
        let (lt, mask, expr) = diff::case(99, i, None);
        let Ok(prog) = libpcap::compile(&expr, lt.0, diff::SNAPLEN, mask, false) else { continue };
        // libpcap's `protochain` loops (a backward jump; a crafted chain can
        // make it loop forever): differential.rs compares those programs
        // behind a bounded trace, this test takes loop-free ones only.
        let lib = match CheckedProgram::new(&prog) {
            Ok(lib) => lib,
            Err(_) if expr.contains("protochain") => continue,
            Err(e) => panic!("libpcap program not runnable: {e:?} ({expr:?})"),
        };
        // libpcap's geneve code can read a scratch word no path wrote:
        // 1.10.3 leaves scratch memory uninitialized (its verdict there
        // depends on stack garbage), sift's interpreter starts it zeroed.
        if diff::reads_unwritten_scratch(&prog) {
            uninit += 1;
            continue;
        }
        let ours = sift_bpf::interp::Program::new(&prog).expect("sift accepts libpcap's program");
        programs += 1;
        let mut rng = Rng::fork(99, i as u64);
        for _ in 0..100 {
            let (data, wire) = packets::random_packet(&mut rng, lt);
            let want = lib.filter(&data, wire);
            let got = ours.run(&data, wire);
            assert_eq!(got, want, "{lt} {expr:?} on {data:02x?} wire {wire}");
            runs += 1;
        }
    }
    println!("interp vs libpcap: {programs} libpcap programs, {runs} runs, all equal ({uninit} reading uninitialized scratch memory skipped)");
    assert!(programs > 1_500);
    assert!(uninit < 40, "{uninit}");
}

/// A random instruction, biased toward valid and interesting ones.
fn random_insn(rng: &mut Rng, len: usize, pc: usize) -> Insn {
    use op::*;
    let left = len.saturating_sub(pc + 2).min(255) as u64;
    let k = match rng.below(10) {
        0..=4 => rng.below(40) as u32,
        5 => rng.below(16) as u32,
        6 => *rng.pick(&[31u32, 32, 33, 0xffff_ffff, 0x7fff_ffff, 0x8000_0000, 0xfff0_0000, 0xfffff000]),
        _ => rng.next_u32(),
    };
    let code = *rng.pick(&[
        LD | W | ABS,
        LD | H | ABS,
        LD | B | ABS,
        LD | W | IND,
        LD | H | IND,
        LD | B | IND,
        LD | W | LEN,
        LD | IMM,
        LD | MEM,
        LDX | IMM,
        LDX | MEM,
        LDX | W | LEN,
        LDX | MSH | B,
        ST,
        STX,
        ALU | ADD | K,
        ALU | SUB | X,
        ALU | MUL | K,
        ALU | DIV | X,
        ALU | DIV | K,
        ALU | MOD | X,
        ALU | MOD | K,
        ALU | AND | X,
        ALU | OR | K,
        ALU | XOR | X,
        ALU | LSH | X,
        ALU | RSH | X,
        ALU | LSH | K,
        ALU | RSH | K,
        ALU | NEG,
        MISC | TAX,
        MISC | TXA,
        JMP | JEQ | K,
        JMP | JGT | X,
        JMP | JGE | K,
        JMP | JSET | X,
        JMP | JA,
        RET | A,
    ]);
    let (k, jt, jf) = match code & 0x07 {
        JMP if code & 0xf0 == JA => (rng.below(left + 1) as u32, 0, 0),
        JMP => (k, rng.below(left + 1) as u8, rng.below(left + 1) as u8),
        LD | LDX | ST | STX if code & 0xe0 == MEM || code == ST || code == STX => (k % 16, 0, 0),
        ALU if matches!(code & 0xf0, DIV | MOD) && code & X == 0 => (k.max(1), 0, 0),
        ALU if matches!(code & 0xf0, LSH | RSH) && code & X == 0 => (k % 32, 0, 0),
        _ => (k, 0, 0),
    };
    Insn { code, jt, jf, k }
}

#[test]
fn interp_matches_libpcap_on_random_programs() {
    let mut rng = Rng::new(2024);
    let mut runs = 0;
    for _ in 0..3_000 {
        let len = 2 + rng.index(30);
        let mut prog: Vec<Insn> = (0..len - 1).map(|pc| random_insn(&mut rng, len, pc)).collect();
        prog.push(Insn::stmt(op::RET | op::A, 0));
        // libpcap 1.10.3 leaves scratch memory uninitialized (whatever its
        // stack held: it matched sift's zeros only while sift's interpreter
        // happened to zero the same stack slots just before), sift zeroes
        // it: store zeros first so that reading a slot before writing it is
        // defined for both. Jumps are relative, so the prefix moves nothing.
        let zeros = std::iter::once(Insn::stmt(op::LD | op::IMM, 0)).chain((0..16).map(|i| Insn::stmt(op::ST, i)));
        prog.splice(0..0, zeros);
        // Keep only what libpcap 1.10.3's interpreter can run safely.
        let Ok(lib) = CheckedProgram::new(&prog) else { continue };
        let ours = sift_bpf::interp::Program::new(&prog).expect("checked program decodes");
        for _ in 0..20 {
            let n = rng.index(64);
            let data = rng.bytes(n);
            let wire = if rng.chance(0.5) { n as u32 } else { rng.next_u32() };
            assert_eq!(ours.run(&data, wire), lib.filter(&data, wire), "{prog:?} on {data:02x?} wire {wire}");
            runs += 1;
        }
    }
    println!("interp vs libpcap on random programs: {runs} runs, all equal");
    assert!(runs > 20_000);
}

#[test]
fn validate_agrees_with_the_kernel_checker() {
    let mut rng = Rng::new(7);
    let (mut agree, mut refused) = (0, 0);
    let mut kf = KernelFilter::new(&[Insn::stmt(op::RET | op::K, 1)]).unwrap();
    let mut check = |prog: &[Insn], what: &str| {
        let kernel_ok = match kf.set_program(prog) {
            Ok(()) => true,
            Err(e) if kernel::is_rejected(&e) => false,
            Err(e) => panic!("kernel: {e}"),
        };
        let ours = sift_bpf::validate::validate(prog);
        assert_eq!(ours.is_ok(), kernel_ok, "{what}: validate says {ours:?}, kernel accepts: {kernel_ok}; {prog:?}");
        agree += 1;
        refused += usize::from(!kernel_ok);
    };
    for i in 0..1_000 {
        let (lt, mask, expr) = diff::case(5, i, None);
        let Ok(prog) = libpcap::compile(&expr, lt.0, diff::SNAPLEN, mask, false) else { continue };
        check(&prog, &expr);
        // A few random single-instruction mutations of it.
        for _ in 0..5 {
            let mut m = prog.clone();
            let at = rng.index(m.len());
            m[at] = random_insn(&mut rng, m.len(), at);
            match rng.below(6) {
                0 => m[at].code = rng.next_u32() as u16,
                1 => m[at].k = rng.next_u32(),
                2 => m[at].jt = rng.byte(),
                _ => {}
            }
            if rng.chance(0.1) {
                m.pop();
            }
            check(&m, &format!("mutation of {expr:?}"));
        }
    }
    println!("validate vs kernel checker: {agree} programs agree ({refused} refused by both)");
    assert!(refused > 100);
}
