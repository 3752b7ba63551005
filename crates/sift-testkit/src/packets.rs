//! Structured random packets per link type.
//!
//! [`random_packet`] builds a plausible frame for a link type (Ethernet II
//! with 802.1Q/QinQ tags, MPLS stacks, PPPoE, 802.3 + LLC/SNAP; raw IPv4 and
//! IPv6; BSD/OpenBSD loopback; Linux cooked v1 and v2), whose payload is an
//! IPv4 packet (options, bogus IHL, fragments), an IPv6 packet (extension
//! header chains, some longer than `protochain`'s bound of 64 headers; IPv6
//! and IPv4 in IPv6), ARP/RARP, or something else; the transport is TCP, UDP,
//! SCTP, ICMP, ICMPv6, IGMP, PIM, VRRP, AH, ESP, GRE or a random protocol.
//! Field values come mostly from [`crate::pool`] and sometimes at random,
//! and everything is occasionally inconsistent on purpose (wrong version
//! nibble, wrong lengths, mismatched EtherType).
//!
//! Then the capture is distorted: a good share of packets are truncated
//! (cut anywhere, often inside the headers), a few are tiny (0 to 20
//! bytes), a few claim a wire length shorter than what was captured.

use crate::packets_wlan;
use crate::pool;
use crate::rng::Rng;
use sift_ir::LinkType;

/// Knobs for the packet generator.
#[derive(Clone, Copy, Debug)]
pub struct PacketOptions {
    /// Probability that the capture is cut short (caplen < wire length).
    pub truncate: f64,
    /// Probability of a tiny packet of 0 to 20 random bytes.
    pub tiny: f64,
    /// Probability that the wire length is set below the captured length.
    pub short_wire: f64,
}

impl Default for PacketOptions {
    fn default() -> Self {
        PacketOptions { truncate: 0.18, tiny: 0.04, short_wire: 0.03 }
    }
}

/// A random packet for link type `lt`: the captured bytes and the wire
/// length, with the default [`PacketOptions`].
pub fn random_packet(rng: &mut Rng, lt: LinkType) -> (Vec<u8>, u32) {
    random_packet_with(rng, lt, &PacketOptions::default())
}

/// A random packet for link type `lt` with explicit options.
pub fn random_packet_with(rng: &mut Rng, lt: LinkType, opts: &PacketOptions) -> (Vec<u8>, u32) {
    if rng.chance(opts.tiny) {
        let n = rng.index(21);
        let mut data = rng.bytes(n);
        // Tiny packets that still start like the link type sometimes.
        if n > 0 && rng.chance(0.5) {
            let frame = full_frame(rng, lt);
            let m = n.min(frame.len());
            data[..m].copy_from_slice(&frame[..m]);
        }
        let wire = if rng.chance(0.5) { n as u32 } else { n as u32 + rng.below(100) as u32 };
        return (data, wire);
    }
    let mut data = full_frame(rng, lt);
    let mut wire = data.len() as u32;
    if rng.chance(opts.truncate) && !data.is_empty() {
        // Cut anywhere, but favor the first 80 bytes where the headers are.
        let cut = if rng.chance(0.7) { rng.index(data.len().min(80)) } else { rng.index(data.len()) };
        data.truncate(cut);
    } else if rng.chance(opts.short_wire) {
        wire = rng.below(u64::from(wire)) as u32;
    } else if rng.chance(0.02) {
        // A wire length far beyond the capture (snaplen-limited jumbo).
        wire = wire.saturating_add(rng.range(1, 70_000) as u32);
    } else if rng.chance(0.01) {
        // Extreme wire lengths (`len` arithmetic wraps).
        wire = *rng.pick(&[0, u32::MAX, 0x8000_0000, 0x7fff_ffff]);
    }
    (data, wire)
}

/// A complete (untruncated) frame for the link type.
pub fn full_frame(rng: &mut Rng, lt: LinkType) -> Vec<u8> {
    match lt {
        LinkType::EN10MB => ethernet(rng),
        LinkType::RAW => match rng.below(20) {
            0..=8 => ipv4(rng),
            9..=17 => ipv6(rng),
            _ => garbage(rng),
        },
        LinkType::IPV4 => {
            if rng.chance(0.92) {
                ipv4(rng)
            } else if rng.chance(0.5) {
                ipv6(rng)
            } else {
                garbage(rng)
            }
        }
        LinkType::IPV6 => {
            if rng.chance(0.92) {
                ipv6(rng)
            } else if rng.chance(0.5) {
                ipv4(rng)
            } else {
                garbage(rng)
            }
        }
        LinkType::NULL => loopback(rng, false),
        LinkType::LOOP => loopback(rng, true),
        LinkType::LINUX_SLL => sll(rng),
        LinkType::LINUX_SLL2 => sll2(rng),
        LinkType::IEEE802_11 => packets_wlan::ieee80211(rng).0,
        LinkType::IEEE802_11_RADIO => packets_wlan::radiotap(rng),
        LinkType::IEEE802_11_RADIO_AVS => packets_wlan::avs(rng),
        LinkType::PRISM_HEADER => packets_wlan::prism(rng),
        LinkType::PPI => packets_wlan::ppi(rng),
        LinkType::FDDI => packets_wlan::fddi(rng),
        LinkType::IEEE802 => packets_wlan::token_ring(rng),
        LinkType::IP_OVER_FC => packets_wlan::ip_over_fc(rng),
        _ => crate::packets_links::full_frame(rng, lt).unwrap_or_else(|| garbage(rng)),
    }
}

pub(crate) fn put16(v: &mut Vec<u8>, x: u16) {
    v.extend_from_slice(&x.to_be_bytes());
}

pub(crate) fn put32(v: &mut Vec<u8>, x: u32) {
    v.extend_from_slice(&x.to_be_bytes());
}

/// Writes a big-endian u16 at `at` if it fits.
fn set16(v: &mut [u8], at: usize, x: u16) {
    if let Some(s) = v.get_mut(at..at + 2) {
        s.copy_from_slice(&x.to_be_bytes());
    }
}

pub(crate) fn garbage(rng: &mut Rng) -> Vec<u8> {
    let n = rng.index(100);
    rng.bytes(n)
}

pub(crate) fn mac(rng: &mut Rng) -> [u8; 6] {
    if rng.chance(0.75) {
        *rng.pick(pool::MAC)
    } else {
        let mut m = [0u8; 6];
        m.iter_mut().for_each(|b| *b = rng.byte());
        m
    }
}

fn v4addr(rng: &mut Rng) -> [u8; 4] {
    match rng.below(10) {
        0..=6 => *rng.pick(pool::IPV4),
        7 => [192, 168, 1, rng.byte()],
        8 => [10, rng.byte(), rng.byte(), rng.byte()],
        _ => [rng.byte(), rng.byte(), rng.byte(), rng.byte()],
    }
}

fn v6addr(rng: &mut Rng) -> [u8; 16] {
    match rng.below(10) {
        0..=6 => *rng.pick(pool::IPV6),
        7 => {
            let mut a = [0u8; 16];
            a[0] = 0x20;
            a[1] = 0x01;
            a[2] = 0x0d;
            a[3] = 0xb8;
            a[15] = rng.byte();
            a
        }
        _ => {
            let mut a = [0u8; 16];
            a.iter_mut().for_each(|b| *b = rng.byte());
            a
        }
    }
}

fn port(rng: &mut Rng) -> u16 {
    if rng.chance(0.8) {
        *rng.pick(pool::PORTS)
    } else {
        rng.next_u32() as u16
    }
}

pub(crate) fn ethertype(rng: &mut Rng) -> u16 {
    match rng.below(20) {
        0..=8 => 0x0800,
        9..=13 => 0x86dd,
        14 | 15 => 0x0806,
        16 => 0x8035,
        17 | 18 => *rng.pick(pool::ETHERTYPES),
        _ => rng.next_u32() as u16,
    }
}

/// The network-layer payload for an EtherType (usually matching it).
pub(crate) fn l3_for(rng: &mut Rng, et: u16) -> Vec<u8> {
    if rng.chance(0.08) {
        // Deliberately mismatched.
        return match rng.below(3) {
            0 => ipv4(rng),
            1 => ipv6(rng),
            _ => garbage(rng),
        };
    }
    match et {
        0x0800 => ipv4(rng),
        0x86dd => ipv6(rng),
        0x0806 => arp(rng, false),
        0x8035 => arp(rng, true),
        0x6003 => decnet(rng),
        _ => garbage(rng),
    }
}

/// A DECnet Phase IV routing header: the length word, a flags byte
/// (optionally after a pad byte, 0x81), then a short (0x02) or long
/// (0x06) data-packet header whose addresses come from a few AREA.NODE
/// values (little-endian), or random flags.
fn decnet(rng: &mut Rng) -> Vec<u8> {
    let mut d = Vec::with_capacity(40);
    put16(&mut d, rng.below(200) as u16);
    if rng.chance(0.4) {
        d.push(0x81);
    }
    let long = rng.chance(0.5);
    let flags = if rng.chance(0.85) {
        (if long { 0x06 } else { 0x02 }) | (rng.byte() & 0xf8)
    } else {
        rng.byte()
    };
    d.push(flags);
    let addr = |rng: &mut Rng| -> [u8; 2] {
        let a: u16 = rng.one_of(&[(1 << 10) | 2, (63 << 10) | 1023, 0, (1 << 10) | 1], |r| r.next_u32() as u16);
        a.to_le_bytes()
    };
    if long {
        // darea, dsubarea, HIORD (AA-00-04-00) + dst; sarea, ssubarea,
        // HIORD + src; then nl2, visit count, service class, protocol.
        d.extend_from_slice(&[0, 0, 0xaa, 0x00, 0x04, 0x00]);
        d.extend_from_slice(&addr(rng));
        d.extend_from_slice(&[0, 0, 0xaa, 0x00, 0x04, 0x00]);
        d.extend_from_slice(&addr(rng));
        d.extend_from_slice(&[0, 0, 0, 0]);
    } else {
        d.extend_from_slice(&addr(rng));
        d.extend_from_slice(&addr(rng));
        d.push(0);
    }
    let n = rng.index(20);
    rng.fill(&mut d, n);
    d
}

pub(crate) fn ethernet(rng: &mut Rng) -> Vec<u8> {
    let mut f = Vec::with_capacity(128);
    f.extend_from_slice(&mac(rng));
    f.extend_from_slice(&mac(rng));
    match rng.below(100) {
        0..=54 => {
            let et = ethertype(rng);
            put16(&mut f, et);
            f.extend(l3_for(rng, et));
        }
        55..=66 => {
            // 802.1Q / 802.1ad / QinQ tags.
            let tags = if rng.chance(0.7) { 1 } else { 2 + rng.index(2) };
            for _ in 0..tags {
                put16(&mut f, *rng.pick(&[0x8100, 0x8100, 0x88a8, 0x9100]));
                let vid = *rng.pick(&[1u16, 100, 200, 0xaaa, 0xbbb, 4094, 0]);
                let tci = if rng.chance(0.8) { vid | ((rng.below(8) as u16) << 13) } else { rng.next_u32() as u16 };
                put16(&mut f, tci);
            }
            let et = ethertype(rng);
            put16(&mut f, et);
            f.extend(l3_for(rng, et));
        }
        67..=73 => {
            put16(&mut f, if rng.chance(0.9) { 0x8847 } else { 0x8848 });
            let labels = 1 + rng.index(3);
            for i in 0..labels {
                let label = rng.one_of(&[0u32, 3, 16, 100, 1024, 100_000, 0xfffff], |r| r.next_u32() & 0xfffff);
                let bos = (i + 1 == labels) != rng.chance(0.05);
                let entry = (label << 12) | ((rng.below(8) as u32) << 9) | (u32::from(bos) << 8) | u32::from(rng.byte());
                put32(&mut f, entry);
            }
            if rng.chance(0.5) {
                f.extend(ipv4(rng));
            } else {
                f.extend(ipv6(rng));
            }
        }
        74..=78 => {
            // PPPoE discovery.
            put16(&mut f, 0x8863);
            f.push(if rng.chance(0.9) { 0x11 } else { rng.byte() });
            f.push(*rng.pick(&[0x09u8, 0x07, 0x19, 0x65, 0xa7]));
            put16(&mut f, rng.next_u32() as u16);
            let n = rng.index(24);
            put16(&mut f, n as u16);
            rng.fill(&mut f, n);
        }
        79..=85 => {
            // PPPoE session with PPP inside.
            put16(&mut f, 0x8864);
            f.push(0x11);
            f.push(0);
            put16(&mut f, rng.one_of(&[0x27u16, 0x3b, 1, 0xffff], |r| r.next_u32() as u16));
            let (proto, payload) = match rng.below(5) {
                0 | 1 => (0x0021u16, ipv4(rng)),
                2 => (0x0057, ipv6(rng)),
                3 => (0xc021, garbage(rng)),
                _ => (rng.next_u32() as u16, garbage(rng)),
            };
            put16(&mut f, (payload.len() + 2) as u16);
            put16(&mut f, proto);
            f.extend(payload);
        }
        86..=95 => {
            // 802.3 length + LLC (and SNAP).
            let mut llc = Vec::new();
            match rng.below(7) {
                0 | 1 => {
                    llc.extend_from_slice(&[0xaa, 0xaa, 0x03]);
                    let oui: &[u8; 3] = rng.pick(&[[0u8, 0, 0], [0x08, 0x00, 0x07], [0, 0, 0x0c]]);
                    llc.extend_from_slice(oui);
                    let et = ethertype(rng);
                    put16(&mut llc, et);
                    llc.extend(l3_for(rng, et));
                }
                2 => {
                    llc.extend_from_slice(&[0xfe, 0xfe, 0x03]);
                    let nlpid = *rng.pick(&[0x81u8, 0x82, 0x83, 0x83]);
                    llc.push(nlpid);
                    if nlpid == 0x83 {
                        // IS-IS: header length, version, id length, then
                        // the PDU type (sometimes with reserved bits set).
                        llc.extend_from_slice(&[27, 1, 0]);
                        let pdu = *rng.pick(&[15u8, 16, 17, 18, 20, 24, 25, 26, 27]);
                        llc.push(if rng.chance(0.15) { pdu | (rng.byte() & 0xe0) } else { pdu });
                        rng.fill(&mut llc, 26);
                    } else {
                        rng.fill(&mut llc, 30);
                    }
                }
                3 => {
                    llc.extend_from_slice(&[0x42, 0x42]);
                    // Control: I, S (RR, RNR, REJ) and U (UI, UA, DISC,
                    // DM, SABME, TEST, XID, FRMR) frames, P/F bit varied.
                    let control = rng.one_of(
                        &[0x03u8, 0x00, 0x02, 0x01, 0x05, 0x09, 0x63, 0x43, 0x0f, 0x6f, 0xe3, 0xaf, 0x87, 0x13, 0xbf],
                        |r| r.byte(),
                    );
                    llc.push(control);
                    rng.fill(&mut llc, 35);
                }
                4 => {
                    let hdr: &[u8; 3] = rng.pick(&[[0xf0u8, 0xf0, 0x03], [0xe0, 0xe0, 0x03], [0xff, 0xff, 0x00]]);
                    llc.extend_from_slice(hdr);
                    rng.fill(&mut llc, 30);
                }
                _ => {
                    let n = 3 + rng.index(40);
                    rng.fill(&mut llc, n);
                }
            }
            let len = if rng.chance(0.8) { llc.len() as u16 } else { rng.below(1501) as u16 };
            put16(&mut f, len);
            f.extend(llc);
        }
        _ => {
            let et = *rng.pick(pool::ETHERTYPES);
            put16(&mut f, et);
            f.extend(garbage(rng));
        }
    }
    f
}

fn loopback(rng: &mut Rng, network_order: bool) -> Vec<u8> {
    let af: u32 = match rng.below(20) {
        0..=8 => 2,
        9..=12 => 10,
        13 => 24,
        14 => 28,
        15 => 30,
        16 => 0,
        _ => rng.below(40) as u32,
    };
    let big_endian = network_order != rng.chance(0.15);
    let mut f = Vec::with_capacity(100);
    if big_endian {
        put32(&mut f, af);
    } else {
        f.extend_from_slice(&af.to_le_bytes());
    }
    let inet6 = matches!(af, 10 | 24 | 28 | 30);
    let payload = if rng.chance(0.9) {
        if af == 2 {
            ipv4(rng)
        } else if inet6 {
            ipv6(rng)
        } else if rng.chance(0.5) {
            ipv4(rng)
        } else {
            ipv6(rng)
        }
    } else {
        garbage(rng)
    };
    f.extend(payload);
    f
}

/// The SLL protocol field and the payload it announces.
fn sll_payload(rng: &mut Rng) -> (u16, Vec<u8>) {
    match rng.below(20) {
        0..=14 => {
            let et = ethertype(rng);
            (et, l3_for(rng, et))
        }
        15 => {
            // 802.2 LLC frame.
            let mut llc = vec![0xaa, 0xaa, 0x03, 0, 0, 0];
            let et = ethertype(rng);
            put16(&mut llc, et);
            llc.extend(l3_for(rng, et));
            (0x0004, llc)
        }
        16 => (0x0001, garbage(rng)),
        17 => {
            // A VLAN tag inside the cooked payload.
            let mut p = Vec::new();
            put16(&mut p, 100);
            put16(&mut p, 0x0800);
            p.extend(ipv4(rng));
            (0x8100, p)
        }
        _ => (rng.below(1501) as u16, garbage(rng)),
    }
}

fn sll(rng: &mut Rng) -> Vec<u8> {
    let mut f = Vec::with_capacity(100);
    put16(&mut f, rng.one_of(&[0u16, 0, 1, 2, 3, 4, 4], |r| r.next_u32() as u16));
    put16(&mut f, rng.one_of(&[1u16, 1, 772, 778, 0xffff], |r| r.next_u32() as u16));
    let halen = rng.one_of(&[6u16, 6, 0, 8], |r| r.below(20) as u16);
    put16(&mut f, halen);
    f.extend_from_slice(&mac(rng));
    put16(&mut f, 0);
    let (proto, payload) = sll_payload(rng);
    put16(&mut f, proto);
    f.extend(payload);
    f
}

fn sll2(rng: &mut Rng) -> Vec<u8> {
    let mut f = Vec::with_capacity(100);
    let (proto, payload) = sll_payload(rng);
    put16(&mut f, proto);
    put16(&mut f, 0);
    put32(&mut f, rng.one_of(&[1u32, 2, 3, 0], |r| r.next_u32()));
    put16(&mut f, *rng.pick(&[1u16, 1, 772, 0xffff]));
    f.push(rng.one_of(&[0u8, 0, 1, 2, 3, 4, 4], |r| r.byte()));
    f.push(*rng.pick(&[6u8, 6, 0, 8]));
    f.extend_from_slice(&mac(rng));
    put16(&mut f, 0);
    f.extend(payload);
    f
}

pub(crate) fn arp(rng: &mut Rng, rarp: bool) -> Vec<u8> {
    let mut p = Vec::with_capacity(28);
    put16(&mut p, if rng.chance(0.9) { 1 } else { rng.next_u32() as u16 });
    put16(&mut p, if rng.chance(0.9) { 0x0800 } else { rng.next_u32() as u16 });
    let (hln, pln) = if rng.chance(0.95) { (6, 4) } else { (rng.byte(), rng.byte()) };
    p.push(hln);
    p.push(pln);
    let opcode = if rng.chance(0.85) {
        if rarp {
            3 + rng.below(2) as u16
        } else {
            1 + rng.below(2) as u16
        }
    } else {
        rng.next_u32() as u16
    };
    put16(&mut p, opcode);
    p.extend_from_slice(&mac(rng));
    p.extend_from_slice(&v4addr(rng));
    p.extend_from_slice(&mac(rng));
    p.extend_from_slice(&v4addr(rng));
    if rng.chance(0.2) {
        let n = rng.index(18);
        rng.fill(&mut p, n);
    }
    p
}

/// A transport protocol number, mostly the common ones.
fn ip_proto(rng: &mut Rng, v6: bool) -> u8 {
    match rng.below(30) {
        0..=7 => 6,
        8..=14 => 17,
        15..=17 => {
            if v6 {
                58
            } else {
                1
            }
        }
        18 => 132,
        19 => 2,
        20 => 103,
        21 => 112,
        22 => 51,
        23 => 50,
        24 => 47,
        25 => 58,
        26 | 27 => *rng.pick(pool::IP_PROTOS),
        _ => rng.byte(),
    }
}

pub(crate) fn ipv4(rng: &mut Rng) -> Vec<u8> {
    let ihl: u8 = match rng.below(100) {
        0..=74 => 5,
        75..=92 => 6 + rng.below(10) as u8,
        _ => rng.below(5) as u8,
    };
    let version: u8 = if rng.chance(0.95) { 4 } else { rng.below(16) as u8 };
    let proto = ip_proto(rng, false);
    let frag: u16 = match rng.below(100) {
        0..=39 => 0,
        40..=64 => 0x4000,
        65..=74 => 0x2000,
        75..=84 => (rng.below(0x2000) as u16) | if rng.chance(0.5) { 0x2000 } else { 0 },
        85..=89 => *rng.pick(&[1u16, 0x1fff, 0x2001, 0x3fff]),
        _ => rng.next_u32() as u16,
    };
    let mut h = Vec::with_capacity(80);
    h.push((version << 4) | (ihl & 0xf));
    h.push(if rng.chance(0.7) { 0 } else { rng.byte() });
    put16(&mut h, 0); // total length, set below
    put16(&mut h, rng.next_u32() as u16);
    put16(&mut h, frag);
    h.push(rng.one_of(&[1u8, 64, 128, 255], |r| r.byte()));
    h.push(proto);
    put16(&mut h, rng.next_u32() as u16);
    h.extend_from_slice(&v4addr(rng));
    h.extend_from_slice(&v4addr(rng));
    // Options: write as many bytes as the IHL says (at least the 20 fixed ones).
    let hlen = usize::from(ihl.max(5)) * 4;
    while h.len() < hlen {
        h.push(rng.one_of(&[0u8, 1, 1, 7, 0x44, 0x94], |r| r.byte()));
    }
    let payload = transport(rng, proto, false, 0);
    let total = h.len() + payload.len();
    let tl = if rng.chance(0.85) { total as u16 } else { rng.next_u32() as u16 };
    set16(&mut h, 2, tl);
    h.extend(payload);
    h
}

pub(crate) fn ipv6(rng: &mut Rng) -> Vec<u8> {
    ipv6_at(rng, 0)
}

/// The extension headers before the upper-layer protocol: usually none,
/// often one to three, sometimes a long chain (`protochain` walks them; sift
/// stops after 64, so chains around and beyond that length matter).
fn ext_chain(rng: &mut Rng) -> Vec<u8> {
    match rng.below(100) {
        0..=34 => {
            let n = 1 + rng.index(3);
            (0..n).map(|_| *rng.pick(&[0u8, 0, 43, 44, 44, 60, 51])).collect()
        }
        35..=38 => {
            let n = rng.one_of(&[4usize, 8, 16, 62, 63, 64, 65, 66, 80], |r| 4 + r.index(120));
            (0..n).map(|_| *rng.pick(&[0u8, 60, 60, 43, 44, 51])).collect()
        }
        _ => Vec::new(),
    }
}

/// An IPv6 packet; `depth` counts the IP headers around it (IPv4 and IPv6
/// in IPv6 nest at most twice).
fn ipv6_at(rng: &mut Rng, depth: u8) -> Vec<u8> {
    let version: u32 = if rng.chance(0.95) { 6 } else { rng.below(16) as u32 };
    let mut h = Vec::with_capacity(100);
    put32(&mut h, (version << 28) | (rng.next_u32() & 0x0fff_ffff & if rng.chance(0.5) { 0 } else { u32::MAX }));
    put16(&mut h, 0); // payload length, set below
    // Extension header chain.
    let chain = ext_chain(rng);
    let upper = if depth < 2 && rng.chance(0.06) { *rng.pick(&[41u8, 41, 4]) } else { ip_proto(rng, true) };
    let first = chain.first().copied().unwrap_or(upper);
    h.push(first);
    h.push(rng.one_of(&[1u8, 64, 255], |r| r.byte()));
    h.extend_from_slice(&v6addr(rng));
    h.extend_from_slice(&v6addr(rng));
    let mut body = Vec::new();
    for (i, &ext) in chain.iter().enumerate() {
        let next = chain.get(i + 1).copied().unwrap_or(upper);
        match ext {
            44 => {
                body.push(next);
                body.push(0);
                let off: u16 = match rng.below(4) {
                    0 => 0,
                    1 => 1, // first fragment with M
                    2 => (rng.below(0x2000) as u16) << 3,
                    _ => rng.next_u32() as u16,
                };
                put16(&mut body, off);
                put32(&mut body, rng.next_u32());
            }
            51 => {
                // AH: length in 4-byte units minus 2.
                let words = 3 + rng.index(3);
                body.push(next);
                body.push((words - 2) as u8);
                put16(&mut body, 0);
                put32(&mut body, rng.next_u32());
                put32(&mut body, rng.next_u32());
                let n = words * 4 - 12;
                rng.fill(&mut body, n);
            }
            _ => {
                // HBH / routing / destination options: 8-byte units minus 1
                // (the shortest in long chains).
                let units = if chain.len() > 3 { usize::from(rng.chance(0.1)) } else { rng.index(3) };
                body.push(next);
                body.push(units as u8);
                if ext == 43 {
                    body.push(*rng.pick(&[0u8, 2, 4]));
                    body.push(rng.below(3) as u8);
                    let n = units * 8 + 4;
                    rng.fill(&mut body, n);
                } else {
                    // Pad options.
                    let n = units * 8 + 6;
                    for _ in 0..n {
                        body.push(if rng.chance(0.7) { 0 } else { rng.byte() });
                    }
                }
            }
        }
    }
    body.extend(transport(rng, upper, true, depth));
    let pl = if rng.chance(0.85) { body.len() as u16 } else { rng.next_u32() as u16 };
    set16(&mut h, 4, pl);
    h.extend(body);
    h
}

fn transport(rng: &mut Rng, proto: u8, v6: bool, depth: u8) -> Vec<u8> {
    let mut t = Vec::with_capacity(64);
    match proto {
        6 => {
            put16(&mut t, port(rng));
            put16(&mut t, port(rng));
            put32(&mut t, rng.next_u32());
            put32(&mut t, if rng.chance(0.3) { 0 } else { rng.next_u32() });
            let doff: u8 = match rng.below(10) {
                0..=6 => 5,
                7 | 8 => 6 + rng.below(4) as u8,
                _ => rng.below(16) as u8,
            };
            t.push(doff << 4);
            let flags = rng.one_of(&[0x02u8, 0x12, 0x10, 0x11, 0x04, 0x18, 0x14, 0x01, 0x29, 0xff, 0], |r| r.byte());
            t.push(flags);
            put16(&mut t, rng.next_u32() as u16);
            put16(&mut t, rng.next_u32() as u16);
            put16(&mut t, if rng.chance(0.8) { 0 } else { rng.next_u32() as u16 });
            let opt_len = usize::from(doff.max(5)) * 4 - 20;
            for i in 0..opt_len {
                t.push(if i % 4 == 0 { *rng.pick(&[1u8, 2, 4, 8]) } else { rng.byte() });
            }
        }
        17 => {
            // Sometimes a VXLAN or Geneve tunnel (packets_tunnel.rs).
            if let Some(tunnel) = crate::packets_tunnel::maybe_tunnel_udp(rng) {
                return tunnel;
            }
            put16(&mut t, port(rng));
            put16(&mut t, port(rng));
            put16(&mut t, 8 + rng.below(40) as u16);
            put16(&mut t, rng.next_u32() as u16);
        }
        132 => {
            put16(&mut t, port(rng));
            put16(&mut t, port(rng));
            put32(&mut t, rng.next_u32());
            put32(&mut t, rng.next_u32());
            t.push(rng.below(16) as u8);
            t.push(0);
            put16(&mut t, 4 + rng.below(20) as u16);
        }
        1 | 58 => {
            let ty = if proto == 1 {
                rng.one_of(&[0u8, 0, 3, 8, 8, 11, 5, 13, 14, 17, 18], |r| r.byte())
            } else {
                rng.one_of(&[128u8, 128, 129, 133, 134, 135, 136, 1, 2, 3, 4, 143, 130], |r| r.byte())
            };
            t.push(ty);
            t.push(if rng.chance(0.7) { 0 } else { rng.below(16) as u8 });
            put16(&mut t, rng.next_u32() as u16);
            put32(&mut t, rng.next_u32());
        }
        2 => {
            t.push(rng.one_of(&[0x11u8, 0x16, 0x17, 0x22], |r| r.byte()));
            t.push(rng.byte());
            put16(&mut t, rng.next_u32() as u16);
            t.extend_from_slice(&v4addr(rng));
        }
        103 => {
            t.push(rng.one_of(&[0x20u8, 0x23, 0x21], |r| r.byte()));
            t.push(0);
            put16(&mut t, rng.next_u32() as u16);
        }
        112 => {
            t.push(rng.one_of(&[0x21u8, 0x31], |r| r.byte()));
            t.push(rng.byte());
            t.push(rng.byte());
            t.push(1);
            put32(&mut t, rng.next_u32());
            t.extend_from_slice(&v4addr(rng));
        }
        51 if !v6 && depth == 0 => {
            // IPv4 AH followed by a transport header.
            let next = ip_proto(rng, false);
            t.push(next);
            t.push(4);
            put16(&mut t, 0);
            put32(&mut t, rng.next_u32());
            put32(&mut t, rng.next_u32());
            rng.fill(&mut t, 12);
            t.extend(transport(rng, next, false, depth + 1));
            return t;
        }
        50 => {
            put32(&mut t, rng.next_u32());
            put32(&mut t, rng.next_u32());
        }
        47 => {
            put16(&mut t, 0);
            put16(&mut t, *rng.pick(&[0x0800u16, 0x86dd, 0x6558]));
        }
        // IPv6 and IPv4 in IPv6 (`protochain 41`, `ip6 protochain 4`).
        41 if v6 && depth < 2 => return ipv6_at(rng, depth + 1),
        4 if v6 && depth < 2 => return ipv4(rng),
        _ => {}
    }
    let n = match rng.below(4) {
        0 => 0,
        1 => rng.index(8),
        _ => rng.index(48),
    };
    rng.fill(&mut t, n);
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    const TYPES: [LinkType; 8] = [
        LinkType::EN10MB,
        LinkType::RAW,
        LinkType::IPV4,
        LinkType::IPV6,
        LinkType::NULL,
        LinkType::LOOP,
        LinkType::LINUX_SLL,
        LinkType::LINUX_SLL2,
    ];

    #[test]
    fn deterministic() {
        for lt in TYPES {
            let mut a = Rng::new(9);
            let mut b = Rng::new(9);
            for _ in 0..100 {
                assert_eq!(random_packet(&mut a, lt), random_packet(&mut b, lt));
            }
        }
    }

    #[test]
    fn distortion_shares() {
        for lt in TYPES {
            let mut r = Rng::new(lt.0.into());
            let n = 5000;
            let (mut truncated, mut tiny, mut short_wire) = (0, 0, 0);
            for _ in 0..n {
                let (d, w) = random_packet(&mut r, lt);
                if (d.len() as u64) < u64::from(w) {
                    truncated += 1;
                }
                if d.len() <= 20 {
                    tiny += 1;
                }
                if u64::from(w) < d.len() as u64 {
                    short_wire += 1;
                }
            }
            assert!(truncated * 10 >= n, "{lt}: {truncated} truncated of {n}");
            assert!(tiny * 50 >= n, "{lt}: {tiny} tiny of {n}");
            assert!(short_wire > 0, "{lt}: no short wire lengths");
        }
    }

    #[test]
    fn ethernet_frames_cover_encapsulations() {
        let mut r = Rng::new(1);
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..5000 {
            let f = full_frame(&mut r, LinkType::EN10MB);
            if f.len() >= 14 {
                let et = u16::from_be_bytes([f[12], f[13]]);
                seen.insert(if et <= 1500 { 0 } else { et });
            }
        }
        for et in [0, 0x0800, 0x86dd, 0x0806, 0x8035, 0x8100, 0x88a8, 0x9100, 0x8847, 0x8863, 0x8864] {
            assert!(seen.contains(&et), "EtherType {et:#06x} never generated");
        }
    }

    #[test]
    fn ipv4_headers_vary() {
        let mut r = Rng::new(2);
        let (mut options, mut bogus, mut frags, mut mf) = (0, 0, 0, 0);
        for _ in 0..5000 {
            let p = ipv4(&mut r);
            let ihl = p[0] & 0xf;
            if ihl > 5 {
                options += 1;
            }
            if ihl < 5 {
                bogus += 1;
            }
            let fo = u16::from_be_bytes([p[6], p[7]]);
            if fo & 0x1fff != 0 {
                frags += 1;
            }
            if fo & 0x2000 != 0 {
                mf += 1;
            }
        }
        assert!(options > 500 && bogus > 100 && frags > 500 && mf > 500, "{options} {bogus} {frags} {mf}");
    }

    #[test]
    fn ipv6_extension_headers_appear() {
        let mut r = Rng::new(3);
        let mut ext = std::collections::BTreeSet::new();
        for _ in 0..3000 {
            let p = ipv6(&mut r);
            ext.insert(p[6]);
        }
        for nh in [0u8, 43, 44, 51, 60, 6, 17, 58, 132, 41, 4] {
            assert!(ext.contains(&nh), "next header {nh} never generated");
        }
    }

    /// The length of the extension-header chain of an IPv6 packet, as
    /// `protochain` walks it (HBH, routing, fragment, destination options,
    /// AH).
    fn chain_len(p: &[u8]) -> usize {
        let (mut nh, mut off, mut n) = (p[6], 40usize, 0);
        while matches!(nh, 0 | 43 | 44 | 60 | 51) && off + 2 <= p.len() {
            let len = match nh {
                44 => 8,
                51 => (usize::from(p[off + 1]) + 2) * 4,
                _ => (usize::from(p[off + 1]) + 1) * 8,
            };
            nh = p[off];
            off += len;
            n += 1;
        }
        n
    }

    #[test]
    fn ipv6_chains_reach_beyond_the_protochain_bound() {
        let mut r = Rng::new(5);
        let lens: Vec<usize> = (0..4000).map(|_| chain_len(&ipv6(&mut r))).collect();
        let bound = sift_ir::PROTOCHAIN_MAX_STEPS as usize;
        assert!(lens.contains(&bound), "no chain of exactly {bound}");
        assert!(lens.iter().any(|&n| n > bound), "no chain longer than {bound}");
        assert!(lens.iter().filter(|&&n| (4..bound).contains(&n)).count() > 20);
    }

    #[test]
    fn loopback_headers_use_both_orders() {
        let mut r = Rng::new(4);
        let (mut le, mut be) = (0, 0);
        for _ in 0..2000 {
            let f = full_frame(&mut r, LinkType::NULL);
            match f[..4] {
                [2, 0, 0, 0] => le += 1,
                [0, 0, 0, 2] => be += 1,
                _ => {}
            }
        }
        assert!(le > be && be > 0, "{le} {be}");
    }
}
