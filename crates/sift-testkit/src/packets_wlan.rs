//! Structured random frames for IEEE 802.11 (plain, and after radiotap,
//! AVS, Prism and PPI headers) and the other link types with MAC addresses
//! and an 802.2 LLC payload: FDDI, Token Ring, IP over Fibre Channel.
//!
//! 802.11 frames are management (beacons, probes, ... with a random body),
//! control (RTS, CTS, ACK, block ack: short frames) and data frames (plain
//! and QoS, null, 4-address, protected), with every To DS / From DS
//! combination, sometimes a trailing FCS, and an LLC/SNAP payload carrying
//! the usual network layers. Radio headers have realistic and bogus
//! lengths; radiotap headers set the TSFT/flags/extended-bitmap present
//! bits and the "data pad" flag in every combination (padding the 802.11
//! header when they say so). Used by [`crate::packets::full_frame`].

use crate::packets::{ethertype, garbage, l3_for, mac};
use crate::rng::Rng;

/// An 802.2 LLC payload: mostly SNAP with an EtherType and its network
/// layer; sometimes AppleTalk SNAP, another SAP (IP, STP, IPX, ISO,
/// NetBEUI) with U/I/S control bytes, or random bytes.
pub(crate) fn llc_payload(rng: &mut Rng) -> Vec<u8> {
    let mut p = Vec::with_capacity(96);
    match rng.below(20) {
        0..=12 => {
            let et = ethertype(rng);
            p.extend_from_slice(&[0xaa, 0xaa, 0x03, 0, 0, 0]);
            p.extend_from_slice(&et.to_be_bytes());
            p.extend(l3_for(rng, et));
        }
        13 => {
            p.extend_from_slice(&[0xaa, 0xaa, 0x03, 0x08, 0x00, 0x07, 0x80, 0x9b]);
            p.extend(garbage(rng));
        }
        14 => {
            p.extend_from_slice(&[0xaa, 0xaa, 0x03, 0, 0, 0, 0x80, 0xf3]);
            p.extend(garbage(rng));
        }
        15..=17 => {
            let sap = *rng.pick(&[0x06u8, 0x42, 0xe0, 0xfe, 0xf0, 0x04]);
            p.push(sap);
            p.push(if rng.chance(0.8) { sap } else { rng.byte() });
            // U (UI 0x03, XID, TEST...), I or S control bytes.
            let any = rng.byte();
            p.push(*rng.pick(&[0x03u8, 0x03, 0xaf, 0xe3, 0x00, 0x01, 0x05, 0x09, 0x6f, any]));
            if sap == 0x06 {
                p.extend(l3_for(rng, 0x0800));
            } else {
                p.extend(garbage(rng));
            }
        }
        _ => p.extend(garbage(rng)),
    }
    p
}

/// An 802.11 frame (no radio header); returns it and whether it is a QoS
/// data frame (its header is then 26 bytes as libpcap counts it).
pub(crate) fn ieee80211(rng: &mut Rng) -> (Vec<u8>, bool) {
    // Frame control byte 0: subtype << 4 | type << 2 | version.
    let fc0: u8 = match rng.below(20) {
        // Management: assoc req/resp, probe req/resp, beacon, disassoc, auth, deauth, action.
        0..=4 => *rng.pick(&[0x00u8, 0x10, 0x40, 0x50, 0x80, 0x80, 0xa0, 0xb0, 0xc0, 0xd0]),
        // Control: BAR, BA, PS-Poll, RTS, CTS, ACK, CF-End.
        5..=7 => *rng.pick(&[0x84u8, 0x94, 0xa4, 0xb4, 0xc4, 0xd4, 0xe4]),
        // Data: data, null, QoS data, QoS null.
        8..=17 => *rng.pick(&[0x08u8, 0x08, 0x88, 0x88, 0x88, 0x48, 0xc8, 0x28]),
        _ => rng.byte(),
    };
    let ds = rng.below(4) as u8;
    let mut fc1 = ds;
    if rng.chance(0.1) {
        fc1 |= 0x40; // protected
    }
    if rng.chance(0.1) {
        fc1 |= rng.byte() & 0xbc;
    }
    let mut f = vec![fc0, fc1];
    // Duration.
    f.extend_from_slice(&[rng.byte(), rng.byte() & 0x7f]);
    let shared = mac(rng);
    let addr = |rng: &mut Rng, f: &mut Vec<u8>| {
        let a = if rng.chance(0.3) { shared } else { mac(rng) };
        f.extend_from_slice(&a);
    };
    let ty = (fc0 >> 2) & 3;
    let qos_data = fc0 & 0x8c == 0x88;
    if ty == 1 {
        // Control frames: CTS/ACK carry one address, the others two.
        addr(rng, &mut f);
        if !matches!(fc0 & 0xf0, 0xc0 | 0xd0) || rng.chance(0.1) {
            addr(rng, &mut f);
        }
        if matches!(fc0 & 0xf0, 0x80 | 0x90) {
            // BAR/BA control and sequence.
            f.extend(rng.bytes(4));
        }
    } else {
        addr(rng, &mut f);
        addr(rng, &mut f);
        addr(rng, &mut f);
        f.extend_from_slice(&[rng.byte(), rng.byte()]); // sequence control
        if ds == 3 && (ty == 2 || rng.chance(0.2)) {
            addr(rng, &mut f);
        }
        if qos_data || (fc0 & 0x80 != 0 && rng.chance(0.5)) {
            f.extend_from_slice(&[rng.byte() & 0x1f, 0]);
        }
    }
    match ty {
        2 if fc1 & 0x40 != 0 => f.extend(garbage(rng)),
        // Null data frames carry nothing, others LLC.
        2 if fc0 & 0x40 == 0 => f.extend(llc_payload(rng)),
        0 => f.extend(garbage(rng)),
        _ => {}
    }
    if rng.chance(0.15) {
        f.extend(rng.bytes(4)); // FCS
    }
    (f, qos_data)
}

/// An 802.11 frame after a radiotap header. The header sets the TSFT,
/// flags and extended-bitmap present bits in all combinations; with the
/// "data pad" flag, the 802.11 header of QoS data frames is padded to a
/// multiple of 4 as drivers do. Sometimes the length is bogus.
pub(crate) fn radiotap(rng: &mut Rng) -> Vec<u8> {
    let tsft = rng.chance(0.5);
    let flags_present = rng.chance(0.75);
    let ext = rng.chance(0.1);
    let mut present: u32 = 0;
    if tsft {
        present |= 1;
    }
    if flags_present {
        present |= 2;
    }
    if rng.chance(0.5) {
        present |= 4; // rate
    }
    if ext {
        present |= 0x8000_0000;
    }
    let mut h = vec![0u8, 0, 0, 0];
    h.extend_from_slice(&present.to_le_bytes());
    if ext {
        h.extend_from_slice(&rng.next_u32().to_le_bytes());
    }
    if tsft {
        while h.len() % 8 != 0 {
            h.push(0);
        }
        h.extend(rng.bytes(8));
    }
    let pad = rng.chance(0.4);
    if flags_present {
        let mut flags = rng.byte() & 0x5f; // FCS (0x10) sometimes, no pad
        if pad {
            flags |= 0x20;
        }
        h.push(flags);
    }
    if present & 4 != 0 {
        h.push(rng.byte());
    }
    let extra = rng.index(12);
    h.extend(rng.bytes(extra));
    let mut len = h.len() as u16;
    if rng.chance(0.05) {
        len = rng.next_u32() as u16;
    } else if rng.chance(0.05) {
        len = len.wrapping_sub(rng.below(8) as u16);
    }
    h[2..4].copy_from_slice(&len.to_le_bytes());
    if rng.chance(0.03) {
        h[0] = rng.byte();
    }
    let (mut frame, qos) = ieee80211(rng);
    if pad && qos && frame.len() > 26 {
        // The 26-byte QoS header padded to 28.
        frame.splice(26..26, [0u8, 0]);
    }
    h.extend(frame);
    h
}

/// An 802.11 frame after an AVS header (big-endian, 64 bytes, version
/// 0x80211001, the header length at byte 4).
fn avs_header(rng: &mut Rng) -> Vec<u8> {
    let mut h = Vec::with_capacity(64);
    h.extend_from_slice(&0x8021_1001u32.to_be_bytes());
    let len: u32 = match rng.below(20) {
        0..=16 => 64,
        17 => 72,
        18 => rng.below(80) as u32,
        _ => rng.next_u32(),
    };
    h.extend_from_slice(&len.to_be_bytes());
    h.extend(rng.bytes(56));
    // Honor the declared length when it is plausible.
    let want = len as usize;
    if (8..=200).contains(&want) {
        h.resize(want, 0);
    }
    h
}

/// An 802.11 frame after an AVS header.
pub(crate) fn avs(rng: &mut Rng) -> Vec<u8> {
    let mut f = avs_header(rng);
    f.extend(ieee80211(rng).0);
    f
}

/// An 802.11 frame after a Prism header (144 bytes, little-endian message
/// code 0x44 or 0x41) or, as some Linux drivers do, an AVS header.
pub(crate) fn prism(rng: &mut Rng) -> Vec<u8> {
    let mut f = if rng.chance(0.35) {
        avs_header(rng)
    } else {
        let mut h = Vec::with_capacity(144);
        let code: u32 = if rng.chance(0.9) { *rng.pick(&[0x44u32, 0x41]) } else { rng.next_u32() };
        h.extend_from_slice(&code.to_le_bytes());
        h.extend_from_slice(&144u32.to_le_bytes());
        h.extend(rng.bytes(136));
        h
    };
    if rng.chance(0.05) {
        // The cookie prefix with other low bits.
        let w = 0x8021_1000 | (rng.next_u32() & 0xfff);
        f[0..4].copy_from_slice(&w.to_be_bytes());
    }
    f.extend(ieee80211(rng).0);
    f
}

/// An 802.11 frame after a PPI header (version 0, little-endian length
/// and DLT, usually 105, with 802.11-common and random fields).
pub(crate) fn ppi(rng: &mut Rng) -> Vec<u8> {
    let mut h = vec![0u8, 0, 0, 0];
    let dlt: u32 = match rng.below(10) {
        0..=7 => 105,
        8 => 1,
        _ => rng.next_u32(),
    };
    h.extend_from_slice(&dlt.to_le_bytes());
    let fields = rng.index(3);
    for _ in 0..fields {
        // Field type 2 (802.11-common, 20 bytes) or random.
        let (ty, n): (u16, usize) = if rng.chance(0.7) { (2, 20) } else { (rng.next_u32() as u16, rng.index(12)) };
        h.extend_from_slice(&ty.to_le_bytes());
        h.extend_from_slice(&(n as u16).to_le_bytes());
        h.extend(rng.bytes(n));
    }
    let mut len = h.len() as u16;
    if rng.chance(0.05) {
        len = rng.next_u32() as u16;
    }
    h[2..4].copy_from_slice(&len.to_le_bytes());
    h.extend(ieee80211(rng).0);
    h
}

/// An FDDI frame: frame control (LLC, async), destination, source, LLC.
pub(crate) fn fddi(rng: &mut Rng) -> Vec<u8> {
    let fc = if rng.chance(0.9) { 0x50 | (rng.byte() & 0x07) } else { rng.byte() };
    let mut f = vec![fc];
    f.extend_from_slice(&mac(rng));
    f.extend_from_slice(&mac(rng));
    f.extend(llc_payload(rng));
    f
}

/// A Token Ring frame: access control, frame control, destination,
/// source (sometimes with a routing information field), LLC.
pub(crate) fn token_ring(rng: &mut Rng) -> Vec<u8> {
    let mut f = vec![0x10 | (rng.byte() & 0x07), if rng.chance(0.9) { 0x40 } else { rng.byte() }];
    f.extend_from_slice(&mac(rng));
    let mut src = mac(rng);
    let rif = rng.chance(0.15);
    if rif {
        src[0] |= 0x80;
    }
    f.extend_from_slice(&src);
    if rif {
        let n = 2 * (1 + rng.index(4));
        f.push(n as u8);
        f.extend(rng.bytes(n - 1));
    }
    f.extend(llc_payload(rng));
    f
}

/// An RFC 2625 IP-over-Fibre-Channel frame: the 16-byte network header
/// (destination and source: 2-byte NAA prefix and a MAC-48), then LLC/SNAP.
pub(crate) fn ip_over_fc(rng: &mut Rng) -> Vec<u8> {
    let mut f = Vec::with_capacity(96);
    for _ in 0..2 {
        f.extend_from_slice(&[0x10, 0x00]);
        f.extend_from_slice(&mac(rng));
    }
    f.extend(llc_payload(rng));
    f
}
