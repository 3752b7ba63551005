//! Decoding TPACKET_V3 blocks and frames from ring memory, and rebuilding
//! what the kernel took away (VLAN tags, the cooked SLL2 header).
//!
//! Everything here works on plain byte slices (checked reads, no `unsafe`),
//! so it can be tested on synthetic blocks.
//!
//! Layouts (`<linux/if_packet.h>`, all fields in host byte order):
//!
//! * block descriptor: `version` u32 @0, `offset_to_priv` u32 @4, then
//!   `tpacket_hdr_v1`: `block_status` u32 @8, `num_pkts` u32 @12,
//!   `offset_to_first_pkt` u32 @16, `blk_len` u32 @20, `seq_num` u64 @24,
//!   first/last packet timestamps @32/@40;
//! * frame (`tpacket3_hdr`): `tp_next_offset` u32 @0, `tp_sec` @4,
//!   `tp_nsec` @8, `tp_snaplen` @12, `tp_len` @16, `tp_status` @20,
//!   `tp_mac` u16 @24, `tp_net` u16 @26, `tp_rxhash` u32 @28,
//!   `tp_vlan_tci` u32 @32, `tp_vlan_tpid` u16 @36; then, at offset 48,
//!   the `sockaddr_ll` of the packet (20 bytes).

/// `TP_STATUS_VLAN_VALID`: `tp_vlan_tci` holds a tag the kernel stripped.
pub const TP_STATUS_VLAN_VALID: u32 = 1 << 4;
/// `TP_STATUS_VLAN_TPID_VALID`: `tp_vlan_tpid` holds the tag's TPID.
pub const TP_STATUS_VLAN_TPID_VALID: u32 = 1 << 6;
/// Length of an 802.1Q tag.
pub const VLAN_TAG_LEN: usize = 4;
/// Length of a LINUX_SLL2 header.
pub const SLL2_HDR_LEN: usize = 20;
/// Offset of the `sockaddr_ll` in a TPACKET_V3 frame.
const SLL_OFFSET: usize = 48;
/// Offset of the packet headers in a block descriptor.
pub const BLOCK_HDR_NUM_PKTS: usize = 12;
/// Offset of `offset_to_first_pkt` in a block descriptor.
pub const BLOCK_HDR_FIRST: usize = 16;
/// Offset of `blk_len` in a block descriptor.
pub const BLOCK_HDR_LEN: usize = 20;

fn rd_u32(b: &[u8], at: usize) -> Option<u32> {
    let s = b.get(at..at.checked_add(4)?)?;
    Some(u32::from_ne_bytes([s[0], s[1], s[2], s[3]]))
}

fn rd_u16(b: &[u8], at: usize) -> Option<u16> {
    let s = b.get(at..at.checked_add(2)?)?;
    Some(u16::from_ne_bytes([s[0], s[1]]))
}

/// The fields of a block descriptor that the reader needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockHeader {
    /// Number of packets in the block.
    pub num_pkts: u32,
    /// Offset of the first frame from the start of the block.
    pub first: u32,
    /// Bytes of the block in use.
    pub len: u32,
}

/// Reads a block descriptor; `None` if the block is too short to hold one.
pub fn block_header(block: &[u8]) -> Option<BlockHeader> {
    Some(BlockHeader {
        num_pkts: rd_u32(block, BLOCK_HDR_NUM_PKTS)?,
        first: rd_u32(block, BLOCK_HDR_FIRST)?,
        len: rd_u32(block, BLOCK_HDR_LEN)?,
    })
}

/// How the link-layer header of the packets must be presented.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framing {
    /// The kernel delivers the link-layer header (SOCK_RAW); stripped VLAN
    /// tags are put back after the two MAC addresses when `reinsert_vlan`.
    Raw {
        /// Put stripped 802.1Q/802.1ad tags back (Ethernet link types).
        reinsert_vlan: bool,
    },
    /// The kernel delivers the network layer (SOCK_DGRAM); a LINUX_SLL2
    /// header is built in front of it from the `sockaddr_ll`.
    CookedSll2,
}

/// The parts of a frame header describing one packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameHeader {
    /// Offset of the next frame from this one (0 for the last).
    pub next_offset: u32,
    /// Timestamp, seconds.
    pub sec: u32,
    /// Timestamp, nanoseconds.
    pub nsec: u32,
    /// Bytes of the packet in the ring.
    pub snaplen: u32,
    /// Length of the packet on the wire.
    pub len: u32,
    /// `TP_STATUS_*` bits.
    pub status: u32,
    /// Offset of the packet data (link-layer header, or network header in
    /// cooked mode) from the frame start.
    pub mac: u16,
    /// The stripped VLAN TCI.
    pub vlan_tci: u32,
    /// The stripped VLAN tag's TPID (0 if the kernel did not say).
    pub vlan_tpid: u16,
    /// `sockaddr_ll.sll_protocol` (network byte order, as stored).
    pub sll_protocol: [u8; 2],
    /// `sockaddr_ll.sll_ifindex`.
    pub ifindex: i32,
    /// `sockaddr_ll.sll_hatype`.
    pub hatype: u16,
    /// `sockaddr_ll.sll_pkttype` (`PACKET_HOST`, `PACKET_OUTGOING`, ...).
    pub pkttype: u8,
    /// `sockaddr_ll.sll_halen`.
    pub halen: u8,
    /// `sockaddr_ll.sll_addr`.
    pub addr: [u8; 8],
}

impl FrameHeader {
    /// Decodes the frame header at the start of `frame`.
    #[inline]
    pub fn parse(frame: &[u8]) -> Option<FrameHeader> {
        let sll = frame.get(SLL_OFFSET..SLL_OFFSET + 20)?;
        let mut addr = [0u8; 8];
        addr.copy_from_slice(&sll[12..20]);
        Some(FrameHeader {
            next_offset: rd_u32(frame, 0)?,
            sec: rd_u32(frame, 4)?,
            nsec: rd_u32(frame, 8)?,
            snaplen: rd_u32(frame, 12)?,
            len: rd_u32(frame, 16)?,
            status: rd_u32(frame, 20)?,
            mac: rd_u16(frame, 24)?,
            vlan_tci: rd_u32(frame, 32)?,
            vlan_tpid: rd_u16(frame, 36)?,
            sll_protocol: [sll[2], sll[3]],
            ifindex: i32::from_ne_bytes([sll[4], sll[5], sll[6], sll[7]]),
            hatype: u16::from_ne_bytes([sll[8], sll[9]]),
            pkttype: sll[10],
            halen: sll[11],
            addr,
        })
    }

    /// Did the kernel strip a VLAN tag from this packet? (libpcap's test:
    /// a non-zero TCI or the VLAN_VALID status bit.)
    pub fn has_stripped_vlan(&self) -> bool {
        self.vlan_tci != 0 || self.status & TP_STATUS_VLAN_VALID != 0
    }

    /// The TPID of the stripped tag: the kernel's when it gave one, else
    /// 802.1Q's 0x8100.
    pub fn vlan_tpid(&self) -> u16 {
        if self.status & TP_STATUS_VLAN_TPID_VALID != 0 && self.vlan_tpid != 0 {
            self.vlan_tpid
        } else {
            0x8100
        }
    }
}

/// A packet rebuilt in place inside its frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rebuilt {
    /// Start of the packet bytes within the frame.
    pub start: usize,
    /// Captured length (bytes from `start`).
    pub caplen: usize,
    /// Wire length, grown by what was put back.
    pub wire_len: u32,
    /// Whether a stripped VLAN tag was put back.
    pub vlan_reinserted: bool,
}

/// Rewrites the frame so that the packet reads as the link type expects:
/// for [`Framing::Raw`], a stripped VLAN tag goes back after the MAC
/// addresses (moving them into the headroom before the packet); for
/// [`Framing::CookedSll2`], an SLL2 header is written in front of the
/// network-layer data. `None` when the frame's offsets are inconsistent
/// or the headroom is too small (the packet cannot be presented).
pub fn rebuild(frame: &mut [u8], h: &FrameHeader, framing: Framing) -> Option<Rebuilt> {
    if let Some(r) = as_is(frame.len(), h, framing) {
        return Some(r);
    }
    rebuild_in_place(frame, h, framing)
}

/// The common case of [`rebuild`], which leaves the frame alone: a raw
/// packet without a stripped VLAN tag to put back. `None` when the frame
/// needs rewriting, or is not consistent.
#[inline]
pub fn as_is(frame_len: usize, h: &FrameHeader, framing: Framing) -> Option<Rebuilt> {
    let Framing::Raw { reinsert_vlan } = framing else {
        return None;
    };
    let mac = usize::from(h.mac);
    let snap = h.snaplen as usize;
    if reinsert_vlan && h.has_stripped_vlan() && snap >= 12
        || mac < SLL_OFFSET + 20
        || mac.checked_add(snap).is_none_or(|end| end > frame_len)
    {
        return None;
    }
    Some(Rebuilt {
        start: mac,
        caplen: snap,
        wire_len: h.len,
        vlan_reinserted: false,
    })
}

/// [`rebuild`] for a frame whose header was not kept (parsed again here):
/// the rare path of a reader that tried [`as_is`] first.
#[cold]
#[inline(never)]
pub fn rebuild_frame(frame: &mut [u8], framing: Framing) -> Option<Rebuilt> {
    let h = FrameHeader::parse(frame)?;
    rebuild(frame, &h, framing)
}

/// [`rebuild`] for the frames [`as_is`] does not take.
fn rebuild_in_place(frame: &mut [u8], h: &FrameHeader, framing: Framing) -> Option<Rebuilt> {
    let mac = usize::from(h.mac);
    let snap = usize::try_from(h.snaplen).ok()?;
    let end = mac.checked_add(snap)?;
    if end > frame.len() || mac < SLL_OFFSET + 20 {
        // The packet must lie inside the frame, after the headers we read.
        return None;
    }
    match framing {
        Framing::Raw { reinsert_vlan } => {
            // libpcap puts the tag back only when the MAC addresses were
            // captured (snaplen >= 12).
            if reinsert_vlan && h.has_stripped_vlan() && snap >= 12 {
                let start = mac.checked_sub(VLAN_TAG_LEN)?;
                if start < SLL_OFFSET + 20 {
                    return None;
                }
                frame.copy_within(mac..mac + 12, start);
                let tag_at = start + 12;
                frame[tag_at..tag_at + 2].copy_from_slice(&h.vlan_tpid().to_be_bytes());
                // The TCI field is 16 bits; the kernel's u32 carries it low.
                frame[tag_at + 2..tag_at + 4].copy_from_slice(&(h.vlan_tci as u16).to_be_bytes());
                Some(Rebuilt {
                    start,
                    caplen: snap + VLAN_TAG_LEN,
                    wire_len: h.len.saturating_add(VLAN_TAG_LEN as u32),
                    vlan_reinserted: true,
                })
            } else {
                Some(Rebuilt {
                    start: mac,
                    caplen: snap,
                    wire_len: h.len,
                    vlan_reinserted: false,
                })
            }
        }
        Framing::CookedSll2 => {
            let start = mac.checked_sub(SLL2_HDR_LEN)?;
            if start < SLL_OFFSET + 20 {
                return None;
            }
            let hdr = sll2_header(h);
            frame[start..mac].copy_from_slice(&hdr);
            Some(Rebuilt {
                start,
                caplen: snap + SLL2_HDR_LEN,
                wire_len: h.len.saturating_add(SLL2_HDR_LEN as u32),
                vlan_reinserted: false,
            })
        }
    }
}

/// The LINUX_SLL2 header for a packet: protocol (as in `sockaddr_ll`, big
/// endian), 2 reserved zero bytes, interface index (big endian), ARPHRD
/// type (big endian), packet type, address length, 8 address bytes (the
/// address, zero-padded).
pub fn sll2_header(h: &FrameHeader) -> [u8; SLL2_HDR_LEN] {
    let mut out = [0u8; SLL2_HDR_LEN];
    out[0..2].copy_from_slice(&h.sll_protocol);
    out[4..8].copy_from_slice(&h.ifindex.to_be_bytes());
    out[8..10].copy_from_slice(&h.hatype.to_be_bytes());
    out[10] = h.pkttype;
    out[11] = h.halen;
    let n = usize::from(h.halen).min(8);
    out[12..12 + n].copy_from_slice(&h.addr[..n]);
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Builds a synthetic TPACKET_V3 frame of `size` bytes with the packet
    /// `data` at offset `mac`.
    pub(crate) fn frame(
        size: usize,
        mac: u16,
        data: &[u8],
        status: u32,
        tci: u32,
        tpid: u16,
    ) -> Vec<u8> {
        let mut f = vec![0xeeu8; size];
        let put32 =
            |f: &mut Vec<u8>, at: usize, v: u32| f[at..at + 4].copy_from_slice(&v.to_ne_bytes());
        put32(&mut f, 0, 0);
        put32(&mut f, 4, 1_700_000_000);
        put32(&mut f, 8, 123_456_789);
        put32(&mut f, 12, data.len() as u32);
        put32(&mut f, 16, data.len() as u32 + 10);
        put32(&mut f, 20, status | 1);
        f[24..26].copy_from_slice(&mac.to_ne_bytes());
        f[26..28].copy_from_slice(&mac.to_ne_bytes());
        put32(&mut f, 32, tci);
        f[36..38].copy_from_slice(&tpid.to_ne_bytes());
        // sockaddr_ll
        f[48..50].copy_from_slice(&17u16.to_ne_bytes());
        f[50..52].copy_from_slice(&[0x08, 0x00]);
        f[52..56].copy_from_slice(&7i32.to_ne_bytes());
        f[56..58].copy_from_slice(&1u16.to_ne_bytes());
        f[58] = 4;
        f[59] = 6;
        f[60..68].copy_from_slice(&[1, 2, 3, 4, 5, 6, 0, 0]);
        let m = usize::from(mac);
        f[m..m + data.len()].copy_from_slice(data);
        f
    }

    /// A TPACKET_V3 block holding `frames` (each from [`frame`]), chained
    /// by their `tp_next_offset`, without the block descriptor.
    pub(crate) fn block(frames: &[Vec<u8>]) -> Vec<u8> {
        let mut b = Vec::new();
        for (i, f) in frames.iter().enumerate() {
            let at = b.len();
            b.extend_from_slice(f);
            let next = if i + 1 < frames.len() {
                f.len() as u32
            } else {
                0
            };
            b[at..at + 4].copy_from_slice(&next.to_ne_bytes());
        }
        b
    }

    fn eth_packet() -> Vec<u8> {
        let mut p = vec![0xaa; 6];
        p.extend_from_slice(&[0xbb; 6]);
        p.extend_from_slice(&[0x08, 0x00, 0x45, 0, 0, 20]);
        p
    }

    #[test]
    fn plain_packet_is_left_alone() {
        let p = eth_packet();
        let mut f = frame(256, 90, &p, 0, 0, 0);
        let h = FrameHeader::parse(&f).unwrap();
        assert_eq!(
            (h.sec, h.nsec, h.len),
            (1_700_000_000, 123_456_789, p.len() as u32 + 10)
        );
        let r = rebuild(
            &mut f,
            &h,
            Framing::Raw {
                reinsert_vlan: true,
            },
        )
        .unwrap();
        assert_eq!(&f[r.start..r.start + r.caplen], &p[..]);
        assert!(!r.vlan_reinserted);
    }

    #[test]
    fn vlan_tag_goes_back() {
        let p = eth_packet();
        let mut f = frame(
            256,
            90,
            &p,
            TP_STATUS_VLAN_VALID | TP_STATUS_VLAN_TPID_VALID,
            0x2064,
            0x88a8,
        );
        let h = FrameHeader::parse(&f).unwrap();
        let r = rebuild(
            &mut f,
            &h,
            Framing::Raw {
                reinsert_vlan: true,
            },
        )
        .unwrap();
        let mut want = p[..12].to_vec();
        want.extend_from_slice(&[0x88, 0xa8, 0x20, 0x64]);
        want.extend_from_slice(&p[12..]);
        assert_eq!(&f[r.start..r.start + r.caplen], &want[..]);
        assert_eq!(r.wire_len, h.len + 4);
        // VLAN id 0 with VLAN_VALID and no TPID: 802.1Q.
        let mut f = frame(256, 90, &p, TP_STATUS_VLAN_VALID, 0, 0);
        let h = FrameHeader::parse(&f).unwrap();
        let r = rebuild(
            &mut f,
            &h,
            Framing::Raw {
                reinsert_vlan: true,
            },
        )
        .unwrap();
        assert_eq!(&f[r.start + 12..r.start + 16], &[0x81, 0x00, 0, 0]);
        // Not reinserted when disabled or when the MACs were not captured.
        let mut f = frame(256, 90, &p, TP_STATUS_VLAN_VALID, 5, 0);
        let h = FrameHeader::parse(&f).unwrap();
        assert!(
            !rebuild(
                &mut f,
                &h,
                Framing::Raw {
                    reinsert_vlan: false
                }
            )
            .unwrap()
            .vlan_reinserted
        );
        let mut f = frame(256, 90, &p[..11], TP_STATUS_VLAN_VALID, 5, 0);
        let h = FrameHeader::parse(&f).unwrap();
        assert!(
            !rebuild(
                &mut f,
                &h,
                Framing::Raw {
                    reinsert_vlan: true
                }
            )
            .unwrap()
            .vlan_reinserted
        );
    }

    #[test]
    fn cooked_header() {
        let ip = [0x45u8, 0, 0, 20, 1, 2, 3, 4];
        let mut f = frame(256, 100, &ip, 0, 0, 0);
        let h = FrameHeader::parse(&f).unwrap();
        let r = rebuild(&mut f, &h, Framing::CookedSll2).unwrap();
        let got = &f[r.start..r.start + r.caplen];
        assert_eq!(
            &got[..20],
            &[8, 0, 0, 0, 0, 0, 0, 7, 0, 1, 4, 6, 1, 2, 3, 4, 5, 6, 0, 0]
        );
        assert_eq!(&got[20..], &ip);
        assert_eq!(r.wire_len, h.len + 20);
    }

    #[test]
    fn bad_offsets_are_refused() {
        let p = eth_packet();
        // Packet overlapping the sockaddr_ll / no headroom.
        let mut f = frame(256, 68, &p, TP_STATUS_VLAN_VALID, 1, 0);
        let h = FrameHeader::parse(&f).unwrap();
        assert!(rebuild(
            &mut f,
            &h,
            Framing::Raw {
                reinsert_vlan: true
            }
        )
        .is_none());
        assert!(rebuild(&mut f, &h, Framing::CookedSll2).is_none());
        // snaplen beyond the frame.
        let mut f = frame(128, 90, &p, 0, 0, 0);
        f[12..16].copy_from_slice(&1000u32.to_ne_bytes());
        let h = FrameHeader::parse(&f).unwrap();
        assert!(rebuild(
            &mut f,
            &h,
            Framing::Raw {
                reinsert_vlan: true
            }
        )
        .is_none());
        // Truncated headers.
        assert!(FrameHeader::parse(&f[..60]).is_none());
        assert!(block_header(&[0; 10]).is_none());
    }
}
