//! Where compile time goes, stage by stage, for the standard filters (or
//! the named ones), along the default engine's pipeline: parse, lower, IR
//! optimizer (on the owned lowered tree, as `with_engine` runs it), JIT of
//! the optimized predicate (`JitFilter::from_shared_pred`: machine code
//! straight from the predicate; since session 17 the per-packet function
//! is installed by its first call, not here), the JIT's
//! count function (`count`: compiled on a filter's first `count_matches`
//! of at least `sift_jit::BATCH` packets), erasing the code (`drop`), next
//! to the whole `sift::Filter::with_engine` with the default engine
//! (`total`), the same followed by a
//! first `count_matches` over `BATCH` empty packets, which compiles the
//! count function (`+count`: the compile time of a filter used through
//! the batch entry point), and libpcap's `pcap_compile` with its
//! optimizer. `total` and `+count` leave out dropping the filter (the
//! `drop` column), as libpcap's figure leaves out `pcap_freecode`.
//! `single` is the whole compile timed exactly as libpcap's figure is: the
//! median of N single calls, wall clock around the call alone. `cbpf`,
//! for reference, is classic BPF code generation (+ cBPF optimizer +
//! validation) of the optimized predicate: no longer part of `total` (the
//! facade generates classic BPF only for the interpreter, the kernel and
//! `Filter::program`).
//!
//! Each stage runs in batches of back-to-back calls on its prepared input
//! (result dropped inside the batch), timed with the thread CPU clock
//! around the batch, so the clock's own cost (a system call, ~0.5 µs) is
//! spread over the batch. A batch lasts ~0.2 ms or at least one call; a
//! figure is the median over N batches of the per-call time in ns. The
//! stages of one filter are measured interleaved, round after round.
//! libpcap's figure is the median of N single calls (wall clock around
//! `pcap_compile` alone).
//!
//! `cargo run --release -p sift-bench --example compile_stages -- [N] [FILTER-NAME...]`
//!
//! `compile_stages --repeat N FILTER-NAME` only compiles the filter N times
//! with `sift::Filter::new` (the default engine; for profilers: `valgrind
//! --tool=callgrind`, `perf record`).

use std::sync::Arc;

use sift_bench::cputime::thread_cpu_ns;
use sift_bench::libpcap::Libpcap;
use sift_bench::standard_filters;

fn median(mut v: Vec<u64>) -> u64 {
    v.sort_unstable();
    v[v.len() / 2]
}

/// CPU ns per call of `f` over a batch of `batch` calls.
fn per_call(batch: u64, mut f: impl FnMut()) -> u64 {
    let t0 = thread_cpu_ns().unwrap_or(0);
    for _ in 0..batch {
        f();
    }
    thread_cpu_ns().unwrap_or(0).saturating_sub(t0) / batch
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().is_some_and(|a| a == "--repeat") {
        let n: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(1000);
        let opts = sift::CompileOptions { savefile: true, ..Default::default() };
        for f in standard_filters().iter().filter(|f| args.get(2).is_some_and(|n| *n == f.name)) {
            for _ in 0..n {
                drop(std::hint::black_box(sift::Filter::new(&f.expr, &opts)));
            }
        }
        return;
    }
    let n: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(31).max(1);
    let names: Vec<&String> = args.iter().skip(1).collect();
    let opts = sift::CompileOptions { savefile: true, ..Default::default() };
    let lopts = sift_ir::LowerOptions { savefile: true, ..Default::default() };
    let copts = sift_bpf::codegen::CodegenOptions { snaplen: opts.snaplen };
    println!(
        "{:<17} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>10}",
        "filter", "parse", "lower", "optimize", "jit", "count", "drop", "total", "+count", "single", "cbpf", "libpcap"
    );
    for f in standard_filters() {
        if !names.is_empty() && !names.iter().any(|n| **n == f.name) {
            continue;
        }
        let ast = sift_syntax::parse(&f.expr).expect("parses");
        let pred = sift_ir::lower(&ast, &lopts).expect("lowers");
        let opt = Arc::new(sift_ir::optimize(&pred));
        // Batch size: ~0.2 ms of the whole compile.
        let whole = per_call(1, || drop(sift::Filter::new(&f.expr, &opts)));
        let batch = (200_000 / whole.max(1)).clamp(1, 10_000);
        let empty: [(&[u8], u32); sift_jit::BATCH] = [(&[], 0); sift_jit::BATCH];
        let mut t: Vec<Vec<u64>> = (0..9).map(|_| Vec::with_capacity(n)).collect();
        for _ in 0..n {
            t[0].push(per_call(batch, || drop(std::hint::black_box(sift_syntax::parse(&f.expr)))));
            t[1].push(per_call(batch, || drop(std::hint::black_box(sift_ir::lower(&ast, &lopts)))));
            // What `with_engine` runs: the owned tree optimized in place
            // (its copies are made before the clock starts).
            let mut lowered: Vec<sift_ir::Pred> = (0..batch).map(|_| pred.clone()).collect();
            t[2].push(per_call(batch, || {
                let p = lowered.pop().unwrap_or(sift_ir::Pred::True);
                drop(std::hint::black_box(sift_ir::opt::optimize_owned(p)))
            }));
            let mut jits = Vec::with_capacity(batch as usize);
            t[3].push(per_call(batch, || {
                jits.push(sift_jit::JitFilter::from_shared_pred(Arc::clone(&opt), opts.snaplen).expect("jit"))
            }));
            let mut next = jits.iter();
            // (`count_code_bytes` compiles the count function, then copies
            // its bytes: a few tens of ns more than the compile.)
            t[4].push(per_call(batch, || drop(std::hint::black_box(next.next().map(|j| j.count_code_bytes())))));
            t[5].push(per_call(batch, || drop(jits.pop())));
            // The whole compile, and the compile plus a first count, are
            // timed without the drop (erasing the code: the `drop` column),
            // as libpcap's figure is `pcap_compile` without `pcap_freecode`.
            let mut filters = Vec::with_capacity(batch as usize);
            t[6].push(per_call(batch, || filters.push(sift::Filter::new(&f.expr, &opts).expect("compiles"))));
            drop(std::mem::take(&mut filters));
            t[7].push(per_call(batch, || {
                let filter = sift::Filter::new(&f.expr, &opts).expect("compiles");
                std::hint::black_box(filter.count_matches(&empty, |p| *p));
                filters.push(filter);
            }));
            drop(filters);
            t[8].push(per_call(batch, || drop(std::hint::black_box(sift_bpf::codegen::compile(&opt, &copts)))));
        }
        // sift's whole compile timed as libpcap's is: single calls, wall
        // clock around the call alone (the drop outside), back to back.
        let single = median(
            (0..n)
                .map(|_| {
                    let t0 = std::time::Instant::now();
                    let filter = sift::Filter::new(&f.expr, &opts).expect("compiles");
                    let ns = u64::try_from(t0.elapsed().as_nanos()).unwrap_or(u64::MAX);
                    drop(filter);
                    ns
                })
                .collect(),
        );
        let lib = Libpcap::get().map(|l| {
            median((0..n).map(|_| l.compile(&f.expr, 1, 262_144, true).expect("libpcap compiles").1).collect())
        });
        let m: Vec<u64> = t.into_iter().map(median).collect();
        println!(
            "{:<17} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>10}",
            f.name,
            m[0],
            m[1],
            m[2],
            m[3],
            m[4],
            m[5],
            m[6],
            m[7],
            single,
            m[8],
            lib.map_or("-".into(), |l| l.to_string())
        );
    }
}
