//! Property test: every real capture, mutated at least 20 000 times in all
//! (byte flips, truncations, length fields overwritten with huge or small
//! values, insertions, deletions), is read to the end without panicking;
//! reading terminates within a bound given by the input size; the reader's
//! heap use stays below the input size; every packet lies inside the input.

mod common;

use std::panic::{catch_unwind, AssertUnwindSafe};

use common::Rng;
use sift_pcap::{Capture, PcapWriter, TsPrecision};

/// Reads a capture completely, exercising every accessor. Returns the
/// number of items the iterator produced.
fn read_all(cap: &Capture, input_len: usize) -> usize {
    let _ = (cap.format(), cap.linktype(), cap.snaplen(), cap.swapped(), cap.version(), cap.header_linktype());
    let mut w = PcapWriter::for_capture(Vec::new(), cap, TsPrecision::Micro).unwrap();
    let mut items = 0;
    let mut errors = 0;
    let mut packets = cap.packets();
    // Every step of the reader consumes at least 12 input bytes, so the
    // iterator must end within this many items.
    let bound = input_len / 12 + 2;
    for item in packets.by_ref() {
        items += 1;
        assert!(items <= bound, "more items than the input can hold");
        match item {
            Ok(p) => {
                assert!(errors == 0, "a packet after the error");
                assert!(p.data.len() <= input_len);
                let _ = (p.ts.micros(), p.ts.nanos(), p.ts.as_unix_nanos(), p.ts.resolution());
                let _ = p.ts.libpcap_timeval(TsPrecision::Nano);
                w.write_packet(&p).unwrap();
            }
            Err(e) => {
                errors += 1;
                assert!(e.offset() <= input_len as u64, "error offset past the input: {e}");
                let _ = e.to_string();
            }
        }
    }
    assert!(packets.next().is_none(), "iterator not fused");
    // What we write reads back: for pcap input, the same packets (pcapng
    // interfaces can differ in ways one pcap header cannot express).
    let out = w.into_inner().unwrap();
    let back = Capture::from_bytes(out).expect("our own output opens");
    if matches!(cap.format(), sift_pcap::Format::Pcap { .. }) {
        let mut n = 0;
        for (a, b) in cap.packets().zip(back.packets()) {
            let Ok(a) = a else { break };
            let b = b.expect("re-read without damage");
            assert_eq!((a.data, a.ts.micros()), (b.data, b.ts.micros()));
            n += 1;
        }
        assert_eq!(n, items - errors);
        assert_eq!(back.packets().count(), n);
    }
    assert!(
        packets.allocated_bytes() <= input_len + 64,
        "reader holds {} heap bytes for a {input_len}-byte input",
        packets.allocated_bytes()
    );
    items
}

#[test]
fn mutated_corpus_never_panics_and_stays_bounded() {
    let files = common::corpus_captures();
    if files.is_empty() {
        eprintln!("NOTICE: no corpus at {}; skipping", common::corpus_dir().display());
        return;
    }
    let per_file = 20_000 / files.len() + 1;
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let mapped_path = dir.join("sift_pcap_mutation.cap");
    let mut rng = Rng::new(0x5eed_0003);
    let (mut total, mut opened, mut items) = (0usize, 0usize, 0usize);
    for f in &files {
        let base = std::fs::read(f).unwrap();
        let fields = common::length_fields(&base);
        for i in 0..per_file {
            let m = common::mutate(&mut rng, &base, &fields);
            let len = m.len();
            total += 1;
            // Every 40th mutant also goes through the memory-mapped path.
            let mapped = i % 40 == 0;
            if mapped {
                std::fs::write(&mapped_path, &m).unwrap();
            }
            let outcome = catch_unwind(AssertUnwindSafe(|| {
                let mut n = None;
                let mut text = String::new();
                if let Ok(cap) = Capture::from_bytes(m.clone()) {
                    n = Some(read_all(&cap, len));
                    if mapped {
                        common::describe(&cap, TsPrecision::Nano, &mut text);
                    }
                }
                if mapped {
                    // The mapped path (lazily patched copy) reads the same.
                    let mut via_map = String::new();
                    if let Ok(cap) = Capture::open(&mapped_path) {
                        read_all(&cap, len);
                        common::describe(&cap, TsPrecision::Nano, &mut via_map);
                    }
                    assert_eq!(via_map, text, "mapped and in-memory reads differ");
                }
                n
            }));
            match outcome {
                Ok(Some(n)) => {
                    opened += 1;
                    items += n;
                }
                Ok(None) => {}
                Err(_) => {
                    let keep = dir.join("sift_pcap_panic.cap");
                    std::fs::write(&keep, &m).unwrap();
                    panic!("reader panicked on a mutant of {} (saved as {})", f.display(), keep.display());
                }
            }
        }
    }
    let _ = std::fs::remove_file(&mapped_path);
    eprintln!("{total} mutants of {} captures: {opened} opened, {items} items read", files.len());
    assert!(total >= 20_000);
}

#[test]
fn random_bytes_never_panic() {
    let mut rng = Rng::new(0x5eed_0004);
    for i in 0..5000 {
        let n = rng.below(200) as usize;
        let mut b = rng.bytes(n);
        // Start with a valid magic most of the time.
        let magics: [&[u8]; 5] = [
            &[0xd4, 0xc3, 0xb2, 0xa1],
            &[0xa1, 0xb2, 0xc3, 0xd4],
            &[0x4d, 0x3c, 0xb2, 0xa1],
            &[0x34, 0xcd, 0xb2, 0xa1],
            &[0x0a, 0x0d, 0x0d, 0x0a],
        ];
        if i % 5 != 0 && b.len() >= 4 {
            b[..4].copy_from_slice(magics[rng.below(5) as usize]);
            if b[0] == 0x0a && b.len() >= 12 {
                b[8..12].copy_from_slice(&[0x4d, 0x3c, 0x2b, 0x1a]);
            }
        }
        let len = b.len();
        if let Ok(cap) = Capture::from_bytes(b) {
            read_all(&cap, len);
        }
    }
}
