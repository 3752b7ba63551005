//! `port` and `portrange` (libpcap's `gen_port`, `gen_port6`, `gen_portop`,
//! `gen_portop6`, `gen_portrange*` and the port cases of `gen_scode` and
//! `gen_ncode`).
//!
//! Structure (1.10.3): the IPv6 test comes first, then IPv4; within each,
//! an unqualified port tries SCTP, then TCP, then UDP (sift: one test of
//! the protocol byte against the three, then the ports, with the same
//! outcomes; see `Lowerer::port_family`). IPv4 also requires
//! the first (or only) fragment and finds the transport header through the
//! variable header length; IPv6 only looks at the fixed header's next-header
//! byte and reads the ports right after the 40-byte header.

use super::link::Rel;
use super::{wlan_dir_words, Dir, Lowerer, Result};
use crate::pred::{CmpOp, Pred, Size, Value};
use sift_syntax::ast::{DirQual, ProtoQual, Qual};
use sift_syntax::names::{self, ethertype, ServiceProto};

/// IP protocol numbers of the transport protocols with ports.
const IPPROTO_TCP: u32 = 6;
const IPPROTO_UDP: u32 = 17;
const IPPROTO_SCTP: u32 = 132;

/// Which transport protocols a port primitive tests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PortProto {
    Tcp,
    Udp,
    Sctp,
    /// libpcap's `PROTO_UNDEF`: SCTP, TCP and UDP.
    Any,
}

impl PortProto {
    fn number(self) -> Option<u32> {
        match self {
            PortProto::Tcp => Some(IPPROTO_TCP),
            PortProto::Udp => Some(IPPROTO_UDP),
            PortProto::Sctp => Some(IPPROTO_SCTP),
            PortProto::Any => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            PortProto::Tcp => "tcp",
            PortProto::Udp => "udp",
            PortProto::Sctp => "sctp",
            PortProto::Any => "any",
        }
    }
}

/// The protocol selector of a numeric `port`/`portrange`: the qualifier
/// must be `tcp`, `udp`, `sctp` or absent (`what` is the keyword, for the
/// error message).
pub(crate) fn selector(cx: &Lowerer<'_>, proto: Option<ProtoQual>, what: &str) -> Result<PortProto> {
    match proto {
        None => Ok(PortProto::Any),
        Some(ProtoQual::Tcp) => Ok(PortProto::Tcp),
        Some(ProtoQual::Udp) => Ok(PortProto::Udp),
        Some(ProtoQual::Sctp) => Ok(PortProto::Sctp),
        Some(_) => cx.err(format!("illegal qualifier of '{what}'")),
    }
}

/// `pcap_nametoport`: the port of a service name (or a decimal number, as
/// `getaddrinfo` accepts it, truncated to 16 bits) and the protocols it is
/// known for.
fn name_to_port(name: &str) -> Option<(i64, PortProto)> {
    if !name.is_empty() && name.bytes().all(|b| b.is_ascii_digit()) {
        let v = name.bytes().fold(0u64, |acc, b| {
            acc.saturating_mul(10).saturating_add(u64::from(b - b'0'))
        });
        return Some((i64::from(v as u16), PortProto::Any));
    }
    names::service(name).map(|(port, p)| {
        let proto = match p {
            ServiceProto::Tcp => PortProto::Tcp,
            ServiceProto::Udp => PortProto::Udp,
            ServiceProto::Both => PortProto::Any,
        };
        (i64::from(port), proto)
    })
}

/// C `sscanf(s, "%d-%d")` returning both numbers when it converts two.
fn scan_range(s: &str) -> Option<(i64, i64)> {
    fn int(s: &[u8]) -> Option<(i64, &[u8])> {
        let mut i = 0;
        while i < s.len() && (s[i] as char).is_ascii_whitespace() {
            i += 1;
        }
        let neg = match s.get(i) {
            Some(b'-') => {
                i += 1;
                true
            }
            Some(b'+') => {
                i += 1;
                false
            }
            _ => false,
        };
        let start = i;
        let mut v: i64 = 0;
        while i < s.len() && s[i].is_ascii_digit() {
            v = v.saturating_mul(10).saturating_add(i64::from(s[i] - b'0'));
            i += 1;
        }
        if i == start {
            return None;
        }
        // %d stores into an int.
        let v = if neg { v.saturating_neg() } else { v };
        Some((i64::from(v as i32), &s[i..]))
    }
    let (a, rest) = int(s.as_bytes())?;
    let rest = rest.strip_prefix(b"-")?;
    let (b, _) = int(rest)?;
    Some((a, b))
}

/// `pcap_nametoportrange`: `N-M` numerically, else `name-name` split at
/// the first `-` (so names containing `-` are ambiguous).
fn name_to_portrange(name: &str) -> Option<(i64, i64, PortProto)> {
    if let Some((a, b)) = scan_range(name) {
        return Some((a, b, PortProto::Any));
    }
    let (first, second) = name.split_once('-')?;
    let (p1, proto1) = name_to_port(first)?;
    let (p2, proto2) = name_to_port(second)?;
    let proto = if proto1 == proto2 { proto2 } else { PortProto::Any };
    Some((p1, p2, proto))
}

/// Checks a named port's protocols against the qualifier (`udp port ssh`
/// is an error) and narrows `Any` to the qualifier.
fn check_named(
    cx: &Lowerer<'_>,
    qual: Option<ProtoQual>,
    real: PortProto,
    what: &str,
    name: &str,
) -> Result<PortProto> {
    let want = match qual {
        None => return Ok(real),
        Some(ProtoQual::Udp) => PortProto::Udp,
        Some(ProtoQual::Tcp) => PortProto::Tcp,
        Some(ProtoQual::Sctp) => PortProto::Sctp,
        Some(_) => return cx.err(format!("illegal qualifier of '{}'", what)),
    };
    if real != PortProto::Any && real != want {
        let noun = if what == "port" { "port" } else { "port in range" };
        return cx.err(format!("{noun} '{name}' is {}", real.name()));
    }
    Ok(want)
}

fn check_range(cx: &Lowerer<'_>, p: i64) -> Result<u32> {
    if p < 0 {
        return cx.err(format!("illegal port number {p} < 0"));
    }
    if p > 65535 {
        return cx.err(format!("illegal port number {p} > 65535"));
    }
    Ok(p as u32)
}

impl Lowerer<'_> {
    /// `port NAME` (`gen_scode`, `Q_PORT`).
    pub(crate) fn port_name(&mut self, q: &Qual, name: &str) -> Result<Pred> {
        selector(self, q.proto, "port")?;
        let Some((port, real)) = name_to_port(name) else {
            return self.name_err(name, format!("unknown port '{name}'"));
        };
        let sel = check_named(self, q.proto, real, "port", name)?;
        let port = check_range(self, port)?;
        self.port_pred(port, sel, Dir::of(q.dir))
    }

    /// `portrange NAME` (`gen_scode`, `Q_PORTRANGE`).
    pub(crate) fn portrange_name(&mut self, q: &Qual, name: &str) -> Result<Pred> {
        selector(self, q.proto, "portrange")?;
        let Some((p1, p2, real)) = name_to_portrange(name) else {
            return self.err(format!("unknown port in range '{name}'"));
        };
        let sel = check_named(self, q.proto, real, "portrange", name)?;
        let p1 = check_range(self, p1)?;
        let p2 = check_range(self, p2)?;
        self.portrange_pred(p1, p2, sel, Dir::of(q.dir))
    }

    /// `port N` for IPv6 then IPv4.
    pub(crate) fn port_pred(&self, port: u32, sel: PortProto, dir: Dir) -> Result<Pred> {
        let v4 = self.port_v4(sel, dir, &|cx, off| Ok(cx.cmp(Rel::TranIpv4, off, Size::Half, port)))?;
        let v6 = self.port_v6(sel, dir, &|cx, off| Ok(cx.cmp(Rel::TranIpv6, off, Size::Half, port)))?;
        Ok(v6.or(v4))
    }

    /// `port N1 or port N2 or ...` with the same qualifiers (`tcp port 21
    /// or tcp port 20`, `tcp port (21 or 20)`): the IPv6 test once, then
    /// the ports in order, then the IPv4 test once, then the ports in
    /// order; `None` where the link-type tests of IPv6 and IPv4 are not two
    /// equality tests of one value (the caller then lowers each port on its
    /// own).
    ///
    /// libpcap lowers each port on its own (IPv6, then IPv4, per port) and
    /// the two agree on every packet, truncated ones included. The IPv6 and
    /// IPv4 link-type tests load the same value and at most one holds, so
    /// after the first port the per-port form runs no load that the first
    /// port did not already run without aborting, except the ports' own,
    /// and it runs those in the same order as this form: for an IPv6
    /// packet the IPv6 ports of each port in turn (the IPv4 alternatives
    /// fail at their link-type test), for an IPv4 packet the IPv4 ones,
    /// for any other packet none. (The optimizer's rules of exclusive
    /// alternatives and of a common first test, `opt::factor`, make the
    /// same rewrite (compat.md row 34); done here, a list of ports lowers to a tree about a
    /// third of the size, and the optimizer has that much less to do:
    /// ftp200, 10 hosts with 20 `tcp port`s each, compiles in 0.26 ms
    /// instead of 0.34 (session 17).)
    pub(crate) fn port_list_pred(&self, ports: &[u32], sel: PortProto, dir: Dir) -> Result<Option<Pred>> {
        let (lt6, lt4) = (self.gen_linktype(ethertype::IPV6)?, self.gen_linktype(ethertype::IP)?);
        let exclusive = match (&lt6, &lt4) {
            (Pred::Test(a), Pred::Test(b)) => {
                a.op == CmpOp::Eq
                    && b.op == CmpOp::Eq
                    && a.lhs == b.lhs
                    && matches!((&a.rhs, &b.rhs), (Value::Const(x), Value::Const(y)) if x != y)
            }
            _ => false,
        };
        if !exclusive {
            return Ok(None);
        }
        // The ports' tests in order, as one flat `or`.
        let list = |rel: Rel| -> Result<Pred> {
            let mut alts = Vec::with_capacity(2 * ports.len());
            for &port in ports {
                match self.port_dirs(dir, &|cx, off| Ok(cx.cmp(rel, off, Size::Half, port)))? {
                    Pred::Or(v) => alts.extend(v),
                    p => alts.push(p),
                }
            }
            Ok(Pred::Or(alts))
        };
        let v4 = self.port_family(lt4, sel, 9, |lt, proto| {
            Ok(Pred::all([lt, proto, self.ipfrag(), list(Rel::TranIpv4)?]))
        })?;
        let v6 = self.port_family(lt6, sel, 6, |lt, head| Ok(Pred::all([lt, head, list(Rel::TranIpv6)?])))?;
        Ok(Some(v6.or(v4)))
    }

    /// `portrange A-B` for IPv6 then IPv4 (the bounds are swapped if
    /// reversed).
    pub(crate) fn portrange_pred(&self, p1: u32, p2: u32, sel: PortProto, dir: Dir) -> Result<Pred> {
        let (lo, hi) = if p1 > p2 { (p2, p1) } else { (p1, p2) };
        let range = |cx: &Lowerer<'_>, rel: Rel, off: u32| {
            cx.cmp_ge(rel, off, Size::Half, lo).and(cx.cmp_le(rel, off, Size::Half, hi))
        };
        let v4 = self.port_v4(sel, dir, &|cx, off| Ok(range(cx, Rel::TranIpv4, off)))?;
        let v6 = self.port_v6(sel, dir, &|cx, off| Ok(range(cx, Rel::TranIpv6, off)))?;
        Ok(v6.or(v4))
    }

    /// `gen_port`/`gen_portrange`: IPv4, then per transport protocol.
    pub(crate) fn port_v4(&self, sel: PortProto, dir: Dir, atom: &PortAtom<'_>) -> Result<Pred> {
        self.port_family(self.gen_linktype(ethertype::IP)?, sel, 9, |lt, proto| self.portop_v4(lt, proto, dir, atom))
    }

    /// The link-type test `lt`, then `portop` (the port test
    /// after the link-type test, given the test of the next-protocol byte
    /// at `proto_at`) for the protocol `sel` names, or for SCTP, TCP and
    /// UDP at once.
    ///
    /// libpcap 1.10.3 repeats the whole port test once per protocol
    /// (`ip proto 132 and ports or ip proto 6 and ports or ip proto 17 and
    /// ports`); sift tests the protocol byte against the three and then
    /// the ports once. The two agree on every packet, truncated ones
    /// included: the three protocol tests load the same byte, so they
    /// abort together, and at most one holds, after which the others fail
    /// without running anything (the optimizer's rule of exclusive
    /// alternatives with the same rest, `opt::factor`). The lowered tree
    /// is a third of the size, which is most of what unqualified ports
    /// cost to compile.
    fn port_family(
        &self,
        lt: Pred,
        sel: PortProto,
        proto_at: u32,
        portop: impl Fn(Pred, Pred) -> Result<Pred>,
    ) -> Result<Pred> {
        let proto = |p| self.cmp(Rel::LinkPl, proto_at, Size::Byte, p);
        match sel.number() {
            Some(p) => portop(lt, proto(p)),
            None => portop(lt, Pred::any([proto(IPPROTO_SCTP), proto(IPPROTO_TCP), proto(IPPROTO_UDP)])),
        }
    }

    /// `gen_portop`: after the link-type test `lt`, the protocol test
    /// `proto` (`ip proto P`), first fragment, then the port test(s).
    fn portop_v4(&self, lt: Pred, proto: Pred, dir: Dir, atom: &PortAtom<'_>) -> Result<Pred> {
        let frag = self.ipfrag();
        let ports = self.port_dirs(dir, atom)?;
        Ok(Pred::all([lt, proto, frag, ports]))
    }

    /// `gen_port6`/`gen_portrange6`.
    pub(crate) fn port_v6(&self, sel: PortProto, dir: Dir, atom: &PortAtom<'_>) -> Result<Pred> {
        self.port_family(self.gen_linktype(ethertype::IPV6)?, sel, 6, |lt, head| self.portop_v6(lt, head, dir, atom))
    }

    /// `gen_portop6`: after the link-type test `lt`, the next-header test
    /// `head` (`ip6[6] == P`, no extension headers), then the ports.
    fn portop_v6(&self, lt: Pred, head: Pred, dir: Dir, atom: &PortAtom<'_>) -> Result<Pred> {
        let ports = self.port_dirs(dir, atom)?;
        Ok(Pred::all([lt, head, ports]))
    }

    /// Source port at offset 0, destination at 2, combined per direction.
    fn port_dirs(&self, dir: Dir, atom: &PortAtom<'_>) -> Result<Pred> {
        match dir {
            Dir::Src => atom(self, 0),
            Dir::Dst => atom(self, 2),
            Dir::And => Ok(atom(self, 0)?.and(atom(self, 2)?)),
            Dir::Or => Ok(atom(self, 0)?.or(atom(self, 2)?)),
            Dir::Wlan(d) => self.err(not_for_ports(d)),
        }
    }

    /// `gen_ipfrag`: not a fragment other than the first
    /// (`not (ip[6:2] & 0x1fff != 0)`).
    pub(crate) fn ipfrag(&self) -> Pred {
        self.jset(Rel::LinkPl, 6, Size::Half, 0x1fff).not()
    }
}

/// The port test at an offset in the transport header.
pub(crate) type PortAtom<'a> = dyn Fn(&Lowerer<'_>, u32) -> Result<Pred> + 'a;

fn not_for_ports(d: DirQual) -> String {
    let (w, plural) = wlan_dir_words(d);
    if plural {
        format!("{w} are not valid qualifiers for ports")
    } else {
        format!("{w} is not a valid qualifier for ports")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sscanf_ranges() {
        assert_eq!(scan_range("80-90"), Some((80, 90)));
        assert_eq!(scan_range("80--90"), Some((80, -90)));
        assert_eq!(scan_range("1-2x"), Some((1, 2)));
        assert_eq!(scan_range("25-smtp"), None);
        assert_eq!(scan_range("smtp-25"), None);
        assert_eq!(scan_range("80"), None);
    }

    #[test]
    fn named_ranges() {
        assert_eq!(name_to_portrange("25-smtp"), Some((25, 25, PortProto::Any)));
        assert_eq!(name_to_portrange("ssh-smtp"), Some((22, 25, PortProto::Tcp)));
        assert_eq!(name_to_portrange("ssh-domain"), Some((22, 53, PortProto::Any)));
        assert_eq!(name_to_portrange("70000-smtp"), Some((4464, 25, PortProto::Any)));
        assert_eq!(name_to_portrange("ftp-data-ssh"), None);
        assert_eq!(name_to_portrange("0x19-smtp"), None);
    }
}
