//! `-w` output options against tcpdump 4.99 on the same input: `-C`/`-W`
//! rotation gives the same file names and the same bytes; `--pcapng` files
//! read back (with sift's reader and with tcpdump) to the same packets.
//! Skipped (with a note) when tcpdump is not installed.

use std::path::{Path, PathBuf};
use std::process::Command;

fn sift() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sift"))
}

fn have_tcpdump() -> bool {
    Command::new("tcpdump")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("sift-output-files-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A 4.5 MB generated capture (mixed traffic).
fn input(dir: &Path) -> PathBuf {
    let p = dir.join("in.pcap");
    let st = sift()
        .args(["gen", "mixed", "--count", "6000", "-w"])
        .arg(&p)
        .status()
        .unwrap();
    assert!(st.success());
    p
}

fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn size_rotation_matches_tcpdump() {
    if !have_tcpdump() {
        eprintln!("SKIPPED: tcpdump not installed");
        return;
    }
    let d = tmpdir("rot");
    let input = input(&d);
    for (n, args) in [
        &["-C", "1"][..],
        &["-C", "1", "-W", "3"],
        &["-C", "1", "-W", "12"],
        &["-C", "2", "-W", "1"],
    ]
    .iter()
    .enumerate()
    {
        let (t, s) = (d.join(format!("t{n}")), d.join(format!("s{n}")));
        std::fs::create_dir_all(&t).unwrap();
        std::fs::create_dir_all(&s).unwrap();
        // -Z root: tcpdump would otherwise drop to its own user and fail to
        // create the files.
        let st = Command::new("tcpdump")
            .args(["-Z", "root", "-r"])
            .arg(&input)
            .arg("-w")
            .arg(t.join("out"))
            .args(*args)
            .arg("ip")
            .output()
            .unwrap();
        assert!(st.status.success(), "tcpdump {args:?}: {st:?}");
        let st = sift()
            .arg("-r")
            .arg(&input)
            .arg("-w")
            .arg(s.join("out"))
            .args(*args)
            .arg("ip")
            .output()
            .unwrap();
        assert!(st.status.success(), "sift {args:?}: {st:?}");
        let (tf, sf) = (files(&t), files(&s));
        assert!(tf.len() > 1 || args.contains(&"-W"), "{args:?}: no rotation happened");
        let names = |v: &[(String, Vec<u8>)]| v.iter().map(|x| x.0.clone()).collect::<Vec<_>>();
        assert_eq!(names(&sf), names(&tf), "{args:?}: file names");
        assert!(sf == tf, "{args:?}: file contents differ");
    }
    // Without -W nothing is overwritten: the files hold every packet, in order.
    let whole = sift()
        .arg("-r")
        .arg(&input)
        .args(["-w", "-", "ip"])
        .output()
        .unwrap()
        .stdout;
    let mut joined = whole[..24].to_vec();
    let mut rotated = files(&d.join("s0"));
    rotated.sort_by_key(|(name, _)| name.trim_start_matches("out").parse::<u32>().unwrap_or(0));
    for (_, bytes) in &rotated {
        assert_eq!(bytes[..24], whole[..24], "every file has the header");
        joined.extend_from_slice(&bytes[24..]);
    }
    assert!(joined == whole, "the rotated files together are the whole output");
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn pcapng_output_reads_back() {
    let d = tmpdir("ng");
    let input = input(&d);
    for nano in [false, true] {
        let prec = if nano { "nano" } else { "micro" };
        let ng = d.join(format!("out-{prec}.pcapng"));
        let pcap = d.join(format!("out-{prec}.pcap"));
        for (path, extra) in [(&ng, &["--pcapng"][..]), (&pcap, &[][..])] {
            let st = sift()
                .arg("-r")
                .arg(&input)
                .arg("-w")
                .arg(path)
                .args(extra)
                .args(["--time-stamp-precision", prec, "tcp"])
                .output()
                .unwrap();
            assert!(st.status.success(), "{st:?}");
        }
        let a = sift_pcap::Capture::open(&ng).unwrap();
        let b = sift_pcap::Capture::open(&pcap).unwrap();
        assert_eq!(a.format(), sift_pcap::Format::Pcapng);
        assert_eq!((a.linktype(), a.snaplen()), (b.linktype(), b.snaplen()));
        let pa: Vec<_> = a.packets().map(|p| p.unwrap()).collect();
        let pb: Vec<_> = b.packets().map(|p| p.unwrap()).collect();
        assert!(pa.len() > 100);
        assert_eq!(pa.len(), pb.len());
        for (x, y) in pa.iter().zip(&pb) {
            assert_eq!((x.data, x.wire_len), (y.data, y.wire_len));
            assert_eq!(x.ts.as_unix_nanos(), y.ts.as_unix_nanos());
        }
        if have_tcpdump() {
            // libpcap reads the pcapng file and writes the same pcap as sift.
            let back = d.join(format!("back-{prec}.pcap"));
            let st = Command::new("tcpdump")
                .args(["--time-stamp-precision", prec, "-r"])
                .arg(&ng)
                .arg("-w")
                .arg(&back)
                .output()
                .unwrap();
            assert!(st.status.success(), "{st:?}");
            assert!(std::fs::read(&back).unwrap() == std::fs::read(&pcap).unwrap());
        }
    }
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn rotation_flags_need_a_file() {
    for args in [&["-C", "1"][..], &["--pcapng"], &["-G", "5"]] {
        let o = sift().args(["-r", "x.pcap"]).args(args).output().unwrap();
        assert!(!o.status.success());
        assert!(String::from_utf8_lossy(&o.stderr).contains("need -w FILE"), "{o:?}");
    }
    let o = sift()
        .args(["-r", "x.pcap", "-w", "y", "-W", "3"])
        .output()
        .unwrap();
    assert!(!o.status.success());
}
