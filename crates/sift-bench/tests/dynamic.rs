//! `sift bench --dynamic`, the FTP trace and `ftpcap` (issue 5).

use sift_bench::dynamic::{
    ftp_conns, ftp_expr, run_dynamic_bench, DynamicFtp, OPERATIONS, STRATEGIES,
};
use sift_bench::ftpcap::{self, parse_227, GroundTruth, Mode};
use sift_bench::gen::{ftp_trace, generate, FtpOptions, Kind, Packet};

fn small_trace() -> FtpOptions {
    FtpOptions {
        servers: 3,
        conns_per_server: 4,
        background_pps: 100_000,
        conn_interval_ns: 300_000,
        data_interval_ns: 70_000,
        tail_ns: 1_000_000,
        ..FtpOptions::default()
    }
}

/// The value of `"key":` in a one-line JSON object (numbers, null, strings
/// without escapes).
fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let at = line.find(&format!("\"{key}\":"))? + key.len() + 3;
    let rest = &line[at..];
    let end = if let Some(r) = rest.strip_prefix('"') {
        r.find('"')? + 2
    } else {
        rest.find([',', '}'])?
    };
    Some(&rest[..end])
}

#[test]
fn bench_dynamic_json_lines_have_the_documented_shape() {
    let args: Vec<String> = [
        "bench",
        "--dynamic",
        "--connections",
        "1,10",
        "--samples",
        "5",
        "--recompile-samples",
        "1",
        "--json",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let b = sift_bench::parse_bench_args(&args).unwrap();
    assert!(b.dynamic && b.json);
    let o = sift_bench::dynamic_options(&b);
    assert_eq!(
        (o.connections.clone(), o.samples, o.recompile_samples),
        (vec![1, 10], 5, 1)
    );
    let mut lines = Vec::new();
    let all = run_dynamic_bench(&o, &mut |m| lines.push(m.json_line())).unwrap();
    let libpcap = sift_bench::libpcap::Libpcap::get().is_some();
    let strategies = if libpcap { STRATEGIES.len() } else { 2 };
    assert_eq!(all.len(), 2 * OPERATIONS.len() * strategies);
    for l in &lines {
        assert!(
            l.starts_with('{') && l.ends_with('}') && !l.contains('\n'),
            "{l}"
        );
        let op = field(l, "operation").unwrap().trim_matches('"');
        assert!(OPERATIONS.iter().any(|o| o.0 == op), "{l}");
        let st = field(l, "strategy").unwrap().trim_matches('"');
        assert!(STRATEGIES.iter().any(|s| s.0 == st), "{l}");
        let n: usize = field(l, "connections").unwrap().parse().unwrap();
        assert!(n == 1 || n == 10, "{l}");
        let median: u64 = field(l, "median_ns").unwrap().parse().unwrap();
        let p99: u64 = field(l, "p99_ns").unwrap().parse().unwrap();
        assert!(median > 0 && p99 >= median, "{l}");
        let samples: usize = field(l, "samples").unwrap().parse().unwrap();
        assert_eq!(samples, if st == "dynamic" { 5 } else { 1 }, "{l}");
        assert_eq!(field(l, "error"), Some("null"), "{l}");
    }
}

#[test]
fn sift_recompile_runs_past_the_cbpf_limit() {
    // Since the IR optimizer, 200 connections fit in far fewer than 4096
    // classic BPF instructions; 2000 do not, but the JIT compiles the
    // predicate directly, with no such limit.
    let o = sift_bench::dynamic::DynamicBenchOptions {
        connections: vec![200, 2000],
        samples: 1,
        recompile_samples: 1,
        strategies: vec!["sift-recompile".into()],
    };
    let expr = sift_bench::dynamic::ftp_expr(&sift_bench::dynamic::ftp_conns(2000));
    let too_large = sift::compile(&expr, &sift::CompileOptions::default()).err();
    assert!(too_large.is_some_and(|e| e.to_string().contains("too large")));
    let all = run_dynamic_bench(&o, &mut |_| {}).unwrap();
    let add = all.iter().find(|m| m.operation == "add-port" && m.connections == 2000).unwrap();
    if sift_jit::JitFilter::is_supported() {
        assert!(add.error.is_none() && add.samples == 1, "{add:?}");
    } else {
        assert!(add.error.as_deref().is_some_and(|e| e.contains("too large")), "{add:?}");
        assert!(add.json_line().contains("\"median_ns\":null"));
    }
    let remove = all.iter().find(|m| m.operation == "remove-pass" && m.connections == 200).unwrap();
    assert!(remove.error.is_none() && remove.samples == 1);
}

#[test]
fn ftp_trace_is_deterministic_and_its_replies_name_the_data_connections() {
    let o = small_trace();
    let a = ftp_trace(&o);
    let b = ftp_trace(&o);
    assert_eq!(a.packets, b.packets);
    assert_eq!(a.conns, b.conns);
    assert_ne!(
        ftp_trace(&FtpOptions {
            seed: 2,
            ..o.clone()
        })
        .packets,
        a.packets
    );
    assert!(
        a.packets.windows(2).all(|w| w[0].ts_ns <= w[1].ts_ns),
        "timestamp order"
    );
    assert_eq!(a.conns.len(), 12);
    // Every reply parses to its connection's server and port; the data
    // connection's packets all come after it and use that address and port.
    for c in &a.conns {
        let p = &a.packets[c.reply_index];
        let t = ftpcap::tcp_view(&p.data).unwrap();
        assert_eq!((t.src, t.sport), (c.server, 21));
        assert!(t.payload.starts_with(b"227 Entering Passive Mode ("));
        assert_eq!(parse_227(t.payload), Some((c.server, c.port)));
        assert!(c.packets.len() > 3 && c.packets.iter().all(|&i| i > c.reply_index));
        for &i in &c.packets {
            let t = ftpcap::tcp_view(&a.packets[i].data).unwrap();
            assert!(
                (t.src, t.sport) == (c.server, c.port) || (t.dst, t.dport) == (c.server, c.port)
            );
        }
        // The first data packet is the client's SYN, syn_delay after the reply.
        assert_eq!(a.packets[c.packets[0]].ts_ns - p.ts_ns, o.syn_delay_ns);
        assert_eq!(a.packets[c.packets[0]].data[47], 0x02);
    }
    // The ground truth ftpcap reads from the packets agrees.
    let g = GroundTruth::of(&a.packets);
    let keys: Vec<(u32, u16)> = a.conns.iter().map(|c| (c.server, c.port)).collect();
    assert_eq!(g.conns, keys);
    assert_eq!(
        g.reply_index,
        a.conns.iter().map(|c| c.reply_index).collect::<Vec<_>>()
    );
    assert_eq!(
        g.packets,
        a.conns
            .iter()
            .map(|c| c.packets.clone())
            .collect::<Vec<_>>()
    );
    // Background at the configured rate (±10%).
    let ftp: usize = 2 * a.conns.len() + a.conns.iter().map(|c| c.packets.len()).sum::<usize>();
    let secs = (a.packets.last().unwrap().ts_ns - a.packets[0].ts_ns) as f64 / 1e9;
    let rate = (a.packets.len() - ftp) as f64 / secs;
    assert!((rate - 100_000.0).abs() < 10_000.0, "background {rate} pps");
    assert_eq!(
        parse_227(b"227 Entering Passive Mode (1,2,3,4,5,6)."),
        Some((0x0102_0304, 0x0506))
    );
    assert_eq!(parse_227(b"227 Entering Passive Mode (1,2,3,4,5)."), None);
    assert_eq!(parse_227(b"227 x (1,2,3,4,5,6,7)"), None);
    assert_eq!(parse_227(b"200 (1,2,3,4,5,6)"), None);
}

#[test]
fn default_ftp_trace_and_counted_workload() {
    let t = ftp_trace(&FtpOptions::default());
    assert_eq!(t.conns.len(), 200);
    assert_eq!(t.packets.len(), 135_600);
    let servers: std::collections::HashSet<u32> = t.conns.iter().map(|c| c.server).collect();
    assert_eq!(servers.len(), 10);
    // `generate` scales the background to the count, same seed same packets.
    let g: Vec<Packet> = generate(Kind::Ftp, 50_000, 3);
    assert_eq!(g.len(), 50_000);
    assert_eq!(g, generate(Kind::Ftp, 50_000, 3));
    assert_eq!(GroundTruth::of(&g).conns.len(), 200);
}

/// `ftpcap` with a zero-latency update and with a fixed latency: the exact
/// per-connection counts, worked out from the trace's own description.
#[test]
fn ftpcap_counts_exactly_with_simulated_latency() {
    let t = ftp_trace(&small_trace());
    let truth = GroundTruth::of(&t.packets);
    let mut strategies = vec!["dynamic", "sift-recompile"];
    if sift_bench::libpcap::Libpcap::get().is_some() {
        strategies.push("libpcap-recompile");
    }
    for latency in [0u64, 1, 50_000, 120_000, 400_000] {
        let expected: Vec<u64> = t
            .conns
            .iter()
            .map(|c| {
                let from = t.packets[c.reply_index].ts_ns + latency;
                c.packets
                    .iter()
                    .filter(|&&i| t.packets[i].ts_ns < from)
                    .count() as u64
            })
            .collect();
        if latency <= 1 {
            assert!(expected.iter().all(|&m| m == 0));
        }
        if latency == 120_000 {
            // SYN (+50 µs) and SYN-ACK (+100 µs) go by.
            assert!(expected.iter().all(|&m| m == 2), "{expected:?}");
        }
        for s in &strategies {
            let r = ftpcap::run(&t.packets, &truth, s, Mode::Simulated(latency))
                .unwrap()
                .unwrap();
            assert_eq!(r.missed, expected, "{s} at {latency} ns");
            assert_eq!(r.never_captured, 0);
            assert_eq!(r.update_ns.len(), 12, "{s}");
            // Every control and data packet captured after the updates, and no background.
            let data: u64 = t.conns.iter().map(|c| c.packets.len() as u64).sum();
            assert_eq!(r.captured, 24 + data - expected.iter().sum::<u64>(), "{s}");
        }
    }
    // Inline: each update measured for real; the counts follow the measured durations.
    let r = ftpcap::run(&t.packets, &truth, "dynamic", Mode::Inline)
        .unwrap()
        .unwrap();
    assert_eq!(r.latency_ns.len(), 12);
    for (c, (l, m)) in t.conns.iter().zip(r.latency_ns.iter().zip(&r.missed)) {
        let from = t.packets[c.reply_index].ts_ns + l.unwrap();
        assert_eq!(
            *m,
            c.packets
                .iter()
                .filter(|&&i| t.packets[i].ts_ns < from)
                .count() as u64
        );
    }
}

/// The dynamic FTP filter, updated connection by connection, keeps the
/// verdicts of a static compile of the equivalent expression.
#[test]
fn dynamic_ftp_filter_follows_the_expression() {
    let t = ftp_trace(&FtpOptions {
        background_pps: 50_000,
        ..small_trace()
    });
    let conns: Vec<(u32, u16)> = t.conns.iter().map(|c| (c.server, c.port)).collect();
    let mut f = DynamicFtp::new(&[]).unwrap();
    let opts = sift::CompileOptions::default();
    let check = |f: &DynamicFtp, conns: &[(u32, u16)]| {
        let s = sift::Filter::with_engine(&ftp_expr(conns), &opts, sift::Engine::Interp).unwrap();
        for (i, p) in t.packets.iter().enumerate().step_by(7) {
            for cut in [p.data.len(), 40, 36, 20] {
                let d = &p.data[..cut.min(p.data.len())];
                assert_eq!(
                    f.filter().matches(d, p.wire_len),
                    s.matches(d, p.wire_len),
                    "packet {i} cut {cut}, {conns:?}"
                );
            }
        }
    };
    for k in 0..conns.len() {
        f.add(conns[k].0, conns[k].1).unwrap();
        if k % 5 == 4 || k + 1 == conns.len() {
            check(&f, &conns[..=k]);
        }
    }
    // Built in one go from the expression: the same.
    let g = DynamicFtp::new(&conns).unwrap();
    check(&g, &conns);
    f.remove(conns[3].0, conns[3].1).unwrap();
    let mut rest = conns.clone();
    rest.remove(3);
    check(&f, &rest);
    assert_eq!(ftp_conns(12).len(), 12);
}

/// The decoders ftpcap runs on capture files never panic: every truncation
/// of the trace's packets, and random bytes behind an IPv4/TCP header.
#[test]
fn ftpcap_decoders_take_any_bytes() {
    let t = ftp_trace(&FtpOptions {
        background_pps: 20_000,
        ..small_trace()
    });
    let mut cut: Vec<Packet> = Vec::new();
    for p in t.packets.iter().step_by(3) {
        for n in 0..p.data.len().min(120) {
            let d = &p.data[..n];
            let _ = ftpcap::tcp_view(d);
            let _ = ftpcap::reply_in(d);
            cut.push(Packet {
                data: d.to_vec(),
                ..p.clone()
            });
        }
    }
    let _ = GroundTruth::of(&cut);
    let mut rng = sift_bench::gen::Rng::new(9);
    let head = &t.packets[t.conns[0].reply_index].data[..54];
    for _ in 0..20_000 {
        let mut d = head.to_vec();
        let n = rng.below(80) as usize;
        rng.fill(&mut d, n);
        // Random IHL, data offset, total length.
        d[14] = 0x40 | rng.below(16) as u8;
        d[46] = (rng.below(256)) as u8;
        d[16] = rng.below(256) as u8;
        let _ = ftpcap::tcp_view(&d);
        let _ = ftpcap::reply_in(&d);
        let mut b = b"227 ".to_vec();
        rng.fill(&mut b, n);
        let _ = parse_227(&b);
    }
}
