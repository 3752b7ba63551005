//! libpcap's own programs: for every (DLT, expression) pair of libpcap's
//! TESTrun accept corpus, the installed tcpdump 4.99.3 (libpcap 1.10.3)
//! prints the program with `-ddd`, unoptimized (`-O`) and optimized; the JIT
//! must agree with `sift_bpf::interp` on random packets (structured Ethernet
//! frames, raw IP packets and random bytes, truncated at many lengths), one
//! packet at a time and counting them all (`count_matches`).
//! These programs include shapes sift's code generator never emits
//! (`protochain`'s backward `ja`, scratch reads before writes, long
//! programs). Without tcpdump or the corpus the test prints a notice and
//! passes.

use sift_bpf::interp::Program;
use sift_bpf::text::parse_program;
use sift_ir::LinkType;
use sift_jit::JitFilter;
use sift_testkit::{packets, Rng};
use std::collections::BTreeSet;
use std::process::Command;

const CORPUS: &str = "/work/shared/data/libpcap-tests/testrun-filters.tsv";

fn corpus() -> Option<Vec<(String, String)>> {
    let text = std::fs::read_to_string(CORPUS).ok()?;
    let mut pairs = BTreeSet::new();
    for line in text.lines().skip(1) {
        let cols: Vec<&str> = line.split('\t').collect();
        if cols.len() < 10 || cols[6] != "accept" || !cols[8].is_empty() || cols[1].starts_with('_')
        {
            continue;
        }
        pairs.insert((cols[0].to_string(), cols[1].to_string()));
    }
    Some(pairs.into_iter().collect())
}

fn tcpdump_ddd(optimize: bool, dlt: &str, expr: &str) -> Option<String> {
    let mut cmd = Command::new("tcpdump");
    if !optimize {
        cmd.arg("-O");
    }
    let out = cmd.args(["-ddd", "-y", dlt, "--", expr]).output().ok()?;
    if !out.status.success() {
        return None;
    }
    String::from_utf8(out.stdout).ok()
}

fn test_packets(seed: u64) -> Vec<(Vec<u8>, u32)> {
    let mut rng = Rng::new(seed);
    let mut out = Vec::new();
    for lt in [
        LinkType::EN10MB,
        LinkType::RAW,
        LinkType::LINUX_SLL,
        LinkType::NULL,
    ] {
        for _ in 0..40 {
            out.push(packets::random_packet(&mut rng, lt));
        }
    }
    for _ in 0..20 {
        let n = rng.index(100);
        out.push((rng.bytes(n), n as u32));
    }
    // Every truncation of a few full frames.
    for lt in [LinkType::EN10MB, LinkType::RAW] {
        let frame = packets::full_frame(&mut rng, lt);
        for cut in 0..=frame.len().min(80) {
            out.push((frame[..cut].to_vec(), frame.len() as u32));
        }
    }
    out
}

#[test]
fn tcpdump_programs_agree_with_the_interpreter() {
    if !JitFilter::is_supported() {
        return;
    }
    if Command::new("tcpdump").arg("--version").output().is_err() {
        eprintln!("tcpdump not installed: skipped");
        return;
    }
    let Some(pairs) = corpus() else {
        eprintln!("{CORPUS} missing: skipped");
        return;
    };
    let packets = test_packets(7);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 8);
    let (programs, runs, backward) = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let (mut programs, mut runs, mut backward) = (0usize, 0usize, 0usize);
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some((dlt, expr)) = pairs.get(i) else { break };
                        for optimize in [false, true] {
                            let Some(ddd) = tcpdump_ddd(optimize, dlt, expr) else { continue };
                            let prog = parse_program(&ddd).expect("tcpdump's -ddd parses");
                            let interp = Program::new(&prog).expect("the interpreter runs libpcap's programs");
                            let jit = JitFilter::from_program(&prog).expect("the JIT compiles libpcap's programs");
                            if prog.iter().any(|i| i.code == 0x05 && (i.k as i32) < 0) {
                                backward += 1;
                            }
                            let mut accepted = 0;
                            for (data, wire) in &packets {
                                let want = interp.run(data, *wire);
                                assert_eq!(
                                    jit.run(data, *wire),
                                    want,
                                    "{dlt} {expr:?} (optimize {optimize})\npacket {data:02x?} wire {wire}"
                                );
                                accepted += u64::from(want != 0);
                            }
                            // The count function agrees.
                            let counted = jit.count_matches(&packets, |(d, w)| (&d[..], *w));
                            assert_eq!(counted, accepted, "{dlt} {expr:?} (optimize {optimize}): count");
                            let refs: Vec<sift_jit::PacketRef> =
                                packets.iter().map(|(d, w)| sift_jit::PacketRef::new(d, *w)).collect();
                            assert_eq!(jit.count_packets(&refs), accepted, "{dlt} {expr:?} (optimize {optimize}): in place");
                            let mut verdicts = vec![false; refs.len()];
                            assert_eq!(jit.verdicts(&refs, &mut verdicts), accepted, "{dlt} {expr:?}: verdicts");
                            for ((d, w), v) in packets.iter().zip(&verdicts) {
                                assert_eq!(*v, interp.run(d, *w) != 0, "{dlt} {expr:?} (optimize {optimize}): verdict of {d:02x?}");
                            }
                            programs += 1;
                            runs += packets.len();
                        }
                    }
                    (programs, runs, backward)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("worker"))
            .fold((0, 0, 0), |a, b| (a.0 + b.0, a.1 + b.1, a.2 + b.2))
    });
    eprintln!(
        "{} pairs, {programs} libpcap programs ({backward} with backward jumps), {runs} runs",
        pairs.len()
    );
    assert!(programs > 1000, "only {programs} programs");
}
