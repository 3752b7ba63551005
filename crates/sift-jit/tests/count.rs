//! The count function (`JitFilter::count_matches`) accepts exactly the
//! packets the per-packet function accepts (and the interpreter): for
//! filters compiled from expressions, reading packets or the wire length
//! or neither, constant ones; on every truncation of full frames, empty
//! input, one packet (alone, and a batch of copies), and counts on either
//! side of the batch size and of the prefetch window. The count function
//! is compiled by the first count of at least a batch.

use sift_bpf::codegen::{compile, CodegenOptions};
use sift_bpf::interp::Program;
use sift_bpf::Insn;
use sift_ir::{LinkType, LowerOptions, Pred};
use sift_jit::{JitFilter, PacketRef, BATCH, PREFETCH_AHEAD};
use sift_testkit::{packets, Rng};

const EXPRS: &[&str] = &[
    "",
    "ip",
    "tcp",
    "icmp",
    "tcp port 5555",
    "host 178.79.150.233",
    "ip and (not tcp port (80 or 25 or 143) and not ip host (192.168.2.1 or 192.168.2.14))",
    "greater 100",
    "len > 60 and udp",
    "ip[0] & 0xf > 5",
    "tcp[13] & 2 != 0",
    "ip6 and tcp",
    "ether[0] = 1 and ether[0] = 2",
    // Long enough for the count function to prefetch a deeper line.
    "ip and tcp port (21 or 22 or 23 or 24 or 25 or 26 or 27 or 28 or 29 or 30 or 31 or 32 or 33 or 34 or 35 or 36 or 37 or 38 or 39 or 40)",
];

/// `expr` on Ethernet: its optimized predicate and its cBPF program.
fn compiled(expr: &str) -> (Pred, Vec<Insn>) {
    let opts = LowerOptions {
        linktype: LinkType::EN10MB,
        ..LowerOptions::default()
    };
    let ast = sift_syntax::parse(expr).expect("parses");
    let pred = sift_ir::optimize(&sift_ir::lower(&ast, &opts).expect("lowers"));
    let prog = compile(&pred, &CodegenOptions::default()).expect("compiles");
    (pred, prog)
}

/// (captured bytes, wire length): every truncation of a few full frames,
/// random bytes, and tiny packets.
fn test_packets() -> Vec<(Vec<u8>, u32)> {
    let mut rng = Rng::new(11);
    let mut out = Vec::new();
    for lt in [
        LinkType::EN10MB,
        LinkType::EN10MB,
        LinkType::EN10MB,
        LinkType::RAW,
    ] {
        let frame = packets::full_frame(&mut rng, lt);
        for cut in 0..=frame.len().min(90) {
            out.push((frame[..cut].to_vec(), frame.len() as u32));
        }
    }
    for _ in 0..100 {
        out.push(packets::random_packet(&mut rng, LinkType::EN10MB));
    }
    for n in 0..5 {
        out.push((rng.bytes(n), rng.next_u32()));
    }
    out
}

#[test]
fn count_matches_agrees_with_the_per_packet_function() {
    if !JitFilter::is_supported() {
        return;
    }
    let packets = test_packets();
    for expr in EXPRS {
        let (pred, prog) = compiled(expr);
        let interp = Program::new(&prog).expect("runnable");
        let jit = JitFilter::from_program(&prog).expect("jit");
        let direct = JitFilter::from_pred(&pred).expect("jit");
        // A program starting with `ret` has no code.
        let constant = prog[0].code == sift_bpf::insn::op::RET | sift_bpf::insn::op::K;
        assert_eq!(jit.count_code_bytes().is_empty(), constant, "{expr:?}");
        // The predicate compiled directly has a count function too, unless
        // it is constant.
        let constant_pred = matches!(pred, Pred::True | Pred::False);
        assert_eq!(direct.count_code_bytes().is_empty(), constant_pred, "{expr:?}");
        let accepts = |p: &(Vec<u8>, u32)| interp.run(&p.0, p.1) != 0;
        for f in [&jit, &direct] {
            for (data, wire) in &packets {
                assert_eq!(
                    f.run(data, *wire),
                    interp.run(data, *wire),
                    "{expr:?} {data:02x?}"
                );
            }
            // Empty input; each packet alone, and in a batch of copies;
            // every count around the batch size and the prefetch window,
            // from several starts.
            assert_eq!(
                f.count_matches(&[] as &[(Vec<u8>, u32)], |p| (&p.0, p.1)),
                0
            );
            for p in &packets {
                assert_eq!(
                    f.count_matches(std::slice::from_ref(p), |p| (&p.0, p.1)),
                    u64::from(accepts(p))
                );
                assert_eq!(
                    f.count_matches(&[p; BATCH], |p| (&p.0, p.1)),
                    BATCH as u64 * u64::from(accepts(p)),
                    "{expr:?} {p:02x?}"
                );
            }
            let sizes = [
                1,
                2,
                BATCH - 1,
                BATCH,
                BATCH + 1,
                PREFETCH_AHEAD + BATCH,
                2 * BATCH + PREFETCH_AHEAD + 3,
            ];
            for start in [0, 7, 100] {
                for n in sizes.into_iter().chain([packets.len() - start]) {
                    let Some(items) = packets.get(start..start + n) else {
                        continue;
                    };
                    let want = items.iter().filter(|p| accepts(p)).count() as u64;
                    assert_eq!(
                        f.count_matches(items, |p| (&p.0, p.1)),
                        want,
                        "{expr:?} [{start}..+{n}]"
                    );
                    // Walked in place, as `PacketRef`s; and each verdict
                    // written (over stale values, and into a shorter
                    // slice: only as many as it holds).
                    let refs: Vec<PacketRef> = items.iter().map(|p| PacketRef::new(&p.0, p.1)).collect();
                    assert_eq!(f.count_packets(&refs), want, "{expr:?} [{start}..+{n}] in place");
                    let expected: Vec<bool> = items.iter().map(accepts).collect();
                    for stale in [false, true] {
                        let mut got = vec![stale; refs.len() + 1];
                        assert_eq!(f.verdicts(&refs, &mut got), want, "{expr:?} [{start}..+{n}] verdicts");
                        assert_eq!(&got[..refs.len()], expected, "{expr:?} [{start}..+{n}] verdicts");
                        assert_eq!(got[refs.len()], stale, "{expr:?}: past the packets");
                    }
                    let half = refs.len() / 2;
                    let mut got = vec![false; half];
                    let want_half = expected[..half].iter().filter(|&&v| v).count() as u64;
                    assert_eq!(f.verdicts(&refs, &mut got), want_half, "{expr:?} [{start}..+{n}] half");
                    assert_eq!(got, expected[..half], "{expr:?} [{start}..+{n}] half");
                }
            }
        }
    }
}

/// Packets spread over more memory than `PREFETCH_FAR_SPAN` (prefetched
/// `PREFETCH_AHEAD` ahead, and far apart: the deeper line too, in the
/// count functions compiled from predicates) and over less
/// (`PREFETCH_NEAR` ahead) are counted exactly as the per-packet function
/// accepts them, by the count functions of both compilers.
#[test]
fn count_matches_agrees_at_either_prefetch_distance() {
    if !JitFilter::is_supported() {
        return;
    }
    let packets: Vec<(Vec<u8>, u32)> = test_packets().into_iter().take(160).collect();
    // One zeroed buffer (its untouched pages are never mapped), packets
    // `stride` bytes apart: 1 MiB spans 160 MiB, 2000 bytes 320 KB.
    for stride in [1usize << 20, 2000] {
        let mut buffer = vec![0u8; stride * packets.len()];
        for (i, (data, _)) in packets.iter().enumerate() {
            buffer[i * stride..i * stride + data.len()].copy_from_slice(data);
        }
        let items: Vec<(&[u8], u32)> = packets
            .iter()
            .enumerate()
            .map(|(i, (data, wire))| (&buffer[i * stride..i * stride + data.len()], *wire))
            .collect();
        for (expr, from) in EXPRS.iter().flat_map(|e| [(e, "cBPF"), (e, "predicate")]) {
            let (pred, prog) = compiled(expr);
            let jit = if from == "cBPF" { JitFilter::from_program(&prog) } else { JitFilter::from_pred(&pred) };
            let jit = jit.expect("jit");
            for start in [0, 5] {
                let part = &items[start..];
                let want = part.iter().filter(|p| jit.run(p.0, p.1) != 0).count() as u64;
                assert_eq!(jit.count_matches(part, |p| (p.0, p.1)), want, "{expr:?} from {from}, stride {stride} from {start}");
                let refs: Vec<PacketRef> = part.iter().map(|&(d, w)| PacketRef::new(d, w)).collect();
                assert_eq!(jit.count_packets(&refs), want, "{expr:?} from {from}, stride {stride} from {start} in place");
                let mut got = vec![false; refs.len()];
                assert_eq!(jit.verdicts(&refs, &mut got), want, "{expr:?} from {from}, stride {stride} from {start} verdicts");
                assert!(got.iter().zip(part).all(|(&g, p)| g == (jit.run(p.0, p.1) != 0)), "{expr:?} from {from}, stride {stride}");
            }
        }
    }
}

/// A filter whose program starts with `ret` has no code: it runs nothing,
/// and counts without looking at the packets.
#[test]
fn constant_filters_have_no_code() {
    use sift_bpf::insn::op::*;
    use sift_bpf::Insn;
    let packets = test_packets();
    for k in [0u32, 1, 262_144] {
        let f = JitFilter::from_program(&[Insn::stmt(RET | K, k), Insn::stmt(RET | K, 5)])
            .expect("jit");
        assert_eq!(f.code_size(), 0);
        assert_eq!(f.run(&[1, 2, 3], 3), k);
        let n = f.count_matches(&packets, |_| {
            unreachable!("a constant filter reads no packet")
        });
        assert_eq!(n, if k != 0 { packets.len() as u64 } else { 0 });
        let refs: Vec<PacketRef> = packets.iter().map(|p| PacketRef::new(&p.0, p.1)).collect();
        assert_eq!(f.count_packets(&refs), n);
        let mut got = vec![k == 0; refs.len()];
        assert_eq!(f.verdicts(&refs, &mut got), n);
        assert!(got.iter().all(|&v| v == (k != 0)));
        let mut out = vec![7; 3];
        f.run_batch(&[(&[][..], 0), (&[1][..], 1)], &mut out);
        assert_eq!(out, [k, k, 7]);
    }
}
