//! The `groupsim` command line: verbs, clear errors on bad input (exit 2, never a panic),
//! reproducible runs, and seed sharding.

use std::process::{Command, Output};

fn groupsim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_groupsim")).args(args).output().expect("runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn list_prints_one_line_per_scenario_starting_with_its_name() {
    let o = groupsim(&["list"]);
    assert!(o.status.success());
    let out = stdout(&o);
    for s in groupsim::scenarios::catalogue() {
        assert!(out.lines().any(|l| l.starts_with(s.name)), "{} missing from:\n{out}", s.name);
    }
    assert_eq!(out.lines().count(), groupsim::scenarios::catalogue().len());
}

#[test]
fn bugs_lists_every_switch_with_its_expected_anomalies() {
    let o = groupsim(&["bugs"]);
    assert!(o.status.success());
    let out = stdout(&o);
    for b in groupsim::bugs::all() {
        let line = out
            .lines()
            .find(|l| l.starts_with(b.name))
            .unwrap_or_else(|| panic!("{} missing", b.name));
        assert!(line.contains(b.expected[0].name()), "{line}");
    }
}

#[test]
fn run_prints_the_same_history_hash_twice() {
    let hash = |o: &Output| {
        stdout(o).lines().find(|l| l.starts_with("history-hash: ")).map(str::to_string)
    };
    let a = groupsim(&["run", "steady_state", "--seed", "7"]);
    let b = groupsim(&["run", "steady_state", "--seed", "7"]);
    assert!(a.status.success(), "{}", stderr(&a));
    assert_eq!(hash(&a).expect("hash line"), hash(&b).expect("hash line"));
    assert!(stdout(&a).contains("verdict: PASS"));
}

#[test]
fn bad_arguments_are_named_errors_with_exit_code_2() {
    let cases: &[(&[&str], &str)] = &[
        (&["run", "no_such_scenario", "--seed", "1"], "unknown scenario"),
        (&["run", "steady_state", "--seed", "x"], "invalid value 'x'"),
        (&["run", "steady_state", "--seed", "1", "--bug", "nope"], "unknown bug switch"),
        (
            &["run", "steady_state", "--seed", "1", "--schedule", "/nonexistent/schedule.json"],
            "reading schedule",
        ),
        (&["sweep", "steady_state", "--seeds", "0"], "--seeds must be at least 1"),
        (&["sweep", "steady_state", "--shard", "3/2"], "out of range"),
        (&["sweep", "steady_state", "--shard", "two"], "is not K/N"),
        (&["sweep", "steady_state", "--jobs", "0"], "--jobs must be at least 1"),
        (&["sweep", "steady_state", "--seed-timeout", "soon"], "is not a number of seconds"),
        (&["sweep", "steady_state", "--seed-timeout=-1"], "is not a number of seconds"),
        (&["coverage", "--jobs", "0"], "--jobs must be at least 1"),
        (&["bench", "--jobs", "0"], "--jobs must be at least 1"),
        (&["bench", "no_such_scenario"], "unknown scenario"),
        (&["bench", "swarm", "--all"], "cannot be used with"),
        (
            &["bench", "swarm", "--baseline", "/nonexistent/bench.json"],
            "cannot read baseline /nonexistent/bench.json",
        ),
        (&["merge"], "required"),
        (&["merge", "/nonexistent/shard-1.json"], "reading /nonexistent/shard-1.json"),
        (&["trace", "steady_state", "--seed", "1", "--format", "png"], "invalid value 'png'"),
        (&["frobnicate"], "unrecognized subcommand"),
    ];
    for (args, expected) in cases {
        let o = groupsim(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(expected), "{args:?}: wanted {expected:?} in {}", stderr(&o));
        assert!(!stderr(&o).contains("panicked"), "{args:?} panicked");
    }
}

#[test]
fn malformed_schedule_file_is_a_named_error() {
    let dir = std::env::temp_dir().join(format!("groupsim-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bad.json");
    std::fs::write(&path, r#"{"faults":[{"at_ms":1,"fault":{"kind":"meteor_strike"}}]}"#).unwrap();
    let o = groupsim(&["run", "steady_state", "--seed", "1", "--schedule", path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("meteor_strike"), "{}", stderr(&o));
}

#[test]
fn shards_split_the_seed_range_into_contiguous_blocks() {
    let seeds_of = |shard: &str| -> Vec<u64> {
        let o = groupsim(&["sweep", "steady_state", "--seeds", "8", "--shard", shard, "--json"]);
        assert!(o.status.success(), "{}", stderr(&o));
        let first = stdout(&o);
        let header = groupsim(&["sweep", "steady_state", "--seeds", "8", "--shard", shard]);
        let range =
            stdout(&header).lines().next().unwrap().trim_start_matches("seeds ").to_string();
        let (a, b) = range.split_once("..").unwrap();
        assert!(first.contains("\"scenario\": \"steady_state\""));
        (a.parse().unwrap()..b.parse().unwrap()).collect()
    };
    let mut quarter = seeds_of("1/4");
    quarter.extend(seeds_of("2/4"));
    assert_eq!(quarter, seeds_of("1/2"));
    assert_eq!(seeds_of("1/2").len() + seeds_of("2/2").len(), 8);
}

/// A seed that runs past `--seed-timeout` is reported with its replay command while it runs,
/// and the sweep stops with exit code 1 (a run that never ends cannot be interrupted). Any seed
/// takes longer than a millisecond, so this one stands in for a stuck one.
#[test]
fn a_seed_past_its_time_limit_is_reported_with_its_replay_command() {
    let o = groupsim(&["sweep", "steady_state", "--seeds", "1", "--seed-timeout", "0.001"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("steady_state seed 0 has run for"), "{err}");
    assert!(err.contains("replay steady_state --seed 0"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}
