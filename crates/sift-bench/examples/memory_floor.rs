//! How close each engine comes to the least time a filter can take per
//! packet on a workload, on this machine: side by side with libpcap and
//! sift's JIT on each standard filter, a pass that only reads byte 12 of
//! every packet (the first byte of the Ethernet type, which every standard
//! filter reads first) and nothing else, over the packets exactly as
//! `sift bench` holds them (one heap block per packet); and a pass that
//! reads bytes 12 and 37 (the low byte of an IPv4 TCP/UDP destination
//! port: what a port filter reads at least, often on a second cache line).
//!
//! Where packets come from memory rather than the caches, the first pass
//! is what the memory system takes to deliver each packet's first line:
//! no filter that looks at the packet can be faster. So `libpcap / floor`
//! is the highest `jit / libpcap` ratio any engine could reach on the
//! filter, and `floor / jit` says which share of that ceiling the JIT
//! reaches. The second pass shows what the second line costs.
//!
//! The passes are sampled in turn (libpcap, JIT, floor, floor with byte
//! 37, libpcap, ...) so that they meet the same state of the caches: a pass
//! that follows passes over the same packets finds more of them in the
//! caches than one that follows work on other memory.
//!
//! `cargo run --release -p sift-bench --example memory_floor -- [WORKLOAD...] [--samples N] [--count N]`
//! (workloads as `sift bench --workload`: a kind or a capture file; default `web pingflood`).

use std::hint::black_box;

use sift_bench::bench::{one_sample, warm_up, Clock, SampleOptions};
use sift_bench::engines::{Runner, Setup, ENGINES};
use sift::PacketRef;
use sift_bench::{standard_filters, workload_for};

/// Reads byte 12 of each packet (none of a shorter one), and byte 37 too
/// if `BYTE_37`, folding the bytes into one value used once at the end: no
/// store or branch per packet, nothing but the loads. Accepts every packet.
/// (The bytes are read at fixed offsets, as a filter reads them: an offset
/// computed from the length, e.g. "the last byte of a shorter packet",
/// would make each load wait for the length and cost a third more.)
struct ReadBytes<const BYTE_37: bool>;

impl<const BYTE_37: bool> ReadBytes<BYTE_37> {
    #[inline]
    fn bytes(data: &[u8]) -> u8 {
        let byte = |k: usize| data.get(k).copied().unwrap_or(0);
        if BYTE_37 {
            byte(12) ^ byte(37)
        } else {
            byte(12)
        }
    }
}

impl<const BYTE_37: bool> Runner for ReadBytes<BYTE_37> {
    fn matches(&self, data: &[u8], _wire_len: u32) -> bool {
        black_box(Self::bytes(data));
        true
    }

    fn count(&self, packets: &[PacketRef<'_>]) -> u64 {
        black_box(packets.iter().fold(0u8, |acc, p| acc ^ Self::bytes(p.data())));
        packets.len() as u64
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

fn main() -> Result<(), String> {
    let mut workloads = Vec::new();
    let (mut samples, mut count) = (10usize, None);
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut number = || args.next().and_then(|n| n.parse().ok()).ok_or(format!("{a} needs a number"));
        match a.as_str() {
            "--samples" => samples = number()?,
            "--count" => count = Some(number()?),
            _ => workloads.push(a),
        }
    }
    if workloads.is_empty() {
        workloads = vec!["web".into(), "pingflood".into()];
    }
    let opts = SampleOptions { samples, clock: Clock::ThreadCpu, ..Default::default() };
    let engine = |name: &str| ENGINES.iter().find(|e| e.name == name).copied().ok_or(format!("no engine {name}"));
    let (libpcap, jit) = (engine("libpcap")?, engine("jit")?);
    for w in &workloads {
        let w = workload_for(w, count, 1)?;
        println!("{} (ns per packet, median of {samples} samples, thread CPU time)", w.summary());
        println!(
            "{:<17} {:>8} {:>8} {:>8} {:>11} {:>12} {:>14} {:>10}",
            "filter", "libpcap", "jit", "floor", "floor+b37", "jit/libpcap", "libpcap/floor", "floor/jit"
        );
        let setup = Setup::for_capture(w.linktype, w.snaplen);
        let (mut achieved, mut ceilings) = (Vec::new(), Vec::new());
        let refs = w.packet_refs();
        for f in standard_filters().iter().filter(|f| !f.expr.trim().is_empty()) {
            let built = |e: sift_bench::engines::EngineSpec| {
                (e.build)(f, &setup)?.map(|b| b.runner).ok_or(format!("{} does not compile {}", e.name, f.name))
            };
            let runners: Vec<Box<dyn Runner>> = match built(libpcap) {
                Ok(l) => vec![l, built(jit)?, Box::new(ReadBytes::<false>), Box::new(ReadBytes::<true>)],
                Err(e) => return Err(format!("{e} (is libpcap installed?)")),
            };
            let warm: Vec<(u64, u64)> = runners.iter().map(|r| warm_up(r.as_ref(), &refs, &opts)).collect();
            let mut ns: Vec<Vec<f64>> = vec![Vec::new(); runners.len()];
            for _ in 0..samples.max(1) {
                for (i, r) in runners.iter().enumerate() {
                    let (matches, passes) = warm[i];
                    let t = one_sample(r.as_ref(), &refs, passes, matches, opts.clock)?;
                    ns[i].push(t as f64 / (passes as f64 * w.packets.len() as f64));
                }
            }
            let [l, j, floor, floor37] = [0, 1, 2, 3].map(|i| median(ns[i].clone()));
            achieved.push(l / j);
            ceilings.push(l / floor);
            println!(
                "{:<17} {:>8.2} {:>8.2} {:>8.2} {:>11.2} {:>11.2}× {:>13.2}× {:>9.0}%",
                f.name,
                l,
                j,
                floor,
                floor37,
                l / j,
                l / floor,
                100.0 * floor / j
            );
        }
        println!(
            "median over the filters: jit/libpcap {:.2}×, libpcap/floor (the most any engine could reach) {:.2}×\n",
            median(achieved),
            median(ceilings)
        );
    }
    Ok(())
}
