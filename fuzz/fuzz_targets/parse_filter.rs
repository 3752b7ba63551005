//! Fuzz target: the filter parser must never panic, its error spans must lie
//! within the input, and whatever parses must print back to text that parses
//! to a tree printing the same way (the printer/parser round trip).

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match sift_syntax::parse(text) {
        Ok(filter) => {
            let printed = filter.to_string();
            // Printing adds one nesting level per change between `and` and
            // `or` along a chain and one per arithmetic operator, so a filter
            // close to the nesting limit may print to text beyond it.
            match sift_syntax::parse(&printed) {
                Ok(again) => assert_eq!(again.to_string(), printed, "round trip changed {text:?}"),
                Err(e) => assert!(
                    e.message.contains("nested too deeply"),
                    "printed form {printed:?} of {text:?} does not parse: {}",
                    e.message
                ),
            }
        }
        Err(e) => {
            let (start, end) = (e.span.start as usize, e.span.end as usize);
            assert!(start <= end && end <= text.len(), "span {:?} outside {text:?}", e.span);
            assert!(text.is_char_boundary(start) && text.is_char_boundary(end));
            let _ = e.render(text);
        }
    }
});
