//! Rough speed comparison (information only): libpcap's `bpf_filter`, the
//! `sift_bpf` interpreter, the JIT one packet per call and the JIT's batch
//! entry point, all running sift's cBPF for a few standard filters over the
//! Ethernet captures given on the command line (default: samples/v4.pcap),
//! held in memory and repeated to about 1M packets per pass.
//!
//! `cargo run --release -p sift-jit --example jit_vs_interp -- [FILE.pcap...]`

use sift_bpf::codegen::{compile, CodegenOptions};
use sift_bpf::interp::Program;
use sift_ir::{LinkType, LowerOptions};
use sift_jit::JitFilter;
use std::hint::black_box;
use std::time::Instant;

const FILTERS: &[&str] = &[
    "ip",
    "tcp",
    "tcp port 80",
    "ip src 192.168.0.1 or ip dst 10.0.0.1",
    "net 145.254.160.0/24 and tcp",
    "ip6 and udp",
    "tcp[20:1] > 65 and tcp[20:1] < 90",
    "tcp[tcpflags] & (tcp-syn|tcp-fin) != 0 and not src and dst net 10.0.0.0/8",
    "(tcp and portrange 0-1024) or (udp and portrange 1025-2048)",
];

fn main() {
    let mut files: Vec<String> = std::env::args().skip(1).collect();
    if files.is_empty() {
        files.push("samples/v4.pcap".into());
    }
    let mut base: Vec<(Vec<u8>, u32)> = Vec::new();
    for f in &files {
        let Ok(cap) = sift_pcap::Capture::open(std::path::Path::new(f)) else {
            continue;
        };
        if cap.linktype() != 1 {
            continue;
        }
        for p in cap.packets().flatten() {
            base.push((p.data.to_vec(), p.wire_len));
        }
    }
    if base.is_empty() {
        eprintln!("no Ethernet packets");
        return;
    }
    let reps = (1_000_000 / base.len()).max(1);
    let packets: Vec<(&[u8], u32)> = (0..reps)
        .flat_map(|_| base.iter().map(|(d, w)| (d.as_slice(), *w)))
        .collect();
    println!(
        "{} distinct packets x {reps} = {} per pass; best of 9 passes, ns/packet; compile times in microseconds",
        base.len(),
        packets.len()
    );
    println!(
        "{:<60} {:>7} {:>7} {:>7} {:>7} {:>7} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6}",
        "filter",
        "libpcap",
        "interp",
        "jit",
        "batch",
        "jit-ir",
        "insns",
        "bytes",
        "ir-b",
        "c-jit",
        "c-ir",
        "c-pcap"
    );
    let mut out = vec![0u32; 256];
    for expr in FILTERS {
        let filter = sift_syntax::parse(expr).expect("parses");
        let pred = sift_ir::lower(
            &filter,
            &LowerOptions {
                linktype: LinkType::EN10MB,
                ..LowerOptions::default()
            },
        )
        .expect("lowers");
        let prog = compile(&pred, &CodegenOptions::default()).expect("compiles");
        let interp = Program::new(&prog).expect("runs");
        let jit = JitFilter::from_program(&prog).expect("JIT");
        let jit_ir = JitFilter::from_pred(&pred).expect("JIT from the IR");
        let compile_us = |f: &dyn Fn() -> JitFilter| {
            let mut t: Vec<f64> = (0..21)
                .map(|_| {
                    let start = Instant::now();
                    black_box(f());
                    start.elapsed().as_nanos() as f64 / 1000.0
                })
                .collect();
            t.sort_by(f64::total_cmp);
            t[10]
        };
        let c_jit = compile_us(&|| JitFilter::from_program(&prog).expect("JIT"));
        let c_ir = compile_us(&|| JitFilter::from_pred(&pred).expect("JIT"));
        let c_pcap = {
            let mut t: Vec<f64> = (0..21)
                .map(|_| {
                    let start = Instant::now();
                    black_box(
                        sift_testkit::libpcap::compile(expr, 1, 262_144, None, true)
                            .expect("libpcap"),
                    );
                    start.elapsed().as_nanos() as f64 / 1000.0
                })
                .collect();
            t.sort_by(f64::total_cmp);
            t[10]
        };
        let lib = sift_testkit::libpcap::CheckedProgram::new(&prog).expect("libpcap runs it");
        let time = |f: &mut dyn FnMut() -> usize| -> (f64, usize) {
            let mut samples = Vec::new();
            let mut n = 0;
            for _ in 0..9 {
                let t = Instant::now();
                n = black_box(f());
                samples.push(t.elapsed().as_nanos() as f64 / packets.len() as f64);
            }
            samples.sort_by(f64::total_cmp);
            (samples[0], n)
        };
        let (l, nl) = time(&mut || {
            packets
                .iter()
                .filter(|(d, w)| lib.filter(d, *w) != 0)
                .count()
        });
        let (i, ni) = time(&mut || {
            packets
                .iter()
                .filter(|(d, w)| interp.run(d, *w) != 0)
                .count()
        });
        let (j, nj) = time(&mut || packets.iter().filter(|(d, w)| jit.run(d, *w) != 0).count());
        let (r, nr) = time(&mut || {
            packets
                .iter()
                .filter(|(d, w)| jit_ir.run(d, *w) != 0)
                .count()
        });
        let (b, nb) = time(&mut || {
            let mut n = 0;
            for chunk in packets.chunks(256) {
                jit.run_batch(chunk, &mut out);
                n += out[..chunk.len()].iter().filter(|&&v| v != 0).count();
            }
            n
        });
        assert!(
            nl == ni && ni == nj && nj == nb && nb == nr,
            "match counts differ for {expr}"
        );
        println!(
            "{expr:<60} {l:>7.2} {i:>7.2} {j:>7.2} {b:>7.2} {r:>7.2} {:>6} {:>6} {:>6} {c_jit:>6.1} {c_ir:>6.1} {c_pcap:>6.1}",
            prog.len(),
            jit.code_size(),
            jit_ir.code_size()
        );
    }
}
