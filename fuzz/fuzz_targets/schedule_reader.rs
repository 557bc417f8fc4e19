//! A fault schedule file (`run --schedule`, `serve`, `check-client`). Property: any text gives a
//! schedule or a named error in every mode, and a schedule read back writes the same JSON.
#![no_main]

use groupsim::faults::{FaultSchedule, Mode};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    for mode in [Mode::Simulated, Mode::Serve, Mode::CheckClient] {
        let _ = FaultSchedule::from_json_for(text, mode);
    }
    if let Ok(s) = FaultSchedule::from_json(text) {
        let again = FaultSchedule::from_json(&s.to_json()).expect("a written schedule reads back");
        assert_eq!(again, s);
    }
});
