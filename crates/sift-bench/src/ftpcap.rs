//! The FTP experiment of the Swift paper: replay a passive-mode FTP trace
//! in timestamp order, capture the control connections, learn each data
//! port from the `227 Entering Passive Mode (h1,h2,h3,h4,p1,p2)` reply,
//! update the filter, and count, per data connection, the packets that
//! went by before the filter caught its first one.
//!
//! Strategies: `dynamic` (sift's dynamic engine, updated in place),
//! `sift-recompile` (a full recompile to JIT code), `libpcap-recompile`
//! (`pcap_compile` with its optimizer, the program run by
//! `pcap_offline_filter`; when libpcap is installed).
//!
//! Modes (how updates happen and how missed packets are counted):
//! * `threaded` (the real experiment): packets are offered at their trace
//!   times (the filtering thread busy-waits to each packet's time relative
//!   to the start) and filtered with whatever filter is current; a captured
//!   227 reply is handed to an updater thread, which updates (or
//!   recompiles) and publishes while the filtering thread keeps going, as
//!   with a capture whose filter runs apart from the tool that changes it.
//!   The hand-off (every strategy alike): the updater sleeps on a channel
//!   and asks the kernel for a short time slice ([`request_short_slice`]),
//!   and after a request the filtering thread yields its CPU until the
//!   update is published, at most [`HANDOFF_NS`] (`--handoff-us`); on a
//!   loaded machine the woken updater otherwise often waits milliseconds
//!   for a time slice.
//!   Requests that queue up while a recompile runs share one recompile. The
//!   delay from the request to the publication is measured for real, and a
//!   connection misses its packets that arrive (by the trace) before its
//!   reply's arrival + that delay; so a filtering thread that falls behind
//!   the trace (a busy machine) does not change the count.
//! * `inline`: no pacing; the filtering thread runs each update itself
//!   (measured for real) and a connection misses its packets that arrive
//!   before its reply's arrival + the update's duration: what a capture
//!   whose filter keeps running during the update would miss, without the
//!   cost of handing the update to another thread.
//! * `simulated=NS`: no pacing; an update takes effect for packets at or
//!   after the reply's timestamp + NS (the update itself still runs and is
//!   timed), and the count comes from the filter's verdicts: the packets of
//!   a connection before its first captured one. Deterministic:
//!   `simulated=0` is a zero-latency strategy.

use std::io::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::dynamic::{fmt_ns, ftp_expr, DynamicFtp, FtpConnKey};
use crate::gen::{ftp_trace, FtpOptions, Packet, LINKTYPE_ETHERNET};
use crate::libpcap::{Libpcap, LibpcapFilter};
use crate::report::json_string;

/// Usage of the `ftpcap` example.
pub const USAGE: &str = "\
usage: cargo run --release -p sift-bench --example ftpcap -- [TRACE] [options]
  TRACE                 pcap/pcapng file (e.g. from `sift gen ftp -w ftp.pcap`); default: the
                        default FTP trace generated in memory
  --strategies S[,S..]  dynamic, sift-recompile, libpcap-recompile (default: all)
  --modes M[,M..]       threaded, inline, simulated=NS (default: threaded,inline)
  --background-pps N    background rate of the generated trace (default 500000)
  --seed S              seed of the generated trace (default 1)
  --repeat N            run every strategy × mode N times, in turn (default 1)
  --handoff-us N        threaded: the filtering thread yields its CPU to the updater after a
                        request until the update is published, at most N µs (default 1000;
                        0: no hand-off, and the updater keeps the default time slice)
  --json                JSON lines on stdout (one per run); table on stderr";

/// Threaded mode: how long at most the filtering thread yields its CPU to
/// the updater after a request (until the update is published).
pub const HANDOFF_NS: u64 = 1_000_000;

/// Threaded mode: the scheduling slice the updater thread asks for
/// (the kernel's minimum).
pub const UPDATER_SLICE_NS: u64 = 100_000;

/// Asks the kernel (Linux 6.12 or later, EEVDF) for a short time slice for
/// the calling thread: `sched_setattr` with policy `SCHED_OTHER`, the
/// thread's nice value unchanged and `sched_runtime = ns`. A thread with a
/// shorter slice than the running one preempts it when it wakes up, instead
/// of waiting for that thread's slice to end (milliseconds on a loaded
/// machine): what a latency-sensitive thread that sleeps most of the time
/// should ask for. No privilege is needed. False where unsupported.
#[allow(unsafe_code)]
pub fn request_short_slice(ns: u64) -> bool {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: `gettid` and `getpriority` take no pointer. (A failing
        // `getpriority` gives -1, and then `sched_setattr` fails.)
        let nice = unsafe { libc::getpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t) };
        let attr = libc::sched_attr {
            size: std::mem::size_of::<libc::sched_attr>() as u32,
            sched_policy: libc::SCHED_OTHER as u32,
            sched_flags: 0,
            sched_nice: nice,
            sched_priority: 0,
            sched_runtime: ns,
            sched_deadline: 0,
            sched_period: 0,
        };
        // SAFETY: `sched_setattr(0, attr, 0)` reads `size` bytes of `attr`,
        // a live, initialized `sched_attr` of that size, for the calling
        // thread; it writes nothing.
        let r = unsafe { libc::syscall(libc::SYS_sched_setattr, 0, &attr as *const libc::sched_attr, 0u32) };
        r == 0
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = ns;
        false
    }
}

/// The strategies.
pub const STRATEGIES: &[&str] = &["dynamic", "sift-recompile", "libpcap-recompile"];

/// How updates reach the filtering thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Paced replay, updates on another thread.
    Threaded,
    /// Paced replay, updates on the filtering thread.
    Inline,
    /// Unpaced; an update applies from the reply's timestamp + the latency.
    Simulated(u64),
}

impl Mode {
    /// Parses `threaded`, `inline`, `simulated=NS`.
    pub fn parse(s: &str) -> Result<Mode, String> {
        match s {
            "threaded" => Ok(Mode::Threaded),
            "inline" => Ok(Mode::Inline),
            _ => match s.strip_prefix("simulated=") {
                Some(ns) => ns
                    .parse()
                    .map(Mode::Simulated)
                    .map_err(|_| format!("bad latency in mode '{s}'")),
                None => Err(format!(
                    "unknown mode '{s}' (threaded, inline, simulated=NS)"
                )),
            },
        }
    }

    /// The mode's name.
    pub fn name(&self) -> String {
        match self {
            Mode::Threaded => "threaded".into(),
            Mode::Inline => "inline".into(),
            Mode::Simulated(ns) => format!("simulated={ns}"),
        }
    }
}

/// An Ethernet IPv4 TCP packet's addresses, ports and payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TcpView<'a> {
    /// Source address.
    pub src: u32,
    /// Destination address.
    pub dst: u32,
    /// Source port.
    pub sport: u16,
    /// Destination port.
    pub dport: u16,
    /// TCP payload (as captured).
    pub payload: &'a [u8],
}

/// Decodes an Ethernet (no VLAN) IPv4 TCP packet, first fragment; `None`
/// for anything else or when truncated.
pub fn tcp_view(d: &[u8]) -> Option<TcpView<'_>> {
    if d.get(12..14)? != [8, 0] {
        return None;
    }
    let ip = d.get(14..).filter(|ip| ip.len() >= 20)?;
    let ihl = usize::from(ip[0] & 0xf) * 4;
    if ip.first()? >> 4 != 4
        || ihl < 20
        || *ip.get(9)? != 6
        || u16::from_be_bytes([ip[6], ip[7]]) & 0x1fff != 0
    {
        return None;
    }
    let total = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
    let be32 = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    let (src, dst) = (be32(&ip[12..16]), be32(&ip[16..20]));
    let tcp = ip.get(ihl..)?;
    let off = usize::from(*tcp.get(12)? >> 4) * 4;
    let sport = u16::from_be_bytes([tcp[0], tcp[1]]);
    let dport = u16::from_be_bytes([tcp[2], tcp[3]]);
    let end = total.min(ip.len()).max(ihl);
    let payload = ip.get(ihl + off..end).unwrap_or(&[]);
    Some(TcpView {
        src,
        dst,
        sport,
        dport,
        payload,
    })
}

/// Parses a `227 Entering Passive Mode (h1,h2,h3,h4,p1,p2)` reply: the
/// announced address (host order) and port.
pub fn parse_227(payload: &[u8]) -> Option<(u32, u16)> {
    let rest = payload.strip_prefix(b"227")?;
    let open = rest.iter().position(|&c| c == b'(')?;
    let close = open + rest[open..].iter().position(|&c| c == b')')?;
    let inner = std::str::from_utf8(&rest[open + 1..close]).ok()?;
    let mut n = [0u8; 6];
    let mut parts = inner.split(',');
    for x in &mut n {
        *x = parts.next()?.trim().parse().ok()?;
    }
    if parts.next().is_some() {
        return None;
    }
    Some((
        u32::from_be_bytes([n[0], n[1], n[2], n[3]]),
        u16::from_be_bytes([n[4], n[5]]),
    ))
}

/// The 227 reply a packet carries (TCP from port 21), if any.
pub fn reply_in(d: &[u8]) -> Option<(u32, u16)> {
    let t = tcp_view(d)?;
    if t.sport != 21 {
        return None;
    }
    parse_227(t.payload)
}

/// What the trace holds, found by reading every packet (not by the filter).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GroundTruth {
    /// The data connections in order of their (first) 227 reply.
    pub conns: Vec<FtpConnKey>,
    /// Index of each connection's reply packet.
    pub reply_index: Vec<usize>,
    /// Indices of each connection's packets (TCP to or from the announced
    /// address and port), in order.
    pub packets: Vec<Vec<usize>>,
    /// Per packet: its connection, if any.
    pub conn_of: Vec<Option<u32>>,
}

impl GroundTruth {
    /// Reads the trace.
    pub fn of(packets: &[Packet]) -> GroundTruth {
        let mut g = GroundTruth {
            conn_of: vec![None; packets.len()],
            ..Default::default()
        };
        let mut index = std::collections::HashMap::new();
        for (i, p) in packets.iter().enumerate() {
            if let Some(k) = reply_in(&p.data) {
                index.entry(k).or_insert_with(|| {
                    g.conns.push(k);
                    g.reply_index.push(i);
                    g.packets.push(Vec::new());
                    g.conns.len() - 1
                });
            }
        }
        for (i, p) in packets.iter().enumerate() {
            let Some(t) = tcp_view(&p.data) else { continue };
            let c = index
                .get(&(t.src, t.sport))
                .or_else(|| index.get(&(t.dst, t.dport)));
            if let Some(&c) = c {
                g.conn_of[i] = Some(c as u32);
                g.packets[c].push(i);
            }
        }
        g
    }
}

/// One run's result.
#[derive(Clone, Debug, PartialEq)]
pub struct FtpcapResult {
    /// Strategy name.
    pub strategy: String,
    /// Mode name.
    pub mode: String,
    /// Packets replayed.
    pub packets: usize,
    /// Packets the filter accepted.
    pub captured: u64,
    /// Data connections in the trace.
    pub connections: usize,
    /// Per connection: packets before its first captured one (all of them
    /// when none was captured).
    pub missed: Vec<u64>,
    /// Connections of which no packet was captured.
    pub never_captured: usize,
    /// Duration of each update (or recompile), ns.
    pub update_ns: Vec<u64>,
    /// Per request: from the filtering thread's request to the update's
    /// publication, ns (threaded mode only).
    pub visible_ns: Vec<u64>,
    /// Per connection: how long after its reply's arrival the filter
    /// followed it, ns (`None`: its reply was never captured).
    pub latency_ns: Vec<Option<u64>>,
    /// Largest delay of a packet behind its trace time, ns (paced modes).
    pub max_lag_ns: u64,
    /// Packets filtered more than 10 µs after their trace time.
    pub late_packets: u64,
}

fn median(v: &[u64]) -> u64 {
    let mut v = v.to_vec();
    v.sort_unstable();
    v.get(v.len() / 2).copied().unwrap_or(0)
}

impl FtpcapResult {
    /// Mean missed packets per connection.
    pub fn missed_mean(&self) -> f64 {
        if self.missed.is_empty() {
            return 0.0;
        }
        self.missed.iter().sum::<u64>() as f64 / self.missed.len() as f64
    }

    /// Most packets missed on one connection.
    pub fn missed_max(&self) -> u64 {
        self.missed.iter().copied().max().unwrap_or(0)
    }

    /// Median update duration, ns.
    pub fn update_median_ns(&self) -> u64 {
        median(&self.update_ns)
    }

    /// Median request-to-publication delay, ns.
    pub fn visible_median_ns(&self) -> u64 {
        median(&self.visible_ns)
    }

    /// One JSON object on one line.
    pub fn json_line(&self) -> String {
        format!(
            concat!(
                "{{\"strategy\":{},\"mode\":{},\"packets\":{},\"captured\":{},\"connections\":{},",
                "\"missed_mean\":{:.3},\"missed_max\":{},\"never_captured\":{},\"updates\":{},",
                "\"update_median_ns\":{},\"visible_median_ns\":{},\"max_lag_ns\":{},\"late_packets\":{}}}"
            ),
            json_string(&self.strategy),
            json_string(&self.mode),
            self.packets,
            self.captured,
            self.connections,
            self.missed_mean(),
            self.missed_max(),
            self.never_captured,
            self.update_ns.len(),
            self.update_median_ns(),
            self.visible_median_ns(),
            self.max_lag_ns,
            self.late_packets
        )
    }
}

/// Header of the terminal table.
pub fn table_header() -> String {
    format!(
        "{:<18} {:<14} {:>5} {:>12} {:>11} {:>6} {:>14} {:>14} {:>10}",
        "strategy",
        "mode",
        "conns",
        "missed mean",
        "missed max",
        "never",
        "update median",
        "visible median",
        "max lag"
    )
}

/// One table row.
pub fn table_row(r: &FtpcapResult) -> String {
    let vis = if r.visible_ns.is_empty() {
        "-".to_string()
    } else {
        fmt_ns(r.visible_median_ns())
    };
    format!(
        "{:<18} {:<14} {:>5} {:>12.2} {:>11} {:>6} {:>14} {:>14} {:>10}",
        r.strategy,
        r.mode,
        r.connections,
        r.missed_mean(),
        r.missed_max(),
        r.never_captured,
        fmt_ns(r.update_median_ns()),
        vis,
        fmt_ns(r.max_lag_ns)
    )
}

/// A filter a recompile strategy produced.
enum Compiled {
    Sift(sift::Filter),
    Libpcap(LibpcapFilter),
}

impl Compiled {
    #[inline]
    fn matches(&self, d: &[u8], wire_len: u32) -> bool {
        match self {
            Compiled::Sift(f) => f.matches(d, wire_len),
            Compiled::Libpcap(f) => f.matches(d, wire_len),
        }
    }
}

/// Where an updater leaves a recompiled filter for the filtering thread:
/// the filtering thread reads one atomic per packet and takes the lock only
/// when the generation changed.
struct Slot {
    generation: AtomicU64,
    next: Mutex<Option<Compiled>>,
}

/// The writing side of a strategy (moves to the updater thread).
enum Writer {
    Dynamic(DynamicFtp),
    Recompile {
        strategy: &'static str,
        conns: Vec<FtpConnKey>,
        slot: Arc<Slot>,
    },
}

/// The filtering side of a strategy.
enum FilterSide {
    Dynamic(sift_dynamic::Reader),
    Recompile {
        current: Compiled,
        generation: u64,
        slot: Arc<Slot>,
    },
}

impl FilterSide {
    #[inline]
    fn matches(&mut self, d: &[u8], wire_len: u32) -> bool {
        match self {
            FilterSide::Dynamic(r) => r.matches(d, wire_len),
            FilterSide::Recompile {
                current,
                generation,
                slot,
            } => {
                let g = slot.generation.load(Ordering::Acquire);
                if g != *generation {
                    *generation = g;
                    if let Some(next) = slot.next.lock().unwrap_or_else(|e| e.into_inner()).take() {
                        *current = next;
                    }
                }
                current.matches(d, wire_len)
            }
        }
    }
}

fn compile(strategy: &str, expr: &str) -> Result<Compiled, String> {
    match strategy {
        "sift-recompile" => {
            sift::Filter::with_engine(expr, &sift::CompileOptions::default(), sift::Engine::Jit)
                .map(Compiled::Sift)
                .map_err(|e| e.render())
        }
        _ => {
            let lib = Libpcap::get().ok_or("libpcap not found")?;
            lib.compile(expr, LINKTYPE_ETHERNET, sift::DEFAULT_SNAPLEN, true)
                .map(|f| Compiled::Libpcap(f.0))
        }
    }
}

impl Writer {
    /// Applies a batch of new connections and publishes; returns the time it took.
    fn apply(&mut self, batch: &[FtpConnKey]) -> Result<u64, String> {
        let t = Instant::now();
        match self {
            Writer::Dynamic(f) => {
                for &(h, p) in batch {
                    f.add(h, p).map_err(|e| e.to_string())?;
                }
            }
            Writer::Recompile {
                strategy,
                conns,
                slot,
            } => {
                conns.extend_from_slice(batch);
                let c = compile(strategy, &ftp_expr(conns))?;
                *slot.next.lock().unwrap_or_else(|e| e.into_inner()) = Some(c);
                slot.generation.fetch_add(1, Ordering::Release);
            }
        }
        Ok(u64::try_from(t.elapsed().as_nanos()).unwrap_or(u64::MAX))
    }
}

fn setup(strategy: &str) -> Result<Option<(Writer, FilterSide)>, String> {
    match strategy {
        "dynamic" => {
            let f = DynamicFtp::new(&[])?;
            let reader = f.filter().handle().reader();
            Ok(Some((Writer::Dynamic(f), FilterSide::Dynamic(reader))))
        }
        "sift-recompile" | "libpcap-recompile" => {
            if strategy == "libpcap-recompile" && Libpcap::get().is_none() {
                return Ok(None);
            }
            let name = if strategy == "sift-recompile" {
                "sift-recompile"
            } else {
                "libpcap-recompile"
            };
            let slot = Arc::new(Slot {
                generation: AtomicU64::new(0),
                next: Mutex::new(None),
            });
            let current = compile(strategy, &ftp_expr(&[]))?;
            Ok(Some((
                Writer::Recompile {
                    strategy: name,
                    conns: Vec::new(),
                    slot: slot.clone(),
                },
                FilterSide::Recompile {
                    current,
                    generation: 0,
                    slot,
                },
            )))
        }
        _ => Err(format!(
            "unknown strategy '{strategy}' (known: {})",
            STRATEGIES.join(", ")
        )),
    }
}

/// What the updater thread reports: each update's duration; each
/// request's delay to publication.
type UpdaterLog = (Vec<u64>, Vec<(FtpConnKey, u64)>);

/// What the replay loop records.
struct Replay {
    first: Vec<Option<usize>>,
    captured: u64,
    max_lag_ns: u64,
    late_packets: u64,
}

/// Replays `packets` through `strategy` in `mode`. `None` when the strategy
/// is unavailable here (libpcap not installed).
pub fn run(
    packets: &[Packet],
    truth: &GroundTruth,
    strategy: &str,
    mode: Mode,
) -> Result<Option<FtpcapResult>, String> {
    run_with(packets, truth, strategy, mode, std::time::Duration::from_nanos(HANDOFF_NS))
}

/// [`run`] with the threaded mode's hand-off bound (zero: no hand-off, and
/// the updater keeps the default time slice).
pub fn run_with(
    packets: &[Packet],
    truth: &GroundTruth,
    strategy: &str,
    mode: Mode,
    handoff: std::time::Duration,
) -> Result<Option<FtpcapResult>, String> {
    let Some((mut writer, mut side)) = setup(strategy)? else {
        return Ok(None);
    };
    let n = truth.conns.len();
    let mut rep = Replay {
        first: vec![None; n],
        captured: 0,
        max_lag_ns: 0,
        late_packets: 0,
    };
    let mut requested = std::collections::HashSet::new();
    let mut update_ns = Vec::new();
    let mut visible_ns = Vec::new();
    // Measured delay per connection (threaded, inline).
    let mut latency: std::collections::HashMap<FtpConnKey, u64> = Default::default();
    let t0 = packets.first().map_or(0, |p| p.ts_ns);
    // Per packet: on a captured 227 reply, `on_reply` is told the new connection.
    let mut replay = |rep: &mut Replay,
                      side: &mut FilterSide,
                      paced: bool,
                      on_packet: &mut dyn FnMut(u64),
                      on_reply: &mut dyn FnMut(FtpConnKey, u64)| {
        let start = Instant::now();
        for (i, p) in packets.iter().enumerate() {
            let due = p.ts_ns.saturating_sub(t0);
            if paced {
                let mut now = start.elapsed().as_nanos() as u64;
                while now < due {
                    std::hint::spin_loop();
                    now = start.elapsed().as_nanos() as u64;
                }
                let lag = now - due;
                rep.max_lag_ns = rep.max_lag_ns.max(lag);
                if lag > 10_000 {
                    rep.late_packets += 1;
                }
            } else {
                on_packet(p.ts_ns);
            }
            if !side.matches(&p.data, p.wire_len) {
                continue;
            }
            rep.captured += 1;
            if let Some(c) = truth.conn_of.get(i).copied().flatten() {
                let f = &mut rep.first[c as usize];
                if f.is_none() {
                    *f = Some(i);
                }
            }
            if let Some(k) = reply_in(&p.data) {
                if requested.insert(k) {
                    on_reply(k, p.ts_ns);
                }
            }
        }
    };
    match mode {
        Mode::Inline => {
            let mut err = None;
            replay(
                &mut rep,
                &mut side,
                false,
                &mut |_| {},
                &mut |k, _| match writer.apply(&[k]) {
                    Ok(ns) => {
                        update_ns.push(ns);
                        latency.insert(k, ns);
                    }
                    Err(e) => err = Some(e),
                },
            );
            if let Some(e) = err {
                return Err(e);
            }
        }
        Mode::Simulated(latency) => {
            let mut pending: std::collections::VecDeque<(u64, FtpConnKey)> = Default::default();
            let mut err = None;
            // Both closures need `pending`: share it through a RefCell.
            let pending_cell = std::cell::RefCell::new(&mut pending);
            let writer_cell = std::cell::RefCell::new(&mut writer);
            replay(
                &mut rep,
                &mut side,
                false,
                &mut |ts| {
                    let mut q = pending_cell.borrow_mut();
                    while q.front().is_some_and(|e| e.0 <= ts) {
                        let Some((_, k)) = q.pop_front() else { break };
                        match writer_cell.borrow_mut().apply(&[k]) {
                            Ok(ns) => update_ns.push(ns),
                            Err(e) => err = Some(e),
                        }
                    }
                },
                &mut |k, ts| {
                    pending_cell
                        .borrow_mut()
                        .push_back((ts.saturating_add(latency), k))
                },
            );
            if let Some(e) = err {
                return Err(e);
            }
        }
        Mode::Threaded => {
            let (tx, rx) = mpsc::channel::<(FtpConnKey, Instant)>();
            // Requests published so far (the updater counts them after each
            // publication), for the filtering thread's hand-off.
            let published = AtomicU64::new(0);
            let handoff_ns = handoff.as_nanos() as u64;
            let result = std::thread::scope(|s| {
                let published = &published;
                let updater = s.spawn(move || -> Result<UpdaterLog, String> {
                    if !handoff.is_zero() {
                        request_short_slice(UPDATER_SLICE_NS);
                    }
                    let (mut upd, mut vis) = (Vec::new(), Vec::new());
                    // A blocking receive: the filtering thread hands its CPU
                    // over after a request (below), so the woken updater
                    // need not wait for a time slice.
                    while let Ok(first) = rx.recv() {
                        let mut batch = vec![first];
                        while let Ok(more) = rx.try_recv() {
                            batch.push(more);
                        }
                        let keys: Vec<FtpConnKey> = batch.iter().map(|b| b.0).collect();
                        upd.push(writer.apply(&keys)?);
                        let now = Instant::now();
                        published.fetch_add(batch.len() as u64, Ordering::Release);
                        vis.extend(batch.iter().map(|b| (b.0, (now - b.1).as_nanos() as u64)));
                    }
                    Ok((upd, vis))
                });
                let mut sent = 0u64;
                replay(&mut rep, &mut side, true, &mut |_| {}, &mut |k, _| {
                    let t = Instant::now();
                    let _ = tx.send((k, t));
                    sent += 1;
                    // The hand-off: yield the CPU until the updater has
                    // published (at most `handoff_ns`). On a loaded machine a
                    // woken thread otherwise often waits milliseconds for a
                    // time slice while this thread spins on the trace clock;
                    // yielding lets the scheduler run it at once. The
                    // filtering thread falls behind meanwhile (max lag).
                    while published.load(Ordering::Acquire) < sent && (t.elapsed().as_nanos() as u64) < handoff_ns {
                        std::thread::yield_now();
                    }
                });
                drop(tx);
                updater
                    .join()
                    .map_err(|_| "the updater thread panicked".to_string())?
            })?;
            update_ns = result.0;
            for (k, v) in result.1 {
                visible_ns.push(v);
                latency.insert(k, v);
            }
        }
    }
    let mut missed = Vec::with_capacity(n);
    let mut latency_ns = Vec::with_capacity(n);
    let mut never = 0;
    for c in 0..n {
        let pk = &truth.packets[c];
        let count = match mode {
            // Verdicts: the packets before the first captured one.
            Mode::Simulated(ns) => {
                latency_ns.push(Some(ns));
                rep.first[c].map(|i| pk.partition_point(|&x| x < i))
            }
            // Trace time: the packets that arrived before the reply + the delay.
            Mode::Inline | Mode::Threaded => {
                let l = latency.get(&truth.conns[c]).copied();
                latency_ns.push(l);
                l.map(|l| {
                    let from = packets[truth.reply_index[c]].ts_ns.saturating_add(l);
                    pk.partition_point(|&x| packets[x].ts_ns < from)
                })
            }
        };
        match count {
            Some(m) if m < pk.len() || matches!(mode, Mode::Simulated(_)) => missed.push(m as u64),
            _ => {
                never += 1;
                missed.push(pk.len() as u64);
            }
        }
    }
    Ok(Some(FtpcapResult {
        strategy: strategy.to_string(),
        mode: mode.name(),
        packets: packets.len(),
        captured: rep.captured,
        connections: n,
        missed,
        never_captured: never,
        update_ns,
        visible_ns,
        latency_ns,
        max_lag_ns: rep.max_lag_ns,
        late_packets: rep.late_packets,
    }))
}

/// The 1-minute load average (`/proc/loadavg`), when available.
pub fn load_average() -> Option<String> {
    let s = std::fs::read_to_string("/proc/loadavg").ok()?;
    s.split_whitespace().next().map(String::from)
}

fn cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The `ftpcap` example's front end; `args` without the program name.
pub fn main_with_args(args: &[String]) -> Result<(), String> {
    let mut trace: Option<String> = None;
    let mut strategies: Vec<String> = STRATEGIES.iter().map(|s| s.to_string()).collect();
    let mut modes = vec![Mode::Threaded, Mode::Inline];
    let mut gen = FtpOptions::default();
    let mut json = false;
    let mut repeat = 1usize;
    let mut handoff = std::time::Duration::from_nanos(HANDOFF_NS);
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        let mut val = || -> Result<String, String> {
            i += 1;
            args.get(i)
                .cloned()
                .ok_or_else(|| format!("option {a} needs a value"))
        };
        match a {
            "--strategies" | "--strategy" => {
                strategies = val()?.split(',').map(String::from).collect()
            }
            "--modes" | "--mode" => {
                modes = val()?
                    .split(',')
                    .map(Mode::parse)
                    .collect::<Result<_, _>>()?
            }
            "--background-pps" => {
                gen.background_pps = val()?.parse().map_err(|_| "bad --background-pps")?
            }
            "--seed" => gen.seed = val()?.parse().map_err(|_| "bad --seed")?,
            "--json" => json = true,
            "--repeat" => repeat = val()?.parse().map_err(|_| "bad --repeat")?,
            "--handoff-us" => {
                handoff = std::time::Duration::from_micros(val()?.parse().map_err(|_| "bad --handoff-us")?)
            }
            "-h" | "--help" => return Err(USAGE.to_string()),
            _ if a.starts_with('-') => return Err(format!("unknown option {a}\n{USAGE}")),
            _ if trace.is_none() => trace = Some(a.to_string()),
            _ => return Err(format!("unexpected argument {a}\n{USAGE}")),
        }
        i += 1;
    }
    let packets = match &trace {
        Some(path) => {
            let w = crate::bench::Workload::load(std::path::Path::new(path))?;
            if w.linktype != LINKTYPE_ETHERNET {
                return Err(format!(
                    "{path}: link type {} (ftpcap reads Ethernet captures)",
                    w.linktype
                ));
            }
            w.packets
        }
        None => ftp_trace(&gen).packets,
    };
    let truth = GroundTruth::of(&packets);
    let secs = match (packets.first(), packets.last()) {
        (Some(a), Some(b)) => (b.ts_ns - a.ts_ns) as f64 / 1e9,
        _ => 0.0,
    };
    if let Some(l) = load_average() {
        eprintln!(
            "load average: {l} on {} CPUs (threaded results depend on it)",
            cpus()
        );
    }
    eprintln!(
        "trace: {} packets over {:.3} s ({:.0} kpps), {} data connections ({} of their packets)",
        packets.len(),
        secs,
        packets.len() as f64 / secs.max(1e-9) / 1e3,
        truth.conns.len(),
        truth.packets.iter().map(Vec::len).sum::<usize>()
    );
    let mut table: Box<dyn std::io::Write> = if json {
        Box::new(std::io::stderr())
    } else {
        Box::new(std::io::stdout())
    };
    let _ = writeln!(table, "{}", table_header());
    for m in modes
        .iter()
        .flat_map(|m| std::iter::repeat_n(m, repeat.max(1)))
    {
        for s in &strategies {
            match run_with(&packets, &truth, s, *m, handoff)? {
                Some(r) => {
                    let _ = writeln!(table, "{}", table_row(&r));
                    if json {
                        println!("{}", r.json_line());
                    }
                }
                None => eprintln!("note: {s} skipped (libpcap not found)"),
            }
        }
    }
    Ok(())
}
