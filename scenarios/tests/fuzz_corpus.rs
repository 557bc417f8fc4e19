//! The fuzz targets' properties (`fuzz/fuzz_targets/`), replayed on the stable toolchain in
//! every test run: each committed corpus input, then a fixed number of seeded mutations of it
//! (bytes flipped, cut, repeated), through the same readers. No panic, and what reads back
//! writes the same. The libFuzzer campaigns (nightly, `cargo fuzz run`) search far wider; this
//! keeps a reader that regresses on a known input from landing.

use std::path::{Path, PathBuf};

use bytes::Bytes;
use groupsim::explore::corpus::Corpus;
use groupsim::faults::{FaultSchedule, Mode};
use groupsim::merge::{self, ShardFile};
use groupsim_history::History;
use groupsim_wire::codec::{decode_request, decode_response};
use groupsim_wire::versions::served_apis;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Mutations tried per committed input.
const MUTATIONS: usize = 20;

#[path = "../../fuzz/harness/coordinator.rs"]
mod coordinator;

/// Seeded random scripts the coordinator target plays beyond its committed corpus
/// (`GROUPSIM_FUZZ_SCRIPTS=<n>` plays more).
const RANDOM_SCRIPTS: u64 = 200;

fn corpus(target: &str) -> Vec<Vec<u8>> {
    let dir: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus").join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "{}: no corpus", dir.display());
    files.iter().map(|f| std::fs::read(f).expect("reads")).collect()
}

/// `input` and [`MUTATIONS`] seeded variations of it.
fn variations(input: &[u8], seed: u64) -> Vec<Vec<u8>> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut out = vec![input.to_vec()];
    for _ in 0..MUTATIONS {
        let mut v = input.to_vec();
        match rng.random_range(0..3) {
            0 if !v.is_empty() => {
                for _ in 0..rng.random_range(1..=4) {
                    let i = rng.random_range(0..v.len());
                    v[i] = rng.random();
                }
            }
            1 if !v.is_empty() => v.truncate(rng.random_range(0..v.len())),
            _ if !v.is_empty() => {
                let (a, b) = (rng.random_range(0..v.len()), rng.random_range(0..v.len()));
                let (a, b) = (a.min(b), a.max(b));
                let piece = v[a..b].to_vec();
                v.splice(b..b, piece);
            }
            _ => v.push(rng.random()),
        }
        out.push(v);
    }
    out
}

/// Runs `check` on every variation of every committed input of `target`; asserts they all ran.
fn each(target: &str, mut check: impl FnMut(&[u8])) {
    let inputs = corpus(target);
    let mut ran = 0;
    for (k, input) in inputs.iter().enumerate() {
        for v in variations(input, k as u64) {
            check(&v);
            ran += 1;
        }
    }
    assert_eq!(ran, inputs.len() * (MUTATIONS + 1), "{target}: every variation ran");
}

#[test]
fn frames_decode_or_are_refused() {
    let apis = served_apis();
    each("frame_decode", |data| {
        let Some((&side, rest)) = data.split_first() else { return };
        if side % 2 == 0 {
            let _ = decode_request(Bytes::copy_from_slice(rest));
        } else if rest.len() >= 2 {
            let (api, range) = apis[usize::from(rest[0]) % apis.len()];
            let span = (range.max - range.min + 1).max(1) as u8;
            let version = range.min + i16::from(rest[1] % span);
            let _ = decode_response(Bytes::copy_from_slice(&rest[2..]), api, version);
        }
    });
}

#[test]
fn histories_read_or_are_refused_and_read_back_the_same() {
    each("history_reader", |data| {
        let Ok(text) = std::str::from_utf8(data) else { return };
        if let Ok(h) = History::from_jsonl(text) {
            let again = History::from_jsonl(&h.to_jsonl()).expect("a written history reads back");
            assert_eq!(again.to_jsonl(), h.to_jsonl());
        }
    });
}

#[test]
fn schedules_read_or_are_refused_and_read_back_the_same() {
    each("schedule_reader", |data| {
        let Ok(text) = std::str::from_utf8(data) else { return };
        for mode in [Mode::Simulated, Mode::Serve, Mode::CheckClient] {
            let _ = FaultSchedule::from_json_for(text, mode);
        }
        if let Ok(s) = FaultSchedule::from_json(text) {
            let again = FaultSchedule::from_json(&s.to_json()).expect("reads back");
            assert_eq!(again, s);
        }
    });
}

#[test]
fn shards_and_corpora_read_or_are_refused() {
    each("shard_reader", |data| {
        let Ok(text) = std::str::from_utf8(data) else { return };
        if let Ok(shard) = ShardFile::parse("fuzz.json", text) {
            let _ = merge::merge(vec![shard]);
        }
    });
    each("corpus_reader", |data| {
        let Ok(text) = std::str::from_utf8(data) else { return };
        if let Ok(c) = Corpus::parse(text, Path::new("corpus.json")) {
            let _ = Corpus::merge(vec![c.clone(), c]);
        }
    });
}

/// The structure-aware coordinator target's properties (`fuzz/harness/coordinator.rs`): every
/// committed script and its variations, then seeded random scripts — no panic, every answer
/// encodes and decodes at its version, and the checker's coordinator rules find nothing.
#[test]
fn the_coordinator_answers_scripts_of_odd_requests_by_the_protocols_rules() {
    each("coordinator_requests", coordinator::run);
    let scripts = std::env::var("GROUPSIM_FUZZ_SCRIPTS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(RANDOM_SCRIPTS);
    let mut rng = ChaCha8Rng::seed_from_u64(44);
    for _ in 0..scripts {
        let len = rng.random_range(16..1024);
        let script: Vec<u8> = (0..len).map(|_| rng.random()).collect();
        let played = std::panic::catch_unwind(|| coordinator::run(&script));
        if let Err(panic) = played {
            // Kept where a libFuzzer campaign or a regression input can take it from.
            let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/fuzz-failures");
            let path = dir.join("coordinator_requests.bin");
            let saved = std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&path, &script));
            eprintln!("the failing script: {} ({saved:?})", path.display());
            std::panic::resume_unwind(panic);
        }
    }
}
