//! Hand-built files for each format feature and each kind of damage.

mod common;

use common::{ng_option, Endian, NgBuilder, PcapBuilder};
use sift_pcap::{Capture, ErrorKind, Format, Packet, PcapWriter, TsPrecision};

const NATIVE: Endian = if cfg!(target_endian = "little") { Endian::Little } else { Endian::Big };
const FOREIGN: Endian = if cfg!(target_endian = "little") { Endian::Big } else { Endian::Little };

fn open(b: Vec<u8>) -> Capture {
    Capture::from_bytes(b).expect("opens")
}

/// All packets and the trailing error, if any.
fn read(cap: &Capture) -> (Vec<Packet<'_>>, Option<sift_pcap::Error>) {
    let mut v = Vec::new();
    for p in cap.packets() {
        match p {
            Ok(p) => v.push(p),
            Err(e) => return (v, Some(e)),
        }
    }
    (v, None)
}

/// Opens and reads a capture that lives for the rest of the test run.
fn rd(b: Vec<u8>) -> (Vec<Packet<'static>>, Option<sift_pcap::Error>) {
    let cap: &'static Capture = Box::leak(Box::new(open(b)));
    read(cap)
}

fn open_err(b: Vec<u8>) -> sift_pcap::Error {
    Capture::from_bytes(b).expect_err("must not open")
}

// ---------------------------------------------------------------- pcap

#[test]
fn pcap_micro_both_byte_orders() {
    for e in [Endian::Little, Endian::Big] {
        let b = PcapBuilder::micro(e, 65535, 1).packet(100, 200, b"abc").packet(101, 999_999, b"de").bytes();
        let cap = open(b);
        assert_eq!(cap.format(), Format::Pcap { nanos: false, swapped: e == FOREIGN });
        assert_eq!(cap.swapped(), e == FOREIGN);
        assert_eq!((cap.linktype(), cap.snaplen(), cap.version()), (1, 65535, (2, 4)));
        let (p, err) = read(&cap);
        assert!(err.is_none());
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].data, b"abc");
        assert_eq!(p[0].wire_len, 3);
        assert_eq!(p[0].ts.micros(), (100, 200));
        assert_eq!(p[0].ts.nanos(), (100, 200_000));
        assert_eq!(p[1].ts.as_unix_nanos(), 101_999_999_000);
        assert_eq!((p[1].linktype, p[1].interface), (1, 0));
    }
}

#[test]
fn pcap_nano_both_byte_orders() {
    for e in [Endian::Little, Endian::Big] {
        let b = PcapBuilder::new(e, 0xa1b2_3c4d, (2, 4), 0, 113).packet(7, 123_456_789, b"x").bytes();
        let cap = open(b);
        assert_eq!(cap.format(), Format::Pcap { nanos: true, swapped: e == FOREIGN });
        assert_eq!(cap.snaplen(), 262_144);
        let (p, _) = read(&cap);
        assert_eq!(p[0].ts.nanos(), (7, 123_456_789));
        assert_eq!(p[0].ts.micros(), (7, 123_456));
        assert_eq!(p[0].ts.as_unix_nanos(), 7_123_456_789);
    }
}

#[test]
fn pcap_kuznetzov_format() {
    let b = PcapBuilder::new(Endian::Little, 0xa1b2_cd34, (2, 4), 100, 1)
        .packet(1, 2, &[7; 110])
        .packet(3, 4, b"yz")
        .bytes();
    let cap = open(b);
    assert_eq!(cap.snaplen(), 114);
    let (p, err) = read(&cap);
    assert!(err.is_none());
    assert_eq!(p.len(), 2);
    assert_eq!(p[0].data.len(), 110);
    assert_eq!(p[1].data, b"yz");
}

#[test]
fn pcap_old_versions_exchange_lengths() {
    // Before 2.3 (and on 543.0) the first length field is the original
    // length; on 2.3 they are exchanged only if caplen > len.
    for version in [(2, 2), (543, 0)] {
        let b = PcapBuilder::new(Endian::Little, 0xa1b2_c3d4, version, 0, 1).record(0, 0, 60, 4, b"abcd").bytes();
        let (p, err) = rd(b.clone());
        assert!(err.is_none(), "{version:?}");
        assert_eq!((p[0].data.len(), p[0].wire_len), (4, 60), "{version:?}");
    }
    let b = PcapBuilder::new(Endian::Little, 0xa1b2_c3d4, (2, 3), 0, 1)
        .record(0, 0, 60, 4, b"abcd")
        .record(0, 0, 4, 60, b"efgh")
        .bytes();
    let (p, _) = rd(b);
    assert_eq!((p[0].data, p[0].wire_len), (&b"abcd"[..], 60));
    assert_eq!((p[1].data, p[1].wire_len), (&b"efgh"[..], 60));
}

#[test]
fn pcap_bad_versions_and_headers() {
    let e = open_err(PcapBuilder::new(Endian::Little, 0xa1b2_c3d4, (1, 0), 0, 1).bytes());
    assert_eq!(e.kind(), ErrorKind::Unsupported);
    assert!(e.to_string().starts_with("archaic pcap savefile format, at byte offset"));
    let e = open_err(PcapBuilder::new(Endian::Big, 0xa1b2_c3d4, (2, 5), 0, 1).bytes());
    assert_eq!(e.message(), "unsupported pcap savefile version 2.5");
    // Empty, too short for a magic, a truncated header, a bad magic.
    assert_eq!(open_err(Vec::new()).kind(), ErrorKind::Truncated);
    assert_eq!(open_err(vec![0xd4, 0xc3]).kind(), ErrorKind::Truncated);
    let mut h = PcapBuilder::micro(Endian::Little, 0, 1).bytes();
    h.truncate(20);
    assert_eq!(open_err(h).kind(), ErrorKind::Truncated);
    let e = open_err(b"GET / HTTP/1.1\r\n\r\n".to_vec());
    assert_eq!((e.kind(), e.offset()), (ErrorKind::NotACapture, 0));
}

#[test]
fn pcap_caplen_above_snaplen_is_cut_like_libpcap() {
    // 10 bytes recorded, snapshot 4: libpcap delivers 4 and skips 6.
    let b = PcapBuilder::micro(Endian::Little, 4, 1)
        .record(0, 0, 10, 10, b"0123456789")
        .packet(1, 0, b"ab")
        .bytes();
    let (p, err) = rd(b);
    assert!(err.is_none());
    assert_eq!((p[0].data, p[0].wire_len), (&b"0123"[..], 10));
    assert_eq!(p[1].data, b"ab");
}

#[test]
fn pcap_caplen_above_linktype_maximum_is_damage() {
    let big = vec![0u8; 262_145];
    let b = PcapBuilder::micro(Endian::Little, 300_000, 1).packet(0, 0, b"ok").packet(0, 0, &big).bytes();
    let (p, err) = rd(b);
    assert_eq!(p.len(), 1);
    let err = err.expect("damage");
    assert_eq!(err.kind(), ErrorKind::Malformed);
    assert_eq!(err.offset(), 24 + 16 + 2);
    // D-Bus allows 128 MiB.
    let b = PcapBuilder::micro(Endian::Little, 300_000, 231).packet(0, 0, &big).bytes();
    let (p, err) = rd(b);
    assert!(err.is_none());
    assert_eq!(p[0].data.len(), 262_145);
}

#[test]
fn pcap_truncation_and_huge_lengths() {
    let good = PcapBuilder::micro(Endian::Little, 0, 1).packet(0, 0, b"first").bytes();
    // A record header cut short.
    let mut b = good.clone();
    b.extend_from_slice(&[1, 2, 3]);
    let (p, err) = rd(b);
    assert_eq!(p.len(), 1);
    let err = err.unwrap();
    assert_eq!((err.kind(), err.offset()), (ErrorKind::Truncated, good.len() as u64));
    // Data cut short.
    let b = PcapBuilder::micro(Endian::Little, 0, 1).packet(0, 0, b"first").record(0, 0, 100, 100, b"short").bytes();
    let (p, err) = rd(b);
    assert_eq!(p.len(), 1);
    assert_eq!(err.unwrap().offset(), good.len() as u64);
    // A length field of 0xFFFFFFFF.
    let b = PcapBuilder::micro(Endian::Little, 0, 1).record(0, 0, u32::MAX, u32::MAX, b"").bytes();
    let (p, err) = rd(b);
    assert!(p.is_empty());
    assert_eq!(err.unwrap().kind(), ErrorKind::Malformed);
}

#[test]
fn pcap_linktype_normalization_and_extension_bits() {
    let cap = open(PcapBuilder::micro(Endian::Little, 0, 12).bytes());
    assert_eq!((cap.linktype(), cap.header_linktype()), (101, 101));
    let cap = open(PcapBuilder::micro(Endian::Little, 0, 0x0400_0001).bytes());
    assert_eq!((cap.linktype(), cap.header_linktype()), (1, 0x0400_0001));
    let cap = open(PcapBuilder::micro(Endian::Little, 0x8000_0000, 1).bytes());
    assert_eq!(cap.snaplen(), 262_144);
    let cap = open(PcapBuilder::micro(Endian::Little, 8_400_944, 1).bytes());
    assert_eq!(cap.snaplen(), 8_400_944);
}

#[test]
fn packets_borrow_the_input() {
    let b = PcapBuilder::micro(Endian::Little, 0, 1).packet(0, 0, b"zero-copy").bytes();
    let cap = open(b);
    let base = cap.as_bytes().as_ptr_range();
    for p in cap.packets() {
        let p = p.unwrap();
        assert!(base.contains(&p.data.as_ptr()));
    }
}

fn sll_can(id: [u8; 4]) -> Vec<u8> {
    let mut d = vec![0u8; 16];
    d[14..16].copy_from_slice(&0x000Cu16.to_be_bytes());
    d.extend_from_slice(&id);
    d.extend_from_slice(&[8, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8]);
    d
}

#[test]
fn foreign_byte_order_pseudo_headers_are_swapped() {
    let b = PcapBuilder::micro(FOREIGN, 0, 113).packet(0, 0, &sll_can([1, 2, 3, 4])).bytes();
    let mut not_can = sll_can([1, 2, 3, 4]);
    not_can[15] = 0x08;
    let b2 = PcapBuilder::micro(FOREIGN, 0, 113).packet(0, 0, &not_can).bytes();
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let path = dir.join("sift_pcap_foreign_sll.pcap");
    std::fs::write(&path, &b).unwrap();
    // In memory (patched in place) and memory-mapped (patched copy).
    for cap in [open(b.clone()), Capture::open(&path).unwrap()] {
        let (p, err) = read(&cap);
        assert!(err.is_none());
        assert_eq!(&p[0].data[16..20], &[4, 3, 2, 1]);
    }
    let (p, _) = rd(b2);
    assert_eq!(&p[0].data[16..20], &[1, 2, 3, 4]);
    // Native byte order: untouched.
    let (p, _) = rd(PcapBuilder::micro(NATIVE, 0, 113).packet(0, 0, &sll_can([1, 2, 3, 4])).bytes());
    assert_eq!(&p[0].data[16..20], &[1, 2, 3, 4]);
    let _ = std::fs::remove_file(&path);
}

#[test]
fn foreign_pcapng_section_is_swapped_when_mapped() {
    // A native section, then a foreign one with a CAN packet: the mapped
    // capture switches to its patched copy at the second packet.
    let b = NgBuilder::new()
        .shb(NATIVE)
        .idb(113, 0, &[])
        .epb(0, 0, &sll_can([1, 2, 3, 4]))
        .shb(FOREIGN)
        .idb(113, 0, &[])
        .epb(0, 0, &sll_can([1, 2, 3, 4]))
        .bytes();
    let path = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("sift_pcap_foreign_sll.pcapng");
    std::fs::write(&path, &b).unwrap();
    for cap in [open(b.clone()), Capture::open(&path).unwrap()] {
        let (p, err) = read(&cap);
        assert!(err.is_none());
        assert_eq!(&p[0].data[16..20], &[1, 2, 3, 4]);
        assert_eq!(&p[1].data[16..20], &[4, 3, 2, 1]);
    }
    let _ = std::fs::remove_file(&path);
}

#[test]
fn nflog_tlv_walk_stops_on_16_bit_rounding_like_libpcap() {
    // A TLV length of 0xFFFF rounds to 0x10000, which libpcap 1.10.3 keeps
    // in 16 bits (0): the walk stops and the next TLV stays as it is.
    let mut d = vec![0u8; 70_000];
    d[..4].copy_from_slice(&[2, 0, 0, 0]);
    d[4..8].copy_from_slice(&[0xFF, 0xFF, 0, 1]);
    d[4 + 65_536..4 + 65_540].copy_from_slice(&FOREIGN.u16(8).iter().chain(&FOREIGN.u16(2)).copied().collect::<Vec<_>>());
    let b = PcapBuilder::micro(FOREIGN, 0, 239).packet(0, 0, &d).bytes();
    let (p, _) = rd(b);
    assert_eq!(&p[0].data[4..8], &[0xFF, 0xFF, 1, 0][..]);
    assert_eq!(&p[0].data[4 + 65_536..4 + 65_540], &FOREIGN.u16(8).iter().chain(&FOREIGN.u16(2)).copied().collect::<Vec<_>>()[..]);
}

#[test]
fn usb_mmapped_original_length_fix() {
    let mut d = vec![0u8; 136];
    d[8] = b'C';
    d[10] = 0x81;
    d[32..36].copy_from_slice(&NATIVE.u32(100));
    d[60..64].copy_from_slice(&NATIVE.u32(2));
    d[72..76].copy_from_slice(&NATIVE.u32(10));
    d[84..88].copy_from_slice(&NATIVE.u32(50));
    d[88..92].copy_from_slice(&NATIVE.u32(20));
    let b = PcapBuilder::micro(NATIVE, 0, 220).record(0, 0, 136, 196, &d).bytes();
    let (p, _) = rd(b);
    assert_eq!(p[0].wire_len, 166);
}

// -------------------------------------------------------------- pcapng

#[test]
fn pcapng_basic_both_byte_orders() {
    for e in [Endian::Little, Endian::Big] {
        let b = NgBuilder::new()
            .shb(e)
            .idb(1, 0, &[])
            .epb(0, 1_234_567_890_123_456, b"hello")
            .bytes();
        let cap = open(b);
        assert_eq!(cap.format(), Format::Pcapng);
        assert_eq!(cap.swapped(), e == FOREIGN);
        assert_eq!((cap.linktype(), cap.snaplen(), cap.version()), (1, 262_144, (1, 0)));
        let (p, err) = read(&cap);
        assert!(err.is_none());
        assert_eq!(p[0].data, b"hello");
        assert_eq!(p[0].ts.micros(), (1_234_567_890, 123_456));
        assert_eq!(p[0].ts.nanos(), (1_234_567_890, 123_456_000));
    }
}

#[test]
fn pcapng_tsresol_and_tsoffset() {
    let e = Endian::Little;
    let ns = ng_option(e, 9, &[9]);
    let bin = ng_option(e, 9, &[0x80 | 10]);
    let mut off = ng_option(e, 14, &e.u64((-5i64) as u64));
    off.extend(ng_option(e, 9, &[3]));
    let b = NgBuilder::new()
        .shb(e)
        .idb(1, 0, &ns)
        .idb(1, 0, &bin)
        .idb(1, 0, &off)
        .epb(0, 1_234_567_890_123_456_789, b"a")
        .epb(1, 1024 * 7 + 256, b"b")
        .epb(2, 10_500, b"c")
        .bytes();
    let (p, err) = rd(b);
    assert!(err.is_none());
    assert_eq!(p[0].ts.nanos(), (1_234_567_890, 123_456_789));
    assert_eq!(p[0].ts.micros(), (1_234_567_890, 123_456));
    assert_eq!(p[1].ts.micros(), (7, 250_000));
    assert_eq!(p[1].ts.resolution(), 1024);
    assert_eq!(p[2].ts.micros(), (5, 500_000));
    assert_eq!(p[2].ts.as_unix_nanos(), 5_500_000_000);
    assert_eq!(p.iter().map(|p| p.interface).collect::<Vec<_>>(), [0, 1, 2]);
}

#[test]
fn pcapng_simple_and_obsolete_packet_blocks() {
    let e = Endian::Big;
    let b = NgBuilder::new()
        .shb(e)
        .idb(1, 4, &ng_option(e, 14, &e.u64(42)))
        .spb(10, b"0123456789")
        .spb(3, b"xyz")
        .pb(0, 5_000_001, 2, 60, b"pb")
        .bytes();
    let (p, err) = rd(b);
    assert!(err.is_none());
    // SPB: captured = min(original, snapshot length); no timestamp (the
    // interface offset only).
    assert_eq!((p[0].data, p[0].wire_len), (&b"0123"[..], 10));
    assert_eq!(p[0].ts.micros(), (42, 0));
    assert_eq!((p[1].data, p[1].wire_len), (&b"xyz"[..], 3));
    assert_eq!((p[2].data, p[2].wire_len), (&b"pb"[..], 60));
    assert_eq!(p[2].ts.micros(), (47, 1));
    // An SPB whose packet does not fit in the block is damage (libpcap).
    let b = NgBuilder::new().shb(e).idb(1, 0, &[]).spb(100, b"short").bytes();
    let (p, err) = rd(b);
    assert!(p.is_empty());
    assert_eq!(err.unwrap().offset(), 28 + 20);
}

#[test]
fn pcapng_skips_other_blocks() {
    let e = Endian::Little;
    let b = NgBuilder::new()
        .shb(e)
        .block(4, &[0; 8]) // NRB
        .idb(1, 0, &[])
        .block(5, &[0; 12]) // ISB
        .block(0x0000_000A, &[1, 2, 3, 4]) // DSB
        .block(0x0000_0BAD, &[9; 5]) // custom
        .block(0x4000_0000, &[]) // unknown, empty body
        .epb(0, 0, b"pkt")
        .bytes();
    let (p, err) = rd(b);
    assert!(err.is_none());
    assert_eq!(p.len(), 1);
}

#[test]
fn pcapng_interfaces_with_different_link_types() {
    let e = Endian::Little;
    let b = NgBuilder::new()
        .shb(e)
        .idb(1, 0, &[])
        .idb(101, 0, &[])
        .idb(113, 0, &[])
        .epb(1, 0, b"raw")
        .epb(0, 0, b"eth")
        .epb(2, 0, b"sll")
        .bytes();
    let cap = open(b);
    assert_eq!(cap.linktype(), 1);
    let (p, err) = read(&cap);
    assert!(err.is_none());
    let got: Vec<_> = p.iter().map(|p| (p.interface, p.linktype)).collect();
    assert_eq!(got, [(1, 101), (0, 1), (2, 113)]);
}

#[test]
fn pcapng_sections_with_different_byte_orders() {
    let b = NgBuilder::new()
        .shb(Endian::Little)
        .idb(1, 0, &[])
        .epb(0, 1_000_000, b"le")
        .shb(Endian::Big)
        .idb(101, 0, &[])
        .idb(1, 0, &[])
        .epb(1, 2_000_000, b"be1")
        .epb(0, 3_000_000, b"be0")
        .shb(Endian::Little)
        .epb(0, 0, b"no interface in this section")
        .bytes();
    let cap = open(b);
    assert_eq!(cap.swapped(), Endian::Little == FOREIGN);
    let (p, err) = read(&cap);
    let got: Vec<_> = p.iter().map(|p| (p.data, p.interface, p.linktype, p.ts.micros().0)).collect();
    assert_eq!(got, [(&b"le"[..], 0, 1, 1), (&b"be1"[..], 1, 1, 2), (&b"be0"[..], 0, 101, 3)]);
    // Interfaces do not carry over into a new section.
    assert_eq!(err.unwrap().kind(), ErrorKind::Malformed);
}

#[test]
fn pcapng_block_damage() {
    let e = Endian::Little;
    let good = || NgBuilder::new().shb(e).idb(1, 0, &[]).epb(0, 0, b"ok");
    let at = good().bytes().len() as u64;
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("huge", good().raw_block(6, 0x7FFF_FFF0, &[0; 8], 0).bytes()),
        ("not a multiple of 4", good().raw_block(6, 13, &[0; 1], 13).bytes()),
        ("trailer mismatch", good().raw_block(6, 16, &[0; 4], 20).bytes()),
        ("zero length", good().raw_block(6, 0, &[], 0).bytes()),
        ("length below 12", good().raw_block(6, 8, &[], 8).bytes()),
        ("beyond the end", good().raw_block(6, 64, &[0; 8], 64).bytes()),
        ("EPB too short", good().block(6, &[0; 8]).bytes()),
        ("caplen beyond the block", good().epb_full(0, 0, 9, 9, b"abcd").bytes()),
        ("caplen above snaplen", NgBuilder::new().shb(e).idb(1, 2, &[]).epb(0, 0, b"ok").epb(0, 0, b"abc").bytes()),
        ("unknown interface", good().epb(7, 0, b"x").bytes()),
        ("bad SHB version", good().shb_version(e, 2, 0, &[]).bytes()),
        ("half a block header", {
            let mut v = good().bytes();
            v.extend_from_slice(&[6, 0]);
            v
        }),
    ];
    for (what, b) in cases {
        let (p, err) = rd(b);
        assert_eq!(p.len(), 1, "{what}: the packet before the damage");
        let err = err.unwrap_or_else(|| panic!("{what}: no error"));
        assert_eq!(err.offset(), at, "{what}: {err}");
    }
}

#[test]
fn pcapng_open_errors() {
    let e = Endian::Little;
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("packet before IDB", NgBuilder::new().shb(e).epb(0, 0, b"x").idb(1, 0, &[]).bytes()),
        ("no IDB", NgBuilder::new().shb(e).bytes()),
        ("version 1.1", NgBuilder::new().shb_version(e, 1, 1, &[]).idb(1, 0, &[]).bytes()),
        ("duplicate if_tsresol", {
            let mut o = ng_option(e, 9, &[6]);
            o.extend(ng_option(e, 9, &[9]));
            NgBuilder::new().shb(e).idb(1, 0, &o).bytes()
        }),
        ("if_tsresol 10^-20", NgBuilder::new().shb(e).idb(1, 0, &ng_option(e, 9, &[20])).bytes()),
        ("if_tsresol 2^-64", NgBuilder::new().shb(e).idb(1, 0, &ng_option(e, 9, &[0x80 | 64])).bytes()),
        ("if_tsoffset length 4", NgBuilder::new().shb(e).idb(1, 0, &ng_option(e, 14, &[0; 4])).bytes()),
        ("option beyond the block", NgBuilder::new().shb(e).idb(1, 0, &[2, 0, 40, 0]).bytes()),
        ("SHB too long", NgBuilder::new().shb_version(e, 1, 0, &vec![0; 1 << 20]).bytes()),
    ];
    for (what, b) in cases {
        assert!(Capture::from_bytes(b).is_err(), "{what}");
    }
    // libpcap does not check the first SHB's trailer nor its options, and
    // accepts version 1.2.
    let mut b = NgBuilder::new().shb_version(e, 1, 2, &[0xFF; 8]).idb(1, 0, &[]).epb(0, 0, b"x").bytes();
    b[24..28].copy_from_slice(&[9, 9, 9, 9]);
    let (p, err) = rd(b);
    assert!(err.is_none());
    assert_eq!(p.len(), 1);
}

// --------------------------------------------------------------- writer

#[test]
fn writer_round_trip() {
    let b = NgBuilder::new()
        .shb(Endian::Big)
        .idb(1, 1000, &ng_option(Endian::Big, 9, &[9]))
        .epb(0, 1_500_000_000_123_456_789, b"one")
        .epb_full(0, 1_500_000_001_000_000_001, 3, 70, b"two")
        .bytes();
    let cap = open(b);
    for precision in [TsPrecision::Micro, TsPrecision::Nano] {
        let mut w = PcapWriter::for_capture(Vec::new(), &cap, precision).unwrap();
        for p in cap.packets() {
            w.write_packet(&p.unwrap()).unwrap();
        }
        let out = w.into_inner().unwrap();
        assert_eq!(&out[..24], &sift_pcap::file_header(1, 1000, precision));
        let back = open(out);
        assert_eq!(back.format(), Format::Pcap { nanos: precision == TsPrecision::Nano, swapped: false });
        let (p, err) = read(&back);
        assert!(err.is_none());
        let (orig, _) = read(&cap);
        for (a, b) in orig.iter().zip(&p) {
            assert_eq!((a.data, a.wire_len), (b.data, b.wire_len));
            assert_eq!(a.ts.pcap_fields(precision), b.ts.pcap_fields(precision));
        }
    }
}

#[test]
fn read_from_and_open_errors() {
    let b = PcapBuilder::micro(Endian::Little, 0, 1).packet(0, 0, b"abc").bytes();
    let cap = Capture::read_from(&b[..]).unwrap();
    assert_eq!(read(&cap).0.len(), 1);
    let e = Capture::open(std::path::Path::new("/nonexistent/sift-pcap/file.pcap")).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Io);
    // An empty file on disk.
    let path = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("sift_pcap_empty.pcap");
    std::fs::write(&path, b"").unwrap();
    assert_eq!(Capture::open(&path).unwrap_err().kind(), ErrorKind::Truncated);
    let _ = std::fs::remove_file(&path);
}
