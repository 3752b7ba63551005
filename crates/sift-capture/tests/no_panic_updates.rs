//! No panics in the `--updates` line grammar, refused lines change nothing,
//! and after every line the running filter matches exactly what its
//! reported expression matches: the stable driver of the `updates` fuzz
//! target (the check lives in `fuzz/checks/updates.rs`).
//!
//! Inputs: update scripts of grammar-shaped lines (`+`, `-`, `=`, `?`,
//! comments, blank lines, stray spaces around random and corpus
//! expressions, mutated ones) and random bytes, over packets from the
//! structured generator at several truncations.

#[path = "../../../fuzz/checks/input.rs"]
mod input;
#[path = "../../../fuzz/checks/updates.rs"]
mod updates;

use sift::{CompileOptions, LinkType};
use sift_testkit::{exprs, Rng};

const EXPRESSIONS: &str = include_str!("../../sift-cli/tests/corpus/expressions.txt");

fn script(rng: &mut Rng, corpus: &[&str], lines: usize) -> String {
    let mut s = String::new();
    let mut added: Vec<String> = Vec::new();
    for _ in 0..lines {
        let expr = match rng.below(4) {
            0 => exprs::random_expr(rng, LinkType::EN10MB),
            1 => {
                let base = *rng.pick(corpus);
                exprs::mutate(rng, base)
            }
            2 if !added.is_empty() => rng.pick(&added).clone(),
            _ => rng.pick(corpus).to_string(),
        };
        let line = match rng.below(12) {
            0..=3 => {
                added.push(expr.clone());
                format!("+{expr}")
            }
            4..=5 => format!("-{expr}"),
            6 => format!("= {expr}"),
            7 => "?".to_string(),
            8 => format!("# {expr}"),
            9 => "   ".to_string(),
            10 => format!("  +  {expr}  "),
            _ => expr,
        };
        s.push_str(&line);
        s.push('\n');
    }
    s
}

#[test]
fn grammar_shaped_scripts() {
    let mut rng = Rng::new(0x0bda_0001);
    let corpus: Vec<&str> =
        EXPRESSIONS.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).collect();
    let opts = CompileOptions::default();
    let (mut applied, mut lines) = (0, 0);
    for round in 0..150 {
        let n = 1 + rng.index(12);
        let text = script(&mut rng, &corpus, n);
        let pkts = input::random_packets(&mut rng, LinkType::EN10MB, 4);
        let base = *rng.pick(&["", "tcp", "port 21", "ip and not udp", "tcp port 21 or tcp port 20"]);
        applied += updates::check_lines(&opts, base, &text, &pkts);
        lines += n;
        if round % 10 == 0 {
            updates::check(text.as_bytes());
        }
    }
    eprintln!("{applied} of {lines} update lines applied");
    assert!(applied > 0);
}

#[test]
fn random_lines() {
    let mut rng = Rng::new(0x0bda_0002);
    for _ in 0..3000 {
        let n = rng.index(60);
        let bytes = rng.bytes(n);
        updates::check_parse_line(&String::from_utf8_lossy(&bytes));
        updates::check(&bytes);
    }
    for line in ["", "+", "-", "=", "?", "??", "+?", "-#", "#", " + ", "+ é", "é", "\u{a0}+tcp", "+\u{a0}tcp"] {
        updates::check_parse_line(line);
        updates::check_lines(&CompileOptions::default(), "tcp", line, &[(vec![0; 60], 60)]);
    }
}
