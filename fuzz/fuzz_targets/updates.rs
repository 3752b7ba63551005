//! Fuzz target: the live-capture --updates line grammar: refused lines change nothing, the running filter matches its reported expression.
//! The check is `sift_fuzz::updates::check` (fuzz/checks/updates.rs), shared with
//! a stable property test.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sift_fuzz::updates::check(data));
