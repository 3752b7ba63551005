//! Filters compiled side by side get code memory of their own: no two live
//! filters overlap, each runs its own code, also after many compiles and
//! drops of every size and beyond the first chunk of the code file.

use sift_bpf::insn::op::*;
use sift_bpf::Insn;
use sift_jit::JitFilter;

/// `ld #0; add #1000 (n times); ret a`: returns 1000 * n.
fn adds(n: usize) -> JitFilter {
    let mut prog = vec![Insn::stmt(LD | IMM, 0)];
    prog.extend(std::iter::repeat_n(Insn::stmt(ALU | ADD | K, 1000), n));
    prog.push(Insn::stmt(RET | A, 0));
    JitFilter::from_program(&prog).expect("compiles")
}

fn check_apart(live: &[(usize, JitFilter)]) {
    let mut ranges: Vec<(usize, usize)> =
        live.iter().map(|(_, f)| (f.code_addr(), f.code_addr() + f.code_size())).collect();
    ranges.sort_unstable();
    for w in ranges.windows(2) {
        assert!(w[0].1 <= w[1].0, "code ranges overlap: {w:x?}");
    }
    for (n, f) in live {
        assert_eq!(f.run(&[], 0), 1000 * *n as u32);
    }
}

#[test]
fn live_filters_never_share_code_memory() {
    if !JitFilter::is_supported() {
        return;
    }
    // Sizes from a few bytes to several KiB (each `add` is 5 bytes of code).
    let sizes = [0usize, 1, 5, 12, 30, 70, 150, 400, 900, 2000];
    let mut live: Vec<(usize, JitFilter)> = Vec::new();
    for round in 0..6 {
        for i in 0..300 {
            let n = sizes[(i * 7 + round) % sizes.len()];
            live.push((n, adds(n)));
        }
        check_apart(&live);
        // Drop every other one (their blocks are reused next round).
        let mut k = 0;
        live.retain(|_| {
            k += 1;
            k % 2 == 0
        });
        check_apart(&live);
    }
}
