//! The FTP experiment (issue 5): replay a passive-mode FTP trace in
//! timestamp order, follow the data ports the `227` replies announce, and
//! count the packets each data connection loses before the filter catches
//! up, for sift's dynamic updates and for full recompiles (sift JIT,
//! libpcap). See `sift_bench::ftpcap` and docs/performance.md.
//!
//! `cargo run --release -p sift-bench --example ftpcap -- [TRACE] [--modes threaded,inline] ...`

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match sift_bench::ftpcap::main_with_args(&args) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            std::process::ExitCode::FAILURE
        }
    }
}
