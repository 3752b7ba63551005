//! Link layers: where the headers are, loads relative to a header, the
//! comparison generators every other file builds on, and the link-type
//! tests (`ip`, `arp`, `ether proto N`: libpcap's `gen_linktype`).
//!
//! A [`LinkLayer`] holds the offsets libpcap's compiler state tracks for the
//! link-layer header type (`init_linktype`): the link-layer header, the
//! type field, the link-layer payload, and the network-layer header relative
//! to the payload with and without an 802.2 SNAP header. Loads name the
//! header they are relative to ([`Rel`], libpcap's `e_offrel`), so that
//! encapsulations that move the offsets (`vlan`, `mpls`, `pppoes`, next
//! issue) only have to update the state.

use super::{Lowerer, Result};
use crate::linktype::LinkType;
use crate::pred::{BinOp, CmpOp, Pred, Size, Value};
use sift_syntax::names::{ethertype, llcsap};

/// The largest 802.3 length; a type/length field above it is an EtherType.
pub(crate) const ETHERMTU: u32 = 1500;

/// Linux cooked capture protocol values for 802.3 frames without LLC
/// (`LINUX_SLL_P_802_3`) and with LLC (`LINUX_SLL_P_802_2`).
const LINUX_SLL_P_802_3: u32 = 0x0001;
const LINUX_SLL_P_802_2: u32 = 0x0004;

/// Address families as DLT_NULL/DLT_LOOP headers hold them: `AF_INET` is
/// 2 everywhere; `AF_INET6` is this platform's value (Linux: 10, as the
/// reference libpcap was built on Linux) for live captures, and any of the
/// BSD values in savefiles (NetBSD/OpenBSD/BSD/OS/Npcap 24, FreeBSD 28,
/// Darwin 30).
const AF_INET: u32 = 2;
const AF_INET6: u32 = 10;
const BSD_AFNUM_INET6_BSD: u32 = 24;
const BSD_AFNUM_INET6_FREEBSD: u32 = 28;
const BSD_AFNUM_INET6_DARWIN: u32 = 30;

/// PPP protocol numbers for the EtherType-like values libpcap translates
/// (`ethertype_to_ppptype`); other values are used unchanged.
pub(crate) fn ethertype_to_ppptype(ll_proto: u32) -> u32 {
    match ll_proto {
        ethertype::IP => 0x0021,
        ethertype::IPV6 => 0x0057,
        ethertype::DN => 0x0027,
        ethertype::ATALK => 0x0029,
        // ETHERTYPE_NS (Xerox NS IDP) -> PPP_NS.
        0x0600 => 0x0025,
        llcsap::ISONS => 0x0023,
        llcsap::STP => 0x0031,
        llcsap::IPX => 0x002b,
        p => p,
    }
}

/// The link-layer header types sift lowers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LinkKind {
    /// DLT_EN10MB.
    Ethernet,
    /// DLT_NULL: 4-byte address family in the capturing host's byte order.
    Null,
    /// DLT_LOOP: 4-byte address family in network byte order.
    Loop,
    /// DLT_RAW: raw IPv4 or IPv6, by the version nibble.
    Raw,
    /// DLT_IPV4.
    Ipv4,
    /// DLT_IPV6.
    Ipv6,
    /// DLT_LINUX_SLL.
    LinuxSll,
    /// DLT_LINUX_SLL2.
    LinuxSll2,
    /// PPP inside a PPPoE session: what the link layer becomes after
    /// `pppoes` (libpcap switches its link type to DLT_PPP, with the PPP
    /// protocol field 6 bytes past the PPPoE header). Not an initial link
    /// type yet.
    Ppp,
    /// IEEE 802.11 (DLT_IEEE802_11, and after a radio header:
    /// DLT_IEEE802_11_RADIO, DLT_IEEE802_11_RADIO_AVS, DLT_PRISM_HEADER,
    /// DLT_PPI; see [`LinkLayer::radio`]). The payload offset is computed
    /// at run time from the frame control field (see `wlan.rs`).
    Ieee80211,
    /// DLT_FDDI: frame control byte, destination and source MACs, 802.2.
    Fddi,
    /// DLT_IEEE802 (Token Ring): access and frame control, MACs, 802.2.
    TokenRing,
    /// DLT_IP_OVER_FC (RFC 2625): network header, then 802.2 LLC/SNAP.
    IpOverFc,
    /// The other link types (`links.rs`).
    Other(super::links::OtherLink),
}

/// The radio information header in front of an 802.11 frame, whose length
/// is read from the packet at run time (libpcap's variable `off_linkhdr`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RadioHeader {
    /// radiotap (DLT_IEEE802_11_RADIO): little-endian length at bytes 2-3.
    Radiotap,
    /// AVS (DLT_IEEE802_11_RADIO_AVS): big-endian length word at byte 4.
    Avs,
    /// Prism (DLT_PRISM_HEADER): 144 bytes, or an AVS header if the first
    /// word carries the AVS cookie.
    Prism,
    /// PPI (DLT_PPI): little-endian length at bytes 2-3.
    Ppi,
}

/// The layout of the link layer, as libpcap's compiler state describes it.
/// All offsets are in bytes from the start of the packet, except `off_nl`
/// and `off_nl_nosnap`, which are relative to the link-layer payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LinkLayer {
    /// Which link-layer header type.
    pub(crate) kind: LinkKind,
    /// Start of the link-layer header (`off_linkhdr`).
    pub(crate) off_linkhdr: u32,
    /// The type field (`off_linktype`); `None` when the link layer has none
    /// (libpcap's `OFFSET_NOT_SET`).
    pub(crate) off_linktype: Option<u32>,
    /// Start of the link-layer payload (`off_linkpl`).
    pub(crate) off_linkpl: u32,
    /// Network layer relative to the payload (`off_nl`).
    pub(crate) off_nl: u32,
    /// Network layer relative to the payload when an 802.2 header without
    /// SNAP precedes it (`off_nl_nosnap`).
    pub(crate) off_nl_nosnap: u32,
    /// How many `vlan` primitives were lowered so far (libpcap's
    /// `vlan_stack_depth`).
    pub(crate) vlan_depth: u32,
    /// How many `mpls` primitives were lowered so far (libpcap's
    /// `label_stack_depth`); when non-zero, link-type tests look at the
    /// MPLS bottom-of-stack bit and the IP version nibble instead.
    pub(crate) mpls_depth: u32,
    /// The radio header before the 802.11 header, if any: the link-layer
    /// header then starts at a run-time offset.
    pub(crate) radio: Option<RadioHeader>,
    /// Run-time part of `off_linkhdr`.
    pub(crate) hdr_var: VarPart,
    /// Run-time part of `off_linktype`.
    pub(crate) type_var: VarPart,
    /// Run-time part of `off_linkpl` (and of every offset after it).
    pub(crate) pl_var: VarPart,
    /// LANE-emulated Ethernet inside SunATM (after `lane`): Ethernet tests
    /// first check that the frame is not an LE control frame.
    pub(crate) lane: bool,
}

impl LinkLayer {
    /// The initial layout for a link-layer header type, or `None` if sift
    /// does not support it yet.
    pub(crate) fn for_linktype(lt: LinkType) -> Option<LinkLayer> {
        let (kind, off_linktype, off_linkpl, off_nl_nosnap) = match lt {
            LinkType::EN10MB => (LinkKind::Ethernet, Some(12), 14, 3),
            LinkType::NULL => (LinkKind::Null, Some(0), 4, 0),
            LinkType::LOOP => (LinkKind::Loop, Some(0), 4, 0),
            LinkType::RAW => (LinkKind::Raw, None, 0, 0),
            LinkType::IPV4 => (LinkKind::Ipv4, None, 0, 0),
            LinkType::IPV6 => (LinkKind::Ipv6, None, 0, 0),
            LinkType::LINUX_SLL => (LinkKind::LinuxSll, Some(14), 16, 0),
            LinkType::LINUX_SLL2 => (LinkKind::LinuxSll2, Some(0), 20, 0),
            LinkType::FDDI => (LinkKind::Fddi, Some(13), 13, 3),
            LinkType::IEEE802 => (LinkKind::TokenRing, Some(14), 14, 3),
            LinkType::IP_OVER_FC => (LinkKind::IpOverFc, None, 16, 3),
            // The 802.11 payload offset is variable: its constant part is 0
            // and the header length is added at run time.
            LinkType::IEEE802_11
            | LinkType::IEEE802_11_RADIO
            | LinkType::IEEE802_11_RADIO_AVS
            | LinkType::PRISM_HEADER
            | LinkType::PPI => (LinkKind::Ieee80211, Some(24), 0, 3),
            _ => return super::links::layout(lt),
        };
        let radio = match lt {
            LinkType::IEEE802_11_RADIO => Some(RadioHeader::Radiotap),
            LinkType::IEEE802_11_RADIO_AVS => Some(RadioHeader::Avs),
            LinkType::PRISM_HEADER => Some(RadioHeader::Prism),
            LinkType::PPI => Some(RadioHeader::Ppi),
            _ => None,
        };
        // 802.2 LLC + SNAP precede the network layer on these link types.
        let off_nl = match kind {
            LinkKind::Fddi | LinkKind::TokenRing | LinkKind::IpOverFc | LinkKind::Ieee80211 => 8,
            _ => 0,
        };
        Some(LinkLayer {
            kind,
            off_linkhdr: 0,
            off_linktype,
            off_linkpl,
            off_nl,
            off_nl_nosnap,
            vlan_depth: 0,
            mpls_depth: 0,
            radio,
            hdr_var: if radio.is_some() { VarPart::RadioLen } else { VarPart::None },
            type_var: VarPart::None,
            pl_var: if kind == LinkKind::Ieee80211 { VarPart::WlanHeaderEnd } else { VarPart::None },
            lane: false,
        })
    }

    /// Offset of the network-layer header (`off_linkpl + off_nl`).
    pub(crate) fn nl(&self) -> u32 {
        self.off_linkpl.wrapping_add(self.off_nl)
    }

    /// The run-time part of an offset, if any (libpcap's `is_variable`).
    pub(crate) fn var_of(&self, rel: Rel) -> VarPart {
        match rel {
            Rel::Packet => VarPart::None,
            Rel::LinkHdr => self.hdr_var,
            Rel::LinkType => self.type_var,
            Rel::Llc | Rel::LinkPl | Rel::LinkPlNoSnap | Rel::TranIpv4 | Rel::TranIpv6 => {
                self.pl_var
            }
        }
    }
}

/// The run-time part of a header offset: libpcap keeps it in a scratch
/// register computed at the start of the program; sift recomputes it as a
/// [`Value`] at every load (see `wlan.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum VarPart {
    /// The offset is a constant.
    None,
    /// The length of the radio header ([`LinkLayer::radio`]).
    RadioLen,
    /// The radio header length plus the 802.11 header length.
    WlanHeaderEnd,
    /// The pflog header length, `(hdr[0] + 3) & ~3` (DLT_PFLOG).
    PflogHdrLen,
    /// One of the offsets a `geneve` or `vxlan` primitive computes (the
    /// tunnel's index in the filter, and which offset; `tunnel.rs`).
    Tunnel(u16, super::tunnel::TunnelReg),
}

impl Lowerer<'_> {
    /// A load of `size` bytes at `off` relative to the header `rel`
    /// (libpcap's `gen_load_a`). Offsets add with C `u_int` wrapping.
    pub(crate) fn load(&self, rel: Rel, off: u32, size: Size) -> Value {
        let link = &self.link;
        let base = match rel {
            Rel::Packet => 0,
            Rel::LinkHdr => link.off_linkhdr,
            Rel::Llc => link.off_linkpl,
            Rel::LinkPl | Rel::TranIpv4 | Rel::TranIpv6 => link.nl(),
            Rel::LinkPlNoSnap => link.off_linkpl.wrapping_add(link.off_nl_nosnap),
            // OFFSET_NOT_SET is 0xffffffff in libpcap; only reachable for
            // link types whose generators never ask for the type field.
            Rel::LinkType => link.off_linktype.unwrap_or(u32::MAX),
        };
        let var = self.var_value(link.var_of(rel));
        match rel {
            Rel::TranIpv4 => Value::load_indexed(size, self.iphdrlen_x(), base.wrapping_add(off)),
            Rel::TranIpv6 => {
                let at = base.wrapping_add(40).wrapping_add(off);
                match var {
                    Some(v) => Value::load_indexed(size, v, at),
                    None => Value::load(size, at),
                }
            }
            _ => match var {
                Some(v) => Value::load_indexed(size, v, base.wrapping_add(off)),
                None => Value::load(size, base.wrapping_add(off)),
            },
        }
    }

    /// The X register of libpcap's `gen_loadx_iphdrlen`: the IPv4 header
    /// length, plus the variable part of the payload offset if any
    /// (`ldxb 4*([nl]&0xf)`, or `ldx M[r]; ldb [x+nl]; and; lsh; add x`).
    pub(crate) fn iphdrlen_x(&self) -> Value {
        self.iphdrlen_x_of(&self.link)
    }

    /// [`iphdrlen_x`](Self::iphdrlen_x) for the lowering state `link`.
    pub(crate) fn iphdrlen_x_of(&self, link: &LinkLayer) -> Value {
        let nl = link.nl();
        match self.var_value(link.pl_var) {
            None => Value::ipv4_header_len(nl),
            Some(v) => Value::load_indexed(Size::Byte, v.clone(), nl)
                .bin(BinOp::And, Value::Const(0xf))
                .bin(BinOp::Shl, Value::Const(2))
                .bin(BinOp::Add, v),
        }
    }
}

/// What a load offset is relative to (libpcap's `enum e_offrel`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Rel {
    /// The start of the packet (`OR_PACKET`).
    #[allow(dead_code)]
    Packet,
    /// The link-layer header (`OR_LINKHDR`).
    LinkHdr,
    /// The 802.2 LLC header, i.e. the link-layer payload (`OR_LLC`).
    Llc,
    /// The network-layer header (`OR_LINKPL`: payload + `off_nl`).
    LinkPl,
    /// The network-layer header after LLC without SNAP (`OR_LINKPL_NOSNAP`;
    /// used by the ISO protocols, next issue).
    #[allow(dead_code)]
    LinkPlNoSnap,
    /// The link-layer type field (`OR_LINKTYPE`).
    LinkType,
    /// The transport header after a variable-length IPv4 header
    /// (`OR_TRAN_IPV4`: `ldxb 4*([nl]&0xf)` then an indexed load).
    TranIpv4,
    /// The transport header after a fixed 40-byte IPv6 header (`OR_TRAN_IPV6`).
    TranIpv6,
}

impl Lowerer<'_> {
    /// `gen_ncmp`: load, mask (unless all ones), compare with `v`; `reverse`
    /// negates `>`/`>=` only, exactly as libpcap (whose `!=` for `==` is
    /// built elsewhere). The argument list mirrors libpcap's `gen_ncmp`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn ncmp(
        &self,
        rel: Rel,
        off: u32,
        size: Size,
        mask: u32,
        op: CmpOp,
        reverse: bool,
        v: u32,
    ) -> Pred {
        let mut lhs = self.load(rel, off, size);
        if mask != 0xffff_ffff {
            lhs = lhs.bin(BinOp::And, Value::Const(mask));
        }
        let t = Pred::test(lhs, op, Value::Const(v));
        if reverse && matches!(op, CmpOp::Gt | CmpOp::Ge) {
            t.not()
        } else {
            t
        }
    }

    /// `gen_cmp`: `field == v`.
    pub(crate) fn cmp(&self, rel: Rel, off: u32, size: Size, v: u32) -> Pred {
        self.ncmp(rel, off, size, 0xffff_ffff, CmpOp::Eq, false, v)
    }

    /// `gen_cmp_gt`: `field > v`.
    pub(crate) fn cmp_gt(&self, rel: Rel, off: u32, size: Size, v: u32) -> Pred {
        self.ncmp(rel, off, size, 0xffff_ffff, CmpOp::Gt, false, v)
    }

    /// `gen_cmp_ge`: `field >= v`.
    pub(crate) fn cmp_ge(&self, rel: Rel, off: u32, size: Size, v: u32) -> Pred {
        self.ncmp(rel, off, size, 0xffff_ffff, CmpOp::Ge, false, v)
    }

    /// `gen_cmp_lt`: `not (field >= v)`.
    pub(crate) fn cmp_lt(&self, rel: Rel, off: u32, size: Size, v: u32) -> Pred {
        self.ncmp(rel, off, size, 0xffff_ffff, CmpOp::Ge, true, v)
    }

    /// `gen_cmp_le`: `not (field > v)`.
    pub(crate) fn cmp_le(&self, rel: Rel, off: u32, size: Size, v: u32) -> Pred {
        self.ncmp(rel, off, size, 0xffff_ffff, CmpOp::Gt, true, v)
    }

    /// `gen_mcmp`: `field & mask == v`.
    pub(crate) fn mcmp(&self, rel: Rel, off: u32, size: Size, v: u32, mask: u32) -> Pred {
        self.ncmp(rel, off, size, mask, CmpOp::Eq, false, v)
    }

    /// A `jset` block: `field & k != 0`.
    pub(crate) fn jset(&self, rel: Rel, off: u32, size: Size, k: u32) -> Pred {
        Pred::test(self.load(rel, off, size), CmpOp::Set, Value::Const(k))
    }

    /// `gen_bcmp`: compare `bytes` with the packet at `off`, in libpcap's
    /// order: 4-byte words from the end, then a 2-byte half from what is
    /// left, then the first byte.
    pub(crate) fn bcmp(&self, rel: Rel, off: u32, bytes: &[u8]) -> Pred {
        let mut acc: Option<Pred> = None;
        let mut push = |p: Pred| {
            acc = Some(match acc.take() {
                Some(a) => a.and(p),
                None => p,
            });
        };
        let mut size = bytes.len();
        while size >= 4 {
            let w = &bytes[size - 4..size];
            let v = u32::from_be_bytes([w[0], w[1], w[2], w[3]]);
            push(self.cmp(rel, off.wrapping_add((size - 4) as u32), Size::Word, v));
            size -= 4;
        }
        while size >= 2 {
            let h = &bytes[size - 2..size];
            let v = u32::from(u16::from_be_bytes([h[0], h[1]]));
            push(self.cmp(rel, off.wrapping_add((size - 2) as u32), Size::Half, v));
            size -= 2;
        }
        if size > 0 {
            push(self.cmp(rel, off, Size::Byte, u32::from(bytes[0])));
        }
        acc.unwrap_or(Pred::True)
    }

    /// `gen_snap`: an 802.2 LLC header with SNAP (AA AA 03), then the OUI
    /// and protocol type.
    pub(crate) fn snap(&self, orgcode: u32, ptype: u32) -> Pred {
        let block = [
            llcsap::SNAP as u8,
            llcsap::SNAP as u8,
            0x03,
            (orgcode >> 16) as u8,
            (orgcode >> 8) as u8,
            orgcode as u8,
            (ptype >> 8) as u8,
            ptype as u8,
        ];
        self.bcmp(Rel::Llc, 0, &block)
    }

    /// `gen_linktype`: is the packet of link-level protocol `ll_proto` (an
    /// EtherType if above 1500, else an LLC SAP)?
    ///
    /// As libpcap master, a value that does not fit the field it is
    /// compared with is an error on the link types that have such a field
    /// (1.10.3 compiles a test that never holds): above 65535 ("EtherType"),
    /// and, on Ethernet, DLT_LINUX_SLL and DLT_IP_OVER_FC, an LLC SAP (at
    /// most 1500) above 255 ("LLC DSAP"). Only `link proto N` can pass such values.
    pub(crate) fn gen_linktype(&self, ll_proto: u32) -> Result<Pred> {
        if self.link.mpls_depth > 0 {
            return self.mpls_linktype(ll_proto);
        }
        match self.link.kind {
            LinkKind::Ethernet | LinkKind::LinuxSll | LinkKind::IpOverFc if ll_proto <= ETHERMTU => {
                self.assert_maxval("LLC DSAP", ll_proto, 255)?
            }
            LinkKind::Ethernet | LinkKind::LinuxSll | LinkKind::LinuxSll2 | LinkKind::IpOverFc => {
                self.assert_maxval("EtherType", ll_proto, 65535)?
            }
            LinkKind::Ppp => self.assert_maxval("PPP protocol", ll_proto, 65535)?,
            _ => {}
        }
        Ok(match self.link.kind {
            LinkKind::Ethernet => match self.lane_check() {
                Some(c) => c.and(self.ether_linktype(ll_proto)),
                None => self.ether_linktype(ll_proto),
            },
            LinkKind::Other(o) => return self.other_linktype(o, ll_proto),
            LinkKind::LinuxSll => self.linux_sll_linktype(ll_proto),
            LinkKind::LinuxSll2 => self.cmp(Rel::LinkType, 0, Size::Half, ll_proto),
            LinkKind::Ppp => self.cmp(Rel::LinkType, 0, Size::Half, ethertype_to_ppptype(ll_proto)),
            LinkKind::Raw => match ll_proto {
                ethertype::IP => self.mcmp(Rel::LinkHdr, 0, Size::Byte, 0x40, 0xf0),
                ethertype::IPV6 => self.mcmp(Rel::LinkHdr, 0, Size::Byte, 0x60, 0xf0),
                _ => Pred::False,
            },
            LinkKind::Ipv4 => {
                if ll_proto == ethertype::IP {
                    Pred::True
                } else {
                    Pred::False
                }
            }
            LinkKind::Ipv6 => {
                if ll_proto == ethertype::IPV6 {
                    Pred::True
                } else {
                    Pred::False
                }
            }
            LinkKind::Fddi | LinkKind::TokenRing | LinkKind::IpOverFc => self.llc_linktype(ll_proto),
            LinkKind::Ieee80211 => self.wlan_data_frame().and(self.llc_linktype(ll_proto)),
            LinkKind::Null | LinkKind::Loop => match ll_proto {
                ethertype::IP => self.loopback_linktype(AF_INET),
                ethertype::IPV6 if self.savefile() => self
                    .loopback_linktype(BSD_AFNUM_INET6_DARWIN)
                    .or(self.loopback_linktype(BSD_AFNUM_INET6_BSD))
                    .or(self.loopback_linktype(BSD_AFNUM_INET6_FREEBSD)),
                ethertype::IPV6 => self.loopback_linktype(AF_INET6),
                _ => Pred::False,
            },
        })
    }

    /// `gen_mpls_linktype`: inside an MPLS label stack only IPv4 and IPv6
    /// can be tested: the previous label's bottom-of-stack bit is set and
    /// the version nibble matches.
    fn mpls_linktype(&self, ll_proto: u32) -> Result<Pred> {
        let version = match ll_proto {
            ethertype::IP => 0x40,
            ethertype::IPV6 => 0x60,
            _ => return self.err("unsupported protocol over mpls"),
        };
        // The bottom-of-stack bit is in byte 2 of the label before the
        // network layer (offset -2 from it, wrapping as C's u_int).
        let bos = self.mcmp(Rel::LinkPl, 0u32.wrapping_sub(2), Size::Byte, 0x01, 0x01);
        Ok(bos.and(self.mcmp(Rel::LinkPl, 0, Size::Byte, version, 0xf0)))
    }

    /// `gen_loopback_linktype`: the 4-byte address family of DLT_NULL (host
    /// byte order of the capturing machine) or DLT_LOOP (network order).
    fn loopback_linktype(&self, af: u32) -> Pred {
        let v = if self.link.kind == LinkKind::Null {
            let swap = self.opts.swapped;
            let af = if swap { af.swap_bytes() } else { af };
            // htonl(): what a big-endian load of the host-order word gives.
            af.to_be()
        } else {
            af
        };
        self.cmp(Rel::LinkHdr, 0, Size::Word, v)
    }

    /// `gen_ether_linktype`: Ethernet II type field, or 802.3 length plus
    /// 802.2 LLC for SAP values and the protocols that use both.
    fn ether_linktype(&self, ll_proto: u32) -> Pred {
        let is_8023 = || self.cmp_gt(Rel::LinkType, 0, Size::Half, ETHERMTU).not();
        match ll_proto {
            llcsap::ISONS | llcsap::IP | llcsap::NETBEUI => {
                is_8023().and(self.cmp(Rel::Llc, 0, Size::Half, (ll_proto << 8) | ll_proto))
            }
            llcsap::IPX => {
                // Ethernet_802.2 (DSAP), Ethernet_802.3 (raw 0xFFFF) and
                // Ethernet_SNAP, all on 802.3 frames; Ethernet_II first.
                let llc = self
                    .snap(0x000000, ethertype::IPX)
                    .or(self.cmp(Rel::Llc, 0, Size::Byte, llcsap::IPX))
                    .or(self.cmp(Rel::Llc, 0, Size::Half, 0xffff));
                self.cmp(Rel::LinkType, 0, Size::Half, ethertype::IPX).or(is_8023().and(llc))
            }
            ethertype::ATALK | ethertype::AARP => {
                let snap = if ll_proto == ethertype::ATALK {
                    self.snap(0x080007, ethertype::ATALK)
                } else {
                    self.snap(0x000000, ethertype::AARP)
                };
                self.cmp(Rel::LinkType, 0, Size::Half, ll_proto).or(is_8023().and(snap))
            }
            p if p <= ETHERMTU => is_8023().and(self.cmp(Rel::LinkType, 2, Size::Byte, p)),
            p => self.cmp(Rel::LinkType, 0, Size::Half, p),
        }
    }

    /// `gen_linux_sll_linktype`: the SLL protocol field, with the special
    /// values for 802.3 and 802.2 frames.
    fn linux_sll_linktype(&self, ll_proto: u32) -> Pred {
        let is_8022 = || self.cmp(Rel::LinkType, 0, Size::Half, LINUX_SLL_P_802_2);
        match ll_proto {
            llcsap::ISONS | llcsap::IP | llcsap::NETBEUI => {
                is_8022().and(self.cmp(Rel::Llc, 0, Size::Half, (ll_proto << 8) | ll_proto))
            }
            llcsap::IPX => {
                let llc = self
                    .cmp(Rel::Llc, 0, Size::Byte, llcsap::IPX)
                    .or(self.snap(0x000000, ethertype::IPX));
                self.cmp(Rel::LinkType, 0, Size::Half, ethertype::IPX)
                    .or(self.cmp(Rel::LinkType, 0, Size::Half, LINUX_SLL_P_802_3))
                    .or(is_8022().and(llc))
            }
            ethertype::ATALK | ethertype::AARP => {
                let snap = if ll_proto == ethertype::ATALK {
                    self.snap(0x080007, ethertype::ATALK)
                } else {
                    self.snap(0x000000, ethertype::AARP)
                };
                self.cmp(Rel::LinkType, 0, Size::Half, ll_proto).or(is_8022().and(snap))
            }
            p if p <= ETHERMTU => {
                is_8022().and(self.cmp(Rel::LinkHdr, self.link.off_linkpl, Size::Byte, p))
            }
            p => self.cmp(Rel::LinkType, 0, Size::Half, p),
        }
    }
}
