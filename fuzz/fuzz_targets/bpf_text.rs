//! Fuzz target: cBPF program text (-ddd, -dd, comma form): errors point inside the text, parsed programs round-trip through every form and run alike in the interpreter and the JIT.
//! The check is `sift_fuzz::bpf_text::check` (fuzz/checks/bpf_text.rs), shared with
//! a stable property test.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sift_fuzz::bpf_text::check(data));
