//! Fuzz target: foreign classic BPF: validation, interpretation and JIT never panic, and the JIT returns the interpreter's value on every packet (differential).
//! The check is `sift_fuzz::foreign_cbpf::check` (fuzz/checks/foreign_cbpf.rs), shared with
//! a stable property test.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sift_fuzz::foreign_cbpf::check(data));
