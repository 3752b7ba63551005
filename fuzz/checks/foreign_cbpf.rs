//! Check: a classic BPF program from elsewhere (`--bpf-file`, a program
//! handed to `sift::Filter::from_program`) is validated, interpreted and
//! JIT-compiled without panicking, and the engines agree: the interpreter's
//! checked program and its one-shot `run` return the same value, the JIT
//! (where it compiles) returns that value too, single, batched and through
//! its count and verdict functions over `PacketRef`s, and a
//! program the kernel's rules accept is one the interpreter accepts.
#![allow(dead_code)]

use sift_bpf::interp::{self, Program};
use sift_bpf::text::{dump_ddd, parse_program};
use sift_bpf::validate::{validate, KNOWN_OPCODES};
use sift_bpf::Insn;
use sift_jit::{JitError, JitFilter};

use super::input::{repeated_to, variants, Input};

/// Fuzz entry: a program (count byte, then per instruction a selector
/// byte, opcode, jt, jf, k: the selector picks a known opcode most of the
/// time so that programs get past decoding), then a packet.
pub fn check(data: &[u8]) {
    let mut input = Input::new(data);
    let prog = decode_program(&mut input);
    let seed = input.u32();
    let packet = input.rest();
    let mut packets = variants(packet, seed);
    packets.extend(sample_packets());
    check_program(&prog, &packets);
}

/// Up to 33 instructions read from `input` (jumps mostly inside the
/// program).
pub fn decode_program(input: &mut Input<'_>) -> Vec<Insn> {
    let count = input.u8();
    let n = usize::from(count % 33);
    let mut prog = Vec::with_capacity(n);
    for i in 0..n {
        let sel = input.u8();
        let raw = input.u16();
        let code = if sel & 7 == 0 { raw } else { KNOWN_OPCODES[usize::from(raw) % KNOWN_OPCODES.len()] };
        let (mut jt, mut jf) = (input.u8(), input.u8());
        if sel & 8 == 0 {
            // Mostly jumps that stay inside the program.
            let room = (n - i) as u8;
            jt %= room;
            jf %= room;
        }
        let k = match sel >> 5 {
            0..=3 => u32::from(input.u8() % 32),
            4 => 0xffff_ffff - u32::from(input.u8()),
            _ => input.u32(),
        };
        prog.push(Insn { code, jt, jf, k });
    }
    if count & 0x80 != 0 {
        // End with a return, as real programs do (`ret #262144`).
        prog.push(Insn { code: 0x06, jt: 0, jf: 0, k: 262_144 });
    }
    prog
}

/// A few fixed packets: empty, one byte, a minimal Ethernet/IPv4/TCP frame,
/// and a long patterned one.
pub fn sample_packets() -> Vec<(Vec<u8>, u32)> {
    let mut tcp = vec![0u8; 54];
    tcp[12] = 0x08; // IPv4
    tcp[14] = 0x45;
    tcp[16..18].copy_from_slice(&40u16.to_be_bytes());
    tcp[22] = 64;
    tcp[23] = 6; // TCP
    tcp[34..36].copy_from_slice(&1234u16.to_be_bytes());
    tcp[36..38].copy_from_slice(&80u16.to_be_bytes());
    tcp[46] = 0x50;
    let long: Vec<u8> = (0..1514u32).map(|i| (i * 7 + 3) as u8).collect();
    vec![(Vec::new(), 0), (vec![0xff], 1), (tcp, 60), (long, 1514)]
}

/// Validates, decodes, interprets and JIT-compiles `prog`, running it on
/// every packet: no panics, and every engine returns the same value.
pub fn check_program(prog: &[Insn], packets: &[(Vec<u8>, u32)]) {
    let kernel = validate(prog);
    if let Err(e) = &kernel {
        assert!(!e.to_string().is_empty());
    }
    if !prog.is_empty() && prog.len() <= 4096 {
        let text = dump_ddd(prog);
        assert_eq!(parse_program(&text).as_deref(), Ok(prog), "-ddd text {text:?} does not parse back");
    }
    let checked = Program::new(prog);
    if kernel.is_ok() {
        assert!(checked.is_ok(), "the kernel's rules accept {prog:?} but the interpreter refuses it: {:?}", checked.err());
    }
    let jit = JitFilter::from_program(prog);
    let checked = match checked {
        Ok(p) => p,
        Err(_) => {
            assert!(matches!(jit, Err(JitError::Invalid(_))), "JIT accepts a program the interpreter refuses: {prog:?}");
            for (data, wire_len) in packets {
                assert_eq!(interp::run(prog, data, *wire_len), 0);
            }
            return;
        }
    };
    assert_eq!(checked.len(), prog.len());
    let jit = match jit {
        Ok(j) => Some(j),
        Err(JitError::Invalid(e)) => panic!("JIT refuses a program the interpreter accepts ({e}): {prog:?}"),
        Err(JitError::Unsupported) => None,
        Err(e) => {
            // Too large or no executable memory: refused, not miscompiled.
            assert!(!e.to_string().is_empty());
            None
        }
    };
    let mut verdicts = Vec::with_capacity(packets.len());
    for (data, wire_len) in packets {
        let v = checked.run(data, *wire_len);
        assert_eq!(interp::run(prog, data, *wire_len), v);
        if let Some(j) = &jit {
            let w = j.run(data, *wire_len);
            assert_eq!(w, v, "JIT returns {w}, interpreter {v} on {} bytes (wire {wire_len}) for {prog:?}", data.len());
        }
        verdicts.push(v);
    }
    if let Some(j) = &jit {
        let batch: Vec<(&[u8], u32)> = packets.iter().map(|(d, w)| (d.as_slice(), *w)).collect();
        let mut out = vec![u32::MAX; batch.len()];
        j.run_batch(&batch, &mut out);
        assert_eq!(out, verdicts, "batched JIT verdicts differ for {prog:?}");
        // The count and verdict functions, on the packets repeated to more
        // than a batch (they run from `sift_jit::BATCH` packets on).
        let refs: Vec<sift_jit::PacketRef<'_>> =
            repeated_to(packets, sift_jit::BATCH + 7).map(|(d, w)| sift_jit::PacketRef::new(d, *w)).collect();
        let want: Vec<bool> = repeated_to(&verdicts, sift_jit::BATCH + 7).map(|&v| v != 0).collect();
        let accepted = want.iter().filter(|&&v| v).count() as u64;
        assert_eq!(j.count_packets(&refs), accepted, "count function for {prog:?}");
        let mut got = vec![true; refs.len()];
        assert_eq!(j.verdicts(&refs, &mut got), accepted, "verdict function for {prog:?}");
        assert_eq!(got, want, "verdict function for {prog:?}");
    }
}
