//! Check: a classic BPF program in text form (`tcpdump -ddd`, `-dd`, the
//! comma form of `tc`/`iptables`; what `sift --bpf-file` reads) parses or
//! fails with a position inside the text, never panics; a parsed program
//! prints back in every form to text that parses to the same program, and
//! then runs like any foreign program (see `foreign_cbpf`).
#![allow(dead_code)]

use sift_bpf::text::{dump_comma, dump_dd, dump_ddd, parse_program};
use sift_bpf::Insn;

/// Fuzz entry: the bytes as text (non-UTF-8 is what `--bpf-file` refuses
/// before parsing), then [`check_text`]; a parsed program also goes
/// through [`super::foreign_cbpf::check_program`] on a few packets.
pub fn check(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Some(prog) = check_text(text) {
        if prog.len() <= 4096 {
            let packets = super::foreign_cbpf::sample_packets();
            super::foreign_cbpf::check_program(&prog, &packets);
        }
    }
}

/// Parses `text`; on success checks the print/parse round trip in every
/// form, on failure that the error position lies inside the text.
pub fn check_text(text: &str) -> Option<Vec<Insn>> {
    match parse_program(text) {
        Ok(prog) => {
            check_round_trip(&prog);
            Some(prog)
        }
        Err(e) => {
            // Lines counted like the parser may count them: by '\n'.
            let lines: Vec<&str> = text.split('\n').collect();
            assert!(e.line >= 1 && e.line <= lines.len(), "error line {} outside {} lines of {text:?}", e.line, lines.len());
            let chars = lines[e.line - 1].chars().count();
            assert!(e.column >= 1 && e.column <= chars + 1, "error column {} outside line {} ({chars} chars) of {text:?}", e.column, e.line);
            assert!(!e.to_string().is_empty());
            None
        }
    }
}

/// Every text form of `prog` parses back to `prog`.
pub fn check_round_trip(prog: &[Insn]) {
    if prog.is_empty() {
        return;
    }
    for (form, printed) in [("-ddd", dump_ddd(prog)), ("-dd", dump_dd(prog)), ("comma", dump_comma(prog))] {
        match parse_program(&printed) {
            Ok(again) => assert_eq!(again, prog, "{form} form {printed:?} parses to another program"),
            Err(e) => panic!("{form} form {printed:?} does not parse: {e}"),
        }
    }
}
