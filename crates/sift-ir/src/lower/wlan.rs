//! IEEE 802.11 and the other MAC-addressed link types with an 802.2 LLC
//! payload (FDDI, Token Ring, IP over Fibre Channel): libpcap's
//! `gen_wlanhostop`, `gen_fhostop`, `gen_thostop`, `gen_ipfchostop`,
//! `gen_p80211_type`, `gen_p80211_fcdir`, `gen_check_802_11_data_frame`,
//! `gen_llc_linktype`, and the run-time header lengths of 802.11 captures.
//!
//! # Run-time offsets
//!
//! On 802.11 link types the link-layer payload starts after an 802.11
//! header whose length depends on the frame (libpcap: 24 bytes, 26 for QoS
//! data frames, rounded up to a multiple of 4 when a radiotap header says
//! the driver padded it), and the 802.11 header itself may follow a radio
//! header whose length is in the packet (radiotap, AVS, Prism, PPI).
//! libpcap computes these lengths into scratch registers with a *prologue*
//! at the very start of the program, only when some load needs them: the
//! radio header length when a load is relative to the 802.11 header
//! (`wlan host`, `type`...), and the payload offset when a load is relative
//! to the payload (`ip`, `tcp port 80`, `llc`...). The prologue's loads
//! come before anything else, so they decide the verdict of short packets.
//!
//! sift's IR has no registers. Instead, the filter is lowered once per
//! *case* of the conditions the prologue branches on (QoS data frame or
//! not; radiotap padding or not; Prism or AVS header), each copy with the
//! offsets that hold in its case (the radio header length, a load or a
//! constant, plus a constant), behind tests of these conditions:
//!
//! ```text
//! [radiotap: pad ? (...) : (...)]  [prism: avs ? (...) : (...)]
//!     qos_data ? filter{hdr = radio + 26 (+ pad)} : filter{hdr = radio + 24 (+ pad)}
//! ```
//!
//! The condition tests perform exactly the prologue's loads (the radiotap
//! padding test selects its conditional loads arithmetically: its indexed
//! loads fall back to byte 0, known present, when libpcap's prologue
//! would not load), so a packet too short for the prologue is rejected
//! first, as by libpcap. When only the radio header length is needed, a
//! test that loads it and always holds stands for the prologue.

use super::link::{LinkKind, RadioHeader, Rel, VarPart};
use super::{wlan_dir_words, Dir, Lowerer, Result};
use crate::pred::{BinOp, CmpOp, Pred, Size, Value};
use sift_syntax::ast::{DirQual, Wlan};
use sift_syntax::names::{ethertype, llcsap};

/// The 802.11 header length without QoS control or padding.
const WLAN_HEADER_LEN: u32 = 24;
/// The Prism monitor-mode header length (when it is not an AVS header).
const PRISM_HEADER_LEN: u32 = 144;
/// `SWAPLONG(DLT_IEEE802_11)`: the little-endian DLT in a PPI header, as
/// a big-endian load of bytes 4-7 sees it.
const PPI_DLT_IEEE802_11: u32 = 0x6900_0000;

/// The case a copy of the filter is lowered for: the outcome of the
/// conditions libpcap's prologue branches on (see the module docs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct VarCase {
    /// A QoS data frame: the 802.11 header has 2 more bytes.
    pub(crate) qos_data: bool,
    /// Radiotap: the 802.11 header is padded to a multiple of 4.
    pub(crate) pad: bool,
    /// Prism: the radio header is an AVS header.
    pub(crate) avs: bool,
}

fn c(k: u32) -> Value {
    Value::Const(k)
}

/// `a op b`.
fn op(a: Value, o: BinOp, b: Value) -> Value {
    a.bin(o, b)
}

/// 1 if `v` (known to be below `2^bits`, `bits < 32`) is zero, else 0.
fn is_zero_below(v: Value, bits: u32) -> Value {
    // v + (2^bits - 1) has bit `bits` set exactly when v != 0.
    op(
        op(op(v, BinOp::Add, c((1u32 << bits) - 1)), BinOp::Shr, c(bits)),
        BinOp::Xor,
        c(1),
    )
}

/// A byte load at `at + off`, constant when `at` is.
fn load_at(size: Size, at: Value, off: u32) -> Value {
    match at {
        Value::Const(k) => match k.checked_add(off) {
            Some(o) => Value::load(size, o),
            None => Value::load_indexed(size, Value::Const(k), off),
        },
        v => Value::load_indexed(size, v, off),
    }
}

impl Lowerer<'_> {
    /// The value of a run-time offset part in the current case, noting
    /// that the program needs the prologue that computes it.
    #[inline]
    pub(crate) fn var_value(&self, var: VarPart) -> Option<Value> {
        match var {
            VarPart::None => None,
            var => self.var_value_of(var),
        }
    }

    /// [`var_value`](Self::var_value) of a run-time part.
    fn var_value_of(&self, var: VarPart) -> Option<Value> {
        match var {
            VarPart::None => None,
            VarPart::RadioLen => {
                self.var_hdr_used.set(true);
                Some(self.radio_len(self.var_case))
            }
            VarPart::WlanHeaderEnd => {
                self.var_pl_used.set(true);
                Some(self.wlan_header_end(self.var_case))
            }
            VarPart::PflogHdrLen => {
                self.var_pl_used.set(true);
                Some(super::links::pflog_hdrlen())
            }
            VarPart::Tunnel(id, reg) => Some(self.tunnel_reg(id, reg)),
        }
    }

    /// The radio header length (0 without one) in a case: libpcap's
    /// `gen_load_{radiotap,avs,prism,ppi}_llprefixlen`.
    fn radio_len(&self, case: VarCase) -> Value {
        match self.link.radio {
            None => c(0),
            // Little-endian 16-bit length at bytes 2-3.
            Some(RadioHeader::Radiotap) | Some(RadioHeader::Ppi) => op(
                op(Value::load(Size::Byte, 3), BinOp::Shl, c(8)),
                BinOp::Or,
                Value::load(Size::Byte, 2),
            ),
            Some(RadioHeader::Avs) => Value::load(Size::Word, 4),
            Some(RadioHeader::Prism) if case.avs => Value::load(Size::Word, 4),
            Some(RadioHeader::Prism) => c(PRISM_HEADER_LEN),
        }
    }

    /// The offset of the 802.11 payload in a case: the radio header length
    /// plus the 802.11 header length (libpcap's
    /// `gen_load_802_11_header_len`).
    fn wlan_header_end(&self, case: VarCase) -> Value {
        let extra = WLAN_HEADER_LEN + if case.qos_data { 2 } else { 0 };
        let base = match self.radio_len(case) {
            Value::Const(k) => c(k + extra),
            v => op(v, BinOp::Add, c(extra)),
        };
        if self.link.radio == Some(RadioHeader::Radiotap) && case.pad {
            op(op(base, BinOp::Add, c(3)), BinOp::And, c(!3))
        } else {
            base
        }
    }

    /// The frame control byte, after the radio header of the case.
    fn frame_control(&self, case: VarCase) -> Value {
        load_at(Size::Byte, self.radio_len(case), 0)
    }

    /// 1 if the radiotap flags say the 802.11 header of a data frame is
    /// padded to a multiple of 4, else 0; loads what libpcap's prologue
    /// loads, in the same conditions (otherwise byte 0 instead).
    fn radiotap_pad(&self) -> Value {
        let fc = || self.frame_control(VarCase::default());
        // fc & 0x0c == 0x08: a data frame.
        let data = || {
            op(op(c(0x100), BinOp::Shr, op(fc(), BinOp::And, c(0x0c))), BinOp::And, c(1))
        };
        // The "present" word (u32[4]) for data frames.
        let present = || Value::load_indexed(Size::Word, op(data(), BinOp::Shl, c(2)), 0);
        // Flags present (0x02000000) and no extended bitmap (0x80).
        let flags_ok = op(
            data(),
            BinOp::And,
            is_zero_below(
                op(
                    op(op(present(), BinOp::Shr, c(7)), BinOp::And, c(0x0004_0001)),
                    BinOp::Xor,
                    c(0x0004_0000),
                ),
                19,
            ),
        );
        // The flags byte: at 16 after a TSFT (0x01000000), else at 8.
        let tsft = op(op(present(), BinOp::Shr, c(24)), BinOp::And, c(1));
        let flags_at = op(flags_ok.clone(), BinOp::Shl, op(tsft, BinOp::Add, c(3)));
        let flags = Value::load_indexed(Size::Byte, flags_at, 0);
        // The "data pad" flag (0x20).
        op(flags_ok, BinOp::And, op(flags, BinOp::Shr, c(5)))
    }

    /// The filter with what libpcap puts before it on these link types:
    /// the PPI header's DLT check, then the prologue computing the run-time
    /// offsets the filter uses. `body` is the filter lowered in the default
    /// case (`self` lowered it); `lower_case` lowers it in another case.
    pub(crate) fn finish(
        &self,
        body: Pred,
        lower_case: &mut dyn FnMut(VarCase) -> Result<Pred>,
    ) -> Result<Pred> {
        let radio = self.link.radio;
        let hdr = self.var_hdr_used.get() && radio.is_some();
        let pl = self.var_pl_used.get();
        // `if cond { yes } else { no }`, cond evaluated first.
        let branch = |cond: Pred, yes: Pred, no: Pred| cond.clone().and(yes).or(cond.not().and(no));
        let pred = if pl {
            let mut qos_split = |case: VarCase| -> Result<Pred> {
                let fc = self.frame_control(case);
                let qos = Pred::eq(op(fc, BinOp::And, c(0x8c)), 0x88);
                let yes = lower_case(VarCase { qos_data: true, ..case })?;
                let no = lower_case(VarCase { qos_data: false, ..case })?;
                Ok(branch(qos, yes, no))
            };
            match radio {
                // libpcap checks the radiotap padding flag only if the link
                // type is still 802.11 at the end of the filter (`pppoes`
                // makes it PPP).
                Some(RadioHeader::Radiotap) if self.link.kind == LinkKind::Ieee80211 => {
                    let pad = Pred::test(self.radiotap_pad(), CmpOp::Set, c(1));
                    let yes = qos_split(VarCase { pad: true, ..VarCase::default() })?;
                    let no = qos_split(VarCase::default())?;
                    branch(pad, yes, no)
                }
                Some(RadioHeader::Prism) => {
                    let yes = qos_split(VarCase { avs: true, ..VarCase::default() })?;
                    let no = qos_split(VarCase::default())?;
                    branch(self.prism_is_avs(), yes, no)
                }
                _ => qos_split(VarCase::default())?,
            }
        } else if hdr {
            let loaded = |v: Value| Pred::test(v, CmpOp::Ge, c(0));
            match radio {
                Some(RadioHeader::Prism) => {
                    let case = VarCase { avs: true, ..VarCase::default() };
                    let yes = loaded(self.radio_len(case)).and(lower_case(case)?);
                    branch(self.prism_is_avs(), yes, body)
                }
                _ => loaded(self.radio_len(VarCase::default())).and(body),
            }
        } else {
            body
        };
        // libpcap checks the PPI header's DLT only if the link type is
        // still PPI at the end of the filter: `pppoes` (PPP) and `geneve`
        // (Ethernet) change it, wherever they stand in the filter.
        Ok(if self.opts_radio() == Some(RadioHeader::Ppi) && self.link.kind == LinkKind::Ieee80211 {
            Pred::eq(Value::load(Size::Word, 4), PPI_DLT_IEEE802_11).and(pred)
        } else {
            pred
        })
    }

    /// A Prism capture holds an AVS header (its first word carries the
    /// AVS cookie).
    fn prism_is_avs(&self) -> Pred {
        Pred::eq(op(Value::load(Size::Word, 0), BinOp::And, c(0xffff_f000)), 0x8021_1000)
    }

    /// The radio header of the capture's link type (not of the current
    /// encapsulation state).
    fn opts_radio(&self) -> Option<RadioHeader> {
        super::link::LinkLayer::for_linktype(self.opts.linktype).and_then(|l| l.radio)
    }

    /// `gen_check_802_11_data_frame` (1.10.3): not a control frame, and a
    /// data frame (`!(fc & 0x04) && (fc & 0x08)`).
    pub(crate) fn wlan_data_frame(&self) -> Pred {
        self.jset(Rel::LinkHdr, 0, Size::Byte, 0x04)
            .not()
            .and(self.jset(Rel::LinkHdr, 0, Size::Byte, 0x08))
    }

    /// `gen_llc_linktype`: link-level protocol `ll_proto` in an 802.2 LLC
    /// header (SNAP for EtherTypes, where only the type field is checked).
    pub(crate) fn llc_linktype(&self, ll_proto: u32) -> Pred {
        match ll_proto {
            llcsap::IP | llcsap::ISONS | llcsap::NETBEUI => {
                self.cmp(Rel::Llc, 0, Size::Half, (ll_proto << 8) | ll_proto)
            }
            llcsap::IPX => self.cmp(Rel::Llc, 0, Size::Byte, llcsap::IPX),
            ethertype::ATALK => self.snap(0x080007, ethertype::ATALK),
            p if p <= super::link::ETHERMTU => self.cmp(Rel::Llc, 0, Size::Byte, p),
            p => self.cmp(Rel::Llc, 6, Size::Half, p),
        }
    }

    /// A MAC address in the link-layer header of the link types that have
    /// one (`gen_ehostop`, `gen_fhostop`, `gen_thostop`, `gen_wlanhostop`,
    /// `gen_ipfchostop`).
    pub(crate) fn mac_hostop(&self, mac: &[u8; 6], dir: Dir) -> Result<Pred> {
        let (src, dst) = match self.link.kind {
            LinkKind::Ethernet => (6, 0),
            LinkKind::Fddi => (7, 1),
            LinkKind::TokenRing => (8, 2),
            LinkKind::IpOverFc => (10, 2),
            LinkKind::Ieee80211 => return self.wlan_hostop(mac, dir),
            _ => {
                return self.err(
                    "ethernet addresses supported only on ethernet/FDDI/token ring/802.11/ATM LANE/Fibre Channel",
                )
            }
        };
        let at = |off: u32| self.bcmp(Rel::LinkHdr, off, mac);
        match dir {
            Dir::Src => Ok(at(src)),
            Dir::Dst => Ok(at(dst)),
            Dir::And => Ok(at(src).and(at(dst))),
            Dir::Or => Ok(at(src).or(at(dst))),
            Dir::Wlan(d) => {
                let (w, plural) = wlan_dir_words(d);
                let verb = if plural { "are" } else { "is" };
                self.err(format!("{w} {verb} only supported on 802.11 with 802.11 headers"))
            }
        }
    }

    /// `fc[off] & k != 0` on the 802.11 header.
    fn fc_set(&self, off: u32, k: u32) -> Pred {
        self.jset(Rel::LinkHdr, off, Size::Byte, k)
    }

    /// The 802.11 source address test of `gen_wlanhostop` (`Q_SRC`), with
    /// `at(off)` the comparison of the address at `off`.
    fn wlan_src(&self, at: &dyn Fn(u32) -> Pred) -> Pred {
        // Data frames: SA at 10 (no From DS), 16 (From DS only), 24 (both).
        let from_ds = self
            .fc_set(1, 0x01)
            .not()
            .and(at(16))
            .or(self.fc_set(1, 0x01).and(at(24)));
        let data = self
            .fc_set(1, 0x02)
            .not()
            .and(at(10))
            .or(self.fc_set(1, 0x02).and(from_ds));
        // Management frames: SA at 10; control frames have none.
        let mgt_or_data = self.fc_set(0, 0x08).not().and(at(10)).or(self.fc_set(0, 0x08).and(data));
        self.fc_set(0, 0x04).not().and(mgt_or_data)
    }

    /// The 802.11 destination address test of `gen_wlanhostop` (`Q_DST`;
    /// also `broadcast` and `multicast`).
    fn wlan_dst(&self, at: &dyn Fn(u32) -> Pred) -> Pred {
        // Data frames: DA at 4 (no To DS) or 16 (To DS).
        let data = self
            .fc_set(1, 0x01)
            .not()
            .and(at(4))
            .or(self.fc_set(1, 0x01).and(at(16)));
        let mgt_or_data = self.fc_set(0, 0x08).not().and(at(4)).or(self.fc_set(0, 0x08).and(data));
        self.fc_set(0, 0x04).not().and(mgt_or_data)
    }

    /// `addr2`: every frame but CTS and ACK control frames.
    fn wlan_addr2(&self, at: &dyn Fn(u32) -> Pred) -> Pred {
        let ctl = self.mcmp(Rel::LinkHdr, 0, Size::Byte, 0x04, 0x0c);
        let cts_or_ack = self
            .mcmp(Rel::LinkHdr, 0, Size::Byte, 0xc0, 0xf0)
            .or(self.mcmp(Rel::LinkHdr, 0, Size::Byte, 0xd0, 0xf0));
        ctl.and(cts_or_ack).not().and(at(10))
    }

    /// `gen_wlanhostop`: an address of an 802.11 frame, by qualifier.
    fn wlan_hostop(&self, mac: &[u8; 6], dir: Dir) -> Result<Pred> {
        let at = |off: u32| self.bcmp(Rel::LinkHdr, off, mac);
        Ok(match dir {
            Dir::Src => self.wlan_src(&at),
            Dir::Dst => self.wlan_dst(&at),
            Dir::And => self.wlan_src(&at).and(self.wlan_dst(&at)),
            Dir::Or => self.wlan_src(&at).or(self.wlan_dst(&at)),
            Dir::Wlan(DirQual::Addr1) => at(4),
            Dir::Wlan(DirQual::Addr2) => self.wlan_addr2(&at),
            Dir::Wlan(DirQual::Addr3) => {
                self.mcmp(Rel::LinkHdr, 0, Size::Byte, 0x04, 0x0c).not().and(at(16))
            }
            Dir::Wlan(DirQual::Addr4) => self.mcmp(Rel::LinkHdr, 1, Size::Byte, 0x03, 0x03).and(at(24)),
            // RA: data frames (and the reserved type) only, in 1.10.3.
            Dir::Wlan(DirQual::Ra) => self.fc_set(0, 0x08).and(at(4)),
            Dir::Wlan(DirQual::Ta) => self.fc_set(0, 0x08).and(self.wlan_addr2(&at)),
            // Not produced by `Dir::of`.
            Dir::Wlan(_) => return self.err("invalid 802.11 address qualifier"),
        })
    }

    /// `link broadcast` on the MAC-addressed link types.
    pub(crate) fn mac_broadcast(&self) -> Result<Pred> {
        self.mac_hostop(&[0xff; 6], Dir::Dst)
    }

    /// `link multicast`: the group bit of the destination address, or
    /// `None` on link types without MAC addresses.
    pub(crate) fn mac_multicast(&self) -> Option<Pred> {
        let bit = |off: u32| self.jset(Rel::LinkHdr, off, Size::Byte, 0x01);
        match self.link.kind {
            LinkKind::Ethernet => Some(bit(0)),
            LinkKind::Fddi => Some(bit(1)),
            LinkKind::TokenRing | LinkKind::IpOverFc => Some(bit(2)),
            LinkKind::Ieee80211 => Some(self.wlan_dst(&bit)),
            _ => None,
        }
    }

    /// `type`, `subtype`, `dir` (`gen_p80211_type`, `gen_p80211_fcdir`).
    /// As libpcap master, also on DLT_PPI (1.10.3: an error there).
    pub(crate) fn wlan_field(&self, w: &Wlan) -> Result<Pred> {
        if self.link.kind != LinkKind::Ieee80211 {
            return self.err("802.11 link-layer types supported only on 802.11");
        }
        Ok(match *w {
            Wlan::Type(t) => self.mcmp(Rel::LinkHdr, 0, Size::Byte, t, 0x0c),
            Wlan::TypeSubtype { ty, subtype } => {
                self.mcmp(Rel::LinkHdr, 0, Size::Byte, ty | subtype, 0xfc)
            }
            Wlan::Subtype(v) => self.mcmp(Rel::LinkHdr, 0, Size::Byte, v, 0xfc),
            Wlan::Dir(d) => self.mcmp(Rel::LinkHdr, 1, Size::Byte, d, 0x03),
        })
    }

    /// `radio[...]`: the radio header starts the packet (radiotap, AVS,
    /// Prism; not PPI, as libpcap).
    pub(crate) fn radio_available(&self) -> bool {
        matches!(
            self.opts_radio(),
            Some(RadioHeader::Radiotap) | Some(RadioHeader::Avs) | Some(RadioHeader::Prism)
        )
    }
}
