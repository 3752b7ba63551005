//! Hand-coded Rust versions of the standard filters (Ethernet only): the
//! practical speed limit for an engine.
//!
//! Each one computes exactly the verdict of libpcap 1.10.3's unoptimized
//! program, truncated packets included: a load past the captured bytes on
//! the path the program would take rejects the packet. The code keeps the
//! program's order of loads wherever a load can fail (every `?` below is a
//! load that rejects when out of bounds), and otherwise takes shortcuts
//! (e.g. one test of the IP protocol instead of one per port).

use crate::engines::Runner;
use crate::filters::{standard_filters, swift6_hosts, FilterSpec};
use crate::gen::ftp_servers;
use std::sync::OnceLock;

const ETH_IP: u32 = 0x0800;
const ETH_IP6: u32 = 0x86dd;
const ETH_ARP: u32 = 0x0806;
const ETH_RARP: u32 = 0x8035;

const TCP: &[u8] = &[6];
/// `port`/`portrange` without a protocol: SCTP, TCP, UDP.
const ANY_L4: &[u8] = &[132, 6, 17];

#[inline(always)]
fn b(d: &[u8], o: usize) -> Option<u32> {
    d.get(o).map(|&v| u32::from(v))
}

#[inline(always)]
fn h(d: &[u8], o: usize) -> Option<u32> {
    let s = d.get(o..o.checked_add(2)?)?;
    Some(u32::from(u16::from_be_bytes([s[0], s[1]])))
}

#[inline(always)]
fn w(d: &[u8], o: usize) -> Option<u32> {
    let s = d.get(o..o.checked_add(4)?)?;
    Some(u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
}

/// `ldxb 4*([14]&0xf)`: the IPv4 header length.
#[inline(always)]
fn ihl(d: &[u8]) -> Option<usize> {
    Some(4 * (b(d, 14)? & 0xf) as usize)
}

/// Which ports a port primitive tests.
#[derive(Clone, Copy)]
enum Dir {
    Src,
    Either,
}

/// A port test: a chain of `port P1 or port P2 …` primitives, or a range.
trait Ports {
    /// Does the first primitive of the chain accept `v`?
    fn first(&self, v: u32) -> bool;
    /// Does any primitive accept `v`?
    fn any(&self, v: u32) -> bool;
}

struct One(u32);
impl Ports for One {
    #[inline(always)]
    fn first(&self, v: u32) -> bool {
        v == self.0
    }
    #[inline(always)]
    fn any(&self, v: u32) -> bool {
        v == self.0
    }
}

struct Range(u32, u32);
impl Ports for Range {
    #[inline(always)]
    fn first(&self, v: u32) -> bool {
        self.0 <= v && v <= self.1
    }
    #[inline(always)]
    fn any(&self, v: u32) -> bool {
        self.0 <= v && v <= self.1
    }
}

/// Is `v` in `set`? Without early exit, so the compiler can vectorize it
/// and the branch predictor has one branch to learn, not one per element.
#[inline(always)]
fn member(set: &[u32], v: u32) -> bool {
    set.iter().fold(false, |acc, &x| acc | (x == v))
}

/// A list of ports in expression order (`first` = the leftmost).
struct List(Vec<u32>);
impl Ports for List {
    #[inline(always)]
    fn first(&self, v: u32) -> bool {
        self.0.first() == Some(&v)
    }
    #[inline(always)]
    fn any(&self, v: u32) -> bool {
        member(&self.0, v)
    }
}

/// The direction test on already-located port fields. With `Either`,
/// the destination port is only loaded when the source port does not
/// satisfy the chain's first primitive (as libpcap's `or` short-circuits).
#[inline(always)]
fn dir_test<P: Ports>(
    dir: Dir,
    ports: &P,
    src: impl FnOnce() -> Option<u32>,
    dst: impl FnOnce() -> Option<u32>,
) -> Option<bool> {
    match dir {
        Dir::Src => Some(ports.any(src()?)),
        Dir::Either => {
            let sp = src()?;
            if ports.first(sp) {
                return Some(true);
            }
            let dp = dst()?;
            Some(ports.any(sp) || ports.any(dp))
        }
    }
}

/// `[proto] [dir] port …` / `portrange`: the IPv6 part (next header in
/// `protos`, ports at 54/56, no extension headers), then the IPv4 part
/// (protocol in `protos`, not a fragment, ports after the IHL).
#[inline(always)]
fn port_prim<P: Ports>(d: &[u8], protos: &[u8], dir: Dir, ports: &P) -> Option<bool> {
    let et = h(d, 12)?;
    if et == ETH_IP6 {
        let nh = b(d, 20)?;
        if !protos.iter().any(|&p| u32::from(p) == nh) {
            return Some(false);
        }
        return dir_test(dir, ports, || h(d, 54), || h(d, 56));
    }
    if et == ETH_IP {
        let p = b(d, 23)?;
        if !protos.iter().any(|&q| u32::from(q) == p) {
            return Some(false);
        }
        if h(d, 20)? & 0x1fff != 0 {
            return Some(false);
        }
        let x = ihl(d)?;
        return dir_test(dir, ports, || h(d, x + 14), || h(d, x + 16));
    }
    Some(false)
}

/// The `tcp`/`udp` abbreviations: IPv4 protocol, else IPv6 next header,
/// else a fragment header's next header.
#[inline(always)]
fn l4_abbrev(d: &[u8], proto: u32) -> Option<bool> {
    let et = h(d, 12)?;
    if et == ETH_IP && b(d, 23)? == proto {
        return Some(true);
    }
    if et != ETH_IP6 {
        return Some(false);
    }
    let nh = b(d, 20)?;
    if nh == proto {
        return Some(true);
    }
    if nh != 44 {
        return Some(false);
    }
    Some(b(d, 54)? == proto)
}

/// Offsets of the (source, destination) protocol addresses for IPv4, ARP
/// and RARP, the link types `host`/`net` look at.
#[inline(always)]
fn addr_offsets(et: u32) -> Option<(usize, usize)> {
    match et {
        ETH_IP => Some((26, 30)),
        ETH_ARP | ETH_RARP => Some((28, 38)),
        _ => None,
    }
}

/// `host A` / `net A/M` (src or dst; IPv4, ARP, RARP).
#[inline(always)]
fn host_net(d: &[u8], addr: u32, mask: u32) -> Option<bool> {
    let Some((s, t)) = addr_offsets(h(d, 12)?) else {
        return Some(false);
    };
    if w(d, s)? & mask == addr {
        return Some(true);
    }
    Some(w(d, t)? & mask == addr)
}

/// `src net A/M` / `src host A` (IPv4, ARP, RARP).
#[inline(always)]
fn src_net(d: &[u8], addr: u32, mask: u32) -> Option<bool> {
    let Some((s, _)) = addr_offsets(h(d, 12)?) else {
        return Some(false);
    };
    Some(w(d, s)? & mask == addr)
}

/// `dst net A/M` / `dst host A` (IPv4, ARP, RARP).
#[inline(always)]
fn dst_net(d: &[u8], addr: u32, mask: u32) -> Option<bool> {
    let Some((_, t)) = addr_offsets(h(d, 12)?) else {
        return Some(false);
    };
    Some(w(d, t)? & mask == addr)
}

/// `ip host (H1 or H2 …)` on a packet already known to be IPv4;
/// `sorted` holds the same addresses sorted, `first` is H1.
#[inline(always)]
fn ip_host_set(d: &[u8], first: u32, sorted: &[u32]) -> Option<bool> {
    let s = w(d, 26)?;
    if s == first {
        return Some(true);
    }
    let t = w(d, 30)?;
    Some(member(sorted, s) | member(sorted, t))
}

fn tcp_byte_20(d: &[u8]) -> Option<bool> {
    if h(d, 12)? != ETH_IP || !l4_abbrev(d, 6)? || h(d, 20)? & 0x1fff != 0 {
        return Some(false);
    }
    // The second comparison repeats the same loads, which succeeded.
    let v = b(d, ihl(d)? + 34)?;
    Some(v > 65 && v < 90)
}

fn bpfperf1(d: &[u8]) -> Option<bool> {
    if src_net(d, 0x0a00_0000, 0xff00_0000)? {
        return Some(true);
    }
    if dst_net(d, 0x7f00_0001, 0xffff_ffff)? && port_prim(d, ANY_L4, Dir::Either, &One(22))? {
        return Some(true);
    }
    if h(d, 12)? != ETH_IP6 || w(d, 22)? & 0xffff_fff0 != 0x2001_0470 {
        return Some(false);
    }
    // The /28 mask leaves the other three words unmasked to zero, but
    // libpcap still loads them.
    w(d, 26)?;
    w(d, 30)?;
    w(d, 34)?;
    Some(true)
}

fn bpfperf2(d: &[u8]) -> Option<bool> {
    if l4_abbrev(d, 6)? && port_prim(d, ANY_L4, Dir::Either, &Range(0, 1024))? {
        return Some(true);
    }
    Some(l4_abbrev(d, 17)? && port_prim(d, ANY_L4, Dir::Either, &Range(1025, 2048))?)
}

/// The 200-connection FTP filter.
struct Ftp200 {
    control: One,
    servers: Vec<(u32, List)>,
    hosts: Vec<u32>,
}

impl Ftp200 {
    fn new() -> Ftp200 {
        let servers = ftp_servers()
            .into_iter()
            .map(|(host, ports)| (host, List(ports.into_iter().map(u32::from).collect())))
            .collect();
        let mut hosts: Vec<u32> = ftp_servers().into_iter().map(|s| s.0).collect();
        hosts.sort_unstable();
        Ftp200 {
            control: One(21),
            servers,
            hosts,
        }
    }

    #[inline(always)]
    fn check(&self, d: &[u8]) -> Option<bool> {
        let et = h(d, 12)?;
        if et == ETH_IP && port_prim(d, TCP, Dir::Either, &self.control)? {
            return Some(true);
        }
        let Some((so, to)) = addr_offsets(et) else {
            return Some(false);
        };
        let Some((h0, p0)) = self.servers.first() else {
            return Some(false);
        };
        // `host X1` loads the source address and, unless it is X1 and the
        // first port set matches, the destination address.
        let s = w(d, so)?;
        if s == *h0 && port_prim(d, TCP, Dir::Either, p0)? {
            return Some(true);
        }
        let t = w(d, to)?;
        if !(member(&self.hosts, s) | member(&self.hosts, t)) {
            return Some(false);
        }
        for (host, ports) in &self.servers {
            if (s == *host || t == *host) && port_prim(d, TCP, Dir::Either, ports)? {
                return Some(true);
            }
        }
        Some(false)
    }
}

/// The Swift paper's sixth filter.
struct Swift6 {
    ports: List,
    first: u32,
    sorted: Vec<u32>,
}

impl Swift6 {
    fn new() -> Swift6 {
        let hosts = swift6_hosts();
        let first = hosts.first().copied().unwrap_or(0);
        let mut sorted = hosts;
        sorted.sort_unstable();
        Swift6 {
            ports: List(vec![80, 25, 143]),
            first,
            sorted,
        }
    }

    #[inline(always)]
    fn check(&self, d: &[u8]) -> Option<bool> {
        Some(
            h(d, 12)? == ETH_IP
                && !port_prim(d, TCP, Dir::Either, &self.ports)?
                && !ip_host_set(d, self.first, &self.sorted)?,
        )
    }
}

/// A hand-written filter: any closure from packet bytes to a verdict
/// (`None` = rejected by an out-of-bounds load).
struct Hand<F>(F);

impl<F: Fn(&[u8]) -> Option<bool>> Runner for Hand<F> {
    #[inline]
    fn matches(&self, data: &[u8], _wire_len: u32) -> bool {
        (self.0)(data).unwrap_or(false)
    }
}

fn boxed<F: Fn(&[u8]) -> Option<bool> + 'static>(f: F) -> Box<dyn Runner> {
    Box::new(Hand(f))
}

/// The hand-written filter for `spec`, if there is one: `spec` must be a
/// standard filter (same name and expression) and the link type Ethernet
/// (LINKTYPE 1).
pub fn lookup(spec: &FilterSpec, linktype: u32) -> Option<Box<dyn Runner>> {
    static STANDARD: OnceLock<Vec<FilterSpec>> = OnceLock::new();
    let standard = STANDARD.get_or_init(standard_filters);
    if linktype != 1
        || !standard
            .iter()
            .any(|s| s.name == spec.name && s.expr == spec.expr)
    {
        return None;
    }
    let r = match spec.name.as_str() {
        "accept-all" => boxed(|d| {
            std::hint::black_box(d);
            Some(true)
        }),
        "ip" => boxed(|d| Some(h(d, 12)? == ETH_IP)),
        "tcp" => boxed(|d| l4_abbrev(d, 6)),
        "icmp" => boxed(|d| Some(h(d, 12)? == ETH_IP && b(d, 23)? == 1)),
        "tcp-port-5555" => boxed(|d| port_prim(d, TCP, Dir::Either, &One(5555))),
        "portrange-0-6000" => boxed(|d| port_prim(d, ANY_L4, Dir::Either, &Range(0, 6000))),
        "portrange-0-5" => boxed(|d| port_prim(d, ANY_L4, Dir::Either, &Range(0, 5))),
        "tcp-src-port-80" => boxed(|d| port_prim(d, TCP, Dir::Src, &One(80))),
        "src-net-150" => boxed(|d| src_net(d, 0xb24f_9600, 0xffff_ff00)),
        "host-233" => boxed(|d| host_net(d, 0xb24f_96e9, 0xffff_ffff)),
        "host-234" => boxed(|d| host_net(d, 0xb24f_96ea, 0xffff_ffff)),
        "net-150" => boxed(|d| host_net(d, 0xb24f_9600, 0xffff_ff00)),
        "net-151" => boxed(|d| host_net(d, 0xb24f_9700, 0xffff_ff00)),
        "swift3" => boxed(|d| {
            Some(
                h(d, 12)? == ETH_IP
                    && w(d, 26)? & 0xffff_ff00 == 0xc0a8_0200
                    && w(d, 30)? & 0xff00_0000 == 0x0a00_0000,
            )
        }),
        "swift4" => boxed(|d| {
            if h(d, 12)? != ETH_IP {
                return Some(false);
            }
            Some(w(d, 26)? & 0xffff_ff00 == 0xc0a8_0200 || w(d, 30)? & 0xffff_ff00 == 0xc0a8_0200)
        }),
        "swift5" => {
            let ports = List(vec![22, 80, 143, 25, 110, 21]);
            boxed(move |d| Some(h(d, 12)? == ETH_IP && port_prim(d, TCP, Dir::Either, &ports)?))
        }
        "swift6" => {
            let f = Swift6::new();
            boxed(move |d| f.check(d))
        }
        "bpfperf1" => boxed(bpfperf1),
        "bpfperf2" => boxed(bpfperf2),
        "tcp-byte-20" => boxed(tcp_byte_20),
        "ftp200" => {
            let f = Ftp200::new();
            boxed(move |d| f.check(d))
        }
        _ => return None,
    };
    Some(r)
}

/// The names of the standard filters that have a hand-written version.
pub fn covered() -> Vec<String> {
    standard_filters()
        .into_iter()
        .filter(|s| lookup(s, 1).is_some())
        .map(|s| s.name)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gen::{generate, Kind, Rng};

    /// Packets that exercise truncation and odd headers: every workload
    /// kind, cut at random lengths, with random bytes flipped in the
    /// headers (IHL, protocol, EtherType, fragment fields, addresses).
    fn torture_packets() -> Vec<Vec<u8>> {
        let mut rng = Rng::new(99);
        let mut out = Vec::new();
        for &(_, k) in Kind::ALL {
            for p in generate(k, 2000, 3) {
                out.push(p.data.clone());
                for _ in 0..4 {
                    let mut q = p.data.clone();
                    let flips = rng.below(4);
                    for _ in 0..flips {
                        let i = rng.below(q.len().min(80) as u64) as usize;
                        if let Some(byte) = q.get_mut(i) {
                            *byte = match rng.below(4) {
                                0 => rng.next_u64() as u8,
                                1 => 0,
                                2 => 0x2c,
                                _ => *byte ^ 0x0f,
                            };
                        }
                    }
                    let cut = rng.below(q.len() as u64 + 1) as usize;
                    if rng.chance(60) {
                        q.truncate(cut);
                    }
                    out.push(q);
                }
            }
        }
        // Every short length of a few packets.
        for k in [Kind::Web, Kind::Mixed, Kind::Ftp] {
            for p in generate(k, 30, 5) {
                for n in 0..p.data.len().min(80) {
                    out.push(p.data[..n].to_vec());
                }
            }
        }
        out
    }

    #[test]
    fn every_standard_filter_has_a_handwritten_version() {
        assert_eq!(covered().len(), standard_filters().len());
    }

    #[test]
    fn handwritten_verdicts_equal_the_interpreter() {
        let packets = torture_packets();
        for spec in standard_filters() {
            let hand = lookup(&spec, 1).expect("handwritten");
            let f = sift::Filter::with_engine(
                &spec.expr,
                &sift::CompileOptions::default(),
                sift::Engine::Interp,
            )
            .expect("compiles");
            // libpcap's own unoptimized program, when installed, as a
            // second oracle.
            let pcap = crate::libpcap::Libpcap::get().map(|l| {
                l.compile(&spec.expr, 1, 262_144, false)
                    .expect("libpcap compiles")
                    .0
            });
            let mut matched = 0;
            for (i, p) in packets.iter().enumerate() {
                let want = f.matches(p, p.len() as u32);
                if let Some(l) = &pcap {
                    assert_eq!(
                        l.matches(p, p.len() as u32),
                        want,
                        "{}: libpcap vs interp, packet {i}",
                        spec.name
                    );
                }
                matched += usize::from(want);
                assert_eq!(
                    hand.matches(p, p.len() as u32),
                    want,
                    "{} packet {i}: {:02x?}",
                    spec.name,
                    p
                );
            }
            // A filter that never matches tests little; the standard set
            // has two that must not match anything here.
            if !matches!(spec.name.as_str(), "host-234" | "net-151" | "portrange-0-5") {
                assert!(matched > 0, "{} matched nothing", spec.name);
            }
        }
    }

    #[test]
    fn not_standard_or_not_ethernet_has_none() {
        let mut s = standard_filters().remove(1);
        assert!(lookup(&s, 1).is_some());
        assert!(lookup(&s, 113).is_none());
        s.expr = "ip6".into();
        assert!(lookup(&s, 1).is_none());
    }
}
