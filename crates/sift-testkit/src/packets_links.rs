//! Structured random frames for the "other" link types (see
//! `sift_ir::lower` `links.rs`): PPP and HDLC framings, SLIP, Frame Relay,
//! LocalTalk, ARCnet, IPNET, Juniper MFR, BACnet MS/TP, ATM (RFC 1483, CLIP,
//! SunATM with LLC, LANE and signalling cells), SS7 MTP2/MTP3, pflog, ENC
//! and netANALYZER. Each frame has the right header fields (often the
//! values the TESTrun filters look for), carries the usual payloads of
//! [`crate::packets`] (IPv4, IPv6, ARP ...) and is sometimes inconsistent
//! on purpose; truncation is done by the caller.

use crate::packets::{arp, ethernet, ethertype, garbage, ipv4, ipv6, l3_for, put16, put32};
use crate::rng::Rng;
use sift_ir::LinkType;

/// A complete frame for one of the link types of this file, or `None` if
/// `lt` is not one of them.
pub(crate) fn full_frame(rng: &mut Rng, lt: LinkType) -> Option<Vec<u8>> {
    Some(match lt.0 {
        9 => ppp(rng, &[0xff, 0x03]),
        50 => ppp(rng, &[0xff, 0x03]),
        166 => {
            let dir = rng.one_of(&[0u8, 1], |r| r.byte());
            ppp(rng, &[dir, 0x03])
        }
        51 => {
            // PPPoE session header (ver/type, code, session, length), then PPP.
            let mut h = vec![0x11, 0x00];
            put16(&mut h, rng.one_of(&[0u16, 1, 0x1234, 0xffff], |r| r.next_u32() as u16));
            put16(&mut h, rng.below(1500) as u16);
            ppp(rng, &h)
        }
        16 => {
            let mut h = rng.bytes(5);
            let (proto, pl) = ppp_payload(rng);
            put16(&mut h, proto);
            h.extend(rng.bytes(17));
            h.extend(pl);
            h
        }
        104 => chdlc(rng),
        8 => slip(rng, 16),
        15 => slip(rng, 24),
        107 => frelay(rng),
        114 => {
            // LLAP: destination, source, type (1 = short DDP, 2 = long DDP).
            let mut f = vec![rng.byte(), rng.byte(), rng.one_of(&[1u8, 2], |r| r.byte())];
            f.extend(garbage(rng));
            f
        }
        7 => arcnet(rng, false),
        129 => arcnet(rng, true),
        226 => ipnet(rng),
        99 => {
            let mut f = rng.bytes(6);
            let et = ethertype(rng);
            put16(&mut f, et);
            f.extend(rng.bytes(36));
            f.extend(l3_for(rng, et));
            f
        }
        138 => {
            let mut f = rng.bytes(16);
            let et = ethertype(rng);
            put16(&mut f, et);
            f.extend(l3_for(rng, et));
            f
        }
        134 => {
            // "MGC" cookie, flags (bit 0: direction), then the payload.
            let mut f = if rng.chance(0.9) { vec![0x4d, 0x47, 0x43] } else { rng.bytes(3) };
            f.push(rng.byte());
            f.extend(if rng.chance(0.5) { ipv4(rng) } else { garbage(rng) });
            f
        }
        11 | 19 => llc_pdu(rng),
        123 => sunatm(rng),
        140 => mtp2(rng),
        139 => {
            let mut f = rng.bytes(4);
            f.extend(mtp2(rng));
            f
        }
        141 => {
            let mut f = vec![sio(rng)];
            f.extend(routing_label(rng));
            f.extend(garbage(rng));
            f
        }
        165 => bacnet_mstp(rng),
        197 => {
            // DLT_ERF: a 16-byte ERF record header and a 4-byte multi-channel
            // HDLC header (libpcap reads neither), then MTP2.
            let mut f = rng.bytes(8);
            f.push(rng.one_of(&[5u8, 1, 2], |r| r.byte()));
            f.extend(rng.bytes(11));
            f.extend(mtp2(rng));
            f
        }
        117 => pflog(rng),
        109 => {
            // DLT_ENC: address family (host byte order), SPI, flags.
            let af: u32 = rng.one_of(&[2, 10, 24, 28, 30], |r| r.next_u32());
            let mut f = if rng.chance(0.6) { af.to_le_bytes().to_vec() } else { af.to_be_bytes().to_vec() };
            f.extend(rng.bytes(8));
            f.extend(if af == 2 { ipv4(rng) } else if rng.chance(0.5) { ipv6(rng) } else { ipv4(rng) });
            f
        }
        281 | 284 => {
            // Ethernet with a 4-byte switch tag after the source address:
            // Broadcom (opcode in the top 3 bits of byte 12) or Marvell DSA
            // (mode in the top 2 bits, 0x40 = from CPU... as captured).
            let eth = ethernet(rng);
            let mut f = eth[..12.min(eth.len())].to_vec();
            let tag0 = if lt.0 == 281 {
                rng.one_of(&[0x00u8, 0x20, 0x40], |r| r.byte())
            } else {
                rng.one_of(&[0x00u8, 0x40, 0x80, 0xc0], |r| r.byte())
            };
            f.push(tag0);
            f.extend(rng.bytes(3));
            f.extend(eth.get(12..).unwrap_or(&[]));
            f
        }
        240 => {
            let mut f = rng.bytes(4);
            f.extend(ethernet(rng));
            f
        }
        241 => {
            let mut f = rng.bytes(4);
            f.extend([0x55; 7]);
            f.push(0xd5);
            f.extend(ethernet(rng));
            f
        }
        _ => return None,
    })
}

/// A PPP protocol number and a payload for it.
fn ppp_payload(rng: &mut Rng) -> (u16, Vec<u8>) {
    match rng.below(20) {
        0..=7 => (0x0021, ipv4(rng)),
        8..=11 => (0x0057, ipv6(rng)),
        12 => {
            // MPLS unicast: a label stack, then IPv4.
            let mut p = Vec::new();
            let n = 1 + rng.index(2);
            for i in 0..n {
                let label: u32 = rng.one_of(&[100, 0, 12345], |r| r.next_u32() & 0xfffff);
                let bos = u32::from(i + 1 == n);
                put32(&mut p, (label << 12) | (bos << 8) | 64);
            }
            p.extend(ipv4(rng));
            (0x0281, p)
        }
        13 => (0x002d, garbage(rng)),
        14 => (0x002f, ipv4(rng)),
        15 => (rng.one_of(&[0x0027u16, 0x0029, 0x0023, 0x0031, 0x002b, 0x0600, 0x8035], |r| r.next_u32() as u16), garbage(rng)),
        16 => (0x8035, arp(rng, true)),
        _ => (rng.next_u32() as u16, garbage(rng)),
    }
}

fn ppp(rng: &mut Rng, head: &[u8]) -> Vec<u8> {
    let mut f = head.to_vec();
    let (proto, pl) = ppp_payload(rng);
    put16(&mut f, proto);
    f.extend(pl);
    f
}

/// An OSI PDU: NLPID, length, version, and for IS-IS the PDU type at 4.
fn osi_pdu(rng: &mut Rng) -> Vec<u8> {
    let nlpid = rng.one_of(&[0x81u8, 0x82, 0x83, 0x83, 0x83], |r| r.byte());
    let pdu_type = rng.one_of(&[15u8, 16, 17, 18, 20, 24, 25, 26, 27, 0x32], |r| r.byte());
    let mut p = vec![nlpid, 27, 1, 0, pdu_type];
    p.extend(garbage(rng));
    p
}

fn chdlc(rng: &mut Rng) -> Vec<u8> {
    let mut f = vec![rng.one_of(&[0x0fu8, 0x8f], |r| r.byte()), 0x00];
    if rng.chance(0.25) {
        put16(&mut f, 0xfefe);
        // A pad byte before the NLPID.
        f.push(rng.one_of(&[0u8, 3], |r| r.byte()));
        f.extend(osi_pdu(rng));
    } else {
        let et = ethertype(rng);
        put16(&mut f, et);
        f.extend(l3_for(rng, et));
    }
    f
}

fn slip(rng: &mut Rng, hdr: usize) -> Vec<u8> {
    // Byte 0 is the direction on Linux/BSD SLIP (0 in, 1 out); libpcap
    // tests the IP version nibble there too.
    let mut f = vec![rng.one_of(&[0u8, 1, 0x45, 0x60], |r| r.byte())];
    f.extend(rng.bytes(hdr - 1));
    f.extend(if rng.chance(0.7) { ipv4(rng) } else { ipv6(rng) });
    f
}

fn frelay(rng: &mut Rng) -> Vec<u8> {
    let mut f = rng.bytes(2);
    let ctl = if rng.chance(0.9) { 0x03 } else { rng.byte() };
    f.push(ctl);
    match rng.below(10) {
        0..=4 => {
            f.push(0xcc);
            f.extend(ipv4(rng));
        }
        5 | 6 => {
            f.push(0x8e);
            f.extend(ipv6(rng));
        }
        7 | 8 => f.extend(osi_pdu(rng)),
        _ => f.extend(garbage(rng)),
    }
    f
}

fn arcnet_addr(rng: &mut Rng) -> u8 {
    rng.one_of(&[0x00, 0x0e, 0x8c, 0xa4, 0xc0, 0x21], |r| r.byte())
}

fn arcnet(rng: &mut Rng, linux: bool) -> Vec<u8> {
    let mut f = vec![arcnet_addr(rng), arcnet_addr(rng)];
    if linux {
        f.extend(rng.bytes(2));
    }
    let ty = rng.one_of(&[0xd4u8, 0xd4, 0xd5, 0xd6, 0xdd, 0xc4, 0xf0, 0xf1], |r| r.byte());
    f.push(ty);
    // Split flag and sequence number (RFC 1201); RFC 1051 has none.
    f.extend(rng.bytes(3));
    f.extend(match ty {
        0xd4 | 0xf0 => ipv4(rng),
        0xc4 => ipv6(rng),
        0xd5 | 0xf1 => arp(rng, false),
        0xd6 => arp(rng, true),
        _ => garbage(rng),
    });
    f
}

fn ipnet(rng: &mut Rng) -> Vec<u8> {
    // Version, family, direction (1 out, 2 in), then the rest of the 24 bytes.
    let family = rng.one_of(&[2u8, 26], |r| r.byte());
    let mut f = vec![1, family];
    put16(&mut f, rng.one_of(&[1u16, 2], |r| r.next_u32() as u16));
    f.extend(rng.bytes(20));
    f.extend(if family == 26 { ipv6(rng) } else { ipv4(rng) });
    f
}

/// An 802.2 LLC PDU as ATM carries it: mostly SNAP with an EtherType.
fn llc_pdu(rng: &mut Rng) -> Vec<u8> {
    match rng.below(10) {
        0..=6 => {
            let et = ethertype(rng);
            let mut f = vec![0xaa, 0xaa, 0x03, 0, 0, 0];
            put16(&mut f, et);
            f.extend(l3_for(rng, et));
            f
        }
        7 => {
            let mut f = vec![0xaa, 0xaa, 0x03, 0x08, 0x00, 0x07, 0x80, 0x9b];
            f.extend(garbage(rng));
            f
        }
        8 => {
            let sap = rng.one_of(&[0xfeu8, 0x42, 0xe0, 0x06, 0xf0], |r| r.byte());
            let mut f = vec![sap, sap, 0x03];
            f.extend(garbage(rng));
            f
        }
        _ => garbage(rng),
    }
}

fn sunatm(rng: &mut Rng) -> Vec<u8> {
    match rng.below(10) {
        // LLC-encapsulated data on some VC.
        0..=4 => {
            let mut f = vec![(rng.byte() & 0xf0) | 0x02, rng.byte()];
            put16(&mut f, rng.one_of(&[20u16, 10, 0xdb, 0x1c0, 20001, 20003, 20005], |r| r.next_u32() as u16));
            f.extend(llc_pdu(rng));
            f
        }
        // LANE: LE header (0xff00 = control), then Ethernet.
        5..=7 => {
            let mut f = vec![(rng.byte() & 0xf0) | 0x01, rng.byte()];
            put16(&mut f, rng.next_u32() as u16);
            put16(&mut f, if rng.chance(0.2) { 0xff00 } else { rng.one_of(&[0u16, 1], |r| r.next_u32() as u16) });
            f.extend(ethernet(rng));
            f
        }
        // Signalling and OAM circuits (VPI 0): a Q.2931 message type at 9.
        _ => {
            let vpi = if rng.chance(0.8) { 0 } else { rng.byte() };
            let mut f = vec![rng.byte(), vpi];
            put16(&mut f, rng.one_of(&[1u16, 2, 3, 4, 5, 16], |r| r.next_u32() as u16));
            let mut pl = rng.bytes(5);
            pl.push(rng.one_of(&[0x05u8, 0x02, 0x07, 0x0f, 0x4d, 0x5a], |r| r.byte()));
            pl.extend(garbage(rng));
            f.extend(pl);
            f
        }
    }
}

/// A service information octet (the TESTrun values are there).
fn sio(rng: &mut Rng) -> u8 {
    rng.one_of(&[0x03u8, 0x05, 0x83, 0x85, 0xd2, 0xa2, 0xa3, 0xa4, 0xa5, 0x41, 0x42, 0x49, 0x4a], |r| r.byte())
}

/// An ITU routing label: DPC (14 bits), OPC (14 bits), SLS (4 bits),
/// little-endian.
fn routing_label(rng: &mut Rng) -> [u8; 4] {
    let dpc: u32 = rng.one_of(&[0x31d6, 0x1273, 0x1274, 0x1275, 1, 2, 0x0ab5, 0x0ab6, 0], |r| r.next_u32() & 0x3fff);
    let opc: u32 = rng.one_of(&[0x3b35, 0x607, 0x608, 0x609, 0x3aba, 9000, 10000, 2, 0], |r| r.next_u32() & 0x3fff);
    let sls: u32 = rng.one_of(&[3, 4, 5, 9, 11, 12, 13], |r| r.next_u32() & 0xf);
    (dpc | (opc << 14) | (sls << 28)).to_le_bytes()
}

fn mtp2(rng: &mut Rng) -> Vec<u8> {
    let mut f = rng.bytes(2);
    if rng.chance(0.3) {
        // High-speed link (Q.703 Annex A): 12-bit sequence numbers, a 9-bit
        // length indicator in bytes 4-5, SIO at 6, label at 7.
        f.extend(rng.bytes(2));
        let li: u16 = rng.one_of(&[0u16, 1, 2, 3, 40], |r| r.next_u32() as u16 & 0x1ff);
        put16(&mut f, li << 7 | (rng.next_u32() as u16 & 0x7f));
    } else {
        let li = rng.one_of(&[0u8, 1, 2, 3, 4, 20, 63], |r| r.byte() & 0x3f);
        f.push(li | (rng.byte() & 0xc0));
    }
    f.push(sio(rng));
    f.extend(routing_label(rng));
    f.extend(garbage(rng));
    f
}

fn bacnet_mstp(rng: &mut Rng) -> Vec<u8> {
    let mut f = if rng.chance(0.9) { vec![0x55, 0xff] } else { rng.bytes(2) };
    // Frame type, destination, source (255 = broadcast), length, CRC.
    f.push(rng.below(8) as u8);
    let addr = |r: &mut Rng| r.one_of(&[0u8, 1, 7, 0x7e, 0xa7, 0xa8, 0xa9, 0xb3, 0xff], |r| r.byte());
    f.push(addr(rng));
    f.push(addr(rng));
    let data = garbage(rng);
    put16(&mut f, data.len() as u16);
    f.push(rng.byte());
    f.extend(data);
    f
}

fn pflog(rng: &mut Rng) -> Vec<u8> {
    // struct pfloghdr: length, af, action, reason, ifname[16], ruleset[16],
    // rulenr, subrulenr, uid, pid, rule_uid, rule_pid, dir, pad[3].
    let len: u8 = rng.one_of(&[61, 61, 61, 64, 0, 70, 100], |r| r.byte());
    let af: u8 = rng.one_of(&[2, 2, 10, 24, 28, 30], |r| r.byte());
    let mut f = vec![len, af, rng.below(16) as u8, rng.below(20) as u8];
    let name = |r: &mut Rng, pool: &[&str]| -> [u8; 16] {
        let mut b = [0u8; 16];
        if r.chance(0.8) {
            let s = r.pick(pool).as_bytes();
            b[..s.len()].copy_from_slice(s);
        } else {
            for x in b.iter_mut() {
                *x = r.byte();
            }
        }
        b
    };
    f.extend(name(rng, &["testname1", "em0", "pflog0", "testname"]));
    f.extend(name(rng, &["testruleset2", "", "testruleset"]));
    put32(&mut f, rng.one_of(&[0x0045_6789u32, 123, 0], |r| r.next_u32()));
    put32(&mut f, rng.one_of(&[123u32, 0, 0xffff_ffff], |r| r.next_u32()));
    f.extend(rng.bytes(16));
    f.push(rng.one_of(&[0u8, 1, 2, 3], |r| r.byte()));
    f.extend(rng.bytes(3));
    // The payload starts at (len + 3) & ~3.
    let start = (usize::from(len) + 3) & !3;
    f.truncate(start);
    while f.len() < start {
        f.push(rng.byte());
    }
    f.extend(match af {
        2 => ipv4(rng),
        10 | 24 | 28 | 30 => ipv6(rng),
        _ => garbage(rng),
    });
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_supported_other_link_type_has_a_generator() {
        for lt in sift_ir::lower::supported_linktypes() {
            let builtin = [0u32, 1, 12, 108, 113, 228, 229, 276];
            if builtin.contains(&lt.0) {
                continue;
            }
            let mut r = Rng::new(1);
            let is_80211 = matches!(lt.0, 6 | 10 | 105 | 119 | 122 | 127 | 163 | 192);
            assert!(is_80211 || full_frame(&mut r, lt).is_some(), "no generator for {lt}");
        }
    }
}
