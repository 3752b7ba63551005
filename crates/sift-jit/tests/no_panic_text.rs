//! No panics on cBPF program text (`tcpdump -ddd`/`-dd`, the comma form;
//! what `sift --bpf-file` reads): the stable driver of the `bpf_text` fuzz
//! target (the check lives in `fuzz/checks/bpf_text.rs`). Errors point
//! inside the text; parsed programs print back in every form to the same
//! program and run alike in the interpreter and the JIT.
//!
//! Inputs: random bytes, token soups of the formats' pieces, and libpcap's
//! programs for the corpus expressions dumped in every form, then mutated
//! character by character and line by line.

#[path = "../../../fuzz/checks/input.rs"]
mod input;
#[path = "../../../fuzz/checks/bpf_text.rs"]
mod bpf_text;
#[path = "../../../fuzz/checks/foreign_cbpf.rs"]
mod foreign_cbpf;

use sift_bpf::text::{dump_comma, dump_dd, dump_ddd};
use sift_testkit::Rng;

const EXPRESSIONS: &str = include_str!("../../sift-cli/tests/corpus/expressions.txt");

const PIECES: &[&str] = &[
    "0x", "0X", "{", "}", "{ ", " }", ",", ", ", " ", "  ", "\n", "\r\n", "\r", "\t", "0", "1", "2", "6", "12",
    "21", "40", "0x28", "0x15", "0x06", "0xffff", "65535", "65536", "255", "256", "4294967295", "4294967296",
    "0xffffffff", "0x100000000", "18446744073709551616", "99999999999999999999999", "-", "+", "ff", "x", "é",
    "#", "//", "\0", "0x0000000c", "},", "{ 0x6, 0, 0, 0x00040000 },\n", "1,6 0 0 262144", "6 0 0 65535\n",
];

#[test]
fn random_bytes() {
    let mut rng = Rng::new(0x7e47_0001);
    for _ in 0..20_000 {
        let len = rng.index(120);
        let data = rng.bytes(len);
        bpf_text::check(&data);
        bpf_text::check_text(&String::from_utf8_lossy(&data));
    }
}

#[test]
fn token_soups() {
    let mut rng = Rng::new(0x7e47_0002);
    let mut parsed = 0;
    for _ in 0..20_000 {
        let mut text = String::new();
        for _ in 0..rng.index(40) {
            text.push_str(rng.pick::<&str>(PIECES));
        }
        parsed += usize::from(bpf_text::check_text(&text).is_some());
        bpf_text::check(text.as_bytes());
    }
    eprintln!("{parsed} of 20000 token soups parse");
}

fn mutate(rng: &mut Rng, text: &str) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    for _ in 0..=rng.below(3) {
        let i = rng.index(chars.len() + 1);
        match rng.below(7) {
            0 if i < chars.len() => {
                chars.remove(i);
            }
            1 if i < chars.len() => chars[i] = *rng.pick(&['0', '9', 'x', ',', ' ', '\n', '{', '}', 'f', 'é', '-']),
            2 => {
                for c in rng.pick(PIECES).chars().rev() {
                    chars.insert(i, c);
                }
            }
            3 => chars.truncate(i),
            4 => {
                // Duplicate or drop a line.
                let s: String = chars.iter().collect();
                let mut lines: Vec<&str> = s.split('\n').collect();
                let j = rng.index(lines.len());
                if rng.chance(0.5) {
                    lines.insert(j, lines[j]);
                } else {
                    lines.remove(j);
                }
                chars = lines.join("\n").chars().collect();
            }
            _ => {
                // A digit run made longer (out-of-range numbers).
                if let Some(p) = chars.iter().position(|c| c.is_ascii_digit()) {
                    for _ in 0..rng.index(12) {
                        chars.insert(p, '9');
                    }
                }
            }
        }
    }
    chars.into_iter().collect()
}

#[test]
fn mutated_program_dumps() {
    let mut rng = Rng::new(0x7e47_0003);
    let mut texts = Vec::new();
    for line in EXPRESSIONS.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
        if let Ok(prog) = sift_testkit::libpcap::compile(line, 1, 262_144, None, false) {
            bpf_text::check_round_trip(&prog);
            texts.push(dump_ddd(&prog));
            texts.push(dump_dd(&prog));
            texts.push(dump_comma(&prog));
        }
    }
    assert!(texts.len() > 300, "only {} texts", texts.len());
    let (mut parsed, mut total) = (0, 0);
    for _ in 0..10_000 {
        let base = rng.pick(&texts);
        let text = mutate(&mut rng, base);
        total += 1;
        if let Some(prog) = bpf_text::check_text(&text) {
            parsed += 1;
            let mut pkts = foreign_cbpf::sample_packets();
            for _ in 0..2 {
                let (data, wire) = sift_testkit::packets::random_packet(&mut rng, sift_ir::LinkType::EN10MB);
                pkts.push((data, wire));
            }
            foreign_cbpf::check_program(&prog, &pkts);
        }
    }
    eprintln!("{parsed} of {total} mutated dumps parse");
}
