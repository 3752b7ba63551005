//! Classic pcap files: header validation and the per-record cursor.
//!
//! Semantics follow libpcap 1.10.3 (`sf-pcap.c`), checked against the
//! installed library:
//!
//! * magics 0xa1b2c3d4 (µs), 0xa1b23c4d (ns) and Kuznetzov's 0xa1b2cd34
//!   (µs, 24-byte record headers, snapshot + 14 on Ethernet), each in both
//!   byte orders;
//! * versions 2.0–2.4 and DG/UX's 543.0; major < 2 is "archaic"; captured
//!   and original lengths are exchanged before 2.3, on 543.0, and on 2.3
//!   when captured > original;
//! * a captured length above the link type's maximum is damage; above the
//!   snapshot length (but within the maximum) the record is cut to the
//!   snapshot length and the rest of its data skipped.

use crate::bytes::{rd16, rd32, u32_at};
use crate::error::{Error, ErrorKind};
use crate::linktype;
use crate::timestamp::Timestamp;
use crate::{fixup, RawRecord, POST_SWAP, POST_USB_LEN};

const MAGIC_MICRO: u32 = 0xa1b2_c3d4;
const MAGIC_NANO: u32 = 0xa1b2_3c4d;
const MAGIC_KUZNETZOV: u32 = 0xa1b2_cd34;

/// Size of the file header.
pub(crate) const FILE_HEADER_LEN: usize = 24;

/// How the captured and original length fields are ordered in records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LengthOrder {
    /// caplen then len (2.4, and 2.3 when plausible).
    Normal,
    /// len then caplen (before 2.3, and DG/UX 543.0).
    Exchanged,
    /// 2.3: exchanged only when caplen > len.
    Maybe,
}

/// A validated pcap file header.
#[derive(Clone, Debug)]
pub(crate) struct Header {
    /// File is little-endian.
    pub le: bool,
    /// Nanosecond timestamps.
    pub nanos: bool,
    /// Kuznetzov's modified format (24-byte record headers).
    pub kuznetzov: bool,
    pub version: (u16, u16),
    /// Normalized LINKTYPE_* (low 26 bits of the header field).
    pub linktype: u32,
    /// The full 32-bit value tcpdump writes back (normalized link type plus
    /// the upper 6 bits of the original field).
    pub header_linktype: u32,
    /// Snapshot length as libpcap reports it.
    pub snapshot: u32,
    lengths: LengthOrder,
}

/// Checks for a pcap magic number in the first 4 bytes. Returns the file's
/// byte order (`true` = little-endian) if it is one.
pub(crate) fn sniff(bytes: &[u8]) -> Option<bool> {
    let known = |m: u32| matches!(m, MAGIC_MICRO | MAGIC_NANO | MAGIC_KUZNETZOV);
    if known(rd32(bytes, 0, true)) {
        Some(true)
    } else if known(rd32(bytes, 0, false)) {
        Some(false)
    } else {
        None
    }
}

/// Validates the file header of a file that [`sniff`] recognised.
pub(crate) fn parse_header(bytes: &[u8], le: bool) -> Result<Header, Error> {
    if bytes.len() < FILE_HEADER_LEN {
        return Err(Error::new(
            ErrorKind::Truncated,
            0,
            format!(
                "truncated pcap file header: {} of {FILE_HEADER_LEN} bytes",
                bytes.len()
            ),
        ));
    }
    let magic = rd32(bytes, 0, le);
    let major = rd16(bytes, 4, le);
    let minor = rd16(bytes, 6, le);
    let snaplen = rd32(bytes, 16, le);
    let raw_linktype = rd32(bytes, 20, le);
    if major < 2 {
        return Err(Error::new(
            ErrorKind::Unsupported,
            4,
            "archaic pcap savefile format",
        ));
    }
    if !((major == 2 && minor <= 4) || (major == 543 && minor == 0)) {
        return Err(Error::new(
            ErrorKind::Unsupported,
            4,
            format!("unsupported pcap savefile version {major}.{minor}"),
        ));
    }
    let lengths = match (major, minor) {
        (2, 0..=2) | (543, _) => LengthOrder::Exchanged,
        (2, 3) => LengthOrder::Maybe,
        _ => LengthOrder::Normal,
    };
    let low = raw_linktype & linktype::LINKTYPE_MASK;
    let ext = raw_linktype & !linktype::LINKTYPE_MASK;
    let lt = linktype::normalize(low);
    let kuznetzov = magic == MAGIC_KUZNETZOV;
    let mut snapshot = linktype::adjust_snapshot(lt, snaplen);
    if kuznetzov && lt == 1 {
        // Kuznetzov captures may have been made in cooked mode with a fake
        // Ethernet header added, so libpcap allows 14 more bytes.
        snapshot = snapshot.saturating_add(14).min(i32::MAX as u32);
    }
    Ok(Header {
        le,
        nanos: magic == MAGIC_NANO,
        kuznetzov,
        version: (major, minor),
        linktype: lt,
        header_linktype: lt | ext,
        snapshot,
        lengths,
    })
}

/// Iteration state over the records of a pcap file.
#[derive(Clone, Debug)]
pub(crate) struct Cursor {
    pos: usize,
    le: bool,
    nanos: bool,
    swapped: bool,
    record_len: usize,
    lengths: LengthOrder,
    linktype: u32,
    snapshot: u32,
    max_caplen: u32,
    post: u8,
}

impl Cursor {
    /// A cursor at the first record. `native_le` is the host byte order.
    pub(crate) fn new(h: &Header, native_le: bool) -> Cursor {
        let swapped = h.le != native_le;
        let mut post = 0;
        if swapped && fixup::needs_swap(h.linktype) {
            post |= POST_SWAP;
        }
        if h.linktype == linktype::USB_LINUX_MMAPPED {
            post |= POST_USB_LEN;
        }
        Cursor {
            pos: FILE_HEADER_LEN,
            le: h.le,
            nanos: h.nanos,
            swapped,
            record_len: if h.kuznetzov { 24 } else { 16 },
            lengths: h.lengths,
            linktype: h.linktype,
            snapshot: h.snapshot,
            max_caplen: linktype::max_snaplen(h.linktype),
            post,
        }
    }

    /// Whether some record may need its pseudo-header byte-swapped.
    pub(crate) fn may_need_swap(&self) -> bool {
        self.post & POST_SWAP != 0
    }

    /// Reads the next record: `None` at a clean end of file.
    #[inline]
    pub(crate) fn next(&mut self, bytes: &[u8]) -> Option<Result<RawRecord, Error>> {
        let start = self.pos;
        let rest = bytes.get(start..)?;
        let Some(h) = rest.first_chunk::<16>().filter(|_| rest.len() >= self.record_len) else {
            if rest.is_empty() {
                return None;
            }
            return Some(Err(self.truncated_header(start, rest.len())));
        };
        let secs = u32_at::<0, 16>(h, self.le);
        let frac = u32_at::<4, 16>(h, self.le);
        let mut caplen = u32_at::<8, 16>(h, self.le);
        let mut wire_len = u32_at::<12, 16>(h, self.le);
        match self.lengths {
            LengthOrder::Normal => {}
            LengthOrder::Exchanged => std::mem::swap(&mut caplen, &mut wire_len),
            LengthOrder::Maybe => {
                if caplen > wire_len {
                    std::mem::swap(&mut caplen, &mut wire_len);
                }
            }
        }
        let available = rest.len() - self.record_len;
        if caplen > self.max_caplen || caplen as usize > available {
            return Some(Err(self.bad_length(start, caplen, available)));
        }
        let data_start = start + self.record_len;
        self.pos = data_start + caplen as usize;
        Some(Ok(RawRecord {
            data_start,
            caplen: caplen.min(self.snapshot),
            wire_len,
            linktype: self.linktype,
            interface: 0,
            ts: Timestamp::from_pcap(secs, frac, self.nanos, self.swapped),
            post: self.post,
        }))
    }

    #[cold]
    fn truncated_header(&self, start: usize, have: usize) -> Error {
        Error::new(
            ErrorKind::Truncated,
            start,
            format!("truncated record header: {have} of {} bytes", self.record_len),
        )
    }

    #[cold]
    fn bad_length(&self, start: usize, caplen: u32, available: usize) -> Error {
        if caplen > self.max_caplen {
            // libpcap words this after the snapshot length when it is the
            // smaller limit.
            let (what, limit) = if caplen > self.snapshot {
                ("snaplen", self.snapshot)
            } else {
                ("maximum", self.max_caplen)
            };
            Error::new(
                ErrorKind::Malformed,
                start,
                format!("invalid packet capture length {caplen}, bigger than {what} of {limit}"),
            )
        } else {
            Error::new(
                ErrorKind::Truncated,
                start,
                format!("truncated record: {caplen} captured bytes, only {available} left"),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(magic: u32, major: u16, minor: u16, snaplen: u32, lt: u32) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&magic.to_le_bytes());
        v.extend_from_slice(&major.to_le_bytes());
        v.extend_from_slice(&minor.to_le_bytes());
        v.extend_from_slice(&[0; 8]);
        v.extend_from_slice(&snaplen.to_le_bytes());
        v.extend_from_slice(&lt.to_le_bytes());
        v
    }

    #[test]
    fn versions() {
        let ok = |maj, min| parse_header(&header(MAGIC_MICRO, maj, min, 0, 1), true).is_ok();
        assert!(ok(2, 4));
        assert!(ok(2, 0));
        assert!(ok(543, 0));
        assert!(!ok(2, 5));
        assert!(!ok(1, 0));
        assert!(!ok(3, 0));
        assert!(!ok(543, 1));
        let e = parse_header(&header(MAGIC_MICRO, 1, 0, 0, 1), true).unwrap_err();
        assert_eq!(e.message(), "archaic pcap savefile format");
    }

    #[test]
    fn kuznetzov_snapshot() {
        let h = parse_header(&header(MAGIC_KUZNETZOV, 2, 4, 100, 1), true).unwrap();
        assert!(h.kuznetzov);
        assert_eq!(h.snapshot, 114);
        let h = parse_header(&header(MAGIC_KUZNETZOV, 2, 4, 100, 101), true).unwrap();
        assert_eq!(h.snapshot, 100);
        let h = parse_header(&header(MAGIC_KUZNETZOV, 2, 4, 0x7FFF_FFFA, 1), true).unwrap();
        assert_eq!(h.snapshot, 0x7FFF_FFFF);
    }

    #[test]
    fn linktype_extension_bits() {
        let h = parse_header(&header(MAGIC_MICRO, 2, 4, 0, 0xFC00_000C), true).unwrap();
        assert_eq!(h.linktype, 101);
        assert_eq!(h.header_linktype, 0xFC00_0065);
    }
}
