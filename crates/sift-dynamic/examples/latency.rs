//! Update latency of the dynamic engine (information only):
//! `cargo run --release -p sift-dynamic --example latency`.
//!
//! A filter of N connections is N passes `[ipv4-l4 tcp, dst port {p}]`;
//! measured: adding a port to a pass, duplicating a pass, removing a pass;
//! and adding a port to one pass whose port set has N values.

use std::time::Instant;

use sift_dynamic::{Atom, Cmp, DynamicFilter, Field, Instr, LinkType, Size};

fn conn_pass(port: u32) -> Vec<Instr> {
    vec![
        Instr::All(vec![
            Atom::new(Field::direct(Size::Half, 12), Cmp::eq(0x800)),
            Atom::new(Field::direct(Size::Byte, 23), Cmp::eq(6)),
            Atom {
                field: Field::direct(Size::Half, 20),
                cmp: Cmp::AnyBits(0x1fff),
                negate: true,
            },
        ]),
        Instr::Test(Atom::new(
            Field::ipv4_payload(Size::Half, 14, 16),
            Cmp::eq(port),
        )),
    ]
}

fn stats(mut v: Vec<u64>) -> (u64, u64) {
    v.sort_unstable();
    let at = |q: f64| v[((v.len() - 1) as f64 * q) as usize];
    (at(0.5), at(0.99))
}

fn main() {
    const ROUNDS: usize = 20_000;
    for n in [1usize, 10, 50, 200] {
        let mut f = DynamicFilter::new(LinkType::EN10MB);
        for i in 0..n {
            f.new_pass(i, conn_pass(20_000 + i as u32))
                .expect("new pass");
        }
        let _reader = f.handle();
        let (mut add, mut dup, mut del) = (Vec::new(), Vec::new(), Vec::new());
        for r in 0..ROUNDS {
            let last = n - 1;
            let t = Instant::now();
            f.add_value(last, 1, 40_000 + r as u32).expect("add");
            add.push(t.elapsed().as_nanos() as u64);
            f.remove_value(last, 1, 40_000 + r as u32)
                .expect("remove value");
            let t = Instant::now();
            let d = f.duplicate_pass(last).expect("dup");
            dup.push(t.elapsed().as_nanos() as u64);
            let t = Instant::now();
            f.delete_pass(d).expect("delete");
            del.push(t.elapsed().as_nanos() as u64);
        }
        // One pass holding a set of n ports (the "SIMD operand" form).
        let mut g = DynamicFilter::new(LinkType::EN10MB);
        g.new_pass(0, conn_pass(20_000)).expect("new pass");
        for i in 1..n as u32 {
            g.add_value(0, 1, 20_000 + i).expect("add");
        }
        let mut set_add = Vec::new();
        for r in 0..ROUNDS {
            let t = Instant::now();
            g.add_value(0, 1, 40_000 + r as u32).expect("add");
            set_add.push(t.elapsed().as_nanos() as u64);
            g.remove_value(0, 1, 40_000 + r as u32)
                .expect("remove value");
        }
        for (name, v) in [
            ("add-port", add),
            ("duplicate-pass", dup),
            ("remove-pass", del),
            ("add-port-to-set", set_add),
        ] {
            let (m, p99) = stats(v);
            println!("N={n:4} {name:15} median {m:6} ns  p99 {p99:6} ns");
        }
    }
}
