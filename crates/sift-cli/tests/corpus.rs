//! The corpus runner: every capture in ../shared/data/pcaps whose link type
//! sift supports × every expression of tests/corpus/expressions.txt (plus
//! pflua's expectation filters): `sift -r X -w - EXPR` must write exactly the
//! bytes `tcpdump -O -r X -w - EXPR` writes, and fail exactly when tcpdump
//! fails. pflua's `.pcap.test` expectations (match counts) are checked too.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

const SUPPORTED: &[u32] = &[0, 1, 101, 108, 113, 228, 229, 276];

fn shared() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data")
}

fn have_tcpdump() -> bool {
    Command::new("tcpdump").arg("--version").output().is_ok_and(|o| o.status.success())
}

/// Every capture file under pcaps/, with its link type (None: sift cannot open it).
fn captures() -> Vec<(PathBuf, Option<u32>)> {
    let mut out = Vec::new();
    let mut dirs = vec![shared().join("pcaps")];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).expect("pcaps directory").flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "pcap" || x == "pcapng") {
                let lt = sift_pcap::Capture::open(&p).ok().map(|c| c.linktype());
                out.push((p, lt));
            }
        }
    }
    out.sort();
    out
}

fn expressions() -> Vec<String> {
    let text = include_str!("corpus/expressions.txt");
    let mut v: Vec<String> = vec![String::new()];
    v.extend(text.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()).map(str::to_string));
    // pflua's expectation and benchmark filter lists: "description: count: filter".
    let dir = shared().join("pcaps/pflua/expectations");
    for e in std::fs::read_dir(dir).expect("pflua expectations").flatten() {
        let text = std::fs::read_to_string(e.path()).unwrap_or_default();
        for line in text.lines() {
            if let Some(f) = line.splitn(3, ": ").nth(2) {
                if !v.iter().any(|x| x == f) {
                    v.push(f.to_string());
                }
            } else if line.ends_with(':') && !v.iter().any(String::is_empty) {
                v.push(String::new());
            }
        }
    }
    v
}

struct Outcome {
    ok: bool,
    stdout: Vec<u8>,
    stderr: String,
}

fn run(cmd: &str, args: &[&str]) -> Outcome {
    let o = Command::new(cmd).args(args).output().unwrap_or_else(|e| panic!("running {cmd}: {e}"));
    Outcome { ok: o.status.success(), stdout: o.stdout, stderr: String::from_utf8_lossy(&o.stderr).into_owned() }
}

#[test]
fn sift_writes_what_tcpdump_writes() {
    if !have_tcpdump() {
        eprintln!("corpus: tcpdump not installed; run scripts/setup (skipping)");
        return;
    }
    let sift = env!("CARGO_BIN_EXE_sift");
    let caps: Vec<_> = captures().into_iter().filter(|(_, lt)| lt.is_some_and(|l| SUPPORTED.contains(&l))).collect();
    let exprs = expressions();
    let jobs: Vec<(usize, usize)> = (0..caps.len()).flat_map(|c| (0..exprs.len()).map(move |e| (c, e))).collect();
    let next = AtomicUsize::new(0);
    let failures = Mutex::new(Vec::<String>::new());
    let (agree, both_fail) = (AtomicUsize::new(0), AtomicUsize::new(0));
    let matched_records = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(&(c, e)) = jobs.get(i) else { break };
                let (path, _) = &caps[c];
                let file = path.to_str().unwrap();
                let expr = exprs[e].as_str();
                let t = run("tcpdump", &["-O", "-r", file, "-w", "-", "--", expr]);
                let m = run(sift, &["-r", file, "-w", "-", "--", expr]);
                let same = t.ok == m.ok && t.stdout == m.stdout;
                if same {
                    agree.fetch_add(1, Ordering::Relaxed);
                    if !t.ok {
                        both_fail.fetch_add(1, Ordering::Relaxed);
                    }
                    // Records written = output size beyond the 24-byte header (roughly; for the summary only).
                    if t.stdout.len() > 24 {
                        matched_records.fetch_add(1, Ordering::Relaxed);
                    }
                } else {
                    failures.lock().unwrap().push(format!(
                        "{file} `{expr}`: tcpdump ok={} {} bytes [{}] / sift ok={} {} bytes [{}]",
                        t.ok,
                        t.stdout.len(),
                        t.stderr.lines().last().unwrap_or(""),
                        m.ok,
                        m.stdout.len(),
                        m.stderr.lines().last().unwrap_or("")
                    ));
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    println!(
        "corpus: {} captures x {} expressions = {} pairs; {} byte-identical ({} of them both rejected, {} with matches), {} different",
        caps.len(),
        exprs.len(),
        jobs.len(),
        agree.load(Ordering::Relaxed),
        both_fail.load(Ordering::Relaxed),
        matched_records.load(Ordering::Relaxed),
        failures.len()
    );
    for f in failures.iter().take(40) {
        println!("  DIFFERENT: {f}");
    }
    // The full list, for investigation.
    let report = Path::new(env!("CARGO_TARGET_TMPDIR")).join("corpus-differences.txt");
    let _ = std::fs::write(&report, failures.join("\n"));
    if !failures.is_empty() {
        println!("  (all {} differences: {})", failures.len(), report.display());
    }
    assert!(failures.is_empty(), "{} pairs differ from tcpdump", failures.len());
}

/// pflua's expectation files: "description: count: filter" for a capture.
#[test]
fn pflua_expected_counts() {
    let sift = env!("CARGO_BIN_EXE_sift");
    let dir = shared().join("pcaps/pflua");
    let mut checked = 0;
    for e in std::fs::read_dir(dir.join("expectations")).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pcap) = name.strip_suffix(".test") else { continue };
        let capture = dir.join(pcap);
        for line in std::fs::read_to_string(e.path()).unwrap().lines() {
            let mut parts = line.splitn(3, ':');
            let (Some(_), Some(count), rest) = (parts.next(), parts.next(), parts.next()) else { continue };
            let expr = rest.unwrap_or("").trim();
            let want: u64 = count.trim().parse().unwrap();
            let o = run(sift, &["-r", capture.to_str().unwrap(), "--count", "--", expr]);
            assert!(o.ok, "{pcap} `{expr}`: {}", o.stderr);
            let got: u64 = String::from_utf8_lossy(&o.stdout).split_whitespace().next().unwrap().parse().unwrap();
            assert_eq!(got, want, "{pcap} `{expr}`");
            checked += 1;
        }
    }
    println!("pflua expectations: {checked} (capture, filter, count) rows agree");
    assert!(checked >= 9);
}
