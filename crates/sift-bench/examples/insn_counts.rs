//! Classic BPF program sizes over the standard filter set, side by side:
//! libpcap 1.10.3 `pcap_compile` with its optimizer on (`-O` column) and off,
//! sift's default pipeline (IR optimizer + codegen + cBPF optimizer, what
//! `sift -d EXPR` prints and what the kernel gets) and sift without the IR
//! optimizer (`sift -O -d`), with the totals. With `--times`, also the median
//! compile time of each stage (sift: parse + lower, IR optimizer, codegen with
//! its cBPF optimizer; libpcap: `pcap_compile` with the optimizer on).
//!
//! `cargo run --release -p sift-bench --example insn_counts [-- --times [--reps N]]`
//! (`-- --expr NAME` prints the standard filter NAME's expression, e.g. for
//! `sift explain "$(… --expr ftp200)"`).
//!
//! Instruction counts are exact; times depend on the machine's load (compare
//! the columns of one run only).

use sift::CompileOptions;
use sift_bench::libpcap::Libpcap;
use std::time::Instant;

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(name) = args.iter().position(|a| a == "--expr").and_then(|i| args.get(i + 1)) {
        return match sift_bench::standard_filters().into_iter().find(|f| f.name == *name) {
            Some(f) => {
                println!("{}", f.expr);
                std::process::ExitCode::SUCCESS
            }
            None => {
                eprintln!("no standard filter named {name}");
                std::process::ExitCode::FAILURE
            }
        };
    }
    let times = args.iter().any(|a| a == "--times");
    let reps: usize = args
        .iter()
        .position(|a| a == "--reps")
        .and_then(|i| args.get(i + 1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(50)
        .max(1);
    let lib = Libpcap::get();
    if lib.is_none() {
        eprintln!("libpcap is not installed: its columns are empty");
    }
    let opt = CompileOptions::default();
    let unopt = CompileOptions { optimize: false, ..CompileOptions::default() };
    print!(
        "{:<18} {:>10} {:>12} {:>12} {:>9}",
        "filter", "libpcap-O", "libpcap-unopt", "sift-default", "sift-O"
    );
    if times {
        print!(
            " {:>10} {:>10} {:>10} {:>12}",
            "lower-us", "iropt-us", "codegen-us", "pcap_comp-us"
        );
    }
    println!();
    let mut totals = [0usize; 4];
    let mut failed = false;
    for f in sift_bench::standard_filters() {
        let lp = |optimize: bool| {
            lib.and_then(|l| l.compile(&f.expr, 1, sift::DEFAULT_SNAPLEN, optimize).ok())
                .map(|(p, _)| p.len())
        };
        let sift_len = |o: &CompileOptions| sift::compile(&f.expr, o).map(|c| c.program.len());
        let (def, raw) = match (sift_len(&opt), sift_len(&unopt)) {
            (Ok(a), Ok(b)) => (a, b),
            (Err(e), _) | (_, Err(e)) => {
                eprintln!("{}: {e}", f.name);
                failed = true;
                continue;
            }
        };
        let (lo, lu) = (lp(true), lp(false));
        let show = |n: Option<usize>| n.map_or("-".to_string(), |n| n.to_string());
        print!("{:<18} {:>10} {:>12} {:>12} {:>9}", f.name, show(lo), show(lu), def, raw);
        for (t, n) in totals.iter_mut().zip([lo.unwrap_or(0), lu.unwrap_or(0), def, raw]) {
            *t += n;
        }
        if times {
            let med = |mut v: Vec<u64>| {
                v.sort_unstable();
                v[v.len() / 2] as f64 / 1000.0
            };
            let (mut lower, mut iropt, mut cg, mut pc) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
            for _ in 0..reps {
                let t0 = Instant::now();
                let Ok((_, pred)) = sift::lower(&f.expr, &opt) else { break };
                let t1 = Instant::now();
                let o = sift_ir::optimize(&pred);
                let t2 = Instant::now();
                let cgo = sift_bpf::codegen::CodegenOptions::default();
                let _ = std::hint::black_box(sift_bpf::codegen::compile(&o, &cgo));
                let t3 = Instant::now();
                lower.push((t1 - t0).as_nanos() as u64);
                iropt.push((t2 - t1).as_nanos() as u64);
                cg.push((t3 - t2).as_nanos() as u64);
                if let Some(Ok((_, ns))) = lib.map(|l| l.compile(&f.expr, 1, sift::DEFAULT_SNAPLEN, true)) {
                    pc.push(ns);
                }
            }
            let pcs = if pc.is_empty() { "-".to_string() } else { format!("{:.1}", med(pc)) };
            print!(" {:>10.1} {:>10.1} {:>10.1} {:>12}", med(lower), med(iropt), med(cg), pcs);
        }
        println!();
    }
    println!(
        "{:<18} {:>10} {:>12} {:>12} {:>9}",
        "total", totals[0], totals[1], totals[2], totals[3]
    );
    if failed {
        std::process::ExitCode::FAILURE
    } else {
        std::process::ExitCode::SUCCESS
    }
}
