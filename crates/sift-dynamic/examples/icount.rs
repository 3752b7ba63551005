//! Runs one standard filter with the dynamic engine's batch entry point
//! over a generated workload, `PASSES` times, for instruction counts under
//! `valgrind --tool=cachegrind` (load-independent): the difference between
//! two runs with different `PASSES`, divided by the packets filtered, is
//! the engine's instructions per packet.
//! `cargo build --release -p sift-dynamic --examples;
//!  valgrind --tool=cachegrind --cache-sim=no target/release/examples/icount swift6 web 20`
//! (arguments: filter name, workload, passes, packet count (default 20000)).

use std::hint::black_box;

use sift_bench::filters::select_filters;
use sift_bench::gen::{generate, Kind, Packet};
use sift_dynamic::{DynamicFilter, LinkType};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize, d: &str| args.get(i).cloned().unwrap_or_else(|| d.to_string());
    let spec = select_filters(&arg(0, "swift6")).expect("filter").remove(0);
    let kind: Kind = arg(1, "web").parse().expect("workload kind");
    let passes: usize = arg(2, "10").parse().expect("passes");
    let count: usize = arg(3, "20000").parse().expect("packet count");
    let pkts: Vec<Packet> = generate(kind, count, 1);
    let f = DynamicFilter::from_expr(&spec.expr, LinkType::EN10MB).expect("dynamic");
    let mut n = 0;
    for _ in 0..passes {
        n += f.count_matches(black_box(&pkts), |p| (&p.data, p.wire_len));
    }
    println!("{}: {n} matches over {passes} passes of {count} packets", spec.name);
}
