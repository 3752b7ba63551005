//! Differential tests against the installed libpcap: a small C program
//! (tests/oracle/pcap_oracle.c, compiled here with `cc -lpcap`) prints what
//! libpcap delivers for a file — open result, snapshot length, the header
//! `pcap_dump` would write, every packet's lengths, `struct timeval` and
//! bytes, and whether reading ended in an error — in microsecond and
//! nanosecond precision. sift-pcap must print the same, error texts aside.
//!
//! Inputs: the corpus, thousands of mutations of it, and thousands of
//! generated pcap/pcapng files aimed at the edge cases (versions, magics,
//! snapshot lengths, link types with byte-swapped pseudo-headers, pcapng
//! options, block kinds, damaged lengths). Skipped with a notice when no C
//! compiler or libpcap is available.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{Endian, NgBuilder, PcapBuilder, Rng};
use sift_pcap::TsPrecision;

/// libpcap errors for files that sift-pcap reads on purpose (see the
/// crate docs): the packets before them must agree, sift-pcap goes on.
const EXTENSIONS: [&str; 3] = [
    "different from the type of the first interface",
    "different from the snapshot length of the first interface",
    "sections with different byte orders",
];

/// Builds the oracle once per test binary (the tests run in parallel).
fn build_oracle() -> Option<PathBuf> {
    static ORACLE: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    ORACLE.get_or_init(build_oracle_now).clone()
}

fn build_oracle_now() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let exe = dir.join("sift_pcap_oracle");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/oracle/pcap_oracle.c");
    let ok = Command::new("cc")
        .arg("-O1")
        .arg("-o")
        .arg(&exe)
        .arg(&src)
        .arg("-lpcap")
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if ok {
        Some(exe)
    } else {
        eprintln!("NOTICE: cannot build the libpcap oracle (cc / libpcap-dev missing); skipping");
        None
    }
}

/// Runs the oracle over many files at once; returns one text per file.
fn oracle(exe: &Path, files: &[PathBuf], precision: TsPrecision) -> Vec<String> {
    let mut out = Vec::new();
    for chunk in files.chunks(400) {
        let mut cmd = Command::new(exe);
        if precision == TsPrecision::Nano {
            cmd.arg("-n");
        }
        let o = cmd.args(chunk).output().expect("run oracle");
        let text = String::from_utf8_lossy(&o.stdout).into_owned();
        let mut parts: Vec<String> = text.split("FILE\n").skip(1).map(str::to_owned).collect();
        assert_eq!(parts.len(), chunk.len(), "oracle output for {} files", chunk.len());
        out.append(&mut parts);
    }
    out
}

/// Compares sift-pcap's reading of `bytes` with the oracle's text.
fn compare(name: &str, bytes: &[u8], want: &str, precision: TsPrecision) -> Result<(), String> {
    let got = common::read_through(bytes.to_vec(), precision);
    let want_clean = common::strip_messages(want);
    if got == want_clean {
        return Ok(());
    }
    let last = want.lines().last().unwrap_or("");
    if last.starts_with("ERR") && EXTENSIONS.iter().any(|x| last.contains(x)) {
        // Everything before libpcap's refusal must agree; sift goes on.
        let prefix = want_clean.strip_suffix("ERR\n").unwrap_or(&want_clean);
        if got.starts_with(prefix) {
            return Ok(());
        }
    }
    let (g, w): (Vec<_>, Vec<_>) = (got.lines().collect(), want_clean.lines().collect());
    let i = g.iter().zip(&w).position(|(a, b)| a != b).unwrap_or(g.len().min(w.len()));
    let cut = |s: &str| s.chars().take(160).collect::<String>();
    Err(format!(
        "{name} ({precision:?}): first difference at line {i}:\n  sift:    {}\n  libpcap: {}\n  (libpcap's last line: {})",
        cut(g.get(i).unwrap_or(&"<none>")),
        cut(w.get(i).unwrap_or(&"<none>")),
        cut(last)
    ))
}

/// Writes the inputs to files, runs the oracle in both precisions, compares.
fn run_batch(exe: &Path, tag: &str, inputs: &[Vec<u8>]) -> (usize, Vec<String>) {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("sift_pcap_{tag}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let files: Vec<PathBuf> = inputs
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let p = dir.join(format!("{i:05}.cap"));
            std::fs::write(&p, b).unwrap();
            p
        })
        .collect();
    let mut failures = Vec::new();
    let mut compared = 0;
    for precision in [TsPrecision::Micro, TsPrecision::Nano] {
        let texts = oracle(exe, &files, precision);
        if precision == TsPrecision::Micro {
            print_outcomes(tag, &texts);
        }
        for (i, (b, t)) in inputs.iter().zip(&texts).enumerate() {
            compared += 1;
            if let Err(e) = compare(&format!("{tag}/{i:05}"), b, t, precision) {
                failures.push(e);
            }
        }
    }
    if failures.is_empty() {
        let _ = std::fs::remove_dir_all(&dir);
    }
    (compared, failures)
}

/// Prints how libpcap's reads ended (message kinds, digits blanked), to
/// show which paths a batch covers.
fn print_outcomes(tag: &str, texts: &[String]) {
    let mut kinds: std::collections::BTreeMap<String, usize> = Default::default();
    let mut packets = 0;
    for t in texts {
        packets += t.lines().filter(|l| l.starts_with("P ")).count();
        let last = t.lines().last().unwrap_or("");
        let kind: String = last.chars().map(|c| if c.is_ascii_digit() { '#' } else { c }).take(70).collect();
        *kinds.entry(kind).or_default() += 1;
    }
    eprintln!("{tag}: {} files, {packets} packets delivered by libpcap; outcomes:", texts.len());
    for (k, n) in kinds {
        eprintln!("  {n:6}  {k}");
    }
}

fn report(what: &str, compared: usize, failures: &[String]) {
    eprintln!("{what}: {compared} comparisons, {} mismatches", failures.len());
    for f in failures.iter().take(20) {
        eprintln!("{f}");
    }
    assert!(failures.is_empty(), "{what}: {} mismatches (first ones above)", failures.len());
}

#[test]
fn corpus_agrees_with_libpcap() {
    let Some(exe) = build_oracle() else { return };
    let files = common::corpus_files();
    if files.is_empty() {
        eprintln!("NOTICE: no corpus; skipping");
        return;
    }
    let mut failures = Vec::new();
    let mut compared = 0;
    for precision in [TsPrecision::Micro, TsPrecision::Nano] {
        let texts = oracle(&exe, &files, precision);
        for (f, t) in files.iter().zip(&texts) {
            compared += 1;
            let bytes = std::fs::read(f).unwrap();
            if let Err(e) = compare(&f.display().to_string(), &bytes, t, precision) {
                failures.push(e);
            }
        }
    }
    report("corpus", compared, &failures);
}

#[test]
fn corpus_mutations_agree_with_libpcap() {
    let Some(exe) = build_oracle() else { return };
    let files = common::corpus_captures();
    if files.is_empty() {
        eprintln!("NOTICE: no corpus; skipping");
        return;
    }
    let mut rng = Rng::new(env_u64("SIFT_PCAP_SEED", 0x5eed_0001));
    let mut inputs = Vec::new();
    for f in &files {
        let mut base = std::fs::read(f).unwrap();
        // Long files: mutate a prefix (still a valid, truncated capture).
        base.truncate(16 * 1024);
        let fields = common::length_fields(&base);
        for _ in 0..30 {
            inputs.push(common::mutate(&mut rng, &base, &fields));
        }
    }
    let (n, failures) = run_batch(&exe, "mutations", &inputs);
    report("corpus mutations", n, &failures);
}

/// Random packet data; for the link types libpcap post-processes, shaped so
/// that the interesting paths are taken.
/// Random packet data plus, sometimes, an original length to use with it.
fn gen_data(rng: &mut Rng, linktype: u32, e: Endian) -> (Vec<u8>, Option<u32>) {
    let mut wire = None;
    let n = match rng.below(4) {
        0 => rng.below(24),
        1 => rng.below(80),
        _ => rng.below(300),
    } as usize;
    let mut d = rng.bytes(n);
    let put = |d: &mut Vec<u8>, at: usize, v: &[u8]| {
        if let Some(s) = d.get_mut(at..at + v.len()) {
            s.copy_from_slice(v);
        }
    };
    match linktype {
        113 | 276 => {
            let proto = [0x000Cu16, 0x000D, 0x000E, 0x0800][rng.below(4) as usize];
            let at = if linktype == 113 { 14 } else { 0 };
            put(&mut d, at, &proto.to_be_bytes());
        }
        117 => {
            let hl = [rng.below(256) as u8, 64, 61, 48, 52, 56, 45][rng.below(7) as usize];
            put(&mut d, 0, &[hl]);
        }
        239 => {
            put(&mut d, 0, &[2, 0, 0, 0]);
            let mut at = 4;
            while at + 4 <= d.len() && rng.chance(7, 8) {
                let len = match rng.below(5) {
                    0 => rng.below(65536) as u16,
                    1 => 0xFFFF - rng.below(4) as u16,
                    _ => (4 + rng.below(20)) as u16,
                };
                put(&mut d, at, &e.u16(len));
                at += usize::from(len).div_ceil(4) * 4;
                if len < 4 {
                    break;
                }
            }
        }
        189 | 220 if rng.chance(3, 4) => {
            d.resize(d.len().max(64 + 16 * rng.below(6) as usize), 0);
            let ndesc = rng.below(5) as u32;
            let urb_len = rng.below(400) as u32;
            put(&mut d, 8, &[if rng.chance(3, 4) { b'C' } else { b'S' }]);
            put(&mut d, 9, &[if rng.chance(3, 4) { 0 } else { 2 }]);
            put(&mut d, 10, &[if rng.chance(3, 4) { 0x81 } else { 1 }]);
            put(&mut d, 15, &[if rng.chance(3, 4) { 0 } else { b'<' }]);
            put(&mut d, 32, &e.u32(urb_len));
            let ndesc_field = match rng.below(10) {
                0 => rng.next_u64() as u32,
                1 => 120 + rng.below(20) as u32,
                _ => ndesc,
            };
            put(&mut d, 60, &e.u32(ndesc_field));
            for i in 0..ndesc as usize {
                let at = 64 + 16 * i;
                put(&mut d, at + 4, &e.u32(rng.below(300) as u32));
                put(&mut d, at + 8, &e.u32(if rng.chance(1, 4) { 0 } else { rng.below(200) as u32 }));
            }
            // The original length old libpcap versions computed, which
            // libpcap corrects.
            if rng.chance(2, 3) {
                wire = Some(ndesc_field.wrapping_mul(16).wrapping_add(64).wrapping_add(urb_len));
            }
        }
        _ => {}
    }
    (d, wire)
}

fn gen_linktype(rng: &mut Rng) -> u32 {
    const LTS: [u32; 17] = [1, 1, 12, 101, 113, 113, 117, 189, 220, 220, 239, 239, 276, 231, 249, 279, 147];
    if rng.chance(1, 12) {
        rng.below(300) as u32
    } else {
        LTS[rng.below(LTS.len() as u64) as usize]
    }
}

fn gen_snaplen(rng: &mut Rng) -> u32 {
    match rng.below(12) {
        0 => 0,
        1 => rng.below(100) as u32,
        6..=8 => 0,
        2 => 65535,
        3 => 262_144,
        4 => 262_145 + rng.below(1 << 20) as u32,
        5 => 0x8000_0000 + rng.below(1000) as u32,
        _ => rng.below(400) as u32,
    }
}

fn gen_pcap(rng: &mut Rng) -> Vec<u8> {
    let e = if rng.chance(1, 2) { Endian::Little } else { Endian::Big };
    let magic = [0xa1b2_c3d4u32, 0xa1b2_c3d4, 0xa1b2_3c4d, 0xa1b2_3c4d, 0xa1b2_cd34][rng.below(5) as usize];
    let version = match rng.below(20) {
        0 => (2, rng.below(6) as u16),
        1 => (543, rng.below(2) as u16),
        2 => (rng.below(4) as u16, 4),
        _ => (2, 4),
    };
    let mut lt = gen_linktype(rng);
    if rng.chance(1, 10) {
        lt |= (rng.below(64) as u32) << 26;
    }
    let snaplen = gen_snaplen(rng);
    let mut b = PcapBuilder::new(e, magic, version, snaplen, lt);
    for _ in 0..rng.below(10) {
        let (data, wire) = gen_data(rng, lt & 0x03FF_FFFF, e);
        let n = data.len() as u32;
        let secs = if rng.chance(1, 4) { rng.next_u64() as u32 } else { 1_600_000_000 + rng.below(1000) as u32 };
        let frac = if rng.chance(1, 4) { rng.next_u64() as u32 } else { rng.below(1_000_000_000) as u32 };
        let (cap, len) = match rng.below(6) {
            _ if wire.is_some() => (n, wire.unwrap_or(n)),
            0 => (n, n + rng.below(100) as u32),
            1 => (n, rng.below(u64::from(n) + 1) as u32),
            2 => (n, rng.next_u64() as u32),
            _ => (n, n),
        };
        // Versions before 2.3 store len first.
        b = b.record(secs, frac, cap, len, &data);
    }
    let mut v = b.bytes();
    if rng.chance(1, 8) {
        let cut = rng.below(v.len() as u64 + 1) as usize;
        v.truncate(cut);
    }
    v
}

fn gen_idb_options(rng: &mut Rng, e: Endian) -> Vec<u8> {
    let mut o = Vec::new();
    let mut kinds: Vec<u64> = (0..7).collect();
    for _ in 0..rng.below(4) {
        // Usually each option once (libpcap refuses duplicates).
        let k = if rng.chance(1, 10) { rng.below(7) } else if kinds.is_empty() { break } else {
            kinds.swap_remove(rng.below(kinds.len() as u64) as usize)
        };
        match k {
            0 => {
                let r = match rng.below(6) {
                    0 => rng.below(22) as u8,
                    1 => 0x80 | rng.below(66) as u8,
                    2 => 0x80 | rng.below(31) as u8,
                    3 => 9,
                    4 => 3,
                    _ => rng.below(10) as u8,
                };
                o.extend(common::ng_option(e, 9, &[r]));
            }
            1 => {
                let off = if rng.chance(1, 2) { rng.below(2000) as i64 - 1000 } else { rng.next_u64() as i64 };
                o.extend(common::ng_option(e, 14, &e.u64(off as u64)));
            }
            2 => o.extend(common::ng_option(e, 2, b"eth0")),
            3 => o.extend(common::ng_option(e, 1, &rng.bytes_upto(9))),
            4 if rng.chance(1, 6) => o.extend(common::ng_option(e, rng.below(16) as u16, &rng.bytes_upto(10))),
            5 if rng.chance(1, 6) => o.extend(common::ng_option(e, 0, &[])),
            6 if rng.chance(1, 8) => o.extend(common::ng_option(e, 9, &[if rng.chance(1, 2) { 9 } else { 6 }])),
            _ => {}
        }
    }
    o
}

fn gen_pcapng(rng: &mut Rng) -> Vec<u8> {
    let e = if rng.chance(1, 2) { Endian::Little } else { Endian::Big };
    let lt = gen_linktype(rng) as u16;
    let snaplen = gen_snaplen(rng);
    let minor = [0u16, 0, 0, 2, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 1][rng.below(16) as usize];
    let mut b = NgBuilder::new().shb_version(e, 1, minor, &[]);
    let sections = 1 + rng.below(2);
    for s in 0..sections {
        if s > 0 {
            let minor = rng.below(3) as u16;
            let major = if rng.chance(1, 16) { 2 } else { 1 };
            b = b.shb_version(e, major, minor, &common::ng_option(e, 1, b"x"));
        }
        if rng.chance(1, 4) {
            b = b.block(0x8000_0001, &rng.bytes_upto(12));
        }
        let nif = 1 + rng.below(3) as u32;
        for _ in 0..nif {
            let opts = gen_idb_options(rng, e);
            b = b.idb(lt, snaplen, &opts);
        }
        for _ in 0..rng.below(10) {
            let (data, wire) = gen_data(rng, u32::from(lt), e);
            let n = data.len() as u32;
            let iface = if rng.chance(1, 12) { nif + rng.below(2) as u32 } else { rng.below(u64::from(nif)) as u32 };
            let ticks = if rng.chance(1, 3) { rng.next_u64() } else { 1_600_000_000_000_000 + rng.below(1 << 40) };
            b = match rng.below(8) {
                0 => b.spb(if rng.chance(1, 2) { n } else { n + rng.below(50) as u32 }, &data),
                1 => b.pb(iface as u16, ticks, n, n + rng.below(3) as u32, &data),
                2 => b.block([4u32, 5, 7, 9, 10, 0x0BAD][rng.below(6) as usize], &rng.bytes_upto(20)),
                3 => b.epb_full(iface, ticks, n.saturating_sub(rng.below(3) as u32), n, &data),
                _ => b.epb_full(iface, ticks, n, wire.unwrap_or(n), &data),
            };
        }
    }
    let mut v = b.bytes();
    if rng.chance(1, 8) {
        let cut = rng.below(v.len() as u64 + 1) as usize;
        v.truncate(cut);
    }
    v
}

/// `SIFT_PCAP_SEED` / `SIFT_PCAP_CASES` override the generator's seed and
/// case count for longer runs.
fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

#[test]
fn generated_files_agree_with_libpcap() {
    let Some(exe) = build_oracle() else { return };
    let mut rng = Rng::new(env_u64("SIFT_PCAP_SEED", 0x5eed_0002));
    let mut inputs = Vec::new();
    for i in 0..env_u64("SIFT_PCAP_CASES", 3000) {
        let mut v = if i % 2 == 0 { gen_pcap(&mut rng) } else { gen_pcapng(&mut rng) };
        if rng.chance(1, 5) {
            let fields = common::length_fields(&v);
            v = common::mutate(&mut rng, &v, &fields);
        }
        inputs.push(v);
    }
    let (n, failures) = run_batch(&exe, "generated", &inputs);
    report("generated files", n, &failures);
}
