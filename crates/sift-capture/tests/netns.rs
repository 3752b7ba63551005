//! Live capture over a veth pair between two network namespaces created
//! for the test: known frames (plain, 802.1Q, 802.1ad, QinQ, ARP, frames
//! the filter rejects) are sent from one side with a raw packet socket and
//! captured on the other; exactly the expected packets must come out, bit
//! for bit.
//!
//! Needs root and `ip netns`; otherwise every test prints why it is
//! skipped and passes. Namespaces are deleted when a test ends (the veth
//! pair goes with them). Only frames inside the namespaces are sent.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use sift_capture::{Capture, CaptureArgs, Config, Injector, Placement, RingConfig};

static SEQ: AtomicU32 = AtomicU32::new(0);
/// `capture_main` uses a process-wide stop flag: one at a time.
static MAIN_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn ip(args: &[&str]) -> bool {
    Command::new("ip")
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Two namespaces joined by a veth pair: `va` in `a`, `vb` in `b`.
struct Pair {
    a: String,
    b: String,
    va: String,
    vb: String,
}

impl Pair {
    /// Creates the pair, or explains why not (the test is then skipped).
    fn create() -> Result<Pair, String> {
        let uid = std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("Uid:"))
                    .map(|l| l.to_string())
            })
            .and_then(|l| l.split_whitespace().nth(2).map(|x| x.to_string()));
        if uid.as_deref() != Some("0") {
            return Err("not running as root".into());
        }
        let n = SEQ.fetch_add(1, Ordering::SeqCst);
        let id = format!("{}x{n}", std::process::id());
        let p = Pair {
            a: format!("siftcapA{id}"),
            b: format!("siftcapB{id}"),
            va: format!("sa{id}"),
            vb: format!("sb{id}"),
        };
        if p.va.len() > 15 {
            return Err("interface name too long".into());
        }
        if !ip(&["netns", "add", &p.a]) {
            return Err("`ip netns add` is unavailable".into());
        }
        if !ip(&["netns", "add", &p.b]) {
            return Err("`ip netns add` failed for the second namespace".into());
        }
        for ns in [&p.a, &p.b] {
            // No IPv6 chatter (router solicitations, MLD) on the link.
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
            let _ = Command::new("ip")
                .args([
                    "netns",
                    "exec",
                    ns,
                    "sysctl",
                    "-qw",
                    "net.ipv6.conf.default.disable_ipv6=1",
                ])
                .status();
        }
        if !ip(&[
            "-n", &p.a, "link", "add", &p.va, "type", "veth", "peer", "name", &p.vb, "netns", &p.b,
        ]) {
            return Err("cannot create a veth pair".into());
        }
        if !ip(&["-n", &p.a, "link", "set", &p.va, "up"])
            || !ip(&["-n", &p.b, "link", "set", &p.vb, "up"])
        {
            return Err("cannot bring the veth pair up".into());
        }
        Ok(p)
    }
}

impl Drop for Pair {
    fn drop(&mut self) {
        ip(&["netns", "del", &self.a]);
        ip(&["netns", "del", &self.b]);
    }
}

/// Runs `f` on a new thread that has entered network namespace `ns`.
fn in_netns<T: Send + 'static>(
    ns: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> thread::JoinHandle<T> {
    let path = format!("/run/netns/{ns}");
    thread::spawn(move || {
        let file = File::open(&path).expect("open netns");
        // SAFETY: setns with a valid namespace file descriptor and
        // CLONE_NEWNET only changes this thread's network namespace.
        let rc = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
        assert_eq!(rc, 0, "setns: {}", std::io::Error::last_os_error());
        f()
    })
}

macro_rules! setup_or_skip {
    () => {
        match Pair::create() {
            Ok(p) => p,
            Err(why) => {
                eprintln!("SKIPPED: live capture test needs root and ip netns ({why})");
                return;
            }
        }
    };
}

const SRC: [u8; 6] = [0x02, 0x53, 0, 0, 0, 1];
const BCAST: [u8; 6] = [0xff; 6];

/// An Ethernet frame from SRC to broadcast with the given tags.
fn eth(tags: &[(u16, u16)], ethertype: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = BCAST.to_vec();
    f.extend_from_slice(&SRC);
    for (tpid, tci) in tags {
        f.extend_from_slice(&tpid.to_be_bytes());
        f.extend_from_slice(&tci.to_be_bytes());
    }
    f.extend_from_slice(&ethertype.to_be_bytes());
    f.extend_from_slice(payload);
    while f.len() < 60 {
        f.push(0);
    }
    f
}

/// An IPv4/UDP packet 10.253.0.1 -> 10.253.0.2 to `dport`, `extra` payload bytes.
fn udp(dport: u16, extra: &[u8]) -> Vec<u8> {
    let total = 28 + extra.len();
    let mut p = vec![
        0x45,
        0,
        (total >> 8) as u8,
        total as u8,
        0,
        1,
        0,
        0,
        64,
        17,
        0,
        0,
        10,
        253,
        0,
        1,
        10,
        253,
        0,
        2,
    ];
    let mut sum = 0u32;
    for c in p.chunks(2) {
        sum += u32::from(u16::from_be_bytes([c[0], c[1]]));
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    p[10..12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
    p.extend_from_slice(&4000u16.to_be_bytes());
    p.extend_from_slice(&dport.to_be_bytes());
    p.extend_from_slice(&((8 + extra.len()) as u16).to_be_bytes());
    p.extend_from_slice(&[0, 0]);
    p.extend_from_slice(extra);
    p
}

fn marker() -> Vec<u8> {
    eth(&[], 0x0800, &udp(1000, b"END-OF-TEST"))
}

fn is_marker(data: &[u8]) -> bool {
    data.windows(11).any(|w| w == b"END-OF-TEST")
}

const FILTER: &str = "udp dst port 1000 or (vlan 100 and udp dst port 1000)";

/// The test frames, and the indices the filter accepts.
fn frames() -> (Vec<Vec<u8>>, Vec<usize>) {
    let arp = [
        0u8, 1, 8, 0, 6, 4, 0, 1, 2, 0x53, 0, 0, 0, 1, 10, 253, 0, 1, 0, 0, 0, 0, 0, 0, 10, 253, 0,
        2,
    ];
    let v = vec![
        eth(&[], 0x0800, &udp(1000, b"plain")),      // 0 accept
        eth(&[], 0x0800, &udp(9999, b"other port")), // 1 reject (kernel)
        eth(&[(0x8100, 100)], 0x0800, &udp(1000, b"vlan 100")), // 2 accept (user space)
        eth(&[(0x8100, 200)], 0x0800, &udp(1000, b"vlan 200")), // 3 reject (user space)
        eth(&[(0x8100, 100)], 0x0800, &udp(9999, b"vlan 100 9999")), // 4 reject (user space)
        eth(&[(0x88a8, 100)], 0x0800, &udp(1000, b"802.1ad 100")), // 5 accept, TPID 0x88a8
        eth(&[], 0x0806, &arp),                      // 6 reject (kernel)
        eth(&[(0x8100, 100)], 0x0806, &arp),         // 7 reject (user space)
        eth(&[], 0x0800, &udp(1000, &[0x5a; 1400])), // 8 accept, large
        eth(&[(0x8100, 0xa064)], 0x0800, &udp(1000, b"pcp 5 vid 100")), // 9 accept, priority bits kept
        eth(&[(0x88a8, 300), (0x8100, 100)], 0x0800, &udp(1000, b"qinq")), // 10 reject: outer VID 300
        marker(),                                                          // 11 accept
    ];
    (v, vec![0, 2, 5, 8, 9, 11])
}

fn small_ring() -> RingConfig {
    RingConfig {
        block_size: 1 << 16,
        block_count: 4,
        block_timeout_ms: 10,
    }
}

/// What a capture returned: (data, wire length, VLAN reinserted) per
/// packet, the statistics and the filter placement.
type Captured = (Vec<(Vec<u8>, u32, bool)>, sift_capture::Stats, Placement);

/// Captures on `iface` in namespace `ns` until the marker arrives (or a
/// generous bound passes), while `send` runs in namespace `tx_ns`.
fn capture_until_marker(
    pair: &Pair,
    cfg: Config,
    filter: Option<&'static str>,
    sent: Vec<Vec<u8>>,
) -> Captured {
    let (ready_tx, ready_rx) = mpsc::channel();
    let rx = in_netns(&pair.b, move || {
        let mut cap = Capture::open(&cfg).expect("open capture");
        if let Some(expr) = filter {
            let f = sift::Filter::new(expr, &cap.compile_options()).expect("compile");
            cap.set_filter(Some(f)).expect("set filter");
        }
        cap.activate().expect("activate");
        ready_tx.send(()).unwrap();
        let mut got = Vec::new();
        let end = Instant::now() + Duration::from_secs(20);
        while Instant::now() < end
            && !got
                .iter()
                .any(|(d, _, _): &(Vec<u8>, u32, bool)| is_marker(d))
        {
            if let Some(mut b) = cap.next_block(50).expect("next_block") {
                for p in b.packets() {
                    got.push((p.data.to_vec(), p.wire_len, p.vlan_reinserted));
                }
            }
        }
        let stats = cap.stats().expect("stats");
        (got, stats, cap.placement())
    });
    ready_rx.recv().expect("capture thread failed to start");
    let va = pair.va.clone();
    in_netns(&pair.a, move || {
        let inj = Injector::open(&va).expect("injector");
        // One sendmmsg for the whole set (the other tests send one by one).
        let refs: Vec<&[u8]> = sent.iter().map(|f| f.as_slice()).collect();
        assert_eq!(inj.send_batch(&refs).expect("send"), refs.len());
    })
    .join()
    .expect("sender");
    rx.join().expect("capture thread")
}

#[test]
fn captures_exactly_the_filtered_frames_with_vlan_tags_back() {
    let pair = setup_or_skip!();
    let (sent, want) = frames();
    // The reference: sift's filter on the frames as sent.
    let f = sift::Filter::new(FILTER, &sift::CompileOptions::default()).unwrap();
    let accepted: Vec<usize> = (0..sent.len())
        .filter(|&i| f.matches(&sent[i], sent[i].len() as u32))
        .collect();
    assert_eq!(accepted, want, "the filter's verdicts on the test frames");

    let mut cfg = Config::new(&pair.vb);
    cfg.ring = small_ring();
    let (got, stats, placement) = capture_until_marker(&pair, cfg, Some(FILTER), sent.clone());
    assert_eq!(placement, Placement::Kernel);
    let expect: Vec<&Vec<u8>> = want.iter().map(|&i| &sent[i]).collect();
    let got_data: Vec<&Vec<u8>> = got.iter().map(|g| &g.0).collect();
    assert_eq!(
        got_data.len(),
        expect.len(),
        "captured {} packets, want {}",
        got.len(),
        want.len()
    );
    for (k, (g, e)) in got_data.iter().zip(&expect).enumerate() {
        assert_eq!(g, e, "packet {k} (frame {}) differs", want[k]);
    }
    for (g, &i) in got.iter().zip(&want) {
        assert_eq!(g.1 as usize, sent[i].len(), "wire length of frame {i}");
        assert_eq!(g.2, [2, 5, 9].contains(&i), "VLAN reinsertion of frame {i}");
    }
    // The kernel passed the accepted untagged frames and every tagged one;
    // user space rejected the tagged frames that fail the filter.
    assert_eq!(stats.received_by_filter, 3 + 7, "{stats:?}");
    assert_eq!(stats.filtered_in_userland, 4, "{stats:?}");
    assert_eq!(stats.captured, 6, "{stats:?}");
    assert_eq!(stats.dropped_by_kernel, 0, "{stats:?}");
    assert_eq!(stats.dropped_by_sift, 0, "{stats:?}");
}

#[test]
fn no_filter_captures_everything_and_truncates_to_snaplen() {
    let pair = setup_or_skip!();
    let (sent, _) = frames();
    let mut cfg = Config::new(&pair.vb);
    cfg.ring = small_ring();
    cfg.snaplen = 64;
    let (got, stats, placement) = capture_until_marker(&pair, cfg, None, sent.clone());
    assert_eq!(placement, Placement::None);
    assert_eq!(got.len(), sent.len());
    for (i, (g, s)) in got.iter().zip(&sent).enumerate() {
        assert_eq!(&g.0[..], &s[..s.len().min(64)], "frame {i}");
        assert_eq!(g.1 as usize, s.len(), "wire length of frame {i}");
    }
    assert_eq!(stats.captured, sent.len() as u64);
    assert_eq!(stats.dropped_by_sift, 0);
}

#[test]
fn any_device_builds_sll2_headers() {
    let pair = setup_or_skip!();
    let (sent, _) = frames();
    let vb = pair.vb.clone();
    let ifindex = in_netns(&pair.b, move || {
        sift_capture::Interface::by_name(&vb).unwrap().index
    })
    .join()
    .unwrap();
    // Cooked mode: the kernel removed the (outer) tag; libpcap does not put
    // tags back in SLL2 captures, and neither does sift. The frames whose
    // network layer is UDP to 1000 after the outer tag: 0, 2, 3, 5, 8, 9, 11.
    let all = vec![0usize, 2, 3, 5, 8, 9, 11];
    let cases: Vec<(String, Placement, Vec<usize>)> = vec![
        ("udp dst port 1000".into(), Placement::Kernel, all.clone()),
        (
            format!("not outbound and ifindex {ifindex} and udp dst port 1000"),
            Placement::Kernel,
            all.clone(),
        ),
        // `len` includes the SLL2 header: user space.
        (
            "(greater 1000 or udp[8:4] = 0x454e442d) and udp dst port 1000".into(),
            Placement::Userland,
            vec![8, 11],
        ),
    ];
    for (filter, placement_want, want) in cases {
        let mut cfg = Config::new("any");
        cfg.ring = small_ring();
        cfg.snaplen = 100;
        let filter: &'static str = Box::leak(filter.into_boxed_str());
        let (got, stats, placement) = capture_until_marker(&pair, cfg, Some(filter), sent.clone());
        assert_eq!(placement, placement_want, "{filter}");
        assert_eq!(
            got.len(),
            want.len(),
            "{filter}: {:?}",
            got.iter().map(|g| g.0.len()).collect::<Vec<_>>()
        );
        for (g, &i) in got.iter().zip(&want) {
            let s = &sent[i];
            let l3_at = if [2, 3, 5, 9].contains(&i) { 18 } else { 14 };
            let mut e = vec![0x08, 0x00, 0, 0];
            e.extend_from_slice(&ifindex.to_be_bytes());
            e.extend_from_slice(&[0, 1, 1, 6]); // ARPHRD_ETHER, PACKET_BROADCAST, 6-byte address
            e.extend_from_slice(&SRC);
            e.extend_from_slice(&[0, 0]);
            e.extend_from_slice(&s[l3_at..]);
            assert_eq!(g.1 as usize, e.len(), "{filter}: wire length of frame {i}");
            e.truncate(100);
            assert_eq!(g.0, e, "{filter}: frame {i}");
        }
        assert_eq!(stats.captured, want.len() as u64);
        if placement == Placement::Kernel {
            // Rejected packets never reached the ring.
            assert_eq!(
                stats.received_by_filter,
                want.len() as u64,
                "{filter}: {stats:?}"
            );
            assert_eq!(stats.filtered_in_userland, 0);
        }
    }
}

#[test]
fn capture_main_writes_pcap_and_stops_at_count() {
    let _serial = MAIN_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let pair = setup_or_skip!();
    let (sent, want) = frames();
    let dir = std::env::temp_dir().join(format!(
        "sift-capture-{}-{}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::SeqCst)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("out.pcap");
    let mut args = CaptureArgs::new(&pair.vb);
    args.expression = FILTER.into();
    args.count = Some(want.len() as u64);
    args.write = Some(path.clone());
    args.ring = small_ring();
    args.quiet = true;
    args.nano = true;
    let run = in_netns(&pair.b, move || sift_capture::capture_main(&args));
    // The capture starts asynchronously: send rounds of frames until it has
    // its count (bounded number of rounds).
    let va = pair.va.clone();
    let sender = in_netns(&pair.a, move || {
        let inj = Injector::open(&va).unwrap();
        for _ in 0..400 {
            if run.is_finished() {
                break;
            }
            for f in &sent {
                inj.send(f).unwrap();
            }
            thread::sleep(Duration::from_millis(25));
        }
        run.join().unwrap()
    });
    let stats = sender.join().unwrap().expect("capture_main");
    assert_eq!(stats.captured, want.len() as u64);
    let cap = sift_pcap::Capture::open(&path).unwrap();
    assert_eq!(cap.linktype(), 1);
    assert_eq!(cap.snaplen(), 262_144);
    let (sent, _) = frames();
    let accepted: Vec<&Vec<u8>> = want.iter().map(|&i| &sent[i]).collect();
    let mut n = 0;
    for p in cap.packets() {
        let p = p.unwrap();
        assert!(
            accepted.iter().any(|a| a[..] == *p.data),
            "unexpected record {:?}",
            p.data
        );
        assert_eq!(p.wire_len as usize, p.data.len());
        n += 1;
    }
    assert_eq!(n, want.len());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn sigint_stops_capture_and_the_file_is_complete() {
    stop_signal_leaves_a_complete_file(libc::SIGINT);
}

/// Captures to a file until `signal` (sent to this process) stops the
/// capture: every packet captured is in the file, which ends with the last
/// round sent, complete.
fn stop_signal_leaves_a_complete_file(signal: libc::c_int) {
    let _serial = MAIN_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let pair = setup_or_skip!();
    let (sent, want) = frames();
    let dir = std::env::temp_dir().join(format!(
        "sift-capture-{}-{}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::SeqCst)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("out.pcap");
    let mut args = CaptureArgs::new(&pair.vb);
    args.expression = FILTER.into();
    args.write = Some(path.clone());
    args.packet_buffered = true;
    args.ring = small_ring();
    args.quiet = true;
    let run = in_netns(&pair.b, move || sift_capture::capture_main(&args));
    let va = pair.va.clone();
    let p2 = path.clone();
    let rounds = in_netns(&pair.a, move || {
        let inj = Injector::open(&va).unwrap();
        // Send until the first packet is in the file (the handlers are
        // installed by then), then a few more rounds.
        let mut extra = None;
        for round in 0..400u32 {
            for f in &sent {
                inj.send(f).unwrap();
            }
            thread::sleep(Duration::from_millis(25));
            let size = std::fs::metadata(&p2).map(|m| m.len()).unwrap_or(0);
            if extra.is_none() && size > 24 {
                extra = Some(round + 3);
            }
            if extra == Some(round) {
                break;
            }
        }
        extra.is_some()
    })
    .join()
    .unwrap();
    assert!(rounds, "capture never wrote a packet");
    // SAFETY: sending SIGINT or SIGTERM to this process; the capture
    // installed its handler (it wrote a packet), which only sets a flag.
    unsafe {
        libc::kill(libc::getpid(), signal);
    }
    let stats = run.join().unwrap().expect("capture_main");
    let cap = sift_pcap::Capture::open(&path).unwrap();
    let (sent, _) = frames();
    let accepted: Vec<&Vec<u8>> = want.iter().map(|&i| &sent[i]).collect();
    let mut n = 0u64;
    for p in cap.packets() {
        let p = p.unwrap();
        assert!(accepted.iter().any(|a| a[..] == *p.data));
        n += 1;
    }
    assert_eq!(n, stats.captured, "every packet captured is in the file");
    // The last round was sent after the capture had started and before the
    // stop: all of its accepted frames end the file, in order.
    let records: Vec<Vec<u8>> = cap.packets().map(|p| p.unwrap().data.to_vec()).collect();
    let tail = &records[records.len().saturating_sub(want.len())..];
    let expect: Vec<Vec<u8>> = accepted.iter().map(|a| a.to_vec()).collect();
    assert_eq!(tail, &expect[..], "the last round is complete");
    assert!(stats.captured > 0);
    assert_eq!(stats.dropped_by_kernel, 0);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn filter_swap_refilters_packets_already_in_the_ring() {
    let pair = setup_or_skip!();
    let (sent, _) = frames();
    let (ready_tx, ready_rx) = mpsc::channel();
    let (sent_tx, sent_rx) = mpsc::channel::<()>();
    let vb = pair.vb.clone();
    let rx = in_netns(&pair.b, move || {
        let mut cfg = Config::new(&vb);
        cfg.ring = small_ring();
        let mut cap = Capture::open(&cfg).unwrap();
        let f = sift::Filter::new("udp", &cap.compile_options()).unwrap();
        cap.set_filter(Some(f)).unwrap();
        cap.activate().unwrap();
        ready_tx.send(()).unwrap();
        // Frames arrive under "udp"; nothing is read until the swap.
        sent_rx.recv().unwrap();
        let f =
            sift::Filter::new("udp dst port 1000 and not vlan", &cap.compile_options()).unwrap();
        assert_eq!(cap.set_filter(Some(f)).unwrap(), Placement::Kernel);
        ready_tx.send(()).unwrap();
        let mut got = Vec::new();
        let end = Instant::now() + Duration::from_secs(20);
        while Instant::now() < end && got.iter().filter(|d: &&Vec<u8>| is_marker(d)).count() < 2 {
            if let Some(mut b) = cap.next_block(50).unwrap() {
                got.extend(b.packets().map(|p| p.data.to_vec()));
            }
        }
        got
    });
    ready_rx.recv().unwrap();
    let va = pair.va.clone();
    let tx_ns = pair.a.clone();
    let send_all = move || {
        let va = va.clone();
        let sent = sent.clone();
        in_netns(&tx_ns, move || {
            let inj = Injector::open(&va).unwrap();
            for f in &sent {
                inj.send(f).unwrap();
            }
        })
        .join()
        .unwrap()
    };
    send_all();
    // Give the frames time to land in the ring before swapping (the
    // assertion below holds either way).
    thread::sleep(Duration::from_millis(50));
    sent_tx.send(()).unwrap();
    ready_rx.recv().unwrap();
    send_all();
    let got = rx.join().unwrap();
    // Both rounds give exactly the untagged UDP-to-1000 frames: 0, 8, 11.
    let (sent, _) = frames();
    let one: Vec<Vec<u8>> = [0usize, 8, 11].iter().map(|&i| sent[i].clone()).collect();
    let want: Vec<Vec<u8>> = one.iter().chain(&one).cloned().collect();
    assert_eq!(got, want);
}

#[test]
fn kernel_drops_are_counted_and_accumulated() {
    let pair = setup_or_skip!();
    let (ready_tx, ready_rx) = mpsc::channel();
    let (sent_tx, sent_rx) = mpsc::channel::<()>();
    let vb = pair.vb.clone();
    let rx = in_netns(&pair.b, move || {
        let mut cfg = Config::new(&vb);
        // Two small blocks that are not read while the frames arrive.
        cfg.ring = RingConfig {
            block_size: 1 << 14,
            block_count: 2,
            block_timeout_ms: 10,
        };
        let mut cap = Capture::open(&cfg).unwrap();
        let f = sift::Filter::new("udp dst port 1000", &cap.compile_options()).unwrap();
        cap.set_filter(Some(f)).unwrap();
        cap.activate().unwrap();
        ready_tx.send(()).unwrap();
        sent_rx.recv().unwrap();
        let first = cap.stats().unwrap();
        let mut captured = 0u64;
        while let Some(mut b) = cap.next_block(200).unwrap() {
            captured += b.packets().count() as u64;
        }
        // The counters reset in the kernel on every read; sift accumulates.
        let second = cap.stats().unwrap();
        (first, second, captured)
    });
    ready_rx.recv().unwrap();
    let va = pair.va.clone();
    in_netns(&pair.a, move || {
        let inj = Injector::open(&va).unwrap();
        for n in 0..300u32 {
            inj.send(&eth(&[], 0x0800, &udp(1000, &[n as u8; 900])))
                .unwrap();
            inj.send(&eth(&[], 0x0800, &udp(2000, &[n as u8; 900])))
                .unwrap();
        }
    })
    .join()
    .unwrap();
    thread::sleep(Duration::from_millis(100));
    sent_tx.send(()).unwrap();
    let (first, second, captured) = rx.join().unwrap();
    assert_eq!(first.received_by_filter, 300, "{first:?}");
    assert!(first.dropped_by_kernel > 0, "{first:?}");
    assert_eq!(second.received_by_filter, 300, "{second:?}");
    assert_eq!(second.dropped_by_kernel, first.dropped_by_kernel);
    assert_eq!(captured + second.dropped_by_kernel, 300, "{second:?}");
    assert_eq!(second.captured, captured);
}

/// Captured records: (data, wire length).
type Records = Vec<(Vec<u8>, u32)>;

/// Captures `sent` with sift (`cfg`, `filter`) while tcpdump captures the
/// same traffic on `iface` with the same filter; returns (sift's records,
/// tcpdump's records) as (data, wire length), or `None` without tcpdump.
fn side_by_side_with_tcpdump(
    pair: &Pair,
    iface: &str,
    cfg: Config,
    filter: &'static str,
    sent: Vec<Vec<u8>>,
) -> Option<(Records, Records)> {
    if Command::new("tcpdump").arg("--version").output().is_err() {
        eprintln!("SKIPPED: tcpdump is not installed");
        return None;
    }
    let dir = std::env::temp_dir().join(format!(
        "sift-capture-{}-{}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::SeqCst)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let theirs = dir.join("tcpdump.pcap");
    // tcpdump in the capturing namespace, packet-buffered; it says
    // "listening on" once its socket is bound.
    let mut td = Command::new("ip")
        .args(["netns", "exec", &pair.b, "tcpdump", "-i", iface, "-U", "-w"])
        .arg(&theirs)
        .arg(filter)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = std::io::BufReader::new(td.stderr.take().unwrap());
    let mut line = String::new();
    while !line.contains("listening on") {
        line.clear();
        assert!(
            std::io::BufRead::read_line(&mut err, &mut line).unwrap() > 0,
            "tcpdump exited"
        );
    }
    let (got, _, _) = capture_until_marker(pair, cfg, Some(filter), sent);
    // Stop tcpdump once it has written the marker too (bounded wait).
    let end = Instant::now() + Duration::from_secs(20);
    let mut records = Vec::new();
    while Instant::now() < end {
        if let Ok(c) = sift_pcap::Capture::open(&theirs) {
            records = c
                .packets()
                .filter_map(|p| p.ok())
                .map(|p| (p.data.to_vec(), p.wire_len))
                .collect();
            if records.iter().any(|(d, _)| is_marker(d)) {
                break;
            }
        }
        thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: signalling the tcpdump child we spawned (its pid is live
    // until we wait for it).
    unsafe {
        libc::kill(td.id() as i32, libc::SIGINT);
    }
    let _ = td.wait();
    std::fs::remove_dir_all(&dir).unwrap();
    Some((got.into_iter().map(|(d, l, _)| (d, l)).collect(), records))
}

#[test]
fn same_records_as_tcpdump_on_the_same_traffic() {
    let pair = setup_or_skip!();
    let (sent, want) = frames();
    let mut cfg = Config::new(&pair.vb);
    cfg.ring = small_ring();
    let vb = pair.vb.clone();
    let Some((ours, records)) = side_by_side_with_tcpdump(&pair, &vb, cfg, FILTER, sent.clone())
    else {
        return;
    };
    assert_eq!(ours.len(), want.len());
    // One known difference: libpcap's live-capture code tests `vlan` on the
    // kernel's VLAN metadata and runs the rest of the filter on the frame
    // with its tag stripped, so `udp dst port 1000` also matches the
    // VLAN-200 frame 3 (which `tcpdump -r` on tcpdump's own file then
    // rejects). sift filters the frame as written, tag included.
    let mut expect = ours.clone();
    expect.insert(2, (sent[3].clone(), sent[3].len() as u32));
    assert_eq!(
        records, expect,
        "tcpdump and sift captured different records"
    );
    let offline = sift::Filter::new(FILTER, &sift::CompileOptions::default()).unwrap();
    assert!(!offline.matches(&sent[3], sent[3].len() as u32));
}

#[test]
fn same_records_as_tcpdump_on_the_any_device() {
    let pair = setup_or_skip!();
    let (sent, _) = frames();
    let mut cfg = Config::new("any");
    cfg.ring = small_ring();
    let Some((ours, records)) =
        side_by_side_with_tcpdump(&pair, "any", cfg, "udp dst port 1000", sent)
    else {
        return;
    };
    assert_eq!(ours.len(), 7);
    assert_eq!(
        records, ours,
        "tcpdump -i any and sift captured different records"
    );
}

/// Two members of hash fanout group `group` on `iface` (small rings,
/// filter `udp dst port 1000`), activated one after the other (`held`:
/// with `Capture::activate_held`).
fn fanout_group(iface: &str, group: u16, held: bool) -> Vec<Capture> {
    use sift_capture::{Fanout, FanoutMode};
    (0..2)
        .map(|_| {
            let mut cfg = Config::new(iface);
            cfg.ring = small_ring();
            cfg.fanout = Some(Fanout {
                group,
                mode: FanoutMode::Hash,
                defrag: true,
            });
            let mut cap = Capture::open(&cfg).unwrap();
            let f = sift::Filter::new("udp dst port 1000", &cap.compile_options()).unwrap();
            cap.set_filter(Some(f)).unwrap();
            if held {
                cap.activate_held().unwrap();
            } else {
                cap.activate().unwrap();
            }
            cap
        })
        .collect()
}

/// The packets each of `caps` takes, until `total` in all (or 20 s).
fn take_until(caps: &mut [Capture], total: usize) -> Vec<Vec<Vec<u8>>> {
    let mut got: Vec<Vec<Vec<u8>>> = vec![Vec::new(); caps.len()];
    let end = Instant::now() + Duration::from_secs(20);
    while Instant::now() < end && got.iter().map(|g| g.len()).sum::<usize>() < total {
        for (k, cap) in caps.iter_mut().enumerate() {
            if let Some(mut b) = cap.next_block(10).unwrap() {
                got[k].extend(b.packets().map(|p| p.data.to_vec()));
            }
        }
    }
    got
}

#[test]
fn fanout_group_sees_every_packet_once_and_keeps_flows_together() {
    let pair = setup_or_skip!();
    // 64 flows (source ports) x 4 packets, then the marker.
    let mut sent = Vec::new();
    for round in 0..4u8 {
        for flow in 0..64u16 {
            let mut p = udp(1000, &[round; 8]);
            p[20..22].copy_from_slice(&(5000 + flow).to_be_bytes());
            sent.push(eth(&[], 0x0800, &p));
        }
    }
    sent.push(marker());
    let total = sent.len();
    let (ready_tx, ready_rx) = mpsc::channel();
    let vb = pair.vb.clone();
    let group = (std::process::id() as u16) ^ 0x5a5a;
    let rx = in_netns(&pair.b, move || {
        let mut caps = fanout_group(&vb, group, false);
        ready_tx.send(()).unwrap();
        take_until(&mut caps, total)
    });
    ready_rx.recv().unwrap();
    let va = pair.va.clone();
    let frames = sent.clone();
    in_netns(&pair.a, move || {
        let inj = Injector::open(&va).unwrap();
        for f in &frames {
            inj.send(f).unwrap();
        }
    })
    .join()
    .unwrap();
    let got = rx.join().unwrap();
    let mut all: Vec<Vec<u8>> = got.iter().flatten().cloned().collect();
    let mut want = sent.clone();
    all.sort();
    want.sort();
    let (n0, n1) = (got[0].len(), got[1].len());
    assert!(
        all == want,
        "every packet exactly once across the group: got {n0} + {n1}, want {}",
        want.len()
    );
    // A flow's packets all went to one socket.
    let port = |d: &Vec<u8>| u16::from_be_bytes([d[34], d[35]]);
    for flow in 5000..5064u16 {
        let homes = got
            .iter()
            .filter(|g| g.iter().any(|d| port(d) == flow))
            .count();
        assert_eq!(homes, 1, "flow {flow}");
    }
}

/// Members activated held (`Capture::activate_held`) take no packet, not
/// even the frames sent while the group is complete but not yet released;
/// once released they take every packet, each flow on one member. (This is
/// how `--fanout` forms its group: members joining one after another while
/// traffic flows would split flows between them.)
#[test]
fn held_fanout_members_take_nothing_until_released() {
    let pair = setup_or_skip!();
    let batch = |round: u8| -> Vec<Vec<u8>> {
        (0..64u16)
            .map(|flow| {
                let mut p = udp(1000, &[round; 8]);
                p[20..22].copy_from_slice(&(6000 + flow).to_be_bytes());
                eth(&[], 0x0800, &p)
            })
            .collect()
    };
    let (held, released) = (batch(1), batch(2));
    let (to_tx, to_rx) = mpsc::channel::<()>();
    let (back_tx, back_rx) = mpsc::channel::<()>();
    let vb = pair.vb.clone();
    let group = (std::process::id() as u16) ^ 0x3c3c;
    let total = released.len();
    let rx = in_netns(&pair.b, move || {
        let mut caps = fanout_group(&vb, group, true);
        to_tx.send(()).unwrap(); // held: send the first batch
        back_rx.recv().unwrap();
        let mut early = 0;
        let end = Instant::now() + Duration::from_millis(300);
        while Instant::now() < end {
            for cap in caps.iter_mut() {
                if let Some(mut b) = cap.next_block(10).unwrap() {
                    early += b.packets().count();
                }
            }
        }
        for cap in caps.iter_mut() {
            cap.release().unwrap();
        }
        to_tx.send(()).unwrap(); // released: send the second batch
        (early, take_until(&mut caps, total))
    });
    let va = pair.va.clone();
    let batches = [held, released.clone()];
    in_netns(&pair.a, move || {
        let inj = Injector::open(&va).unwrap();
        for frames in &batches {
            to_rx.recv().unwrap();
            for f in frames {
                inj.send(f).unwrap();
            }
            let _ = back_tx.send(());
        }
    })
    .join()
    .unwrap();
    let (early, got) = rx.join().unwrap();
    assert_eq!(early, 0, "packets taken while held");
    let mut all: Vec<Vec<u8>> = got.iter().flatten().cloned().collect();
    let mut want = released;
    all.sort();
    want.sort();
    assert!(all == want, "after release, every packet once: got {} + {}", got[0].len(), got[1].len());
    let port = |d: &Vec<u8>| u16::from_be_bytes([d[34], d[35]]);
    for flow in 6000..6064u16 {
        let homes = got.iter().filter(|g| g.iter().any(|d| port(d) == flow)).count();
        assert_eq!(homes, 1, "flow {flow}");
    }
}

/// Runs in a child process without capabilities (see the next test); a
/// no-op otherwise.
#[test]
fn permission_child() {
    if std::env::var_os("SIFT_CAPTURE_PERMISSION_CHILD").is_none() {
        return;
    }
    let e = Capture::open(&Config::new("lo")).unwrap_err();
    assert!(matches!(e, sift_capture::Error::Permission), "{e:?}");
    println!("CHILD-SAYS: {e}");
    let e = sift_capture::capture_main(&CaptureArgs::new("lo")).unwrap_err();
    println!("CHILD-MAIN-SAYS: {e}");
}

#[test]
fn without_cap_net_raw_the_error_is_clear() {
    if Command::new("setpriv").arg("--version").output().is_err() {
        eprintln!("SKIPPED: setpriv is not installed");
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let out = Command::new("setpriv")
        .args([
            "--bounding-set=-all",
            "--inh-caps=-all",
            "--ambient-caps=-all",
            "--",
        ])
        .arg(&exe)
        .args([
            "--exact",
            "permission_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("SIFT_CAPTURE_PERMISSION_CHILD", "1")
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    if !out.status.success() && text.contains("setpriv") {
        eprintln!("SKIPPED: cannot drop capabilities here ({text})");
        return;
    }
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("CHILD-SAYS: live capture needs root or CAP_NET_RAW"),
        "{text}"
    );
    assert!(
        text.contains("CHILD-MAIN-SAYS: live capture needs root or CAP_NET_RAW"),
        "{text}"
    );
}

#[test]
fn capture_main_fanout_workers_write_one_file_each() {
    let pair = setup_or_skip!();
    let _serial = MAIN_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let mut sent = Vec::new();
    for flow in 0..64u16 {
        let mut p = udp(1000, b"fanout");
        p[20..22].copy_from_slice(&(7000 + flow).to_be_bytes());
        sent.push(eth(&[], 0x0800, &p));
    }
    let dir = std::env::temp_dir().join(format!(
        "sift-capture-{}-{}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::SeqCst)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("out.pcap");
    let mut args = CaptureArgs::new(&pair.vb);
    args.expression = "udp dst port 1000".into();
    args.count = Some(200);
    args.write = Some(path.clone());
    args.ring = small_ring();
    args.quiet = true;
    args.fanout = 2;
    let run = in_netns(&pair.b, move || sift_capture::capture_main(&args));
    let va = pair.va.clone();
    let frames = sent.clone();
    let stats = in_netns(&pair.a, move || {
        let inj = Injector::open(&va).unwrap();
        let refs: Vec<&[u8]> = frames.iter().map(|f| f.as_slice()).collect();
        for _ in 0..400 {
            if run.is_finished() {
                break;
            }
            inj.send_batch(&refs).unwrap();
            thread::sleep(Duration::from_millis(25));
        }
        run.join().unwrap()
    })
    .join()
    .unwrap()
    .expect("capture_main");
    assert_eq!(stats.captured, 200);
    let mut per_file = Vec::new();
    for i in 0..2 {
        let cap = sift_pcap::Capture::open(&dir.join(format!("out.{i}.pcap"))).unwrap();
        let recs: Vec<Vec<u8>> = cap.packets().map(|p| p.unwrap().data.to_vec()).collect();
        per_file.push(recs);
    }
    assert_eq!(per_file.iter().map(|f| f.len()).sum::<usize>(), 200);
    let port = |d: &Vec<u8>| u16::from_be_bytes([d[34], d[35]]);
    for f in per_file.iter().flatten() {
        assert!(sent.contains(f));
    }
    for flow in 7000..7064u16 {
        let homes = per_file
            .iter()
            .filter(|f| f.iter().any(|d| port(d) == flow))
            .count();
        assert!(homes <= 1, "flow {flow} split over workers");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Sends `sent` in rounds (25 ms apart) into `pair.va` until `run` ends
/// or the rounds run out; returns `run`'s result.
fn feed_until_done<T: Send + 'static>(
    pair: &Pair,
    sent: Vec<Vec<u8>>,
    run: thread::JoinHandle<T>,
    rounds: u32,
) -> T {
    let va = pair.va.clone();
    in_netns(&pair.a, move || {
        let inj = Injector::open(&va).unwrap();
        for _ in 0..rounds {
            if run.is_finished() {
                break;
            }
            for f in &sent {
                inj.send(f).unwrap();
            }
            thread::sleep(Duration::from_millis(25));
        }
        run.join().unwrap()
    })
    .join()
    .unwrap()
}

/// Every record of `files` (in order) is an accepted frame; returns how
/// many there are.
fn count_accepted_records(files: &[std::path::PathBuf]) -> u64 {
    let (sent, want) = frames();
    let accepted: Vec<&Vec<u8>> = want.iter().map(|&i| &sent[i]).collect();
    let mut n = 0;
    for f in files {
        let cap = sift_pcap::Capture::open(f)
            .unwrap_or_else(|e| panic!("{}: not a valid capture: {e}", f.display()));
        for p in cap.packets() {
            let p = p.unwrap_or_else(|e| panic!("{}: damaged: {e}", f.display()));
            assert!(accepted.iter().any(|a| a[..] == *p.data));
            n += 1;
        }
    }
    n
}

fn test_dir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "sift-capture-{}-{}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::SeqCst)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn size_rotation_writes_pcapng_files_and_loses_nothing() {
    let _serial = MAIN_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let pair = setup_or_skip!();
    let (sent, want) = frames();
    let dir = test_dir();
    let mut args = CaptureArgs::new(&pair.vb);
    args.expression = FILTER.into();
    let total = want.len() as u64 * 20;
    args.count = Some(total);
    args.write = Some(dir.join("out.pcapng"));
    args.format = sift_capture::output::FileFormat::Pcapng;
    args.rotation.file_size = Some(4000);
    args.ring = small_ring();
    args.quiet = true;
    args.nano = true;
    let run = in_netns(&pair.b, move || sift_capture::capture_main(&args));
    let stats = feed_until_done(&pair, sent, run, 400).expect("capture_main");
    assert_eq!(stats.captured, total);
    // tcpdump's names: out.pcapng, out.pcapng1, out.pcapng2, ...
    let mut files = vec![dir.join("out.pcapng")];
    for i in 1.. {
        let f = dir.join(format!("out.pcapng{i}"));
        if !f.exists() {
            break;
        }
        files.push(f);
    }
    assert!(files.len() >= 3, "rotated into {} files", files.len());
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), files.len());
    for f in &files {
        let c = sift_pcap::Capture::open(f).unwrap();
        assert_eq!(c.format(), sift_pcap::Format::Pcapng);
        assert_eq!(c.linktype(), 1);
    }
    assert_eq!(
        count_accepted_records(&files),
        total,
        "nothing lost across files"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn time_rotation_names_files_with_strftime() {
    let _serial = MAIN_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let pair = setup_or_skip!();
    let (sent, want) = frames();
    let dir = test_dir();
    let mut args = CaptureArgs::new(&pair.vb);
    args.expression = FILTER.into();
    let total = want.len() as u64 * 100; // 100 rounds: about 2.5 s
    args.count = Some(total);
    // %s: seconds since the epoch, independent of the time zone.
    args.write = Some(dir.join("g-%s.pcap"));
    args.rotation.seconds = Some(1);
    args.ring = small_ring();
    args.quiet = true;
    let t0 = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let run = in_netns(&pair.b, move || sift_capture::capture_main(&args));
    let stats = feed_until_done(&pair, sent, run, 1000).expect("capture_main");
    assert_eq!(stats.captured, total);
    let mut stamps: Vec<u64> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| {
            let name = e.unwrap().file_name().to_string_lossy().into_owned();
            let t = name
                .strip_prefix("g-")
                .and_then(|x| x.strip_suffix(".pcap"));
            t.and_then(|t| t.parse().ok())
                .unwrap_or_else(|| panic!("unexpected file {name}"))
        })
        .collect();
    stamps.sort();
    assert!(stamps.len() >= 2, "{stamps:?}");
    assert!(stamps[0] >= t0 && stamps.windows(2).all(|w| w[1] > w[0]));
    let files: Vec<_> = stamps
        .iter()
        .map(|t| dir.join(format!("g-{t}.pcap")))
        .collect();
    assert_eq!(
        count_accepted_records(&files),
        total,
        "nothing lost across files"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

fn file_contains(path: &std::path::Path, needle: &[u8]) -> bool {
    std::fs::read(path).is_ok_and(|b| b.windows(needle.len()).any(|w| w == needle))
}

#[test]
fn dynamic_updates_apply_to_the_running_capture() {
    use std::io::Write as _;
    let _serial = MAIN_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let pair = setup_or_skip!();
    let dir = test_dir();
    let fifo = dir.join("updates");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let path = dir.join("out.pcap");
    let mut args = CaptureArgs::new(&pair.vb);
    args.expression = "udp dst port 1000".into();
    args.dynamic = true;
    args.updates = Some(fifo.clone());
    args.write = Some(path.clone());
    args.packet_buffered = true;
    args.ring = small_ring();
    args.quiet = true;
    let run = in_netns(&pair.b, move || sift_capture::capture_main(&args));
    // Opening the FIFO waits for the capture to open it.
    let mut updates = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
    let va = pair.va.clone();
    let p2 = path.clone();
    let sender = in_netns(&pair.a, move || {
        let inj = Injector::open(&va).unwrap();
        let send = |port: u16, text: &str| {
            inj.send(&eth(&[], 0x0800, &udp(port, text.as_bytes())))
                .unwrap()
        };
        // Sends `port`/`text` (again every 25 ms) until it is in the file.
        let until_seen = |port: u16, text: &str| {
            for _ in 0..400 {
                send(port, text);
                thread::sleep(Duration::from_millis(25));
                if file_contains(&p2, text.as_bytes()) {
                    return;
                }
            }
            panic!("{text} never captured");
        };
        let mut update = |line: &str| {
            updates.write_all(line.as_bytes()).unwrap();
            updates.flush().unwrap();
        };
        until_seen(1000, "SYNC-0"); // the capture is running
        send(1000, "before-1000");
        send(2121, "before-2121");
        until_seen(1000, "SYNC-1");
        update("+udp dst port 2121\n");
        until_seen(2121, "PROBE-A");
        send(1000, "after-1000");
        send(2121, "after-2121");
        until_seen(1000, "SYNC-2");
        // A bad line changes nothing; the capture goes on.
        update("+udp dst port 99999\n-udp dst port 2121\n+udp dst port 3333\n");
        until_seen(3333, "PROBE-B");
        send(2121, "late-2121");
        send(1000, "late-1000");
        until_seen(1000, "SYNC-3");
        update("udp dst port 4444\n");
        until_seen(4444, "PROBE-C");
        send(1000, "last-1000");
        until_seen(4444, "SYNC-4");
        sift_capture::request_stop();
        run.join().unwrap()
    });
    let stats = sender.join().unwrap().expect("capture_main");
    assert!(stats.captured >= 10);
    for (text, captured) in [
        ("before-1000", true),
        ("before-2121", false),
        ("after-1000", true),
        ("after-2121", true),
        ("late-2121", false),
        ("late-1000", true),
        ("last-1000", false),
    ] {
        assert_eq!(file_contains(&path, text.as_bytes()), captured, "{text}");
    }
    // The file is a valid capture of whole records.
    let cap = sift_pcap::Capture::open(&path).unwrap();
    assert_eq!(cap.packets().count() as u64, stats.captured);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn pcapng_file_is_written_from_the_ring_and_reads_back() {
    let _serial = MAIN_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let pair = setup_or_skip!();
    let (sent, want) = frames();
    let dir = test_dir();
    let path = dir.join("out.pcapng");
    let mut args = CaptureArgs::new(&pair.vb);
    args.expression = FILTER.into();
    let total = want.len() as u64 * 3;
    args.count = Some(total);
    args.write = Some(path.clone());
    args.format = sift_capture::output::FileFormat::Pcapng;
    args.ring = small_ring();
    args.quiet = true;
    args.nano = true;
    let run = in_netns(&pair.b, move || sift_capture::capture_main(&args));
    let stats = feed_until_done(&pair, sent, run, 400).expect("capture_main");
    assert_eq!(stats.captured, total);
    let cap = sift_pcap::Capture::open(&path).unwrap();
    assert_eq!(cap.format(), sift_pcap::Format::Pcapng);
    assert_eq!((cap.linktype(), cap.snaplen()), (1, 262_144));
    assert_eq!(count_accepted_records(std::slice::from_ref(&path)), total);
    // libpcap reads it too (nanosecond if_tsresol included).
    if let Ok(out) = Command::new("tcpdump")
        .args(["--time-stamp-precision", "nano", "-r"])
        .arg(&path)
        .args(["-w", "-"])
        .output()
    {
        if out.status.success() {
            let back = sift_pcap::Capture::from_bytes(out.stdout).unwrap();
            let a: Vec<_> = cap.packets().map(|p| p.unwrap()).collect();
            let b: Vec<_> = back.packets().map(|p| p.unwrap()).collect();
            assert_eq!(a.len(), b.len());
            for (x, y) in a.iter().zip(&b) {
                assert_eq!((x.data, x.wire_len), (y.data, y.wire_len));
                assert_eq!(x.ts.as_unix_nanos(), y.ts.as_unix_nanos());
            }
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn sigterm_stops_capture_and_the_file_is_complete() {
    stop_signal_leaves_a_complete_file(libc::SIGTERM);
}

/// The records of the pcap file at `path` whose bytes contain `text`.
fn records_containing(path: &std::path::Path, text: &str) -> usize {
    let cap = sift_pcap::Capture::open(path)
        .unwrap_or_else(|e| panic!("{}: not a valid capture: {e}", path.display()));
    cap.packets()
        .map(|p| p.unwrap_or_else(|e| panic!("{}: damaged: {e}", path.display())))
        .filter(|p| p.data.windows(text.len()).any(|w| w == text.as_bytes()))
        .count()
}

#[test]
fn fanout_workers_all_apply_the_updates() {
    use std::io::Write as _;
    let _serial = MAIN_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let pair = setup_or_skip!();
    let dir = test_dir();
    let fifo = dir.join("updates");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let path = dir.join("out.pcap");
    let files = [dir.join("out.0.pcap"), dir.join("out.1.pcap")];
    let mut args = CaptureArgs::new(&pair.vb);
    args.expression = "udp dst port 1000".into();
    args.dynamic = true;
    args.updates = Some(fifo.clone());
    args.write = Some(path);
    args.ring = small_ring();
    args.quiet = true;
    args.fanout = 2;
    let run = in_netns(&pair.b, move || sift_capture::capture_main(&args));
    let mut updates = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
    let va = pair.va.clone();
    let watched = files.clone();
    let sender = in_netns(&pair.a, move || {
        let inj = Injector::open(&va).unwrap();
        // 64 flows (source ports): the hash spreads them over both workers.
        let send = |dport: u16, text: &str| {
            let frames: Vec<Vec<u8>> = (0..64u16)
                .map(|flow| {
                    let mut p = udp(dport, text.as_bytes());
                    p[20..22].copy_from_slice(&(7000 + flow).to_be_bytes());
                    eth(&[], 0x0800, &p)
                })
                .collect();
            let refs: Vec<&[u8]> = frames.iter().map(|f| f.as_slice()).collect();
            assert_eq!(inj.send_batch(&refs).unwrap(), refs.len());
        };
        // Sends until every worker's file has `text`: then each worker has
        // written everything sent before.
        let until_both = |dport: u16, text: &str| {
            for _ in 0..400 {
                send(dport, text);
                thread::sleep(Duration::from_millis(25));
                if watched.iter().all(|f| file_contains(f, text.as_bytes())) {
                    return;
                }
            }
            panic!("{text} never reached both workers");
        };
        until_both(1000, "SYNC-0");
        send(2121, "before-2121");
        // Updates apply to what is read after them, ring contents included:
        // both workers must have read past before-2121 first.
        until_both(1000, "SYNC-A");
        updates.write_all(b"+udp dst port 2121\n").unwrap();
        updates.flush().unwrap();
        // Both workers have applied the update once both capture 2121.
        until_both(2121, "PROBE-A");
        send(2121, "after-2121");
        until_both(1000, "SYNC-1");
        // Lines apply in order: a worker that captures 3333 has withdrawn
        // 2121.
        updates
            .write_all(b"-udp dst port 2121\n+udp dst port 3333\n")
            .unwrap();
        updates.flush().unwrap();
        until_both(3333, "PROBE-B");
        send(2121, "gone-2121");
        until_both(1000, "SYNC-3");
        sift_capture::request_stop();
        run.join().unwrap()
    });
    let stats = sender.join().unwrap().expect("capture_main");
    let count = |text: &str| files.iter().map(|f| records_containing(f, text)).sum::<usize>();
    assert_eq!(count("before-2121"), 0);
    assert_eq!(count("after-2121"), 64, "every worker filters with the update");
    for f in &files {
        assert!(records_containing(f, "after-2121") > 0, "{}", f.display());
    }
    assert_eq!(count("gone-2121"), 0, "every worker withdrew the term");
    let total: usize = files
        .iter()
        .map(|f| sift_pcap::Capture::open(f).unwrap().packets().count())
        .sum();
    assert_eq!(total as u64, stats.captured);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn no_optimize_reaches_the_live_capture_filter() {
    let pair = setup_or_skip!();
    // (The optimizer finds nothing to change in a list of ports since
    // eae070a: lowering produces its best form.)
    let expr = "host 10.0.0.1 and tcp";
    let compiled = |optimize: bool| {
        let o = sift::CompileOptions {
            optimize,
            ..Default::default()
        };
        sift::Filter::new(expr, &o).unwrap().program().unwrap().to_vec()
    };
    let (optimized, unoptimized) = (compiled(true), compiled(false));
    assert_ne!(optimized, unoptimized, "pick an expression the optimizer changes");
    let vb = pair.vb.clone();
    let programs = in_netns(&pair.b, move || {
        let mut args = CaptureArgs::new(&vb);
        args.expression = expr.into();
        let with = sift_capture::open_capture(&args).unwrap();
        args.optimize = false;
        let without = sift_capture::open_capture(&args).unwrap();
        assert_eq!(with.placement(), Placement::Kernel);
        assert_eq!(without.placement(), Placement::Kernel);
        (
            with.filter_program().unwrap().to_vec(),
            without.filter_program().unwrap().to_vec(),
        )
    })
    .join()
    .unwrap();
    assert_eq!(programs, (optimized, unoptimized));
}

#[test]
fn any_device_refuses_vlan_as_tcpdump_does() {
    let pair = setup_or_skip!();
    let err = in_netns(&pair.b, || {
        let mut args = CaptureArgs::new("any");
        args.expression = "vlan".into();
        sift_capture::open_capture(&args).map(drop).unwrap_err()
    })
    .join()
    .unwrap();
    // tcpdump -i any vlan: "no VLAN support for Linux cooked v2".
    assert!(err.contains("no VLAN support for Linux cooked v2"), "{err}");
}
