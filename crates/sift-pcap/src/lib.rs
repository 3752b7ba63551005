//! Zero-copy reading of pcap and pcapng capture files, and writing of pcap
//! files, with the semantics of libpcap 1.10.3 / tcpdump 4.99.3.
//!
//! ```no_run
//! use sift_pcap::{Capture, PcapWriter, TsPrecision};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let cap = Capture::open(std::path::Path::new("in.pcap"))?;
//! let mut out = PcapWriter::for_capture(Vec::new(), &cap, TsPrecision::Micro)?;
//! for p in cap.packets() {
//!     let p = p?; // the damage, if any, comes last
//!     out.write_packet(&p)?;
//! }
//! # Ok(()) }
//! ```
//!
//! # What "libpcap semantics" means here
//!
//! Reading a file and writing every packet with [`PcapWriter`] (using
//! [`Capture::header_linktype`], [`Capture::snaplen`] and microsecond
//! precision) gives the same bytes as `tcpdump -r FILE -w OUT`, including on
//! damaged files: the packets libpcap delivers before the damage are
//! delivered here, then one error. In particular:
//!
//! * pcap: versions 2.0–2.4 and 543.0 (with libpcap's length-field
//!   exchanges), the Kuznetzov format, records longer than the snapshot
//!   length but within the link type's maximum cut to the snapshot length,
//!   snapshot lengths of 0 or above `i32::MAX` replaced by the maximum;
//! * pcapng: libpcap's checks of blocks and Interface Description Block
//!   options, `if_tsresol` (decimal and binary) and `if_tsoffset`, Enhanced,
//!   Simple and obsolete Packet Blocks, other blocks skipped (a Simple
//!   Packet Block captures min(original length, snapshot length), and, as
//!   in libpcap, is damage if that does not fit in the block);
//! * link types are reported as libpcap writes them (a file's 12, the Linux
//!   `DLT_RAW`, reads as 101, `LINKTYPE_RAW`);
//! * timestamps convert exactly as libpcap's do ([`Timestamp::micros`]);
//! * files written on a host of the other byte order get their
//!   pseudo-headers (Linux SLL/SLL2 CAN IDs, pflog, Linux USB, NFLOG)
//!   byte-swapped, and memory-mapped Linux USB captures get libpcap's
//!   original-length correction.
//!
//! Beyond libpcap 1.10.3, pcapng files whose interfaces have different link
//! types or snapshot lengths, or whose sections have different byte orders,
//! are read (libpcap refuses them); each [`Packet`] reports its interface's
//! link type.
//!
//! # Resource use
//!
//! Files are memory-mapped; packets borrow the mapping. The only
//! allocations are the interface table of a pcapng section (at most one
//! 16-byte entry per 20-byte Interface Description Block), error messages,
//! and — only for files whose pseudo-headers must be byte-swapped — one
//! copy of the input (made on first need; input given as a `Vec` is
//! patched in place instead). No length field from the file is ever used
//! to size an allocation. Every step of the reader consumes at least 12
//! bytes of input or stops, so reading always terminates.

#![warn(missing_docs)]
// The one exception is the memory mapping in `Capture::open`.
#![deny(unsafe_code)]

mod bytes;
mod error;
mod fixup;
pub mod linktype;
mod pcap;
mod pcapng;
mod pcapng_write;
mod timestamp;
mod writer;

use std::fs::File;
use std::io::Read;
use std::path::Path;
use std::sync::OnceLock;

pub use error::{Error, ErrorKind};
pub use timestamp::{Timestamp, TsPrecision};
pub use pcapng_write::PcapngWriter;
pub use writer::{file_header, PcapWriter};

/// Post-processing flag: the pseudo-header must be byte-swapped.
pub(crate) const POST_SWAP: u8 = 1;
/// Post-processing flag: memory-mapped Linux USB original-length fix.
pub(crate) const POST_USB_LEN: u8 = 2;

const NATIVE_LE: bool = cfg!(target_endian = "little");

/// One record located by a parser, as offsets into the input.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RawRecord {
    /// Offset of the first captured byte.
    pub data_start: usize,
    /// Captured length as delivered (already cut to the snapshot length).
    pub caplen: u32,
    pub wire_len: u32,
    pub linktype: u32,
    pub interface: u32,
    pub ts: Timestamp,
    pub post: u8,
}

/// The container format of a capture file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// Classic pcap. `nanos`: nanosecond timestamps (magic 0xa1b23c4d);
    /// `swapped`: the file's byte order differs from the host's.
    Pcap {
        /// Nanosecond timestamps.
        nanos: bool,
        /// File byte order differs from the host's.
        swapped: bool,
    },
    /// pcapng.
    Pcapng,
}

/// The bytes of a capture: a read-only mapping of a file, or owned.
enum Storage {
    Mapped(memmap2::Mmap),
    Owned(Vec<u8>),
}

impl Storage {
    fn bytes(&self) -> &[u8] {
        match self {
            Storage::Mapped(m) => m,
            Storage::Owned(v) => v,
        }
    }
}

/// Parser state at the first packet.
#[derive(Clone, Debug)]
enum Start {
    Pcap(pcap::Cursor),
    Ng(pcapng::Cursor),
}

impl Start {
    #[inline]
    fn next(&mut self, bytes: &[u8]) -> Option<Result<RawRecord, Error>> {
        match self {
            Start::Pcap(c) => c.next(bytes),
            Start::Ng(c) => c.next(bytes),
        }
    }
}

/// An opened capture file (pcap or pcapng), ready to iterate.
///
/// Opening validates what libpcap validates when it opens a file (the file
/// header; for pcapng everything up to the first Interface Description
/// Block); an error from [`Capture::open`] means `tcpdump -r` would fail
/// before reading any packet.
pub struct Capture {
    storage: Storage,
    /// Copy of a mapped input with pseudo-headers byte-swapped, made the
    /// first time a packet needs it.
    patched: OnceLock<Vec<u8>>,
    /// The storage itself is already patched (owned input).
    prepatched: bool,
    start: Start,
    format: Format,
    linktype: u32,
    header_linktype: u32,
    snaplen: u32,
    swapped: bool,
    version: (u16, u16),
}

impl std::fmt::Debug for Capture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Capture")
            .field("format", &self.format)
            .field("linktype", &self.linktype)
            .field("snaplen", &self.snaplen)
            .field("swapped", &self.swapped)
            .field("version", &self.version)
            .field("len", &self.storage.bytes().len())
            .finish()
    }
}

impl Capture {
    /// Opens a file by memory-mapping it (packet data is never copied).
    /// Empty files and things that cannot be mapped (pipes, character
    /// devices) are read into memory instead.
    ///
    /// The mapping assumes the file is not truncated or rewritten while the
    /// `Capture` is alive (as with any memory-mapped reader, doing so may
    /// crash the process).
    pub fn open(path: &Path) -> Result<Capture, Error> {
        let mut file = File::open(path).map_err(|e| Error::io(&e))?;
        let meta = file.metadata().map_err(|e| Error::io(&e))?;
        if meta.is_file() && meta.len() > 0 {
            #[allow(unsafe_code)]
            // SAFETY: the mapping is read-only and private to this Capture.
            // memmap2 requires that the underlying file is not modified or
            // truncated while mapped; that is the documented contract of
            // `Capture::open` (the same one every mmap-based reader has).
            let map = unsafe { memmap2::Mmap::map(&file) };
            if let Ok(map) = map {
                let _ = map.advise(memmap2::Advice::Sequential);
                return Capture::from_storage(Storage::Mapped(map));
            }
        }
        let mut buf = Vec::new();
        file.read_to_end(&mut buf).map_err(|e| Error::io(&e))?;
        Capture::from_bytes(buf)
    }

    /// Reads a capture held in memory (e.g. standard input read to the end).
    pub fn from_bytes(bytes: Vec<u8>) -> Result<Capture, Error> {
        Capture::from_storage(Storage::Owned(bytes))
    }

    /// Reads everything from `r` (e.g. standard input) and opens it.
    pub fn read_from(mut r: impl Read) -> Result<Capture, Error> {
        let mut buf = Vec::new();
        r.read_to_end(&mut buf).map_err(|e| Error::io(&e))?;
        Capture::from_bytes(buf)
    }

    fn from_storage(storage: Storage) -> Result<Capture, Error> {
        let bytes = storage.bytes();
        if bytes.len() < 4 {
            return Err(Error::new(
                ErrorKind::Truncated,
                0,
                format!(
                    "truncated file: {} bytes, too short for a capture file header",
                    bytes.len()
                ),
            ));
        }
        let mut cap = if let Some(le) = pcap::sniff(bytes) {
            let h = pcap::parse_header(bytes, le)?;
            let swapped = h.le != NATIVE_LE;
            Capture {
                start: Start::Pcap(pcap::Cursor::new(&h, NATIVE_LE)),
                format: Format::Pcap { nanos: h.nanos, swapped },
                linktype: h.linktype,
                header_linktype: h.header_linktype,
                snaplen: h.snapshot,
                swapped,
                version: h.version,
                storage,
                patched: OnceLock::new(),
                prepatched: false,
            }
        } else if let Some(le) = pcapng::sniff(bytes) {
            let (s, cursor) = pcapng::Cursor::open(bytes, le, NATIVE_LE)?;
            Capture {
                start: Start::Ng(cursor),
                format: Format::Pcapng,
                linktype: s.linktype,
                header_linktype: s.linktype,
                snaplen: s.snapshot,
                swapped: s.le != NATIVE_LE,
                version: s.version,
                storage,
                patched: OnceLock::new(),
                prepatched: false,
            }
        } else {
            return Err(Error::new(ErrorKind::NotACapture, 0, "unknown file format"));
        };
        // Owned input is patched in place right away: cheap next to reading
        // it, and it avoids holding a second copy.
        if let Storage::Owned(v) = &mut cap.storage {
            if might_need_patch(&cap.start, v) {
                patch_all(v, &cap.start);
            }
            cap.prepatched = true;
        }
        Ok(cap)
    }

    /// The container format.
    pub fn format(&self) -> Format {
        self.format
    }

    /// LINKTYPE_* of the file header (pcap, without the extension bits) or
    /// of the first Interface Description Block (pcapng), normalized the
    /// way libpcap reports it (see [`linktype::normalize`]).
    pub fn linktype(&self) -> u32 {
        self.linktype
    }

    /// The 32-bit link-type field tcpdump writes for this file: the
    /// normalized link type plus the upper 6 "extension" bits of a pcap
    /// header (FCS length information), which libpcap carries over.
    pub fn header_linktype(&self) -> u32 {
        self.header_linktype
    }

    /// The snapshot length as `pcap_snapshot()` reports it for this file
    /// (and as tcpdump writes it): the header's value, except that 0 and
    /// values above `i32::MAX` become the link type's maximum, plus 14 for
    /// Kuznetzov-format Ethernet files.
    pub fn snaplen(&self) -> u32 {
        self.snaplen
    }

    /// Whether the file's byte order (for pcapng: the first section's)
    /// differs from the host's (libpcap's `pcap_is_swapped`).
    pub fn swapped(&self) -> bool {
        self.swapped
    }

    /// Major and minor version of the pcap header or of the first pcapng
    /// Section Header Block.
    pub fn version(&self) -> (u16, u16) {
        self.version
    }

    /// The raw input bytes.
    pub fn as_bytes(&self) -> &[u8] {
        self.storage.bytes()
    }

    /// Iterates over the packets: every good packet in order, then at most
    /// one `Err` describing the damage that stopped reading, then `None`.
    pub fn packets(&self) -> Packets<'_> {
        Packets {
            capture: self,
            bytes: self.storage.bytes(),
            patched_view: self.prepatched,
            cursor: Some(self.start.clone()),
            last_allocated: 0,
        }
    }

    /// The input with pseudo-headers byte-swapped (same layout).
    fn patched_bytes(&self) -> &[u8] {
        if self.prepatched {
            return self.storage.bytes();
        }
        self.patched.get_or_init(|| {
            let mut copy = self.storage.bytes().to_vec();
            patch_all(&mut copy, &self.start);
            copy
        })
    }
}

/// Whether any packet could need pseudo-header swapping: known from the
/// header for pcap; for pcapng, from a quick walk over the block headers.
fn might_need_patch(start: &Start, bytes: &[u8]) -> bool {
    match start {
        Start::Pcap(c) => c.may_need_swap(),
        Start::Ng(c) => c.swap_possible(bytes),
    }
}

/// Byte-swaps, in place, the pseudo-headers of every packet that needs it,
/// walking the records exactly as the iterator does and stopping at the
/// first damage.
fn patch_all(buf: &mut [u8], start: &Start) {
    let mut cursor = start.clone();
    while let Some(Ok(rec)) = cursor.next(buf) {
        if rec.post & POST_SWAP == 0 {
            continue;
        }
        let end = rec.data_start.saturating_add(rec.caplen as usize);
        if let Some(data) = buf.get_mut(rec.data_start..end) {
            fixup::swap_pseudo_header(rec.linktype, data, rec.wire_len);
        }
    }
}

/// A packet borrowed from a [`Capture`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packet<'a> {
    /// The captured bytes (zero copy; for files of the other byte order
    /// with host-order pseudo-headers, from the byte-swapped copy).
    pub data: &'a [u8],
    /// The original length on the wire.
    pub wire_len: u32,
    /// LINKTYPE_* of the packet's interface (normalized like
    /// [`Capture::linktype`]).
    pub linktype: u32,
    /// pcapng interface id within its section (0 for pcap).
    pub interface: u32,
    /// The timestamp as stored in the file.
    pub ts: Timestamp,
}

impl Packet<'_> {
    /// The captured length (`data.len()`).
    pub fn caplen(&self) -> u32 {
        self.data.len() as u32
    }
}

/// Iterator over the packets of a [`Capture`]: every good packet, then at
/// most one error, then `None`. No allocation per packet.
pub struct Packets<'a> {
    capture: &'a Capture,
    bytes: &'a [u8],
    patched_view: bool,
    cursor: Option<Start>,
    /// `allocated_bytes` of the cursor when it was dropped at the end.
    last_allocated: usize,
}

impl std::fmt::Debug for Packets<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Packets").field("done", &self.cursor.is_none()).finish()
    }
}

impl<'a> Packets<'a> {
    /// Heap memory held by this iterator: the interface table of the
    /// current pcapng section (16 bytes per interface, grown at most to one
    /// entry per 20 bytes of remaining input), 0 for pcap. The table keeps
    /// its capacity, so this is also the peak.
    pub fn allocated_bytes(&self) -> usize {
        match &self.cursor {
            Some(Start::Ng(c)) => c.allocated_bytes(),
            _ => self.last_allocated,
        }
    }

    /// Ends the iteration (remembering the table size for
    /// `allocated_bytes`).
    fn stop(&mut self) {
        if let Some(Start::Ng(c)) = &self.cursor {
            self.last_allocated = c.allocated_bytes();
        }
        self.cursor = None;
    }

    /// Slow path for packets that need libpcap's post-processing.
    #[cold]
    fn post_process(&mut self, rec: &RawRecord) -> Option<(&'a [u8], u32)> {
        if rec.post & POST_SWAP != 0 && !self.patched_view {
            self.bytes = self.capture.patched_bytes();
            self.patched_view = true;
        }
        let data = self.bytes.get(rec.data_start..rec.data_start.checked_add(rec.caplen as usize)?)?;
        let mut wire_len = rec.wire_len;
        if rec.post & POST_USB_LEN != 0 {
            wire_len = fixup::usb_mmapped_wire_len(data, wire_len);
        }
        Some((data, wire_len))
    }
}

/// How far past the start of the packet it returns [`Packets`] asks the
/// processor to start loading the file's bytes (the next records' headers,
/// which the parser reads one after another). A capture read whole streams
/// from memory, and the record headers are a chain (each one's position
/// comes from the one before): loaded on demand, each is waited for in
/// turn. Asked for 1 KiB ahead, `sift -r FILE --count` reads a million
/// packets of `sift gen mixed` (777 MB, in the page cache) in 0.14–0.15 s
/// instead of 0.18 s (512 to 8192 bytes measured alike, session 12). With
/// packets of 1 KB that is one record ahead, and each new 4 KiB page is
/// still met cold (its translation and its first lines): a second request
/// 4 KiB ahead makes a million packets of `sift gen tcp5555` 20% faster to
/// read (155 → 124 ms for the whole `sift -r --count`), `mixed` 9%
/// (138 → 125 ms) and `pingflood` 10% (session 14; a third request 16 KiB
/// ahead, or a mapping populated up front, gained nothing more).
const READ_AHEAD: [usize; 2] = [1024, 4096];

/// Asks the processor to load the cache line of `bytes[at]` (nothing past
/// the end of `bytes`, or where there is no such instruction).
#[inline(always)]
fn prefetch(bytes: &[u8], at: usize) {
    #[cfg(target_arch = "x86_64")]
    if let Some(b) = bytes.get(at) {
        // SAFETY: `_mm_prefetch` needs SSE, which every x86-64 processor
        // has; a prefetch is a hint to the cache that never faults and
        // reads nothing into the program (and `b` lies inside `bytes`).
        #[allow(unsafe_code)]
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(std::ptr::from_ref(b).cast())
        };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (bytes, at);
}

impl<'a> Iterator for Packets<'a> {
    type Item = Result<Packet<'a>, Error>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        let cursor = self.cursor.as_mut()?;
        let rec = match cursor.next(self.bytes) {
            None => {
                self.stop();
                return None;
            }
            Some(Err(e)) => {
                self.stop();
                return Some(Err(e));
            }
            Some(Ok(rec)) => rec,
        };
        for ahead in READ_AHEAD {
            prefetch(self.bytes, rec.data_start.saturating_add(ahead));
        }
        let found = if rec.post == 0 {
            let end = rec.data_start.checked_add(rec.caplen as usize);
            end.and_then(|end| self.bytes.get(rec.data_start..end)).map(|d| (d, rec.wire_len))
        } else {
            self.post_process(&rec)
        };
        let Some((data, wire_len)) = found else {
            // The parsers only return records inside the input.
            self.stop();
            return Some(Err(Error::new(
                ErrorKind::Malformed,
                rec.data_start,
                "internal error: record outside the input",
            )));
        };
        Some(Ok(Packet {
            data,
            wire_len,
            linktype: rec.linktype,
            interface: rec.interface,
            ts: rec.ts,
        }))
    }
}

impl std::iter::FusedIterator for Packets<'_> {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shareable_across_threads() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<Capture>();
        send_sync::<Packet<'static>>();
        send_sync::<Packets<'static>>();
        send_sync::<Error>();
    }

    #[test]
    fn hot_path_types_stay_small() {
        assert!(std::mem::size_of::<Error>() <= 8);
        assert!(std::mem::size_of::<Packet<'static>>() <= 64);
    }
}
