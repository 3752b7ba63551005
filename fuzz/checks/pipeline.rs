//! Check: a filter expression compiled for a link type goes through every
//! stage (parse → lower → optimize → codegen → validate) and every engine
//! (interpreter, JIT, meta, dynamic, reference) without panicking, with the
//! optimizer on and off, and every engine that accepts the filter gives the
//! reference evaluator's verdict on the *unoptimized* predicate on every
//! packet, one call per packet and through the batch entry points
//! (`count_packets`, `verdicts`, `count_matches`). An expression that does
//! not compile fails with a span inside the text, and fails the same way
//! for every engine.
#![allow(dead_code)]

use sift::{CompileOptions, Engine, Filter, LinkType, PacketRef};

use super::input::{repeated_to, variants, Input};

/// Fuzz entry: a link-type selector byte, an options byte, the expression
/// (up to a NUL), then a seed and a packet.
pub fn check(data: &[u8]) {
    let mut input = Input::new(data);
    let linktypes = sift_ir::lower::supported_linktypes();
    let lt = linktypes[usize::from(input.u8()) % linktypes.len()];
    let opts = options(lt, input.u8());
    let Ok(expr) = std::str::from_utf8(input.until_nul()) else {
        return;
    };
    let seed = input.u32();
    let packets = variants(input.rest(), seed);
    check_expr(expr, &opts, &packets);
}

/// Compile options for `lt` chosen by the bits of `flags`: savefile,
/// swapped, a known netmask, the snapshot length, the optimizer off (`-O`).
pub fn options(lt: LinkType, flags: u8) -> CompileOptions {
    CompileOptions {
        linktype: lt,
        savefile: flags & 1 != 0,
        swapped: flags & 2 != 0,
        netmask: (flags & 4 != 0).then_some(0xffff_ff00),
        snaplen: [262_144, 65_535, 96, 1][usize::from(flags >> 3) & 3],
        optimize: flags & 0x20 == 0,
        ..CompileOptions::default()
    }
}

/// What [`check_expr`] found: whether the filter compiled, and which engines
/// ran it.
#[derive(Clone, Copy, Debug, Default)]
pub struct Outcome {
    /// The expression compiled to classic BPF.
    pub compiled: bool,
    /// The dynamic engine accepted it.
    pub dynamic: bool,
}

/// Compiles `expr` with `opts` for every engine and compares the verdicts
/// on `packets` with the reference evaluator's. An expression that lowers
/// but does not fit classic BPF ([`sift::Error::Codegen`]) still runs on
/// the engines that do not need classic BPF (the JIT compiles the
/// predicate); the others, and `Filter::program`, fail with `compile`'s
/// error.
pub fn check_expr(expr: &str, opts: &CompileOptions, packets: &[(Vec<u8>, u32)]) -> Outcome {
    let compiled = sift::compile(expr, opts);
    // The predicate as lowered: `compile`'s, or, where `compile` failed,
    // lowered on its own (it fails as `compile` did, or classic BPF could
    // not express it).
    let lowered_alone;
    let lowered = match &compiled {
        Ok(c) => &c.pred,
        Err(failed) => match sift::lower(expr, opts) {
            Ok((_, pred)) => {
                lowered_alone = pred;
                &lowered_alone
            }
            Err(e) => {
                check_error(expr, &e);
                assert_eq!(failed, &e, "compile fails differently on {expr:?}");
                for &(_, engine) in Engine::ALL {
                    let again = Filter::with_engine(expr, opts, engine).err();
                    assert_eq!(again.as_ref(), Some(&e), "engine {engine:?} fails differently on {expr:?}");
                }
                return Outcome::default();
            }
        },
    };
    let program = match &compiled {
        Ok(c) => {
            if let Err(e) = sift_bpf::validate::validate(&c.program) {
                panic!("the program for {expr:?} ({:?}) fails the kernel's rules: {e}", opts.linktype);
            }
            Ok(c.program.as_slice())
        }
        Err(e) => {
            check_error(expr, e);
            assert!(matches!(e, sift::Error::Codegen(_)), "{expr:?} lowers but fails to compile with {e:?}");
            Err(e.clone())
        }
    };
    // The oracle: the reference evaluator on the predicate as lowered
    // (before the optimizer), which has libpcap's unoptimized semantics.
    let verdicts: Vec<bool> = packets
        .iter()
        .map(|(d, w)| sift_ir::matches(lowered, sift_ir::PacketView { data: d, wire_len: *w }))
        .collect();
    // The packets repeated to more than a batch, for the batch entry
    // points (the JIT's count and verdict functions run from
    // `sift_jit::BATCH` packets on; fewer go one at a time).
    let refs: Vec<PacketRef<'_>> = repeated_to(packets, sift_jit::BATCH + 7).map(|(d, w)| PacketRef::new(d, *w)).collect();
    let want: Vec<bool> = repeated_to(&verdicts, sift_jit::BATCH + 7).copied().collect();
    let accepted = want.iter().filter(|&&v| v).count() as u64;
    let mut outcome = Outcome { compiled: compiled.is_ok(), dynamic: false };
    for &(name, engine) in Engine::ALL {
        let filter = match Filter::with_engine(expr, opts, engine) {
            Ok(f) => f,
            Err(sift::Error::Engine(m)) if matches!(engine, Engine::Dynamic | Engine::Jit) => {
                assert!(!m.is_empty());
                continue;
            }
            // Engines that need classic BPF fail as `compile` does.
            Err(e) if program.as_ref().err() == Some(&e) => {
                assert!(!matches!(engine, Engine::Dynamic | Engine::Reference), "{name} needs no cBPF: {e}");
                continue;
            }
            Err(e) => panic!("{name} refuses {expr:?} ({:?}) which compiles: {e}", opts.linktype),
        };
        outcome.dynamic |= engine == Engine::Dynamic;
        assert!(program.is_ok() || filter.engine() != Engine::Interp, "{name} interprets {expr:?} without a program");
        assert_eq!(filter.program(), program.clone(), "{name}: the program of {expr:?}");
        for ((data, wire_len), &want) in packets.iter().zip(&verdicts) {
            let got = filter.matches(data, *wire_len);
            assert_eq!(
                got,
                want,
                "{name} says {got}, the reference evaluator {want}, for {expr:?} on {:?} ({} bytes, wire {wire_len}): {data:02x?}",
                opts.linktype,
                data.len()
            );
        }
        // The batch entry points (on the batch below).
        assert_eq!(filter.count_packets(&refs), accepted, "{name}: count_packets of {expr:?}");
        assert_eq!(filter.count_matches(&refs, |p| (p.data(), p.wire_len())), accepted, "{name}: count_matches of {expr:?}");
        let mut got = vec![true; refs.len()];
        assert_eq!(filter.verdicts(&refs, &mut got), accepted, "{name}: verdicts of {expr:?}");
        assert_eq!(got, want, "{name}: verdicts of {expr:?}");
    }
    // The program read back from its own text runs the same.
    if let Ok(prog) = program {
        let from_text = sift_bpf::text::parse_program(&sift_bpf::text::dump_ddd(prog)).expect("-ddd text parses");
        let foreign = Filter::from_program(from_text).expect("our own program is accepted");
        for ((data, wire_len), &want) in packets.iter().zip(&verdicts) {
            assert_eq!(foreign.matches(data, *wire_len), want, "--bpf-file of {expr:?} disagrees");
        }
    }
    outcome
}

/// An error carries a span inside the text, on character boundaries, and
/// renders.
pub fn check_error(expr: &str, e: &sift::Error) {
    assert!(!e.to_string().is_empty());
    let _ = e.render();
    if let sift::Error::Expression { source, error } = e {
        assert_eq!(source, expr);
        let (start, end) = (error.span.start as usize, error.span.end as usize);
        assert!(start <= end && end <= expr.len(), "span {:?} outside {expr:?}", error.span);
        assert!(expr.is_char_boundary(start) && expr.is_char_boundary(end), "span {:?} splits a character of {expr:?}", error.span);
    }
}
