//! Property tests over random input (deterministic seeds, no external
//! crates): the parser returns `Ok` or `Err` and never panics, every error
//! span lies within the input, and whatever parses survives the print/parse
//! round trip.

mod common;

use sift_syntax::parse;

/// SplitMix64: a small deterministic generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

/// Parses `s`, checking the invariants; returns whether it parsed.
fn check(s: &str) -> bool {
    let r = std::panic::catch_unwind(|| parse(s));
    let Ok(r) = r else { panic!("parse panicked on {s:?}") };
    match r {
        Ok(f) => {
            if let Err(e) = common::round_trip(&f) {
                panic!("input {s:?}: {e}");
            }
            true
        }
        Err(e) => {
            assert!(
                e.span.start <= e.span.end && e.span.end as usize <= s.len(),
                "{s:?}: bad span {:?}",
                e.span
            );
            assert!(
                s.is_char_boundary(e.span.start as usize) && s.is_char_boundary(e.span.end as usize),
                "{s:?}"
            );
            assert!(!e.message.is_empty());
            let _ = e.render(s);
            false
        }
    }
}

const BYTES: &[u8] = b"abcdefhilnoprstuvxyzABFX0123456789 \t\r\n.:-_/\\$!()[]&|^%*+<>=~@#,;'\"`";

#[test]
fn random_bytes() {
    let mut rng = Rng(0x5eed_0001);
    for _ in 0..100_000 {
        let len = rng.below(48);
        let mut bytes = Vec::with_capacity(len);
        for _ in 0..len {
            let b =
                if rng.below(16) == 0 { (rng.next() & 0xff) as u8 } else { BYTES[rng.below(BYTES.len())] };
            bytes.push(b);
        }
        let s = String::from_utf8_lossy(&bytes);
        check(&s);
    }
}

const VOCAB: &[&str] = &[
    "(",
    ")",
    "(",
    ")",
    "and",
    "or",
    "not",
    "!",
    "&&",
    "||",
    "host",
    "net",
    "port",
    "portrange",
    "src",
    "dst",
    "proto",
    "protochain",
    "gateway",
    "mask",
    "tcp",
    "udp",
    "ip",
    "ip6",
    "ether",
    "wlan",
    "arp",
    "icmp",
    "decnet",
    "l1",
    "radio",
    "link",
    "broadcast",
    "multicast",
    "less",
    "greater",
    "byte",
    "inbound",
    "vlan",
    "mpls",
    "pppoed",
    "pppoes",
    "geneve",
    "vxlan",
    "llc",
    "rnr",
    "type",
    "subtype",
    "dir",
    "on",
    "reason",
    "action",
    "lane",
    "vpi",
    "vci",
    "fisu",
    "sio",
    "dpc",
    "len",
    "ra",
    "addr1",
    "80",
    "0",
    "1",
    "4",
    "08",
    "0x10",
    "4294967296",
    "tcpflags",
    "tcp-syn",
    "icmp-echo",
    "1.2.3.4",
    "10.1",
    "50.764",
    "256.1.1.1",
    "fe80::1",
    "::",
    "aa:bb:cc:dd:ee:ff",
    "012345670123",
    "$2b",
    "foo",
    "http",
    "80-90",
    "mgt",
    "data",
    "beacon",
    "qos-data",
    "tods",
    "pass",
    "match",
    "i",
    "ui",
    "\\tcp",
    "+",
    "-",
    "*",
    "/",
    "%",
    "^",
    "&",
    "|",
    "<<",
    ">>",
    "=",
    "==",
    "!=",
    "<",
    ">",
    "<=",
    ">=",
    "[",
    "]",
    ":",
    "/",
    "2",
    "3",
    "32",
    "0",
];

#[test]
fn token_soup() {
    let mut rng = Rng(0x5eed_0002);
    let mut parsed = 0;
    for _ in 0..100_000 {
        let n = 1 + rng.below(12);
        let mut s = String::new();
        for i in 0..n {
            if i > 0 && rng.below(8) != 0 {
                s.push(' ');
            }
            s.push_str(rng.pick(VOCAB));
        }
        if check(&s) {
            parsed += 1;
        }
    }
    // Sanity: the soup is not all errors.
    assert!(parsed > 1000, "only {parsed} parsed");
}

/// Grammar-shaped random expressions: mostly valid, exercising
/// inheritance, id lists, relations and every primitive family.
struct Gen {
    rng: Rng,
}

impl Gen {
    fn num(&mut self) -> String {
        self.rng
            .pick(&["0", "1", "2", "4", "13", "80", "0x10", "255", "010", "31", "tcpflags", "tcp-syn"])
            .to_string()
    }

    fn arith(&mut self, d: u32) -> String {
        match self.rng.below(if d > 3 { 2 } else { 9 }) {
            0 => self.num(),
            1 => "len".into(),
            2 | 3 => {
                let p = self.rng.pick(&["ip", "tcp", "ether", "udp", "ip6", "radio"]);
                let size = self.rng.pick(&["", ":1", ":2", ":4"]);
                format!("{p}[{}{size}]", self.arith(d + 1))
            }
            4..=6 => {
                let op = self.rng.pick(&["+", "-", "*", "/", "%", "&", "|", "^", "<<", ">>"]);
                format!("{} {op} {}", self.arith(d + 1), self.arith(d + 1))
            }
            7 => format!("-{}", self.arith(d + 1)),
            _ => format!("({})", self.arith(d + 1)),
        }
    }

    fn bare(&mut self, kind: usize, d: u32) -> String {
        const IDS: &[&[&str]] = &[
            &["1.2.3.4", "10.1", "192.168.1.0/24", "fe80::1", "foo", "10.0.0.0 mask 255.0.0.0"],
            &["80", "http", "(22)", "((53))", "ftp-data", "0x50"],
            &["aa:bb:cc:dd:ee:ff", "aabb.ccdd.eeff", "$2b"],
        ];
        let ids = IDS[kind];
        match self.rng.below(if d > 2 { 1 } else { 6 }) {
            0..=3 => self.rng.pick(ids).to_string(),
            4 => format!("not {}", self.bare(kind, d + 1)),
            _ => {
                let first = self.rng.pick(ids).to_string();
                let mut s = format!("({first}");
                for _ in 0..self.rng.below(3) {
                    let op = self.rng.pick(&[" or ", " and ", " || "]);
                    s.push_str(op);
                    s.push_str(&self.bare(kind, d + 1));
                }
                s.push(')');
                s
            }
        }
    }

    /// A term and the kind of bare id that may follow it (if any).
    fn term(&mut self, d: u32, inherited: Option<usize>) -> (String, Option<usize>) {
        match self.rng.below(if d > 4 { 6 } else { 9 }) {
            0 | 1 => {
                let (kind, heads): (usize, &[&str]) = match self.rng.below(3) {
                    0 => (0, &["host", "src host", "dst", "ip src or dst", "net", "ip6 host"]),
                    1 => (1, &["port", "tcp port", "udp dst port", "portrange", "src port"]),
                    _ => (2, &["ether host", "ether src", "link dst"]),
                };
                let h = self.rng.pick(heads);
                (format!("{h} {}", self.bare(kind, 0)), Some(kind))
            }
            2 => (self.rng.pick(&["tcp", "udp", "ip", "ip6", "arp", "icmp", "isis", "l1"]).to_string(), None),
            3 => {
                let op = self.rng.pick(&["=", "!=", ">", "<", ">=", "<=", "=="]);
                (format!("{} {op} {}", self.arith(0), self.arith(0)), None)
            }
            4 | 5 => (
                self.rng
                    .pick(&[
                        "vlan 100",
                        "vlan",
                        "mpls 3",
                        "pppoes 2",
                        "geneve",
                        "vxlan 5",
                        "less 60",
                        "greater 9",
                        "byte 2 & 3",
                        "ether broadcast",
                        "multicast",
                        "llc u",
                        "llc rnr",
                        "type mgt subtype beacon",
                        "subtype qos-data",
                        "dir tods",
                        "on eth0",
                        "reason match",
                        "action pass",
                        "vci (1 or 2)",
                        "vpi > 3",
                        "lane",
                        "fisu",
                        "dpc = 4",
                        "inbound",
                        "ifindex 2",
                        "decnet host 1.2",
                    ])
                    .to_string(),
                None,
            ),
            6 => {
                let (t, k) = self.term(d + 1, inherited);
                (format!("not {t}"), k)
            }
            _ => {
                let (e, _) = self.expr(d + 1, inherited);
                (format!("({e})"), inherited)
            }
        }
    }

    fn expr(&mut self, d: u32, inherited: Option<usize>) -> (String, Option<usize>) {
        let (mut s, mut k) = self.term(d, inherited);
        for _ in 0..self.rng.below(4) {
            let op = self.rng.pick(&[" and ", " or ", " && ", " || "]);
            s.push_str(op);
            match k {
                Some(kind) if self.rng.below(3) == 0 => s.push_str(&self.bare(kind, 0)),
                _ => {
                    let (t, k2) = self.term(d + 1, k);
                    s.push_str(&t);
                    k = k2;
                }
            }
        }
        (s, k)
    }
}

#[test]
fn grammar_shaped() {
    let mut g = Gen { rng: Rng(0x5eed_0003) };
    let mut parsed = 0;
    let total = 30_000;
    for _ in 0..total {
        let (s, _) = g.expr(0, None);
        if check(&s) {
            parsed += 1;
        }
    }
    // Almost all of them are valid (a few hit constant division checks).
    assert!(parsed > total * 8 / 10, "only {parsed} of {total} parsed");
}
