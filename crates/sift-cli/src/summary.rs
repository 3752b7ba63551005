//! One-line L3/L4 summaries of packets for the default output, e.g.
//! `IPv4 10.0.0.1.5555 > 10.0.0.2.80 TCP [S.] len 0`.
//!
//! A deliberately small dissector: it never panics (every read is checked)
//! and says `[|truncated]` where the captured bytes end early.

use std::fmt::Write;
use std::net::{Ipv4Addr, Ipv6Addr};

/// Checked big-endian reads over a byte slice.
struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn u8(&self, at: usize) -> Option<u8> {
        self.0.get(at).copied()
    }
    fn u16(&self, at: usize) -> Option<u16> {
        Some(u16::from_be_bytes([self.u8(at)?, self.u8(at + 1)?]))
    }
    fn u32(&self, at: usize) -> Option<u32> {
        Some(u32::from_be_bytes(self.0.get(at..at + 4)?.try_into().ok()?))
    }
    fn v4(&self, at: usize) -> Option<Ipv4Addr> {
        Some(Ipv4Addr::from(self.u32(at)?))
    }
    fn v6(&self, at: usize) -> Option<Ipv6Addr> {
        let b: [u8; 16] = self.0.get(at..at + 16)?.try_into().ok()?;
        Some(Ipv6Addr::from(b))
    }
    fn rest(&self, at: usize) -> &[u8] {
        self.0.get(at..).unwrap_or(&[])
    }
}

const TRUNC: &str = " [|truncated]";

/// Summarizes a packet of the given LINKTYPE_* value.
pub fn summarize(linktype: u32, data: &[u8]) -> String {
    let b = Bytes(data);
    let mut out = String::new();
    let ok = match linktype {
        1 => ethernet(&b, &mut out),
        113 => b.u16(14).map(|p| ethertype(p, b.rest(16), &mut out)),
        276 => b.u16(0).map(|p| ethertype(p, b.rest(20), &mut out)),
        101 | 12 | 14 => {
            raw_ip(data, &mut out);
            Some(())
        }
        228 => ipv4(&Bytes(data), &mut out),
        229 => ipv6(&Bytes(data), &mut out),
        0 | 108 => b.u32(0).and_then(|af| {
            let af = if linktype == 0 && af > 0xffff { af.swap_bytes() } else { af };
            match af {
                2 => ipv4(&Bytes(b.rest(4)), &mut out),
                10 | 24 | 28 | 30 => ipv6(&Bytes(b.rest(4)), &mut out),
                other => {
                    let _ = write!(out, "AF {other}");
                    Some(())
                }
            }
        }),
        other => {
            let _ = write!(out, "linktype {other}, {} bytes", data.len());
            Some(())
        }
    };
    if ok.is_none() {
        out.push_str(TRUNC);
    }
    out
}

fn mac(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect::<Vec<_>>().join(":")
}

fn ethernet(b: &Bytes<'_>, out: &mut String) -> Option<()> {
    let dst = b.0.get(0..6)?;
    let src = b.0.get(6..12)?;
    let mut at = 12;
    let mut tags = String::new();
    let mut proto = b.u16(at)?;
    while matches!(proto, 0x8100 | 0x88a8 | 0x9100) {
        let tci = b.u16(at + 2)?;
        let _ = write!(tags, "vlan {} ", tci & 0xfff);
        at += 4;
        proto = b.u16(at)?;
    }
    if proto <= 1500 {
        let _ = write!(out, "{} > {} 802.3 length {proto}", mac(src), mac(dst));
        return Some(());
    }
    out.push_str(&tags);
    if !matches!(proto, 0x0800 | 0x86dd | 0x0806 | 0x8035) {
        let _ = write!(out, "{} > {} ", mac(src), mac(dst));
    }
    ethertype(proto, b.rest(at + 2), out);
    Some(())
}

fn ethertype(proto: u16, payload: &[u8], out: &mut String) {
    let p = Bytes(payload);
    let r = match proto {
        0x0800 => ipv4(&p, out),
        0x86dd => ipv6(&p, out),
        0x0806 | 0x8035 => arp(&p, proto == 0x8035, out),
        0x8847 | 0x8848 => p.u32(0).map(|w| {
            let _ = write!(out, "MPLS label {}", w >> 12);
        }),
        0x8863 => {
            out.push_str("PPPoE discovery");
            Some(())
        }
        0x8864 => p.u16(2).map(|s| {
            let _ = write!(out, "PPPoE session 0x{s:04x}");
        }),
        other => {
            let _ = write!(out, "ethertype 0x{other:04x}");
            Some(())
        }
    };
    if r.is_none() {
        out.push_str(TRUNC);
    }
}

fn raw_ip(data: &[u8], out: &mut String) {
    let b = Bytes(data);
    let r = match b.u8(0).map(|v| v >> 4) {
        Some(4) => ipv4(&b, out),
        Some(6) => ipv6(&b, out),
        Some(v) => {
            let _ = write!(out, "IP version {v}");
            Some(())
        }
        None => None,
    };
    if r.is_none() {
        out.push_str(TRUNC);
    }
}

fn arp(b: &Bytes<'_>, rarp: bool, out: &mut String) -> Option<()> {
    let name = if rarp { "RARP" } else { "ARP" };
    let op = b.u16(6)?;
    let (spa, tpa) = (b.v4(14)?, b.v4(24)?);
    match op {
        1 => write!(out, "{name} who-has {tpa} tell {spa}"),
        2 => write!(out, "{name} reply {spa} is-at {}", mac(b.0.get(8..14)?)),
        _ => write!(out, "{name} op {op} {spa} > {tpa}"),
    }
    .ok()
}

fn ipv4(b: &Bytes<'_>, out: &mut String) -> Option<()> {
    let vihl = b.u8(0)?;
    let ihl = usize::from(vihl & 0xf) * 4;
    let frag = b.u16(6)?;
    let proto = b.u8(9)?;
    let (src, dst) = (b.v4(12)?, b.v4(16)?);
    let _ = write!(out, "IPv4 ");
    if frag & 0x1fff != 0 {
        let _ = write!(out, "{src} > {dst} proto {proto} fragment offset {}", (frag & 0x1fff) * 8);
        return Some(());
    }
    transport(proto, &Bytes(b.rest(ihl)), &src.to_string(), &dst.to_string(), out)
}

fn ipv6(b: &Bytes<'_>, out: &mut String) -> Option<()> {
    let next = b.u8(6)?;
    let (src, dst) = (b.v6(8)?, b.v6(24)?);
    let _ = write!(out, "IPv6 ");
    transport(next, &Bytes(b.rest(40)), &src.to_string(), &dst.to_string(), out)
}

fn transport(proto: u8, b: &Bytes<'_>, src: &str, dst: &str, out: &mut String) -> Option<()> {
    match proto {
        6 | 17 | 132 => {
            let name = match proto {
                6 => "TCP",
                17 => "UDP",
                _ => "SCTP",
            };
            let (sp, dp) = match (b.u16(0), b.u16(2)) {
                (Some(s), Some(d)) => (s, d),
                _ => {
                    let _ = write!(out, "{src} > {dst} {name}");
                    return None;
                }
            };
            let _ = write!(out, "{src}.{sp} > {dst}.{dp} {name}");
            if proto == 6 {
                let flags = b.u8(13)?;
                let names = [(0x02, 'S'), (0x01, 'F'), (0x04, 'R'), (0x08, 'P'), (0x20, 'U'), (0x40, 'E'), (0x80, 'W')];
                let mut f: String = names.iter().filter(|(m, _)| flags & m != 0).map(|(_, c)| *c).collect();
                if flags & 0x10 != 0 {
                    f.push('.');
                }
                let _ = write!(out, " [{}]", if f.is_empty() { "none" } else { &f });
            }
        }
        1 | 58 => {
            let name = if proto == 1 { "ICMP" } else { "ICMP6" };
            let _ = write!(out, "{src} > {dst} {name}");
            let (t, c) = (b.u8(0)?, b.u8(1)?);
            let _ = write!(out, " type {t} code {c}");
        }
        other => {
            let name = match other {
                2 => "IGMP".to_string(),
                47 => "GRE".to_string(),
                50 => "ESP".to_string(),
                51 => "AH".to_string(),
                103 => "PIM".to_string(),
                112 => "VRRP".to_string(),
                n => format!("proto {n}"),
            };
            let _ = write!(out, "{src} > {dst} {name}");
        }
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tcp_syn_over_ethernet() {
        let mut p = vec![0u8; 54];
        p[12] = 0x08;
        p[14] = 0x45;
        p[23] = 6;
        p[26..30].copy_from_slice(&[10, 0, 0, 1]);
        p[30..34].copy_from_slice(&[10, 0, 0, 2]);
        p[34..36].copy_from_slice(&5555u16.to_be_bytes());
        p[36..38].copy_from_slice(&80u16.to_be_bytes());
        p[47] = 0x02;
        assert_eq!(summarize(1, &p), "IPv4 10.0.0.1.5555 > 10.0.0.2.80 TCP [S]");
        assert!(summarize(1, &p[..30]).ends_with("[|truncated]"));
    }

    #[test]
    fn never_panics_on_short_input() {
        for lt in [0, 1, 12, 101, 108, 113, 228, 229, 276, 999] {
            for n in 0..64 {
                let _ = summarize(lt, &vec![0x45; n]);
                let _ = summarize(lt, &vec![0x60; n]);
                let _ = summarize(lt, &vec![0x81; n]);
            }
        }
    }
}
