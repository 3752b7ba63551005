//! UDP tunnels: `geneve [vni]` (libpcap 1.10.3 and master) and
//! `vxlan [vni]` (libpcap master only), as master's `gen_geneve`,
//! `gen_geneve_check`, `gen_geneve_offsets`, `gen_vxlan`,
//! `gen_vxlan_check` and `gen_vxlan_offsets`.
//!
//! # The test
//!
//! `geneve`: UDP destination port 6081 over IPv4 (first fragment), Geneve
//! version 0 (`udp[8] & 0xc0 == 0`), with a VNI the 24 bits of `udp[12:4]`
//! above the low byte; else the same over IPv6 (no extension headers,
//! transport header 40 bytes in). `vxlan`: port 4789, flags byte exactly
//! 0x08, VNI at `udp[12:4] >> 8`. When the test holds, libpcap runs a block
//! that computes the inner offsets into three scratch registers: for Geneve
//! it loads the options length (`udp[8] & 0x3f`, already loaded by the
//! test) and the protocol type (`udp[10:2]`: a packet that ends before it
//! is rejected).
//!
//! # Offsets move for everything after them
//!
//! As `vlan` and `mpls`, a tunnel changes the lowering state for every
//! primitive after it in the expression text: the link layer becomes
//! Ethernet whose header, type field and payload are at run-time offsets
//! (libpcap's registers), `off_nl` becomes 0:
//!
//! - Geneve, with `g` the Geneve header and `h = g + 8 + 4 * optlen` its
//!   end: the link header is at `h`; for protocol type 0x6558 (transparent
//!   Ethernet bridging) the type field is at `h + 12` and the payload at
//!   `h + 14`, otherwise the type field is Geneve's own protocol type at
//!   `g + 2` and the payload at `h`;
//! - VXLAN: inner Ethernet at `g + 8`, type field `g + 20`, payload `g + 22`.
//!
//! `g` is the transport header found by the branch of the test that held
//! (IPv4: the variable header length; IPv6: 40) plus the UDP header.
//!
//! # Registers that were never written
//!
//! libpcap's later primitives read these registers whether or not the
//! tunnel's block ran (`geneve or ip`: `ip` reads the type-field offset when
//! `geneve` failed). libpcap 1.10.3 leaves scratch memory uninitialised
//! (the verdict is undefined); libpcap 1.10.7 and master zero it, so the
//! offsets are then 0 plus their constant parts; the Linux kernel refuses
//! such programs. sift's IR has no registers, so each later primitive that
//! reads a tunnel offset is lowered once per *case* of the tunnel: the IPv4
//! branch held, the IPv6 branch held, or neither (offsets 0, as master),
//! selected by evaluating the tunnel's tests again:
//!
//! ```text
//! v4 ? P{g = ipv4 header end + 8} : v6 ? P{g = ipv6 header end + 8} : P{offsets 0}
//! ```
//!
//! The boolean structure often says which case holds: after `geneve and`
//! the block ran (only the IPv4/IPv6 selection remains), after `geneve or`
//! it did not (offsets 0, no test at all). `Lowerer::expr` tracks this per
//! tunnel ([`Known`]) from the operands' true and false exits. Where it
//! cannot tell, the tunnel's tests are evaluated again: they perform the
//! same loads with the same outcome as when the tunnel primitive ran, so
//! when it ran on every path to the later primitive sift's verdicts are
//! master's exactly and nothing aborts that would not. When it may not have
//! run on some path (`(udp port 53 or geneve) and ip`), sift evaluates the
//! tunnel's tests there anyway: master reads zeroes, sift uses the tunnel's
//! offsets if the packet passes the tunnel's test (see docs/compat.md).
//! Nested tunnels (`geneve and geneve and ip`) multiply the cases (the
//! inner tunnel's header is found through the outer one's offsets). The
//! Geneve protocol type (transparent Ethernet bridging or not) is selected
//! arithmetically, not by a case.

use super::link::{LinkKind, LinkLayer, Rel, VarPart};
use super::{Lowerer, Result};
use crate::pred::{BinOp, CmpOp, Pred, Size, Value};

/// The IANA UDP port of Geneve.
pub(crate) const GENEVE_PORT: u32 = 6081;
/// The IANA UDP port of VXLAN.
pub(crate) const VXLAN_PORT: u32 = 4789;
/// Transparent Ethernet bridging: a Geneve payload that is an Ethernet frame.
const ETHERTYPE_TEB: u32 = 0x6558;
/// How many tunnels one filter may hold. libpcap keeps three scratch
/// registers per tunnel (of 16) and fails with the message below at the
/// sixth; sift lowers later primitives once per combination of the cases
/// of nested tunnels, which grows much faster than that.
const MAX_TUNNELS: usize = 5;

/// Which tunnel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TunnelKind {
    /// `geneve`.
    Geneve,
    /// `vxlan`.
    Vxlan,
}

/// Which of libpcap's three tunnel registers an offset is relative to.
// (The names follow libpcap's registers: off_linkhdr, off_linktype, off_linkpl.)
#[allow(clippy::enum_variant_names)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TunnelReg {
    /// The inner link-layer header (`off_linkhdr`).
    LinkHdr,
    /// The inner type field (`off_linktype`).
    LinkType,
    /// The inner link-layer payload (`off_linkpl`).
    LinkPl,
}

/// The case a primitive after a tunnel is lowered in (module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TunnelCase {
    /// The tunnel's block did not run: libpcap master's registers hold 0.
    NotTaken,
    /// The IPv4 (`v6 == false`) or IPv6 branch of the test held.
    Taken {
        /// The IPv6 branch.
        v6: bool,
    },
}

/// What is known, at a point of the expression, about whether a tunnel's
/// offsets block ran (libpcap: whether its registers were written), from
/// the boolean structure: after `geneve and`, it did; after `geneve or`,
/// it did not; after `(geneve or udp) and`, either.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Known {
    /// On every path to this point.
    Ran,
    /// On no path to this point.
    NotRan,
    /// On some paths.
    Either,
}

/// The state of each tunnel (by index; missing entries: not run yet).
pub(crate) type TunnelStates = Vec<Known>;

/// The state of tunnel `t` in `s`.
pub(crate) fn known(s: &[Known], t: usize) -> Known {
    s.get(t).copied().unwrap_or(Known::NotRan)
}

/// What holds where paths with states `a` and `b` meet.
pub(crate) fn join(a: &[Known], b: &[Known]) -> TunnelStates {
    if a.is_empty() && b.is_empty() {
        // No tunnel yet (every filter without one).
        return Vec::new();
    }
    (0..a.len().max(b.len()))
        .map(|t| match (known(a, t), known(b, t)) {
            (x, y) if x == y => x,
            _ => Known::Either,
        })
        .collect()
}

/// `s` with tunnel `t` in state `k`.
pub(crate) fn with(s: &[Known], t: usize, k: Known) -> TunnelStates {
    let mut v = s.to_vec();
    if v.len() <= t {
        v.resize(t + 1, Known::NotRan);
    }
    v[t] = k;
    v
}

/// A tunnel primitive lowered earlier in the expression.
#[derive(Clone, Debug)]
pub(crate) struct Tunnel {
    kind: TunnelKind,
    /// The lowering state before the tunnel (where its outer headers are).
    before: LinkLayer,
    /// The IPv4 branch of its test, as lowered.
    v4: Pred,
    /// The IPv6 branch of its test, as lowered.
    v6: Pred,
    /// The case lowering currently assumes.
    case: TunnelCase,
}

fn c(k: u32) -> Value {
    Value::Const(k)
}

/// `if cond { yes } else { no }`, `cond` evaluated first; just `yes` when
/// both are the same (the condition's loads then need not run).
fn branch(cond: Pred, yes: Pred, no: Pred) -> Pred {
    if yes == no {
        return yes;
    }
    cond.clone().and(yes).or(cond.not().and(no))
}

impl Lowerer<'_> {
    /// `geneve [vni]` and `vxlan [vni]`.
    pub(crate) fn tunnel(&mut self, kind: TunnelKind, vni: Option<u32>) -> Result<Pred> {
        if let Some(v) = vni {
            let name = match kind {
                TunnelKind::Geneve => "Geneve VNI",
                TunnelKind::Vxlan => "VXLAN VNI",
            };
            self.assert_maxval(name, v, 0x00ff_ffff)?;
        }
        if self.tunnels.len() >= MAX_TUNNELS {
            return self.err("too many registers needed to evaluate expression");
        }
        let v4 = self.in_tunnel_cases(&mut |cx| cx.tunnel_check(kind, vni, false))?;
        let v6 = self.in_tunnel_cases(&mut |cx| cx.tunnel_check(kind, vni, true))?;
        let before = self.link;
        let id = self.tunnels.len();
        self.tunnels.push(Tunnel { kind, before, v4: v4.clone(), v6: v6.clone(), case: TunnelCase::NotTaken });
        // libpcap's PUSH_LINKHDR(DLT_EN10MB, variable): an Ethernet link
        // layer at run-time offsets; the radio header stays (for the
        // prologue), the MPLS and VLAN depths too.
        let reg = |r| VarPart::Tunnel(id as u16, r);
        self.link = LinkLayer {
            kind: LinkKind::Ethernet,
            off_linkhdr: 0,
            off_linktype: Some(0),
            off_linkpl: 0,
            off_nl: 0,
            hdr_var: reg(TunnelReg::LinkHdr),
            type_var: reg(TunnelReg::LinkType),
            pl_var: reg(TunnelReg::LinkPl),
            lane: false,
            ..before
        };
        // The block computing the offsets runs when the test held; for
        // Geneve it loads the protocol type.
        let block = match kind {
            TunnelKind::Vxlan => Pred::True,
            TunnelKind::Geneve => {
                // The block runs when the test held.
                let entry = std::mem::take(&mut self.tunnel_state);
                self.tunnel_state = with(&entry, id, Known::Ran);
                let b = self.in_tunnel_cases(&mut |cx| Ok(cx.geneve_block_loads(id)));
                self.tunnel_state = entry;
                b?
            }
        };
        Ok(v4.or(v6).and(block))
    }

    /// One branch of `gen_geneve_check`/`gen_vxlan_check`: UDP destination
    /// port, version (Geneve) or flags (VXLAN), VNI.
    fn tunnel_check(&self, kind: TunnelKind, vni: Option<u32>, v6: bool) -> Result<Pred> {
        let (port, rel) = match kind {
            TunnelKind::Geneve => (GENEVE_PORT, if v6 { Rel::TranIpv6 } else { Rel::TranIpv4 }),
            TunnelKind::Vxlan => (VXLAN_PORT, if v6 { Rel::TranIpv6 } else { Rel::TranIpv4 }),
        };
        let dport = self.udp_dst_port(port, v6)?;
        let head = match kind {
            // Geneve version 0.
            TunnelKind::Geneve => self.mcmp(rel, 8, Size::Byte, 0, 0xc0),
            // The flags byte: only "VNI present".
            TunnelKind::Vxlan => self.cmp(rel, 8, Size::Byte, 0x08),
        };
        let mut p = dport.and(head);
        if let Some(v) = vni {
            p = p.and(self.mcmp(rel, 12, Size::Word, v << 8, 0xffff_ff00));
        }
        Ok(p)
    }

    /// The loads of Geneve's offsets block (the protocol type), in the
    /// current case: a test that always holds.
    fn geneve_block_loads(&self, id: usize) -> Pred {
        self.tunnel_used.set(true);
        match self.tunnels.get(id).map(|t| (t.case, t)) {
            Some((TunnelCase::Taken { v6 }, t)) => {
                let g = self.tunnel_header(t, v6);
                Pred::test(Value::load_indexed(Size::Half, g, 2), CmpOp::Ge, c(0))
            }
            _ => Pred::True,
        }
    }

    /// The offset of the tunnel header (`g`: the UDP payload) when the
    /// IPv4 or IPv6 branch of the test held.
    fn tunnel_header(&self, t: &Tunnel, v6: bool) -> Value {
        let b = &t.before;
        let hl = if v6 {
            match self.var_value(b.pl_var) {
                Some(v) => c(40).bin(BinOp::Add, v),
                None => c(40),
            }
        } else {
            self.iphdrlen_x_of(b)
        };
        hl.bin(BinOp::Add, c(b.off_linkpl.wrapping_add(b.off_nl).wrapping_add(8)))
    }

    /// The value of a tunnel register in the current case.
    pub(crate) fn tunnel_reg(&self, id: u16, reg: TunnelReg) -> Value {
        self.tunnel_used.set(true);
        let Some(t) = self.tunnels.get(usize::from(id)) else { return c(0) };
        let TunnelCase::Taken { v6 } = t.case else { return c(0) };
        let g = self.tunnel_header(t, v6);
        match t.kind {
            TunnelKind::Vxlan => {
                let k = match reg {
                    TunnelReg::LinkHdr => 8,
                    TunnelReg::LinkType => 20,
                    TunnelReg::LinkPl => 22,
                };
                g.bin(BinOp::Add, c(k))
            }
            TunnelKind::Geneve => {
                // h = (udp[8] & 0x3f) * 4 + 8 + g.
                let h = Value::load_indexed(Size::Byte, g.clone(), 0)
                    .bin(BinOp::And, c(0x3f))
                    .bin(BinOp::Mul, c(4))
                    .bin(BinOp::Add, c(8))
                    .bin(BinOp::Add, g.clone());
                // 1 if the protocol type is 0x6558 (a 16-bit load), else 0.
                let teb = Value::load_indexed(Size::Half, g.clone(), 2)
                    .bin(BinOp::Xor, c(ETHERTYPE_TEB))
                    .bin(BinOp::Add, c(0xffff))
                    .bin(BinOp::Shr, c(16))
                    .bin(BinOp::Xor, c(1));
                match reg {
                    TunnelReg::LinkHdr => h,
                    // teb ? h + 12 : g + 2, as g + 2 + teb * (h + 10 - g).
                    TunnelReg::LinkType => {
                        let delta = h.bin(BinOp::Add, c(10)).bin(BinOp::Sub, g.clone());
                        g.bin(BinOp::Add, c(2)).bin(BinOp::Add, teb.bin(BinOp::Mul, delta))
                    }
                    // teb ? h + 14 : h.
                    TunnelReg::LinkPl => h.bin(BinOp::Add, teb.bin(BinOp::Mul, c(14))),
                }
            }
        }
    }

    /// The tunnels whose cases the current offsets depend on, outermost
    /// first.
    fn tunnel_chain(&self) -> Vec<usize> {
        let mut chain = Vec::new();
        let mut link = self.link;
        loop {
            let id = [link.hdr_var, link.type_var, link.pl_var].into_iter().find_map(|v| match v {
                VarPart::Tunnel(id, _) => Some(usize::from(id)),
                _ => None,
            });
            match id.and_then(|i| self.tunnels.get(i).map(|t| (i, t))) {
                Some((i, t)) if !chain.contains(&i) => {
                    chain.push(i);
                    link = t.before;
                }
                _ => break,
            }
        }
        chain.reverse();
        chain
    }

    /// Lowers with `f` once, or once per case of the tunnels the current
    /// offsets depend on if `f` reads a tunnel offset (module docs). The
    /// lowering state `f` leaves is kept (it is the same in every case).
    pub(crate) fn in_tunnel_cases(&mut self, f: &mut dyn FnMut(&mut Self) -> Result<Pred>) -> Result<Pred> {
        if self.tunnels.is_empty() {
            return f(self);
        }
        let chain = self.tunnel_chain();
        if chain.is_empty() {
            return f(self);
        }
        let saved = self.link;
        let used_before = self.tunnel_used.replace(false);
        let first = f(self);
        let used = self.tunnel_used.replace(used_before);
        let first = first?;
        if !used {
            return Ok(first);
        }
        let after = self.link;
        let r = self.cases_rec(&chain, saved, f);
        self.link = after;
        r
    }

    fn cases_rec(
        &mut self,
        chain: &[usize],
        saved: LinkLayer,
        f: &mut dyn FnMut(&mut Self) -> Result<Pred>,
    ) -> Result<Pred> {
        let Some((&t, rest)) = chain.split_first() else {
            self.link = saved;
            return f(self);
        };
        let mut in_case = |cx: &mut Self, case| {
            cx.tunnels[t].case = case;
            cx.cases_rec(rest, saved, f)
        };
        let state = known(&self.tunnel_state, t);
        let r = match state {
            Known::NotRan => in_case(self, TunnelCase::NotTaken),
            Known::Ran | Known::Either => {
                let p4 = in_case(self, TunnelCase::Taken { v6: false })?;
                let p6 = in_case(self, TunnelCase::Taken { v6: true })?;
                let v4 = self.tunnels[t].v4.clone();
                if state == Known::Ran {
                    // One of the branches held: the IPv4 one or not.
                    Ok(branch(v4, p4, p6))
                } else {
                    let p0 = in_case(self, TunnelCase::NotTaken)?;
                    let v6 = self.tunnels[t].v6.clone();
                    Ok(branch(v4, p4, branch(v6, p6, p0)))
                }
            }
        };
        self.tunnels[t].case = TunnelCase::NotTaken;
        r
    }

    /// After a tunnel, libpcap's `gen_prevlinkhdr_check` before the
    /// Ethernet address tests (not before the type-field tests): there is an
    /// inner Ethernet header, i.e. the link-layer header and payload offsets
    /// registers differ (`ld M[hdr]; ldx M[pl]; jeq x` negated: for Geneve, protocol
    /// type 0x6558; for VXLAN, always; with registers never written, both 0:
    /// never).
    pub(crate) fn encap_ll_check(&self) -> Option<Pred> {
        let (VarPart::Tunnel(h, hr), VarPart::Tunnel(p, pr)) = (self.link.hdr_var, self.link.pl_var) else {
            return None;
        };
        // Not after `pppoes` (the link layer is PPP then).
        if self.link.kind != LinkKind::Ethernet {
            return None;
        }
        // The registers alone (not the constant parts `vlan` may have added).
        Some(Pred::test(self.tunnel_reg(h, hr), CmpOp::Eq, self.tunnel_reg(p, pr)).not())
    }

    /// Does the current lowering state refer to a tunnel's offsets?
    pub(crate) fn in_tunnel(&self) -> bool {
        !self.tunnel_chain().is_empty()
    }

    /// `udp dst port N` over IPv4 (`gen_port`) or IPv6 (`gen_port6`).
    fn udp_dst_port(&self, port: u32, v6: bool) -> Result<Pred> {
        use super::port::PortProto;
        use super::Dir;
        let atom = |cx: &Lowerer<'_>, off: u32| -> Result<Pred> {
            Ok(cx.cmp(if v6 { Rel::TranIpv6 } else { Rel::TranIpv4 }, off, Size::Half, port))
        };
        if v6 {
            self.port_v6(PortProto::Udp, Dir::Dst, &atom)
        } else {
            self.port_v4(PortProto::Udp, Dir::Dst, &atom)
        }
    }
}
