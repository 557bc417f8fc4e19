//! A frame from a process we do not control: `serve` decodes requests from real clients, and
//! `check-broker` answers from a foreign broker. Property: decoding any bytes returns a value or
//! a named error — no panic, no hang, no allocation sized by a length field beyond the frame.
//! The first byte picks the side; for an answer the next two pick one of the APIs our clients
//! send (an answer is only ever read for a request we wrote) and its version, as the client's
//! in-flight table would.
#![no_main]

use bytes::Bytes;
use groupsim_wire::codec::{decode_request, decode_response};
use groupsim_wire::versions::served_apis;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&side, rest)) = data.split_first() else { return };
    if side % 2 == 0 {
        let _ = decode_request(Bytes::copy_from_slice(rest));
        return;
    }
    if rest.len() < 2 {
        return;
    }
    let apis = served_apis();
    let (api, range) = apis[usize::from(rest[0]) % apis.len()];
    let span = (range.max - range.min + 1).max(1) as u8;
    let version = range.min + i16::from(rest[1] % span);
    let _ = decode_response(Bytes::copy_from_slice(&rest[2..]), api, version);
});
