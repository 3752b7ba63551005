//! Fuzz target: any byte string, read as a capture, must open or fail
//! cleanly, iterate to the end without panicking (every packet inside the
//! input, at most one error, and that one last), and re-read identically
//! after being written back as pcap.
#![no_main]

use sift_pcap::{Capture, Format, PcapWriter, TsPrecision};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Ok(cap) = Capture::from_bytes(data.to_vec()) else {
        return;
    };
    let _ = (cap.linktype(), cap.header_linktype(), cap.snaplen(), cap.swapped(), cap.version());
    let mut writer = PcapWriter::for_capture(Vec::new(), &cap, TsPrecision::Nano).expect("Vec never fails");
    let mut packets = 0usize;
    let mut errors = 0usize;
    let mut iter = cap.packets();
    for item in iter.by_ref() {
        match item {
            Ok(p) => {
                assert_eq!(errors, 0, "packet after the error");
                assert!(p.data.len() <= data.len());
                let _ = (p.ts.micros(), p.ts.nanos(), p.ts.as_unix_nanos());
                writer.write_packet(&p).expect("Vec never fails");
                packets += 1;
            }
            Err(e) => {
                assert!(e.offset() <= data.len() as u64);
                let _ = e.to_string();
                errors += 1;
            }
        }
    }
    assert!(errors <= 1);
    assert!(iter.next().is_none());
    assert!(iter.allocated_bytes() <= data.len() + 64);

    // What we write opens again. For pcap input it reads back as the same
    // packets without damage. (pcapng interfaces may differ in snapshot
    // length and link type, which a single pcap header cannot express, and
    // pcapng has no per-link-type length limit, so no such promise there.)
    let out = writer.into_inner().expect("Vec never fails");
    let back = Capture::from_bytes(out).expect("our own output opens");
    if matches!(cap.format(), Format::Pcap { .. }) {
        let again: Vec<_> = back.packets().collect();
        assert_eq!(again.len(), packets);
        assert!(again.iter().all(|p| p.is_ok()));
        for (a, b) in cap.packets().zip(back.packets()) {
            let (a, b) = (a.expect("ok before"), b.expect("ok after"));
            assert_eq!(a.data, b.data);
            assert_eq!(a.ts.nanos(), b.ts.nanos());
        }
    }
});
