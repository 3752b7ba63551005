//! The differential test: random expressions × random packets, libpcap
//! 1.10.3 unoptimized vs sift (reference evaluator, cBPF interpreter on the
//! generated code, and the Linux kernel running the generated code).
//!
//! Fails on any disagreement and prints the report (with minimal
//! reproductions) and the summary line.

use sift_testkit::diff;

const SEED: u64 = 0x5157_2024;
const EXPRESSIONS: usize = 20_000;
const PACKETS: usize = 200;

#[test]
fn differential() {
    let report = diff::run_campaign(SEED, EXPRESSIONS, PACKETS, true);
    // The report ends with the summary line.
    print!("{report}");
    assert_eq!(report.generated, EXPRESSIONS);
    // About 90% of the expressions compile, each run on PACKETS packets.
    assert!(report.packets >= 3_500_000, "only {} packet verdicts", report.packets);
    assert_eq!(report.total_disagreements(), 0, "{}", report.summary());
}
