//! Shared helpers for the integration tests: capture builders, the corpus
//! location, a tiny deterministic PRNG and the text form of a read-through
//! that the libpcap oracle also prints.
#![allow(dead_code)]

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use sift_pcap::{Capture, TsPrecision};

/// The shared capture corpus (override with `SIFT_PCAPS`).
pub fn corpus_dir() -> PathBuf {
    std::env::var_os("SIFT_PCAPS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/work/shared/data/pcaps"))
}

/// Every regular file under the corpus directory (captures, but also the
/// index and licence files, which must be rejected like tcpdump does),
/// sorted. Empty if the corpus is missing.
pub fn corpus_files() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(rd) = std::fs::read_dir(dir) else { return };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.is_file() {
                out.push(p);
            }
        }
    }
    let mut v = Vec::new();
    walk(&corpus_dir(), &mut v);
    v.sort();
    v
}

/// Files that look like captures (by name).
pub fn corpus_captures() -> Vec<PathBuf> {
    corpus_files()
        .into_iter()
        .filter(|p| {
            let n = p.to_string_lossy();
            n.ends_with(".pcap") || n.ends_with(".pcapng")
        })
        .collect()
}

/// xorshift64* — deterministic, no dependencies.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next_u64() % n
        }
    }
    pub fn chance(&mut self, num: u64, den: u64) -> bool {
        self.below(den) < num
    }
    pub fn bytes_upto(&mut self, max: u64) -> Vec<u8> {
        let n = self.below(max) as usize;
        self.bytes(n)
    }
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next_u64() as u8).collect()
    }
}

/// Byte order of a built file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Endian {
    Little,
    Big,
}

impl Endian {
    pub fn u16(self, v: u16) -> [u8; 2] {
        match self {
            Endian::Little => v.to_le_bytes(),
            Endian::Big => v.to_be_bytes(),
        }
    }
    pub fn u32(self, v: u32) -> [u8; 4] {
        match self {
            Endian::Little => v.to_le_bytes(),
            Endian::Big => v.to_be_bytes(),
        }
    }
    pub fn u64(self, v: u64) -> [u8; 8] {
        match self {
            Endian::Little => v.to_le_bytes(),
            Endian::Big => v.to_be_bytes(),
        }
    }
    pub fn other(self) -> Endian {
        match self {
            Endian::Little => Endian::Big,
            Endian::Big => Endian::Little,
        }
    }
}

/// Builder for classic pcap files.
pub struct PcapBuilder {
    pub e: Endian,
    pub buf: Vec<u8>,
    pub kuznetzov: bool,
}

impl PcapBuilder {
    pub fn new(e: Endian, magic: u32, version: (u16, u16), snaplen: u32, linktype: u32) -> PcapBuilder {
        let mut buf = Vec::new();
        buf.extend_from_slice(&e.u32(magic));
        buf.extend_from_slice(&e.u16(version.0));
        buf.extend_from_slice(&e.u16(version.1));
        buf.extend_from_slice(&e.u32(0));
        buf.extend_from_slice(&e.u32(0));
        buf.extend_from_slice(&e.u32(snaplen));
        buf.extend_from_slice(&e.u32(linktype));
        PcapBuilder { e, buf, kuznetzov: magic == 0xa1b2_cd34 }
    }
    pub fn micro(e: Endian, snaplen: u32, linktype: u32) -> PcapBuilder {
        PcapBuilder::new(e, 0xa1b2_c3d4, (2, 4), snaplen, linktype)
    }
    /// A record with explicit header fields (in file order: caplen, len).
    pub fn record(mut self, secs: u32, frac: u32, caplen: u32, len: u32, data: &[u8]) -> PcapBuilder {
        let e = self.e;
        self.buf.extend_from_slice(&e.u32(secs));
        self.buf.extend_from_slice(&e.u32(frac));
        self.buf.extend_from_slice(&e.u32(caplen));
        self.buf.extend_from_slice(&e.u32(len));
        if self.kuznetzov {
            self.buf.extend_from_slice(&[0; 8]);
        }
        self.buf.extend_from_slice(data);
        self
    }
    pub fn packet(self, secs: u32, frac: u32, data: &[u8]) -> PcapBuilder {
        let n = data.len() as u32;
        self.record(secs, frac, n, n, data)
    }
    pub fn bytes(self) -> Vec<u8> {
        self.buf
    }
}

/// Builder for pcapng files. Blocks are written in the current byte order,
/// which `shb` sets.
pub struct NgBuilder {
    pub e: Endian,
    pub buf: Vec<u8>,
}

pub fn ng_option(e: Endian, code: u16, value: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    v.extend_from_slice(&e.u16(code));
    v.extend_from_slice(&e.u16(value.len() as u16));
    v.extend_from_slice(value);
    while !v.len().is_multiple_of(4) {
        v.push(0);
    }
    v
}

impl NgBuilder {
    pub fn new() -> NgBuilder {
        NgBuilder { e: Endian::Little, buf: Vec::new() }
    }
    /// A block with the correct lengths (body padded to 4).
    pub fn block(self, btype: u32, body: &[u8]) -> NgBuilder {
        let mut body = body.to_vec();
        while !body.len().is_multiple_of(4) {
            body.push(0);
        }
        let total = 12 + body.len() as u32;
        self.raw_block(btype, total, &body, total)
    }
    /// A block with explicit header and trailer lengths.
    pub fn raw_block(mut self, btype: u32, total: u32, body: &[u8], trailer: u32) -> NgBuilder {
        let e = self.e;
        self.buf.extend_from_slice(&e.u32(btype));
        self.buf.extend_from_slice(&e.u32(total));
        self.buf.extend_from_slice(body);
        self.buf.extend_from_slice(&e.u32(trailer));
        self
    }
    pub fn shb_version(mut self, e: Endian, major: u16, minor: u16, options: &[u8]) -> NgBuilder {
        self.e = e;
        let mut body = Vec::new();
        body.extend_from_slice(&e.u32(0x1A2B_3C4D));
        body.extend_from_slice(&e.u16(major));
        body.extend_from_slice(&e.u16(minor));
        body.extend_from_slice(&e.u64(u64::MAX));
        body.extend_from_slice(options);
        self.block(0x0A0D_0D0A, &body)
    }
    pub fn shb(self, e: Endian) -> NgBuilder {
        self.shb_version(e, 1, 0, &[])
    }
    pub fn idb(self, linktype: u16, snaplen: u32, options: &[u8]) -> NgBuilder {
        let e = self.e;
        let mut body = Vec::new();
        body.extend_from_slice(&e.u16(linktype));
        body.extend_from_slice(&e.u16(0));
        body.extend_from_slice(&e.u32(snaplen));
        body.extend_from_slice(options);
        self.block(1, &body)
    }
    pub fn epb_full(self, iface: u32, ticks: u64, caplen: u32, len: u32, data: &[u8]) -> NgBuilder {
        let e = self.e;
        let mut body = Vec::new();
        body.extend_from_slice(&e.u32(iface));
        body.extend_from_slice(&e.u32((ticks >> 32) as u32));
        body.extend_from_slice(&e.u32(ticks as u32));
        body.extend_from_slice(&e.u32(caplen));
        body.extend_from_slice(&e.u32(len));
        body.extend_from_slice(data);
        self.block(6, &body)
    }
    pub fn epb(self, iface: u32, ticks: u64, data: &[u8]) -> NgBuilder {
        let n = data.len() as u32;
        self.epb_full(iface, ticks, n, n, data)
    }
    pub fn spb(self, len: u32, data: &[u8]) -> NgBuilder {
        let e = self.e;
        let mut body = Vec::new();
        body.extend_from_slice(&e.u32(len));
        body.extend_from_slice(data);
        self.block(3, &body)
    }
    pub fn pb(self, iface: u16, ticks: u64, caplen: u32, len: u32, data: &[u8]) -> NgBuilder {
        let e = self.e;
        let mut body = Vec::new();
        body.extend_from_slice(&e.u16(iface));
        body.extend_from_slice(&e.u16(0));
        body.extend_from_slice(&e.u32((ticks >> 32) as u32));
        body.extend_from_slice(&e.u32(ticks as u32));
        body.extend_from_slice(&e.u32(caplen));
        body.extend_from_slice(&e.u32(len));
        body.extend_from_slice(data);
        self.block(2, &body)
    }
    pub fn bytes(self) -> Vec<u8> {
        self.buf
    }
}

impl Default for NgBuilder {
    fn default() -> Self {
        NgBuilder::new()
    }
}

/// Outcome of reading a whole capture, in the oracle's text form:
/// `OPEN ...` / `OPENERR`, one `P caplen len sec frac hexdata` line per
/// packet, then `END` or `ERR`. Error texts are left out (they differ from
/// libpcap's on purpose); the link type is printed as libpcap's DLT.
pub fn read_through(bytes: Vec<u8>, precision: TsPrecision) -> String {
    let mut s = String::new();
    let cap = match Capture::from_bytes(bytes) {
        Ok(c) => c,
        Err(_) => {
            s.push_str("OPENERR\n");
            return s;
        }
    };
    describe(&cap, precision, &mut s);
    s
}

/// Like [`read_through`] for an opened capture.
pub fn describe(cap: &Capture, precision: TsPrecision, s: &mut String) {
    let dlt = sift_pcap::linktype::linktype_to_dlt(cap.linktype());
    let _ = writeln!(
        s,
        "OPEN dlt={dlt} snap={} swapped={} ver={}.{}",
        cap.snaplen(),
        cap.swapped() as u8,
        cap.version().0,
        cap.version().1
    );
    if sift_pcap::linktype::is_writable(cap.linktype()) {
        let _ = writeln!(s, "HDR lt={} snap={}", cap.header_linktype(), cap.snaplen());
    } else {
        s.push_str("HDR none\n");
    }
    for p in cap.packets() {
        match p {
            Ok(p) => {
                let (sec, frac) = p.ts.libpcap_timeval(precision);
                let _ = write!(s, "P {} {} {sec} {frac} ", p.data.len(), p.wire_len);
                for b in p.data {
                    let _ = write!(s, "{b:02x}");
                }
                s.push('\n');
            }
            Err(_) => {
                s.push_str("ERR\n");
                return;
            }
        }
    }
    s.push_str("END\n");
}

/// Removes error messages from oracle output lines (`OPENERR msg`,
/// `ERR msg`, `DUMPERR msg`).
pub fn strip_messages(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        if line.starts_with("OPENERR") {
            out.push_str("OPENERR\n");
        } else if line.starts_with("ERR") {
            out.push_str("ERR\n");
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// Whether a program can be run (`prog --version` or similar exits).
pub fn have_program(prog: &str, arg: &str) -> bool {
    std::process::Command::new(prog)
        .arg(arg)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok()
}

/// Offsets of length fields worth overwriting: pcap record caplen/len,
/// pcapng block total lengths (header and trailer) and EPB/PB lengths.
pub fn length_fields(b: &[u8]) -> Vec<usize> {
    let mut out = Vec::new();
    let rd = |at: usize, le: bool| -> Option<u32> {
        let s = b.get(at..at + 4)?;
        let a = [s[0], s[1], s[2], s[3]];
        Some(if le { u32::from_le_bytes(a) } else { u32::from_be_bytes(a) })
    };
    let Some(m) = rd(0, true) else { return out };
    let pcap_magics = [0xa1b2_c3d4u32, 0xa1b2_3c4d, 0xa1b2_cd34];
    if pcap_magics.contains(&m) || pcap_magics.contains(&m.swap_bytes()) {
        let le = pcap_magics.contains(&m);
        let rec = if m == 0xa1b2_cd34 || m.swap_bytes() == 0xa1b2_cd34 { 24 } else { 16 };
        out.push(16); // snaplen
        out.push(20); // linktype
        let mut pos = 24usize;
        while let Some(cap) = rd(pos + 8, le) {
            out.push(pos + 8);
            out.push(pos + 12);
            pos = match pos.checked_add(rec + cap as usize) {
                Some(p) => p,
                None => break,
            };
        }
    } else if m == 0x0A0D_0D0A {
        let le = rd(8, true) == Some(0x1A2B_3C4D);
        let mut pos = 0usize;
        while let Some(total) = rd(pos + 4, le) {
            let t = rd(pos, le).unwrap_or(0);
            out.push(pos + 4);
            if total < 12 {
                break;
            }
            out.push(pos + total as usize - 4);
            if t == 6 {
                out.push(pos + 20);
                out.push(pos + 24);
                out.push(pos + 8);
            }
            if t == 1 {
                out.push(pos + 8);
                out.push(pos + 12);
            }
            pos += total as usize;
        }
    }
    out.retain(|&o| o + 4 <= b.len());
    out
}

/// Interesting values for length fields.
pub const INTERESTING: [u32; 16] = [
    0, 1, 3, 4, 11, 12, 13, 16, 20, 0x7FFF_FFFF, 0x8000_0000, 0xFFFF_FFFF, 262_144, 262_145, 65_535, 0x0100_0000,
];

/// One random mutation of a capture: byte flips, truncation, a length
/// field overwritten with a huge or small value, insertions, deletions.
pub fn mutate(rng: &mut Rng, input: &[u8], fields: &[usize]) -> Vec<u8> {
    let mut b = input.to_vec();
    let rounds = 1 + rng.below(3);
    for _ in 0..rounds {
        let n = b.len() as u64;
        match rng.below(8) {
            0 | 1 => {
                for _ in 0..1 + rng.below(4) {
                    if n > 0 {
                        let i = rng.below(n) as usize;
                        b[i] ^= 1 << rng.below(8);
                    }
                }
            }
            2 => {
                let cut = rng.below(n + 1) as usize;
                b.truncate(cut);
            }
            3 | 4 if !fields.is_empty() => {
                let at = fields[rng.below(fields.len() as u64) as usize];
                let v = if rng.chance(1, 3) {
                    rng.next_u64() as u32
                } else if rng.chance(1, 2) {
                    let old = b.get(at..at + 4).map_or(0, |s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]));
                    old.wrapping_add(rng.below(9) as u32).wrapping_sub(4)
                } else {
                    INTERESTING[rng.below(INTERESTING.len() as u64) as usize]
                };
                let bytes = if rng.chance(1, 2) { v.to_le_bytes() } else { v.to_be_bytes() };
                if let Some(s) = b.get_mut(at..at + 4) {
                    s.copy_from_slice(&bytes);
                }
            }
            5 => {
                if n > 0 {
                    let i = rng.below(n) as usize;
                    let len = (1 + rng.below(16)) as usize;
                    let end = (i + len).min(b.len());
                    b.drain(i..end);
                }
            }
            6 => {
                let i = rng.below(n + 1) as usize;
                let n = 1 + rng.below(8) as usize;
                let extra = rng.bytes(n);
                b.splice(i..i, extra);
            }
            _ => {
                if n > 0 {
                    let i = rng.below(n) as usize;
                    b[i] = rng.next_u64() as u8;
                }
            }
        }
    }
    b
}
