//! `geneve`/`vxlan` and the primitives after them, where libpcap's later
//! primitives read the tunnel's scratch registers whether or not the
//! tunnel's code ran (`geneve or ip`). libpcap master zeroes scratch memory,
//! so its verdicts are those of 1.10.3's program (the same as master's for
//! `geneve` on these link types) run with zeroed memory, as sift's
//! interpreter runs every program. sift's program, its reference
//! evaluator and the Linux kernel running sift's program must all agree with
//! that, on random packets of the link type (a share of their UDP datagrams
//! are VXLAN/Geneve tunnels) plus Ethernet tunnel frames and their
//! truncations. The expressions are those where the tunnel primitive ran on
//! every path to the primitives after it, or on none (elsewhere sift's
//! verdicts are its own: docs/compat.md row 28).

use sift_ir::LinkType;
use sift_testkit::kernel::KernelFilter;
use sift_testkit::packets::random_packet;
use sift_testkit::packets_tunnel::tunnel_frame;
use sift_testkit::Rng;

const EXPRESSIONS: &[&str] = &[
    "geneve or ip",
    "geneve or arp or ip6",
    "not geneve and tcp",
    "(geneve and udp) or ip6",
    "geneve 10 or vlan or ip",
    "geneve and ip or tcp port 22",
    "geneve and udp port 53 or ether host 02:42:ac:11:00:03",
    "geneve and geneve or ip",
    "(geneve or geneve) and ip",
    "geneve and (ip or ip6) and not tcp[13] & 2 = 0",
    "geneve and vlan and ether src 02:42:ac:11:00:03",
    "geneve and ether broadcast or ether multicast",
];

const LINK_TYPES: &[LinkType] = &[LinkType::EN10MB, LinkType::RAW, LinkType::LINUX_SLL, LinkType::NULL];

fn packets(lt: LinkType, seed: u64) -> Vec<Vec<u8>> {
    let mut rng = Rng::new(seed);
    let mut out: Vec<Vec<u8>> = (0..1500).map(|_| random_packet(&mut rng, lt).0).collect();
    if lt == LinkType::EN10MB {
        for _ in 0..300 {
            let f = tunnel_frame(&mut rng);
            let cut = rng.index(f.len() + 1);
            out.push(f[..cut].to_vec());
            out.push(f);
        }
    }
    out
}

fn compile(expr: &str, lt: LinkType) -> (sift_ir::Pred, Vec<sift_bpf::Insn>) {
    let ast = sift_syntax::parse(expr).expect("parses");
    let opts = sift_ir::LowerOptions { linktype: lt, ..Default::default() };
    let pred = sift_ir::lower(&ast, &opts).unwrap_or_else(|e| panic!("{expr:?}: {}", e.message));
    let prog = sift_bpf::codegen::compile(&pred, &Default::default()).unwrap_or_else(|e| panic!("{expr:?}: {e}"));
    (pred, prog)
}

#[test]
fn tunnels_agree_with_master_zeroed_registers() {
    let mut compared = 0usize;
    let mut accepted = 0usize;
    for (i, &lt) in LINK_TYPES.iter().enumerate() {
        let pk = packets(lt, 0x7e11 + i as u64);
        for expr in EXPRESSIONS {
            let libpcap = sift_testkit::libpcap::compile(expr, lt.0, 262_144, None, false)
                .unwrap_or_else(|e| panic!("libpcap rejects {expr:?}: {e}"));
            let (pred, prog) = compile(expr, lt);
            let kernel = KernelFilter::new(&prog).unwrap_or_else(|e| panic!("kernel refuses sift's {expr:?}: {e}"));
            for d in &pk {
                let wire = d.len() as u32;
                let master = sift_bpf::interp::run(&libpcap, d, wire) != 0;
                let ours = sift_bpf::interp::run(&prog, d, wire) != 0;
                let eval = sift_ir::eval::matches(&pred, sift_ir::PacketView { data: d, wire_len: wire });
                let k = kernel.accepts(d).expect("kernel run");
                assert!(
                    master == ours && ours == eval && eval == k,
                    "{lt} {expr:?}: master {master} sift {ours} evaluator {eval} kernel {k} on {:02x?}",
                    d
                );
                compared += 1;
                accepted += usize::from(master);
            }
        }
    }
    println!("{compared} verdicts compared, {accepted} accepted");
    assert!(accepted >= 300, "too few accepted packets: {accepted} of {compared}");
}

mod testrun_common;

/// Packets for the `vxlan` checks: random packets of the link type with
/// most UDP datagrams tunnels, plus (Ethernet) tunnel frames and their
/// truncations.
fn tunnel_heavy_packets(lt: LinkType, seed: u64) -> Vec<Vec<u8>> {
    sift_testkit::packets_tunnel::with_tunnel_share(0.7, || packets(lt, seed))
}

/// The random campaigns compare a leading `vxlan` with libpcap 1.10.3
/// through `geneve` on rewritten packets (`diff::VxlanAsGeneve`). That
/// stand-in must give master's verdicts: master's own `vxlan` programs
/// (TESTrun's expected bytecode, run with zeroed scratch memory as master
/// runs them) against 1.10.3's `geneve` programs on the rewritten packets.
#[test]
fn vxlan_stand_in_gives_masters_verdicts() {
    if !testrun_common::require_data() {
        return;
    }
    let rows = testrun_common::read_jsonl(&testrun_common::data_dir().join("libpcap-tests").join("testrun-master-bytecode.jsonl"));
    let stand_in = sift_testkit::diff::VxlanAsGeneve::new(LinkType::EN10MB).expect("stand-in");
    let pk = tunnel_heavy_packets(LinkType::EN10MB, 0x7e77);
    let (mut rows_checked, mut compared, mut accepted, mut uncovered) = (0, 0, 0, 0);
    for row in &rows {
        let get = |k: &str| row.get(k).and_then(|v| v.as_str()).unwrap_or("");
        let expr = get("expression");
        let optimized = row.get("optimize").is_some_and(|v| v.is_true());
        if get("dlt") != "EN10MB" || optimized || !expr.starts_with("vxlan") || expr.matches("vxlan").count() != 1 {
            continue;
        }
        let master = testrun_common::parse_d_text(get("expected_bytecode")).expect("master's program");
        let geneve = expr.replacen("vxlan", "geneve", 1);
        let lib = sift_testkit::libpcap::compile(&geneve, 1, 262_144, None, false).expect("1.10.3 compiles geneve");
        rows_checked += 1;
        for d in &pk {
            let Some(rewritten) = stand_in.rewrite(d) else {
                uncovered += 1;
                continue;
            };
            let wire = d.len() as u32;
            let m = sift_bpf::interp::run(&master, d, wire);
            let l = sift_bpf::interp::run(&lib, &rewritten, wire);
            assert_eq!(m, l, "{expr:?}: master {m}, 1.10.3 geneve on the rewritten packet {l}: {d:02x?}");
            compared += 1;
            accepted += usize::from(m != 0);
        }
    }
    println!("{rows_checked} rows, {compared} verdicts compared, {accepted} accepted, {uncovered} packets not covered");
    assert!(rows_checked >= 2, "TESTrun's vxlan rows are missing");
    assert!(accepted >= 50, "too few VXLAN packets: {accepted} of {compared}");
    assert!(uncovered * 100 < compared, "the stand-in leaves out {uncovered} of {compared}");
}

/// sift's `vxlan` expressions against the stand-in on the campaigns' link
/// types (what the random campaigns do, on fixed expressions).
#[test]
fn vxlan_agrees_with_the_geneve_stand_in() {
    const EXPRS: &[&str] = &[
        "vxlan",
        "vxlan 10",
        "vxlan and (ip)",
        "vxlan 100 and (tcp or udp port 53)",
        "vxlan and (geneve and ip6)",
        "vxlan and (vlan and ip or arp)",
        "vxlan and (not ether broadcast and ip6 multicast)",
    ];
    let mut accepted = 0usize;
    for (i, &lt) in LINK_TYPES.iter().enumerate() {
        let stand_in = sift_testkit::diff::VxlanAsGeneve::new(lt).expect("stand-in");
        let pk = tunnel_heavy_packets(lt, 0x7e99 + i as u64);
        for expr in EXPRS {
            let (pred, prog) = compile(expr, lt);
            let lib = sift_testkit::libpcap::compile(&expr.replacen("vxlan", "geneve", 1), lt.0, 262_144, None, false)
                .expect("1.10.3 compiles geneve");
            for d in &pk {
                let Some(rewritten) = stand_in.rewrite(d) else { continue };
                let wire = d.len() as u32;
                let lib_v = sift_bpf::interp::run(&lib, &rewritten, wire) != 0;
                let ours = sift_bpf::interp::run(&prog, d, wire) != 0;
                let eval = sift_ir::eval::matches(&pred, sift_ir::PacketView { data: d, wire_len: wire });
                assert!(lib_v == ours && ours == eval, "{lt} {expr:?}: stand-in {lib_v} sift {ours} evaluator {eval} on {d:02x?}");
                accepted += usize::from(ours);
            }
        }
    }
    assert!(accepted >= 100, "too few accepted packets: {accepted}");
}

#[test]
fn tunnels_are_counted() {
    use sift_testkit::diff::tunnel_count;
    assert_eq!(tunnel_count("geneve and geneve"), 2);
    assert_eq!(tunnel_count("vxlan and (geneve 10 or ip)"), 2);
    assert_eq!(tunnel_count("geneve and ip"), 1);
    assert_eq!(tunnel_count("!vxlan"), 1);
    assert_eq!(tunnel_count("host geneve-server and udp"), 0);
}
