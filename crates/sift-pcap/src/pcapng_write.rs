//! Writing pcapng files: one Section Header Block, Interface Description
//! Blocks, Enhanced Packet Blocks (host byte order, as libpcap writes).
//!
//! ```text
//! SHB (28 bytes) ─ IDB (20 bytes + if_tsresol) ─ EPB ─ EPB ─ …
//! ```
//!
//! Every packet is written as its 28-byte block header, the captured bytes
//! as given (no copy beyond the write itself), 0–3 bytes of padding and the
//! 4-byte trailing length.

use std::io::{self, Write};

use crate::timestamp::TsPrecision;

const SHB: u32 = 0x0A0D_0D0A;
const IDB: u32 = 0x0000_0001;
const EPB: u32 = 0x0000_0006;
const BYTE_ORDER_MAGIC: u32 = 0x1A2B_3C4D;
const OPT_ENDOFOPT: u16 = 0;
const IF_TSRESOL: u16 = 9;

/// Bytes of an Enhanced Packet Block around `caplen` captured bytes.
pub const EPB_OVERHEAD: usize = 32;

/// Writes a pcapng file. The writer does not buffer; wrap `W` in a
/// `BufWriter` for files.
#[derive(Debug)]
pub struct PcapngWriter<W: Write> {
    out: W,
    /// Per interface: timestamp precision of its EPBs.
    interfaces: Vec<TsPrecision>,
    written: u64,
}

impl<W: Write> PcapngWriter<W> {
    /// Writes the Section Header Block (version 1.0, section length
    /// unspecified, no options).
    pub fn new(mut out: W) -> io::Result<Self> {
        let mut b = [0u8; 28];
        b[0..4].copy_from_slice(&SHB.to_ne_bytes());
        b[4..8].copy_from_slice(&28u32.to_ne_bytes());
        b[8..12].copy_from_slice(&BYTE_ORDER_MAGIC.to_ne_bytes());
        b[12..14].copy_from_slice(&1u16.to_ne_bytes());
        b[14..16].copy_from_slice(&0u16.to_ne_bytes());
        b[16..24].copy_from_slice(&(-1i64).to_ne_bytes());
        b[24..28].copy_from_slice(&28u32.to_ne_bytes());
        out.write_all(&b)?;
        Ok(PcapngWriter {
            out,
            interfaces: Vec::new(),
            written: 28,
        })
    }

    /// A writer with one interface already described: the usual start of
    /// a single-link-type file.
    pub fn with_interface(
        out: W,
        linktype: u16,
        snaplen: u32,
        precision: TsPrecision,
    ) -> io::Result<Self> {
        let mut w = PcapngWriter::new(out)?;
        w.add_interface(linktype, snaplen, precision)?;
        Ok(w)
    }

    /// Writes an Interface Description Block and returns the interface's
    /// id (0, 1, …). Nanosecond precision adds `if_tsresol` = 9; microsecond
    /// timestamps are pcapng's default and need no option.
    pub fn add_interface(
        &mut self,
        linktype: u16,
        snaplen: u32,
        precision: TsPrecision,
    ) -> io::Result<u32> {
        let id = u32::try_from(self.interfaces.len())
            .map_err(|_| io::Error::other("too many pcapng interfaces"))?;
        let mut b = [0u8; 32];
        let len: u32 = match precision {
            TsPrecision::Micro => 20,
            TsPrecision::Nano => 32,
        };
        b[0..4].copy_from_slice(&IDB.to_ne_bytes());
        b[4..8].copy_from_slice(&len.to_ne_bytes());
        b[8..10].copy_from_slice(&linktype.to_ne_bytes());
        // 10..12 reserved.
        b[12..16].copy_from_slice(&snaplen.to_ne_bytes());
        let mut at = 16;
        if precision == TsPrecision::Nano {
            b[16..18].copy_from_slice(&IF_TSRESOL.to_ne_bytes());
            b[18..20].copy_from_slice(&1u16.to_ne_bytes());
            b[20] = 9; // 10^-9 (21..24 padding)
            b[24..26].copy_from_slice(&OPT_ENDOFOPT.to_ne_bytes());
            // 26..28: opt_endofopt length 0.
            at = 28;
        }
        b[at..at + 4].copy_from_slice(&len.to_ne_bytes());
        self.out.write_all(&b[..len as usize])?;
        self.written += u64::from(len);
        self.interfaces.push(precision);
        Ok(id)
    }

    /// Writes one Enhanced Packet Block on `interface`: `secs` and `frac`
    /// (in the interface's precision: microseconds or nanoseconds), the
    /// original length and the captured bytes. An error for an unknown
    /// interface or a packet longer than 4 GiB.
    pub fn write_raw(
        &mut self,
        interface: u32,
        secs: u32,
        frac: u32,
        wire_len: u32,
        data: &[u8],
    ) -> io::Result<()> {
        let precision = *self
            .interfaces
            .get(interface as usize)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no such interface"))?;
        let caplen = u32::try_from(data.len())
            .ok()
            .filter(|&c| c <= u32::MAX - EPB_OVERHEAD as u32 - 3)
            .ok_or_else(|| {
                io::Error::new(io::ErrorKind::InvalidInput, "packet longer than 4 GiB")
            })?;
        let pad = (4 - caplen % 4) % 4;
        let total = EPB_OVERHEAD as u32 + caplen + pad;
        let ts = u64::from(secs) * precision.per_second() + u64::from(frac);
        let mut h = [0u8; 28];
        h[0..4].copy_from_slice(&EPB.to_ne_bytes());
        h[4..8].copy_from_slice(&total.to_ne_bytes());
        h[8..12].copy_from_slice(&interface.to_ne_bytes());
        h[12..16].copy_from_slice(&((ts >> 32) as u32).to_ne_bytes());
        h[16..20].copy_from_slice(&(ts as u32).to_ne_bytes());
        h[20..24].copy_from_slice(&caplen.to_ne_bytes());
        h[24..28].copy_from_slice(&wire_len.to_ne_bytes());
        self.out.write_all(&h)?;
        self.out.write_all(data)?;
        let mut tail = [0u8; 7];
        tail[pad as usize..pad as usize + 4].copy_from_slice(&total.to_ne_bytes());
        self.out.write_all(&tail[..pad as usize + 4])?;
        self.written += u64::from(total);
        Ok(())
    }

    /// Bytes written so far (blocks of the section).
    pub fn bytes_written(&self) -> u64 {
        self.written
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
    use crate::Capture;

    #[test]
    fn read_back_micro_and_nano() {
        for precision in [TsPrecision::Micro, TsPrecision::Nano] {
            let mut w = PcapngWriter::with_interface(Vec::new(), 1, 1500, precision).unwrap();
            let frac = match precision {
                TsPrecision::Micro => 123_456,
                TsPrecision::Nano => 123_456_789,
            };
            for n in 0..6usize {
                let data: Vec<u8> = (0..(14 + n) as u8).collect();
                w.write_raw(0, 1_700_000_000 + n as u32, frac, 100 + n as u32, &data)
                    .unwrap();
            }
            let written = w.bytes_written();
            let v = w.into_inner().unwrap();
            assert_eq!(v.len() as u64, written);
            let cap = Capture::from_bytes(v).unwrap();
            assert_eq!(cap.linktype(), 1);
            assert_eq!(cap.snaplen(), 1500);
            let got: Vec<_> = cap.packets().map(|p| p.unwrap()).collect();
            assert_eq!(got.len(), 6);
            for (n, p) in got.iter().enumerate() {
                assert_eq!(p.data.len(), 14 + n);
                assert_eq!(p.wire_len, 100 + n as u32);
                assert_eq!(
                    p.ts.pcap_fields(precision),
                    (1_700_000_000 + n as u32, frac)
                );
            }
        }
    }

    #[test]
    fn second_interface_and_unknown_interface() {
        let mut w = PcapngWriter::with_interface(Vec::new(), 1, 0, TsPrecision::Micro).unwrap();
        assert_eq!(w.add_interface(101, 65535, TsPrecision::Nano).unwrap(), 1);
        w.write_raw(1, 5, 6, 20, &[0x45; 20]).unwrap();
        assert!(w.write_raw(2, 0, 0, 0, &[]).is_err());
        let cap = Capture::from_bytes(w.into_inner().unwrap()).unwrap();
        let p = cap.packets().next().unwrap().unwrap();
        assert_eq!(p.linktype, 101);
        assert_eq!(p.ts.pcap_fields(TsPrecision::Nano), (5, 6));
    }
}
