//! Encapsulations and the 802.2/OSI/DECnet primitives: `vlan`, `mpls`,
//! `pppoed`, `pppoes`, `llc`, the ISO family (`iso`, `clnp`, `esis`,
//! `isis`, `l1`, `l2`, `iih`, `lsp`, `snp`, `csnp`, `psnp`, `iso proto`,
//! `isis proto`) and DECnet hosts. Mirrors libpcap 1.10.3's `gen_vlan`,
//! `gen_mpls`, `gen_pppoed`, `gen_pppoes`, `gen_llc*`, the ISO cases of
//! `gen_proto`/`gen_proto_abbrev`, and `gen_dnhostop`.
//!
//! # Offsets move for everything after an encapsulation
//!
//! As in libpcap, `vlan`, `mpls` and `pppoes` change the lowering state
//! ([`LinkLayer`](super::link::LinkLayer)) for every primitive lowered
//! after them, in the order of the expression text, whatever the boolean
//! structure: across `or`, out of parentheses and under `not`. So
//! `(vlan 1 and ip) or (vlan 2 and ip)` looks for the second VLAN tag
//! inside the first (QinQ), exactly as libpcap does (libpcap#798):
//!
//! - `vlan [id]` (Ethernet only): TPID 0x8100, 0x88a8 or 0x9100 at the
//!   current type field, then the 12-bit VLAN id; the type field and the
//!   payload move 4 bytes on;
//! - `mpls [label]` (Ethernet, and PPP after `pppoes`): EtherType 0x8847
//!   (PPP protocol 0x0281) for the first label, the previous label's
//!   bottom-of-stack bit clear for the following ones; the network layer
//!   moves 4 bytes on. Inside a label stack, link-type tests can only ask
//!   for IPv4 or IPv6 (the bottom-of-stack bit and the version nibble);
//!   anything else is "unsupported protocol over mpls";
//! - `pppoes [id]`: EtherType 0x8864, the 16-bit session id, then the link
//!   layer *becomes PPP*, whose protocol field is 6 bytes past the PPPoE
//!   header (so `ip` tests PPP protocol 0x21 there).
//!
//! # IS-IS PDU types
//!
//! As 1.10.3, `isis proto N` (and `l1`, `iih`, `csnp`...) compare the whole
//! PDU type byte; libpcap master masks it with 0x1f first. See the
//! deliberate-differences section of the module `lower` (sift follows
//! 1.10.3 here, because master does not reject anything 1.10.3 accepts).

use super::link::{LinkKind, RadioHeader, Rel};
use super::{Dir, Lowerer, Result};
use crate::pred::{CmpOp, Pred, Size};
use sift_syntax::ast::{Llc, ProtoQual};
use sift_syntax::names::{ethertype, llcsap};

/// 802.1Q VLAN tag protocol identifier.
const ETHERTYPE_8021Q: u32 = 0x8100;
/// 802.1ad (QinQ service tag).
const ETHERTYPE_8021AD: u32 = 0x88a8;
/// Pre-standard QinQ.
const ETHERTYPE_8021QINQ: u32 = 0x9100;
/// MPLS unicast.
const ETHERTYPE_MPLS: u32 = 0x8847;
/// PPP protocol number of MPLS unicast.
const PPP_MPLS_UCAST: u32 = 0x0281;
/// PPPoE discovery stage.
const ETHERTYPE_PPPOED: u32 = 0x8863;
/// PPPoE session stage.
const ETHERTYPE_PPPOES: u32 = 0x8864;

/// OSI network-layer protocol ids (NLPID) after LLC 0xfefe.
pub(crate) mod nlpid {
    /// ISO 8473 CLNP.
    pub const CLNP: u32 = 0x81;
    /// ISO 9542 ES-IS.
    pub const ESIS: u32 = 0x82;
    /// ISO 10589 IS-IS.
    pub const ISIS: u32 = 0x83;
}

/// IS-IS PDU types.
mod isis {
    pub const L1_LAN_IIH: u32 = 15;
    pub const L2_LAN_IIH: u32 = 16;
    pub const PTP_IIH: u32 = 17;
    pub const L1_LSP: u32 = 18;
    pub const L2_LSP: u32 = 20;
    pub const L1_CSNP: u32 = 24;
    pub const L2_CSNP: u32 = 25;
    pub const L1_PSNP: u32 = 26;
    pub const L2_PSNP: u32 = 27;
}

/// LLC control-field values of the S-format subtypes (`rr`, `rnr`, `rej`);
/// every other subtype value the parser gives is a U-format one.
const LLC_S_SUBTYPES: [u32; 3] = [0x01, 0x05, 0x09];

impl Lowerer<'_> {
    /// libpcap's description of the current link type, for messages
    /// (`pcap_datalink_val_to_description`).
    pub(crate) fn link_description(&self) -> &'static str {
        match self.link.kind {
            LinkKind::Ethernet => "Ethernet",
            LinkKind::Null => "BSD loopback",
            LinkKind::Loop => "OpenBSD loopback",
            LinkKind::Raw => "Raw IP",
            LinkKind::Ipv4 => "Raw IPv4",
            LinkKind::Ipv6 => "Raw IPv6",
            LinkKind::LinuxSll => "Linux cooked v1",
            LinkKind::LinuxSll2 => "Linux cooked v2",
            LinkKind::Ppp => "PPP",
            LinkKind::Other(o) => o.description(),
            LinkKind::Fddi => "FDDI",
            LinkKind::TokenRing => "Token ring",
            LinkKind::IpOverFc => "RFC 2625 IP-over-Fibre Channel",
            LinkKind::Ieee80211 => match self.link.radio {
                None => "802.11",
                Some(RadioHeader::Radiotap) => "802.11 plus radiotap header",
                Some(RadioHeader::Avs) => "802.11 plus AVS radio information header",
                Some(RadioHeader::Prism) => "802.11 plus Prism header",
                Some(RadioHeader::Ppi) => "Per-Packet Information",
            },
        }
    }

    /// `vlan [id]` (`gen_vlan`, without the Linux BPF extensions, as on a
    /// dead handle or a savefile).
    pub(crate) fn vlan(&mut self, id: Option<u32>) -> Result<Pred> {
        if self.link.mpls_depth > 0 {
            return self.err("no VLAN match after MPLS");
        }
        // libpcap 1.10.3: Ethernet and the 802.11 types but PPI.
        let wlan = self.link.kind == LinkKind::Ieee80211 && self.link.radio != Some(RadioHeader::Ppi);
        if self.link.kind != LinkKind::Ethernet && !wlan {
            return self.err(format!("no VLAN support for {}", self.link_description()));
        }
        let tpid = self
            .gen_linktype(ETHERTYPE_8021Q)?
            .or(self.gen_linktype(ETHERTYPE_8021AD)?)
            .or(self.gen_linktype(ETHERTYPE_8021QINQ)?);
        let pred = match id {
            Some(v) => {
                self.assert_maxval("VLAN tag", v, 0x0fff)?;
                tpid.and(self.mcmp(Rel::LinkPl, 0, Size::Half, v, 0x0fff))
            }
            None => tpid,
        };
        self.link.off_linkpl = self.link.off_linkpl.wrapping_add(4);
        self.link.off_linktype = self.link.off_linktype.map(|o| o.wrapping_add(4));
        self.link.vlan_depth = self.link.vlan_depth.saturating_add(1);
        Ok(pred)
    }

    /// `mpls [label]` (`gen_mpls`).
    pub(crate) fn mpls(&mut self, label: Option<u32>) -> Result<Pred> {
        let first = if self.link.mpls_depth > 0 {
            // Inside a stack: the previous label is not the bottom one.
            self.mcmp(Rel::LinkPl, 0u32.wrapping_sub(2), Size::Byte, 0, 0x01)
        } else {
            match self.link.kind {
                LinkKind::Ethernet => self.gen_linktype(ETHERTYPE_MPLS)?,
                // libpcap: DLT_C_HDLC carries EtherTypes (`ldh [2]; jeq #0x8847`).
                LinkKind::Other(super::links::OtherLink::CHdlc) => self.gen_linktype(ETHERTYPE_MPLS)?,
                LinkKind::Ppp => self.gen_linktype(PPP_MPLS_UCAST)?,
                _ => {
                    return self.err(format!("no MPLS support for {}", self.link_description()))
                }
            }
        };
        let pred = match label {
            Some(v) => {
                self.assert_maxval("MPLS label", v, 0xf_ffff)?;
                first.and(self.mcmp(Rel::LinkPl, 0, Size::Word, v << 12, 0xffff_f000))
            }
            None => first,
        };
        self.link.off_nl = self.link.off_nl.wrapping_add(4);
        self.link.off_nl_nosnap = self.link.off_nl_nosnap.wrapping_add(4);
        self.link.mpls_depth = self.link.mpls_depth.saturating_add(1);
        Ok(pred)
    }

    /// `pppoed` (`gen_pppoed`).
    pub(crate) fn pppoed(&mut self) -> Result<Pred> {
        self.gen_linktype(ETHERTYPE_PPPOED)
    }

    /// `pppoes [id]` (`gen_pppoes`): afterwards the link layer is PPP.
    pub(crate) fn pppoes(&mut self, id: Option<u32>) -> Result<Pred> {
        let lt = self.gen_linktype(ETHERTYPE_PPPOES)?;
        let pred = match id {
            Some(v) => {
                self.assert_maxval("PPPoE session number", v, 0xffff)?;
                lt.and(self.mcmp(Rel::LinkPl, 0, Size::Word, v, 0xffff))
            }
            None => lt,
        };
        // The PPP header (just its 2-byte protocol field) follows the
        // 6-byte PPPoE header.
        let ppp = self.link.nl().wrapping_add(6);
        self.link.kind = LinkKind::Ppp;
        // After a variable-length header (802.11), the PPP header is at a
        // run-time offset too: the payload's (libpcap's PUSH_LINKHDR).
        self.link.hdr_var = self.link.pl_var;
        self.link.type_var = self.link.pl_var;
        self.link.off_linkhdr = ppp;
        self.link.off_linktype = Some(ppp);
        self.link.off_linkpl = ppp.wrapping_add(2);
        self.link.off_nl = 0;
        self.link.off_nl_nosnap = 0;
        Ok(pred)
    }

    /// The frame is 802.2 LLC (`gen_llc_internal`).
    fn llc_internal(&self) -> Result<Pred> {
        if let Some(r) = self.other_llc() {
            return r;
        }
        match self.link.kind {
            LinkKind::Ethernet => {
                // An 802.3 length, and not NetWare's raw 802.3 (FF FF).
                let is_8023 = self.cmp_gt(Rel::LinkType, 0, Size::Half, super::link::ETHERMTU).not();
                let not_raw_ipx = self.cmp(Rel::Llc, 0, Size::Half, 0xffff).not();
                Ok(is_8023.and(not_raw_ipx))
            }
            // libpcap does not check for LLC frames there (`gen_true`).
            LinkKind::Fddi | LinkKind::TokenRing => Ok(Pred::True),
            LinkKind::Ieee80211 => Ok(self.wlan_data_frame()),
            _ => self.err(format!("'llc' not supported for {}", self.link_description())),
        }
    }

    /// `llc [kind]` (`gen_llc`, `gen_llc_i`, `gen_llc_s`, `gen_llc_u`,
    /// `gen_llc_s_subtype`, `gen_llc_u_subtype`).
    pub(crate) fn llc(&mut self, kind: &Llc) -> Result<Pred> {
        let base = self.llc_internal()?;
        let control = match kind {
            Llc::Any => return Ok(base),
            // I frames: the low bit of the control byte is clear.
            Llc::I => Pred::test(
                self.load(Rel::Llc, 2, Size::Byte),
                CmpOp::Set,
                crate::pred::Value::Const(0x01),
            )
            .not(),
            Llc::S => self.mcmp(Rel::Llc, 2, Size::Byte, 0x01, 0x03),
            Llc::U => self.mcmp(Rel::Llc, 2, Size::Byte, 0x03, 0x03),
            Llc::Subtype(v) if LLC_S_SUBTYPES.contains(v) => {
                self.mcmp(Rel::Llc, 2, Size::Byte, *v, 0x0f)
            }
            Llc::Subtype(v) => self.mcmp(Rel::Llc, 2, Size::Byte, *v, 0xef),
        };
        Ok(base.and(control))
    }

    /// `iso proto N` (the `Q_ISO` case of `gen_proto`): LLC 0xfefe, then
    /// the NLPID.
    pub(crate) fn iso_proto(&self, v: u32) -> Result<Pred> {
        self.assert_maxval("ISO protocol", v, 255)?;
        if let Some(p) = self.other_iso_proto(v) {
            return p;
        }
        let lt = self.gen_linktype(llcsap::ISONS)?;
        Ok(lt.and(self.cmp(Rel::LinkPlNoSnap, 0, Size::Byte, v)))
    }

    /// `isis proto N` (the `Q_ISIS` case of `gen_proto`): IS-IS, then the
    /// PDU type byte, compared whole as 1.10.3 does.
    pub(crate) fn isis_proto(&self, v: u32) -> Result<Pred> {
        self.assert_maxval("IS-IS PDU type", v, 31)?;
        let isis = self.iso_proto(nlpid::ISIS)?;
        Ok(isis.and(self.cmp(Rel::LinkPlNoSnap, 4, Size::Byte, v)))
    }

    /// The OSI abbreviations (`gen_proto_abbrev`): `esis`, `isis`, `clnp`,
    /// `l1`, `l2`, `iih`, `lsp`, `snp`, `csnp`, `psnp`. libpcap builds the
    /// lists by OR-ing each new test in *front* of the previous ones; the
    /// orders below are the resulting evaluation orders.
    pub(crate) fn iso_abbrev(&self, p: ProtoQual) -> Result<Pred> {
        use isis::*;
        let types: &[u32] = match p {
            ProtoQual::Esis => return self.iso_proto(nlpid::ESIS),
            ProtoQual::Isis => return self.iso_proto(nlpid::ISIS),
            ProtoQual::Clnp => return self.iso_proto(nlpid::CLNP),
            ProtoQual::L1 => &[L1_PSNP, L1_CSNP, L1_LSP, L1_LAN_IIH, PTP_IIH],
            ProtoQual::L2 => &[L2_PSNP, L2_CSNP, L2_LSP, L2_LAN_IIH, PTP_IIH],
            ProtoQual::Iih => &[PTP_IIH, L1_LAN_IIH, L2_LAN_IIH],
            ProtoQual::Lsp => &[L1_LSP, L2_LSP],
            ProtoQual::Snp => &[L2_PSNP, L1_PSNP, L1_CSNP, L2_CSNP],
            ProtoQual::Csnp => &[L1_CSNP, L2_CSNP],
            ProtoQual::Psnp => &[L1_PSNP, L2_PSNP],
            _ => return self.err("not an OSI protocol"),
        };
        let mut acc: Option<Pred> = None;
        for &t in types {
            let p = self.isis_proto(t)?;
            acc = Some(match acc {
                Some(a) => a.or(p),
                None => p,
            });
        }
        Ok(acc.unwrap_or(Pred::False))
    }

    /// A DECnet host (`gen_dnhostop`): the 16-bit address (little-endian
    /// on the wire) in the four data-packet header formats (short or long,
    /// with or without a padding byte).
    pub(crate) fn decnet_host(&self, addr: u32, dir: Dir) -> Result<Pred> {
        let (short, long) = match dir {
            Dir::Dst => (1u32, 7u32),
            Dir::Src => (3, 15),
            Dir::And => return Ok(self.decnet_host(addr, Dir::Src)?.and(self.decnet_host(addr, Dir::Dst)?)),
            Dir::Or => return Ok(self.decnet_host(addr, Dir::Src)?.or(self.decnet_host(addr, Dir::Dst)?)),
            Dir::Wlan(d) => {
                let (w, plural) = super::wlan_dir_words(d);
                let verb = if plural { "are" } else { "is" };
                return self.err(format!(
                    "{w} {verb} not valid qualifiers for addresses other than 802.11 MAC addresses"
                ));
            }
        };
        // The parser guarantees area <= 63 and node <= 1023.
        let a = u32::from((addr as u16).swap_bytes());
        let lt = self.gen_linktype(ethertype::DN)?;
        // Flags byte: pad bit (0x80), then the message format in the low
        // 3 bits (0x06 long data, 0x02 short data).
        let pad1_long = self
            .mcmp(Rel::LinkPl, 2, Size::Half, 0x8106, 0xff07)
            .and(self.cmp(Rel::LinkPl, 3 + long, Size::Half, a));
        let pad0_long = self
            .mcmp(Rel::LinkPl, 2, Size::Byte, 0x06, 0x07)
            .and(self.cmp(Rel::LinkPl, 2 + long, Size::Half, a));
        let pad1_short = self
            .mcmp(Rel::LinkPl, 2, Size::Half, 0x8102, 0xff07)
            .and(self.cmp(Rel::LinkPl, 3 + short, Size::Half, a));
        let pad0_short = self
            .mcmp(Rel::LinkPl, 2, Size::Byte, 0x02, 0x07)
            .and(self.cmp(Rel::LinkPl, 2 + short, Size::Half, a));
        let any = pad0_short.or(pad1_short).or(pad0_long).or(pad1_long);
        Ok(lt.and(any))
    }
}
