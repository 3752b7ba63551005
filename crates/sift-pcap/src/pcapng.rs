//! pcapng files: section/interface bookkeeping and the per-block cursor.
//!
//! Semantics follow libpcap 1.10.3 (`sf-pcapng.c`), checked against the
//! installed library, with three deliberate extensions (libpcap 1.10.3
//! refuses these files; we read them):
//!
//! * interfaces may have different link types (each packet reports its
//!   interface's link type);
//! * interfaces may have different snapshot lengths (each packet is checked
//!   against its own interface's);
//! * sections may have different byte orders (each Section Header Block's
//!   byte-order magic decides how its section is read).
//!
//! On every file libpcap reads, the packets and the point of failure are
//! the same as libpcap's. Quirks kept on purpose: the first Section Header
//! Block's trailer and options are not checked; Section Header Blocks seen
//! before the first Interface Description Block are skipped unchecked; later
//! ones need major version 1 (any minor); a Simple Packet Block whose
//! packet does not fit in the block is damage (not cut to the block size).

use crate::bytes::{rd16, rd32, rd64, u16_at, u32_at};
use crate::error::{Error, ErrorKind};
use crate::linktype;
use crate::timestamp::{Timestamp, DEFAULT_TSRESOL};
use crate::{fixup, RawRecord, POST_SWAP, POST_USB_LEN};

const BT_SHB: u32 = 0x0A0D_0D0A;
const BT_IDB: u32 = 1;
const BT_PB: u32 = 2;
const BT_SPB: u32 = 3;
const BT_EPB: u32 = 6;
const BYTE_ORDER_MAGIC: u32 = 0x1A2B_3C4D;

/// Block header (type + length) plus trailer.
const BLOCK_OVERHEAD: usize = 12;
/// The smallest Section Header Block: overhead + magic, versions, length.
const SHB_MIN: u32 = 28;
/// libpcap refuses a first Section Header Block longer than 1 MiB.
const SHB_MAX: u32 = 1024 * 1024;
/// Block size limit before any interface is known (libpcap: 16 MiB).
const INITIAL_MAX_BLOCK: u64 = 16 * 1024 * 1024;
/// The smallest Interface Description Block; bounds the interface table.
const IDB_MIN: usize = 20;

/// The byte order a Section Header Block at `pos` declares: `Some(true)`
/// for little-endian, `None` if the block is too short to tell or the
/// magic is wrong.
fn section_order(bytes: &[u8], pos: usize) -> Option<bool> {
    let m = bytes.get(pos.checked_add(8)?..pos.checked_add(12)?)?;
    let m = [m[0], m[1], m[2], m[3]];
    if u32::from_le_bytes(m) == BYTE_ORDER_MAGIC {
        Some(true)
    } else if u32::from_be_bytes(m) == BYTE_ORDER_MAGIC {
        Some(false)
    } else {
        None
    }
}

/// Checks for a pcapng Section Header Block at the start of the input.
/// Returns the section's byte order (`true` = little-endian) if it is one.
/// Like libpcap, a block type without a valid byte-order magic is "not
/// pcapng" rather than damage.
pub(crate) fn sniff(bytes: &[u8]) -> Option<bool> {
    if rd32(bytes, 0, true) != BT_SHB {
        return None;
    }
    section_order(bytes, 0)
}

/// One interface of the current section (16 bytes, so the table can never
/// outgrow the input: every entry comes from an IDB of at least 20 bytes).
#[derive(Clone, Copy, Debug)]
struct Iface {
    offset: i64,
    snapshot: u32,
    linktype: u16,
    resol: u8,
    post: u8,
}

/// Once an interface of `linktype` is known, blocks big enough for its
/// largest packet plus 128 KiB of options are acceptable (libpcap).
fn max_block_for(linktype: u32) -> u64 {
    8 + 20 + u64::from(linktype::max_snaplen(linktype)) + 131_072 + 4
}

/// A block located and checked by `Cursor::read_block`.
struct Block {
    start: usize,
    btype: u32,
    /// Body: from after the 8-byte header to before the 4-byte trailer.
    body: std::ops::Range<usize>,
}

/// What the file header tells about the capture.
#[derive(Clone, Debug)]
pub(crate) struct Summary {
    pub le: bool,
    pub version: (u16, u16),
    pub linktype: u32,
    pub snapshot: u32,
}

/// Iteration state over the blocks of a pcapng file.
#[derive(Clone, Debug)]
pub(crate) struct Cursor {
    pos: usize,
    /// Byte order of the current section.
    le: bool,
    native_le: bool,
    ifaces: Vec<Iface>,
    max_block: u64,
}

fn short_block(b: &Block) -> Error {
    Error::new(
        ErrorKind::Malformed,
        b.start,
        format!("block of type {} in pcapng file is too short", b.btype),
    )
}

impl Cursor {
    /// Validates the first Section Header Block and reads up to and
    /// including the first Interface Description Block, as libpcap does
    /// when it opens a file. Errors here mean libpcap would not open it.
    pub(crate) fn open(bytes: &[u8], le: bool, native_le: bool) -> Result<(Summary, Cursor), Error> {
        let total = rd32(bytes, 4, le);
        if !(SHB_MIN..=SHB_MAX).contains(&total) {
            return Err(Error::new(
                ErrorKind::Malformed,
                0,
                format!("Section Header Block has invalid length {total}"),
            ));
        }
        if total as usize > bytes.len() {
            return Err(Error::new(
                ErrorKind::Truncated,
                0,
                format!(
                    "truncated Section Header Block: {} of {total} bytes",
                    bytes.len()
                ),
            ));
        }
        let major = rd16(bytes, 12, le);
        let minor = rd16(bytes, 14, le);
        if !(major == 1 && (minor == 0 || minor == 2)) {
            return Err(Error::new(
                ErrorKind::Unsupported,
                12,
                format!("unsupported pcapng savefile version {major}.{minor}"),
            ));
        }
        let mut c = Cursor {
            pos: total as usize,
            le,
            native_le,
            ifaces: Vec::new(),
            max_block: INITIAL_MAX_BLOCK,
        };
        loop {
            let Some(b) = c.read_block(bytes)? else {
                return Err(Error::new(
                    ErrorKind::Malformed,
                    c.pos,
                    "the capture file has no Interface Description Blocks",
                ));
            };
            match b.btype {
                BT_IDB => {
                    c.add_interface(bytes, &b)?;
                    let Some(first) = c.ifaces.first().copied() else {
                        return Err(short_block(&b));
                    };
                    let summary = Summary {
                        le,
                        version: (major, minor),
                        linktype: u32::from(first.linktype),
                        snapshot: first.snapshot,
                    };
                    return Ok((summary, c));
                }
                BT_EPB | BT_SPB | BT_PB => {
                    return Err(Error::new(
                        ErrorKind::Malformed,
                        b.start,
                        "the capture file has a packet block before any Interface Description Blocks",
                    ));
                }
                // libpcap skips everything else here, Section Header Blocks
                // included (without looking at their version).
                _ => {}
            }
        }
    }

    /// Reads and checks the block at the cursor and moves past it.
    /// `Ok(None)` at a clean end of input. A Section Header Block that
    /// declares the other byte order switches the cursor to it before its
    /// length is read.
    #[inline]
    fn read_block(&mut self, bytes: &[u8]) -> Result<Option<Block>, Error> {
        let start = self.pos;
        let rest = match bytes.get(start..) {
            Some(r) if !r.is_empty() => r,
            _ => return Ok(None),
        };
        let Some(h) = rest.first_chunk::<8>() else {
            return Err(Error::new(
                ErrorKind::Truncated,
                start,
                format!("truncated block header: {} of 8 bytes", rest.len()),
            ));
        };
        if h[..4] == BT_SHB.to_le_bytes() {
            if let Some(le) = section_order(bytes, start) {
                self.le = le;
            }
        }
        let btype = u32_at::<0, 8>(h, self.le);
        let total = u32_at::<4, 8>(h, self.le);
        let block = match rest.get(..total as usize) {
            Some(b) if total as usize >= BLOCK_OVERHEAD && total.is_multiple_of(4) && u64::from(total) <= self.max_block => b,
            _ => return Err(self.bad_block_length(start, total, rest.len())),
        };
        let trailer = match block.last_chunk::<4>() {
            Some(t) => u32_at::<0, 4>(t, self.le),
            None => 0,
        };
        if trailer != total {
            return Err(Error::new(
                ErrorKind::Malformed,
                start,
                format!("block total length in header {total} and trailer {trailer} don't match"),
            ));
        }
        self.pos = start + total as usize;
        Ok(Some(Block {
            start,
            btype,
            body: start + 8..start + total as usize - 4,
        }))
    }

    #[cold]
    fn bad_block_length(&self, start: usize, total: u32, available: usize) -> Error {
        let (kind, msg) = if (total as usize) < BLOCK_OVERHEAD {
            (ErrorKind::Malformed, format!("block has a length of {total} < {BLOCK_OVERHEAD}"))
        } else if !total.is_multiple_of(4) {
            (ErrorKind::Malformed, format!("block has a length of {total} that is not a multiple of 4"))
        } else if u64::from(total) > self.max_block {
            (ErrorKind::Malformed, format!("block size {total} > maximum {}", self.max_block))
        } else {
            (ErrorKind::Truncated, format!("truncated block: {available} of {total} bytes"))
        };
        Error::new(kind, start, msg)
    }

    /// Parses an Interface Description Block and appends the interface.
    fn add_interface(&mut self, bytes: &[u8], b: &Block) -> Result<(), Error> {
        let le = self.le;
        let body = bytes.get(b.body.clone()).unwrap_or(&[]);
        if body.len() < 8 {
            return Err(short_block(b));
        }
        let raw_linktype = rd16(body, 0, le);
        let snaplen = rd32(body, 4, le);
        let mut resol = None;
        let mut offset = None;
        let mut at = 8usize;
        while at < body.len() {
            let opt_start = b.body.start + at;
            if body.len() - at < 4 {
                return Err(short_block(b));
            }
            let code = rd16(body, at, le);
            let len = rd16(body, at + 2, le);
            let padded = usize::from(len).div_ceil(4) * 4;
            at += 4;
            if body.len() - at < padded {
                return Err(short_block(b));
            }
            let value = body.get(at..at + usize::from(len)).unwrap_or(&[]);
            at += padded;
            let bad = |msg: String| Err(Error::new(ErrorKind::Malformed, opt_start, msg));
            match code {
                0 => {
                    if len != 0 {
                        return bad(format!(
                            "Interface Description Block has opt_endofopt option with length {len} != 0"
                        ));
                    }
                    break;
                }
                9 => {
                    if len != 1 {
                        return bad(format!(
                            "Interface Description Block has if_tsresol option with length {len} != 1"
                        ));
                    }
                    if resol.is_some() {
                        return bad("Interface Description Block has more than one if_tsresol option".into());
                    }
                    let r = value.first().copied().unwrap_or(0);
                    if r & 0x80 != 0 && r & 0x7f > 63 {
                        return bad(format!(
                            "Interface Description Block if_tsresol option resolution 2^-{} is too high",
                            r & 0x7f
                        ));
                    }
                    if r & 0x80 == 0 && r > 19 {
                        return bad(format!(
                            "Interface Description Block if_tsresol option resolution 10^-{r} is too high"
                        ));
                    }
                    resol = Some(r);
                }
                14 => {
                    if len != 8 {
                        return bad(format!(
                            "Interface Description Block has if_tsoffset option with length {len} != 8"
                        ));
                    }
                    if offset.is_some() {
                        return bad("Interface Description Block has more than one if_tsoffset option".into());
                    }
                    offset = Some(rd64(value, 0, le) as i64);
                }
                _ => {}
            }
        }
        let lt = linktype::normalize(u32::from(raw_linktype));
        let mut post = 0;
        if le != self.native_le && fixup::needs_swap(lt) {
            post |= POST_SWAP;
        }
        if lt == linktype::USB_LINUX_MMAPPED {
            post |= POST_USB_LEN;
        }
        let iface = Iface {
            offset: offset.unwrap_or(0),
            snapshot: linktype::adjust_snapshot(lt, snaplen),
            // normalize() maps a 16-bit value to at most 289 or itself.
            linktype: u16::try_from(lt).unwrap_or(raw_linktype),
            resol: resol.unwrap_or(DEFAULT_TSRESOL),
            post,
        };
        self.max_block = self.max_block.max(max_block_for(lt));
        if self.ifaces.len() == self.ifaces.capacity() {
            // Grow by at most the number of IDBs the rest of the input could
            // still hold, so the table stays smaller than the input.
            let room = bytes.len().saturating_sub(self.pos) / IDB_MIN;
            self.ifaces.reserve_exact(self.ifaces.len().clamp(4, room.max(4)));
        }
        self.ifaces.push(iface);
        Ok(())
    }

    /// Reads blocks up to the next packet: `None` at a clean end of input.
    #[inline]
    pub(crate) fn next(&mut self, bytes: &[u8]) -> Option<Result<RawRecord, Error>> {
        match self.next_inner(bytes) {
            Ok(Some(r)) => Some(Ok(r)),
            Ok(None) => None,
            Err(e) => {
                self.finish();
                Some(Err(e))
            }
        }
    }

    /// Stops the cursor (after an error).
    pub(crate) fn finish(&mut self) {
        self.pos = usize::MAX;
    }

    /// Whether any packet from here on could need its pseudo-header
    /// byte-swapped: a quick walk over the block headers looking for an
    /// interface of a swapped link type in a section of the other byte
    /// order. Stops (with `false`) where reading would stop with damage.
    pub(crate) fn swap_possible(&self, bytes: &[u8]) -> bool {
        if self.ifaces.iter().any(|i| i.post & POST_SWAP != 0) {
            return true;
        }
        let mut c = Cursor {
            pos: self.pos,
            le: self.le,
            native_le: self.native_le,
            ifaces: Vec::new(),
            max_block: self.max_block,
        };
        while let Ok(Some(b)) = c.read_block(bytes) {
            if b.btype == BT_IDB {
                let lt = linktype::normalize(u32::from(rd16(bytes, b.body.start, c.le)));
                if c.le != c.native_le && fixup::needs_swap(lt) {
                    return true;
                }
                c.max_block = c.max_block.max(max_block_for(lt));
            }
        }
        false
    }

    /// Heap bytes held by the interface table.
    pub(crate) fn allocated_bytes(&self) -> usize {
        self.ifaces.capacity() * std::mem::size_of::<Iface>()
    }

    #[inline]
    fn next_inner(&mut self, bytes: &[u8]) -> Result<Option<RawRecord>, Error> {
        loop {
            let Some(b) = self.read_block(bytes)? else {
                return Ok(None);
            };
            let le = self.le;
            let body = bytes.get(b.body.clone()).unwrap_or(&[]);
            let (interface, ticks, caplen, wire_len, fixed) = match b.btype {
                BT_EPB => {
                    let Some(f) = body.first_chunk::<20>() else {
                        return Err(short_block(&b));
                    };
                    let ticks = (u64::from(u32_at::<4, 20>(f, le)) << 32) | u64::from(u32_at::<8, 20>(f, le));
                    (u32_at::<0, 20>(f, le), Some(ticks), u32_at::<12, 20>(f, le), u32_at::<16, 20>(f, le), 20)
                }
                BT_SPB => {
                    if body.len() < 4 {
                        return Err(short_block(&b));
                    }
                    let wire_len = rd32(body, 0, le);
                    let snapshot = self.ifaces.first().map_or(u32::MAX, |i| i.snapshot);
                    (0, None, wire_len.min(snapshot), wire_len, 4)
                }
                BT_PB => {
                    let Some(f) = body.first_chunk::<20>() else {
                        return Err(short_block(&b));
                    };
                    let ticks = (u64::from(u32_at::<4, 20>(f, le)) << 32) | u64::from(u32_at::<8, 20>(f, le));
                    let iface = u32::from(u16_at::<0, 20>(f, le));
                    (iface, Some(ticks), u32_at::<12, 20>(f, le), u32_at::<16, 20>(f, le), 20)
                }
                BT_IDB => {
                    self.add_interface(bytes, &b)?;
                    continue;
                }
                BT_SHB => {
                    if body.len() < 16 {
                        return Err(short_block(&b));
                    }
                    if rd32(body, 0, le) != BYTE_ORDER_MAGIC {
                        return Err(Error::new(
                            ErrorKind::Malformed,
                            b.start,
                            "the file has a section with a bad byte order magic field",
                        ));
                    }
                    let major = rd16(body, 4, le);
                    if major != 1 {
                        return Err(Error::new(
                            ErrorKind::Unsupported,
                            b.start,
                            format!("unknown pcapng savefile major version number {major}"),
                        ));
                    }
                    self.ifaces.clear();
                    continue;
                }
                _ => continue,
            };
            let Some(iface) = self.ifaces.get(interface as usize).copied() else {
                return Err(Error::new(
                    ErrorKind::Malformed,
                    b.start,
                    format!(
                        "a packet arrived on interface {interface}, but there's no Interface Description Block for that interface"
                    ),
                ));
            };
            if caplen > iface.snapshot {
                return Err(Error::new(
                    ErrorKind::Malformed,
                    b.start,
                    format!(
                        "invalid packet capture length {caplen}, bigger than snaplen of {}",
                        iface.snapshot
                    ),
                ));
            }
            if caplen as usize > body.len() - fixed {
                return Err(short_block(&b));
            }
            let ts = Timestamp::from_ticks(ticks.unwrap_or(0), iface.offset, iface.resol);
            return Ok(Some(RawRecord {
                data_start: b.body.start + fixed,
                caplen,
                wire_len,
                linktype: u32::from(iface.linktype),
                interface,
                ts,
                post: iface.post,
            }));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interface_entries_are_smaller_than_the_smallest_idb() {
        assert!(std::mem::size_of::<Iface>() <= 16);
        assert!(std::mem::size_of::<Iface>() < IDB_MIN);
    }
}
