//! The pcapng writer round trip on every real capture and on mutants: the
//! packets read from a capture, written by `PcapngWriter` (one interface
//! per link type, nanosecond timestamps) and read back, are the same
//! packets. The stable driver of the `captures` fuzz target (the check
//! lives in `fuzz/checks/captures.rs`); `mutations.rs` covers the reader
//! alone.

mod common;

#[path = "../../../fuzz/checks/captures.rs"]
mod captures;

use common::{corpus_captures, length_fields, mutate, Rng};
use sift_pcap::Capture;

#[test]
fn real_captures_round_trip() {
    let files = corpus_captures();
    if files.is_empty() {
        eprintln!("no capture corpus: skipped");
        return;
    }
    let mut packets = 0;
    for path in &files {
        let Ok(bytes) = std::fs::read(path) else { continue };
        if let Ok(cap) = Capture::from_bytes(bytes) {
            packets += captures::check_capture(&cap);
        }
    }
    eprintln!("{} captures, {packets} packets written as pcapng and read back", files.len());
    assert!(packets > 100);
}

#[test]
fn mutated_captures_round_trip() {
    let files = corpus_captures();
    let mut rng = Rng::new(0xca97_0001);
    let inputs: Vec<Vec<u8>> = files
        .iter()
        .filter_map(|p| std::fs::read(p).ok())
        .filter(|b| b.len() <= 256 * 1024)
        .collect();
    if inputs.is_empty() {
        eprintln!("no capture corpus: skipped");
        return;
    }
    let fields: Vec<Vec<usize>> = inputs.iter().map(|b| length_fields(b)).collect();
    for _ in 0..20_000 {
        let i = rng.below(inputs.len() as u64) as usize;
        let mutant = mutate(&mut rng, &inputs[i], &fields[i]);
        captures::check(&mutant);
    }
}

#[test]
fn random_bytes() {
    let mut rng = Rng::new(0xca97_0002);
    for _ in 0..5000 {
        let bytes = rng.bytes_upto(300);
        captures::check(&bytes);
    }
}
