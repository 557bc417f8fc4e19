//! A history file handed to `trace --history` or written by `serve --history`. Property: reading
//! any text gives a history or a named error, and a history read back writes the same text.
#![no_main]

use groupsim_history::History;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(history) = History::from_jsonl(text) {
        let again = History::from_jsonl(&history.to_jsonl()).expect("a written history reads back");
        assert_eq!(again.to_jsonl(), history.to_jsonl());
    }
});
