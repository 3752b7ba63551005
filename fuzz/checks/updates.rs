//! Check: the live-capture `--updates` line grammar (`sift_capture::updates`)
//! never panics; every line either applies or is refused with a message
//! and leaves the filter as it was; after every line the running filter
//! matches exactly what the expression it reports (`LiveFilter::expression`)
//! matches under the reference evaluator.
#![allow(dead_code)]

use sift::{CompileOptions, Engine, Filter};
use sift_capture::updates::{parse_line, LiveFilter, Update};

use super::input::{variants, Input};

/// Fuzz entry: a flags byte (bit 0: the base filter is `tcp`), a seed, a
/// packet (up to a NUL), then the update lines.
pub fn check(data: &[u8]) {
    let mut input = Input::new(data);
    let flags = input.u8();
    let seed = input.u32();
    let packets = variants(input.until_nul(), seed);
    let Ok(text) = std::str::from_utf8(input.rest()) else {
        return;
    };
    let base = if flags & 1 != 0 { "tcp" } else { "" };
    check_lines(&CompileOptions::default(), base, text, &packets);
}

/// Applies every line of `text` to a filter built from `base`; returns how
/// many lines applied.
pub fn check_lines(opts: &CompileOptions, base: &str, text: &str, packets: &[(Vec<u8>, u32)]) -> usize {
    let Ok(mut live) = LiveFilter::new(base, opts) else {
        return 0;
    };
    check_equivalent(&live, opts, packets);
    let mut applied = 0;
    for (i, line) in text.lines().enumerate() {
        check_parse_line(line);
        let before = live.expression();
        match live.apply_line(i + 1, line) {
            Ok(_) => applied += 1,
            Err(e) => {
                assert_eq!(e.line, i + 1);
                assert!(!e.message.is_empty() && !e.to_string().is_empty());
                assert_eq!(live.expression(), before, "refused line {line:?} changed the filter");
            }
        }
        check_equivalent(&live, opts, packets);
    }
    applied
}

/// `parse_line`'s offset lies on a character boundary in the line and
/// points at the expression it returns.
pub fn check_parse_line(line: &str) {
    if let Some((update, offset)) = parse_line(line) {
        assert!(offset <= line.len() && line.is_char_boundary(offset), "offset {offset} in {line:?}");
        match update {
            Update::Show => {}
            Update::Replace(e) | Update::Add(e) | Update::Remove(e) => {
                assert!(line[offset..].starts_with(e.as_str()), "offset {offset} of {e:?} in {line:?}");
            }
        }
    }
}

/// The live filter and its reported expression agree on every packet.
pub fn check_equivalent(live: &LiveFilter, opts: &CompileOptions, packets: &[(Vec<u8>, u32)]) {
    let expr = live.expression();
    let unoptimized = CompileOptions { optimize: false, ..opts.clone() };
    let reference = Filter::with_engine(&expr, &unoptimized, Engine::Reference)
        .unwrap_or_else(|e| panic!("the reported expression {expr:?} does not compile: {e}"));
    for (data, wire_len) in packets {
        assert_eq!(
            live.matches(data, *wire_len),
            reference.matches(data, *wire_len),
            "live filter and its expression {expr:?} disagree on {data:02x?} (wire {wire_len})"
        );
    }
}
