//! Unit tests of the optimizer: hand-picked rewrites, and random predicates
//! over a few overlapping loads × random short packets, where the optimized
//! predicate must give the same result *and the same aborts* as the
//! original (compared with `eval_pred` under `not` too).

use super::*;
use crate::eval::{eval_pred, PacketView};
use crate::lower::{lower, LowerOptions};
use crate::pred::{BinOp, CmpOp, Pred, Size, Test, Value};

fn parse(expr: &str) -> Pred {
    let ast = sift_syntax::parse(expr).expect("parses");
    lower(&ast, &LowerOptions { netmask: Some(0), ..LowerOptions::default() }).expect("lowers")
}

fn tests_in(p: &Pred) -> usize {
    match p {
        Pred::True | Pred::False => 0,
        Pred::Test(_) => 1,
        Pred::Not(q) => tests_in(q),
        Pred::And(v) | Pred::Or(v) => v.iter().map(tests_in).sum(),
    }
}

/// A tiny deterministic generator (xorshift).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn rand_value(r: &mut Rng, depth: u32) -> Value {
    match r.below(if depth == 0 { 4 } else { 7 }) {
        0 | 1 => Value::load(Size::Byte, r.below(6) as u32),
        2 => Value::load(Size::Half, r.below(6) as u32),
        3 => Value::Const(r.below(4) as u32),
        4 => Value::load_indexed(Size::Byte, Value::load(Size::Byte, 0).bin(BinOp::And, Value::Const(3)), r.below(3) as u32),
        5 => rand_value(r, depth - 1).bin(BinOp::And, Value::Const(r.below(4) as u32)),
        _ => rand_value(r, depth - 1).bin(BinOp::Div, rand_value(r, 0)),
    }
}

fn rand_test(r: &mut Rng) -> Pred {
    let lhs = rand_value(r, 1);
    let op = [CmpOp::Eq, CmpOp::Gt, CmpOp::Ge, CmpOp::Set][r.below(4) as usize];
    let rhs = if r.below(5) == 0 { rand_value(r, 0) } else { Value::Const(r.below(4) as u32) };
    Pred::Test(Test { lhs, op, rhs })
}

fn rand_pred(r: &mut Rng, depth: u32) -> Pred {
    if depth == 0 {
        return rand_test(r);
    }
    match r.below(9) {
        0 | 1 => rand_test(r),
        2 => Pred::Not(Box::new(rand_pred(r, depth - 1))),
        3 => if r.below(2) == 0 { Pred::True } else { Pred::False },
        4..=6 => Pred::And((0..2 + r.below(3)).map(|_| rand_pred(r, depth - 1)).collect()),
        _ => Pred::Or((0..2 + r.below(3)).map(|_| rand_pred(r, depth - 1)).collect()),
    }
}

/// Guards on the same half-word: what factoring and distribution act on.
fn rand_guarded(r: &mut Rng, depth: u32) -> Pred {
    let alts = (0..2 + r.below(4))
        .map(|_| {
            let g = Pred::eq(Value::load(Size::Half, 0), r.below(3) as u32);
            g.and(rand_pred(r, depth))
        })
        .collect();
    let or = Pred::Or(alts);
    if r.below(2) == 0 {
        or.and(rand_pred(r, depth))
    } else {
        or
    }
}

/// Asserts that `p` and its optimized form `o` give the same verdict on
/// `tries` random packets (bytes 0-3) of each length below `lens`, where an
/// abort rejects; `case` names the case in the message.
fn assert_same_verdicts(r: &mut Rng, p: &Pred, o: &Pred, lens: usize, tries: usize, case: &str) {
    for len in 0..lens {
        for _ in 0..tries {
            let data: Vec<u8> = (0..len).map(|_| r.below(4) as u8).collect();
            let pkt = PacketView { data: &data, wire_len: len as u32 };
            assert_eq!(
                eval_pred(p, pkt).unwrap_or(false),
                eval_pred(o, pkt).unwrap_or(false),
                "case {case} on {data:?}\noriginal:\n{p}\noptimized:\n{o}"
            );
        }
    }
}

#[test]
fn random_predicates_keep_results_and_aborts() {
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    for case in 0..4000 {
        let p = if case % 2 == 0 { rand_pred(&mut r, 4) } else { rand_guarded(&mut r, 3) };
        let o = optimize(&p);
        assert_same_verdicts(&mut r, &p, &o, 8, 6, &case.to_string());
    }
}

#[test]
fn random_predicates_under_not_keep_results() {
    // Under `not` an abort still rejects: the optimizer sees the negation
    // at the root, so a sub-predicate's abort context flips.
    let mut r = Rng(0x1234_5678_9abc_def1);
    for case in 0..3000 {
        let p = Pred::Not(Box::new(if case % 2 == 0 { rand_pred(&mut r, 4) } else { rand_guarded(&mut r, 3) }));
        let o = optimize(&p);
        assert_same_verdicts(&mut r, &p, &o, 8, 6, &case.to_string());
    }
}

#[test]
fn each_pass_alone_keeps_results() {
    let mut r = Rng(42);
    let all = [
        OptOptions { factor: true, facts: false, second_round: false },
        OptOptions { factor: false, facts: true, second_round: false },
        OptOptions { factor: true, facts: true, second_round: true },
    ];
    for case in 0..1500 {
        let p = rand_guarded(&mut r, 3);
        for opts in &all {
            let o = optimize_with(&p, opts);
            assert_same_verdicts(&mut r, &p, &o, 8, 1, &format!("{case} {opts:?}"));
        }
    }
}

/// `and(g, or(guarded alternatives), ...)` where `g` tests the value of the
/// alternatives' guards: distribution drops the alternatives `g` rules out.
fn rand_pre_guarded(r: &mut Rng, depth: u32) -> Pred {
    // `u16[0] == k`, or a set of two such tests.
    let guard = |r: &mut Rng| {
        let eq = |k: u64| Pred::eq(Value::load(Size::Half, 0), k as u32);
        let k = r.below(4);
        if r.below(3) == 0 { Pred::Or(vec![eq(k), eq((k + 1) % 4)]) } else { eq(k) }
    };
    let g = guard(r);
    let or = |r: &mut Rng| Pred::Or((0..2 + r.below(3)).map(|_| guard(r).and(rand_pred(r, depth))).collect());
    let (first, then) = (or(r), if r.below(2) == 0 { or(r) } else { rand_pred(r, depth) });
    // The second `or` is pruned as it is copied into the first's
    // alternatives.
    g.and(first).and(then)
}

#[test]
fn distribution_drops_alternatives_an_earlier_test_rules_out() {
    let mut r = Rng(0x5eed_0001);
    let factor_only = OptOptions { factor: true, facts: false, second_round: false };
    for case in 0..3000 {
        let p = rand_pre_guarded(&mut r, 2);
        for o in [optimize_with(&p, &factor_only), optimize(&p)] {
            assert_same_verdicts(&mut r, &p, &o, 6, 1, &case.to_string());
        }
    }
    // `tcp[…]` is IPv4 only: its `ip` test comes before the `tcp` test's
    // IPv4/IPv6 alternatives, so factoring alone leaves no IPv6 copy.
    let o = optimize_with(&parse("tcp[20:1] > 65 and tcp[20:1] < 90"), &factor_only);
    assert!(!o.to_string().contains("0x86dd"), "{o}");
}

/// Equalities and sets of equalities (`or`s) of two bytes with a few
/// constants, under `and`/`or`/`not`: what path facts' set reasoning sees.
fn rand_sets(r: &mut Rng, depth: u32) -> Pred {
    let eq = |at: u64, k: u64| Pred::eq(Value::load(Size::Byte, at as u32), k as u32);
    match r.below(if depth == 0 { 2 } else { 6 }) {
        0 => eq(r.below(2), r.below(4)),
        1 => {
            let at = r.below(2);
            Pred::Or((0..2 + r.below(3)).map(|_| eq(at, r.below(4))).collect())
        }
        2 => Pred::Not(Box::new(rand_sets(r, depth - 1))),
        3 | 4 => Pred::And((0..2 + r.below(3)).map(|_| rand_sets(r, depth - 1)).collect()),
        _ => Pred::Or((0..2 + r.below(3)).map(|_| rand_sets(r, depth - 1)).collect()),
    }
}

#[test]
fn set_facts_keep_results() {
    let mut r = Rng(0x5e7_f4c7);
    for case in 0..4000 {
        let p = rand_sets(&mut r, 3);
        let o = optimize(&p);
        assert_same_verdicts(&mut r, &p, &o, 3, 8, &case.to_string());
    }
    // A set known to hold decides a later test of it, alternative by
    // alternative (each one failed rules its constant out).
    let set = |ks: &[u32]| Pred::Or(ks.iter().map(|&k| Pred::eq(Value::load(Size::Byte, 0), k)).collect());
    let o = optimize(&set(&[6, 17, 132]).and(set(&[6, 17, 132])).and(Pred::eq(Value::load(Size::Byte, 1), 0)));
    assert_eq!(o, optimize(&set(&[6, 17, 132]).and(Pred::eq(Value::load(Size::Byte, 1), 0))), "{o}");
}

/// Tests known to hold that end an `and` go where an abort is as good as
/// `true` (under `not` at the root), also one that becomes last when the
/// one after it goes.
#[test]
fn trailing_tests_known_to_hold_go_where_an_abort_is_as_good() {
    let always = |at: u32| Pred::test(Value::load(Size::Byte, at).bin(BinOp::And, Value::Const(0)), CmpOp::Eq, Value::Const(0));
    let first = Pred::eq(Value::load(Size::Byte, 0), 1);
    // `u8[8]` is not covered by the `u8[4]` after it.
    let p = Pred::Not(Box::new(Pred::And(vec![first.clone(), always(8), always(4)])));
    assert_eq!(optimize(&p), Pred::Not(Box::new(first.clone())));
    // At the root an abort rejects, as `false` does, not as `true`: the
    // `u8[8]` test stays (the `u8[4]` one goes: `u8[8]` proved 9 bytes).
    let q = Pred::And(vec![first.clone(), always(8), always(4)]);
    assert_eq!(optimize(&q), Pred::And(vec![first, always(8)]));
}

#[test]
fn decided_protocols_disappear() {
    assert_eq!(optimize(&parse("ip and ip6")), Pred::False);
    assert_eq!(optimize(&parse("ip and ip")), optimize(&parse("ip")));
    // `tcp and udp`: the protocol byte is compared once per family.
    let o = optimize(&parse("tcp and udp"));
    assert!(tests_in(&o) <= 4, "{o}");
}

#[test]
fn port_lists_share_their_prefix() {
    // Lowered port by port (as the dynamic engine has it; lowering does
    // this merge itself otherwise, and here the optimizer gets to the same
    // tree).
    let expr = "tcp port 1 or tcp port 2 or tcp port 3 or tcp port 4";
    let ast = sift_syntax::parse(expr).expect("parses");
    let opts = LowerOptions { netmask: Some(0), port_lists: false, ..LowerOptions::default() };
    let before = lower(&ast, &opts).expect("lowers");
    let o = optimize(&before);
    // ip6 and ip checked once each, the protocol and fragment once on the IPv4 side.
    assert!(tests_in(&o) * 3 < tests_in(&before) * 2, "{} -> {}:\n{o}", tests_in(&before), tests_in(&o));
    let text = o.to_string();
    assert_eq!(text.matches("u16[12] == 0x800").count(), 1, "{o}");
    assert_eq!(o, optimize(&parse(expr)), "the optimizer's merge and lowering's");
}

/// Tests regrouped by value (they can no longer abort) start with the value
/// the test before them compared, which a backend holds already.
#[test]
fn regrouped_tests_start_with_the_value_just_tested() {
    // Port by port: after `src port 1` and `dst port 1` (which proves the
    // bytes of both ports), the `dst` tests come first, then the `src` ones.
    let o = optimize(&parse("tcp port 1 or tcp port 2 or tcp port 3"));
    let Pred::Or(families) = &o else { panic!("{o}") };
    for family in families {
        let Pred::And(tests) = family else { panic!("{o}") };
        let Some(Pred::Or(ports)) = tests.last() else { panic!("{o}") };
        let lhs: Vec<&Value> = ports.iter().map(|p| match p {
            Pred::Test(t) => &t.lhs,
            _ => panic!("{o}"),
        }).collect();
        assert_eq!(lhs.len(), 6, "{o}");
        let (src, dst) = (lhs[0], lhs[1]);
        assert_ne!(src, dst, "{o}");
        assert_eq!(lhs[2..], [dst, dst, src, src], "{o}");
    }
}

#[test]
fn portrange_drops_tautologies() {
    let o = optimize(&parse("portrange 0-6000"));
    assert!(!o.to_string().contains(">= 0\n"), "{o}");
}

#[test]
fn truncation_sensitive_tests_stay() {
    // `not tcp[100] = 1` must still reject a short TCP packet, so the load
    // cannot be dropped although only the negation matters.
    let o = optimize(&parse("ip and not ether[100] = 1 or ip"));
    assert!(o.to_string().contains("u8[100]"), "{o}");
}

#[test]
fn host_alternatives_are_grouped_by_ethertype() {
    let o = optimize(&parse("host 1.2.3.4"));
    assert_eq!(o.to_string().matches("u16[12] == 0x800").count(), 1, "{o}");
}

#[test]
fn stages_are_named_and_end_in_the_result() {
    // Path facts leave `tcp port 80` as it is: one round. They change
    // `tcp[20:1] > 65 and tcp[20:1] < 90` (the second `ip` test goes), but
    // the second factoring does not: four passes. In the bpf-performance
    // pattern the second factoring finds more: five.
    let bpfperf1 = "src net 10.0.0.0/8 or (dst net 127.0.0.1 and port 22) or src net 2001:470::/28";
    for (expr, passes) in [("tcp port 80", 3), ("tcp[20:1] > 65 and tcp[20:1] < 90", 4), (bpfperf1, 5)] {
        let p = parse(expr);
        let s = stages(&p, &OptOptions::default());
        let names = ["fold", "factor", "facts", "factor", "facts"];
        assert_eq!(s.iter().map(|x| x.0).collect::<Vec<_>>(), names[..passes], "{expr}");
        assert_eq!(s.last().map(|x| &x.1), Some(&optimize(&p)));
    }
}


#[test]
fn transport_alternatives_with_the_same_ports_merge() {
    // portrange: tcp/udp/sctp alternatives share their port tests.
    let o = optimize(&parse("portrange 0-6000"));
    assert_eq!(o.to_string().matches("u16[54] > 0x1770").count(), 1, "{o}");
}

/// The reference `and`/`or` fold: flatten, drop the unit, cut after the
/// absorbing constant (what `fold::and`/`fold::or` did with a fresh vector).
fn fold_junction_reference(ps: Vec<Pred>, is_and: bool) -> Pred {
    let mut out = Vec::new();
    for p in ps {
        match p {
            Pred::True if is_and => {}
            Pred::False if !is_and => {}
            Pred::And(v) if is_and => out.extend(v),
            Pred::Or(v) if !is_and => out.extend(v),
            p @ (Pred::True | Pred::False) => {
                out.push(p);
                break;
            }
            p => out.push(p),
        }
    }
    match (out.len(), is_and) {
        (0, true) => Pred::True,
        (0, false) => Pred::False,
        (1, _) => out.pop().unwrap(),
        (_, true) => Pred::And(out),
        (_, false) => Pred::Or(out),
    }
}

/// The in-place `and_vec`/`or_vec` equal the reference on random operand
/// lists (constants, nested junctions, tests).
#[test]
fn in_place_junctions_equal_the_reference() {
    let mut r = Rng(0x5eed_f01d);
    for _ in 0..5000 {
        let ops: Vec<Pred> = (0..r.below(5)).map(|_| rand_pred(&mut r, 2)).collect();
        assert_eq!(
            fold::and_vec(ops.clone()),
            fold_junction_reference(ops.clone(), true)
        );
        assert_eq!(
            fold::or_vec(ops.clone()),
            fold_junction_reference(ops.clone(), false)
        );
        assert_eq!(
            fold::and(ops.clone()),
            fold_junction_reference(ops.clone(), true)
        );
        assert_eq!(fold::or(ops.clone()), fold_junction_reference(ops, false));
    }
}

/// The second round runs only when the first round's path facts changed
/// the tree; `stages` lists exactly the passes `optimize` runs.
#[test]
fn second_round_only_after_path_facts_changed_something() {
    let mut r = Rng(0xfeed_beef);
    let exprs = [
        "tcp",
        "ip",
        "tcp port 80",
        "host 1.2.3.4",
        "portrange 0-6000",
        "src net 10.0.0.0/8 or dst port 22",
        "ip6 and udp",
        "vlan and tcp",
        "tcp[13] & 2 != 0",
        "not arp",
        "len > 100",
    ];
    let mut preds: Vec<Pred> = exprs.iter().map(|e| parse(e)).collect();
    preds.extend((0..500).map(|i| {
        if i % 2 == 0 {
            rand_pred(&mut r, 4)
        } else {
            rand_guarded(&mut r, 2)
        }
    }));
    let mut second_rounds = 0;
    for p in preds {
        let all = stages(&p, &OptOptions::default());
        assert_eq!(all.last().map(|x| &x.1), Some(&optimize(&p)), "{p}");
        assert_eq!(optimize_owned(p.clone()), optimize(&p));
        // Path facts leaving the tree as it was end the optimizer, and so
        // does a second factoring leaving it as it was.
        match all.iter().map(|x| x.0).collect::<Vec<_>>()[..] {
            ["fold", "factor", "facts"] => {}
            ["fold", "factor", "facts", "factor"] => {
                assert_ne!(all[2].1, all[1].1, "{p}");
                assert_eq!(all[3].1, all[2].1, "{p}");
                second_rounds += 1;
            }
            ["fold", "factor", "facts", "factor", "facts"] => {
                assert_ne!(all[2].1, all[1].1, "{p}");
                second_rounds += 1;
            }
            ref names => panic!("{names:?}"),
        }
    }
    assert!(second_rounds > 50, "{second_rounds}");
}

/// The operands of every `or` (`ors`) or `and` of `p`, bottom up.
fn junctions_of(p: &Pred, ors: bool, out: &mut Vec<Vec<Pred>>) {
    match p {
        Pred::Not(q) => junctions_of(q, ors, out),
        Pred::And(v) | Pred::Or(v) => {
            v.iter().for_each(|q| junctions_of(q, ors, out));
            if matches!(p, Pred::Or(_)) == ors {
                out.push(v.clone());
            }
        }
        _ => {}
    }
}

/// Every `or` (bottom up, as factoring sees them) of `p`'s factored tree.
fn ors_of(p: &Pred, out: &mut Vec<Vec<Pred>>) {
    junctions_of(p, true, out)
}

/// When factoring's check says an `and` has nothing to distribute (it is
/// then left as it is), distributing gives the `and` back unchanged, and
/// says so.
#[test]
fn nothing_to_distribute_means_distribution_changes_nothing() {
    let mut r = Rng(0xd157_0b07);
    let mut preds: Vec<Pred> =
        ["tcp", "tcp port 80", "host 1.2.3.4", "tcp[20:1] > 65 and tcp[20:1] < 90", "ip6 and udp", "vlan and tcp"]
            .iter()
            .map(|e| parse(e))
            .collect();
    preds.extend((0..1500).map(|i| match i % 3 {
        0 => rand_pred(&mut r, 4),
        1 => rand_guarded(&mut r, 2),
        _ => rand_pre_guarded(&mut r, 2),
    }));
    let (mut checked, mut distributed) = (0, 0);
    for p in preds {
        let mut budget = usize::MAX / 2;
        let mut ands = Vec::new();
        junctions_of(&fold::fold(p.clone()), false, &mut ands);
        junctions_of(&factor::factor(fold::fold(p), &mut budget), false, &mut ands);
        for v in ands {
            if factor::nothing_to_distribute(&v) {
                checked += 1;
                let mut changed = false;
                assert_eq!(factor::distribute(v.clone(), &mut budget, &mut changed), Pred::And(v));
                assert!(!changed);
            } else {
                distributed += 1;
            }
        }
    }
    assert!(checked > 500 && distributed > 100, "{checked} {distributed}");
}

/// When factoring's check says an `or` has nothing to merge, taking its
/// alternatives apart and merging them gives the `or` back unchanged; when
/// it says there is, what it found out does not change the merge.
#[test]
fn nothing_to_merge_means_the_full_merge_changes_nothing() {
    let mut r = Rng(0x0dd_f00d);
    let exprs = [
        "tcp",
        "tcp port 80",
        "host 1.2.3.4",
        "portrange 0-6000",
        "ip6 and udp",
        "vlan and tcp",
        "port 22",
        "src net 10.0.0.0/8 or (dst net 127.0.0.1 and port 22)",
        // Alternatives with exclusive guards and the same rest (pairs).
        // (`and` and `or` bind alike in pcap expressions.)
        "(ether[12:2] = 0x800 and ether[30] = 1) or (ether[12:2] = 0x806 and ether[30] = 1)",
        "(ether[23] = 6 and ether[34:2] = 22) or (ether[23] = 17 and ether[34:2] = 22) or (ether[23] = 132 and ether[34:2] = 22)",
        "(ether[0] = 1 and len > 60) or (ether[0] = 2 and len > 60) or (ether[0] = 3 and len > 70)",
    ];
    let mut preds: Vec<Pred> = exprs.iter().map(|e| parse(e)).collect();
    preds.extend((0..1500).map(|i| if i % 2 == 0 { rand_pred(&mut r, 4) } else { rand_guarded(&mut r, 2) }));
    let (mut checked, mut merged, mut paired) = (0, 0, 0);
    for p in preds {
        let mut budget = usize::MAX / 2;
        let mut ors = Vec::new();
        ors_of(&fold::fold(p.clone()), &mut ors);
        ors_of(&factor::factor(fold::fold(p), &mut budget), &mut ors);
        for alts in ors {
            let Pred::Or(alts) = fold::or_vec(alts) else { continue };
            if factor::nothing_to_merge(&alts) {
                checked += 1;
                assert_eq!(factor::merge_entries(alts.clone(), &mut budget), Pred::Or(alts));
            } else {
                merged += 1;
                // What the check found out (two alternatives with the same
                // rest) changes nothing in the merge.
                let Err(work) = factor::merge_check(&alts) else { panic!("merge_check disagrees") };
                paired += usize::from(work.pair().is_some());
                let (mut b1, mut b2) = (budget, budget);
                assert_eq!(
                    factor::merge_entries_knowing(alts.clone(), work, &mut b1),
                    factor::merge_entries(alts, &mut b2)
                );
                assert_eq!(b1, b2);
            }
        }
    }
    assert!(checked > 500 && merged > 100 && paired > 5, "{checked} {merged} {paired}");
}

/// Path facts reuse their tables from one pass to the next on a thread:
/// results must not depend on what was optimized before.
#[test]
fn results_do_not_depend_on_what_the_thread_optimized_before() {
    let mut r = Rng(0xabad_cafe);
    let preds: Vec<Pred> = (0..400).map(|i| if i % 2 == 0 { rand_pred(&mut r, 4) } else { rand_guarded(&mut r, 2) }).collect();
    let shared: Vec<Pred> = preds.iter().map(optimize).collect();
    let backwards: Vec<Pred> = preds.iter().rev().map(optimize).collect();
    for (i, p) in preds.iter().enumerate() {
        assert_eq!(shared[i], backwards[preds.len() - 1 - i], "{p}");
        if i % 9 == 0 {
            let alone = std::thread::scope(|s| s.spawn(|| optimize(p)).join()).expect("joins");
            assert_eq!(shared[i], alone, "{p}");
        }
    }
}

#[test]
fn borrowed_and_owned_paths_agree() {
    // `fold_ref` builds what `fold` rebuilds in place, and `optimize`
    // (from a borrowed tree) gives what `optimize_owned` gives.
    let mut r = Rng(0x2545_f491_4f6c_dd1d);
    for case in 0..2000 {
        let p = if case % 2 == 0 { rand_pred(&mut r, 4) } else { rand_guarded(&mut r, 3) };
        assert_eq!(fold::fold_ref(&p), fold::fold(p.clone()), "case {case}:\n{p}");
        assert_eq!(optimize(&p), optimize_owned(p.clone()), "case {case}:\n{p}");
    }
}

/// A pass that says it changed nothing gives its input back (what lets
/// `optimize` skip the second round).
#[test]
fn unchanged_passes_give_their_input_back() {
    let mut r = Rng(0x5eed_cafe);
    let exprs = ["tcp", "tcp port 80", "host 1.2.3.4", "ip6 and udp", "not arp"];
    let mut preds: Vec<Pred> = exprs.iter().map(|e| parse(e)).collect();
    preds.extend((0..1500).map(|i| if i % 2 == 0 { rand_pred(&mut r, 4) } else { rand_guarded(&mut r, 2) }));
    let (mut same_factor, mut same_facts) = (0, 0);
    for p in preds {
        let p = fold::fold(p);
        for q in [p.clone(), facts::simplify(p.clone())] {
            let mut changed = false;
            let f = factor::factor_noting(q.clone(), &mut 1000, &mut changed);
            if !changed {
                assert_eq!(f, q, "factor");
                same_factor += 1;
            }
            let mut changed = false;
            let s = facts::simplify_noting(q.clone(), &mut changed);
            if !changed {
                assert_eq!(s, q, "facts");
                same_facts += 1;
            }
        }
    }
    // The check is not vacuous.
    assert!(same_factor > 100 && same_facts > 100, "{same_factor} {same_facts}");
}

/// Values on which most folding rules fire (constant operands, identities,
/// constant indexes, negations).
fn rand_foldable_value(r: &mut Rng, depth: u32) -> Value {
    if depth == 0 {
        return match r.below(3) {
            0 => Value::Const([0, 1, u32::MAX, 7][r.below(4) as usize]),
            1 => Value::load(Size::Byte, r.below(6) as u32),
            _ => Value::Len,
        };
    }
    let sub = |r: &mut Rng| Box::new(rand_foldable_value(r, depth - 1));
    match r.below(4) {
        0 => Value::Neg(sub(r)),
        1 => {
            let offset = [0, 2, u32::MAX][r.below(3) as usize];
            Value::Load { size: Size::Half, index: Some(sub(r)), offset }
        }
        _ => {
            let op = [BinOp::Add, BinOp::Sub, BinOp::Mul, BinOp::Div, BinOp::And, BinOp::Or, BinOp::Xor, BinOp::Shl]
                [r.below(8) as usize];
            Value::Bin(op, sub(r), sub(r))
        }
    }
}

/// Predicates on which most folding rules fire.
fn rand_foldable(r: &mut Rng, depth: u32) -> Pred {
    let test = |r: &mut Rng| {
        let op = [CmpOp::Eq, CmpOp::Gt, CmpOp::Ge, CmpOp::Set][r.below(4) as usize];
        Pred::Test(Test { lhs: rand_foldable_value(r, 2), op, rhs: rand_foldable_value(r, 1) })
    };
    if depth == 0 {
        return test(r);
    }
    match r.below(8) {
        0 | 1 => test(r),
        2 | 3 => Pred::Not(Box::new(rand_foldable(r, depth - 1))),
        4 => if r.below(2) == 0 { Pred::True } else { Pred::False },
        5 => Pred::And((0..r.below(4)).map(|_| rand_foldable(r, depth - 1)).collect()),
        6 => Pred::Or((0..r.below(4)).map(|_| rand_foldable(r, depth - 1)).collect()),
        _ => Pred::And(vec![rand_foldable(r, depth - 1), Pred::Or(vec![rand_foldable(r, depth - 1)])]),
    }
}

/// Folding counts the size of the tree it returns (the distribution budget)
/// as `analysis::size` does, whichever rules fired.
#[test]
fn folding_counts_the_folded_size() {
    let mut r = Rng(0x51_2e5);
    let mut changed = 0;
    for i in 0..5000 {
        let p = match i % 3 {
            0 => rand_foldable(&mut r, 4),
            1 => rand_pred(&mut r, 4),
            _ => rand_guarded(&mut r, 2),
        };
        let (q, n) = fold::fold_sized(p.clone());
        assert_eq!(n, analysis::size(&q), "{p}");
        assert_eq!(q, fold::fold_ref(&p));
        changed += usize::from(analysis::size(&p) != n);
    }
    assert!(changed > 1000, "{changed}");
}

/// Numbering a value at the place a lookup found for it numbers it as a
/// plain numbering does (a new number for a new value, its number for a
/// value seen before), also when other values were numbered in between
/// (the place is then looked for again).
#[test]
fn numbering_at_a_vacancy_equals_numbering() {
    use super::numbering::ValueNumbers;
    let mut r = Rng(0x07ac_44c7);
    let mut ids = ValueNumbers::default();
    // The value of each number.
    let mut values: Vec<Value> = Vec::new();
    let mut check = |v: &Value, n: u32| {
        if n as usize == values.len() {
            assert!(!values.contains(v), "{v} numbered twice");
            values.push(v.clone());
        } else {
            assert_eq!(&values[n as usize], v);
        }
    };
    let mut pending = Vec::new();
    for _ in 0..3000 {
        let v = rand_value(&mut r, 2);
        match ids.lookup(&v) {
            Ok(n) => check(&v, n),
            Err(vacancy) if r.below(3) == 0 => pending.push((v, vacancy)),
            Err(vacancy) => {
                let n = ids.number_vacant(&v, vacancy);
                check(&v, n);
            }
        }
        // Numbered late: other values may have been numbered since.
        while pending.len() > 2 || (!pending.is_empty() && r.below(2) == 0) {
            let (v, vacancy) = pending.remove(0);
            let n = ids.number_vacant(&v, vacancy);
            check(&v, n);
        }
    }
    assert!(values.len() > 100, "{}", values.len());
    for (n, v) in values.iter().enumerate() {
        assert_eq!(ids.get(v), Some(n as u32));
    }
}
