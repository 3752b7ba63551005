//! Static speed of the dynamic engine beside sift's JIT and interpreter on
//! the Swift paper's six filters (information only):
//! `cargo run --release -p sift-dynamic --example speed`.

use std::hint::black_box;
use std::time::Instant;

use sift::{CompileOptions, Engine, Filter};
use sift_dynamic::{DynamicFilter, LinkType};
use sift_testkit::packets::{random_packet_with, PacketOptions};
use sift_testkit::Rng;

fn main() {
    let hosts: Vec<String> = (0..38).map(|i| format!("10.{}.{}.{}", i % 3, i * 7 % 256, i + 1)).collect();
    let filters = [
        String::new(),
        "ip".into(),
        "ip src net 192.168.2.0/24 and dst net 10.0.0.0/8".into(),
        "ip src or dst net 192.168.2.0/24".into(),
        "ip and tcp port (ssh or http or imap or smtp or pop3 or ftp)".into(),
        format!("ip and (not tcp port (80 or 25 or 143) and not ip host ({}))", hosts.join(" or ")),
    ];
    let mut rng = Rng::new(1);
    let opts = PacketOptions { truncate: 0.0, tiny: 0.0, short_wire: 0.0 };
    let pkts: Vec<(Vec<u8>, u32)> = (0..20_000).map(|_| random_packet_with(&mut rng, LinkType::EN10MB, &opts)).collect();
    const REPS: usize = 50;
    for (n, expr) in filters.iter().enumerate() {
        let d = DynamicFilter::from_expr(expr, LinkType::EN10MB).expect("translate");
        let h = d.handle();
        let copts = CompileOptions::default();
        let jit = Filter::with_engine(expr, &copts, Engine::Jit).expect("jit");
        let interp = Filter::with_engine(expr, &copts, Engine::Interp).expect("interp");
        let mut row = format!("filter {}", n + 1);
        let total = (pkts.len() * REPS) as f64;
        let mut time = |name: &str, f: &dyn Fn(&[u8], u32) -> bool| {
            let t = Instant::now();
            let mut hits = 0usize;
            for _ in 0..REPS {
                for (p, w) in &pkts {
                    hits += usize::from(f(black_box(p), *w));
                }
            }
            let ns = t.elapsed().as_nanos() as f64 / total;
            row.push_str(&format!("  {name} {ns:6.1} ns ({hits})"));
        };
        time("dynamic", &|p, w| h.matches(p, w));
        let reader = std::cell::RefCell::new(h.reader());
        time("reader", &|p, w| reader.borrow_mut().matches(p, w));
        let snap = h.snapshot();
        time("snapshot", &|p, w| snap.matches(p, w));
        time("jit", &|p, w| jit.matches(p, w));
        time("interp", &|p, w| interp.matches(p, w));
        println!("{row}");
    }
}
