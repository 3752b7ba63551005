//! End-to-end tests of the generator and the harness: determinism, the
//! content of each workload, engine agreement, JSON and SVG output.

use sift_bench::engines::{EngineSpec, Runner, ENGINES};
use sift_bench::{
    bench_filter, generate, report, standard_filters, FilterSpec, Kind, Packet, SampleOptions,
    Workload,
};

fn count(expr: &str, packets: &[Packet]) -> usize {
    let f = sift::Filter::new(expr, &sift::CompileOptions::default()).expect("compiles");
    packets
        .iter()
        .filter(|p| f.matches(&p.data, p.wire_len))
        .count()
}

fn fast() -> SampleOptions {
    SampleOptions {
        samples: 2,
        min_sample_ns: 0,
        compile_samples: 1,
        ..Default::default()
    }
}

#[test]
fn generator_is_deterministic_by_seed() {
    for &(_, k) in Kind::ALL {
        let a = generate(k, 500, 42);
        assert_eq!(a, generate(k, 500, 42), "{k}");
        assert_ne!(a, generate(k, 500, 43), "{k}");
        assert!(
            a.windows(2).all(|w| w[0].ts_ns <= w[1].ts_ns),
            "{k}: timestamps go back"
        );
        assert!(a.iter().all(|p| p.wire_len as usize == p.data.len()), "{k}");
    }
}

#[test]
fn gen_main_writes_a_readable_deterministic_pcap() {
    let dir = std::env::temp_dir().join(format!("sift-bench-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (f1, f2) = (dir.join("a.pcap"), dir.join("b.pcap"));
    for f in [&f1, &f2] {
        let args: Vec<String> = [
            "gen",
            "web",
            "--count",
            "1000",
            "--seed",
            "9",
            "-w",
            f.to_str().unwrap(),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        sift_bench::gen_main(&args).unwrap();
    }
    let (b1, b2) = (std::fs::read(&f1).unwrap(), std::fs::read(&f2).unwrap());
    assert_eq!(b1, b2);
    let cap = sift_pcap::Capture::from_bytes(b1).unwrap();
    assert_eq!(cap.linktype(), 1);
    let read: Vec<_> = cap.packets().map(|p| p.unwrap()).collect();
    let want = generate(Kind::Web, 1000, 9);
    assert_eq!(read.len(), 1000);
    for (r, w) in read.iter().zip(&want) {
        assert_eq!(r.data, &w.data[..]);
        assert_eq!(r.wire_len, w.wire_len);
        let (s, us) = r.ts.micros();
        assert_eq!(u64::from(s) * 1_000_000 + u64::from(us), w.ts_ns / 1000);
    }
    // The loader gives the same packets back.
    let w = Workload::load(&f1).unwrap();
    assert_eq!(w.packets.len(), 1000);
    assert_eq!(w.packets[5].data, want[5].data);
    assert!(sift_bench::gen_main(&["nope".to_string(), "-w".into(), "x".into()]).is_err());
    assert!(sift_bench::gen_main(&["web".to_string()]).is_err());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn workloads_have_the_promised_content() {
    let n = 4000;
    let t = generate(Kind::Tcp5555, n, 1);
    assert_eq!(count("tcp port 5555", &t), n);
    let big = t
        .iter()
        .filter(|p| (1000..1200).contains(&p.data.len()))
        .count();
    assert!(big * 10 >= n * 8, "tcp5555: {big} of {n} ≈1 KB");

    let p = generate(Kind::Pingflood, n, 1);
    assert_eq!(
        count(
            "icmp[icmptype] = icmp-echo or icmp[icmptype] = icmp-echoreply",
            &p
        ),
        n
    );
    assert!(p.iter().all(|p| p.data.len() < 128));

    let w = generate(Kind::Web, n, 1);
    let web = count("tcp port 80 or tcp port 443", &w);
    assert!(web * 100 >= n * 75, "web: {web} of {n} HTTP(S)");
    let (arp, dns, v6) = (count("arp", &w), count("udp port 53", &w), count("ip6", &w));
    assert!(arp > 0 && dns > 0 && v6 > 0, "arp {arp} dns {dns} ip6 {v6}");
    assert!(v6 * 100 < n * 15, "ip6 {v6}");
    assert!(count("host 178.79.150.233", &w) * 100 > n * 80);

    let m = generate(Kind::Mixed, n, 1);
    let (v4, v6) = (count("ip", &m), count("ip6", &m));
    assert_eq!(v4 + v6, n);
    assert!(
        v4 * 10 > n * 4 && v6 * 10 > n * 4,
        "mixed: ip {v4} ip6 {v6}"
    );
    let (tcp, udp) = (count("tcp", &m), count("udp", &m));
    assert_eq!(tcp + udp, n);
    assert!(
        tcp * 10 > n * 4 && udp * 10 > n * 4,
        "mixed: tcp {tcp} udp {udp}"
    );
    assert!(count("src net 2001:470::/28", &m) > 0);

    let f = generate(Kind::Ftp, 40_000, 1);
    let replies = f
        .iter()
        .filter(|p| {
            p.data
                .windows(26)
                .any(|w| w == b"227 Entering Passive Mode ")
        })
        .count();
    assert_eq!(replies, 200);
    assert_eq!(count("tcp port 21", &f), 400);
    let ftp200 = standard_filters()
        .into_iter()
        .find(|s| s.name == "ftp200")
        .unwrap();
    let data = count(&ftp200.expr, &f);
    // Control (400) and data (24,700) packets; no background packet.
    assert_eq!(data, 400 + 24_700, "ftp200 matches {data}");
}

#[test]
fn all_engines_agree_on_every_standard_filter() {
    let engines: Vec<EngineSpec> = ENGINES.to_vec();
    for &(_, kind) in Kind::ALL {
        let w = Workload::generated(kind, 300, 5);
        for f in standard_filters() {
            let r = bench_filter(&w, &f, &engines, &fast(), &mut |_| {})
                .unwrap_or_else(|e| panic!("{e}"));
            let names: Vec<&str> = r.iter().map(|m| m.engine.as_str()).collect();
            assert!(
                names.contains(&"interp")
                    && names.contains(&"handwritten")
                    && names.contains(&"reference")
            );
            assert_eq!(names.contains(&"accept-all"), f.expr.is_empty());
            if sift_bench::libpcap::Libpcap::get().is_some() {
                assert!(names.contains(&"libpcap"));
            }
            assert!(r
                .iter()
                .all(|m| m.matches == r[0].matches && m.samples == 2 && m.median_mpps > 0.0));
        }
    }
}

struct RejectAll;
impl Runner for RejectAll {
    fn matches(&self, _: &[u8], _: u32) -> bool {
        false
    }
}

#[test]
fn disagreeing_counts_fail_loudly() {
    let liar = EngineSpec {
        name: "liar",
        default: false,
        about: "rejects everything",
        build: |_, _| {
            Ok(Some(sift_bench::engines::Built {
                runner: Box::new(RejectAll),
                compile_ns: 0,
            }))
        },
    };
    let interp = *ENGINES.iter().find(|e| e.name == "interp").unwrap();
    let w = Workload::generated(Kind::Web, 200, 1);
    let f = FilterSpec {
        name: "ip".into(),
        expr: "ip".into(),
        groups: &[],
    };
    let e = bench_filter(&w, &f, &[interp, liar], &fast(), &mut |_| {}).unwrap_err();
    assert!(
        e.contains("DISAGREE")
            && e.contains("liar=0")
            && e.contains("first difference at packet #1"),
        "{e}"
    );
    // A filter an engine cannot compile fails too.
    let bad = FilterSpec {
        name: "bad".into(),
        expr: "tcp port".into(),
        groups: &[],
    };
    assert!(bench_filter(&w, &bad, &[interp], &fast(), &mut |_| {}).is_err());
}

/// A minimal JSON reader for flat objects of strings, numbers and null.
fn parse_flat_json(s: &str) -> Vec<(String, String)> {
    let b = s.as_bytes();
    assert!(s.starts_with('{') && s.ends_with('}'), "{s}");
    let mut i = 1;
    let mut out = Vec::new();
    let read_string = |i: &mut usize| -> String {
        assert_eq!(b[*i], b'"');
        *i += 1;
        let mut v = String::new();
        while b[*i] != b'"' {
            if b[*i] == b'\\' {
                *i += 1;
                v.push(match b[*i] {
                    b'n' => '\n',
                    b'u' => {
                        *i += 4;
                        '?'
                    }
                    c => c as char,
                });
            } else {
                v.push(b[*i] as char);
            }
            *i += 1;
        }
        *i += 1;
        v
    };
    loop {
        let k = read_string(&mut i);
        assert_eq!(b[i], b':', "{s}");
        i += 1;
        let v = if b[i] == b'"' {
            read_string(&mut i)
        } else {
            let start = i;
            while b[i] != b',' && b[i] != b'}' {
                i += 1;
            }
            let v = &s[start..i];
            assert!(
                v == "null" || v.parse::<f64>().is_ok(),
                "bad value {v} in {s}"
            );
            v.to_string()
        };
        out.push((k, v));
        match b[i] {
            b',' => i += 1,
            b'}' => {
                assert_eq!(i + 1, b.len());
                return out;
            }
            c => panic!("unexpected {} in {s}", c as char),
        }
    }
}

#[test]
fn json_lines_have_the_documented_fields() {
    let w = Workload::generated(Kind::Web, 200, 1);
    let engines = sift_bench::engines::default_engines();
    let f = FilterSpec {
        name: "quote\"d".into(),
        expr: "ip and tcp".into(),
        groups: &[],
    };
    for m in bench_filter(&w, &f, &engines, &fast(), &mut |_| {}).unwrap() {
        let line = report::json_line(&m);
        assert!(!line.contains('\n'));
        let kv = parse_flat_json(&line);
        let get = |k: &str| {
            kv.iter()
                .find(|e| e.0 == k)
                .map(|e| e.1.clone())
                .unwrap_or_else(|| panic!("no {k} in {line}"))
        };
        for k in [
            "workload",
            "run",
            "filter",
            "engine",
            "median_mpps",
            "min_mpps",
            "max_mpps",
            "ns_per_packet",
            "min_ns_per_packet",
            "max_ns_per_packet",
            "compile_ns",
            "program_size",
            "matches",
        ] {
            get(k);
        }
        assert_eq!(get("workload"), "web");
        assert_eq!(get("run"), "1");
        assert_eq!(get("filter"), "quote\"d");
        assert_eq!(get("matches"), m.matches.to_string());
        let (lo, med, hi): (f64, f64, f64) = (
            get("min_mpps").parse().unwrap(),
            get("median_mpps").parse().unwrap(),
            get("max_mpps").parse().unwrap(),
        );
        assert!(lo <= med && med <= hi);
        if m.engine == "interp" {
            assert!(get("program_size").parse::<usize>().unwrap() > 0);
        }
        if m.engine == "handwritten" {
            assert_eq!(get("program_size"), "null");
        }
    }
}

/// Checks that `s` is well-formed XML as far as this chart uses it:
/// balanced elements, quoted attributes, escaped text.
fn check_xml(s: &str) {
    let mut stack: Vec<String> = Vec::new();
    let mut rest = s;
    let mut roots = 0;
    while let Some(lt) = rest.find('<') {
        let text = &rest[..lt];
        assert!(!text.contains('>'), "stray > in text {text:?}");
        if let Some(amp) = text.find('&') {
            let ent = &text[amp..];
            assert!(
                ["&amp;", "&lt;", "&gt;", "&quot;"]
                    .iter()
                    .any(|e| ent.starts_with(e)),
                "bad entity {ent:?}"
            );
        }
        let gt = rest[lt..].find('>').expect("unterminated tag") + lt;
        let tag = &rest[lt + 1..gt];
        if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(stack.pop().as_deref(), Some(name), "mismatched </{name}>");
        } else {
            let self_closing = tag.ends_with('/');
            let body = tag.trim_end_matches('/');
            let name = body.split_whitespace().next().expect("tag name");
            assert_eq!(
                body.matches('"').count() % 2,
                0,
                "unbalanced quotes in <{tag}>"
            );
            if stack.is_empty() {
                roots += 1;
            }
            if !self_closing {
                stack.push(name.to_string());
            }
        }
        rest = &rest[gt + 1..];
    }
    assert!(stack.is_empty(), "unclosed {stack:?}");
    assert_eq!(roots, 1);
    assert!(rest.trim().is_empty());
}

#[test]
fn bench_main_end_to_end_with_svg() {
    let dir = std::env::temp_dir().join(format!("sift-bench-svg-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let svg = dir.join("chart.svg");
    let args: Vec<String> = [
        "bench",
        "--workload",
        "web,mixed",
        "--count",
        "300",
        "--filters",
        "swift,tcp-byte-20",
        "--expr",
        "udp and len < 100",
        "--samples",
        "2",
        "--min-sample-ms",
        "0",
        "--json",
        "--svg",
        svg.to_str().unwrap(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    sift_bench::bench_main(&args).unwrap();
    let text = std::fs::read_to_string(&svg).unwrap();
    check_xml(&text);
    assert!(
        text.starts_with("<svg")
            && text.contains("swift6")
            && text.contains("expr1")
            && text.contains("mixed")
    );
    assert!(text.matches("<rect").count() > 20);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn argument_errors() {
    let a = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<String>>();
    assert!(sift_bench::bench_main(&a(&["--samples", "0"])).is_err());
    assert!(sift_bench::bench_main(&a(&["--engines", "warp"])).is_err());
    assert!(sift_bench::bench_main(&a(&["--filters", "nope"])).is_err());
    assert!(sift_bench::bench_main(&a(&["--workload", "/no/such/file.pcap"])).is_err());
    assert!(sift_bench::bench_main(&a(&["--frobnicate"])).is_err());
    assert!(sift_bench::bench_main(&a(&["--repeat", "0"])).is_err());
    let b = sift_bench::parse_bench_args(&a(&["bench"])).unwrap();
    assert_eq!(b.workloads, ["web"]);
    assert_eq!(b.samples, 20);
    assert_eq!(b.repeat, 1);
}

/// `--repeat 2`: every workload measured twice, each run generated afresh,
/// the JSON lines numbered by run, and the summary giving each run's ratios
/// and their spread.
#[test]
fn repeated_runs_are_numbered_and_summarized() {
    let a = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<String>>();
    let b = sift_bench::parse_bench_args(&a(&[
        "bench", "--workload", "web", "--count", "300", "--repeat", "2", "--filters", "ip,tcp",
        "--engines", "interp,handwritten", "--samples", "2", "--min-sample-ms", "0", "--compile-samples", "1",
    ]))
    .unwrap();
    assert_eq!(b.repeat, 2);
    let mut lines = Vec::new();
    let results = sift_bench::run(&b, &mut |m| lines.push(report::json_line(m))).unwrap();
    assert_eq!(results.len(), 2 * 2 * 2);
    assert_eq!(lines.iter().filter(|l| l.contains("\"run\":1,")).count(), 4);
    assert_eq!(lines.iter().filter(|l| l.contains("\"run\":2,")).count(), 4);
    let s = report::ratio_summary(&results, "interp");
    assert!(s.contains("web run 1: handwritten / interp: median "), "{s}");
    assert!(s.contains("web run 2: handwritten / interp: median "), "{s}");
    assert!(s.contains("web, 2 runs: handwritten / interp at the median filter"), "{s}");
}

thread_local! {
    /// Which engine each pass of the order test ran, in order.
    static PASSES: std::cell::RefCell<Vec<&'static str>> = const { std::cell::RefCell::new(Vec::new()) };
    /// The compile times the order test's builds report, in turn.
    static BUILD_TIMES: std::cell::RefCell<Vec<u64>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Accepts everything and logs each pass under its name.
struct Logged(&'static str);
impl Runner for Logged {
    fn matches(&self, _: &[u8], _: u32) -> bool {
        true
    }
    fn count(&self, packets: &[sift::PacketRef<'_>]) -> u64 {
        PASSES.with(|p| p.borrow_mut().push(self.0));
        packets.len() as u64
    }
}

fn logged(name: &'static str) -> Result<Option<sift_bench::engines::Built>, String> {
    let compile_ns = BUILD_TIMES.with(|t| t.borrow_mut().pop()).unwrap_or(1);
    Ok(Some(sift_bench::engines::Built {
        runner: Box::new(Logged(name)),
        compile_ns,
    }))
}

#[test]
fn samples_rotate_the_engine_order_and_compile_time_is_the_least() {
    let spec = |name: &'static str, build| EngineSpec {
        name,
        default: false,
        about: "logs its passes",
        build,
    };
    let engines = [
        spec("a", |_, _| logged("a")),
        spec("b", |_, _| logged("b")),
        spec("c", |_, _| logged("c")),
    ];
    let w = Workload::generated(Kind::Web, 50, 1);
    let f = FilterSpec {
        name: "ip".into(),
        expr: "ip".into(),
        groups: &[],
    };
    // Builds pop from the end: round 0 builds a (untimed 1, timed 40),
    // b (1, 50), c (1, 60); round 1 a (1, 30), b (1, 70), c (1, 20).
    BUILD_TIMES.with(|t| *t.borrow_mut() = vec![20, 1, 70, 1, 30, 1, 60, 1, 50, 1, 40, 1]);
    PASSES.with(|p| p.borrow_mut().clear());
    let opts = SampleOptions {
        samples: 3,
        min_sample_ns: 0,
        compile_samples: 2,
        ..Default::default()
    };
    let results = bench_filter(&w, &f, &engines, &opts, &mut |_| {}).unwrap();
    let passes = PASSES.with(|p| p.borrow().join(""));
    // The warm-up in order, then each round starting one engine later.
    assert_eq!(passes, ["abc", "abc", "bca", "cab"].concat());
    let compile: Vec<u64> = results.iter().map(|m| m.compile_ns).collect();
    assert_eq!(compile, [30, 50, 20]);
}
