//! Classic BPF program sizes over the standard filter set (issue 4): the
//! default pipeline's total is at most libpcap `-O`'s, and no standard
//! filter grows past the size it had when this test was last updated.
//! Instruction counts are exact: no timing here. The side-by-side table is
//! `cargo run --release -p sift-bench --example insn_counts`.

use sift::CompileOptions;
use sift_bench::libpcap::Libpcap;

/// The default pipeline's program size per standard filter when last
/// measured (`insn_counts`): a filter may shrink, not grow. Lower an entry
/// when a change shrinks its filter.
const CEILINGS: &[(&str, usize)] = &[
    ("accept-all", 1),
    ("ip", 4),
    ("tcp", 12),
    ("icmp", 6),
    ("tcp-port-5555", 20),
    ("portrange-0-6000", 24),
    ("portrange-0-5", 24),
    ("tcp-src-port-80", 16),
    ("src-net-150", 12),
    ("host-233", 14),
    ("host-234", 14),
    ("net-150", 18),
    ("net-151", 18),
    ("swift3", 10),
    ("swift4", 10),
    ("swift5", 24),
    ("swift6", 97),
    ("bpfperf1", 32),
    ("bpfperf2", 39),
    ("tcp-byte-20", 12),
    ("ftp200", 538),
];

fn sift_len(expr: &str) -> usize {
    sift::compile(expr, &CompileOptions::default())
        .unwrap_or_else(|e| panic!("{expr}: {e}"))
        .program
        .len()
}

#[test]
fn no_standard_filter_grows() {
    let filters = sift_bench::standard_filters();
    assert_eq!(filters.len(), CEILINGS.len(), "a standard filter without a ceiling");
    let mut grown = Vec::new();
    for f in &filters {
        let ceiling = CEILINGS.iter().find(|(n, _)| *n == f.name).map(|&(_, c)| c);
        let Some(ceiling) = ceiling else { panic!("{}: no ceiling", f.name) };
        let len = sift_len(&f.expr);
        if len > ceiling {
            grown.push(format!("{}: {len} instructions, was {ceiling}", f.name));
        }
    }
    assert!(grown.is_empty(), "{}", grown.join("\n"));
}

#[test]
fn default_total_is_at_most_libpcaps_optimized_total() {
    let Some(lib) = Libpcap::get() else {
        eprintln!("libpcap is not installed: skipped");
        return;
    };
    let (mut ours, mut theirs) = (0, 0);
    let mut rows = Vec::new();
    for f in sift_bench::standard_filters() {
        let (p, _) = lib
            .compile(&f.expr, 1, sift::DEFAULT_SNAPLEN, true)
            .unwrap_or_else(|e| panic!("{}: libpcap: {e}", f.name));
        let len = sift_len(&f.expr);
        rows.push(format!("{}: sift {len}, libpcap -O {}", f.name, p.len()));
        ours += len;
        theirs += p.len();
    }
    assert!(ours <= theirs, "sift {ours} > libpcap -O {theirs}:\n{}", rows.join("\n"));
}
