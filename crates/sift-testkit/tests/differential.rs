//! The differential test: random expressions × random packets, libpcap
//! 1.10.3 unoptimized vs sift (reference evaluator, cBPF interpreter on the
//! generated code, and the Linux kernel running the generated code).
//!
//! Fails on any disagreement and prints the report (with minimal
//! reproductions) and the summary line.
//!
//! The campaign size is the CI size unless the environment says otherwise:
//! `SIFT_DIFF_EXPRESSIONS=N` (expressions), `SIFT_DIFF_PACKETS=N` (packets
//! per expression), `SIFT_DIFF_SEED=N` (decimal or 0x-hex seed), e.g.
//! `SIFT_DIFF_EXPRESSIONS=100000 cargo test --release --locked -p
//! sift-testkit --test differential -- --nocapture`.

use sift_testkit::{diff, env_number};

const SEED: u64 = 0x5157_2024;
const EXPRESSIONS: usize = 20_000;
const PACKETS: usize = 200;

#[test]
fn differential() {
    let seed = env_number("SIFT_DIFF_SEED", SEED);
    let expressions = env_number("SIFT_DIFF_EXPRESSIONS", EXPRESSIONS as u64) as usize;
    let packets = env_number("SIFT_DIFF_PACKETS", PACKETS as u64) as usize;
    let started = std::time::Instant::now();
    let report = diff::run_campaign(seed, expressions, packets, true);
    // The report ends with the summary line.
    print!("{report}");
    println!("campaign took {:.1} s", started.elapsed().as_secs_f64());
    assert_eq!(report.generated, expressions);
    // About 90% of the expressions compile, each run on `packets` packets.
    assert!(
        report.packets >= expressions * packets * 17 / 20,
        "only {} packet verdicts",
        report.packets
    );
    // About 6% of the expressions on 8 of the 13 link types are tunnels.
    let tunnels: usize = report.tunnel_exprs.values().sum();
    assert!(tunnels >= expressions / 40, "only {tunnels} tunnel expressions compared");
    assert_eq!(report.total_disagreements(), 0, "{}", report.summary());
}

/// Every link type sift supports, not only the main campaign's rotation:
/// a smaller campaign per link type (it found DLT_JUNIPER_MFR filed under
/// the wrong DLT number, and libpcap#1192's register reuse on PFLOG).
#[test]
fn every_supported_link_type() {
    let expressions = env_number("SIFT_DIFF_PER_LINKTYPE", 400) as usize;
    let mut failed = Vec::new();
    let mut total = 0;
    for lt in sift_ir::lower::supported_linktypes() {
        let mut c = diff::Campaign::new(SEED ^ u64::from(lt.0), expressions, 40, true);
        c.linktype = Some(lt);
        let report = diff::run(&c, &diff::SiftEngines);
        total += report.packets;
        if report.total_disagreements() != 0 {
            failed.push(format!("{lt}:\n{report}"));
        }
    }
    println!("{total} packet verdicts over every supported link type");
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}
