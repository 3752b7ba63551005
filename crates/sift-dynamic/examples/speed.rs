//! Static speed of the dynamic engine beside sift's JIT and libpcap
//! (`pcap_compile` with the optimizer, `pcap_offline_filter`) on the Swift
//! paper's six filters, over `sift gen` workloads (information only; `sift
//! bench --engines libpcap,jit,dynamic` is the reference measurement):
//! `cargo run --release -p sift-dynamic --example speed [-- web mixed ...]`.
//!
//! Engines run interleaved, one whole pass over the packets at a time (the
//! JIT and the dynamic engine through their batch entry points, libpcap one
//! packet at a time), and each reports its fastest pass: on a shared, loaded machine the minimum is
//! the figure least disturbed by other processes.

use std::hint::black_box;
use std::time::Instant;

use sift::{CompileOptions, Engine, Filter};
use sift_bench::filters::select_filters;
use sift_bench::gen::{generate, Kind, Packet, GEN_SNAPLEN};
use sift_bench::libpcap::Libpcap;
use sift_dynamic::{DynamicFilter, LinkType};

fn main() {
    let kinds: Vec<String> = std::env::args().skip(1).collect();
    let kinds = if kinds.is_empty() {
        vec!["web".to_string()]
    } else {
        kinds
    };
    let filters = select_filters(&std::env::var("FILTERS").unwrap_or_else(|_| "swift".into()))
        .expect("filters");
    for kind in &kinds {
        let k: Kind = kind.parse().expect("workload kind");
        let count = std::env::var("COUNT")
            .ok()
            .and_then(|c| c.parse().ok())
            .unwrap_or(k.default_count().min(200_000));
        let pkts: Vec<Packet> = generate(k, count, 1);
        println!("{kind} ({count} packets)            dynamic Mpps   jit Mpps   libpcap Mpps   dyn/jit  dyn/libpcap");
        for spec in &filters {
            let opts = CompileOptions {
                snaplen: GEN_SNAPLEN,
                savefile: true,
                ..Default::default()
            };
            let jit = Filter::with_engine(&spec.expr, &opts, Engine::Jit).expect("jit");
            let dynf = DynamicFilter::from_expr(&spec.expr, LinkType::EN10MB).expect("dynamic");
            let pcap = Libpcap::get()
                .and_then(|l| l.compile(&spec.expr, 1, GEN_SNAPLEN, true).ok())
                .map(|x| x.0);
            // One whole pass: the JIT and the dynamic engine through their
            // batch entry points (as `sift bench` runs them), libpcap per packet.
            let time = |f: &dyn Fn() -> usize| -> (f64, usize) {
                let t = Instant::now();
                let hits = f();
                (t.elapsed().as_secs_f64(), hits)
            };
            let mut best = [f64::MAX; 3];
            let mut hits = [0usize; 3];
            for _ in 0..(4_000_000 / pkts.len()).max(5) {
                let j = time(&|| jit.count_matches(black_box(&pkts[..]), |p| (&p.data, p.wire_len)) as usize);
                let l = pcap.as_ref().map_or((f64::MAX, 0), |p| {
                    time(&|| black_box(&pkts[..]).iter().filter(|x| p.matches(&x.data, x.wire_len)).count())
                });
                let d = time(&|| dynf.count_matches(black_box(&pkts[..]), |p| (&p.data, p.wire_len)) as usize);
                let r = [d, j, l];
                for i in 0..3 {
                    best[i] = best[i].min(r[i].0);
                    hits[i] = r[i].1;
                }
            }
            assert_eq!(hits[0], hits[1], "{}: dynamic and jit disagree", spec.name);
            let mpps = best.map(|s| pkts.len() as f64 / s / 1e6);
            println!(
                "  {:<10} {:>20.1} {:>10.1} {:>14.1} {:>9.2} {:>12.2}",
                spec.name,
                mpps[0],
                mpps[1],
                mpps[2],
                mpps[0] / mpps[1],
                mpps[0] / mpps[2]
            );
        }
    }
}
