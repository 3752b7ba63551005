//! Check: the dynamic engine's translation (`DynamicFilter::from_expr_with`)
//! and its update API never panic; a translated filter gives the reference
//! evaluator's verdicts, and after any sequence of updates (pokes, values
//! added or removed, instructions replaced, passes inserted, duplicated or
//! deleted) it still matches exactly what its own printed expression
//! (`to_expr`) matches when compiled by sift.
#![allow(dead_code)]

use sift_dynamic::{DynamicFilter, Error};
use sift_ir::{LinkType, LowerOptions, PacketView};

use super::input::{variants, Input};

/// Fuzz entry: a link-type selector, the expression (up to a NUL), update
/// operations (the next 64 bytes, 8 bytes each), then a seed and a packet.
pub fn check(data: &[u8]) {
    let mut input = Input::new(data);
    let linktypes = sift_ir::lower::supported_linktypes();
    let lt = linktypes[usize::from(input.u8()) % linktypes.len()];
    let Ok(expr) = std::str::from_utf8(input.until_nul()) else {
        return;
    };
    let ops = input.take(64);
    let seed = input.u32();
    let packets = variants(input.rest(), seed);
    if let Some(mut f) = check_translate(expr, lt, &packets) {
        let mut ops = Input::new(ops);
        while !ops.is_empty() {
            apply_op(&mut f, &mut ops);
            check_against_expr(&f, &packets);
        }
    }
}

/// Translates `expr`; when the dynamic engine takes it, compares its
/// verdicts with the reference evaluator's and with its printed form's.
pub fn check_translate(expr: &str, lt: LinkType, packets: &[(Vec<u8>, u32)]) -> Option<DynamicFilter> {
    let opts = LowerOptions { linktype: lt, ..LowerOptions::default() };
    let f = match DynamicFilter::from_expr_with(expr, &opts) {
        Ok(f) => f,
        Err(e) => {
            assert!(!e.to_string().is_empty());
            return None;
        }
    };
    let ast = sift_syntax::parse(expr).expect("translated, so it parses");
    let pred = sift_ir::lower(&ast, &opts).expect("translated, so it lowers");
    for (data, wire_len) in packets {
        let want = sift_ir::matches(&pred, PacketView { data, wire_len: *wire_len });
        assert_eq!(f.matches(data, *wire_len), want, "dynamic engine disagrees with the reference on {expr:?} ({lt:?}), {} bytes {data:02x?}", data.len());
    }
    let _ = (f.program().to_string(), f.pass_count());
    check_against_expr(&f, packets);
    Some(f)
}

/// Link types on which the printed form (`to_expr`) cannot address an
/// absolute packet offset: DLT_PPI (`link[k]` is past a header of variable
/// length, and `radio[]` is not available there). The printed form uses
/// `link[k - h]` on DLT_NETANALYZER(_TRANSPARENT) and `radio[k]` after
/// radiotap, AVS and Prism headers (`Field::to_expr_on`).
pub const PRINTED_FORM_WRONG: &[u32] = &[192];

/// The filter matches what its printed expression matches.
pub fn check_against_expr(f: &DynamicFilter, packets: &[(Vec<u8>, u32)]) {
    if PRINTED_FORM_WRONG.contains(&f.linktype().to_linktype()) {
        return;
    }
    let printed = f.to_expr();
    let opts = LowerOptions { linktype: f.linktype(), ..LowerOptions::default() };
    let ast = sift_syntax::parse(&printed).unwrap_or_else(|e| panic!("printed form {printed:?} does not parse: {}", e.message));
    let pred = sift_ir::lower(&ast, &opts).unwrap_or_else(|e| panic!("printed form {printed:?} does not lower: {}", e.message));
    for (data, wire_len) in packets {
        let want = sift_ir::matches(&pred, PacketView { data, wire_len: *wire_len });
        assert_eq!(f.matches(data, *wire_len), want, "dynamic filter disagrees with its printed form {printed:?} ({:?}) on {data:02x?} (wire {wire_len})", f.linktype());
        assert_eq!(f.handle().reader().matches(data, *wire_len), want);
    }
}

/// One update chosen by the next bytes of `ops` (every result allowed, no
/// panic; refused updates change nothing).
pub fn apply_op(f: &mut DynamicFilter, ops: &mut Input<'_>) {
    let (kind, p, i) = (ops.u8(), usize::from(ops.u8()), usize::from(ops.u8()));
    let value = match ops.u8() % 4 {
        0 => u32::from(ops.u8()),
        1 => u32::from(ops.u16()),
        _ => ops.u32(),
    };
    let passes = f.pass_count().max(1);
    let (p, wild) = if p & 0x80 != 0 { (p, true) } else { (p % passes, false) };
    let instrs = f.pass(p).map_or(1, |pass| pass.instrs().len().max(1));
    let i = if wild { i } else { i % instrs };
    let before = f.to_expr();
    let result: Result<(), Error> = match kind % 7 {
        0 => f.poke(p, i, value),
        1 => f.add_value(p, i, value),
        2 => f.remove_value(p, i, value),
        3 => f.delete_pass(p),
        4 => f.duplicate_pass(p).map(drop),
        5 => match f.pass(i % passes).and_then(|q| q.instrs().next().cloned()) {
            Some(instr) => f.replace_instr(p, i, instr),
            None => Ok(()),
        },
        _ => {
            let instrs: Vec<_> = f.pass(i % passes).map(|q| q.instrs().cloned().collect()).unwrap_or_default();
            f.new_pass(p.min(f.pass_count() + 1), instrs)
        }
    };
    if let Err(e) = result {
        assert!(!e.to_string().is_empty());
        assert_eq!(f.to_expr(), before, "a refused update changed the filter");
    }
}
