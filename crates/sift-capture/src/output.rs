//! Capture files for `-w`: pcap or pcapng, with tcpdump's `-C`/`-G`/`-W`
//! rotation and file names.
//!
//! * `-C N`: before a packet is written, if the current file already holds
//!   more than N × 1,000,000 bytes, it is closed and the next one opened:
//!   `out`, `out1`, `out2`, … With `-W M` the names are numbered from 0 with
//!   as many digits as M − 1 has (`out0`, `out1`, … for M ≤ 10; `out00` …
//!   for M ≤ 100) and the numbers wrap at M, overwriting the oldest file.
//! * `-G S`: before a packet is written, if S seconds (wall clock) have
//!   passed since the current file was opened, it is closed and a new one
//!   opened, its name being the `-w` argument run through `strftime` with
//!   the local time (`-w 'dump-%H%M%S.pcap'`). With `-C` as well, the size
//!   numbering restarts at 0 in every new period. With `-W M` and no `-C`,
//!   the capture ends when the M+1-th file would be opened ("Maximum file
//!   limit reached: M").
//!
//! These are tcpdump 4.99's rules, names and all. Every file is a complete
//! capture (header, and records whole); no packet is split or lost across
//! files.

use std::ffi::OsString;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use sift_pcap::{PcapWriter, PcapngWriter, TsPrecision};

use crate::sys;

/// File format of `-w`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FileFormat {
    /// Classic pcap (tcpdump's).
    #[default]
    Pcap,
    /// pcapng: one Section Header Block, one Interface Description Block,
    /// Enhanced Packet Blocks.
    Pcapng,
}

/// tcpdump's rotation options.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rotation {
    /// `-C`: start a new file when the current one holds more than this
    /// many bytes (tcpdump's -C N means N × 1,000,000).
    pub file_size: Option<u64>,
    /// `-G`: start a new (strftime-named) file every this many seconds.
    pub seconds: Option<u64>,
    /// `-W`: number of files (ring of names with -C, limit with -G only).
    pub max_files: Option<u32>,
}

impl Rotation {
    /// Is any rotation asked for?
    pub fn is_active(&self) -> bool {
        self.file_size.is_some() || self.seconds.is_some()
    }

    /// Checks the combination as tcpdump does: sizes and periods above 0,
    /// `-W` only with `-C` or `-G`.
    pub fn validate(&self) -> Result<(), String> {
        if self.file_size == Some(0) {
            return Err("invalid file size 0".into());
        }
        if self.seconds == Some(0) {
            return Err("invalid number of seconds 0".into());
        }
        if self.max_files == Some(0) {
            return Err("invalid number of output files 0".into());
        }
        if self.max_files.is_some() && !self.is_active() {
            return Err("-W needs -C or -G".into());
        }
        Ok(())
    }
}

/// What the `-w` output writes and how.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutputSpec {
    /// The `-w` argument: a path, `-` (standard output, no rotation), or a
    /// strftime template with `-G`.
    pub path: PathBuf,
    /// pcap or pcapng.
    pub format: FileFormat,
    /// The link type written in the header (LINKTYPE value, FCS bits
    /// included for pcap).
    pub linktype: u32,
    /// The snapshot length written in the header.
    pub snaplen: u32,
    /// Timestamp precision of the file.
    pub precision: TsPrecision,
    /// `-C`/`-G`/`-W`.
    pub rotation: Rotation,
    /// `-U`: flush after every packet.
    pub packet_buffered: bool,
}

/// Whether the output took the packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Written {
    /// Written.
    Yes,
    /// `-G` with `-W` (and no `-C`): the file limit is reached; the packet
    /// was not written and the capture should end.
    FileLimit,
}

enum Sink {
    Pcap(PcapWriter<BufWriter<Box<dyn Write>>>),
    Pcapng(PcapngWriter<BufWriter<Box<dyn Write>>>),
}

impl Sink {
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Sink::Pcap(w) => w.flush(),
            Sink::Pcapng(w) => w.flush(),
        }
    }
}

/// The `-w` output: the current file plus the rotation state.
pub struct Output {
    spec: OutputSpec,
    sink: Option<Sink>,
    /// Bytes in the current file.
    bytes: u64,
    /// Every file opened, in order (a name repeats when `-W` wraps).
    opened: Vec<PathBuf>,
    size_count: u32,
    time_count: u32,
    period_start: i64,
    digits: usize,
}

impl std::fmt::Debug for Output {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Output")
            .field("spec", &self.spec)
            .field("opened", &self.opened)
            .finish()
    }
}

/// Digits of tcpdump's `-W` numbering: those of `max_files - 1`.
fn width(max_files: u32) -> usize {
    let mut x = max_files.saturating_sub(1);
    let mut c = 0;
    while x > 0 {
        c += 1;
        x /= 10;
    }
    c
}

fn now_secs() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

impl Output {
    /// Opens the first file.
    pub fn create(spec: OutputSpec) -> Result<Output, String> {
        Output::create_at(spec, now_secs())
    }

    /// [`Output::create`] with the wall clock given (seconds since the
    /// epoch).
    pub fn create_at(spec: OutputSpec, now: i64) -> Result<Output, String> {
        spec.rotation.validate()?;
        if spec.rotation.is_active() && spec.path.as_os_str() == "-" {
            return Err("-C and -G need -w FILE, not standard output".into());
        }
        if spec.path.as_os_str().is_empty() {
            return Err("an empty string is not a valid file name".into());
        }
        let digits = spec.rotation.max_files.map_or(0, width);
        let mut out = Output {
            spec,
            sink: None,
            bytes: 0,
            opened: Vec::new(),
            size_count: 0,
            time_count: 0,
            period_start: now,
            digits,
        };
        let first = out.name(0, out.size_digits())?;
        out.open(first)?;
        Ok(out)
    }

    fn size_digits(&self) -> usize {
        if self.spec.rotation.file_size.is_some() {
            self.digits
        } else {
            0
        }
    }

    /// tcpdump's MakeFilename: strftime with `-G`, then the number (none
    /// when it is 0 and no width is asked for).
    fn name(&self, count: u32, digits: usize) -> Result<PathBuf, String> {
        let template = self.spec.path.as_os_str().as_bytes();
        let mut base = if self.spec.rotation.seconds.is_some() {
            sys::strftime_local(template, self.period_start)
                .map_err(|e| format!("{}: {e}", self.spec.path.display()))?
        } else {
            template.to_vec()
        };
        if count != 0 || digits != 0 {
            base.extend_from_slice(format!("{count:0digits$}").as_bytes());
        }
        Ok(PathBuf::from(OsString::from_vec(base)))
    }

    fn open(&mut self, path: PathBuf) -> Result<(), String> {
        self.close().map_err(|e| format!("write error: {e}"))?;
        let file: Box<dyn Write> = if path.as_os_str() == "-" {
            Box::new(io::stdout())
        } else {
            Box::new(File::create(&path).map_err(|e| format!("{}: {e}", path.display()))?)
        };
        let w = BufWriter::with_capacity(64 << 10, file);
        let s = &self.spec;
        let err = |e: io::Error| format!("{}: {e}", path.display());
        let sink = match s.format {
            FileFormat::Pcap => {
                self.bytes = 24;
                Sink::Pcap(PcapWriter::new(w, s.linktype, s.snaplen, s.precision).map_err(err)?)
            }
            FileFormat::Pcapng => {
                let linktype = u16::try_from(s.linktype & 0xffff).unwrap_or(0);
                let w = PcapngWriter::with_interface(w, linktype, s.snaplen, s.precision)
                    .map_err(err)?;
                self.bytes = w.bytes_written();
                Sink::Pcapng(w)
            }
        };
        self.sink = Some(sink);
        if s.packet_buffered {
            self.flush().map_err(|e| format!("write error: {e}"))?;
        }
        self.opened.push(path);
        Ok(())
    }

    /// Writes one packet (`frac` in the file's precision), rotating first
    /// as tcpdump would.
    pub fn write(
        &mut self,
        secs: u32,
        frac: u32,
        wire_len: u32,
        data: &[u8],
    ) -> io::Result<Written> {
        let now = if self.spec.rotation.seconds.is_some() {
            now_secs()
        } else {
            0
        };
        self.write_at(now, secs, frac, wire_len, data)
    }

    /// [`Output::write`] with the wall clock given.
    pub fn write_at(
        &mut self,
        now: i64,
        secs: u32,
        frac: u32,
        wire_len: u32,
        data: &[u8],
    ) -> io::Result<Written> {
        let r = self.spec.rotation;
        if let Some(period) = r.seconds {
            if now.saturating_sub(self.period_start) >= period as i64 {
                self.period_start = now;
                self.time_count += 1;
                if r.file_size.is_none() && r.max_files.is_some_and(|w| self.time_count >= w) {
                    self.close()?;
                    return Ok(Written::FileLimit);
                }
                self.size_count = 0;
                let name = self.name(0, self.size_digits()).map_err(io::Error::other)?;
                self.open(name).map_err(io::Error::other)?;
            }
        }
        if let Some(limit) = r.file_size {
            if self.bytes > limit {
                self.size_count += 1;
                if r.max_files.is_some_and(|w| self.size_count >= w) {
                    self.size_count = 0;
                }
                let name = self
                    .name(self.size_count, self.digits)
                    .map_err(io::Error::other)?;
                self.open(name).map_err(io::Error::other)?;
            }
        }
        let Some(sink) = self.sink.as_mut() else {
            return Err(io::Error::other("output closed"));
        };
        match sink {
            Sink::Pcap(w) => {
                w.write_raw(secs, frac, wire_len, data)?;
                self.bytes += 16 + data.len() as u64;
            }
            Sink::Pcapng(w) => {
                let before = w.bytes_written();
                w.write_raw(0, secs, frac, wire_len, data)?;
                self.bytes += w.bytes_written() - before;
            }
        }
        if self.spec.packet_buffered {
            sink.flush()?;
        }
        Ok(Written::Yes)
    }

    /// Flushes the current file.
    pub fn flush(&mut self) -> io::Result<()> {
        match self.sink.as_mut() {
            Some(s) => s.flush(),
            None => Ok(()),
        }
    }

    /// Flushes and closes the current file (later writes fail).
    pub fn close(&mut self) -> io::Result<()> {
        match self.sink.take() {
            Some(mut s) => s.flush(),
            None => Ok(()),
        }
    }

    /// The files opened so far, in order (with `-W` wrapping, a name can
    /// appear more than once).
    pub fn files(&self) -> &[PathBuf] {
        &self.opened
    }

    /// The timestamp precision of the files.
    pub fn precision(&self) -> TsPrecision {
        self.spec.precision
    }

    /// The `-w` argument.
    pub fn path(&self) -> &Path {
        &self.spec.path
    }
}

impl Drop for Output {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(dir: &Path, name: &str, rotation: Rotation, format: FileFormat) -> OutputSpec {
        OutputSpec {
            path: dir.join(name),
            format,
            linktype: 1,
            snaplen: 65535,
            precision: TsPrecision::Micro,
            rotation,
            packet_buffered: false,
        }
    }

    fn tmpdir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("sift-output-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn names(o: &Output) -> Vec<String> {
        o.files()
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn widths_as_tcpdump() {
        assert_eq!(
            [1, 2, 3, 10, 11, 12, 100, 101].map(width),
            [0, 1, 1, 1, 2, 2, 2, 3]
        );
    }

    #[test]
    fn size_rotation_names_and_wrap() {
        let d = tmpdir("size");
        let r = Rotation {
            file_size: Some(100),
            ..Default::default()
        };
        let mut o = Output::create(spec(&d, "out", r, FileFormat::Pcap)).unwrap();
        for i in 0..10u32 {
            assert_eq!(o.write(i, 0, 40, &[i as u8; 40]).unwrap(), Written::Yes);
        }
        o.close().unwrap();
        // 24 + 56 = 80, 136 > 100: two packets per file.
        assert_eq!(names(&o), ["out", "out1", "out2", "out3", "out4"]);
        let mut n = 0;
        for f in o.files() {
            let c = sift_pcap::Capture::open(f).unwrap();
            for p in c.packets() {
                assert_eq!(p.unwrap().data, &[n as u8; 40]);
                n += 1;
            }
        }
        assert_eq!(n, 10);
        let r = Rotation {
            file_size: Some(100),
            max_files: Some(3),
            ..Default::default()
        };
        let mut o = Output::create(spec(&d, "w", r, FileFormat::Pcapng)).unwrap();
        for i in 0..10u32 {
            o.write(i, 0, 40, &[0; 40]).unwrap();
        }
        // pcapng: 48 + 72 = 120 > 100 after every packet.
        let want: Vec<String> = (0..10).map(|i| format!("w{}", i % 3)).collect();
        assert_eq!(names(&o), want);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn time_rotation_strftime_and_limit() {
        let d = tmpdir("time");
        let r = Rotation {
            seconds: Some(10),
            max_files: Some(2),
            ..Default::default()
        };
        // 2026-11-22 00:00:00 UTC; names use %s (epoch seconds), which does
        // not depend on the time zone.
        let t0 = 1_795_305_600;
        let mut o = Output::create_at(spec(&d, "g-%s.pcap", r, FileFormat::Pcap), t0).unwrap();
        assert_eq!(o.write_at(t0 + 3, 0, 0, 1, b"a").unwrap(), Written::Yes);
        assert_eq!(o.write_at(t0 + 12, 0, 0, 1, b"b").unwrap(), Written::Yes);
        assert_eq!(o.write_at(t0 + 21, 0, 0, 1, b"c").unwrap(), Written::Yes);
        assert_eq!(
            o.write_at(t0 + 22, 0, 0, 1, b"d").unwrap(),
            Written::FileLimit
        );
        let want = [format!("g-{t0}.pcap"), format!("g-{}.pcap", t0 + 12)];
        assert_eq!(names(&o), want);
        // With -C too: numbered from 0 in every period, no limit.
        let r = Rotation {
            seconds: Some(10),
            file_size: Some(30),
            max_files: Some(2),
        };
        let mut o = Output::create_at(spec(&d, "h-%s-", r, FileFormat::Pcap), t0).unwrap();
        for (t, x) in [(0, 1), (1, 2), (2, 3), (11, 4), (30, 5)] {
            assert_eq!(o.write_at(t0 + t, 0, 0, 8, &[x; 8]).unwrap(), Written::Yes);
        }
        let n = |t: i64, c: u32| format!("h-{}-{c}", t0 + t);
        assert_eq!(names(&o), [n(0, 0), n(0, 1), n(0, 0), n(11, 0), n(30, 0)]);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn bad_combinations() {
        let d = tmpdir("bad");
        let r = |file_size, seconds, max_files| Rotation {
            file_size,
            seconds,
            max_files,
        };
        for bad in [
            r(Some(0), None, None),
            r(None, Some(0), None),
            r(None, None, Some(3)),
            r(Some(1), None, Some(0)),
        ] {
            assert!(Output::create(spec(&d, "x", bad, FileFormat::Pcap)).is_err());
        }
        let mut s = spec(&d, "x", r(Some(1), None, None), FileFormat::Pcap);
        s.path = PathBuf::from("-");
        assert!(Output::create(s).is_err());
        std::fs::remove_dir_all(&d).unwrap();
    }
}
