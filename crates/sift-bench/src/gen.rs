//! Synthetic workloads: deterministic (by seed) Ethernet captures shaped
//! like the traces of pflua-bench, the bpf-performance study and the Swift
//! paper's FTP experiment.
//!
//! Every packet is built field by field (Ethernet, IPv4/IPv6, TCP/UDP/ICMP,
//! ARP); IPv4 header checksums are filled in, transport checksums are left
//! zero (filters never look at them).

use std::fmt;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::str::FromStr;

use sift_pcap::{PcapWriter, TsPrecision};

/// LINKTYPE_ETHERNET, the link type of every generated capture.
pub const LINKTYPE_ETHERNET: u32 = 1;

/// The snapshot length written in generated captures' headers.
pub const GEN_SNAPLEN: u32 = 262_144;

/// First timestamp of every generated trace (seconds since the epoch).
const EPOCH: u64 = 1_700_000_000;

/// One packet of a trace held in memory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Packet {
    /// Timestamp, nanoseconds since the Unix epoch.
    pub ts_ns: u64,
    /// Original length on the wire.
    pub wire_len: u32,
    /// Captured bytes.
    pub data: Vec<u8>,
}

/// The workload kinds `gen` knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// ≈1 KB IPv4 TCP segments on port 5555 (plus their ACKs), like
    /// pflua-bench's one-gigabyte capture.
    Tcp5555,
    /// Small ICMP echo requests and replies, like pflua-bench's ping flood.
    Pingflood,
    /// A web server's mix: mostly TCP 80/443 (IPv4, some IPv6), ARP, DNS,
    /// ICMP, SSH, NTP.
    Web,
    /// Random IPv4/IPv6 TCP/UDP with random addresses, ports and payloads,
    /// as in the bpf-performance study.
    Mixed,
    /// Passive-mode FTP: 10 servers × 20 data connections opened one after
    /// another, with `227 Entering Passive Mode` replies, amid background
    /// traffic.
    Ftp,
}

impl Kind {
    /// Every kind with its command-line name.
    pub const ALL: &'static [(&'static str, Kind)] = &[
        ("tcp5555", Kind::Tcp5555),
        ("pingflood", Kind::Pingflood),
        ("web", Kind::Web),
        ("mixed", Kind::Mixed),
        ("ftp", Kind::Ftp),
    ];

    /// The command-line name.
    pub fn name(self) -> &'static str {
        Kind::ALL.iter().find(|k| k.1 == self).map_or("?", |k| k.0)
    }

    /// The packet count `bench` generates when none is given: ≈20k for
    /// `web` (cache-resident, like wingolog.org.pcap), 200k for `ftp`, 1M
    /// for the memory-bound kinds.
    pub fn default_count(self) -> usize {
        match self {
            Kind::Web => 20_000,
            Kind::Ftp => 200_000,
            Kind::Tcp5555 | Kind::Pingflood | Kind::Mixed => 1_000_000,
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Kind {
    type Err = String;
    fn from_str(s: &str) -> Result<Kind, String> {
        Kind::ALL
            .iter()
            .find(|k| k.0 == s)
            .map(|k| k.1)
            .ok_or_else(|| {
                let names: Vec<_> = Kind::ALL.iter().map(|k| k.0).collect();
                format!("unknown workload kind '{s}' (known: {})", names.join(", "))
            })
    }
}

/// A small, fast, deterministic pseudo-random generator (SplitMix64).
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator for `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x5eed_5eed_0bad_cafe)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`0` when `n == 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            return 0;
        }
        // Multiply-high: unbiased enough for workloads.
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi.saturating_sub(lo).saturating_add(1))
    }

    /// True with probability `percent`/100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    /// Random bytes appended to `out`.
    pub fn fill(&mut self, out: &mut Vec<u8>, n: usize) {
        let mut left = n;
        while left > 0 {
            let w = self.next_u64().to_le_bytes();
            let take = left.min(8);
            out.extend_from_slice(&w[..take]);
            left -= take;
        }
    }
}

/// A MAC address.
pub type Mac = [u8; 6];

/// Transport payload of a built packet.
enum L4<'a> {
    Tcp {
        sport: u16,
        dport: u16,
        seq: u32,
        ack: u32,
        flags: u8,
        opts: usize,
        payload: &'a [u8],
    },
    Udp {
        sport: u16,
        dport: u16,
        payload: &'a [u8],
    },
    Icmp {
        typ: u8,
        id: u16,
        seq: u16,
        payload: &'a [u8],
    },
}

impl L4<'_> {
    fn proto(&self) -> u8 {
        match self {
            L4::Tcp { .. } => 6,
            L4::Udp { .. } => 17,
            L4::Icmp { .. } => 1,
        }
    }

    fn write(&self, out: &mut Vec<u8>) {
        match *self {
            L4::Tcp {
                sport,
                dport,
                seq,
                ack,
                flags,
                opts,
                payload,
            } => {
                let words = 5 + opts.min(40) / 4;
                out.extend_from_slice(&sport.to_be_bytes());
                out.extend_from_slice(&dport.to_be_bytes());
                out.extend_from_slice(&seq.to_be_bytes());
                out.extend_from_slice(&ack.to_be_bytes());
                out.push((words as u8) << 4);
                out.push(flags);
                out.extend_from_slice(&64_240u16.to_be_bytes()); // window
                out.extend_from_slice(&[0, 0, 0, 0]); // checksum, urgent
                for i in 0..(words - 5) {
                    // NOP, NOP, timestamp-like filler.
                    out.extend_from_slice(if i == 0 {
                        &[1, 1, 8, 10]
                    } else {
                        &[0x12, 0x34, 0x56, 0x78]
                    });
                }
                out.extend_from_slice(payload);
            }
            L4::Udp {
                sport,
                dport,
                payload,
            } => {
                let len = (8 + payload.len()).min(0xffff) as u16;
                out.extend_from_slice(&sport.to_be_bytes());
                out.extend_from_slice(&dport.to_be_bytes());
                out.extend_from_slice(&len.to_be_bytes());
                out.extend_from_slice(&[0, 0]);
                out.extend_from_slice(payload);
            }
            L4::Icmp {
                typ,
                id,
                seq,
                payload,
            } => {
                out.extend_from_slice(&[typ, 0, 0, 0]);
                out.extend_from_slice(&id.to_be_bytes());
                out.extend_from_slice(&seq.to_be_bytes());
                out.extend_from_slice(payload);
            }
        }
    }
}

fn ether(out: &mut Vec<u8>, dst: Mac, src: Mac, ethertype: u16) {
    out.extend_from_slice(&dst);
    out.extend_from_slice(&src);
    out.extend_from_slice(&ethertype.to_be_bytes());
}

fn ipv4_checksum(h: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    for c in h.chunks(2) {
        let w = u32::from(c[0]) << 8 | u32::from(*c.get(1).unwrap_or(&0));
        sum += w;
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// Ethernet + IPv4 (no options, DF set) + `l4`.
fn ipv4_packet(src_mac: Mac, dst_mac: Mac, src: u32, dst: u32, id: u16, l4: &L4<'_>) -> Vec<u8> {
    let mut out = Vec::with_capacity(128);
    ether(&mut out, dst_mac, src_mac, 0x0800);
    let ip_start = out.len();
    out.extend_from_slice(&[0x45, 0, 0, 0]);
    out.extend_from_slice(&id.to_be_bytes());
    out.extend_from_slice(&0x4000u16.to_be_bytes());
    out.extend_from_slice(&[64, l4.proto(), 0, 0]);
    out.extend_from_slice(&src.to_be_bytes());
    out.extend_from_slice(&dst.to_be_bytes());
    l4.write(&mut out);
    let total = (out.len() - ip_start).min(0xffff) as u16;
    out[ip_start + 2..ip_start + 4].copy_from_slice(&total.to_be_bytes());
    let ck = ipv4_checksum(&out[ip_start..ip_start + 20]);
    out[ip_start + 10..ip_start + 12].copy_from_slice(&ck.to_be_bytes());
    out
}

/// Ethernet + IPv6 + `l4` (ICMP becomes ICMPv6 echo).
fn ipv6_packet(src_mac: Mac, dst_mac: Mac, src: [u8; 16], dst: [u8; 16], l4: &L4<'_>) -> Vec<u8> {
    let mut out = Vec::with_capacity(128);
    ether(&mut out, dst_mac, src_mac, 0x86dd);
    let nh = match l4 {
        L4::Icmp { .. } => 58,
        other => other.proto(),
    };
    out.extend_from_slice(&[0x60, 0, 0, 0, 0, 0, nh, 64]);
    out.extend_from_slice(&src);
    out.extend_from_slice(&dst);
    let start = out.len();
    l4.write(&mut out);
    let plen = (out.len() - start).min(0xffff) as u16;
    out[18..20].copy_from_slice(&plen.to_be_bytes());
    out
}

/// Ethernet ARP request (`reply == false`) or reply.
fn arp_packet(sender_mac: Mac, sender: u32, target_mac: Mac, target: u32, reply: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(60);
    let dst = if reply { target_mac } else { [0xff; 6] };
    ether(&mut out, dst, sender_mac, 0x0806);
    out.extend_from_slice(&[0, 1, 8, 0, 6, 4, 0, if reply { 2 } else { 1 }]);
    out.extend_from_slice(&sender_mac);
    out.extend_from_slice(&sender.to_be_bytes());
    out.extend_from_slice(&if reply { target_mac } else { [0; 6] });
    out.extend_from_slice(&target.to_be_bytes());
    out.resize(60, 0); // Ethernet minimum frame (without FCS).
    out
}

/// A DNS query (`response == false`) or response payload for a name.
fn dns_payload(rng: &mut Rng, response: bool) -> Vec<u8> {
    let mut p = Vec::with_capacity(64);
    p.extend_from_slice(&(rng.below(65536) as u16).to_be_bytes());
    p.extend_from_slice(if response {
        &[0x81, 0x80]
    } else {
        &[0x01, 0x00]
    });
    p.extend_from_slice(&[0, 1, 0, if response { 1 } else { 0 }, 0, 0, 0, 0]);
    for label in [&b"www"[..], b"example", b"org"] {
        p.push(label.len() as u8);
        p.extend_from_slice(label);
    }
    p.extend_from_slice(&[0, 0, 1, 0, 1]);
    if response {
        p.extend_from_slice(&[
            0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0x0e, 0x10, 0, 4, 93, 184, 216, 34,
        ]);
    }
    p
}

fn ip4(a: u8, b: u8, c: u8, d: u8) -> u32 {
    u32::from_be_bytes([a, b, c, d])
}

fn mac_for(rng: &mut Rng) -> Mac {
    let r = rng.next_u64().to_le_bytes();
    [0x02, r[0], r[1], r[2], r[3], r[4]]
}

/// The web server of the `web` workload (wingolog.org's address, as in
/// pflua-bench's capture).
pub const WEB_SERVER: u32 = 0xb24f_96e9; // 178.79.150.233
const WEB_SERVER6: [u8; 16] = [
    0x2a, 0x01, 0x7e, 0x00, 0, 0, 0, 0, 0xf0, 0x3c, 0x91, 0xff, 0xfe, 0x96, 0x3a, 0x14,
];
const WEB_GATEWAY: u32 = 0xb24f_9601; // 178.79.150.1
const WEB_RESOLVER: u32 = 0xb24f_9602; // 178.79.150.2

/// The ten FTP servers of the `ftp` workload and the 20 passive-mode data
/// ports each of them hands out, in order. Fixed (independent of the
/// seed) so the built-in 200-connection filter names them.
pub fn ftp_servers() -> Vec<(u32, Vec<u16>)> {
    let mut rng = Rng::new(0xf7b_200);
    let mut used = std::collections::HashSet::new();
    (0..10u8)
        .map(|i| {
            let host = ip4(198, 51, 100, 11 + i);
            let mut ports = Vec::with_capacity(20);
            while ports.len() < 20 {
                let p = rng.range(30_000, 60_000) as u16;
                if used.insert(p) {
                    ports.push(p);
                }
            }
            (host, ports)
        })
        .collect()
}

/// Formats an IPv4 address (host order u32) in dotted quad.
pub fn dotted(a: u32) -> String {
    let b = a.to_be_bytes();
    format!("{}.{}.{}.{}", b[0], b[1], b[2], b[3])
}

/// Generates `count` packets of `kind`, deterministically from `seed`.
pub fn generate(kind: Kind, count: usize, seed: u64) -> Vec<Packet> {
    let mut rng = Rng::new(seed ^ (kind as u64).wrapping_mul(0x1000_0000_01b3));
    let mut out = Vec::with_capacity(count);
    match kind {
        Kind::Tcp5555 => gen_tcp5555(&mut rng, count, &mut out),
        Kind::Pingflood => gen_pingflood(&mut rng, count, &mut out),
        Kind::Web => gen_web(&mut rng, count, &mut out),
        Kind::Mixed => gen_mixed(&mut rng, count, &mut out),
        Kind::Ftp => gen_ftp(&mut rng, count, &mut out),
    }
    out.truncate(count);
    out
}

fn push(out: &mut Vec<Packet>, ts_ns: u64, data: Vec<u8>) {
    let wire_len = u32::try_from(data.len()).unwrap_or(u32::MAX);
    out.push(Packet {
        ts_ns,
        wire_len,
        data,
    });
}

fn gen_tcp5555(rng: &mut Rng, count: usize, out: &mut Vec<Packet>) {
    let (cm, sm) = (mac_for(rng), mac_for(rng));
    let (client, server) = (ip4(192, 168, 1, 1), ip4(192, 168, 1, 2));
    let sport = rng.range(32_768, 60_999) as u16;
    let zeros = [0u8; 1024];
    let (mut seq, ack) = (rng.next_u64() as u32, rng.next_u64() as u32);
    let mut ts = EPOCH * 1_000_000_000;
    for i in 0..count {
        // Every 8th packet is the receiver's ACK, the rest 1 KB of zeros.
        let p = if i % 8 == 7 {
            let l4 = L4::Tcp {
                sport: 5555,
                dport: sport,
                seq: ack,
                ack: seq,
                flags: 0x10,
                opts: 12,
                payload: &[],
            };
            ipv4_packet(sm, cm, server, client, i as u16, &l4)
        } else {
            let l4 = L4::Tcp {
                sport,
                dport: 5555,
                seq,
                ack,
                flags: 0x18,
                opts: 12,
                payload: &zeros,
            };
            seq = seq.wrapping_add(1024);
            ipv4_packet(cm, sm, client, server, i as u16, &l4)
        };
        ts += 8_000 + rng.below(400);
        push(out, ts, p);
    }
}

fn gen_pingflood(rng: &mut Rng, count: usize, out: &mut Vec<Packet>) {
    let (am, bm) = (mac_for(rng), mac_for(rng));
    let (a, b) = (ip4(192, 168, 1, 1), ip4(192, 168, 1, 2));
    let id = rng.below(65536) as u16;
    let payload: Vec<u8> = (0..56u8).collect();
    let mut ts = EPOCH * 1_000_000_000;
    for i in 0..count {
        let seq = (i / 2) as u16;
        let p = if i % 2 == 0 {
            ipv4_packet(
                am,
                bm,
                a,
                b,
                i as u16,
                &L4::Icmp {
                    typ: 8,
                    id,
                    seq,
                    payload: &payload,
                },
            )
        } else {
            ipv4_packet(
                bm,
                am,
                b,
                a,
                i as u16,
                &L4::Icmp {
                    typ: 0,
                    id,
                    seq,
                    payload: &payload,
                },
            )
        };
        ts += 1_000 + rng.below(100);
        push(out, ts, p);
    }
}

/// A client address for the web workload: mostly public addresses, some
/// from 192.168.2.0/24 and 10.0.0.0/8 (so the Swift paper's net filters
/// match something).
fn web_client(rng: &mut Rng) -> u32 {
    match rng.below(100) {
        0..=4 => ip4(192, 168, 2, rng.range(1, 254) as u8),
        5..=9 => ip4(
            10,
            rng.below(256) as u8,
            rng.below(256) as u8,
            rng.range(1, 254) as u8,
        ),
        _ => ip4(
            rng.range(11, 223) as u8,
            rng.below(256) as u8,
            rng.below(256) as u8,
            rng.range(1, 254) as u8,
        ),
    }
}

fn gen_web(rng: &mut Rng, count: usize, out: &mut Vec<Packet>) {
    let server_mac = mac_for(rng);
    let gw_mac = mac_for(rng);
    let mut ts = EPOCH * 1_000_000_000;
    let body = {
        let mut b = Vec::new();
        rng.fill(&mut b, 1448);
        b
    };
    let mut id: u16 = rng.below(65536) as u16;
    while out.len() < count {
        ts += 20_000 + rng.below(200_000);
        id = id.wrapping_add(1);
        let roll = rng.below(1000);
        if roll < 10 {
            // ARP between the server and its gateway.
            let reply = rng.chance(50);
            let p = if reply {
                arp_packet(gw_mac, WEB_GATEWAY, server_mac, WEB_SERVER, true)
            } else {
                arp_packet(server_mac, WEB_SERVER, [0; 6], WEB_GATEWAY, false)
            };
            push(out, ts, p);
        } else if roll < 30 {
            // DNS: the server asks its resolver, the answer comes back.
            let sport = rng.range(1024, 65535) as u16;
            let q = dns_payload(rng, false);
            let l4 = L4::Udp {
                sport,
                dport: 53,
                payload: &q,
            };
            push(
                out,
                ts,
                ipv4_packet(server_mac, gw_mac, WEB_SERVER, WEB_RESOLVER, id, &l4),
            );
            let a = dns_payload(rng, true);
            let l4 = L4::Udp {
                sport: 53,
                dport: sport,
                payload: &a,
            };
            ts += 300_000;
            push(
                out,
                ts,
                ipv4_packet(gw_mac, server_mac, WEB_RESOLVER, WEB_SERVER, id, &l4),
            );
        } else if roll < 38 {
            // ICMP echo from a monitoring host.
            let c = web_client(rng);
            let l4 = L4::Icmp {
                typ: 8,
                id,
                seq: id,
                payload: &body[..56],
            };
            push(
                out,
                ts,
                ipv4_packet(gw_mac, server_mac, c, WEB_SERVER, id, &l4),
            );
        } else if roll < 46 {
            // NTP or SSH.
            let c = web_client(rng);
            let p = if rng.chance(50) {
                let l4 = L4::Udp {
                    sport: 123,
                    dport: 123,
                    payload: &body[..48],
                };
                ipv4_packet(server_mac, gw_mac, WEB_SERVER, c, id, &l4)
            } else {
                let l4 = L4::Tcp {
                    sport: rng.range(1024, 65535) as u16,
                    dport: 22,
                    seq: id.into(),
                    ack: 1,
                    flags: 0x18,
                    opts: 12,
                    payload: &body[..rng.below(200) as usize],
                };
                ipv4_packet(gw_mac, server_mac, c, WEB_SERVER, id, &l4)
            };
            push(out, ts, p);
        } else if roll < 51 {
            // Internal traffic seen on the same link: syslog from the
            // office network to the datacentre.
            let src = ip4(192, 168, 2, rng.range(1, 254) as u8);
            let dst = ip4(
                10,
                rng.below(256) as u8,
                rng.below(256) as u8,
                rng.range(1, 254) as u8,
            );
            let l4 = L4::Udp {
                sport: 514,
                dport: 514,
                payload: &body[..rng.below(300) as usize],
            };
            push(out, ts, ipv4_packet(gw_mac, server_mac, src, dst, id, &l4));
        } else {
            // An HTTP(S) exchange: request, some response segments, ACKs.
            let v6 = roll >= 960;
            let dport = if rng.chance(55) { 443 } else { 80 };
            let sport = rng.range(1024, 65535) as u16;
            let c = web_client(rng);
            let mut c6 = [0u8; 16];
            c6[0] = 0x20;
            c6[1] = 0x01;
            c6[2] = 0x0d;
            c6[3] = 0xb8;
            c6[8..16].copy_from_slice(&rng.next_u64().to_be_bytes());
            let segments = 1 + rng.below(6) as usize;
            let mut t = ts;
            let mut seq = rng.next_u64() as u32;
            for k in 0..(2 + 2 * segments) {
                let (to_server, len) = match k {
                    0 => (true, 300 + rng.below(400) as usize),
                    k if k % 2 == 1 => (
                        false,
                        if k + 1 == 2 + 2 * segments {
                            rng.below(1448) as usize
                        } else {
                            1448
                        },
                    ),
                    _ => (true, 0),
                };
                let l4 = if to_server {
                    L4::Tcp {
                        sport,
                        dport,
                        seq,
                        ack: 7,
                        flags: 0x18,
                        opts: 12,
                        payload: &body[..len],
                    }
                } else {
                    L4::Tcp {
                        sport: dport,
                        dport: sport,
                        seq,
                        ack: 7,
                        flags: 0x18,
                        opts: 12,
                        payload: &body[..len],
                    }
                };
                seq = seq.wrapping_add(len as u32);
                let p = match (v6, to_server) {
                    (false, true) => ipv4_packet(gw_mac, server_mac, c, WEB_SERVER, id, &l4),
                    (false, false) => ipv4_packet(server_mac, gw_mac, WEB_SERVER, c, id, &l4),
                    (true, true) => ipv6_packet(gw_mac, server_mac, c6, WEB_SERVER6, &l4),
                    (true, false) => ipv6_packet(server_mac, gw_mac, WEB_SERVER6, c6, &l4),
                };
                t += 5_000 + rng.below(50_000);
                push(out, t, p);
            }
            ts = t;
        }
    }
}

/// A random IPv4 address for `mixed`: some in 10.0.0.0/8, some 127.0.0.1.
fn mixed_v4(rng: &mut Rng) -> u32 {
    match rng.below(100) {
        0..=9 => ip4(
            10,
            rng.below(256) as u8,
            rng.below(256) as u8,
            rng.below(256) as u8,
        ),
        10..=12 => ip4(127, 0, 0, 1),
        13..=17 => ip4(192, 168, 2, rng.below(256) as u8),
        _ => rng.next_u64() as u32,
    }
}

/// A random IPv6 address for `mixed`: some in 2001:470::/28.
fn mixed_v6(rng: &mut Rng) -> [u8; 16] {
    let mut a = [0u8; 16];
    a[..8].copy_from_slice(&rng.next_u64().to_be_bytes());
    a[8..].copy_from_slice(&rng.next_u64().to_be_bytes());
    if rng.chance(10) {
        a[0] = 0x20;
        a[1] = 0x01;
        a[2] = 0x04;
        a[3] = 0x70 | (a[3] & 0x0f);
    }
    a
}

/// A random port for `mixed`: half below 2049 (the bpf-performance
/// pattern's ranges), some 22, the rest anywhere.
fn mixed_port(rng: &mut Rng) -> u16 {
    match rng.below(100) {
        0..=4 => 22,
        5..=49 => rng.below(2049) as u16,
        _ => rng.below(65536) as u16,
    }
}

fn gen_mixed(rng: &mut Rng, count: usize, out: &mut Vec<Packet>) {
    let mut ts = EPOCH * 1_000_000_000;
    let mut payload = Vec::with_capacity(1500);
    for i in 0..count {
        let (am, bm) = (mac_for(rng), mac_for(rng));
        payload.clear();
        let n = rng.below(1400) as usize;
        rng.fill(&mut payload, n);
        let (sport, dport) = (mixed_port(rng), mixed_port(rng));
        let l4 = if rng.chance(50) {
            L4::Tcp {
                sport,
                dport,
                seq: rng.next_u64() as u32,
                ack: rng.next_u64() as u32,
                flags: 0x18,
                opts: 4 * rng.below(4) as usize,
                payload: &payload,
            }
        } else {
            L4::Udp {
                sport,
                dport,
                payload: &payload,
            }
        };
        let p = if rng.chance(50) {
            ipv4_packet(am, bm, mixed_v4(rng), mixed_v4(rng), i as u16, &l4)
        } else {
            ipv6_packet(am, bm, mixed_v6(rng), mixed_v6(rng), &l4)
        };
        ts += 500 + rng.below(2_000);
        push(out, ts, p);
    }
}

/// One background packet for the `ftp` workload (random IPv4 TCP/UDP
/// between hosts that are not FTP servers).
fn ftp_background(rng: &mut Rng, id: u16, payload: &[u8]) -> Vec<u8> {
    let (am, bm) = (mac_for(rng), mac_for(rng));
    let src = ip4(203, 0, 113, rng.range(1, 254) as u8);
    let dst = ip4(
        rng.range(11, 223) as u8,
        rng.below(256) as u8,
        rng.below(256) as u8,
        rng.range(1, 254) as u8,
    );
    // A random slice of the filler, so payloads differ from packet to packet.
    let start = rng.below(payload.len() as u64) as usize;
    let payload = payload.get(start..).unwrap_or(&[]);
    let len = rng.below(payload.len() as u64 + 1) as usize;
    let (sport, dport) = (
        rng.range(1024, 65535) as u16,
        [80, 443, 53, 8080][rng.below(4) as usize],
    );
    let l4 = if rng.chance(70) {
        L4::Tcp {
            sport,
            dport,
            seq: id.into(),
            ack: 1,
            flags: 0x18,
            opts: 0,
            payload: &payload[..len],
        }
    } else {
        L4::Udp {
            sport,
            dport,
            payload: &payload[..len],
        }
    };
    ipv4_packet(am, bm, src, dst, id, &l4)
}

/// Shape of a passive-mode FTP trace ([`ftp_trace`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FtpOptions {
    /// FTP servers (at most 10: [`ftp_servers`]).
    pub servers: usize,
    /// Data connections per server (at most 20), all open until the end.
    pub conns_per_server: usize,
    /// Background packets per second (spread evenly, with jitter).
    pub background_pps: u64,
    /// A new data connection (PASV, 227 reply, data) every this many ns;
    /// servers take turns.
    pub conn_interval_ns: u64,
    /// From the `227` reply to the client's SYN on the data port (ns); the
    /// SYN-ACK and the client's ACK follow at the same spacing.
    pub syn_delay_ns: u64,
    /// Each open data connection carries one data segment every this many ns.
    pub data_interval_ns: u64,
    /// Trace time after the last connection opens.
    pub tail_ns: u64,
    /// Random seed (background traffic).
    pub seed: u64,
}

impl Default for FtpOptions {
    /// 10 servers × 20 connections, one every ms, 1 segment/ms each, 500
    /// kpps of background, 20 ms of tail: ≈ 0.22 s, ≈ 140k packets.
    fn default() -> Self {
        FtpOptions {
            servers: 10,
            conns_per_server: 20,
            background_pps: 500_000,
            conn_interval_ns: 1_000_000,
            syn_delay_ns: 50_000,
            data_interval_ns: 1_000_000,
            tail_ns: 20_000_000,
            seed: 1,
        }
    }
}

/// One passive-mode data connection of an FTP trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FtpConn {
    /// The server (IPv4, host order).
    pub server: u32,
    /// The data port the server announced in its `227` reply.
    pub port: u16,
    /// The client (IPv4, host order).
    pub client: u32,
    /// The client's port of the data connection.
    pub client_port: u16,
    /// Index in the trace of the packet carrying the `227` reply.
    pub reply_index: usize,
    /// Indices in the trace of the data connection's packets, in order.
    pub packets: Vec<usize>,
}

/// A generated FTP trace with what it contains.
#[derive(Clone, Debug)]
pub struct FtpTrace {
    /// The packets, in timestamp order.
    pub packets: Vec<Packet>,
    /// The data connections, in the order they open.
    pub conns: Vec<FtpConn>,
}

/// What a packet of the FTP trace is, while it is being built.
enum FtpEvent {
    Background,
    Pasv(usize),
    Reply(usize),
    Data(usize, u32),
}

/// Generates a passive-mode FTP trace: `servers` × `conns_per_server` data
/// connections opened one after another (servers take turns), each
/// negotiated on the client's control connection to port 21 (`PASV`, then
/// `227 Entering Passive Mode (h1,h2,h3,h4,p1,p2).`) and kept open to the
/// end, amid `background_pps` of unrelated traffic. Deterministic for
/// given options.
pub fn ftp_trace(o: &FtpOptions) -> FtpTrace {
    let mut rng = Rng::new(o.seed ^ 0xf7b_f7b);
    let all = ftp_servers();
    let servers = &all[..o.servers.min(all.len())];
    let per = o.conns_per_server.min(20);
    let n = servers.len() * per;
    let mut filler = Vec::new();
    rng.fill(&mut filler, 512);
    let client_mac = mac_for(&mut rng);
    let server_mac = mac_for(&mut rng);
    let lead = 1_000_000u64;
    let end = lead + n as u64 * o.conn_interval_ns + o.tail_ns;
    // (time, event), sorted by time (stable: insertion order breaks ties).
    let mut events: Vec<(u64, FtpEvent)> = Vec::new();
    let mut conns = Vec::with_capacity(n);
    for k in 0..n {
        let (i, j) = (k % servers.len(), k / servers.len());
        let (server, ref ports) = servers[i];
        let t = lead + k as u64 * o.conn_interval_ns;
        conns.push(FtpConn {
            server,
            port: ports[j],
            client: ip4(192, 0, 2, 10 + i as u8),
            client_port: 21_000 + k as u16,
            reply_index: 0,
            packets: Vec::new(),
        });
        events.push((t, FtpEvent::Pasv(k)));
        let reply = t + 50_000;
        events.push((reply, FtpEvent::Reply(k)));
        // SYN, SYN-ACK, ACK, then one data segment per interval.
        let mut d = reply + o.syn_delay_ns.max(1);
        for step in 0..3u32 {
            events.push((d, FtpEvent::Data(k, step)));
            d += o.syn_delay_ns.max(1);
        }
        let mut seg = 0u32;
        while d < end {
            events.push((d, FtpEvent::Data(k, 3 + seg)));
            seg += 1;
            d += o.data_interval_ns.max(1);
        }
    }
    if let Some(step) = 1_000_000_000u64.checked_div(o.background_pps) {
        let step = step.max(1);
        let mut t = 0;
        while t < end {
            events.push((t + rng.below(step / 2 + 1), FtpEvent::Background));
            t += step;
        }
    }
    events.sort_by_key(|e| e.0);
    let mut packets = Vec::with_capacity(events.len());
    let base = EPOCH * 1_000_000_000;
    let mut id: u16 = 0;
    for (t, ev) in events {
        id = id.wrapping_add(1);
        let p = match ev {
            FtpEvent::Background => ftp_background(&mut rng, id, &filler),
            FtpEvent::Pasv(k) | FtpEvent::Reply(k) => {
                if matches!(ev, FtpEvent::Reply(_)) {
                    conns[k].reply_index = packets.len();
                }
                let c = &conns[k];
                let cport = 20_000 + (k % servers.len()) as u16;
                if matches!(ev, FtpEvent::Pasv(_)) {
                    let l4 = L4::Tcp {
                        sport: cport,
                        dport: 21,
                        seq: 1 + 6 * k as u32,
                        ack: 1,
                        flags: 0x18,
                        opts: 0,
                        payload: b"PASV\r\n",
                    };
                    ipv4_packet(client_mac, server_mac, c.client, c.server, id, &l4)
                } else {
                    let h = c.server.to_be_bytes();
                    let reply = format!(
                        "227 Entering Passive Mode ({},{},{},{},{},{}).\r\n",
                        h[0],
                        h[1],
                        h[2],
                        h[3],
                        c.port >> 8,
                        c.port & 0xff
                    );
                    let l4 = L4::Tcp {
                        sport: 21,
                        dport: cport,
                        seq: 1,
                        ack: 7 + 6 * k as u32,
                        flags: 0x18,
                        opts: 0,
                        payload: reply.as_bytes(),
                    };
                    ipv4_packet(server_mac, client_mac, c.server, c.client, id, &l4)
                }
            }
            FtpEvent::Data(k, step) => {
                conns[k].packets.push(packets.len());
                let c = &conns[k];
                let (flags, to_server, payload): (u8, bool, &[u8]) = match step {
                    0 => (0x02, true, &[]),
                    1 => (0x12, false, &[]),
                    2 => (0x10, true, &[]),
                    _ => (0x18, false, &filler),
                };
                let seq = 1 + (step.saturating_sub(3)) * 512;
                if to_server {
                    let l4 = L4::Tcp {
                        sport: c.client_port,
                        dport: c.port,
                        seq: 0,
                        ack: 1,
                        flags,
                        opts: 0,
                        payload,
                    };
                    ipv4_packet(client_mac, server_mac, c.client, c.server, id, &l4)
                } else {
                    let l4 = L4::Tcp {
                        sport: c.port,
                        dport: c.client_port,
                        seq,
                        ack: 1,
                        flags,
                        opts: 0,
                        payload,
                    };
                    ipv4_packet(server_mac, client_mac, c.server, c.client, id, &l4)
                }
            }
        };
        push(&mut packets, base + t, p);
    }
    FtpTrace { packets, conns }
}

/// `generate(Kind::Ftp, count, seed)`: the default [`ftp_trace`] with its
/// background rate scaled so that the trace holds `count` packets (cut
/// short when the FTP packets alone are more).
fn gen_ftp(rng: &mut Rng, count: usize, out: &mut Vec<Packet>) {
    let mut o = FtpOptions {
        background_pps: 0,
        seed: rng.next_u64(),
        ..FtpOptions::default()
    };
    let ftp = ftp_trace(&o).packets.len();
    let secs = (1_000_000 + 200 * o.conn_interval_ns + o.tail_ns) as f64 / 1e9;
    o.background_pps = (count.saturating_sub(ftp) as f64 / secs).ceil() as u64;
    let mut t = ftp_trace(&o).packets;
    t.truncate(count);
    // Rounding may leave a few packets short: pad with background after the end.
    let mut ts = t.last().map_or(EPOCH * 1_000_000_000, |p| p.ts_ns);
    let mut id = 0u16;
    let mut filler = Vec::new();
    rng.fill(&mut filler, 512);
    while t.len() < count {
        ts += 2_000;
        id = id.wrapping_add(1);
        let p = ftp_background(rng, id, &filler);
        push(&mut t, ts, p);
    }
    *out = t;
}

/// Writes `packets` as a microsecond pcap file (Ethernet) to `w`.
pub fn write_pcap<W: Write>(w: W, packets: &[Packet]) -> io::Result<W> {
    let mut pw = PcapWriter::new(w, LINKTYPE_ETHERNET, GEN_SNAPLEN, TsPrecision::Micro)?;
    for p in packets {
        let secs = u32::try_from(p.ts_ns / 1_000_000_000).unwrap_or(u32::MAX);
        let usecs = ((p.ts_ns % 1_000_000_000) / 1_000) as u32;
        pw.write_raw(secs, usecs, p.wire_len, &p.data)?;
    }
    pw.into_inner()
}

/// Writes `packets` to a pcap file at `path`.
pub fn write_pcap_file(path: &Path, packets: &[Packet]) -> io::Result<()> {
    let f = std::fs::File::create(path)?;
    let mut w = write_pcap(BufWriter::with_capacity(1 << 20, f), packets)?;
    w.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rng_is_deterministic_and_bounded() {
        let (mut a, mut b) = (Rng::new(7), Rng::new(7));
        for _ in 0..1000 {
            assert_eq!(a.next_u64(), b.next_u64());
            assert!(a.below(10) < 10);
            b.below(10);
        }
        assert_eq!(a.below(0), 0);
        let r = a.range(5, 5);
        assert_eq!(r, 5);
    }

    #[test]
    fn ipv4_header_checksum_verifies() {
        let l4 = L4::Udp {
            sport: 1,
            dport: 2,
            payload: b"hi",
        };
        let p = ipv4_packet([0; 6], [1; 6], 1, 2, 3, &l4);
        assert_eq!(ipv4_checksum(&p[14..34]), 0);
        assert_eq!(u16::from_be_bytes([p[16], p[17]]) as usize, p.len() - 14);
    }

    #[test]
    fn ftp_servers_are_fixed_and_distinct() {
        let a = ftp_servers();
        assert_eq!(a, ftp_servers());
        assert_eq!(a.len(), 10);
        let mut all: Vec<u16> = a.iter().flat_map(|s| s.1.iter().copied()).collect();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), 200);
    }

    #[test]
    fn every_kind_makes_exactly_count_packets() {
        for &(_, k) in Kind::ALL {
            for n in [0, 1, 7, 300] {
                assert_eq!(generate(k, n, 1).len(), n, "{k}");
            }
        }
    }
}
