//! Conformance with libpcap's own filter test corpus (`testprogs/TESTrun`,
//! extracted to `shared/data/libpcap-tests/testrun-filters.tsv`).
//!
//! Only the syntax matters here: which DLT a row is for, and whether
//! lowering accepts it, is the lowering's business.
//! - `accept` and `apply:*` rows must parse, and their printed form must
//!   parse back to the same tree.
//! - `reject` rows whose expected error is raised by libpcap's scanner or
//!   grammar (syntax errors, bad numbers and addresses, qualifier misuse on
//!   addresses, 802.11/PF/LLC names, constant division...) must not parse.
//! - Other `reject` rows fail for semantic reasons (link type, unknown host,
//!   value ranges); they may parse. The parser may still reject one of them
//!   early, but only if it is listed in `tests/data/conformance-allowlist.tsv`
//!   with the reason, so that a parser that became too strict is noticed.
//!
//! Set `SIFT_TESTRUN_TSV` to use another copy of the file; without the file
//! the test is skipped with a message.

mod common;

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

/// Substrings of libpcap error messages raised while scanning or parsing
/// (the parser's responsibility), as opposed to code generation.
const SYNTAX_LEVEL: &[&str] = &[
    "can't parse filter expression",
    "syntax error",
    "contains non-octal digit",
    "overflows 32 bits",
    "data size must be 1, 2, or 4",
    "invalid 802.11",
    "unknown 802.11",
    "invalid IPv4 address",
    "invalid IPv6 address",
    "invalid Ethernet address",
    "qualifier applied to IPv4 address",
    "qualifier applied to IPv6 address",
    "invalid DECnet address",
    "unknown PF action",
    "unknown PF reason",
    "unknown LLC type",
    "division by zero",
    "modulus by zero",
    "shift by more than 31 bits",
];

fn tsv_path() -> PathBuf {
    if let Some(p) = std::env::var_os("SIFT_TESTRUN_TSV") {
        return PathBuf::from(p);
    }
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/libpcap-tests/testrun-filters.tsv")
}

fn allow_list() -> HashMap<String, String> {
    let text = include_str!("data/conformance-allowlist.tsv");
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .filter_map(|l| l.split_once('\t'))
        .map(|(e, why)| (e.to_string(), why.to_string()))
        .collect()
}

#[test]
fn testrun_corpus() {
    let path = tsv_path();
    let Ok(text) = std::fs::read_to_string(&path) else {
        eprintln!("skipping: {} not found", path.display());
        return;
    };
    let allow = allow_list();
    let mut used = std::collections::HashSet::new();
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    let mut failures = Vec::new();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap_or("").split('\t').collect();
    let col = |name: &str| header.iter().position(|h| *h == name);
    let (Some(c_expr), Some(c_expected), Some(c_kind), Some(c_requires)) =
        (col("expression"), col("expected"), col("kind"), col("requires"))
    else {
        panic!("unexpected header {header:?}");
    };
    for line in lines {
        let f: Vec<&str> = line.split('\t').collect();
        let get = |i: usize| f.get(i).copied().unwrap_or("");
        let (expr, expected, kind, requires) = (get(c_expr), get(c_expected), get(c_kind), get(c_requires));
        if expr == "_enumerate_bpf_image" || kind == "reject-savefile" {
            *counts.entry("skipped (not an expression test)").or_default() += 1;
            continue;
        }
        let parsed = sift_syntax::parse(expr);
        let accepting = kind == "accept" || kind.starts_with("apply:");
        if accepting {
            match &parsed {
                Ok(filter) => {
                    if let Err(e) = common::round_trip(filter) {
                        failures.push(format!("round trip {expr:?}: {e}"));
                    }
                    *counts.entry("accept/apply: parsed").or_default() += 1;
                }
                Err(_) if requires.starts_with("is not ") => {
                    // OS-specific PF names: TESTrun runs these rows only on
                    // that OS; the Linux tables do not have them.
                    *counts
                        .entry("accept/apply: not parsed, OS-specific name (row runs elsewhere)")
                        .or_default() += 1;
                }
                Err(e) if allow.contains_key(expr) => {
                    used.insert(expr.to_string());
                    let _ = e;
                    *counts.entry("accept/apply: not parsed, allow-listed").or_default() += 1;
                }
                Err(e) => failures.push(format!("{kind} {expr:?} does not parse: {}", e.message)),
            }
            continue;
        }
        if kind != "reject" {
            failures.push(format!("unknown kind {kind:?}"));
            continue;
        }
        let syntax_level = SYNTAX_LEVEL.iter().any(|s| expected.contains(s));
        match (syntax_level, &parsed) {
            (true, Err(_)) => *counts.entry("reject/syntax-level: rejected").or_default() += 1,
            (true, Ok(_)) if allow.contains_key(expr) => {
                used.insert(expr.to_string());
                *counts.entry("reject/syntax-level: parsed, allow-listed").or_default() += 1;
            }
            (true, Ok(_)) => failures.push(format!("{expr:?} parses, libpcap: {expected}")),
            (false, Ok(_)) => *counts.entry("reject/semantic: parsed (lowering's job)").or_default() += 1,
            (false, Err(_)) if allow.contains_key(expr) => {
                used.insert(expr.to_string());
                *counts.entry("reject/semantic: rejected by the parser, allow-listed").or_default() += 1;
            }
            (false, Err(e)) => failures.push(format!(
                "{expr:?} rejected by the parser ({}), libpcap rejects it later: {expected}",
                e.message
            )),
        }
    }
    eprintln!("testrun-filters.tsv conformance:");
    for (k, n) in &counts {
        eprintln!("  {n:6}  {k}");
    }
    for e in allow.keys() {
        if !used.contains(e) {
            failures.push(format!("allow-list entry {e:?} was not needed"));
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}
