//! Every file of the shared corpus, read with sift-pcap and written with
//! `PcapWriter`, must be byte-identical to `tcpdump -O -r FILE -w -`; when
//! tcpdump fails, sift-pcap must fail too (both messages are printed).
//! Skipped with a notice when tcpdump or the corpus is missing.

mod common;

use std::process::Command;

use sift_pcap::{linktype, Capture, PcapWriter, TsPrecision};

struct SiftRun {
    output: Vec<u8>,
    error: Option<String>,
    opened: bool,
    linktype: u32,
}

fn sift_rewrite(path: &std::path::Path) -> SiftRun {
    let cap = match Capture::open(path) {
        Ok(c) => c,
        Err(e) => {
            return SiftRun { output: Vec::new(), error: Some(e.to_string()), opened: false, linktype: 0 };
        }
    };
    let mut w = PcapWriter::for_capture(Vec::new(), &cap, TsPrecision::Micro).unwrap();
    let mut error = None;
    for p in cap.packets() {
        match p {
            Ok(p) => w.write_packet(&p).unwrap(),
            Err(e) => error = Some(e.to_string()),
        }
    }
    SiftRun { output: w.into_inner().unwrap(), error, opened: true, linktype: cap.linktype() }
}

#[test]
fn corpus_matches_tcpdump_byte_for_byte() {
    if !common::have_program("tcpdump", "--version") {
        eprintln!("NOTICE: tcpdump is not installed; skipping the tcpdump comparison");
        return;
    }
    let files = common::corpus_files();
    if files.is_empty() {
        eprintln!("NOTICE: no corpus at {}; skipping", common::corpus_dir().display());
        return;
    }
    let (mut same, mut both_fail, mut failures) = (0, 0, Vec::new());
    for path in &files {
        let out = Command::new("tcpdump")
            .arg("-O")
            .arg("-r")
            .arg(path)
            .arg("-w")
            .arg("-")
            .output()
            .expect("run tcpdump");
        let td_err = String::from_utf8_lossy(&out.stderr)
            .lines()
            .filter(|l| !l.starts_with("reading from file"))
            .collect::<Vec<_>>()
            .join(" | ");
        let sift = sift_rewrite(path);
        let name = path.strip_prefix(common::corpus_dir()).unwrap_or(path).display().to_string();
        if out.status.success() {
            if let Some(e) = &sift.error {
                failures.push(format!("{name}: tcpdump reads it, sift fails: {e}"));
            } else if sift.output != out.stdout {
                failures.push(format!(
                    "{name}: output differs ({} bytes from tcpdump, {} from sift)",
                    out.stdout.len(),
                    sift.output.len()
                ));
            } else {
                same += 1;
            }
            continue;
        }
        // tcpdump failed.
        let sift_msg = sift.error.clone().unwrap_or_else(|| "(no error)".into());
        eprintln!("{name}:\n    tcpdump: {td_err}\n    sift:    {sift_msg}");
        if td_err.contains("unknown data link type") || td_err.contains("isn't supported in savefiles") {
            // tcpdump fails compiling its (empty) filter or opening the
            // output for a link type it cannot handle; the file itself is
            // readable. sift-pcap reads it and reports the link type as one
            // that cannot be written, so the CLI refuses it the same way.
            if !sift.opened || linktype::is_writable(sift.linktype) {
                failures.push(format!("{name}: tcpdump rejects the link type, sift-pcap does not flag it"));
            } else {
                both_fail += 1;
            }
            continue;
        }
        if sift.error.is_none() {
            failures.push(format!("{name}: tcpdump fails ({td_err}), sift reads it"));
            continue;
        }
        // Packets written before the damage must match too.
        if !out.stdout.is_empty() && sift.output != out.stdout {
            failures.push(format!(
                "{name}: output before the damage differs ({} bytes from tcpdump, {} from sift)",
                out.stdout.len(),
                sift.output.len()
            ));
            continue;
        }
        if out.stdout.is_empty() && sift.opened && !sift.output.is_empty() {
            // tcpdump failed at open; sift must fail at open as well.
            failures.push(format!("{name}: tcpdump fails at open, sift only after opening"));
            continue;
        }
        both_fail += 1;
    }
    eprintln!(
        "{} files: {same} byte-identical, {both_fail} rejected by both, {} failures",
        files.len(),
        failures.len()
    );
    assert!(failures.is_empty(), "mismatches:\n{}", failures.join("\n"));
}
