//! Hosts and networks: `host`/`net` with IPv4 (dotted, partial, prefix,
//! mask, single numbers), IPv6 and MAC addresses and names; `broadcast` and
//! `multicast`. Mirrors libpcap's `gen_host`, `gen_hostop`, `gen_host6`,
//! `gen_hostop6`, `gen_ehostop`, `gen_broadcast`, `gen_multicast` and the
//! address cases of `gen_scode`/`gen_ncode`/`gen_mcode`/`gen_mcode6`/
//! `gen_ecode`.
//!
//! Host names resolve through the system resolver (`getaddrinfo`, through
//! std), network names through `/etc/networks` and Ethernet host names
//! through `/etc/ethers`, as libpcap does on Linux, or through the tables
//! of [`LowerOptions::names`](super::LowerOptions::names) (see
//! `sift_syntax::resolver`). `gateway NAME` (`gen_gateway`) needs both an
//! Ethernet address and IPv4 addresses for the name.

use super::link::{LinkKind, Rel};
use super::{wlan_dir_words, Dir, Lowerer, Result};
use crate::pred::{Pred, Size};
use sift_syntax::ast::{AddrQual, ProtoQual, Qual};
use sift_syntax::names::ethertype;
use sift_syntax::resolver;
use std::net::IpAddr;

impl Lowerer<'_> {
    /// `gen_host`: an IPv4 address or network under a protocol qualifier.
    pub(crate) fn host_v4(
        &self,
        addr: u32,
        mask: u32,
        proto: Option<ProtoQual>,
        dir: Dir,
        is_net: bool,
    ) -> Result<Pred> {
        let what = if is_net { "net" } else { "host" };
        match proto {
            None => {
                // Inside an MPLS label stack only IPv4 can be tested (as
                // libpcap, which skips ARP and RARP there).
                if self.link.mpls_depth > 0 {
                    return self.host_v4(addr, mask, Some(ProtoQual::Ip), dir, is_net);
                }
                // `ip or arp or rarp`, flattened as `or` does, in one vector.
                let per_proto = if dir == Dir::Or { 2 } else { 1 };
                let mut v = Vec::with_capacity(3 * per_proto);
                for family in [HOST_IP, HOST_ARP, HOST_RARP] {
                    self.hostop_or_operands(&mut v, addr, mask, dir, family)?;
                }
                Ok(Pred::Or(v))
            }
            Some(ProtoQual::Link) => self.err(format!("link-layer modifier applied to {what}")),
            Some(ProtoQual::Ip) => self.hostop(addr, mask, dir, HOST_IP),
            Some(ProtoQual::Rarp) => self.hostop(addr, mask, dir, HOST_RARP),
            Some(ProtoQual::Arp) => self.hostop(addr, mask, dir, HOST_ARP),
            // Only IPv4 prefixes and masks get here (DECnet addresses and
            // numbers are handled before): master rejects them, 1.10.3
            // compared the low 16 bits as a DECnet address.
            Some(ProtoQual::Decnet) => self.err(format!("'decnet' is not a valid qualifier for '{what}'")),
            Some(ProtoQual::Atalk) => self.err("AppleTalk host filtering not implemented"),
            Some(ProtoQual::Lat) => self.err("LAT host filtering not implemented"),
            Some(ProtoQual::Sca) => self.err("SCA host filtering not implemented"),
            Some(ProtoQual::Moprc) => self.err("MOPRC host filtering not implemented"),
            Some(ProtoQual::Mopdl) => self.err("MOPDL host filtering not implemented"),
            Some(ProtoQual::Aarp) => self.err("AARP host filtering not implemented"),
            Some(ProtoQual::Iso) => self.err("ISO host filtering not implemented"),
            Some(ProtoQual::Ipx) => self.err("IPX host filtering not implemented"),
            Some(ProtoQual::Ip6) => self.err("'ip6' modifier applied to ip host"),
            Some(p) => self.err(format!("'{}' modifier applied to {what}", super::proto_name(p))),
        }
    }

    /// `gen_hostop`: the link-type test, then the (masked) 32-bit address at
    /// the family's source or destination offset in the network layer.
    fn hostop(&self, addr: u32, mask: u32, dir: Dir, family: HostFamily) -> Result<Pred> {
        let one = |off: u32| self.hostop_one(addr, mask, family.ll_proto, off);
        match dir {
            Dir::Src => one(family.src_off),
            Dir::Dst => one(family.dst_off),
            Dir::And => Ok(one(family.src_off)?.and(one(family.dst_off)?)),
            Dir::Or => Ok(one(family.src_off)?.or(one(family.dst_off)?)),
            Dir::Wlan(d) => self.err(not_for_addresses(d)),
        }
    }

    /// [`hostop`](Self::hostop) as the operands it adds to a disjunction
    /// (`x or hostop(...)`), pushed to `out`.
    fn hostop_or_operands(&self, out: &mut Vec<Pred>, addr: u32, mask: u32, dir: Dir, family: HostFamily) -> Result<()> {
        match dir {
            Dir::Or => {
                out.push(self.hostop_one(addr, mask, family.ll_proto, family.src_off)?);
                out.push(self.hostop_one(addr, mask, family.ll_proto, family.dst_off)?);
            }
            _ => out.push(self.hostop(addr, mask, dir, family)?),
        }
        Ok(())
    }

    /// One direction of `gen_hostop`.
    fn hostop_one(&self, addr: u32, mask: u32, ll_proto: u32, off: u32) -> Result<Pred> {
        Ok(self.gen_linktype(ll_proto)?.and(self.mcmp(Rel::LinkPl, off, Size::Word, addr, mask)))
    }

    /// `gen_host6`: an IPv6 address or network under a protocol qualifier.
    pub(crate) fn host_v6(
        &self,
        addr: &[u8; 16],
        mask: &[u8; 16],
        proto: Option<ProtoQual>,
        dir: Dir,
        is_net: bool,
    ) -> Result<Pred> {
        let what = if is_net { "net" } else { "host" };
        match proto {
            None | Some(ProtoQual::Ip6) => self.hostop6(addr, mask, dir),
            Some(ProtoQual::Link) => self.err(format!("link-layer modifier applied to ip6 {what}")),
            Some(ProtoQual::Atalk) => self.err(format!("AppleTalk modifier applied to ip6 {what}")),
            Some(p) => {
                self.err(format!("'{}' modifier applied to ip6 {what}", super::proto_name(p)))
            }
        }
    }

    /// `gen_hostop6`: the link-type test, then the four (masked) words of
    /// the address, first to last.
    fn hostop6(&self, addr: &[u8; 16], mask: &[u8; 16], dir: Dir) -> Result<Pred> {
        let word = |b: &[u8; 16], i: usize| {
            u32::from_be_bytes([b[4 * i], b[4 * i + 1], b[4 * i + 2], b[4 * i + 3]])
        };
        let one = |off: u32| -> Result<Pred> {
            let w = |i: usize| {
                let at = off + 4 * i as u32;
                self.mcmp(Rel::LinkPl, at, Size::Word, word(addr, i), word(mask, i))
            };
            Ok(Pred::all([self.gen_linktype(ethertype::IPV6)?, w(0), w(1), w(2), w(3)]))
        };
        match dir {
            Dir::Src => one(8),
            Dir::Dst => one(24),
            Dir::And => Ok(one(8)?.and(one(24)?)),
            Dir::Or => Ok(one(8)?.or(one(24)?)),
            Dir::Wlan(d) => self.err(not_for_addresses(d)),
        }
    }

    /// `gen_ehostop`: a MAC-48 address in the Ethernet header.
    fn ehostop(&self, mac: &[u8; 6], dir: Dir) -> Result<Pred> {
        self.mac_hostop(mac, dir)
    }

    /// A MAC address in the link-layer header (`gen_ecode`).
    fn link_host(&self, mac: &[u8; 6], dir: Dir) -> Result<Pred> {
        let h = self.mac_hostop(mac, dir)?;
        Ok(self.after_lane_check(h))
    }

    /// A dotted IPv4 address with 1 to 4 parts (`gen_ncode` with a string):
    /// the written parts give the mask, even for `host`.
    pub(crate) fn id_ipv4(&mut self, q: &Qual, addr: u32, parts: u8) -> Result<Pred> {
        let dir = Dir::of(q.dir);
        if q.proto == Some(ProtoQual::Decnet) {
            return self.unsupported("'decnet' host addresses are");
        }
        let (v, mask) = hid_value(addr, parts);
        match q.addr {
            None | Some(AddrQual::Host) | Some(AddrQual::Net) => {
                if q.proto == Some(ProtoQual::Link) {
                    return self.err("illegal link layer address");
                }
                self.host_v4(v, mask, q.proto, dir, q.addr == Some(AddrQual::Net))
            }
            Some(AddrQual::Gateway) => self.err("'gateway' requires a name"),
            Some(AddrQual::Port) => self.err("'port' modifier applied to ip host"),
            Some(AddrQual::Portrange) => self.err("'portrange' modifier applied to ip host"),
            Some(AddrQual::Proto) => self.err("'proto' modifier applied to ip host"),
            Some(AddrQual::Protochain) => self.err("'protochain' modifier applied to ip host"),
        }
    }

    /// `HID/len` (`gen_mcode` with a prefix length).
    pub(crate) fn id_ipv4_prefix(&mut self, q: &Qual, addr: u32, parts: u8, len: u32) -> Result<Pred> {
        let (n, _) = hid_value(addr, parts);
        if len > 32 {
            return self.err("mask length must be <= 32");
        }
        let m = if len == 0 { 0 } else { 0xffff_ffffu32 << (32 - len) };
        if n & !m != 0 {
            return self.err(format!("non-network bits set in \"{}/{len}\"", dotted(n)));
        }
        self.masked_net(q, n, m)
    }

    /// `HID mask HID` (`gen_mcode` with a mask).
    pub(crate) fn id_ipv4_mask(&mut self, q: &Qual, addr: u32, mask: u32) -> Result<Pred> {
        if addr & !mask != 0 {
            return self.err(format!(
                "non-network bits set in \"{} mask {}\"",
                dotted(addr),
                dotted(mask)
            ));
        }
        self.masked_net(q, addr, mask)
    }

    fn masked_net(&mut self, q: &Qual, n: u32, m: u32) -> Result<Pred> {
        match q.addr {
            Some(AddrQual::Net) => self.host_v4(n, m, q.proto, Dir::of(q.dir), true),
            _ => self.err("Mask syntax for networks only"),
        }
    }

    /// An IPv6 address, optionally with a prefix length (`gen_mcode6`).
    pub(crate) fn id_ipv6(&mut self, q: &Qual, addr: &[u8; 16], len: Option<u32>) -> Result<Pred> {
        let len = len.unwrap_or(128);
        if len > 128 {
            return self.err("mask length must be <= 128");
        }
        let mut mask = [0u8; 16];
        for (i, b) in mask.iter_mut().enumerate() {
            let bits = len.saturating_sub(8 * i as u32).min(8);
            *b = if bits == 0 { 0 } else { (0xffu32 << (8 - bits)) as u8 };
        }
        if addr.iter().zip(mask.iter()).any(|(a, m)| a & !m != 0) {
            return self.err(format!(
                "non-network bits set in \"{}/{len}\"",
                std::net::Ipv6Addr::from(*addr)
            ));
        }
        match q.addr {
            None | Some(AddrQual::Host) | Some(AddrQual::Net) => {
                if q.addr != Some(AddrQual::Net) && len != 128 {
                    return self.err("Mask syntax for networks only");
                }
                self.host_v6(addr, &mask, q.proto, Dir::of(q.dir), q.addr == Some(AddrQual::Net))
            }
            _ => self.err("invalid qualifier against IPv6 address"),
        }
    }

    /// A MAC-48 address (`gen_ecode`): only as `ether host`/`ether src`...
    pub(crate) fn id_mac(&mut self, q: &Qual, mac: &[u8; 6]) -> Result<Pred> {
        if matches!(q.addr, None | Some(AddrQual::Host)) && q.proto == Some(ProtoQual::Link) {
            return self.link_host(mac, Dir::of(q.dir));
        }
        self.err("ethernet address used in non-ether expression")
    }

    /// A name as a host (`gen_scode`, `Q_HOST`): an Ethernet host name with
    /// `ether`, else every address the resolver returns, OR-ed in its order.
    pub(crate) fn host_name(&mut self, q: &Qual, name: &str) -> Result<Pred> {
        let dir = Dir::of(q.dir);
        if q.proto == Some(ProtoQual::Link) {
            if !has_mac_addresses(self.link.kind) {
                return self.err("only ethernet/FDDI/token ring/802.11/ATM LANE/Fibre Channel supports link-level host name");
            }
            let Some(mac) = resolver::ether_host(self.opts.names, name) else {
                return self.name_err(name, format!("unknown ether host '{name}'"));
            };
            return self.link_host(&mac, dir);
        }
        if q.proto == Some(ProtoQual::Decnet) {
            return self.unsupported("'decnet' host names are");
        }
        let addrs = resolver::host_addrs(self.opts.names, name);
        if addrs.is_empty() {
            return self.name_err(name, format!("unknown host '{name}'"));
        }
        // Without a link-layer type field, a bare host name means IPv4/IPv6.
        let (mut v4proto, mut v6proto) = (q.proto, q.proto);
        if self.link.off_linktype.is_none() && q.proto.is_none() {
            v4proto = Some(ProtoQual::Ip);
            v6proto = Some(ProtoQual::Ip6);
        }
        let is_net = q.addr == Some(AddrQual::Net);
        let mut acc: Option<Pred> = None;
        for a in addrs {
            let p = match a {
                IpAddr::V4(v4) => {
                    if v4proto == Some(ProtoQual::Ip6) {
                        continue;
                    }
                    self.host_v4(u32::from(v4), 0xffff_ffff, v4proto, dir, is_net)?
                }
                IpAddr::V6(v6) => {
                    // As master (1.10.3 skips them for `ip` only, and says
                    // "'arp' modifier applied to ip6 host" for ARP/RARP).
                    if matches!(v6proto, Some(ProtoQual::Ip | ProtoQual::Arp | ProtoQual::Rarp)) {
                        continue;
                    }
                    self.host_v6(&v6.octets(), &[0xff; 16], v6proto, dir, is_net)?
                }
            };
            acc = Some(match acc {
                Some(a) => a.or(p),
                None => p,
            });
        }
        match acc {
            Some(p) => Ok(p),
            None if q.proto.is_none() => self.name_err(name, format!("unknown host '{name}'")),
            None => self.name_err(name, format!("unknown host '{name}' for specified address family")),
        }
    }

    /// A name as a network (`gen_scode`, `Q_NET`): `/etc/networks`, the
    /// number left-justified with a matching mask.
    pub(crate) fn net_name(&mut self, q: &Qual, name: &str) -> Result<Pred> {
        let addr = resolver::network(self.opts.names, name).unwrap_or(0);
        if addr == 0 {
            return self.name_err(name, format!("unknown network '{name}'"));
        }
        let (mut addr, mut mask) = (addr, 0xffff_ffffu32);
        while addr != 0 && addr & 0xff00_0000 == 0 {
            addr <<= 8;
            mask <<= 8;
        }
        self.host_v4(addr, mask, q.proto, Dir::of(q.dir), true)
    }

    /// `[proto] gateway NAME` (libpcap master's `gen_scode` `Q_GATEWAY` and
    /// `gen_gateway`, with its order of checks): packets whose link-layer
    /// source or destination is NAME's Ethernet address (ethers), and that
    /// are IPv4, ARP or RARP (or only the protocol given) with neither
    /// source nor destination among NAME's IPv4 addresses (hosts): the
    /// packets NAME forwards. NAME's IPv6 addresses are ignored.
    ///
    /// 1.10.3 (built with IPv6 support, as everywhere) rejects every
    /// `gateway` ("'gateway' not supported in this configuration"); its
    /// older form, `ether host MAC and not host NAME`, also accepted IPv6
    /// and other non-IPv4 frames. sift follows master, whose form this is:
    /// per protocol, `proto and not (src A or dst A or src B ...)`, OR-ed.
    pub(crate) fn gateway(&mut self, q: &Qual, name: &str) -> Result<Pred> {
        if q.dir.is_some() {
            return self.err("'gateway' takes no direction qualifier");
        }
        let protos: &[(u32, u32, u32)] = match q.proto {
            None => &[(ethertype::IP, 12, 16), (ethertype::ARP, 14, 24), (ethertype::REVARP, 14, 24)],
            Some(ProtoQual::Ip) => &[(ethertype::IP, 12, 16)],
            Some(ProtoQual::Arp) => &[(ethertype::ARP, 14, 24)],
            Some(ProtoQual::Rarp) => &[(ethertype::REVARP, 14, 24)],
            Some(p) => {
                return self.err(format!("'{}' is not a valid qualifier for 'gateway'", super::proto_name(p)))
            }
        };
        // The link layer must have Ethernet-like host addresses.
        if self.link_host(&[0; 6], Dir::Or).is_err() {
            let dlt = self.opts.linktype.name().map_or_else(|| self.opts.linktype.to_string(), |n| format!("DLT_{n}"));
            return self.err(format!("'gateway' not supported on {dlt}"));
        }
        if self.link.mpls_depth > 0 {
            return self.err("'gateway' cannot be used within MPLS");
        }
        if self.in_tunnel() {
            return self.err("'gateway' cannot be used within VXLAN or Geneve");
        }
        let Some(mac) = resolver::ether_host(self.opts.names, name) else {
            return self.name_err(name, format!("unknown Ethernet-like host '{name}'"));
        };
        let v4: Vec<u32> = resolver::host_addrs(self.opts.names, name)
            .into_iter()
            .filter_map(|a| match a {
                IpAddr::V4(v4) => Some(u32::from(v4)),
                IpAddr::V6(_) => None,
            })
            .collect();
        if v4.is_empty() {
            return self.name_err(name, format!("unknown host '{name}'"));
        }
        let mut acc = self.link_host(&mac, Dir::Or)?;
        let mut forwarded: Option<Pred> = None;
        for &(ll_proto, src, dst) in protos {
            let mut listed: Option<Pred> = None;
            for &a in &v4 {
                let p = self
                    .mcmp(Rel::LinkPl, src, Size::Word, a, 0xffff_ffff)
                    .or(self.mcmp(Rel::LinkPl, dst, Size::Word, a, 0xffff_ffff));
                listed = Some(match listed {
                    Some(l) => l.or(p),
                    None => p,
                });
            }
            let p = self.gen_linktype(ll_proto)?.and(listed.unwrap_or(Pred::False).not());
            forwarded = Some(match forwarded {
                Some(f) => f.or(p),
                None => p,
            });
        }
        if let Some(f) = forwarded {
            acc = acc.and(f);
        }
        Ok(acc)
    }

    /// `[proto] broadcast` (`gen_broadcast`).
    pub(crate) fn broadcast(&mut self, proto: Option<ProtoQual>) -> Result<Pred> {
        match proto {
            None | Some(ProtoQual::Link) => match self.link.kind {
                LinkKind::Ethernet => Ok(self.after_lane_check(self.ehostop(&[0xff; 6], Dir::Dst)?)),
                k if has_mac_addresses(k) => self.mac_broadcast(),
                _ => match self.other_broadcast() {
                    Some(b) => b,
                    None => self.err("not a broadcast link"),
                },
            },
            Some(ProtoQual::Ip) => {
                // libpcap's PCAP_NETMASK_UNKNOWN is 0xffffffff: that value
                // means "unknown" there too.
                let netmask = match self.opts.netmask {
                    Some(m) if m != 0xffff_ffff => m,
                    _ => return self.err("netmask not known, so 'ip broadcast' not supported"),
                };
                let hostmask = !netmask;
                let lt = self.gen_linktype(ethertype::IP)?;
                let zero = self.mcmp(Rel::LinkPl, 16, Size::Word, 0, hostmask);
                let ones = self.mcmp(Rel::LinkPl, 16, Size::Word, hostmask, hostmask);
                Ok(lt.and(zero.or(ones)))
            }
            Some(_) => self.err("only link-layer/IP broadcast filters supported"),
        }
    }

    /// `[proto] multicast` (`gen_multicast`). 1.10.3 tests `ip[16] >= 224`
    /// for IPv4 (which also accepts 240.0.0.0/4).
    pub(crate) fn multicast(&mut self, proto: Option<ProtoQual>) -> Result<Pred> {
        match proto {
            None | Some(ProtoQual::Link) => {
                if let Some(p) = self.mac_multicast() {
                    return Ok(self.after_lane_check(p));
                }
                // ARCnet multicasts all go to the broadcast address.
                if self.is_arcnet() {
                    return self.arcnet_host(0, Dir::Dst);
                }
            }
            Some(ProtoQual::Ip) => {
                let lt = self.gen_linktype(ethertype::IP)?;
                if self.is_dsa() {
                    // Master-only link types: master's 224.0.0.0/4.
                    return Ok(lt.and(self.mcmp(Rel::LinkPl, 16, Size::Byte, 0xe0, 0xf0)));
                }
                return Ok(lt.and(self.cmp_ge(Rel::LinkPl, 16, Size::Byte, 224)));
            }
            Some(ProtoQual::Ip6) => {
                let lt = self.gen_linktype(ethertype::IPV6)?;
                return Ok(lt.and(self.cmp(Rel::LinkPl, 24, Size::Byte, 255)));
            }
            Some(_) => {}
        }
        self.err("link-layer multicast filters supported only on ethernet/FDDI/token ring/ARCNET/802.11/ATM LANE/Fibre Channel")
    }
}

/// Link types with MAC-48 addresses in their link-layer header.
fn has_mac_addresses(kind: LinkKind) -> bool {
    matches!(
        kind,
        LinkKind::Ethernet | LinkKind::Fddi | LinkKind::TokenRing | LinkKind::IpOverFc | LinkKind::Ieee80211
    )
}

/// The message for an 802.11 direction qualifier on a host address.
fn not_for_addresses(d: sift_syntax::ast::DirQual) -> String {
    let (w, plural) = wlan_dir_words(d);
    if plural {
        format!("{w} are not valid qualifiers for addresses other than 802.11 MAC addresses")
    } else {
        format!("{w} is not a valid qualifier for addresses other than 802.11 MAC addresses")
    }
}

/// The value and mask of a dotted IPv4 address with `parts` parts: the
/// parser has already moved the parts to the top of the address (`10.1` is
/// 0x0a010000), as libpcap's generators do with `__pcap_atoin`'s result;
/// only the written bytes are compared.
pub(crate) fn hid_value(addr: u32, parts: u8) -> (u32, u32) {
    let parts = u32::from(parts.clamp(1, 4));
    let mask = 0xffff_ffffu32.checked_shl(32 - 8 * parts).unwrap_or(0);
    (addr, mask)
}

/// Formats an IPv4 address in dotted quad for messages.
fn dotted(v: u32) -> String {
    std::net::Ipv4Addr::from(v).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hid_values() {
        assert_eq!(hid_value(0x0a01_0000, 2), (0x0a01_0000, 0xffff_0000));
        assert_eq!(hid_value(0x0a01_0203, 4), (0x0a01_0203, 0xffff_ffff));
        assert_eq!(hid_value(0xc0a8_0100, 3), (0xc0a8_0100, 0xffff_ff00));
    }
}

/// Where an IPv4 address sits for one link-layer protocol (`gen_hostop`'s
/// arguments besides the address).
#[derive(Clone, Copy)]
struct HostFamily {
    /// The link-layer protocol (ethertype) tested first.
    ll_proto: u32,
    /// Offset of the source address in the network layer.
    src_off: u32,
    /// Offset of the destination address in the network layer.
    dst_off: u32,
}

/// IPv4: addresses at 12 and 16.
const HOST_IP: HostFamily = HostFamily { ll_proto: ethertype::IP, src_off: 12, dst_off: 16 };
/// ARP: sender and target protocol addresses at 14 and 24.
const HOST_ARP: HostFamily = HostFamily { ll_proto: ethertype::ARP, src_off: 14, dst_off: 24 };
/// RARP: as ARP.
const HOST_RARP: HostFamily = HostFamily { ll_proto: ethertype::REVARP, src_off: 14, dst_off: 24 };
