//! Structured random UDP tunnels for the `geneve` and `vxlan` primitives:
//! VXLAN (RFC 7348, UDP port 4789) and Geneve (RFC 8926, UDP port 6081)
//! datagrams carrying an inner frame.
//!
//! - VXLAN: flags byte 0x08 ("VNI present"; sometimes other values), the
//!   reserved bytes (mostly zero), a 24-bit VNI from a few common values,
//!   then an inner Ethernet frame;
//! - Geneve: version 0 (sometimes another), an options length of 0 to 4
//!   words (rarely up to 63) filled with option TLVs, the O/C flags, the
//!   protocol type (mostly 0x6558, transparent Ethernet bridging, with an
//!   inner Ethernet frame; else IPv4, IPv6 or another type with the
//!   matching payload), the VNI.
//!
//! The destination port is usually the tunnel's (sometimes the other
//! tunnel's, or a random one with a tunnel header after it). Inner frames
//! may hold a tunnel again (at most two levels), so that filters such as
//! `geneve and geneve and ip` meet matching packets. Packets of every link
//! type that carries IPv4 or IPv6 get these datagrams through
//! `packets.rs`'s UDP generator; [`tunnel_udp`] and [`tunnel_frame`] give
//! them on demand.

use crate::packets::{ethernet, garbage, ipv4, ipv6, put16, put32};
use crate::rng::Rng;
use std::cell::Cell;

/// The IANA UDP port of VXLAN.
pub const VXLAN_PORT: u16 = 4789;
/// The IANA UDP port of Geneve.
pub const GENEVE_PORT: u16 = 6081;
/// How deeply tunnels nest in generated packets.
const MAX_NESTING: u8 = 2;
/// How often a UDP datagram of a random packet is a tunnel (by default;
/// see [`with_tunnel_share`]).
pub const TUNNEL_SHARE: f64 = 0.12;

thread_local! {
    /// Tunnels being generated around the current frame.
    static NESTING: Cell<u8> = const { Cell::new(0) };
    /// The share of UDP datagrams that are tunnels, on this thread.
    static SHARE: Cell<f64> = const { Cell::new(TUNNEL_SHARE) };
}

/// Runs `f` with `share` of the random packets' UDP datagrams (at each
/// nesting level) being VXLAN/Geneve tunnels, on this thread; the share
/// goes back to what it was afterwards (also if `f` panics).
pub fn with_tunnel_share<T>(share: f64, f: impl FnOnce() -> T) -> T {
    struct Restore(f64);
    impl Drop for Restore {
        fn drop(&mut self) {
            SHARE.with(|s| s.set(self.0));
        }
    }
    let _restore = Restore(SHARE.with(|s| s.replace(share)));
    f()
}

/// VNIs from a few values (those of libpcap's test captures and TESTrun
/// rows among them) or random.
fn vni(rng: &mut Rng) -> u32 {
    rng.one_of(&[0u32, 1, 10, 11, 100, 101, 12345, 0xff_ffff], |r| r.next_u32() & 0xff_ffff)
}

/// A VXLAN or Geneve datagram (UDP header and payload) for the random
/// packets' UDP generator, or `None` (most of the time, and always inside
/// two tunnels already).
pub(crate) fn maybe_tunnel_udp(rng: &mut Rng) -> Option<Vec<u8>> {
    if NESTING.with(Cell::get) >= MAX_NESTING || !rng.chance(SHARE.with(Cell::get)) {
        return None;
    }
    Some(tunnel_udp(rng))
}

/// A random UDP datagram (8-byte header and payload) carrying a VXLAN or
/// Geneve tunnel: mostly to the tunnel's port, with a realistic header and
/// an inner frame.
pub fn tunnel_udp(rng: &mut Rng) -> Vec<u8> {
    let geneve = rng.chance(0.5);
    let own = if geneve { GENEVE_PORT } else { VXLAN_PORT };
    let other = if geneve { VXLAN_PORT } else { GENEVE_PORT };
    let mut t = Vec::with_capacity(128);
    // Source port: the sender's flow hash (ephemeral range), or the tunnel's.
    put16(&mut t, if rng.chance(0.8) { rng.range(49152, 65536) as u16 } else { own });
    let dport = match rng.below(20) {
        0..=16 => own,
        17 => other,
        _ => rng.next_u32() as u16,
    };
    put16(&mut t, dport);
    put16(&mut t, 0); // length, set below
    put16(&mut t, if rng.chance(0.7) { 0 } else { rng.next_u32() as u16 });
    NESTING.with(|n| n.set(n.get() + 1));
    let payload = if geneve { geneve_payload(rng) } else { vxlan_payload(rng) };
    NESTING.with(|n| n.set(n.get().saturating_sub(1)));
    t.extend(payload);
    let len = if rng.chance(0.9) { t.len() as u16 } else { rng.next_u32() as u16 };
    t[4..6].copy_from_slice(&len.to_be_bytes());
    t
}

/// A random Ethernet frame whose IPv4 or IPv6 payload is a VXLAN or
/// Geneve datagram ([`tunnel_udp`]).
pub fn tunnel_frame(rng: &mut Rng) -> Vec<u8> {
    let v6 = rng.chance(0.3);
    let mut f = Vec::with_capacity(160);
    f.extend_from_slice(&[0x02, 0x42, 0xac, 0x11, 0x00, 0x02]);
    f.extend_from_slice(&[0x02, 0x42, 0xac, 0x11, 0x00, 0x03]);
    put16(&mut f, if v6 { 0x86dd } else { 0x0800 });
    let udp = tunnel_udp(rng);
    if v6 {
        put32(&mut f, 0x6000_0000);
        put16(&mut f, udp.len() as u16);
        f.push(17);
        f.push(64);
        for _ in 0..2 {
            f.extend_from_slice(&[0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, rng.byte()]);
        }
    } else {
        f.extend_from_slice(&[0x45, 0]);
        put16(&mut f, (20 + udp.len()) as u16);
        put32(&mut f, 0x4000_0000 | (rng.next_u32() & 0xffff_0000)); // id, DF
        f.extend_from_slice(&[64, 17, 0, 0]);
        f.extend_from_slice(&[10, 0, 0, rng.byte()]);
        f.extend_from_slice(&[10, 0, 0, rng.byte()]);
    }
    f.extend(udp);
    f
}

/// The VXLAN header and the inner Ethernet frame.
fn vxlan_payload(rng: &mut Rng) -> Vec<u8> {
    let mut p = Vec::with_capacity(120);
    p.push(rng.one_of(&[0x08u8, 0x08, 0x08, 0x08, 0x0c, 0x00, 0x88], |r| r.byte()));
    if rng.chance(0.9) {
        p.extend_from_slice(&[0, 0, 0]);
    } else {
        rng.fill(&mut p, 3);
    }
    put32(&mut p, (vni(rng) << 8) | if rng.chance(0.9) { 0 } else { u32::from(rng.byte()) });
    p.extend(ethernet(rng));
    p
}

/// The Geneve header with options and its payload.
fn geneve_payload(rng: &mut Rng) -> Vec<u8> {
    let mut p = Vec::with_capacity(140);
    let version: u8 = if rng.chance(0.92) { 0 } else { 1 + rng.below(3) as u8 };
    let opt_words: u8 = match rng.below(10) {
        0..=5 => 0,
        6..=8 => 1 + rng.below(4) as u8,
        _ => rng.below(64) as u8,
    };
    p.push((version << 6) | opt_words);
    // O (control) and C (critical options) flags.
    p.push(rng.one_of(&[0u8, 0, 0, 0x80, 0x40], |r| r.byte()));
    let proto: u16 = match rng.below(20) {
        0..=12 => 0x6558,
        13 | 14 => 0x0800,
        15 | 16 => 0x86dd,
        17 => 0x8847,
        _ => rng.next_u32() as u16,
    };
    put16(&mut p, proto);
    put32(&mut p, (vni(rng) << 8) | if rng.chance(0.9) { 0 } else { u32::from(rng.byte()) });
    // Options: TLVs (class, type, 5-bit length in words) filling the length.
    let mut left = usize::from(opt_words) * 4;
    while left >= 4 {
        let len = rng.index(left / 4).min(31);
        put16(&mut p, rng.one_of(&[0x0102u16, 0x0103, 0xffff], |r| r.next_u32() as u16));
        p.push(rng.byte());
        p.push(len as u8);
        rng.fill(&mut p, len * 4);
        left -= 4 + len * 4;
    }
    p.extend(match proto {
        0x6558 => ethernet(rng),
        0x0800 => ipv4(rng),
        0x86dd => ipv6(rng),
        _ => garbage(rng),
    });
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tunnels_are_well_formed() {
        let mut rng = Rng::new(5);
        let (mut vxlan, mut geneve, mut teb) = (0, 0, 0);
        for _ in 0..500 {
            let u = tunnel_udp(&mut rng);
            assert!(u.len() >= 16);
            match u16::from_be_bytes([u[2], u[3]]) {
                VXLAN_PORT if u[8] == 0x08 => vxlan += 1,
                GENEVE_PORT if u[8] >> 6 == 0 => {
                    geneve += 1;
                    teb += usize::from(u[10..12] == [0x65, 0x58]);
                }
                _ => {}
            }
            let f = tunnel_frame(&mut rng);
            assert!(f.len() > 14 + 20 + 16);
        }
        assert!(vxlan > 100 && geneve > 100 && teb > 50, "{vxlan} {geneve} {teb}");
    }

    #[test]
    fn nesting_is_bounded() {
        let mut rng = Rng::new(6);
        for _ in 0..2000 {
            let _ = tunnel_udp(&mut rng);
            assert_eq!(NESTING.with(Cell::get), 0);
        }
    }
}
