//! A sweep shard's JSON handed to `merge`. Property: any text gives a shard or a named error,
//! and merging what reads never panics.
#![no_main]

use groupsim::merge::{self, ShardFile};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(shard) = ShardFile::parse("fuzz.json", text) {
        let _ = merge::merge(vec![shard]);
    }
});
