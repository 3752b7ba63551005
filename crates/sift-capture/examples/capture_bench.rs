//! Side-by-side capture benchmark (not a test): a flood over a veth pair
//! between two fresh network namespaces, captured at the same time by
//! sift (`capture_main`, `-w /dev/null`) and by `tcpdump -w /dev/null`,
//! with the same filter. Prints, for each: packets captured, received by
//! filter, dropped by kernel, and CPU seconds per million packets offered.
//!
//! ```text
//! sudo cargo run --release -p sift-capture --example capture_bench -- [PACKETS] [RATE_PPS|max] [EXPR]
//! ```
//!
//! Defaults: 1,000,000 packets, unthrottled, `udp dst port 1000` (half of
//! the flood matches). Needs root, `ip netns` and tcpdump; everything it
//! creates is deleted at the end. Only frames inside the namespaces are
//! sent.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use sift_capture::{CaptureArgs, Injector, RingConfig};

fn ip(args: &[&str]) -> bool {
    Command::new("ip")
        .args(args)
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

struct Pair {
    a: String,
    b: String,
}

impl Drop for Pair {
    fn drop(&mut self) {
        ip(&["netns", "del", &self.a]);
        ip(&["netns", "del", &self.b]);
    }
}

/// utime + stime of a process, in seconds.
fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // Fields 14 and 15 of stat(5); `rest` starts at field 3.
    let ticks: u64 = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
    let hz = Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse::<f64>().ok())
        .unwrap_or(100.0);
    Some(ticks as f64 / hz)
}

/// The frames of the flood: UDP to port 1000 and 2000 alternately, many
/// source ports.
fn frame(n: u64) -> Vec<u8> {
    let mut f = vec![0xff; 6];
    f.extend_from_slice(&[0x02, 0x53, 0, 0, 0, 1, 0x08, 0x00]);
    let dport: u16 = if n.is_multiple_of(2) { 1000 } else { 2000 };
    let sport = 1024 + (n % 50_000) as u16;
    f.extend_from_slice(&[
        0x45, 0, 0, 46, 0, 1, 0, 0, 64, 17, 0, 0, 10, 253, 0, 1, 10, 253, 0, 2,
    ]);
    f.extend_from_slice(&sport.to_be_bytes());
    f.extend_from_slice(&dport.to_be_bytes());
    f.extend_from_slice(&[0, 26, 0, 0]);
    f.extend_from_slice(&[0x5a; 18]);
    f
}

/// The child mode: `capture_bench --sift-child IFACE EXPR` runs sift's
/// capture loop (inside the namespace `ip netns exec` put it in).
fn sift_child(iface: &str, expr: &str) -> ! {
    let mut args = CaptureArgs::new(iface);
    args.expression = expr.to_string();
    args.write = Some("/dev/null".into());
    args.ring = RingConfig {
        block_size: 1 << 20,
        block_count: 4,
        block_timeout_ms: 50,
    };
    eprintln!("sift child ready");
    match sift_capture::capture_main(&args) {
        Ok(_) => std::process::exit(0),
        Err(e) => {
            eprintln!("sift: {e}");
            std::process::exit(1)
        }
    }
}

fn wait_for_line(child: &mut Child, needle: &str) -> BufReader<std::process::ChildStderr> {
    let mut r = BufReader::new(child.stderr.take().expect("stderr"));
    let mut line = String::new();
    loop {
        line.clear();
        if r.read_line(&mut line).unwrap_or(0) == 0 {
            panic!("child exited before saying {needle:?}");
        }
        if line.contains(needle) {
            return r;
        }
    }
}

fn stop(child: &mut Child, mut err: BufReader<std::process::ChildStderr>) -> (Option<f64>, String) {
    let cpu = cpu_seconds(child.id());
    let _ = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    let mut rest = String::new();
    let _ = err.read_to_string(&mut rest);
    let _ = child.wait();
    (cpu, rest)
}

fn number(text: &str, what: &str) -> u64 {
    text.lines()
        .find(|l| l.contains(what))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

fn main() {
    let argv: Vec<String> = std::env::args().collect();
    if argv.get(1).map(String::as_str) == Some("--sift-child") {
        sift_child(&argv[2], &argv[3]);
    }
    if argv.get(1).map(String::as_str) == Some("--flood") {
        let n = argv[3].parse().expect("count");
        flood(&argv[2], n, argv[4].parse().ok());
        return;
    }
    let packets: u64 = argv
        .get(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let rate: Option<u64> = argv.get(2).and_then(|s| s.parse().ok());
    let expr = argv
        .get(3)
        .cloned()
        .unwrap_or_else(|| "udp dst port 1000".into());

    let id = std::process::id();
    let pair = Pair {
        a: format!("siftbenchA{id}"),
        b: format!("siftbenchB{id}"),
    };
    let (va, vb) = (format!("ba{id}"), format!("bb{id}"));
    assert!(
        ip(&["netns", "add", &pair.a]) && ip(&["netns", "add", &pair.b]),
        "ip netns add failed (root?)"
    );
    assert!(ip(&[
        "-n", &pair.a, "link", "add", &va, "type", "veth", "peer", "name", &vb, "netns", &pair.b
    ]));
    for (ns, dev) in [(&pair.a, &va), (&pair.b, &vb)] {
        let _ = Command::new("ip")
            .args([
                "netns",
                "exec",
                ns,
                "sysctl",
                "-qw",
                "net.ipv6.conf.all.disable_ipv6=1",
            ])
            .status();
        assert!(ip(&["-n", ns, "link", "set", dev, "up"]));
    }

    let exe = std::env::current_exe().unwrap();
    let mut sift = Command::new("ip")
        .args(["netns", "exec", &pair.b])
        .arg(&exe)
        .args(["--sift-child", &vb, &expr])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let sift_err = wait_for_line(&mut sift, "listening on");
    let mut td = Command::new("ip")
        .args([
            "netns",
            "exec",
            &pair.b,
            "tcpdump",
            "-i",
            &vb,
            "-w",
            "/dev/null",
            &expr,
        ])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let td_err = wait_for_line(&mut td, "listening on");

    // The flood, from namespace A: this program again, under `ip netns exec`.
    let start = Instant::now();
    let status = Command::new("ip")
        .args(["netns", "exec", &pair.a])
        .arg(&exe)
        .args([
            "--flood",
            &va,
            &packets.to_string(),
            &rate.map_or("max".into(), |r| r.to_string()),
        ])
        .status();
    let _ = status;
    let elapsed = start.elapsed();
    thread::sleep(Duration::from_millis(500));
    let (sift_cpu, sift_text) = stop(&mut sift, sift_err);
    let (td_cpu, td_text) = stop(&mut td, td_err);

    let mpkts = packets as f64 / 1e6;
    println!(
        "offered: {packets} packets in {:.2} s ({:.0} pps), filter {expr:?}",
        elapsed.as_secs_f64(),
        packets as f64 / elapsed.as_secs_f64()
    );
    println!("| capturer | captured | received by filter | dropped by kernel | CPU s | CPU s / Mpkt offered |");
    println!("|---|---|---|---|---|---|");
    for (name, text, cpu) in [
        ("sift", &sift_text, sift_cpu),
        ("tcpdump", &td_text, td_cpu),
    ] {
        let cpu = cpu.unwrap_or(f64::NAN);
        println!(
            "| {name} | {} | {} | {} | {cpu:.2} | {:.3} |",
            number(text, "captured"),
            number(text, "received by filter"),
            number(text, "dropped by kernel"),
            cpu / mpkts
        );
    }
}

fn flood(iface: &str, packets: u64, rate: Option<u64>) {
    let inj = Injector::open(iface).expect("injector");
    let frames: Vec<Vec<u8>> = (0..1024).map(frame).collect();
    let refs: Vec<&[u8]> = frames.iter().map(|f| f.as_slice()).collect();
    let start = Instant::now();
    let mut sent = 0u64;
    while sent < packets {
        let at = (sent % 1024) as usize;
        let want = (packets - sent).min(64).min((1024 - at) as u64) as usize;
        match inj.send_batch(&refs[at..at + want]) {
            Ok(n) => sent += n.max(1) as u64,
            Err(_) => sent += 1, // counted as offered; the kernel refused it
        }
        if let Some(r) = rate {
            let due = Duration::from_secs_f64(sent as f64 / r as f64);
            if let Some(wait) = due.checked_sub(start.elapsed()) {
                thread::sleep(wait);
            }
        }
    }
}
