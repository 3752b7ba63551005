//! Fuzz target: capture bytes read, written back as pcapng, read again: the same packets.
//! The check is `sift_fuzz::captures::check` (fuzz/checks/captures.rs), shared with
//! a stable property test.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sift_fuzz::captures::check(data));
