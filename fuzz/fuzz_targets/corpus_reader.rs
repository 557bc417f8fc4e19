//! An `explore --corpus` folder's corpus file. Property: any text gives a corpus or a named
//! error, and merging what reads never panics.
#![no_main]

use groupsim::explore::corpus::Corpus;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(corpus) = Corpus::parse(text, std::path::Path::new("corpus.json")) {
        let _ = Corpus::merge(vec![corpus.clone(), corpus]);
    }
});
