//! On DLT_PPI, libpcap 1.10.3 puts a check of the PPI header's DLT field
//! (802.11 only) before the filter, but only if the link type is still PPI
//! when the whole filter has been parsed: `pppoes` (PPP) and `geneve`
//! (Ethernet) change it, wherever they stand, and the check is gone (found
//! by `difftest --seed 12`: `greater 64 or pppoes` accepted a PPI frame
//! of another DLT). sift's lowering, its reference evaluator, its
//! interpreter and its JIT must give 1.10.3's verdicts on PPI frames of
//! either DLT, whole and truncated. The expressions' first alternative
//! decides (`len >= 0` always holds), so the verdicts never reach the
//! `pppoes` test, whose 1.10.3 program reads scratch memory it never
//! writes (docs/compat.md row 15).

use sift_ir::LinkType;
use sift_testkit::packets::random_packet;
use sift_testkit::Rng;

const EXPRESSIONS: &[&str] = &[
    "len >= 0",
    "greater 64",
    "len >= 0 or pppoes",
    "len >= 0 or not pppoes",
    "(len >= 0 or tcp[19:1] = 1) or pppoes",
    "len >= 0 or geneve",
    "len >= 0 or (ip and geneve)",
];

/// PPI frames: random ones, and each again with the DLT field (bytes 4-7,
/// little-endian) saying Ethernet; all cut at every length up to 80.
fn packets() -> Vec<Vec<u8>> {
    let mut rng = Rng::new(0x9915);
    let mut out = Vec::new();
    for _ in 0..60 {
        let (frame, _) = random_packet(&mut rng, LinkType::PPI);
        let mut other = frame.clone();
        if let Some(dlt) = other.get_mut(4..8) {
            dlt.copy_from_slice(&1u32.to_le_bytes());
        }
        for f in [frame, other] {
            for cut in 0..=f.len().min(80) {
                out.push(f[..cut].to_vec());
            }
            out.push(f);
        }
    }
    out
}

#[test]
fn the_dlt_check_goes_with_the_link_type() {
    let pk = packets();
    let (mut compared, mut accepted, mut other_dlt_accepted) = (0usize, 0usize, 0usize);
    for expr in EXPRESSIONS {
        let libpcap = sift_testkit::libpcap::compile(expr, 192, 262_144, None, false)
            .unwrap_or_else(|e| panic!("libpcap rejects {expr:?}: {e}"));
        let ast = sift_syntax::parse(expr).expect("parses");
        let opts = sift_ir::LowerOptions { linktype: LinkType::PPI, ..Default::default() };
        let pred = sift_ir::lower(&ast, &opts).unwrap_or_else(|e| panic!("{expr:?}: {}", e.message));
        let optimized = sift_ir::optimize(&pred);
        let prog = sift_bpf::codegen::compile(&optimized, &Default::default()).unwrap_or_else(|e| panic!("{expr:?}: {e}"));
        // (None where there is no JIT.)
        let jit = sift_jit::JitFilter::from_pred(&optimized).ok();
        assert_eq!(jit.is_some(), sift_jit::JitFilter::is_supported(), "{expr:?}");
        for d in &pk {
            let wire = d.len() as u32 + 7;
            let theirs = sift_testkit::libpcap::filter(&libpcap, d, wire) != 0;
            let zeroed = sift_bpf::interp::run(&libpcap, d, wire) != 0;
            let eval = sift_ir::eval::matches(&pred, sift_ir::PacketView { data: d, wire_len: wire });
            let interp = sift_bpf::interp::run(&prog, d, wire) != 0;
            let native = jit.as_ref().is_none_or(|j| (j.run(d, wire) != 0) == eval);
            assert!(
                theirs == zeroed && zeroed == eval && eval == interp && native,
                "{expr:?}: libpcap {theirs} (zeroed memory {zeroed}) evaluator {eval} interpreter {interp} \
                 jit agrees {native} on {d:02x?}"
            );
            compared += 1;
            accepted += usize::from(theirs);
            other_dlt_accepted += usize::from(theirs && d.get(4..8) == Some(&1u32.to_le_bytes()[..]));
        }
    }
    println!("{compared} verdicts compared, {accepted} accepted ({other_dlt_accepted} of another DLT)");
    assert!(other_dlt_accepted >= 100, "the frames of another DLT were never accepted: {other_dlt_accepted}");
}
