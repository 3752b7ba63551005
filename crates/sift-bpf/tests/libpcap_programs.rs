//! Text formats, validator and decoder against the real thing: for every
//! other (DLT, expression) pair of libpcap's TESTrun accept corpus, this runs
//! the installed tcpdump 4.99.3 (libpcap 1.10.3) with `-ddd`, `-dd` and `-d`,
//! optimized and not (`-O`), and checks that
//!
//! * [`parse_program`] reads the `-ddd` and `-dd` output to the same program;
//! * [`dump_ddd`], [`dump_dd`], [`dump_d`] reproduce tcpdump's stdout byte for
//!   byte (and the comma form round-trips);
//! * [`validate`] accepts the program, except for the shapes the Linux
//!   kernel refuses too: a scratch word read before any write (libpcap bug
//!   #834), `protochain`'s backward `ja`, more than 4096 instructions;
//! * [`Program::new`] accepts every program.
//!
//! Nothing is cached: tcpdump runs in the test. Without tcpdump or the
//! corpus the test prints a notice and passes.

use sift_bpf::interp::Program;
use sift_bpf::text::{dump_comma, dump_d, dump_dd, dump_ddd, parse_program};
use sift_bpf::validate::{validate, ValidateErrorKind};
use sift_bpf::Insn;
use std::collections::BTreeSet;
use std::process::Command;
use std::sync::Mutex;

const CORPUS: &str = "/work/shared/data/libpcap-tests/testrun-filters.tsv";

/// Distinct (dlt, expression) pairs of the accept rows that need no
/// hosts/ethers/networks configuration.
fn corpus() -> Option<Vec<(String, String)>> {
    let text = std::fs::read_to_string(CORPUS).ok()?;
    let mut pairs = BTreeSet::new();
    for line in text.lines().skip(1) {
        let cols: Vec<&str> = line.split('\t').collect();
        if cols.len() < 10 || cols[6] != "accept" || !cols[8].is_empty() || cols[1].starts_with('_') {
            continue;
        }
        pairs.insert((cols[0].to_string(), cols[1].to_string()));
    }
    Some(pairs.into_iter().collect())
}

/// tcpdump's stdout, or `None` if it failed (the expression is not valid
/// for libpcap 1.10.3).
fn tcpdump(optimize: bool, level: &str, dlt: &str, expr: &str) -> Option<String> {
    let mut cmd = Command::new("tcpdump");
    if !optimize {
        cmd.arg("-O");
    }
    let out = cmd.args([level, "-y", dlt, "--", expr]).output().ok()?;
    if !out.status.success() {
        return None;
    }
    String::from_utf8(out.stdout).ok()
}

#[derive(Default, Debug)]
struct Stats {
    pairs_compiled: usize,
    programs: usize,
    not_compiled: usize,
    valid: usize,
    uninitialized_scratch: Vec<String>,
    backward_jump: usize,
    too_long: usize,
    failures: Vec<String>,
}

fn check_pair(dlt: &str, expr: &str, stats: &Mutex<Stats>) {
    let mut compiled = false;
    for optimize in [false, true] {
        let Some(ddd) = tcpdump(optimize, "-ddd", dlt, expr) else {
            continue;
        };
        compiled = true;
        let fail = |what: String| {
            stats.lock().unwrap().failures.push(format!("{dlt} {expr:?} (optimize {optimize}): {what}"));
        };
        let prog = match parse_program(&ddd) {
            Ok(p) => p,
            Err(e) => return fail(format!("cannot parse -ddd output: {e}")),
        };
        if dump_ddd(&prog) != ddd {
            fail(format!("dump_ddd differs:\n{}\nvs tcpdump\n{ddd}", dump_ddd(&prog)));
        }
        if parse_program(&dump_comma(&prog)).as_ref() != Ok(&prog) {
            fail("comma form does not round-trip".to_string());
        }
        match tcpdump(optimize, "-dd", dlt, expr) {
            Some(dd) => {
                if parse_program(&dd).as_ref() != Ok(&prog) {
                    fail(format!("-dd parses differently: {:?}", parse_program(&dd).err()));
                }
                if dump_dd(&prog) != dd {
                    fail(format!("dump_dd differs:\n{}\nvs tcpdump\n{dd}", dump_dd(&prog)));
                }
            }
            None => fail("tcpdump -dd failed where -ddd worked".to_string()),
        }
        match tcpdump(optimize, "-d", dlt, expr) {
            Some(d) => {
                if dump_d(&prog) != d {
                    fail(format!("dump_d differs:\n{}\nvs tcpdump\n{d}", dump_d(&prog)));
                }
            }
            None => fail("tcpdump -d failed where -ddd worked".to_string()),
        }
        if let Err(e) = Program::new(&prog) {
            fail(format!("the interpreter refuses it: {e}"));
        }
        let verdict = validate(&prog);
        let mut s = stats.lock().unwrap();
        s.programs += 1;
        match verdict {
            Ok(()) => s.valid += 1,
            Err(e) => match e.kind {
                ValidateErrorKind::UninitializedScratch { .. } => {
                    s.uninitialized_scratch.push(format!("{dlt} {expr:?} (optimize {optimize}): {e}"))
                }
                ValidateErrorKind::JumpOutOfRange { .. } if is_backward_ja(&prog, e.pc) => s.backward_jump += 1,
                ValidateErrorKind::TooLong { .. } => s.too_long += 1,
                _ => s.failures.push(format!("{dlt} {expr:?} (optimize {optimize}): unexpected: {e}")),
            },
        }
    }
    let mut s = stats.lock().unwrap();
    if compiled {
        s.pairs_compiled += 1;
    } else {
        s.not_compiled += 1;
    }
}

fn is_backward_ja(prog: &[Insn], pc: Option<usize>) -> bool {
    pc.and_then(|pc| prog.get(pc))
        .is_some_and(|i| i.code == sift_bpf::insn::op::JMP | sift_bpf::insn::op::JA && (i.k as i32) < 0)
}

#[test]
fn tcpdump_programs_round_trip_and_validate() {
    if Command::new("tcpdump").arg("--version").output().is_err() {
        println!("NOTICE: tcpdump is not installed; skipping the libpcap comparison");
        return;
    }
    let Some(pairs) = corpus() else {
        println!("NOTICE: {CORPUS} not found; skipping the libpcap comparison");
        return;
    };
    // Every other pair keeps the run short while covering every DLT.
    let pairs: Vec<_> = pairs.into_iter().step_by(2).collect();
    let stats = Mutex::new(Stats::default());
    let next = Mutex::new(0usize);
    std::thread::scope(|scope| {
        for _ in 0..4 {
            scope.spawn(|| loop {
                let i = {
                    let mut n = next.lock().unwrap();
                    *n += 1;
                    *n - 1
                };
                let Some((dlt, expr)) = pairs.get(i) else { break };
                check_pair(dlt, expr, &stats);
            });
        }
    });
    let s = stats.into_inner().unwrap();
    println!(
        "{} pairs compiled by tcpdump ({} not), {} programs: {} valid, {} read scratch memory uninitialized, \
         {} jump backward, {} too long",
        s.pairs_compiled,
        s.not_compiled,
        s.programs,
        s.valid,
        s.uninitialized_scratch.len(),
        s.backward_jump,
        s.too_long
    );
    for u in &s.uninitialized_scratch {
        println!("  kernel would refuse: {u}");
    }
    for f in s.failures.iter().take(20) {
        println!("FAIL {f}");
    }
    assert!(s.failures.is_empty(), "{} failures", s.failures.len());
    assert!(s.pairs_compiled >= 500, "only {} expressions checked", s.pairs_compiled);
}
