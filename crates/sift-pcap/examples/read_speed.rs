//! Rough reader throughput: builds an in-memory pcap and pcapng file of
//! small packets and times a full iteration (touching one byte and the
//! timestamp of every packet), or reads the files given as arguments.
//!
//!     cargo run --release -p sift-pcap --example read_speed [FILE...]

use std::time::Instant;

use sift_pcap::Capture;

fn synth_pcap(n: usize, size: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(24 + n * (16 + size));
    for x in [0xa1b2_c3d4u32.to_le_bytes(), [2, 0, 4, 0], [0; 4], [0; 4], 65535u32.to_le_bytes(), 1u32.to_le_bytes()] {
        v.extend_from_slice(&x);
    }
    for i in 0..n {
        for x in [(i / 1000) as u32, (i % 1000) as u32, size as u32, size as u32] {
            v.extend_from_slice(&x.to_le_bytes());
        }
        v.extend(std::iter::repeat_n(i as u8, size));
    }
    v
}

fn synth_pcapng(n: usize, size: usize) -> Vec<u8> {
    let mut v = Vec::new();
    let block = |v: &mut Vec<u8>, t: u32, body: &[u8]| {
        let total = 12 + body.len() as u32;
        v.extend_from_slice(&t.to_le_bytes());
        v.extend_from_slice(&total.to_le_bytes());
        v.extend_from_slice(body);
        v.extend_from_slice(&total.to_le_bytes());
    };
    let mut shb = 0x1A2B_3C4Du32.to_le_bytes().to_vec();
    shb.extend_from_slice(&[1, 0, 0, 0]);
    shb.extend_from_slice(&u64::MAX.to_le_bytes());
    block(&mut v, 0x0A0D_0D0A, &shb);
    block(&mut v, 1, &[1, 0, 0, 0, 0, 0, 0, 0]);
    let padded = size.div_ceil(4) * 4;
    let mut body = vec![0u8; 20 + padded];
    for i in 0..n {
        let ts = 1_600_000_000_000_000u64 + i as u64;
        body[4..8].copy_from_slice(&((ts >> 32) as u32).to_le_bytes());
        body[8..12].copy_from_slice(&(ts as u32).to_le_bytes());
        body[12..16].copy_from_slice(&(size as u32).to_le_bytes());
        body[16..20].copy_from_slice(&(size as u32).to_le_bytes());
        block(&mut v, 6, &body);
    }
    v
}

fn time(name: &str, cap: &Capture, rounds: usize) {
    for _ in 0..3 {
        let t = Instant::now();
        let (mut n, mut sum) = (0u64, 0u64);
        for _ in 0..rounds {
            for p in cap.packets() {
                let p = p.expect("no damage");
                n += 1;
                sum = sum.wrapping_add(u64::from(p.data.first().copied().unwrap_or(0)) + u64::from(p.wire_len));
            }
        }
        let dt = t.elapsed().as_secs_f64();
        println!("{name}: {n} packets in {:.3} s = {:.1} Mpps (checksum {sum})", dt, n as f64 / dt / 1e6);
    }
}

fn main() {
    let mut files: Vec<String> = std::env::args().skip(1).collect();
    if files.first().map(String::as_str) == Some("--small") {
        // For instruction counting (valgrind --tool=callgrind).
        let n = 100_000;
        let pcap = Capture::from_bytes(synth_pcap(n, 60)).unwrap();
        let ng = Capture::from_bytes(synth_pcapng(n, 60)).unwrap();
        let sum = |c: &Capture| c.packets().map(|p| u64::from(p.unwrap().wire_len)).sum::<u64>();
        println!("{} {}", sum(&pcap), sum(&ng));
        files.clear();
        return;
    }
    if files.is_empty() {
        // Cache-resident (parser cost) and large (memory-bound) inputs.
        for (n, rounds) in [(20_000, 250), (5_000_000, 1)] {
            time(&format!("pcap 60 B x {n}"), &Capture::from_bytes(synth_pcap(n, 60)).unwrap(), rounds);
            time(&format!("pcapng 60 B x {n}"), &Capture::from_bytes(synth_pcapng(n, 60)).unwrap(), rounds);
        }
    }
    for f in files {
        let cap = Capture::open(std::path::Path::new(&f)).expect("open");
        time(&f, &cap, 1);
    }
}
