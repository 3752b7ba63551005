//! Writing classic pcap files the way libpcap's `pcap_dump` does.

use std::io::{self, Write};

use crate::timestamp::TsPrecision;
use crate::{Capture, Packet};

/// Writes a pcap file: a 24-byte header in host byte order (magic
/// 0xa1b2c3d4 or 0xa1b23c4d, version 2.4, thiszone 0, sigfigs 0, the given
/// snapshot length and link type), then one 16-byte record header plus the
/// captured bytes per packet — byte for byte what `tcpdump -w` produces.
///
/// The writer does not buffer; wrap `W` in a `BufWriter` for files.
#[derive(Debug)]
pub struct PcapWriter<W: Write> {
    out: W,
    precision: TsPrecision,
}

/// The 24-byte pcap file header libpcap writes.
pub fn file_header(linktype: u32, snaplen: u32, precision: TsPrecision) -> [u8; 24] {
    let magic: u32 = match precision {
        TsPrecision::Micro => 0xa1b2_c3d4,
        TsPrecision::Nano => 0xa1b2_3c4d,
    };
    let mut h = [0u8; 24];
    h[0..4].copy_from_slice(&magic.to_ne_bytes());
    h[4..6].copy_from_slice(&2u16.to_ne_bytes());
    h[6..8].copy_from_slice(&4u16.to_ne_bytes());
    // thiszone and sigfigs stay 0.
    h[16..20].copy_from_slice(&snaplen.to_ne_bytes());
    h[20..24].copy_from_slice(&linktype.to_ne_bytes());
    h
}

impl<W: Write> PcapWriter<W> {
    /// Writes the file header. `linktype` is the full 32-bit header value
    /// (use [`Capture::header_linktype`] to copy a file's, extension bits
    /// included); `snaplen` is written as given.
    pub fn new(mut w: W, linktype: u32, snaplen: u32, precision: TsPrecision) -> io::Result<Self> {
        w.write_all(&file_header(linktype, snaplen, precision))?;
        Ok(PcapWriter { out: w, precision })
    }

    /// A writer whose header is what `tcpdump -r FILE -w OUT` writes for
    /// `capture`: its [`Capture::header_linktype`] and [`Capture::snaplen`].
    pub fn for_capture(w: W, capture: &Capture, precision: TsPrecision) -> io::Result<Self> {
        PcapWriter::new(w, capture.header_linktype(), capture.snaplen(), precision)
    }

    /// Writes one packet: its timestamp as libpcap delivers it at the
    /// writer's precision, its captured bytes and its original length.
    pub fn write_packet(&mut self, p: &Packet<'_>) -> io::Result<()> {
        let (secs, frac) = p.ts.pcap_fields(self.precision);
        self.write_raw(secs, frac, p.wire_len, p.data)
    }

    /// Writes one record from raw fields (`frac` in the writer's units).
    /// The captured length is `data.len()`, which must fit in 32 bits.
    pub fn write_raw(&mut self, secs: u32, frac: u32, wire_len: u32, data: &[u8]) -> io::Result<()> {
        let caplen = u32::try_from(data.len()).map_err(|_| {
            io::Error::new(io::ErrorKind::InvalidInput, "packet longer than 4 GiB")
        })?;
        let mut h = [0u8; 16];
        h[0..4].copy_from_slice(&secs.to_ne_bytes());
        h[4..8].copy_from_slice(&frac.to_ne_bytes());
        h[8..12].copy_from_slice(&caplen.to_ne_bytes());
        h[12..16].copy_from_slice(&wire_len.to_ne_bytes());
        self.out.write_all(&h)?;
        self.out.write_all(data)
    }

    /// The precision of the timestamps written.
    pub fn precision(&self) -> TsPrecision {
        self.precision
    }

    /// Flushes the underlying writer.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// Flushes and returns the underlying writer.
    pub fn into_inner(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Timestamp;

    #[test]
    fn header_and_record_layout() {
        let mut w = PcapWriter::new(Vec::new(), 1, 65535, TsPrecision::Micro).unwrap();
        w.write_raw(1, 2, 10, b"abcd").unwrap();
        let v = w.into_inner().unwrap();
        let mut want = Vec::new();
        want.extend_from_slice(&0xa1b2_c3d4u32.to_ne_bytes());
        want.extend_from_slice(&2u16.to_ne_bytes());
        want.extend_from_slice(&4u16.to_ne_bytes());
        want.extend_from_slice(&[0; 8]);
        want.extend_from_slice(&65535u32.to_ne_bytes());
        want.extend_from_slice(&1u32.to_ne_bytes());
        for x in [1u32, 2, 4, 10] {
            want.extend_from_slice(&x.to_ne_bytes());
        }
        want.extend_from_slice(b"abcd");
        assert_eq!(v, want);
    }

    #[test]
    fn nano_writer_scales_micro_timestamps() {
        let mut w = PcapWriter::new(Vec::new(), 1, 0, TsPrecision::Nano).unwrap();
        let p = Packet {
            data: b"x",
            wire_len: 1,
            linktype: 1,
            interface: 0,
            ts: Timestamp::from_pcap_micros(7, 5),
        };
        w.write_packet(&p).unwrap();
        let v = w.into_inner().unwrap();
        assert_eq!(&v[0..4], &0xa1b2_3c4du32.to_ne_bytes());
        assert_eq!(&v[24..28], &7u32.to_ne_bytes());
        assert_eq!(&v[28..32], &5000u32.to_ne_bytes());
    }
}
