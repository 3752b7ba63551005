//! The `sift -i` capture loop.

use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, IoSlice, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use sift_pcap::{PcapngWriter, TsPrecision};

use crate::output::{FileFormat, Output, OutputSpec, Rotation, Written};
use crate::updates::{self, LiveFilter};

use crate::{
    sys, Capture, Config, Error, Fanout, FanoutMode, Packet, Packets, Placement, RingConfig, Stats,
};

/// Everything `sift -i IFACE [options] [expression]` needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CaptureArgs {
    /// Interface (`-i`), or `any`.
    pub interface: String,
    /// The filter expression (empty: capture everything).
    pub expression: String,
    /// `-s`: snapshot length (0: 262144).
    pub snaplen: u32,
    /// Promiscuous mode (tcpdump's default; `-p` turns it off).
    pub promisc: bool,
    /// `-c N`: stop after N packets.
    pub count: Option<u64>,
    /// `-w FILE` (`-` for standard output); `None` prints one line per
    /// packet to standard output.
    pub write: Option<PathBuf>,
    /// `-U`: flush the output after every packet.
    pub packet_buffered: bool,
    /// Nanosecond timestamps in the file (`--time-stamp-precision=nano`);
    /// microseconds otherwise, as tcpdump.
    pub nano: bool,
    /// Ring geometry (`-B`-like settings).
    pub ring: RingConfig,
    /// Skip packets this host sends.
    pub ignore_outgoing: bool,
    /// Do not print the "listening on" line and the statistics lines.
    pub quiet: bool,
    /// `--fanout N` (N >= 2): N worker threads, each with its own socket
    /// and ring, joined in a PACKET_FANOUT hash group (a flow stays on one
    /// worker). Each worker writes its own file: `-w out.pcap` gives
    /// `out.0.pcap`, `out.1.pcap`, ... (`FILE.N` without an extension);
    /// `-c` counts packets over all workers. Needs `-w FILE`.
    pub fanout: usize,
    /// `--pcapng`: write pcapng instead of pcap.
    pub format: FileFormat,
    /// `-C`/`-G`/`-W` rotation of the `-w` file (with `--fanout`, each
    /// worker rotates its own files).
    pub rotation: Rotation,
    /// `--engine dynamic`: filter in user space with sift's dynamic engine
    /// ([`LiveFilter`]), which can be updated while the capture runs.
    pub dynamic: bool,
    /// `--updates FILE|-`: filter updates, one per line (see
    /// [`crate::updates`]); needs `dynamic`. Applied between ring blocks
    /// (with `--fanout`, by every worker, each between its own blocks).
    pub updates: Option<PathBuf>,
    /// Run sift's optimizers on the filter (`false`: `-O`, as tcpdump's;
    /// the verdicts are the same either way, the kernel then runs the
    /// unoptimized program).
    pub optimize: bool,
    /// `--sched-slice US`: the time slice each capture thread asks the
    /// scheduler for (`sched_setattr` with a custom slice; 0 leaves the kernel's
    /// default). A capture thread works in short bursts and must hand ring
    /// blocks back promptly: with a short slice it preempts a busy thread
    /// (e.g. the one flooding the interface) sooner when a block is ready,
    /// so the ring overflows less. Default [`DEFAULT_SCHED_SLICE_US`].
    pub sched_slice_us: u32,
}

/// The time slice capture threads ask for by default: 100 µs, the shortest
/// the kernel grants. On a 2-core VM flooded with 1514-byte frames at
/// ~1.4 Mpps (`capture_bench`, 4 MiB rings) it took sift's kernel drops
/// from 18,455 to 935 over six runs each, at the same CPU per packet.
pub const DEFAULT_SCHED_SLICE_US: u32 = 100;

impl CaptureArgs {
    /// tcpdump's defaults for `interface`.
    pub fn new(interface: &str) -> CaptureArgs {
        CaptureArgs {
            interface: interface.to_string(),
            expression: String::new(),
            snaplen: 0,
            promisc: true,
            count: None,
            write: None,
            packet_buffered: false,
            nano: false,
            ring: RingConfig::default(),
            ignore_outgoing: false,
            quiet: false,
            fanout: 0,
            format: FileFormat::Pcap,
            rotation: Rotation::default(),
            dynamic: false,
            updates: None,
            optimize: true,
            sched_slice_us: DEFAULT_SCHED_SLICE_US,
        }
    }
}

/// Opens the capture described by `args` and installs its filter; returns
/// the capture (not yet active).
pub fn open_capture(args: &CaptureArgs) -> Result<Capture, String> {
    open_member(args, None)
}

fn open_member(args: &CaptureArgs, fanout: Option<Fanout>) -> Result<Capture, String> {
    let cfg = Config {
        interface: args.interface.clone(),
        promisc: args.promisc,
        snaplen: args.snaplen,
        ring: args.ring,
        ignore_outgoing: args.ignore_outgoing,
        fanout,
    };
    let mut cap = Capture::open(&cfg).map_err(|e| match e {
        Error::Permission => e.to_string(),
        e => format!("{}: {e}", args.interface),
    })?;
    let options = sift::CompileOptions {
        optimize: args.optimize,
        ..cap.compile_options()
    };
    if args.dynamic {
        let f = LiveFilter::new(&args.expression, &options)?;
        cap.set_live_filter(f).map_err(|e| e.to_string())?;
    } else if !args.expression.trim().is_empty() {
        let f = sift::Filter::new(&args.expression, &options).map_err(|e| e.render())?;
        cap.set_filter(Some(f)).map_err(|e| e.to_string())?;
    }
    Ok(cap)
}

/// Runs a capture, calling `on_packet` for every packet that passes the
/// filter, until `args.count` packets, SIGINT/SIGTERM, [`crate::request_stop`]
/// or an error from `on_packet`. After a stop request, the packets already
/// in the ring are still processed: retired blocks at once, and the block
/// the kernel is filling once it retires it (within one block timeout plus
/// a margin; the loop ends at once when that block is empty), so packets
/// already captured are not lost. Returns the final
/// statistics (with `captured` = packets passed to `on_packet`).
pub fn capture_with(
    args: &CaptureArgs,
    cap: &mut Capture,
    on_packet: &mut dyn FnMut(&Packet<'_>) -> io::Result<()>,
) -> Result<Stats, String> {
    sys::install_stop_handlers().map_err(|e| format!("sigaction: {e}"))?;
    let worker = Worker::alone(args, cap.live_filter_mut().is_some())?;
    capture_loop(args, cap, &mut |p| on_packet(p).map(|()| true), &worker)
}

/// What one capture thread gets besides its capture: the `-c` budget shared
/// by every worker, and its own stream of filter updates.
struct Worker<'a> {
    /// Packets taken by every worker of the capture (counted only with
    /// `-c`), when there are several.
    shared_budget: Option<&'a AtomicU64>,
    /// The count of a worker that is alone.
    own_budget: AtomicU64,
    /// The `--updates` lines, for this worker's live filter.
    updates: Option<mpsc::Receiver<(usize, String)>>,
    /// Whether this worker reports applied updates and errors (with
    /// `--fanout` every worker applies every line, one reports).
    reports: bool,
}

impl Worker<'_> {
    /// The only worker of a capture: opens `--updates` when the capture
    /// has a live filter to update.
    fn alone(args: &CaptureArgs, live: bool) -> Result<Worker<'static>, String> {
        let updates = match &args.updates {
            Some(source) if live => Some(open_updates(source)?),
            _ => None,
        };
        Ok(Worker {
            shared_budget: None,
            own_budget: AtomicU64::new(0),
            updates,
            reports: true,
        })
    }

    /// The count of packets taken against the `-c` budget.
    fn taken(&self) -> &AtomicU64 {
        self.shared_budget.unwrap_or(&self.own_budget)
    }
}

/// What a block consumer did with the packets it was given.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Consumed {
    /// Packets taken (written or printed).
    packets: u64,
    /// The consumer wants the capture to end (e.g. `-W` limit reached).
    stop: bool,
}

/// A consumer of the packets of one block (an iterator borrowing the
/// block, so the consumer may keep the packets' bytes until it returns).
type BlockConsumer<'f> = dyn FnMut(&mut Packets<'_>) -> io::Result<Consumed> + 'f;

/// The loop of [`capture_with`], one packet at a time.
fn capture_loop(
    args: &CaptureArgs,
    cap: &mut Capture,
    on_packet: &mut dyn FnMut(&Packet<'_>) -> io::Result<bool>,
    worker: &Worker<'_>,
) -> Result<Stats, String> {
    capture_blocks(
        args,
        cap,
        &mut |packets| {
            let mut done = Consumed::default();
            for p in packets {
                if !on_packet(&p)? {
                    done.stop = true;
                    break;
                }
                done.packets += 1;
            }
            Ok(done)
        },
        worker,
    )
}

/// The capture loop, one block at a time.
fn capture_blocks(
    args: &CaptureArgs,
    cap: &mut Capture,
    on_block: &mut BlockConsumer<'_>,
    worker: &Worker<'_>,
) -> Result<Stats, String> {
    let taken = worker.taken();
    cap.activate().map_err(|e| e.to_string())?;
    if args.sched_slice_us > 0 {
        // A hint: a kernel without custom slices (before 6.12) ignores it,
        // one that refuses it changes nothing either.
        let _ = sys::request_slice(args.sched_slice_us);
    }
    let mut captured = 0u64;
    let limit = args.count.unwrap_or(u64::MAX);
    let counting = args.count.is_some();
    let timeout = u64::from(cap.ring.block_timeout_ms);
    // How long a wait for a block may last. Signals interrupt it (the
    // handlers do not restart system calls), so only updates to apply and
    // the `-c` budget of other workers need a short one; otherwise one
    // wakeup per block timeout when idle (tcpdump: none).
    let longest = if worker.updates.is_some() || worker.shared_budget.is_some() {
        100
    } else {
        1000
    };
    let tick = i32::try_from(timeout.clamp(1, longest)).unwrap_or(100);
    let mut deadline: Option<Instant> = None;
    while taken.load(Ordering::Relaxed) < limit {
        if deadline.is_none() && sys::stop_requested() {
            deadline = Some(Instant::now() + Duration::from_millis(timeout + 2 * tick as u64));
        }
        if deadline.is_some_and(|d| Instant::now() >= d || !cap.packets_pending()) {
            break;
        }
        if let Some(rx) = &worker.updates {
            apply_updates(args, cap, rx, worker.reports);
        }
        let Some(mut block) = cap.next_block(tick).map_err(|e| e.to_string())? else {
            continue;
        };
        // The shared count is only kept when there is a limit.
        let mut packets = match counting {
            true => block.packets().with_budget(taken, limit),
            false => block.packets(),
        };
        let done = on_block(&mut packets).map_err(|e| format!("write error: {e}"))?;
        let budget_spent = packets.budget_spent();
        captured += done.packets;
        if done.stop || budget_spent {
            break;
        }
    }
    let mut stats = cap.stats().map_err(|e| e.to_string())?;
    stats.captured = captured;
    Ok(stats)
}

/// `write_all` for a list of slices: `writev` until everything is written.
fn write_all_vectored(out: &mut File, mut slices: &mut [IoSlice<'_>]) -> io::Result<()> {
    while !slices.is_empty() {
        match out.write_vectored(slices) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => IoSlice::advance_slices(&mut slices, n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Packets up to this many bytes are copied next to their record header
/// (one slice for a run of them); longer ones are written from the ring.
const COPY_MAX: usize = 256;
/// Staging buffer for record headers and short packets.
const STAGE_BYTES: usize = 32 << 10;
/// Slices per `writev`: 512 × 16 bytes keeps the kernel's copy of the
/// vector in its small-object allocator (a larger one goes to the page
/// allocator on every call).
const MAX_SLICES: usize = 512;

/// One slice of a `writev`: bytes of the staging buffer, or packet bytes
/// in the ring.
#[derive(Clone, Copy)]
enum Piece<'a> {
    Staged(usize, usize),
    Ring(&'a [u8]),
}

/// The next `writev`: record headers and short packets written one after
/// the other into a staging buffer (each run of them is one slice), and
/// long packets' bytes in the ring, in file order.
struct Pieces<'a, 's> {
    list: [Piece<'a>; MAX_SLICES],
    len: usize,
    /// The staging buffer ([`STAGE_BYTES`] long) and how much of it is used.
    stage: &'s mut [u8],
    pos: usize,
    /// Start of the staged bytes not yet in `list`.
    run: usize,
}

impl<'a, 's> Pieces<'a, 's> {
    fn new(stage: &'s mut [u8]) -> Self {
        Pieces {
            list: [Piece::Ring(&[]); MAX_SLICES],
            len: 0,
            stage,
            pos: 0,
            run: 0,
        }
    }

    /// Is there room for one more record (3 slices; header, copy and tail
    /// in the staging buffer)?
    #[inline]
    fn has_room(&self) -> bool {
        self.len + 3 <= MAX_SLICES && self.pos + 28 + COPY_MAX + 8 <= self.stage.len()
    }

    /// Appends `bytes` (at most 28 + [`COPY_MAX`] + 8 of them, with
    /// [`Pieces::has_room`]) to the staging buffer.
    #[inline]
    fn stage(&mut self, bytes: &[u8]) {
        let end = self.pos + bytes.len();
        copy_short(&mut self.stage[self.pos..end], bytes);
        self.pos = end;
    }

    /// Ends the current run of staged bytes.
    fn close_run(&mut self) {
        if self.pos > self.run {
            self.list[self.len] = Piece::Staged(self.run, self.pos);
            self.len += 1;
            self.run = self.pos;
        }
    }

    /// Appends bytes to be written from where they are (the ring).
    fn ring(&mut self, bytes: &'a [u8]) {
        self.close_run();
        self.list[self.len] = Piece::Ring(bytes);
        self.len += 1;
    }

    /// Writes every piece with `writev` and empties the list and the
    /// staging buffer.
    fn flush(&mut self, out: &mut File) -> io::Result<()> {
        self.close_run();
        if self.len > 0 {
            let mut slices = [IoSlice::new(&[]); MAX_SLICES];
            for (slice, piece) in slices.iter_mut().zip(&self.list[..self.len]) {
                *slice = match *piece {
                    Piece::Staged(a, b) => IoSlice::new(&self.stage[a..b]),
                    Piece::Ring(bytes) => IoSlice::new(bytes),
                };
            }
            write_all_vectored(out, &mut slices[..self.len])?;
        }
        self.len = 0;
        self.pos = 0;
        self.run = 0;
        Ok(())
    }
}

/// `dst.copy_from_slice(src)` for the short copies of the staging buffer:
/// lengths of 16 to 128 bytes are two fixed-size (possibly overlapping)
/// moves instead of a call to `memcpy`.
#[inline]
fn copy_short(dst: &mut [u8], src: &[u8]) {
    let n = src.len();
    if dst.len() != n {
        return dst.copy_from_slice(src); // the usual panic message
    }
    match n {
        16..=32 => {
            dst[..16].copy_from_slice(&src[..16]);
            dst[n - 16..].copy_from_slice(&src[n - 16..]);
        }
        33..=64 => {
            dst[..32].copy_from_slice(&src[..32]);
            dst[n - 32..].copy_from_slice(&src[n - 32..]);
        }
        65..=128 => {
            dst[..64].copy_from_slice(&src[..64]);
            dst[n - 64..].copy_from_slice(&src[n - 64..]);
        }
        _ => dst.copy_from_slice(src),
    }
}

/// Writes a block's packets as pcap records or pcapng Enhanced Packet
/// Blocks with `writev`: record headers (and pcapng padding and trailing
/// lengths) are built in `stage` (a buffer of [`STAGE_BYTES`]), packets of
/// up to [`COPY_MAX`] bytes are copied after their header (a run of short
/// packets is one slice), longer packets are written straight from ring
/// memory.
fn write_block_vectored(
    out: &mut File,
    format: FileFormat,
    precision: TsPrecision,
    stage: &mut [u8],
    packets: &mut Packets<'_>,
) -> io::Result<Consumed> {
    let mut done = Consumed::default();
    let mut pieces = Pieces::new(stage);
    for p in packets {
        if !pieces.has_room() {
            pieces.flush(out)?;
        }
        let frac = match precision {
            TsPrecision::Nano => p.nsec,
            TsPrecision::Micro => p.nsec / 1000,
        };
        let caplen = p.data.len() as u32;
        let mut head = [0u8; 28];
        let (head, pad) = match format {
            FileFormat::Pcap => {
                head[0..4].copy_from_slice(&p.sec.to_ne_bytes());
                head[4..8].copy_from_slice(&frac.to_ne_bytes());
                head[8..12].copy_from_slice(&caplen.to_ne_bytes());
                head[12..16].copy_from_slice(&p.wire_len.to_ne_bytes());
                (&head[..16], None)
            }
            FileFormat::Pcapng => {
                // Enhanced Packet Block on interface 0 (the layout of
                // sift_pcap::PcapngWriter::write_raw).
                let pad = (4 - caplen % 4) % 4;
                let total = 32 + caplen + pad;
                let ts = u64::from(p.sec) * precision.per_second() + u64::from(frac);
                head[0..4].copy_from_slice(&6u32.to_ne_bytes());
                head[4..8].copy_from_slice(&total.to_ne_bytes());
                head[8..12].copy_from_slice(&0u32.to_ne_bytes());
                head[12..16].copy_from_slice(&((ts >> 32) as u32).to_ne_bytes());
                head[16..20].copy_from_slice(&(ts as u32).to_ne_bytes());
                head[20..24].copy_from_slice(&caplen.to_ne_bytes());
                head[24..28].copy_from_slice(&p.wire_len.to_ne_bytes());
                let mut tail = [0u8; 8];
                let pad = pad as usize;
                tail[pad..pad + 4].copy_from_slice(&total.to_ne_bytes());
                (&head[..], Some((tail, pad + 4)))
            }
        };
        pieces.stage(head);
        if p.data.len() <= COPY_MAX {
            pieces.stage(p.data);
        } else {
            pieces.ring(p.data);
        }
        if let Some((tail, n)) = pad {
            pieces.stage(&tail[..n]);
        }
        done.packets += 1;
    }
    pieces.flush(out)?;
    Ok(done)
}

/// Starts the thread that reads `--updates` lines (`-`: standard input).
fn open_updates(source: &Path) -> Result<mpsc::Receiver<(usize, String)>, String> {
    let reader: Box<dyn BufRead + Send> = if source.as_os_str() == "-" {
        Box::new(BufReader::new(io::stdin()))
    } else {
        Box::new(BufReader::new(
            File::open(source).map_err(|e| format!("{}: {e}", source.display()))?,
        ))
    };
    Ok(updates::spawn_reader(reader))
}

/// Applies the update lines that arrived (between two blocks, so a block's
/// packets all see one filter). Errors are reported and skipped.
fn apply_updates(
    args: &CaptureArgs,
    cap: &mut Capture,
    rx: &mpsc::Receiver<(usize, String)>,
    reports: bool,
) {
    while let Ok((n, line)) = rx.try_recv() {
        let Some(f) = cap.live_filter_mut() else {
            return;
        };
        let result = f.apply_line(n, &line);
        if !reports {
            continue;
        }
        let mut err = io::stderr().lock();
        match result {
            Ok(Some(now)) if !args.quiet => {
                let _ = writeln!(err, "sift: update {n} applied; filter: {now}");
            }
            Ok(_) => {}
            Err(e) => {
                // The caret lines, if any, stay under the first line.
                let text = e.to_string();
                let (first, rest) = text.split_once('\n').unwrap_or((&text, ""));
                let _ = writeln!(err, "sift: {first} (filter unchanged)");
                if !rest.is_empty() {
                    let _ = writeln!(err, "{rest}");
                }
            }
        }
    }
}

/// Writes the packets of `cap` to the `-w` output at `path` (`-` for
/// standard output), pcap or pcapng, rotating as asked, straight from ring
/// memory.
fn write_pcap(
    args: &CaptureArgs,
    cap: &mut Capture,
    path: &Path,
    worker: &Worker<'_>,
) -> Result<Stats, String> {
    let precision = if args.nano {
        TsPrecision::Nano
    } else {
        TsPrecision::Micro
    };
    let linktype = sift_pcap::linktype::dlt_to_linktype(cap.linktype()).unwrap_or(cap.linktype());
    if !args.rotation.is_active() && path.as_os_str() != "-" {
        // The common case: one file, written straight from the ring with
        // writev (no user-space buffer, so -U needs nothing more).
        let mut file = File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let header = match args.format {
            FileFormat::Pcap => {
                file.write_all(&sift_pcap::file_header(linktype, cap.snaplen(), precision))
            }
            FileFormat::Pcapng => {
                let lt = u16::try_from(linktype & 0xffff).unwrap_or(0);
                PcapngWriter::with_interface(&mut file, lt, cap.snaplen(), precision).map(drop)
            }
        };
        header.map_err(|e| format!("write error: {e}"))?;
        let format = args.format;
        let mut stage = vec![0u8; STAGE_BYTES];
        return capture_blocks(
            args,
            cap,
            &mut |packets| write_block_vectored(&mut file, format, precision, &mut stage, packets),
            worker,
        );
    }
    let mut out = Output::create(OutputSpec {
        path: path.to_path_buf(),
        format: args.format,
        linktype,
        snaplen: cap.snaplen(),
        precision,
        rotation: args.rotation,
        packet_buffered: args.packet_buffered,
    })?;
    let mut limit_reached = false;
    let result = capture_loop(
        args,
        cap,
        &mut |p| {
            let frac = match precision {
                TsPrecision::Nano => p.nsec,
                TsPrecision::Micro => p.nsec / 1000,
            };
            match out.write(p.sec, frac, p.wire_len, p.data)? {
                Written::Yes => Ok(true),
                Written::FileLimit => {
                    limit_reached = true;
                    Ok(false)
                }
            }
        },
        worker,
    );
    // Flush whatever was captured, even after an error.
    let flushed = out.close();
    if limit_reached && !args.quiet {
        let max = args.rotation.max_files.unwrap_or(0);
        let _ = writeln!(io::stderr().lock(), "Maximum file limit reached: {max}");
    }
    let stats = result?;
    flushed.map_err(|e| format!("write error: {e}"))?;
    Ok(stats)
}

/// The file of fanout worker `i`: `out.pcap` → `out.{i}.pcap`, `out` →
/// `out.{i}`.
pub fn worker_path(path: &Path, i: usize) -> PathBuf {
    match (path.file_stem(), path.extension()) {
        (Some(stem), Some(ext)) => {
            let mut name = stem.to_os_string();
            name.push(format!(".{i}."));
            name.push(ext);
            path.with_file_name(name)
        }
        _ => {
            let mut p = path.as_os_str().to_os_string();
            p.push(format!(".{i}"));
            PathBuf::from(p)
        }
    }
}

fn listening_line(args: &CaptureArgs, cap: &Capture) {
    if args.quiet {
        return;
    }
    let lt = cap.linktype();
    let name = sift::LinkType(lt).name().unwrap_or("?");
    let name = match lt {
        crate::DLT_EN10MB => format!("{name} (Ethernet)"),
        crate::DLT_RAW => format!("{name} (Raw IP)"),
        crate::DLT_LINUX_SLL2 => format!("{name} (Linux cooked v2)"),
        _ => name.to_string(),
    };
    let workers = if args.fanout >= 2 {
        format!(", {} fanout workers", args.fanout)
    } else {
        String::new()
    };
    let place = match cap.placement() {
        Placement::Userland => " (filtering in user space)",
        _ => "",
    };
    let _ = writeln!(
        io::stderr().lock(),
        "listening on {}, link-type {}, snapshot length {} bytes{workers}{place}",
        args.interface,
        name,
        cap.snaplen(),
    );
}

/// `--fanout N`: N members of one hash fanout group, one thread and one
/// file each. With `--updates`, every line goes to every worker, and each
/// applies it to its own live filter between two of its blocks.
fn capture_fanout(args: &CaptureArgs) -> Result<Stats, String> {
    let Some(path) = args.write.as_deref().filter(|p| p.as_os_str() != "-") else {
        return Err("--fanout needs -w FILE (each worker writes its own file)".into());
    };
    sys::install_stop_handlers().map_err(|e| format!("sigaction: {e}"))?;
    // One group id per process (ids are per network namespace).
    let group = (std::process::id() & 0xffff) as u16;
    let fanout = Fanout {
        group,
        mode: FanoutMode::Hash,
        defrag: true,
    };
    // Sockets are created here, in the caller's network namespace; the
    // workers' threads inherit it anyway.
    let mut caps = Vec::with_capacity(args.fanout);
    for _ in 0..args.fanout {
        caps.push(open_member(args, Some(fanout))?);
    }
    // The group forms with every member holding packets back, then all let
    // them in: no flow reaches a member before the group is complete (see
    // `Capture::activate_held`).
    for cap in &mut caps {
        cap.activate_held().map_err(|e| e.to_string())?;
    }
    for cap in &mut caps {
        cap.release().map_err(|e| e.to_string())?;
    }
    if let Some(first) = caps.first() {
        listening_line(args, first);
    }
    let taken = AtomicU64::new(0);
    let mut updates = match &args.updates {
        Some(source) if args.dynamic => broadcast(open_updates(source)?, caps.len()),
        _ => Vec::new(),
    }
    .into_iter();
    let workers: Vec<Worker<'_>> = (0..caps.len())
        .map(|i| Worker {
            shared_budget: Some(&taken),
            own_budget: AtomicU64::new(0),
            updates: updates.next(),
            reports: i == 0,
        })
        .collect();
    let results: Vec<Result<Stats, String>> = std::thread::scope(|s| {
        let handles: Vec<_> = caps
            .iter_mut()
            .zip(workers)
            .enumerate()
            .map(|(i, (cap, worker))| {
                let file = worker_path(path, i);
                s.spawn(move || write_pcap(args, cap, &file, &worker))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("a capture worker panicked".into()))
            })
            .collect()
    });
    let mut total = Stats::default();
    for r in results {
        let s = r?;
        total.captured += s.captured;
        total.received_by_filter += s.received_by_filter;
        total.dropped_by_kernel += s.dropped_by_kernel;
        // One interface: every worker read the same counters.
        total.dropped_by_interface = total.dropped_by_interface.max(s.dropped_by_interface);
        total.dropped_by_sift += s.dropped_by_sift;
        total.filtered_in_userland += s.filtered_in_userland;
    }
    Ok(total)
}

/// Copies every line of `rx` to `n` receivers, in order (a thread that ends
/// with the stream, or when no receiver is left).
fn broadcast(
    rx: mpsc::Receiver<(usize, String)>,
    n: usize,
) -> Vec<mpsc::Receiver<(usize, String)>> {
    let (senders, receivers): (Vec<_>, Vec<_>) = (0..n).map(|_| mpsc::channel()).unzip();
    std::thread::spawn(move || {
        let mut senders = senders;
        while let Ok(update) = rx.recv() {
            senders.retain(|tx: &mpsc::Sender<(usize, String)>| tx.send(update.clone()).is_ok());
            if senders.is_empty() {
                break;
            }
        }
    });
    receivers
}

/// `sift -i`: opens the capture, prints tcpdump's "listening on" line,
/// writes pcap (`-w`) straight from ring memory or prints one line per
/// packet, stops on `-c`/SIGINT/SIGTERM, flushes, and prints the statistics
/// lines on standard error. Returns the statistics.
pub fn capture_main(args: &CaptureArgs) -> Result<Stats, String> {
    sys::clear_stop();
    if args.updates.is_some() && !args.dynamic {
        return Err("--updates needs --engine dynamic".into());
    }
    let stats = if args.fanout >= 2 {
        capture_fanout(args)?
    } else {
        let mut cap = open_capture(args)?;
        // Bound before the line says so: whoever waits for it can send.
        cap.activate().map_err(|e| e.to_string())?;
        listening_line(args, &cap);
        sys::install_stop_handlers().map_err(|e| format!("sigaction: {e}"))?;
        match &args.write {
            Some(path) => {
                let worker = Worker::alone(args, cap.live_filter_mut().is_some())?;
                write_pcap(args, &mut cap, path, &worker)?
            }
            None => {
                let mut out = BufWriter::new(io::stdout().lock());
                let unbuffered = args.packet_buffered;
                let result = capture_with(args, &mut cap, &mut |p| {
                    writeln!(
                        out,
                        "{}.{:06} length {} caplen {}",
                        p.sec,
                        p.nsec / 1000,
                        p.wire_len,
                        p.data.len()
                    )?;
                    if unbuffered {
                        out.flush()?;
                    }
                    Ok(())
                });
                let _ = out.flush();
                result?
            }
        }
    };
    if !args.quiet {
        let _ = io::stderr()
            .lock()
            .write_all(stats.tcpdump_lines().as_bytes());
    }
    Ok(stats)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worker_paths() {
        assert_eq!(
            worker_path(Path::new("/tmp/out.pcap"), 3),
            PathBuf::from("/tmp/out.3.pcap")
        );
        assert_eq!(worker_path(Path::new("out"), 0), PathBuf::from("out.0"));
        assert_eq!(
            worker_path(Path::new("dir/a.b.pcap"), 1),
            PathBuf::from("dir/a.b.1.pcap")
        );
    }

    #[test]
    fn short_copies_copy_exactly() {
        let src: Vec<u8> = (0..300u32).map(|i| (i * 7 + 3) as u8).collect();
        for n in 0..=300 {
            let mut dst = vec![0xeeu8; n];
            copy_short(&mut dst, &src[300 - n..]);
            assert_eq!(dst, &src[300 - n..], "{n} bytes");
        }
    }

    /// The records of `frames` written by [`write_block_vectored`] (one
    /// block holding them all) and by sift-pcap's buffered writers.
    fn written_both_ways(frames: &[Vec<u8>], format: FileFormat, precision: TsPrecision) {
        let mut block = crate::frame::tests::block(frames);
        let mut counters = crate::Counters::default();
        let framing = crate::frame::Framing::Raw {
            reinsert_vlan: true,
        };
        let path = std::env::temp_dir().join(format!(
            "sift-capture-writev-{}-{format:?}-{precision:?}",
            std::process::id()
        ));
        let mut file = File::create(&path).unwrap();
        let mut stage = vec![0u8; STAGE_BYTES];
        let mut packets =
            Packets::for_test(&mut block, frames.len() as u32, framing, &mut counters);
        let done =
            write_block_vectored(&mut file, format, precision, &mut stage, &mut packets).unwrap();
        drop(file);
        assert_eq!(done.packets, frames.len() as u64);
        let ours = std::fs::read(&path).unwrap();
        std::fs::remove_file(&path).unwrap();

        // The same packets, parsed again from a fresh copy of the block.
        let mut block = crate::frame::tests::block(frames);
        let mut counters = crate::Counters::default();
        let want: Vec<(u32, u32, u32, Vec<u8>)> =
            Packets::for_test(&mut block, frames.len() as u32, framing, &mut counters)
                .map(|p| {
                    let frac = match precision {
                        TsPrecision::Nano => p.nsec,
                        TsPrecision::Micro => p.nsec / 1000,
                    };
                    (p.sec, frac, p.wire_len, p.data.to_vec())
                })
                .collect();
        assert_eq!(want.len(), frames.len());
        let theirs = match format {
            FileFormat::Pcap => {
                let mut w = sift_pcap::PcapWriter::new(Vec::new(), 1, 65535, precision).unwrap();
                for (sec, frac, wire, data) in &want {
                    w.write_raw(*sec, *frac, *wire, data).unwrap();
                }
                w.into_inner().unwrap()[24..].to_vec()
            }
            FileFormat::Pcapng => {
                let mut w = PcapngWriter::with_interface(Vec::new(), 1, 65535, precision).unwrap();
                let header = w.bytes_written() as usize;
                for (sec, frac, wire, data) in &want {
                    w.write_raw(0, *sec, *frac, *wire, data).unwrap();
                }
                w.into_inner().unwrap()[header..].to_vec()
            }
        };
        assert!(ours == theirs, "{format:?} {precision:?}: records differ");
    }

    #[test]
    fn records_written_from_the_ring_match_the_buffered_writers() {
        // Every length around the copy sizes and COPY_MAX, some long ones,
        // and enough packets for several writev calls (by slices and by
        // staging bytes).
        let mut lengths: Vec<usize> = (0..=140).chain(240..=270).collect();
        lengths.extend([1514, 9000, 300, 1, 1514]);
        let mut frames = Vec::new();
        for round in 0..4 {
            for &n in &lengths {
                let data: Vec<u8> = (0..n).map(|i| (i + n + round) as u8).collect();
                let size = (82 + n + 15) & !15;
                frames.push(crate::frame::tests::frame(size, 82, &data, 0, 0, 0));
            }
        }
        for _ in 0..700 {
            frames.push(crate::frame::tests::frame(400, 82, &[0xab; 300], 0, 0, 0));
        }
        for format in [FileFormat::Pcap, FileFormat::Pcapng] {
            for precision in [TsPrecision::Micro, TsPrecision::Nano] {
                written_both_ways(&frames, format, precision);
            }
        }
    }

    #[test]
    fn fanout_needs_a_file() {
        let mut a = CaptureArgs::new("lo");
        a.fanout = 2;
        assert!(capture_main(&a)
            .unwrap_err()
            .contains("--fanout needs -w FILE"));
    }
}
