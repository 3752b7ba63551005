//! Check: any byte string read as a capture opens or fails cleanly, and the
//! packets read from it, written back as pcapng by `PcapngWriter` (one
//! interface per link type, nanosecond timestamps), read back as the same
//! packets: same bytes, wire lengths, link types and timestamps. (The pcap
//! writer's round trip is the `read_capture` target's.)
#![allow(dead_code)]

use sift_pcap::{Capture, Format, Packet, PcapngWriter, TsPrecision};

/// Fuzz entry: the bytes as a capture file.
pub fn check(data: &[u8]) {
    let Ok(cap) = Capture::from_bytes(data.to_vec()) else {
        return;
    };
    check_capture(&cap);
}

/// Reads every packet of `cap` and checks the pcapng round trip of the
/// good ones. Returns how many packets were read.
pub fn check_capture(cap: &Capture) -> usize {
    let packets: Vec<Packet<'_>> = cap.packets().map_while(Result::ok).collect();
    check_pcapng_round_trip(cap.linktype(), &packets);
    packets.len()
}

/// Writes `packets` as pcapng and reads them back unchanged. Without
/// packets the file still describes one interface of `linktype` (a pcapng
/// file without an Interface Description Block does not open, as in
/// libpcap).
pub fn check_pcapng_round_trip(linktype: u32, packets: &[Packet<'_>]) {
    if linktype > u32::from(u16::MAX) || packets.iter().any(|p| p.linktype > u32::from(u16::MAX)) {
        return; // An IDB's link type is 16 bits.
    }
    let mut w = PcapngWriter::new(Vec::new()).expect("Vec never fails");
    let mut interfaces: Vec<u32> = Vec::new();
    if packets.is_empty() {
        interfaces.push(linktype);
        w.add_interface(linktype as u16, 0, TsPrecision::Nano).expect("Vec never fails");
    }
    for p in packets {
        let id = match interfaces.iter().position(|&lt| lt == p.linktype) {
            Some(i) => i as u32,
            None => {
                interfaces.push(p.linktype);
                w.add_interface(p.linktype as u16, 0, TsPrecision::Nano).expect("Vec never fails")
            }
        };
        let (secs, nanos) = p.ts.nanos();
        w.write_raw(id, secs, nanos, p.wire_len, p.data).expect("Vec never fails");
    }
    let written = w.bytes_written();
    let out = w.into_inner().expect("Vec never fails");
    assert_eq!(out.len() as u64, written);
    let back = match Capture::from_bytes(out) {
        Ok(c) => c,
        Err(e) => panic!("our own pcapng ({} packets) does not open: {e}", packets.len()),
    };
    assert!(matches!(back.format(), Format::Pcapng), "{:?}", back.format());
    let again: Vec<_> = back.packets().collect();
    assert_eq!(again.len(), packets.len(), "packet count changed: {:?}", again.last());
    for (i, (a, b)) in packets.iter().zip(&again).enumerate() {
        let b = b.as_ref().unwrap_or_else(|e| panic!("packet {i} of our own pcapng: {e}"));
        assert_eq!(a.data, b.data, "packet {i} bytes");
        assert_eq!(a.wire_len, b.wire_len, "packet {i} wire length");
        assert_eq!(a.linktype, b.linktype, "packet {i} link type");
        let (secs, nanos) = a.ts.nanos();
        if nanos < 1_000_000_000 {
            assert_eq!(b.ts.nanos(), (secs, nanos), "packet {i} timestamp");
        }
    }
}
