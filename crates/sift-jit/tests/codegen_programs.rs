//! Differential test on the programs sift's code generator produces: random
//! filter expressions from `sift_testkit::exprs` (the differential
//! harness's cases: every link type it covers, netmasks, odd snapshot
//! lengths) are parsed, lowered and compiled to cBPF; on random packets from
//! `sift_testkit::packets` (truncated ones included) the JIT must return
//! exactly what `sift_bpf::interp` returns.
//!
//! A second test runs the harness itself (`sift_testkit::diff::run`) with the
//! JIT in the interpreter's seat, so the JIT is also compared with libpcap
//! 1.10.3 and the reference evaluator.

use sift_bpf::codegen::{compile, CodegenOptions};
use sift_bpf::interp::Program;
use sift_bpf::Insn;
use sift_ir::{LowerOptions, Pred};
use sift_jit::JitFilter;
use sift_testkit::diff::{self, Campaign, Engines, Interp, SiftEngines};
use sift_testkit::{packets, Rng};

const SEED: u64 = 0x5349_4654_4a49_5401;

/// Compares the JIT with the interpreter for expressions `from..to`;
/// returns (programs, packet runs).
fn range(from: usize, to: usize, packets_per_expr: usize) -> (usize, usize) {
    let (mut programs, mut runs) = (0, 0);
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
        let Ok(prog) = compile(&pred, &CodegenOptions { snaplen }) else {
            continue;
        };
        let interp = Program::new(&prog).expect("codegen output runs");
        let jit = JitFilter::from_program(&prog).expect("the JIT compiles codegen output");
        let mut rng = Rng::fork(SEED, i as u64 * 2 + 1);
        for _ in 0..packets_per_expr {
            let (data, wire) = packets::random_packet(&mut rng, lt);
            let want = interp.run(&data, wire);
            let got = jit.run(&data, wire);
            assert_eq!(
                got, want,
                "expression {expr:?} ({lt:?}, netmask {netmask:?})\npacket {data:02x?} wire {wire}"
            );
            // Also the truncations of the packet's first 64 bytes now and then.
            if i % 16 == 0 {
                for cut in 0..data.len().min(64) {
                    assert_eq!(
                        jit.run(&data[..cut], wire),
                        interp.run(&data[..cut], wire),
                        "{expr:?} cut {cut}"
                    );
                }
            }
        }
        programs += 1;
        runs += packets_per_expr;
    }
    (programs, runs)
}

#[test]
fn codegen_programs_agree_with_the_interpreter() {
    if !JitFilter::is_supported() {
        return;
    }
    const N: usize = 20_000;
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 8);
    let per = N.div_ceil(threads);
    let (programs, runs) = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| s.spawn(move || range(t * per, ((t + 1) * per).min(N), 100)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("worker"))
            .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
    });
    eprintln!("{N} expressions, {programs} compiled programs, {runs} packet runs");
    // Most random expressions are valid.
    assert!(programs > N / 2, "only {programs} programs");
}

/// sift's pipeline with the JIT in place of the interpreter.
struct JitEngines;

impl Engines for JitEngines {
    fn lower(&self, expr: &str, opts: &LowerOptions) -> Result<Pred, String> {
        SiftEngines.lower(expr, opts)
    }
    fn codegen(&self, pred: &Pred, snaplen: u32) -> Result<Vec<Insn>, String> {
        SiftEngines.codegen(pred, snaplen)
    }
    fn validate(&self, prog: &[Insn]) -> Result<(), String> {
        SiftEngines.validate(prog)
    }
    fn interpreter(&self, prog: &[Insn]) -> Result<Interp, String> {
        let jit = JitFilter::from_program(prog).map_err(|e| e.to_string())?;
        Ok(Box::new(move |data, wire_len| jit.run(data, wire_len)))
    }
}

#[test]
fn jit_agrees_with_libpcap_in_the_differential_harness() {
    if !JitFilter::is_supported() {
        return;
    }
    let report = diff::run(&Campaign::new(SEED ^ 1, 2_000, 100, false), &JitEngines);
    eprintln!("{}", report.summary());
    assert_eq!(report.total_disagreements(), 0, "{report}");
}
