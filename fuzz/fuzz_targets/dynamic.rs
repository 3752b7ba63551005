//! Fuzz target: the dynamic engine's translation and update API: verdicts equal the reference evaluator's and the filter's own printed expression's after every update.
//! The check is `sift_fuzz::dynamic::check` (fuzz/checks/dynamic.rs), shared with
//! a stable property test.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sift_fuzz::dynamic::check(data));
