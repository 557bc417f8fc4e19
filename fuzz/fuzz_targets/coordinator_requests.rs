//! The coordinator's handling of decoded requests, structure-aware: the input is a script of
//! valid-but-odd group requests from a few clients, with pauses (see `harness/coordinator.rs`
//! for the vocabulary and the properties: no panic, answers that encode and decode at their
//! version, nothing the checker's coordinator rules forbid).
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../harness/coordinator.rs"]
mod coordinator;

fuzz_target!(|data: &[u8]| coordinator::run(data));
