//! The `sift -i` capture loop.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;

use sift_pcap::{PcapWriter, TsPrecision};

use crate::{sys, Capture, Config, Error, Packet, Placement, RingConfig, Stats};

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
}

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
        }
    }
}

/// Opens the capture described by `args` and installs its filter; returns
/// the capture (not yet active).
pub fn open_capture(args: &CaptureArgs) -> Result<Capture, String> {
    let cfg = Config {
        interface: args.interface.clone(),
        promisc: args.promisc,
        snaplen: args.snaplen,
        ring: args.ring,
        ignore_outgoing: args.ignore_outgoing,
        fanout: None,
    };
    let mut cap = Capture::open(&cfg).map_err(|e| match e {
        Error::Permission => e.to_string(),
        e => format!("{}: {e}", args.interface),
    })?;
    if !args.expression.trim().is_empty() {
        let f =
            sift::Filter::new(&args.expression, &cap.compile_options()).map_err(|e| e.render())?;
        cap.set_filter(Some(f)).map_err(|e| e.to_string())?;
    }
    Ok(cap)
}

/// Runs a capture, calling `on_packet` for every packet that passes the
/// filter, until `args.count` packets, SIGINT/SIGTERM, [`crate::request_stop`]
/// or an error from `on_packet`. On a stop request the blocks the kernel
/// retires within one block timeout are still processed, so packets
/// already captured are not lost. Returns the final statistics (with
/// `captured` = packets passed to `on_packet`).
pub fn capture_with(
    args: &CaptureArgs,
    cap: &mut Capture,
    on_packet: &mut dyn FnMut(&Packet<'_>) -> io::Result<()>,
) -> Result<Stats, String> {
    sys::install_stop_handlers().map_err(|e| format!("sigaction: {e}"))?;
    cap.activate().map_err(|e| e.to_string())?;
    let mut captured = 0u64;
    let limit = args.count.unwrap_or(u64::MAX);
    let tick = i32::try_from(cap.ring.block_timeout_ms.clamp(1, 100)).unwrap_or(100);
    // After a stop request: keep draining until this many empty polls.
    let mut drain_polls: Option<u32> = None;
    'outer: while captured < limit {
        if drain_polls.is_none() && sys::stop_requested() {
            // One block timeout (plus margin) lets the current block retire.
            drain_polls = Some(cap.ring.block_timeout_ms / tick.max(1) as u32 + 2);
        }
        let block = cap.next_block(tick).map_err(|e| e.to_string())?;
        let Some(mut block) = block else {
            match drain_polls.as_mut() {
                Some(0) => break,
                Some(n) => *n -= 1,
                None => {}
            }
            continue;
        };
        for p in block.packets() {
            on_packet(&p).map_err(|e| format!("write error: {e}"))?;
            captured += 1;
            if captured >= limit {
                break 'outer;
            }
        }
    }
    let mut stats = cap.stats().map_err(|e| e.to_string())?;
    stats.captured = captured;
    Ok(stats)
}

/// `sift -i`: opens the capture, prints tcpdump's "listening on" line,
/// writes pcap (`-w`) straight from ring memory or prints one line per
/// packet, stops on `-c`/SIGINT/SIGTERM, flushes, and prints the statistics
/// lines on standard error. Returns the statistics.
pub fn capture_main(args: &CaptureArgs) -> Result<Stats, String> {
    sys::clear_stop();
    let mut cap = open_capture(args)?;
    let precision = if args.nano {
        TsPrecision::Nano
    } else {
        TsPrecision::Micro
    };
    let linktype = sift_pcap::linktype::dlt_to_linktype(cap.linktype()).unwrap_or(cap.linktype());
    if !args.quiet {
        let lt = cap.linktype();
        let name = sift::LinkType(lt).name().unwrap_or("?");
        let name = match lt {
            crate::DLT_EN10MB => format!("{name} (Ethernet)"),
            crate::DLT_RAW => format!("{name} (Raw IP)"),
            crate::DLT_LINUX_SLL2 => format!("{name} (Linux cooked v2)"),
            _ => name.to_string(),
        };
        let mut e = io::stderr().lock();
        let _ = writeln!(
            e,
            "listening on {}, link-type {}, snapshot length {} bytes{}",
            args.interface,
            name,
            cap.snaplen(),
            match cap.placement() {
                Placement::Userland => " (filtering in user space)",
                _ => "",
            }
        );
    }
    let stats = match &args.write {
        Some(path) => {
            let out: Box<dyn Write> = if path.as_os_str() == "-" {
                Box::new(io::stdout().lock())
            } else {
                Box::new(File::create(path).map_err(|e| format!("{}: {e}", path.display()))?)
            };
            let out = BufWriter::with_capacity(1 << 20, out);
            let mut w = PcapWriter::new(out, linktype, cap.snaplen(), precision)
                .map_err(|e| format!("write error: {e}"))?;
            if args.packet_buffered {
                w.flush().map_err(|e| format!("write error: {e}"))?;
            }
            let unbuffered = args.packet_buffered;
            let result = capture_with(args, &mut cap, &mut |p| {
                let frac = match precision {
                    TsPrecision::Nano => p.nsec,
                    TsPrecision::Micro => p.nsec / 1000,
                };
                w.write_raw(p.sec, frac, p.wire_len, p.data)?;
                if unbuffered {
                    w.flush()?;
                }
                Ok(())
            });
            // Flush whatever was captured, even after an error.
            let flushed = w.flush();
            let stats = result?;
            flushed.map_err(|e| format!("write error: {e}"))?;
            stats
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
    };
    if !args.quiet {
        let _ = io::stderr()
            .lock()
            .write_all(stats.tcpdump_lines().as_bytes());
    }
    Ok(stats)
}
