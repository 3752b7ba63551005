//! Side-by-side capture benchmark (not a test): a flood over a veth pair
//! between two fresh network namespaces, captured at the same time by
//! sift (`capture_main`, `-w /dev/null`) and by `tcpdump -w /dev/null`,
//! with the same filter and the same ring size. Prints, for
//! each offered rate: packets captured, received by filter, dropped by the
//! kernel (and by sift), and CPU seconds per million packets offered.
//!
//! ```text
//! sudo cargo run --release -p sift-capture --example capture_bench -- \
//!     [PACKETS] [RATES] [EXPR] [SENDER_THREADS] [RING_KIB] [FRAME_BYTES] [SIFT_BLOCKS] [SCHED_SLICE_US] [ROUNDS]
//! ```
//!
//! Defaults: 2,000,000 packets per rate; rates `100000,200000,400000,max`
//! (packets per second, `max` = unthrottled); `udp dst port 1000` (half of
//! the flood matches); 2 sender threads; 4096 KiB rings (a smaller ring
//! shows the kernel's drops at the rates this sender reaches); 60-byte
//! frames (up to 1514: larger frames fill the rings sooner at the same
//! packet rate, so that drops show); sift's ring in as many blocks as
//! `sift -B RING_KIB` uses (SIFT_BLOCKS 0) or in SIFT_BLOCKS blocks; sift's
//! capture thread asks for SCHED_SLICE_US (`sift --sched-slice`, default
//! `sift_capture::DEFAULT_SCHED_SLICE_US`; 0: the kernel's default slice).
//! With ROUNDS > 1 every rate is measured ROUNDS times (rates in turn,
//! round after round) and a summary follows: per rate, the median and range
//! of the CPU ratio and the kernel drops of both, summed and per round. The
//! sender is this program in the other namespace: each thread has its own AF_PACKET socket with
//! `PACKET_QDISC_BYPASS` (frames go straight to the veth driver) and sends
//! a pre-built batch of 1,024 frames 64 at a time with `sendmmsg`.
//!
//! CPU time is the capturers' whole-process `getrusage` figure (user +
//! system, all threads), read with `wait4` when they exit, so it has the
//! kernel's scheduler precision rather than 10 ms ticks. Needs root,
//! `ip netns` and tcpdump; everything it creates is deleted at the end.
//! Only frames inside the namespaces are sent.

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

/// The frames of the flood: UDP to port 1000 and 2000 alternately, many
/// source ports, `size` bytes each (at least 60).
fn frame(n: u64, size: usize) -> Vec<u8> {
    let size = size.clamp(60, 1514);
    let ip_len = (size - 14) as u16;
    let udp_len = ip_len - 20;
    let mut f = vec![0xff; 6];
    f.extend_from_slice(&[0x02, 0x53, 0, 0, 0, 1, 0x08, 0x00]);
    let dport: u16 = if n.is_multiple_of(2) { 1000 } else { 2000 };
    let sport = 1024 + (n % 50_000) as u16;
    f.extend_from_slice(&[0x45, 0]);
    f.extend_from_slice(&ip_len.to_be_bytes());
    f.extend_from_slice(&[0, 1, 0, 0, 64, 17, 0, 0, 10, 253, 0, 1, 10, 253, 0, 2]);
    f.extend_from_slice(&sport.to_be_bytes());
    f.extend_from_slice(&dport.to_be_bytes());
    f.extend_from_slice(&udp_len.to_be_bytes());
    f.extend_from_slice(&[0, 0]);
    f.resize(size, 0x5a);
    f
}

/// The ring sift gets for `kib` KiB (tcpdump gets `-B kib`), as `sift -B`
/// sets it up ([`RingConfig::for_buffer`]: 4 blocks of 64 KiB–1 MiB),
/// blocks retired after 1 s at the latest (what `sift -w FILE` uses without
/// `-U`, and what libpcap sets up for tcpdump).
fn ring(kib: u32, blocks: Option<u32>) -> RingConfig {
    let mut ring = RingConfig::for_buffer(u64::from(kib) * 1024, 1000);
    if let Some(n) = blocks.filter(|&n| n > 0) {
        // `kib` in `n` blocks instead (a power of two each, as the kernel
        // wants).
        ring.block_count = n;
        ring.block_size = (kib * 1024 / n).next_power_of_two();
    }
    ring
}

/// The child mode: `capture_bench --sift-child IFACE EXPR KIB [BLOCKS]`
/// runs sift's capture loop (inside the namespace `ip netns exec` put it
/// in).
fn sift_child(iface: &str, expr: &str, kib: u32, blocks: Option<u32>, slice_us: Option<u32>) -> ! {
    let mut args = CaptureArgs::new(iface);
    if let Some(us) = slice_us {
        args.sched_slice_us = us;
    }
    args.expression = expr.to_string();
    args.write = Some("/dev/null".into());
    args.ring = ring(kib, blocks);
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

/// Reaps `pid` and returns its user and system CPU seconds (all threads).
fn reap_cpu_seconds(pid: u32) -> Option<(f64, f64)> {
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value (integers only).
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: wait4 on our own child, with valid pointers to `status` and
    // `ru` for the call; the Child handle is not waited on afterwards.
    let rc = unsafe { libc::wait4(pid as libc::pid_t, &mut status, 0, &mut ru) };
    if rc <= 0 {
        return None;
    }
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Some((secs(ru.ru_utime), secs(ru.ru_stime)))
}

/// SIGINT, then the rest of stderr (the statistics) and the CPU time.
fn stop(
    child: Child,
    mut err: BufReader<std::process::ChildStderr>,
) -> (Option<(f64, f64)>, String) {
    let _ = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    let mut rest = String::new();
    let _ = err.read_to_string(&mut rest);
    let cpu = reap_cpu_seconds(child.id());
    (cpu, rest)
}

fn number(text: &str, what: &str) -> u64 {
    text.lines()
        .find(|l| l.contains(what))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

struct Run {
    captured: u64,
    received: u64,
    kernel_drops: u64,
    sift_drops: Option<u64>,
    cpu: f64,
    user: f64,
}

fn main() {
    let argv: Vec<String> = std::env::args().collect();
    if argv.get(1).map(String::as_str) == Some("--sift-child") {
        let blocks = argv.get(5).and_then(|b| b.parse().ok());
        let slice = argv.get(6).and_then(|b| b.parse().ok());
        sift_child(&argv[2], &argv[3], argv[4].parse().expect("KiB"), blocks, slice);
    }
    if argv.get(1).map(String::as_str) == Some("--flood") {
        let n = argv[3].parse().expect("count");
        let threads = argv[5].parse().expect("threads");
        let size = argv[6].parse().expect("frame bytes");
        flood(&argv[2], n, argv[4].parse().ok(), threads, size);
        return;
    }
    let packets: u64 = argv
        .get(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(2_000_000);
    let rates: Vec<Option<u64>> = argv
        .get(2)
        .map_or("100000,200000,400000,max", String::as_str)
        .split(',')
        .map(|r| r.parse().ok())
        .collect();
    let expr = argv
        .get(3)
        .cloned()
        .unwrap_or_else(|| "udp dst port 1000".into());
    let threads: usize = argv.get(4).and_then(|s| s.parse().ok()).unwrap_or(2);
    let kib: u32 = argv.get(5).and_then(|s| s.parse().ok()).unwrap_or(4096);
    let size: usize = argv.get(6).and_then(|s| s.parse().ok()).unwrap_or(60);
    let blocks: u32 = argv.get(7).and_then(|s| s.parse().ok()).unwrap_or(0);
    let slice: u32 = argv.get(8).and_then(|s| s.parse().ok()).unwrap_or(sift_capture::DEFAULT_SCHED_SLICE_US);
    let rounds: usize = argv.get(9).and_then(|s| s.parse().ok()).unwrap_or(1).max(1);

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
    let mpkts = packets as f64 / 1e6;
    let geometry = ring(kib, Some(blocks));
    println!(
        "filter {expr:?}, {packets} packets of {size} bytes per rate, {threads} sender threads, {kib} KiB ring each (sift: {} blocks of {} KiB, scheduler slice {slice} µs)",
        geometry.block_count,
        geometry.block_size >> 10
    );
    println!("| offered (achieved) | sift captured / kernel drops / sift drops / CPU s per Mpkt | tcpdump captured / kernel drops / CPU s per Mpkt | sift CPU / tcpdump CPU |");
    println!("|---|---|---|---|");
    // Per rate: (sift drops, tcpdump drops, sift CPU / tcpdump CPU) of each round.
    let mut results: Vec<Vec<(u64, u64, f64)>> = vec![Vec::new(); rates.len()];
    for (ri, &rate) in (0..rounds).flat_map(|_| rates.iter().enumerate()) {
        let mut sift = Command::new("ip")
            .args(["netns", "exec", &pair.b])
            .arg(&exe)
            .args(["--sift-child", &vb, &expr, &kib.to_string()])
            .arg(blocks.to_string())
            .arg(slice.to_string())
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
                "-B",
                &kib.to_string(),
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
        let _ = Command::new("ip")
            .args(["netns", "exec", &pair.a])
            .arg(&exe)
            .args([
                "--flood",
                &va,
                &packets.to_string(),
                &rate.map_or("max".into(), |r| r.to_string()),
                &threads.to_string(),
                &size.to_string(),
            ])
            .status();
        let elapsed = start.elapsed();
        // Both ring timeouts (1 s) pass before the stop.
        thread::sleep(Duration::from_millis(1500));
        let (sift_cpu, sift_text) = stop(sift, sift_err);
        let (td_cpu, td_text) = stop(td, td_err);
        let parse = |text: &str, cpu: Option<(f64, f64)>, sift: bool| Run {
            captured: number(text, "captured"),
            received: number(text, "received by filter"),
            kernel_drops: number(text, "dropped by kernel"),
            sift_drops: sift.then(|| number(text, "dropped by sift")),
            cpu: cpu.map_or(f64::NAN, |(u, s)| u + s),
            user: cpu.map_or(f64::NAN, |(u, _)| u),
        };
        let s = parse(&sift_text, sift_cpu, true);
        let t = parse(&td_text, td_cpu, false);
        let offered = rate.map_or("max".to_string(), |r| format!("{} kpps", r / 1000));
        println!(
            "| {offered} ({:.0} kpps) | {} / {} / {} / {:.4} | {} / {} / {:.4} | {:.2}× |",
            packets as f64 / elapsed.as_secs_f64() / 1e3,
            s.captured,
            s.kernel_drops,
            s.sift_drops.unwrap_or(0),
            s.cpu / mpkts,
            t.captured,
            t.kernel_drops,
            t.cpu / mpkts,
            s.cpu / t.cpu,
        );
        eprintln!(
            "  (received by filter: sift {}, tcpdump {}; CPU s: sift {:.3} ({:.3} user), tcpdump {:.3} ({:.3} user))",
            s.received, t.received, s.cpu, s.user, t.cpu, t.user
        );
        results[ri].push((s.kernel_drops + s.sift_drops.unwrap_or(0), t.kernel_drops, s.cpu / t.cpu));
    }
    if rounds > 1 {
        summary(&rates, &results);
    }
}

/// The summary of several rounds: per rate, the CPU ratio's median and
/// range, the drops of both (sum, per round) and in how many rounds sift
/// dropped more than tcpdump.
fn summary(rates: &[Option<u64>], results: &[Vec<(u64, u64, f64)>]) {
    println!();
    println!("| offered | rounds | sift CPU / tcpdump CPU: median (range) | drops sift / tcpdump: total (per round) | rounds sift dropped more |");
    println!("|---|---:|---|---|---:|");
    for (rate, runs) in rates.iter().zip(results) {
        let mut ratios: Vec<f64> = runs.iter().map(|r| r.2).collect();
        ratios.sort_by(f64::total_cmp);
        let median = ratios.get(ratios.len() / 2).copied().unwrap_or(f64::NAN);
        let per_round = |f: fn(&(u64, u64, f64)) -> u64| runs.iter().map(|r| f(r).to_string()).collect::<Vec<_>>().join(" ");
        println!(
            "| {} | {} | {median:.2}× ({:.2}–{:.2}) | {} / {} ({} / {}) | {} |",
            rate.map_or("max".to_string(), |r| format!("{} kpps", r / 1000)),
            runs.len(),
            ratios.first().copied().unwrap_or(f64::NAN),
            ratios.last().copied().unwrap_or(f64::NAN),
            runs.iter().map(|r| r.0).sum::<u64>(),
            runs.iter().map(|r| r.1).sum::<u64>(),
            per_round(|r| r.0),
            per_round(|r| r.1),
            runs.iter().filter(|r| r.0 > r.1).count(),
        );
    }
}

/// Sends `packets` frames from `threads` threads (each its own socket,
/// qdisc bypassed), `rate` packets per second in total if given.
fn flood(iface: &str, packets: u64, rate: Option<u64>, threads: usize, size: usize) {
    let threads = threads.max(1);
    let frames: Vec<Vec<u8>> = (0..1024).map(|n| frame(n, size)).collect();
    let start = Instant::now();
    thread::scope(|s| {
        for t in 0..threads {
            let frames = &frames;
            let share = packets / threads as u64 + u64::from((t as u64) < packets % threads as u64);
            let rate = rate.map(|r| (r / threads as u64).max(1));
            s.spawn(move || {
                let inj = Injector::open(iface).expect("injector");
                let _ = inj.bypass_qdisc();
                let refs: Vec<&[u8]> = frames.iter().map(|f| f.as_slice()).collect();
                let mut sent = 0u64;
                while sent < share {
                    let at = ((sent + t as u64 * 512) % 1024) as usize;
                    let want = (share - sent).min(64).min((1024 - at) as u64) as usize;
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
            });
        }
    });
}
