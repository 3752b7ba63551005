//! No panics in the dynamic engine's translation and update API, and the
//! filter always matches what its printed expression matches: the stable
//! driver of the `dynamic` fuzz target (the check lives in
//! `fuzz/checks/dynamic.rs`).
//!
//! Inputs, for every supported link type: grammar-shaped random
//! expressions and mutated corpus expressions, then random sequences of
//! updates (including out-of-range pass and instruction indexes); packets
//! from the structured generator at several truncations.

#[path = "../../../fuzz/checks/input.rs"]
mod input;
#[path = "../../../fuzz/checks/dynamic.rs"]
mod dynamic;

use sift_ir::LinkType;
use sift_testkit::{exprs, Rng};

const EXPRESSIONS: &str = include_str!("../../sift-cli/tests/corpus/expressions.txt");

fn run(rng: &mut Rng, expr: &str, lt: LinkType) -> bool {
    let pkts = input::random_packets(rng, lt, 3);
    let Some(mut f) = dynamic::check_translate(expr, lt, &pkts) else {
        return false;
    };
    let n = 8 * rng.index(12);
    let ops = rng.bytes(n);
    let mut ops = input::Input::new(&ops);
    while !ops.is_empty() {
        dynamic::apply_op(&mut f, &mut ops);
        dynamic::check_against_expr(&f, &pkts);
    }
    true
}

#[test]
fn random_expressions_and_updates() {
    let mut rng = Rng::new(0xd7a0_0001);
    let lts = sift_ir::lower::supported_linktypes();
    let (mut total, mut taken) = (0, 0);
    for &lt in &lts {
        for _ in 0..100 {
            let expr = exprs::random_expr(&mut rng, lt);
            taken += usize::from(run(&mut rng, &expr, lt));
            total += 1;
        }
    }
    eprintln!("{taken} of {total} random expressions run on the dynamic engine");
    assert!(taken > 0);
}

#[test]
fn corpus_and_mutants_with_updates() {
    let mut rng = Rng::new(0xd7a0_0002);
    let lts = sift_ir::lower::supported_linktypes();
    let corpus: Vec<&str> =
        EXPRESSIONS.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).collect();
    let (mut total, mut taken) = (0, 0);
    for expr in &corpus {
        taken += usize::from(run(&mut rng, expr, LinkType::EN10MB));
        total += 1;
    }
    for _ in 0..1000 {
        let lt = if rng.chance(0.5) { LinkType::EN10MB } else { *rng.pick(&lts) };
        let base = *rng.pick(&corpus);
        let expr = exprs::mutate(&mut rng, base);
        taken += usize::from(run(&mut rng, &expr, lt));
        total += 1;
    }
    eprintln!("{taken} of {total} corpus expressions and mutants run on the dynamic engine");
}

#[test]
fn fuzz_entry_on_random_bytes() {
    let mut rng = Rng::new(0xd7a0_0003);
    for _ in 0..3000 {
        let len = rng.index(160);
        dynamic::check(&rng.bytes(len));
    }
    // Expressions the engine takes, followed by random update bytes.
    let lts = sift_ir::lower::supported_linktypes();
    let ethernet = lts.iter().position(|&lt| lt == LinkType::EN10MB).expect("Ethernet is supported") as u8;
    for _ in 0..500 {
        let mut data = vec![ethernet];
        data.extend_from_slice(exprs::random_expr(&mut rng, LinkType::EN10MB).as_bytes());
        data.push(0);
        let n = rng.index(100);
        data.extend(rng.bytes(n));
        dynamic::check(&data);
    }
}

/// `DynamicFilter::to_expr` printed absolute packet offsets as `link[k]`,
/// but on DLT_NETANALYZER `link[k]` is byte 4 + k (the pseudo-header comes
/// first; 12 + k on DLT_NETANALYZER_TRANSPARENT), so the printed form of
/// `arp` (`link[16 : 2] = 0x806`) tested the wrong bytes (found by
/// `corpus_and_mutants_with_updates`). It now prints `link[k - h]` there,
/// and `radio[k]` after a radio header.
#[test]
fn printed_form_on_netanalyzer() {
    for (lt, hdr) in [(240u32, 4usize), (241, 12)] {
        let lt = LinkType::from_linktype(lt);
        let f = sift_dynamic::DynamicFilter::from_expr("arp", lt).expect("arp runs on the dynamic engine");
        let mut packet = vec![0u8; 64];
        packet[hdr + 12..hdr + 14].copy_from_slice(&[0x08, 0x06]);
        assert!(f.matches(&packet, 64), "arp on {lt:?}");
        let printed = f.to_expr();
        let again = sift_dynamic::DynamicFilter::from_expr(&printed, lt).expect("the printed form translates");
        assert!(again.matches(&packet, 64), "printed form {printed:?} of arp on {lt:?} does not match an ARP packet");
        assert!(printed.contains("link[12 : 2] = 0x806"), "{printed}");
    }
}

/// After a radio header of variable length (radiotap, AVS, Prism) the
/// printed form addresses absolute offsets with `radio[k]`.
#[test]
fn printed_form_after_a_radio_header() {
    let lt = LinkType::from_linktype(127);
    let f = sift_dynamic::DynamicFilter::from_expr("radio[2:2] = 0x1234 and len > 40", lt).expect("translates");
    let printed = f.to_expr();
    assert!(printed.contains("radio[2 : 2]"), "{printed}");
    let again = sift_dynamic::DynamicFilter::from_expr(&printed, lt).expect("the printed form translates");
    let mut packet = vec![0u8; 64];
    packet[2..4].copy_from_slice(&[0x12, 0x34]);
    assert!(f.matches(&packet, 64) && again.matches(&packet, 64));
    packet[3] = 0;
    assert!(!f.matches(&packet, 64) && !again.matches(&packet, 64));
}
