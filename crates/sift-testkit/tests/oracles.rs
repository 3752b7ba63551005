//! Checks of the test infrastructure itself: the expression generator is
//! mostly accepted by libpcap, random packets match often enough, and the
//! two oracles (libpcap's interpreter and the kernel) agree on libpcap's
//! own programs except where their semantics are known to differ.

use sift_ir::LinkType;
use sift_testkit::diff::{self, LINK_TYPES};
use sift_testkit::libpcap;
use std::collections::BTreeMap;

#[test]
fn generator_accept_rate() {
    let n = 16_000;
    let mut per_lt: BTreeMap<u32, (usize, usize)> = BTreeMap::new();
    for i in 0..n {
        let (lt, mask, expr) = diff::case(77, i, None);
        let ok = libpcap::compile(&expr, lt.0, diff::SNAPLEN, mask, false).is_ok();
        let e = per_lt.entry(lt.0).or_default();
        e.0 += usize::from(ok);
        e.1 += 1;
    }
    let accepted: usize = per_lt.values().map(|v| v.0).sum();
    let rate = accepted as f64 / n as f64;
    println!("generator: {accepted} of {n} expressions accepted by libpcap 1.10.3 ({:.1}%)", 100.0 * rate);
    for (lt, (a, t)) in &per_lt {
        println!("  {}: {:.1}%", LinkType(*lt), 100.0 * *a as f64 / *t as f64);
        assert!(*a as f64 / *t as f64 > 0.8, "link type {} accept rate too low", LinkType(*lt));
    }
    assert!(rate > 0.85, "accept rate {rate}");
    assert_eq!(per_lt.len(), LINK_TYPES.len());
}

#[test]
fn kernel_agrees_with_libpcap_on_libpcap_programs() {
    let r = diff::oracle_check(4242, 2_000, 100);
    print!("{r}");
    // About 88% of the expressions compile (fewer on the 802.11 link types).
    assert!(r.programs > 1_700);
    // The kernel refuses nothing but very long programs (beyond the socket
    // option memory limit, net.core.optmem_max).
    assert!(r.refused_min_len.is_none_or(|n| n > 1000), "{r}");
    assert!(r.compared > 150_000);
    // Random filters match random packets often enough to test both paths.
    assert!(r.accepted * 10 >= r.compared, "only {} of {} verdicts true", r.accepted, r.compared);
    assert_eq!(r.unexplained, 0, "oracles disagree without a known reason");
}
