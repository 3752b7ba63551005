//! Where compile time goes, stage by stage, for the standard filters (or
//! `--expr`-style arguments): parse, lower, IR optimizer, cBPF code
//! generation (+ cBPF optimizer + validation), JIT of the cBPF program
//! (code generation + installing the pages), next to libpcap's
//! `pcap_compile` with its optimizer. Median of N runs (thread CPU time).
//!
//! `cargo run --release -p sift-bench --example compile_stages -- [N] [FILTER-NAME...]`

use sift_bench::cputime::thread_cpu_ns;
use sift_bench::libpcap::Libpcap;
use sift_bench::standard_filters;

fn median(mut v: Vec<u64>) -> u64 {
    v.sort_unstable();
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let n: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(200);
    let names: Vec<&String> = args.iter().skip(1).collect();
    let now = || thread_cpu_ns().unwrap_or(0);
    let opts = sift::CompileOptions { savefile: true, ..Default::default() };
    let lopts = sift_ir::LowerOptions { savefile: true, ..Default::default() };
    println!(
        "{:<17} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>10}",
        "filter", "parse", "lower", "optimize", "codegen", "jit", "install", "total", "libpcap"
    );
    for f in standard_filters() {
        if !names.is_empty() && !names.iter().any(|n| **n == f.name) {
            continue;
        }
        let mut t = vec![Vec::new(); 7];
        for _ in 0..n {
            let t0 = now();
            let ast = sift_syntax::parse(&f.expr).expect("parses");
            let t1 = now();
            let pred = sift_ir::lower(&ast, &lopts).expect("lowers");
            let t2 = now();
            let opt = sift_ir::optimize(&pred);
            let t3 = now();
            let prog = sift_bpf::codegen::compile(&opt, &sift_bpf::codegen::CodegenOptions::default()).expect("codegen");
            let t4 = now();
            let jit = sift_jit::JitFilter::from_program(&prog).expect("jit");
            let t5 = now();
            drop(jit);
            let t6 = now();
            let full = sift::Filter::with_engine(&f.expr, &opts, sift::Engine::Jit).expect("compiles");
            let t7 = now();
            drop(full);
            for (i, d) in [t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4, t6 - t5, t7 - t6].into_iter().enumerate() {
                t[i].push(d);
            }
        }
        let lib = Libpcap::get().map(|l| {
            median((0..n).map(|_| l.compile(&f.expr, 1, 262_144, true).expect("libpcap compiles").1).collect())
        });
        let m: Vec<u64> = t.into_iter().map(median).collect();
        println!(
            "{:<17} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>10}",
            f.name,
            m[0],
            m[1],
            m[2],
            m[3],
            m[4],
            m[5],
            m[6],
            lib.map_or("-".into(), |l| l.to_string())
        );
    }
}
