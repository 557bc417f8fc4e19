//! Each seed's signature and verdict under a bug switch, one JSON line per seed, for a lift
//! analysis (which elements make a catch likelier, P(catch | element) / P(catch)):
//!
//!     cargo run --release -p groupsim --example lift -- SCENARIO SWITCH NO_TRIGGERS(0|1) FROM TO
use groupsim::runner::{run_seed_with, RunOptions};
use groupsim::signature::Signature;
use std::io::Write;

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let scenario = groupsim::scenarios::find(&a[1]).unwrap();
    let bug = groupsim::bugs::find(&a[2]).unwrap();
    let no_triggers = a[3] == "1";
    let from: u64 = a[4].parse().unwrap();
    let to: u64 = a[5].parse().unwrap();
    let options = RunOptions { bug: Some(bug), no_triggers, ..RunOptions::default() };
    let mut out = std::io::stdout().lock();
    for seed in from..to {
        let Ok(r) = run_seed_with(&scenario, seed, &options) else {
            writeln!(out, "{}", serde_json::json!({"seed": seed, "error": true})).unwrap();
            continue;
        };
        let sig = Signature::of(&r.probes, &r.history);
        let classes: Vec<_> = r.verdict.anomalies.iter().map(|a| a.class).collect();
        let caught = bug.caught_by(&classes);
        let elements: Vec<String> =
            sig.elements.iter().map(|e| serde_json::to_string(e).unwrap()).collect();
        let hazards: Vec<String> =
            r.verdict.hazards.iter().map(|h| format!("{:?}", h.hazard)).collect();
        let classes: Vec<String> = classes.iter().map(|c| c.to_string()).collect();
        writeln!(
            out,
            "{}",
            serde_json::json!({"seed": seed, "caught": caught, "classes": classes,
                "hazards": hazards, "elements": elements, "probes": r.probes})
        )
        .unwrap();
    }
}
