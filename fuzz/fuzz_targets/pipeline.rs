//! Fuzz target: expression text x link type x options (-O on and off): every engine agrees with the reference evaluator on the unoptimized predicate.
//! The check is `sift_fuzz::pipeline::check` (fuzz/checks/pipeline.rs), shared with
//! a stable property test.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sift_fuzz::pipeline::check(data));
