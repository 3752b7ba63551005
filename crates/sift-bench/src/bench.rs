//! The measurement loop: compile each filter with each engine, one
//! warm-up pass, then samples of whole passes over packets held in memory;
//! match counts must agree everywhere.

use std::hint::black_box;
use std::path::Path;
use std::time::Instant;

use crate::engines::{self, elapsed_ns, EngineSpec, Runner, Setup};
use crate::filters::FilterSpec;
use crate::gen::{generate, Kind, Packet, GEN_SNAPLEN, LINKTYPE_ETHERNET};
use sift::PacketRef;

/// A capture held in memory.
#[derive(Clone, Debug)]
pub struct Workload {
    /// Name for reports (the kind, or the file name).
    pub name: String,
    /// LINKTYPE_* of the packets.
    pub linktype: u32,
    /// Snapshot length of the capture.
    pub snaplen: u32,
    /// The packets.
    pub packets: Vec<Packet>,
    /// Which run of this workload it is (`sift bench --repeat`), from 1.
    pub run: usize,
}

impl Workload {
    /// Generates a workload of `kind` in memory.
    pub fn generated(kind: Kind, count: usize, seed: u64) -> Workload {
        Workload {
            name: kind.name().to_string(),
            linktype: LINKTYPE_ETHERNET,
            snaplen: GEN_SNAPLEN,
            packets: generate(kind, count, seed),
            run: 1,
        }
    }

    /// Reads a pcap or pcapng file into memory. Damage after the last good
    /// packet is an error (benchmarks want whole files).
    pub fn load(path: &Path) -> Result<Workload, String> {
        let cap = sift_pcap::Capture::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut packets = Vec::new();
        for p in cap.packets() {
            let p = p.map_err(|e| format!("{}: {e}", path.display()))?;
            let ts_ns = u64::try_from(p.ts.as_unix_nanos()).unwrap_or(0);
            packets.push(Packet {
                ts_ns,
                wire_len: p.wire_len,
                data: p.data.to_vec(),
            });
        }
        let name = path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        Ok(Workload {
            name,
            linktype: cap.linktype(),
            snaplen: cap.snaplen(),
            packets,
            run: 1,
        })
    }

    /// The packets as every engine is handed them: one slice of
    /// [`PacketRef`]s (captured bytes and wire length, 16 bytes each), as
    /// a zero-copy capture reader would give them; sift's batch entry point
    /// for them (`Filter::count_packets`) walks the slice in place.
    pub fn packet_refs(&self) -> Vec<PacketRef<'_>> {
        self.packets.iter().map(|p| PacketRef::new(&p.data, p.wire_len)).collect()
    }

    /// Total captured bytes.
    pub fn bytes(&self) -> usize {
        self.packets.iter().map(|p| p.data.len()).sum()
    }

    /// `workload NAME: N packets, X MB captured`: how much memory the
    /// packets span decides whether the figures are cache-resident
    /// (docs/performance.md, "What limits the figures on this machine").
    pub fn summary(&self) -> String {
        format!(
            "workload {}: {} packets, {:.1} MB captured",
            self.name,
            self.packets.len(),
            self.bytes() as f64 / 1e6
        )
    }
}

/// How to sample.
#[derive(Clone, Copy, Debug)]
pub struct SampleOptions {
    /// Samples per engine × filter (after one warm-up pass).
    pub samples: usize,
    /// A sample repeats whole passes until it lasts at least this long
    /// (the pass count is fixed from the warm-up pass).
    pub min_sample_ns: u64,
    /// What the samples and compile times are timed with.
    pub clock: Clock,
    /// Each engine compiles each filter this many times; the least time is
    /// reported (the last build is the one measured). Compiling is
    /// deterministic work, so what varies between builds is the machine's
    /// interruptions, which only add time: see [`bench_filter`].
    pub compile_samples: usize,
}

impl Default for SampleOptions {
    fn default() -> Self {
        SampleOptions {
            samples: 20,
            min_sample_ns: 10_000_000,
            clock: Clock::Wall,
            compile_samples: 21,
        }
    }
}

/// How time is measured.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Clock {
    /// Elapsed wall-clock time (`Instant`).
    #[default]
    Wall,
    /// CPU time of the measuring thread (`CLOCK_THREAD_CPUTIME_ID`): time
    /// spent waiting for a CPU on a loaded machine is left out.
    ThreadCpu,
}

impl Clock {
    /// A time stamp in nanoseconds (only differences mean anything).
    pub fn now(self) -> u64 {
        match self {
            Clock::Wall => {
                static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
                elapsed_ns(*START.get_or_init(Instant::now))
            }
            Clock::ThreadCpu => crate::cputime::thread_cpu_ns().unwrap_or(0),
        }
    }

    /// Whether the clock can be read here.
    pub fn available(self) -> bool {
        self == Clock::Wall || crate::cputime::thread_cpu_ns().is_some()
    }
}


/// One result: a workload × filter × engine.
#[derive(Clone, Debug, PartialEq)]
pub struct Measurement {
    /// Workload name.
    pub workload: String,
    /// Which run of the workload (`sift bench --repeat`), from 1.
    pub run: usize,
    /// Filter name.
    pub filter: String,
    /// Filter expression.
    pub expression: String,
    /// Engine name.
    pub engine: String,
    /// Packets per pass.
    pub packets: usize,
    /// Samples taken.
    pub samples: usize,
    /// Whole passes per sample.
    pub passes_per_sample: u64,
    /// Median of the samples, in millions of packets per second.
    pub median_mpps: f64,
    /// Slowest sample (Mpps).
    pub min_mpps: f64,
    /// Fastest sample (Mpps).
    pub max_mpps: f64,
    /// Nanoseconds per packet of the median sample.
    pub ns_per_packet: f64,
    /// Nanoseconds per packet of the fastest sample.
    pub min_ns_per_packet: f64,
    /// Nanoseconds per packet of the slowest sample.
    pub max_ns_per_packet: f64,
    /// Compile time in nanoseconds: the least over the compile samples.
    pub compile_ns: u64,
    /// Program size (cBPF instructions / code bytes), if meaningful.
    pub program_size: Option<usize>,
    /// Matching packets per pass.
    pub matches: u64,
}

/// One warm-up pass: the match count and how many whole passes make a
/// sample of at least `opts.min_sample_ns`.
pub fn warm_up(runner: &dyn Runner, packets: &[PacketRef<'_>], opts: &SampleOptions) -> (u64, u64) {
    let t = Instant::now();
    let matches = runner.count(black_box(packets));
    // Wall time on purpose: a pass is never shorter on the CPU clock.
    let warm_ns = elapsed_ns(t).max(1);
    (matches, opts.min_sample_ns.div_ceil(warm_ns).max(1))
}

/// One sample: `passes` whole passes, timed (nanoseconds). Fails if a
/// pass's count differs from `matches`.
pub fn one_sample(
    runner: &dyn Runner,
    packets: &[PacketRef<'_>],
    passes: u64,
    matches: u64,
    clock: Clock,
) -> Result<u64, String> {
    let t = clock.now();
    for _ in 0..passes {
        let n = runner.count(black_box(packets));
        if black_box(n) != matches {
            return Err(format!(
                "the engine counted {n} matches on one pass and {matches} on another"
            ));
        }
    }
    Ok(clock.now().saturating_sub(t).max(1))
}

/// Speed samples of one runner: (matches, passes per sample, per-sample
/// elapsed nanoseconds) after one warm-up pass.
pub fn sample(
    runner: &dyn Runner,
    packets: &[PacketRef<'_>],
    opts: &SampleOptions,
) -> Result<(u64, u64, Vec<u64>), String> {
    let (matches, passes) = warm_up(runner, packets, opts);
    let times = (0..opts.samples.max(1))
        .map(|_| one_sample(runner, packets, passes, matches, opts.clock))
        .collect::<Result<Vec<u64>, String>>()?;
    Ok((matches, passes, times))
}

/// The median of sorted values (the mean of the middle two for an even
/// count; NaN for none).
pub(crate) fn median(sorted: &[f64]) -> f64 {
    match sorted.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

/// Where two runners first disagree, for the failure message.
fn first_difference(a: &dyn Runner, b: &dyn Runner, packets: &[Packet]) -> Option<String> {
    let (i, p) = packets
        .iter()
        .enumerate()
        .find(|(_, p)| a.matches(&p.data, p.wire_len) != b.matches(&p.data, p.wire_len))?;
    let head: Vec<String> = p.data.iter().take(64).map(|b| format!("{b:02x}")).collect();
    Some(format!(
        "first difference at packet #{} (caplen {}, wire length {}): {}{}",
        i + 1,
        p.data.len(),
        p.wire_len,
        head.join(""),
        if p.data.len() > 64 { "…" } else { "" }
    ))
}

/// Benchmarks one filter on one workload with every engine that applies.
/// `progress` is told about each result as it is measured. Fails if an
/// engine does not compile the filter or if match counts disagree.
pub fn bench_filter(
    workload: &Workload,
    filter: &FilterSpec,
    engines: &[EngineSpec],
    opts: &SampleOptions,
    progress: &mut dyn FnMut(&Measurement),
) -> Result<Vec<Measurement>, String> {
    if workload.packets.is_empty() {
        return Err(format!("workload {} has no packets", workload.name));
    }
    let setup = Setup::for_capture(workload.linktype, workload.snaplen);
    // Build every engine first, then warm each up, then take the samples
    // round-robin so that a burst of load on the machine hits every engine
    // alike, each round starting one engine later (A B C, B C A, C A B,
    // ...) so that no engine always follows the same one: on the
    // 1M-packet workloads a pass right after libpcap's took about 10%
    // longer than the same pass elsewhere in the round (`ip` on `mixed`,
    // 2026-11-27). The builds whose times are the compile figures go
    // round-robin too, each timed right after an untimed build of the
    // same engine, so that it finds that engine's code and data in the
    // caches as a run of builds of one engine would. Each engine's figure
    // is its least time: compiling does the same work every time, and on
    // a shared machine interruptions of ~1 µs hit some builds and not
    // others, often most builds of a filter in a row (seen in every stage
    // of sift's compile alike, 2026-11-27): over 22 runs on `pingflood`,
    // 8 of 440 medians of the JIT's builds came to more than 0.9× of
    // libpcap's (up to 1.8×), and none of the least times (at most 0.84×).
    let mut compile_times: Vec<Vec<u64>> = vec![Vec::new(); engines.len()];
    let mut last: Vec<Option<engines::Built>> = engines.iter().map(|_| None).collect();
    for round in 0..opts.compile_samples.max(1) {
        for (i, e) in engines.iter().enumerate() {
            // An engine that does not apply to the filter said so in round 0.
            if round > 0 && last[i].is_none() {
                continue;
            }
            // Untimed (an error shows in the timed build that follows).
            let _ = (e.build)(filter, &setup);
            let t = opts.clock.now();
            let built = (e.build)(filter, &setup).map_err(|m| {
                format!(
                    "engine {} cannot compile filter {} ({}): {m}",
                    e.name, filter.name, filter.expr
                )
            })?;
            let total = opts.clock.now().saturating_sub(t);
            let Some(b) = built else { continue };
            // The engine's own figure (e.g. `pcap_compile` alone) unless
            // it exceeds the whole build on the chosen clock.
            compile_times[i].push(if opts.clock == Clock::Wall { b.compile_ns } else { b.compile_ns.min(total) });
            last[i] = Some(b);
        }
    }
    let mut runners: Vec<(&'static str, engines::Built)> = Vec::new();
    for ((e, times), built) in engines.iter().zip(&compile_times).zip(last) {
        if let Some(mut b) = built {
            b.compile_ns = times.iter().copied().min().unwrap_or(b.compile_ns);
            runners.push((e.name, b));
        }
    }
    let refs = workload.packet_refs();
    let packets = &refs[..];
    let warm: Vec<(u64, u64)> = runners
        .iter()
        .map(|r| warm_up(r.1.runner.as_ref(), packets, opts))
        .collect();
    let mut times: Vec<Vec<u64>> = vec![Vec::with_capacity(opts.samples); runners.len()];
    for round in 0..opts.samples.max(1) {
        for k in 0..runners.len() {
            let i = (round + k) % runners.len();
            let (name, b) = &runners[i];
            let t = one_sample(b.runner.as_ref(), packets, warm[i].1, warm[i].0, opts.clock)
                .map_err(|m| format!("{name} on {} / {}: {m}", workload.name, filter.name))?;
            times[i].push(t);
        }
    }
    let n = packets.len() as f64;
    let mut results = Vec::with_capacity(runners.len());
    for (i, (name, b)) in runners.iter().enumerate() {
        let (matches, passes) = warm[i];
        let mut mpps: Vec<f64> = times[i]
            .iter()
            .map(|&t| n * passes as f64 * 1e3 / t as f64)
            .collect();
        mpps.sort_by(f64::total_cmp);
        let med = median(&mpps);
        let (lo, hi) = (
            mpps.first().copied().unwrap_or(f64::NAN),
            mpps.last().copied().unwrap_or(f64::NAN),
        );
        let m = Measurement {
            workload: workload.name.clone(),
            run: workload.run,
            filter: filter.name.clone(),
            expression: filter.expr.clone(),
            engine: name.to_string(),
            packets: packets.len(),
            samples: times[i].len(),
            passes_per_sample: passes,
            median_mpps: med,
            min_mpps: lo,
            max_mpps: hi,
            ns_per_packet: 1e3 / med,
            min_ns_per_packet: 1e3 / hi,
            max_ns_per_packet: 1e3 / lo,
            compile_ns: b.compile_ns,
            program_size: b.runner.program_size(),
            matches,
        };
        progress(&m);
        results.push(m);
    }
    if let Some(first) = results.first() {
        if results.iter().any(|r| r.matches != first.matches) {
            let counts: Vec<String> = results
                .iter()
                .map(|r| format!("{}={}", r.engine, r.matches))
                .collect();
            let mut msg = format!(
                "MATCH COUNTS DISAGREE on workload {} filter {} ({:?}): {}",
                workload.name,
                filter.name,
                filter.expr,
                counts.join(", ")
            );
            let odd = results
                .iter()
                .position(|r| r.matches != first.matches)
                .unwrap_or(0);
            if let (Some(a), Some(b)) = (runners.first(), runners.get(odd)) {
                if let Some(d) =
                    first_difference(a.1.runner.as_ref(), b.1.runner.as_ref(), &workload.packets)
                {
                    msg.push_str(&format!("\n  {} vs {}: {d}", a.0, b.0));
                }
            }
            return Err(msg);
        }
    }
    Ok(results)
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Flaky(std::cell::Cell<u64>);
    impl Runner for Flaky {
        fn matches(&self, _: &[u8], _: u32) -> bool {
            true
        }
        fn count(&self, _: &[PacketRef<'_>]) -> u64 {
            self.0.set(self.0.get() + 1);
            self.0.get()
        }
    }

    #[test]
    fn unstable_counts_fail() {
        let w = Workload::generated(Kind::Web, 10, 1);
        let opts = SampleOptions {
            samples: 2,
            min_sample_ns: 0,
            ..Default::default()
        };
        assert!(sample(&Flaky(Default::default()), &w.packet_refs(), &opts).is_err());
    }

    #[test]
    fn median_of_even_and_odd() {
        assert_eq!(median(&[1.0, 2.0, 10.0]), 2.0);
        assert_eq!(median(&[1.0, 2.0, 4.0, 10.0]), 3.0);
        assert!(median(&[]).is_nan());
    }
}
