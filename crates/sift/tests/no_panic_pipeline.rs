//! No panics anywhere in the pipeline, and every engine agrees with the
//! reference evaluator: the stable driver of the `pipeline` fuzz target
//! (the check lives in `fuzz/checks/pipeline.rs`).
//!
//! Inputs, for every supported link type: grammar-shaped random
//! expressions, the corpus expressions mutated token by token, and token
//! soups and random bytes; compile options varied (savefile, swapped,
//! netmask, snapshot length); packets from the structured generator at
//! several truncations and wire lengths.

#[path = "../../../fuzz/checks/input.rs"]
mod input;
#[path = "../../../fuzz/checks/pipeline.rs"]
mod pipeline;

use sift_testkit::{env_number, exprs, Rng};

const EXPRESSIONS: &str = include_str!("../../sift-cli/tests/corpus/expressions.txt");

fn corpus() -> Vec<&'static str> {
    EXPRESSIONS.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).collect()
}

/// Sized from the environment for longer runs:
/// `SIFT_PIPELINE_SEED=7 SIFT_PIPELINE_PER_LINKTYPE=20000 cargo test
/// --release --locked -p sift --test no_panic_pipeline random`.
#[test]
fn random_expressions_every_linktype() {
    let mut rng = Rng::new(env_number("SIFT_PIPELINE_SEED", 0x91be_0001));
    let per_linktype = env_number("SIFT_PIPELINE_PER_LINKTYPE", 120);
    let lts = sift_ir::lower::supported_linktypes();
    let (mut total, mut compiled, mut dynamic) = (0, 0, 0);
    for &lt in &lts {
        for _ in 0..per_linktype {
            let expr = exprs::random_expr(&mut rng, lt);
            let opts = pipeline::options(lt, rng.byte());
            let pkts = input::random_packets(&mut rng, lt, 3);
            let o = pipeline::check_expr(&expr, &opts, &pkts);
            total += 1;
            compiled += usize::from(o.compiled);
            dynamic += usize::from(o.dynamic);
        }
    }
    eprintln!("{total} random expressions over {} link types: {compiled} compile, {dynamic} run on the dynamic engine", lts.len());
    assert!(compiled * 2 > total);
}

#[test]
fn mutated_corpus_every_linktype() {
    let mut rng = Rng::new(0x91be_0002);
    let lts = sift_ir::lower::supported_linktypes();
    let corpus = corpus();
    let (mut total, mut compiled) = (0, 0);
    for expr in &corpus {
        let lt = *rng.pick(&lts);
        let pkts = input::random_packets(&mut rng, lt, 2);
        compiled += usize::from(pipeline::check_expr(expr, &pipeline::options(lt, rng.byte()), &pkts).compiled);
        total += 1;
    }
    for _ in 0..1500 {
        let lt = *rng.pick(&lts);
        let mut expr = rng.pick(&corpus).to_string();
        for _ in 0..=rng.below(2) {
            expr = exprs::mutate(&mut rng, &expr);
        }
        let pkts = input::random_packets(&mut rng, lt, 2);
        compiled += usize::from(pipeline::check_expr(&expr, &pipeline::options(lt, rng.byte()), &pkts).compiled);
        total += 1;
    }
    eprintln!("{total} corpus and mutated expressions: {compiled} compile");
}

const TOKENS: &[&str] = &[
    "tcp", "udp", "ip", "ip6", "ether", "host", "net", "port", "portrange", "src", "dst", "and", "or", "not", "(",
    ")", "[", "]", ":", "1", "2", "4", "0", "80", "0x800", "10.0.0.1", "10/8", "::1", "ff:ff:ff:ff:ff:ff", "+", "-",
    "*", "/", "%", "&", "|", "^", "<<", ">>", "=", "!=", "<", ">", "len", "vlan", "mpls", "pppoes", "proto",
    "protochain", "broadcast", "multicast", "gateway", "less", "greater", "icmp", "icmp6", "arp", "wlan", "type",
    "subtype", "mgt", "data", "link", "radio", "ppp", "tcp[tcpflags]", "tcp-syn", "inbound", "outbound", "geneve",
    "!", "&&", "||", "é", "\"", "\\", " ",
];

#[test]
fn token_soups_and_bytes() {
    let mut rng = Rng::new(0x91be_0003);
    let lts = sift_ir::lower::supported_linktypes();
    let mut compiled = 0;
    for round in 0..3000 {
        let lt = *rng.pick(&lts);
        let expr = if round % 3 == 0 {
            let len = rng.index(24);
            String::from_utf8_lossy(&rng.bytes(len)).into_owned()
        } else {
            let mut s = String::new();
            for _ in 0..rng.index(10) {
                s.push_str(rng.pick::<&str>(TOKENS));
                s.push(' ');
            }
            s
        };
        let pkts = input::random_packets(&mut rng, lt, 1);
        compiled += usize::from(pipeline::check_expr(&expr, &pipeline::options(lt, rng.byte()), &pkts).compiled);
    }
    eprintln!("{compiled} of 3000 soups compile");
}

#[test]
fn fuzz_entry_on_random_bytes() {
    let mut rng = Rng::new(0x91be_0004);
    for _ in 0..2000 {
        let len = rng.index(200);
        pipeline::check(&rng.bytes(len));
    }
}
