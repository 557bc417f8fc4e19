//! A sweep split into 4 shards, each run as its own `groupsim` process as CI matrix jobs would
//! run them, then merged with `groupsim merge`: the table must be the unsharded sweep's (apart
//! from the wall-time rates), with the same failing seeds, replay commands, total line and exit
//! code. Small on purpose (two fast scenarios, 8 seeds), with a bug switch so some seeds fail
//! and the first failure lies in the second shard.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const SWEEP: &[&str] = &[
    "sweep",
    "steady_state",
    "stale_acks",
    "--seeds",
    "8",
    "--bug",
    "member-sends-past-generation-commits",
    "--jobs",
    "1",
];

fn groupsim(args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_groupsim"));
    c.args(args);
    c
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The table without the two wall-time columns (sim s/s and seeds/s) of each scenario row.
fn without_rates(table: &str) -> Vec<String> {
    table
        .lines()
        .map(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            let is_row = cols.len() >= 8 && cols[1].parse::<usize>().is_ok();
            if is_row {
                [&cols[..5], &cols[7..]].concat().join(" ")
            } else {
                cols.join(" ")
            }
        })
        .collect()
}

fn scratch() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("groupsim-merge-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch folder");
    dir
}

/// Runs shards `1/4..4/4` as four processes at once and writes each one's JSON to a file.
fn run_shards(dir: &Path) -> Vec<PathBuf> {
    let children: Vec<_> = (1..=4)
        .map(|k| {
            let shard = format!("{k}/4");
            let child = groupsim(SWEEP)
                .args(["--shard", &shard, "--json"])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("shard starts");
            (k, child)
        })
        .collect();
    children
        .into_iter()
        .map(|(k, child)| {
            let o = child.wait_with_output().expect("shard runs");
            assert!(matches!(o.status.code(), Some(0 | 1)), "shard {k}/4: {}", text(&o.stderr));
            let path = dir.join(format!("shard-{k}.json"));
            std::fs::write(&path, &o.stdout).expect("shard file");
            path
        })
        .collect()
}

fn merge(files: &[&Path], extra: &[&str]) -> Output {
    let mut c = groupsim(&["merge"]);
    c.args(extra).args(files);
    c.output().expect("merge runs")
}

#[test]
fn four_shards_merged_equal_the_unsharded_sweep() {
    let dir = scratch();
    let files = run_shards(&dir);
    let whole = groupsim(SWEEP).output().expect("sweep runs");
    let replays = dir.join("replays.txt");
    let paths: Vec<&Path> = files.iter().rev().map(|p| p.as_path()).collect();
    let merged = merge(&paths, &["--replays", replays.to_str().unwrap()]);

    let (whole_out, merged_out) = (text(&whole.stdout), text(&merged.stdout));
    assert_eq!(whole.status.code(), Some(1), "the bug is caught: {whole_out}");
    assert_eq!(merged.status.code(), whole.status.code(), "{}", text(&merged.stderr));
    assert_eq!(without_rates(&merged_out), without_rates(&whole_out));
    assert!(merged_out.contains("    replay: "), "{merged_out}");
    let commands = std::fs::read_to_string(&replays).expect("replays written");
    let failed: usize = merged_out
        .lines()
        .find_map(|l| l.strip_prefix("total: "))
        .and_then(|t| t.split(", ").nth(2)?.strip_suffix(" failed")?.parse().ok())
        .expect("total line");
    assert_eq!(commands.lines().count(), failed, "{commands}");
    assert!(commands.lines().all(|c| c.contains("--bug member-sends-past-generation-commits")));

    // What merging refuses, by name, with exit code 2 and no panic.
    let other = dir.join("other.json");
    let o = groupsim(&["sweep", "steady_state", "--seeds", "8", "--shard", "4/4", "--json"])
        .output()
        .expect("other sweep runs");
    std::fs::write(&other, &o.stdout).unwrap();
    let not_json = dir.join("table.txt");
    std::fs::write(&not_json, &whole.stdout).unwrap();
    let f: Vec<&Path> = files.iter().map(|p| p.as_path()).collect();
    let cases: Vec<(Vec<&Path>, &str)> = vec![
        (vec![f[0], f[1], f[1], f[2], f[3]], "overlap: both ran seeds 2..4"),
        (vec![f[0], f[1], f[3]], "missing shard: no file ran seeds 4..6"),
        (vec![f[0], f[1], f[2], &other], "shards of different sweeps"),
        (vec![f[0], &not_json], "is not a sweep's JSON"),
    ];
    for (files, wanted) in cases {
        let o = merge(&files, &[]);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{files:?}: {err}");
        assert!(err.contains(wanted) && !err.contains("panicked"), "{files:?}: {err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
