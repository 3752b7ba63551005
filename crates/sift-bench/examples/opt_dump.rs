//! Prints the IR optimizer's output for every expression at hand, to check
//! that a change to the optimizer leaves its output byte-identical: the
//! standard filters, every expression of the given libpcap test tables
//! (`../shared/data/libpcap-tests/*.tsv`, with the row's link type and
//! netmask) and random expressions of `sift_testkit` (`diff::case` and
//! `exprs::random_expr`). Also checks that `optimize(&p)` and
//! `optimize_owned(p)` agree.
//!
//! `cargo run --release -p sift-bench --example opt_dump -- TSV... > out.txt`
//! (`--random N`: N random expressions of each kind, default 10,000).

use std::fmt::Write as _;

fn main() {
    let mut tables = Vec::new();
    let mut random = 10_000;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        if a == "--random" {
            random = args.next().and_then(|n| n.parse().ok()).expect("--random N");
        } else {
            tables.push(a);
        }
    }
    let en10mb = sift_ir::LinkType::EN10MB;
    let mut exprs: Vec<(sift_ir::LinkType, String, Option<u32>)> = Vec::new();
    for f in sift_bench::standard_filters() {
        exprs.push((en10mb, f.expr.to_string(), None));
    }
    for path in &tables {
        let text = std::fs::read_to_string(path).expect("readable table");
        let mut lines = text.lines();
        let header: Vec<&str> = lines.next().unwrap_or_default().split('\t').collect();
        let col = |n: &str| header.iter().position(|h| *h == n);
        let (Some(e), Some(d)) = (col("expression"), col("dlt").or(col("dlt_or_pcap"))) else { continue };
        for l in lines {
            let cols: Vec<&str> = l.split('\t').collect();
            if cols.len() > e.max(d) {
                let netmask = col("netmask")
                    .and_then(|i| cols.get(i))
                    .and_then(|m| m.parse::<std::net::Ipv4Addr>().ok())
                    .map(u32::from);
                let lt = sift_ir::LinkType::from_name(cols[d]).unwrap_or(en10mb);
                exprs.push((lt, cols[e].to_string(), netmask));
            }
        }
    }
    for i in 0..random {
        let (lt, netmask, e) = sift_testkit::diff::case(1, i, None);
        exprs.push((lt, e, netmask));
    }
    let mut rng = sift_testkit::rng::Rng::new(1);
    let kinds = ["EN10MB", "RAW", "LINUX_SLL"].map(|n| sift_ir::LinkType::from_name(n).unwrap_or(en10mb));
    for i in 0..random {
        let lt = kinds[i % kinds.len()];
        exprs.push((lt, sift_testkit::exprs::random_expr(&mut rng, lt), None));
    }
    let (mut ok, mut bad) = (0, 0);
    let mut out = String::new();
    for (lt, expr, netmask) in &exprs {
        let opts = sift::CompileOptions {
            linktype: *lt,
            netmask: *netmask,
            names: Some(testrun_names()),
            ..Default::default()
        };
        let _ = writeln!(out, "=== {:?} nm={netmask:?} {expr}", lt.name());
        match sift::compile(expr, &opts) {
            Ok(c) => {
                ok += 1;
                let borrowed = sift_ir::opt::optimize(&c.pred);
                assert_eq!(borrowed, c.optimized, "optimize(&p) != optimize_owned(p): {expr}");
                let _ = writeln!(out, "{}", c.optimized);
            }
            Err(e) => {
                bad += 1;
                let _ = writeln!(out, "ERR {e}");
            }
        }
        if out.len() > 1 << 20 {
            print!("{out}");
            out.clear();
        }
    }
    print!("{out}");
    eprintln!("{ok} compiled, {bad} errors");
}

/// The name tables of libpcap's TESTrun (the hosts its test rows name).
fn testrun_names() -> &'static sift_ir::NameTables {
    static TABLES: std::sync::OnceLock<sift_ir::NameTables> = std::sync::OnceLock::new();
    TABLES.get_or_init(|| sift_testkit::testrun::name_tables(false))
}
