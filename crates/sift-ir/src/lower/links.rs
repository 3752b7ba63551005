//! The other link types (everything but Ethernet, the loopbacks, raw IP,
//! Linux cooked captures and the 802.11 family) and their own primitives:
//! PPP and HDLC framings, SLIP, Frame Relay, LocalTalk, ARCnet, IPNET,
//! Juniper, BACnet MS/TP, ATM (RFC 1483, CLIP and SunATM with `vpi`, `vci`,
//! `lane`, `oamf4`, `metac`, ...), SS7 MTP2/MTP3 (`fisu`, `lssu`, `msu`,
//! `sio`, `opc`, `dpc`, `sls` and the `h` forms of the high-speed MTP2
//! variant), OpenBSD pflog (`ifname`, `rnr`, `reason`, `action`, ...) and
//! the DSA tags of Broadcom and Marvell switches.
//!
//! Each generator reproduces libpcap's (`gencode.c`): offsets from
//! `init_linktype`, link-type tests from `gen_linktype`, and the
//! field tests of `gen_atmfield_code`, `gen_mtp2type_abbrev`,
//! `gen_mtp3field_code` and `gen_pf_*`.
//!
//! Deliberate differences from 1.10.3, as libpcap master (see
//! docs/compat.md): `!=` on `vpi`/`vci`/`sio`/`opc`/`dpc`/`sls` and their
//! `h` forms is a negated `==` (1.10.3 compiles it as `==`), and
//! `dpc`/`hdpc` load the 2 bytes of the field (`ldh`, mask 0xff3f) where
//! 1.10.3 loads 4 (`ld`, mask 0xff3f0000, so that a packet 2 bytes longer
//! is needed).

use super::link::{LinkKind, LinkLayer, Rel, VarPart};
use super::{Dir, Lowerer, Result};
use crate::linktype::LinkType;
use crate::pred::{BinOp, CmpOp, Pred, Size, Value};
use sift_syntax::ast::{
    AddrQual, AtmField, AtmType, FieldTest, Mtp2Type, Mtp3Field, Pflog, ProtoQual, Qual, RelOp,
};
use sift_syntax::names::{ethertype, llcsap};

/// The link types of this file (the `LinkKind::Other` ones).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OtherLink {
    /// DLT_PPP_PPPD: PPP with a direction byte in the address field.
    PppPppd,
    /// DLT_PPP_SERIAL: PPP in HDLC-like framing (NetBSD).
    PppSerial,
    /// DLT_PPP_ETHER: PPPoE session headers without Ethernet.
    PppEther,
    /// DLT_PPP_BSDOS.
    PppBsdos,
    /// DLT_C_HDLC: Cisco HDLC (EtherTypes).
    CHdlc,
    /// DLT_SLIP: a 16-byte BSD SLIP header, then IPv4.
    Slip,
    /// DLT_SLIP_BSDOS: a 24-byte header, then IPv4.
    SlipBsdos,
    /// DLT_FRELAY: Q.922 address, then control and NLPID.
    Frelay,
    /// DLT_LTALK: LocalTalk (always AppleTalk).
    Ltalk,
    /// DLT_ARCNET (BSD header, type at 2).
    Arcnet,
    /// DLT_ARCNET_LINUX (type at 4).
    ArcnetLinux,
    /// DLT_IPNET (Solaris).
    Ipnet,
    /// DLT_SYMANTEC_FIREWALL.
    SymantecFirewall,
    /// DLT_APPLE_IP_OVER_IEEE1394.
    AppleIpOverIeee1394,
    /// DLT_JUNIPER_MFR: a Juniper "MGC" cookie header.
    JuniperMfr,
    /// DLT_ATM_RFC1483: LLC/SNAP over ATM, no pseudo-header.
    AtmRfc1483,
    /// DLT_ATM_CLIP: the same, as Linux names it.
    AtmClip,
    /// DLT_SUNATM: a 4-byte pseudo-header (type, VPI, VCI), then the AAL5 PDU.
    SunAtm,
    /// DLT_MTP2: SS7 MTP2 without pseudo-header.
    Mtp2,
    /// DLT_MTP2_WITH_PHDR: MTP2 after a 4-byte pseudo-header.
    Mtp2WithPhdr,
    /// DLT_MTP3: SS7 MTP3 (no SS7 field offsets in libpcap).
    Mtp3,
    /// DLT_ERF: Endace ERF records; libpcap filters only the SS7 fields of
    /// an MTP2 payload after a 20-byte ERF header (and no link-layer
    /// protocol).
    Erf,
    /// DLT_BACNET_MS_TP.
    BacnetMsTp,
    /// DLT_PFLOG: OpenBSD's pflog header, whose length is its first byte
    /// (rounded up to 4).
    Pflog,
}

/// SunATM pseudo-header fields (libpcap's `SUNATM_*_POS`, `PROTO_POS`).
const SUNATM_PROTO: u32 = 0;
const SUNATM_VPI: u32 = 1;
const SUNATM_VCI: u32 = 2;
const SUNATM_PAYLOAD: u32 = 4;
/// Q.2931 message type, relative to the AAL5 payload.
const MSG_TYPE_POS: u32 = 5;
/// Protocol types in the SunATM pseudo-header.
const PT_LANE: u32 = 0x01;
const PT_LLC: u32 = 0x02;

/// ARCnet protocol identifiers (`ARCTYPE_*`).
mod arctype {
    pub const IP_OLD: u32 = 240;
    pub const ARP_OLD: u32 = 241;
    pub const IP: u32 = 212;
    pub const ARP: u32 = 213;
    pub const REVARP: u32 = 214;
    pub const ATALK: u32 = 221;
    pub const INET6: u32 = 0xc4;
}

/// pflog header fields.
mod pfloghdr {
    /// `af`, the address family (1 byte, host byte order... but 1 byte).
    pub const AF: u32 = 1;
    pub const ACTION: u32 = 2;
    pub const REASON: u32 = 3;
    pub const IFNAME: u32 = 4;
    pub const RULESET: u32 = 20;
    pub const RULENR: u32 = 36;
    pub const SUBRULENR: u32 = 40;
    pub const DIR: u32 = 60;
    pub const IFNAMSIZ: usize = 16;
    pub const RULESET_NAME_SIZE: usize = 16;
}

/// The initial layout of a link type of this file, if it is one.
pub(crate) fn layout(lt: LinkType) -> Option<LinkLayer> {
    use OtherLink as O;
    // (kind, off_linkhdr, off_linktype, off_linkpl, off_nl, off_nl_nosnap);
    // libpcap's OFFSET_NOT_SET is u32::MAX here, except for the type field.
    const NS: u32 = u32::MAX;
    let (kind, hdr, ty, pl, nl, nosnap) = match lt.0 {
        9 => (LinkKind::Ppp, 0, Some(2), 4, 0, 0),
        166 => (LinkKind::Other(O::PppPppd), 0, Some(2), 4, 0, 0),
        50 => (LinkKind::Other(O::PppSerial), 0, Some(2), 4, 0, 0),
        51 => (LinkKind::Other(O::PppEther), 0, Some(6), 8, 0, 0),
        16 => (LinkKind::Other(O::PppBsdos), 0, Some(5), 24, 0, 0),
        104 => (LinkKind::Other(O::CHdlc), 0, Some(2), 4, 0, 0),
        8 => (LinkKind::Other(O::Slip), 0, None, 16, 0, 0),
        15 => (LinkKind::Other(O::SlipBsdos), 0, None, 24, 0, 0),
        107 => (LinkKind::Other(O::Frelay), 0, None, 0, 0, 0),
        114 => (LinkKind::Other(O::Ltalk), 0, None, 0, 0, 0),
        7 => (LinkKind::Other(O::Arcnet), 0, Some(2), 6, 0, 0),
        129 => (LinkKind::Other(O::ArcnetLinux), 0, Some(4), 8, 0, 0),
        226 => (LinkKind::Other(O::Ipnet), 0, Some(1), 24, 0, NS),
        99 => (LinkKind::Other(O::SymantecFirewall), 0, Some(6), 44, 0, 0),
        138 => (LinkKind::Other(O::AppleIpOverIeee1394), 0, Some(16), 18, 0, 0),
        134 => (LinkKind::Other(O::JuniperMfr), 0, Some(4), 4, 0, NS),
        11 => (LinkKind::Other(O::AtmRfc1483), 0, Some(0), 0, 8, 3),
        19 => (LinkKind::Other(O::AtmClip), 0, Some(0), 0, 8, 3),
        123 => (LinkKind::Other(O::SunAtm), 0, Some(SUNATM_PAYLOAD), SUNATM_PAYLOAD, 8, 3),
        140 => (LinkKind::Other(O::Mtp2), 0, None, NS, NS, NS),
        139 => (LinkKind::Other(O::Mtp2WithPhdr), 0, None, NS, NS, NS),
        141 => (LinkKind::Other(O::Mtp3), 0, None, NS, NS, NS),
        197 => (LinkKind::Other(O::Erf), 0, None, NS, NS, NS),
        165 => (LinkKind::Other(O::BacnetMsTp), 0, None, NS, NS, NS),
        117 => (LinkKind::Other(O::Pflog), 0, Some(0), 0, 0, 0),
        // DLT_DSA_TAG_BRCM, DLT_DSA_TAG_DSA (libpcap master; 1.10.3 has no
        // filtering for them): Ethernet with a 4-byte switch tag after the
        // source address.
        281 | 284 => (LinkKind::Ethernet, 0, Some(16), 18, 0, 3),
        // DLT_ENC: DLT_NULL's header (host-order address family) plus 8 bytes.
        109 => (LinkKind::Null, 0, Some(0), 12, 0, 0),
        // DLT_NETANALYZER(_TRANSPARENT): Ethernet after a 4-byte
        // pseudo-header (and the preamble and SFD).
        240 => (LinkKind::Ethernet, 4, Some(16), 18, 0, 3),
        241 => (LinkKind::Ethernet, 12, Some(24), 26, 0, 3),
        _ => return None,
    };
    let mut l = LinkLayer::for_linktype(LinkType::EN10MB)?;
    l.kind = kind;
    l.off_linkhdr = hdr;
    l.off_linktype = ty;
    l.off_linkpl = pl;
    l.off_nl = nl;
    l.off_nl_nosnap = nosnap;
    if kind == LinkKind::Other(O::Pflog) {
        l.pl_var = VarPart::PflogHdrLen;
    }
    Some(l)
}

impl OtherLink {
    /// libpcap's description of the link type (for messages).
    pub(crate) fn description(self) -> &'static str {
        match self {
            OtherLink::PppPppd => "PPP for pppd, with direction flag",
            OtherLink::PppSerial => "PPP over serial",
            OtherLink::PppEther => "PPPoE",
            OtherLink::PppBsdos => "BSD/OS PPP",
            OtherLink::CHdlc => "Cisco HDLC",
            OtherLink::Slip => "SLIP",
            OtherLink::SlipBsdos => "BSD/OS SLIP",
            OtherLink::Frelay => "Frame Relay",
            OtherLink::Ltalk => "Localtalk",
            OtherLink::Arcnet => "BSD ARCNET",
            OtherLink::ArcnetLinux => "Linux ARCNET",
            OtherLink::Ipnet => "Solaris ipnet",
            OtherLink::SymantecFirewall => "Symantec Firewall",
            OtherLink::AppleIpOverIeee1394 => "Apple IP-over-IEEE 1394",
            OtherLink::JuniperMfr => "Juniper Multi-Link Frame Relay",
            OtherLink::AtmRfc1483 => "RFC 1483 LLC-encapsulated ATM",
            OtherLink::AtmClip => "Linux Classical IP over ATM",
            OtherLink::SunAtm => "Sun raw ATM",
            OtherLink::Mtp2 => "SS7 MTP2",
            OtherLink::Mtp2WithPhdr => "SS7 MTP2 with Pseudo-header",
            OtherLink::Mtp3 => "SS7 MTP3",
            OtherLink::Erf => "Endace ERF header",
            OtherLink::BacnetMsTp => "BACnet MS/TP",
            OtherLink::Pflog => "OpenBSD pflog file",
        }
    }

    /// The SS7 field offsets (li, li_hsl, sio, opc, dpc, sls), if any.
    fn ss7(self) -> Option<Ss7Offsets> {
        match self {
            OtherLink::Mtp2 => Some(Ss7Offsets { li: 2, li_hsl: 4, sio: 3, opc: 4, dpc: 4, sls: 7 }),
            OtherLink::Mtp2WithPhdr => {
                Some(Ss7Offsets { li: 6, li_hsl: 8, sio: 7, opc: 8, dpc: 8, sls: 11 })
            }
            OtherLink::Erf => Some(Ss7Offsets { li: 22, li_hsl: 24, sio: 23, opc: 24, dpc: 24, sls: 27 }),
            _ => None,
        }
    }
}

/// Where the SS7 fields are (libpcap's `off_li` ... `off_sls`).
#[derive(Clone, Copy)]
struct Ss7Offsets {
    li: u32,
    li_hsl: u32,
    sio: u32,
    opc: u32,
    dpc: u32,
    sls: u32,
}

/// The pflog header length as libpcap computes it at run time:
/// `(hdr[0] + 3) & ~3`.
pub(crate) fn pflog_hdrlen() -> Value {
    Value::load(Size::Byte, 0)
        .bin(BinOp::Add, Value::Const(3))
        .bin(BinOp::And, Value::Const(0xffff_fffc))
}

/// Is the link type DLT_PFLOG?
pub(crate) fn is_pflog(lt: LinkType) -> bool {
    lt.0 == 117
}

/// `(cmp op, negate)` for a field test, as libpcap master builds it
/// (`gen_ncmp` with `reverse`, and `!=` as a negated `==`).
fn relop(op: RelOp) -> (CmpOp, bool) {
    match op {
        RelOp::Eq => (CmpOp::Eq, false),
        RelOp::Ne => (CmpOp::Eq, true),
        RelOp::Gt => (CmpOp::Gt, false),
        RelOp::Ge => (CmpOp::Ge, false),
        RelOp::Lt => (CmpOp::Ge, true),
        RelOp::Le => (CmpOp::Gt, true),
    }
}

impl Lowerer<'_> {
    /// `DLT_X`, as libpcap master names the link type in messages.
    pub(crate) fn dlt_name(&self) -> String {
        match self.opts.linktype.name() {
            Some(n) => format!("DLT_{n}"),
            None => format!("DLT {}", self.opts.linktype.0),
        }
    }

    /// A field compared with `test`, masked unless the mask is all ones.
    fn field_test(&self, off: u32, size: Size, mask: u32, test: FieldTest, v: u32) -> Pred {
        let (op, negate) = relop(test.op);
        let t = self.ncmp(Rel::Packet, off, size, mask, op, false, v);
        if negate {
            t.not()
        } else {
            t
        }
    }

    /// `gen_linktype` for the link types of this file.
    pub(crate) fn other_linktype(&self, o: OtherLink, ll_proto: u32) -> Result<Pred> {
        use OtherLink as O;
        // libpcap master range-checks `link proto N` against the field.
        match o {
            O::PppPppd | O::PppSerial | O::PppEther | O::PppBsdos => {
                self.assert_maxval("PPP protocol", ll_proto, 65535)?
            }
            O::CHdlc => self.assert_maxval("HDLC protocol", ll_proto, 65535)?,
            O::SymantecFirewall | O::AppleIpOverIeee1394 => {
                self.assert_maxval("EtherType", ll_proto, 65535)?
            }
            _ => {}
        }
        let ty_h = |v: u32| self.cmp(Rel::LinkType, 0, Size::Half, v);
        let ty_b = |v: u32| self.cmp(Rel::LinkType, 0, Size::Byte, v);
        Ok(match o {
            O::PppPppd | O::PppSerial | O::PppEther => {
                ty_h(super::link::ethertype_to_ppptype(ll_proto))
            }
            O::PppBsdos => match ll_proto {
                // IP, Van Jacobson compressed and uncompressed TCP/IP.
                ethertype::IP => ty_h(0x0021).or(ty_h(0x002d)).or(ty_h(0x002f)),
                p => ty_h(super::link::ethertype_to_ppptype(p)),
            },
            O::CHdlc => match ll_proto {
                llcsap::ISONS => ty_h((llcsap::ISONS << 8) | llcsap::ISONS),
                p => ty_h(p),
            },
            O::Slip | O::SlipBsdos => match ll_proto {
                ethertype::IP => self.mcmp(Rel::LinkHdr, 0, Size::Byte, 0x40, 0xf0),
                ethertype::IPV6 => self.mcmp(Rel::LinkHdr, 0, Size::Byte, 0x60, 0xf0),
                _ => Pred::False,
            },
            O::Frelay => {
                let nlpid = |n: u32| self.cmp(Rel::LinkHdr, 2, Size::Half, (0x03 << 8) | n);
                match ll_proto {
                    ethertype::IP => nlpid(0xcc),
                    ethertype::IPV6 => nlpid(0x8e),
                    // CLNP, ES-IS, IS-IS.
                    llcsap::ISONS => nlpid(0x81).or(nlpid(0x82)).or(nlpid(0x83)),
                    _ => Pred::False,
                }
            }
            O::Ltalk => {
                if ll_proto == ethertype::ATALK {
                    Pred::True
                } else {
                    Pred::False
                }
            }
            O::Arcnet | O::ArcnetLinux => match ll_proto {
                ethertype::IPV6 => ty_b(arctype::INET6),
                ethertype::IP => ty_b(arctype::IP).or(ty_b(arctype::IP_OLD)),
                ethertype::ARP => ty_b(arctype::ARP).or(ty_b(arctype::ARP_OLD)),
                ethertype::REVARP => ty_b(arctype::REVARP),
                ethertype::ATALK => ty_b(arctype::ATALK),
                _ => Pred::False,
            },
            O::Ipnet => match ll_proto {
                ethertype::IP => self.cmp(Rel::LinkHdr, 1, Size::Byte, 2),
                ethertype::IPV6 => self.cmp(Rel::LinkHdr, 1, Size::Byte, 26),
                _ => Pred::False,
            },
            O::SymantecFirewall | O::AppleIpOverIeee1394 => ty_h(ll_proto),
            O::JuniperMfr => self.mcmp(Rel::LinkHdr, 0, Size::Word, 0x4d47_4300, 0xffff_ff00),

            O::AtmRfc1483 | O::AtmClip => self.llc_linktype(ll_proto),
            O::SunAtm => {
                let llc = self.cmp_masked_hdr(SUNATM_PROTO, PT_LLC, 0x0f);
                llc.and(self.llc_linktype(ll_proto))
            }
            O::Pflog => match ll_proto {
                ethertype::IP => self.cmp(Rel::LinkHdr, pfloghdr::AF, Size::Byte, 2),
                // AF_INET6 as on Linux, where the reference was built.
                ethertype::IPV6 => self.cmp(Rel::LinkHdr, pfloghdr::AF, Size::Byte, 10),
                _ => Pred::False,
            },
            // libpcap master has no link-type test for BACnet MS/TP (1.10.3
            // compared the preamble, 0x55ff, whatever the protocol).
            O::Mtp2 | O::Mtp2WithPhdr | O::Mtp3 | O::Erf | O::BacnetMsTp => {
                return self.err(format!(
                    "link-layer type filtering not implemented for {}",
                    self.dlt_name()
                ))
            }
        })
    }

    /// `iso proto N` where the link type has its own form: Frame Relay
    /// compares control and NLPID together; Cisco HDLC has a pad byte
    /// before the NLPID.
    pub(crate) fn other_iso_proto(&self, v: u32) -> Option<Result<Pred>> {
        match self.link.kind {
            LinkKind::Other(OtherLink::Frelay) => {
                Some(Ok(self.cmp(Rel::LinkHdr, 2, Size::Half, (0x03 << 8) | v)))
            }
            LinkKind::Other(OtherLink::CHdlc) => Some(
                self.gen_linktype((llcsap::ISONS << 8) | llcsap::ISONS)
                    .map(|lt| lt.and(self.cmp(Rel::LinkPlNoSnap, 1, Size::Byte, v))),
            ),
            _ => None,
        }
    }

    /// `byte & mask == v` at `off` of the link-layer header.
    fn cmp_masked_hdr(&self, off: u32, v: u32, mask: u32) -> Pred {
        self.mcmp(Rel::LinkHdr, off, Size::Byte, v, mask)
    }

    /// `llc` (`gen_llc_internal`) where libpcap 1.10.3 decides by the DLT
    /// rather than by the link-layer kind (`None`: by the kind): SunATM
    /// checks the LLC protocol type, RFC 1483 ATM is always LLC
    /// (`gen_true`), and the netANALYZER pseudo-header link types, Ethernet
    /// to everything else, have no `llc`. (After `lane`, the link is
    /// Ethernet: 1.10.3's DLT_EN10MB.)
    pub(crate) fn other_llc(&self) -> Option<Result<Pred>> {
        if self.link.lane {
            return None;
        }
        match self.link.kind {
            LinkKind::Other(OtherLink::SunAtm) => Some(Ok(self.cmp_masked_hdr(SUNATM_PROTO, PT_LLC, 0x0f))),
            LinkKind::Other(OtherLink::AtmRfc1483) => Some(Ok(Pred::True)),
            LinkKind::Ethernet if matches!(self.opts.linktype.0, 240 | 241) => {
                let what = if self.opts.linktype.0 == 240 {
                    "Ethernet with Hilscher netANALYZER pseudo-header"
                } else {
                    "Ethernet with Hilscher netANALYZER pseudo-header and with preamble and SFD"
                };
                Some(self.err(format!("'llc' not supported for {what}")))
            }
            _ => None,
        }
    }

    /// `inbound`/`outbound` on the link types of this file that have a
    /// direction (`None`: not one of them).
    pub(crate) fn other_inbound(&self, outbound: bool) -> Option<Pred> {
        let pick = |inb: u32, out: u32| if outbound { out } else { inb };
        // The DSA tags (libpcap master): the direction bits of the tag.
        match self.opts.linktype.0 {
            281 => return Some(self.mcmp(Rel::Packet, 12, Size::Byte, pick(0x00, 0x20), 0xe0)),
            // Marvell DSA: mode in the top 2 bits; to the CPU (0) or to a
            // sniffer (2) is inbound, from the CPU (1) outbound.
            284 if outbound => return Some(self.mcmp(Rel::Packet, 12, Size::Byte, 0x40, 0xc0)),
            284 => return Some(self.mcmp(Rel::Packet, 12, Size::Byte, 0x00, 0x40)),
            _ => {}
        }
        let LinkKind::Other(o) = self.link.kind else { return None };
        Some(match o {
            // 1.10.3: `link[0] == 0`, `outbound` its negation (master
            // makes `outbound` `link[0] == 1`).
            OtherLink::Slip => {
                let p = self.cmp(Rel::LinkHdr, 0, Size::Byte, 0);
                if outbound {
                    p.not()
                } else {
                    p
                }
            }
            OtherLink::PppPppd => self.cmp(Rel::LinkHdr, 0, Size::Byte, pick(0, 1)),
            OtherLink::Ipnet => self.cmp(Rel::LinkHdr, 2, Size::Half, pick(2, 1)),
            OtherLink::JuniperMfr => self.mcmp(Rel::LinkHdr, 3, Size::Byte, pick(1, 0), 0x01),
            OtherLink::Pflog => self.cmp(Rel::LinkHdr, pfloghdr::DIR, Size::Byte, pick(1, 2)),
            _ => return None,
        })
    }

    /// Is the link type one of the DSA tags (DLT_DSA_TAG_BRCM,
    /// DLT_DSA_TAG_DSA), which only libpcap master filters?
    pub(crate) fn is_dsa(&self) -> bool {
        matches!(self.opts.linktype.0, 281 | 284)
    }

    /// Is the link layer ARCnet (MAC-8 addresses)?
    pub(crate) fn is_arcnet(&self) -> bool {
        matches!(self.link.kind, LinkKind::Other(OtherLink::Arcnet | OtherLink::ArcnetLinux))
    }

    /// `gen_ahostop`: an ARCnet address (source at 0, destination at 1).
    pub(crate) fn arcnet_host(&self, addr: u8, dir: Dir) -> Result<Pred> {
        let one = |off: u32| self.cmp(Rel::LinkHdr, off, Size::Byte, u32::from(addr));
        match dir {
            Dir::Src => Ok(one(0)),
            Dir::Dst => Ok(one(1)),
            Dir::And => Ok(one(0).and(one(1))),
            Dir::Or => Ok(one(0).or(one(1))),
            Dir::Wlan(d) => {
                let (w, plural) = super::wlan_dir_words(d);
                let verb = if plural { "are" } else { "is" };
                self.err(format!("{w} {verb} only supported on 802.11"))
            }
        }
    }

    /// `[link] [dir] [host] $XX`: an ARCnet (MAC-8) address, as libpcap
    /// master checks the qualifiers.
    pub(crate) fn mac8_host(&self, q: &Qual, a: u8) -> Result<Pred> {
        if !matches!(q.proto, None | Some(ProtoQual::Link)) {
            return self.err("'link' is the only valid proto qualifier for 'host $XX'");
        }
        if !matches!(q.addr, None | Some(AddrQual::Host)) {
            return self.err("'host' is the only valid addr qualifier for '$XX'");
        }
        if self.link.kind == LinkKind::Other(OtherLink::BacnetMsTp) {
            return self.mstp_host(a, Dir::of(q.dir));
        }
        if !self.is_arcnet() {
            return self.err(format!("'link host $XX' not supported on {}", self.dlt_name()));
        }
        self.arcnet_host(a, Dir::of(q.dir))
    }

    /// A BACnet MS/TP address (libpcap master: destination at 3, source
    /// at 4).
    pub(crate) fn mstp_host(&self, addr: u8, dir: Dir) -> Result<Pred> {
        let one = |off: u32| self.cmp(Rel::LinkHdr, off, Size::Byte, u32::from(addr));
        match dir {
            Dir::Src => Ok(one(4)),
            Dir::Dst => Ok(one(3)),
            Dir::And => Ok(one(4).and(one(3))),
            Dir::Or => Ok(one(4).or(one(3))),
            Dir::Wlan(d) => {
                let (w, plural) = super::wlan_dir_words(d);
                let verb = if plural { "are" } else { "is" };
                self.err(format!("{w} {verb} only supported on 802.11"))
            }
        }
    }

    /// `[link] broadcast` on the link types of this file that have one
    /// (`None`: not one of them).
    pub(crate) fn other_broadcast(&self) -> Option<Result<Pred>> {
        if self.is_arcnet() {
            // ARCnet's broadcast address is 0.
            return Some(self.arcnet_host(0, Dir::Dst));
        }
        if self.link.kind == LinkKind::Other(OtherLink::BacnetMsTp) {
            // MS/TP broadcasts go to 255 (libpcap master).
            return Some(self.mstp_host(0xff, Dir::Dst));
        }
        None
    }

    /// `fisu`, `lssu`, `msu` and the `h` forms (`gen_mtp2type_abbrev`).
    pub(crate) fn mtp2_type(&self, t: Mtp2Type) -> Result<Pred> {
        let name = match t {
            Mtp2Type::Fisu => "fisu",
            Mtp2Type::Lssu => "lssu",
            Mtp2Type::Msu => "msu",
            Mtp2Type::Hfisu => "hfisu",
            Mtp2Type::Hlssu => "hlssu",
            Mtp2Type::Hmsu => "hmsu",
        };
        let off = match self.link.kind {
            LinkKind::Other(o) => o.ss7(),
            _ => None,
        };
        let Some(off) = off else {
            return self.err(format!("'{name}' supported only on SS7"));
        };
        let li = |op: CmpOp, reverse: bool, v: u32| {
            self.ncmp(Rel::Packet, off.li, Size::Byte, 0x3f, op, reverse, v)
        };
        let hli = |op: CmpOp, reverse: bool, v: u32| {
            self.ncmp(Rel::Packet, off.li_hsl, Size::Half, 0xff80, op, reverse, v)
        };
        Ok(match t {
            Mtp2Type::Fisu => li(CmpOp::Eq, false, 0),
            Mtp2Type::Lssu => li(CmpOp::Gt, false, 0).and(li(CmpOp::Gt, true, 2)),
            Mtp2Type::Msu => li(CmpOp::Gt, false, 2),
            Mtp2Type::Hfisu => hli(CmpOp::Eq, false, 0),
            Mtp2Type::Hlssu => hli(CmpOp::Gt, false, 0).and(hli(CmpOp::Gt, true, 0x0100)),
            Mtp2Type::Hmsu => hli(CmpOp::Gt, false, 0x0100),
        })
    }

    /// `sio`, `opc`, `dpc`, `sls` and the `h` forms (`gen_mtp3field_code`,
    /// as libpcap master: range checks, `!=` negated, 2-byte `dpc`).
    pub(crate) fn mtp3_field(&self, f: Mtp3Field, test: FieldTest) -> Result<Pred> {
        use Mtp3Field as F;
        let (name, hsl) = match f {
            F::Sio => ("sio", 0),
            F::Opc => ("opc", 0),
            F::Dpc => ("dpc", 0),
            F::Sls => ("sls", 0),
            F::Hsio => ("hsio", 3),
            F::Hopc => ("hopc", 3),
            F::Hdpc => ("hdpc", 3),
            F::Hsls => ("hsls", 3),
        };
        let off = match self.link.kind {
            LinkKind::Other(o) => o.ss7(),
            _ => None,
        };
        let Some(off) = off else {
            return self.err(format!("'{name}' supported only on SS7"));
        };
        let v = test.value;
        Ok(match f {
            F::Sio | F::Hsio => {
                self.assert_maxval(name, v, 255)?;
                self.field_test(off.sio + hsl, Size::Byte, 0xffff_ffff, test, v)
            }
            F::Opc | F::Hopc => {
                self.assert_maxval(name, v, 16383)?;
                let enc = ((v & 0x3c00) >> 10) + ((v & 0x03fc) << 6) + ((v & 0x0003) << 22);
                self.field_test(off.opc + hsl, Size::Word, 0x00c0_ff0f, test, enc)
            }
            F::Dpc | F::Hdpc => {
                self.assert_maxval(name, v, 16383)?;
                let enc = ((v & 0xff) << 8) | ((v & 0x3f00) >> 8);
                self.field_test(off.dpc + hsl, Size::Half, 0xff3f, test, enc)
            }
            F::Sls | F::Hsls => {
                self.assert_maxval(name, v, 15)?;
                self.field_test(off.sls + hsl, Size::Byte, 0xf0, test, v << 4)
            }
        })
    }

    /// Is the link layer raw ATM with a pseudo-header (libpcap's `is_atm`)?
    fn is_atm(&self) -> bool {
        self.opts.linktype.0 == 123
    }

    /// `vpi`/`vci` tests (`gen_atmfield_code`).
    pub(crate) fn atm_field(&self, f: AtmField, test: FieldTest) -> Result<Pred> {
        let (name, max) = match f {
            AtmField::Vpi => ("vpi", 255),
            AtmField::Vci => ("vci", 65535),
        };
        if !self.is_atm() {
            return self.err(format!("'{name}' supported only on SUNATM"));
        }
        self.assert_maxval(name, test.value, max)?;
        Ok(match f {
            AtmField::Vpi => self.field_test(SUNATM_VPI, Size::Byte, 0xffff_ffff, test, test.value),
            AtmField::Vci => self.field_test(SUNATM_VCI, Size::Half, 0xffff_ffff, test, test.value),
        })
    }

    /// `vpi == 0 and vci == n`.
    fn atm_circuit(&self, vci: u32) -> Pred {
        self.cmp(Rel::Packet, SUNATM_VPI, Size::Byte, 0).and(self.cmp(Rel::Packet, SUNATM_VCI, Size::Half, vci))
    }

    /// A Q.2931 message type (`gen_msg_abbrev`).
    fn atm_msg(&self, t: u32) -> Pred {
        self.cmp(Rel::Packet, SUNATM_PAYLOAD + MSG_TYPE_POS, Size::Byte, t)
    }

    /// The ATM abbreviations (`gen_atmtype_abbrev`, `gen_atmmulti_abbrev`).
    /// `lane` switches the rest of the expression to LANE-emulated Ethernet.
    pub(crate) fn atm_abbrev(&mut self, t: AtmType) -> Result<Pred> {
        let name = match t {
            AtmType::Lane => "lane",
            AtmType::Oamf4Sc => "oamf4sc",
            AtmType::Oamf4Ec => "oamf4ec",
            AtmType::Oamf4 => "oamf4",
            AtmType::Oam => "oam",
            AtmType::Metac => "metac",
            AtmType::Bcc => "bcc",
            AtmType::Sc => "sc",
            AtmType::Ilmic => "ilmic",
            AtmType::Connectmsg => "connectmsg",
            AtmType::Metaconnect => "metaconnect",
        };
        if !self.is_atm() {
            return self.err(format!("'{name}' supported only on SUNATM"));
        }
        // Q.2931 message types.
        const SETUP: u32 = 0x05;
        const CALL_PROCEED: u32 = 0x02;
        const CONNECT: u32 = 0x07;
        const CONNECT_ACK: u32 = 0x0f;
        const RELEASE: u32 = 0x4d;
        const RELEASE_DONE: u32 = 0x5a;
        Ok(match t {
            AtmType::Metac => self.atm_circuit(1),
            AtmType::Bcc => self.atm_circuit(2),
            AtmType::Oamf4Sc => self.atm_circuit(3),
            AtmType::Oamf4Ec => self.atm_circuit(4),
            AtmType::Sc => self.atm_circuit(5),
            AtmType::Ilmic => self.atm_circuit(16),
            AtmType::Oamf4 | AtmType::Oam => {
                let vci = |v| self.cmp(Rel::Packet, SUNATM_VCI, Size::Half, v);
                self.cmp(Rel::Packet, SUNATM_VPI, Size::Byte, 0).and(vci(3).or(vci(4)))
            }
            AtmType::Connectmsg | AtmType::Metaconnect => {
                let mut types = vec![RELEASE_DONE, RELEASE];
                if t == AtmType::Connectmsg {
                    types.push(CONNECT_ACK);
                }
                types.extend([CONNECT, SETUP, CALL_PROCEED]);
                let msgs = types.into_iter().map(|m| self.atm_msg(m)).reduce(Pred::or).unwrap_or(Pred::False);
                let circuit = if t == AtmType::Connectmsg { self.atm_circuit(5) } else { self.atm_circuit(1) };
                circuit.and(msgs)
            }
            AtmType::Lane => {
                let p = self.mcmp(Rel::Packet, SUNATM_PROTO, Size::Byte, PT_LANE, 0x0f);
                // LANE-emulated Ethernet after the 2-byte LE header.
                let hdr = SUNATM_PAYLOAD + 2;
                self.link.kind = LinkKind::Ethernet;
                self.link.off_linkhdr = hdr;
                self.link.off_linktype = Some(hdr + 12);
                self.link.off_linkpl = hdr + 14;
                self.link.off_nl = 0;
                self.link.off_nl_nosnap = 3;
                self.link.lane = true;
                p
            }
        })
    }

    /// libpcap computes a variable link-layer payload offset once, at the
    /// start of the program, when the filter uses it: on DLT_PFLOG that
    /// loads the header's first byte, so an empty packet is rejected
    /// whatever the filter says. This puts the same load in front of `body`.
    pub(crate) fn pflog_prologue(&self, body: Pred) -> Pred {
        if !self.var_pl_used.get() {
            return body;
        }
        // Always true once the byte could be loaded.
        Pred::test(Value::load(Size::Byte, 0), CmpOp::Ge, Value::Const(0)).and(body)
    }

    /// `p`, after the LANE check when the link layer is LANE Ethernet
    /// (after a tunnel: the check that there is an inner Ethernet header,
    /// `tunnel.rs`).
    pub(crate) fn after_lane_check(&self, p: Pred) -> Pred {
        if let Some(c) = self.encap_ll_check() {
            return c.and(p);
        }
        match self.lane_check() {
            Some(c) => c.and(p),
            None => p,
        }
    }

    /// On LANE (after `lane` on SunATM), Ethernet tests first check that
    /// the frame is not an LE control frame (`gen_prevlinkhdr_check`).
    pub(crate) fn lane_check(&self) -> Option<Pred> {
        self.link.lane.then(|| self.cmp(Rel::Packet, SUNATM_PAYLOAD, Size::Half, 0xff00).not())
    }

    /// The pflog primitives (`gen_pf_ifname`, `gen_pf_ruleset`,
    /// `gen_pf_rnr`, `gen_pf_srnr`, `gen_pf_reason`, `gen_pf_action`).
    pub(crate) fn pflog(&self, p: &Pflog) -> Result<Pred> {
        let name = match p {
            Pflog::Ifname(_) => "ifname",
            Pflog::Ruleset(_) => "ruleset",
            Pflog::Rulenum(_) => "rnr",
            Pflog::Subrulenum(_) => "srnr",
            Pflog::Reason(_) => "reason",
            Pflog::Action(_) => "action",
        };
        if self.link.kind != LinkKind::Other(OtherLink::Pflog) {
            return self.err(format!("'{name}' supported only on PFLOG linktype"));
        }
        let string = |off: u32, s: &str, max: usize, what: &str| -> Result<Pred> {
            if s.len() >= max {
                return self.err(format!("{what} interface name too long"));
            }
            Ok(self.bcmp(Rel::LinkHdr, off, s.as_bytes()))
        };
        match p {
            Pflog::Ifname(s) => string(pfloghdr::IFNAME, s, pfloghdr::IFNAMSIZ, "ifname"),
            Pflog::Ruleset(s) => {
                if s.len() >= pfloghdr::RULESET_NAME_SIZE {
                    return self.err("ruleset name too long");
                }
                Ok(self.bcmp(Rel::LinkHdr, pfloghdr::RULESET, s.as_bytes()))
            }
            Pflog::Rulenum(n) => Ok(self.cmp(Rel::LinkHdr, pfloghdr::RULENR, Size::Word, *n)),
            Pflog::Subrulenum(n) => Ok(self.cmp(Rel::LinkHdr, pfloghdr::SUBRULENR, Size::Word, *n)),
            Pflog::Reason(n) => Ok(self.cmp(Rel::LinkHdr, pfloghdr::REASON, Size::Byte, *n)),
            Pflog::Action(n) => Ok(self.cmp(Rel::LinkHdr, pfloghdr::ACTION, Size::Byte, *n)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_layout_has_a_kind_and_name() {
        for lt in LinkType::all() {
            if let Some(l) = layout(lt) {
                if let LinkKind::Other(o) = l.kind {
                    assert!(!o.description().is_empty());
                }
                assert!(lt.name().is_some(), "{lt:?}");
            }
        }
    }
}
