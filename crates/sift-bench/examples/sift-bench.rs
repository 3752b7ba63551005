//! Stand-alone front end until `sift gen` / `sift bench` are wired into the
//! CLI: `cargo run --release -p sift-bench --example sift-bench -- bench --workload web`.

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let r = match args.first().map(String::as_str) {
        Some("gen") => sift_bench::gen_main(&args[1..]),
        Some("bench") => sift_bench::bench_main(&args[1..]),
        _ => Err(format!(
            "usage: sift-bench gen|bench ...\n\n{}\n\n{}",
            sift_bench::GEN_USAGE,
            sift_bench::BENCH_USAGE
        )),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(m) => {
            eprintln!("sift: {m}");
            ExitCode::FAILURE
        }
    }
}
