//! The search's own tests: determinism across threads and resumes, the budget's errors, the
//! blind strategy's order, and an end-to-end catch of a bug switch.

use super::*;

fn settings(names: &[&str], runs: u64, jobs: usize) -> Settings {
    Settings {
        scenarios: names.iter().map(|n| crate::scenarios::find(n).expect("in catalogue")).collect(),
        options: RunOptions::default(),
        runs: Some(runs),
        minutes: None,
        jobs,
        seed: 7,
        start: 0,
        shard: None,
        findings_dir: std::env::temp_dir().join(format!("groupsim-explore-{}", std::process::id())),
        shrink: true,
        stop_at_catch: false,
        strategy: Strategy::Guided,
        respec: false,
    }
}

fn search(s: &Settings, corpus: Corpus) -> Outcome {
    explore(s, corpus, &AtomicBool::new(false), |_| {}, |_| {}).expect("search runs")
}

/// The same arguments give the same corpus whatever the threads, and a search stopped after a
/// round and resumed from its written corpus ends where an uninterrupted one does.
#[test]
fn the_search_is_deterministic_across_threads_and_resumes() {
    let names = ["swarm"];
    let whole = settings(&names, 2 * ROUND, 2);
    let once = search(&whole, Corpus::new(&whole.scenarios, &whole.options));
    assert_eq!(once.runs, 2 * ROUND);
    assert!(!once.corpus.entries.is_empty());
    assert!(
        once.corpus.entries.iter().any(|e| e.parent.is_some()),
        "the second round mutates what the first kept: {:?}",
        once.corpus.entries.iter().map(|e| &e.how).collect::<Vec<_>>()
    );

    let half = settings(&names, ROUND, 1);
    let first = search(&half, Corpus::new(&half.scenarios, &half.options));
    let dir = std::env::temp_dir().join(format!("groupsim-explore-resume-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    first.corpus.write(&dir).expect("writes");
    let read = Corpus::read(&dir, &Corpus::new(&half.scenarios, &half.options))
        .expect("reads")
        .expect("a corpus");
    let resumed = search(&half, read);
    assert_eq!(resumed.corpus, once.corpus, "resumed after a round = uninterrupted");
    let _ = std::fs::remove_dir_all(&dir);
}

/// With spec mutations on, the search is as deterministic (threads, resumes), some of its kept
/// runs carry spec edits in their schedules, and each such entry replays from its seed and
/// schedule alone to the signature it was kept with.
#[test]
fn spec_mutations_stay_deterministic_and_their_entries_replay() {
    let names = ["swarm"];
    let mut two = settings(&names, 2 * ROUND, 2);
    two.respec = true;
    let a = search(&two, Corpus::new(&two.scenarios, &two.options));
    let one = Settings { jobs: 1, ..two.clone() };
    let b = search(&one, Corpus::new(&one.scenarios, &one.options));
    assert_eq!(a.corpus, b.corpus, "the same corpus whatever the threads");
    let edited: Vec<&Entry> =
        a.corpus.entries.iter().filter(|e| !e.schedule.spec.is_empty()).collect();
    assert!(
        !edited.is_empty(),
        "some kept run moved a drawn choice: {:?}",
        a.corpus.entries.iter().map(|e| &e.how).collect::<Vec<_>>()
    );
    for e in edited.iter().take(2) {
        let file = FaultSchedule::from_json(&e.schedule.to_json()).expect("a schedule file");
        let options = RunOptions { schedule: Some(file), ..two.options.clone() };
        let run = runner::run_seed_with(&two.scenarios[0], e.seed, &options).expect("replays");
        let (signature, _) = Signature::timed(&run.probes, &run.history);
        assert_eq!(signature, e.signature, "entry {} replays as kept", e.id);
    }
}

/// A start at the top of the seed range steps on by wrapping to seed 0 instead of overflowing
/// (a debug build panicked on `explore --start 18446744073709551615`).
#[test]
fn fresh_seeds_wrap_past_the_top_of_the_range() {
    let mut s = settings(&["steady_state"], 1, 1);
    s.start = u64::MAX;
    let mut c = Corpus::new(&s.scenarios, &s.options);
    assert_eq!(fresh_seed(&mut c, "steady_state", &s), u64::MAX);
    assert_eq!(fresh_seed(&mut c, "steady_state", &s), 0);
    assert_eq!(fresh_seed(&mut c, "steady_state", &s), 1);
}

#[test]
fn a_search_without_a_budget_or_scenario_is_refused() {
    let stop = AtomicBool::new(false);
    let mut s = settings(&["steady_state"], 1, 1);
    s.runs = None;
    let c = Corpus::new(&s.scenarios, &s.options);
    let e = explore(&s, c.clone(), &stop, |_| {}, |_| {}).expect_err("no budget");
    assert!(e.to_string().contains("--runs"), "{e}");
    s.runs = Some(0);
    assert!(matches!(explore(&s, c.clone(), &stop, |_| {}, |_| {}), Err(ExploreError::NoBudget)));
    s.runs = None;
    s.minutes = Some(0.0);
    assert!(matches!(explore(&s, c.clone(), &stop, |_| {}, |_| {}), Err(ExploreError::NoBudget)));
    s.minutes = None;
    s.runs = Some(1);
    s.scenarios.clear();
    assert!(matches!(explore(&s, c, &stop, |_| {}, |_| {}), Err(ExploreError::NoScenario)));
}

/// The blind side of `--versus-sweep` is a sweep: fresh seeds from 0, the scenarios in turn, the
/// drawn schedules unchanged.
#[test]
fn the_blind_strategy_runs_fresh_seeds_in_turn() {
    let mut s = settings(&["steady_state", "rolling_restart"], 1, 1);
    s.strategy = Strategy::Blind;
    let mut corpus = Corpus::new(&s.scenarios, &s.options);
    let v: Vec<(Vocabulary, SpecRanges)> = s
        .scenarios
        .iter()
        .map(|x| (Vocabulary::of(x, &s.options), SpecRanges::default()))
        .collect();
    let round = draw_round(&s, &mut corpus, &v, &Coverage::default(), 6);
    let drawn: Vec<(usize, u64)> = round.iter().map(|c| (c.scenario, c.seed)).collect();
    assert_eq!(drawn, [(0, 0), (1, 0), (0, 1), (1, 1), (0, 2), (1, 2)]);
    for c in &round {
        assert_eq!(c.schedule, s.options.spec(&s.scenarios[c.scenario], c.seed).faults);
    }
}

/// A shard's fresh seeds are its own: shards 1/2 and 2/2 together take every seed once.
#[test]
fn shards_take_interleaved_fresh_seeds() {
    let mut seeds = Vec::new();
    for index in 1..=2 {
        let mut s = settings(&["steady_state"], 1, 1);
        s.strategy = Strategy::Blind;
        s.shard = Some(Shard { index, count: 2 });
        let mut corpus = Corpus::new(&s.scenarios, &s.options);
        let v = vec![(Vocabulary::of(&s.scenarios[0], &s.options), SpecRanges::default())];
        seeds.extend(
            draw_round(&s, &mut corpus, &v, &Coverage::default(), 3).iter().map(|c| c.seed),
        );
    }
    assert_eq!(seeds, [0, 2, 4, 1, 3, 5]);
}

/// `--start` moves where fresh seeds begin, as `sweep --start` does, shards included.
#[test]
fn fresh_seeds_begin_at_the_start() {
    let mut seeds = Vec::new();
    for shard in [None, Some(Shard { index: 2, count: 2 })] {
        let mut s = settings(&["steady_state"], 1, 1);
        s.strategy = Strategy::Blind;
        s.start = 1_000;
        s.shard = shard;
        let mut corpus = Corpus::new(&s.scenarios, &s.options);
        let v = vec![(Vocabulary::of(&s.scenarios[0], &s.options), SpecRanges::default())];
        seeds.extend(
            draw_round(&s, &mut corpus, &v, &Coverage::default(), 3).iter().map(|c| c.seed),
        );
    }
    assert_eq!(seeds, [1_000, 1_001, 1_002, 1_001, 1_003, 1_005]);
}

/// End to end under a bug switch: the search finds the failing schedule, writes it, shrinks it,
/// and the printed replay (its scenario, seed and shrunk schedule) fails the same way.
#[test]
fn a_search_saves_shrinks_and_replays_a_failing_schedule() {
    let mut s = settings(&["membership_churn"], ROUND, 2);
    s.options.bug =
        Some(crate::bugs::find("coordinator-admits-unknown-member-id").expect("switch"));
    s.findings_dir =
        std::env::temp_dir().join(format!("groupsim-explore-e2e-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&s.findings_dir);
    let outcome = search(&s, Corpus::new(&s.scenarios, &s.options));
    let f = outcome.findings.first().expect("the switch is caught within a round");
    assert_eq!(outcome.caught_at, Some(f.run));
    // The finding says how its schedule was made: the seed's own draw, or mutations of a
    // corpus entry; the catch says the same of the same run.
    assert_eq!(outcome.caught_by, f.how);
    match f.parent {
        None => {
            assert_eq!(f.how, ["seed"]);
            let drawn = s.options.spec(&s.scenarios[0], f.seed).faults;
            let saved = std::fs::read_to_string(&f.schedule).expect("reads");
            assert_eq!(FaultSchedule::from_json(&saved).expect("a schedule file"), drawn);
        }
        Some(parent) => {
            assert!(parent < outcome.corpus.entries.len() as u64, "{parent}");
            assert!(!f.how.is_empty() && f.how != ["seed"], "{:?}", f.how);
        }
    }
    let class = f.class.expect("an anomaly");
    let (shrunk, size) = f.shrunk.clone().expect("shrunk");
    assert!(f.schedule.exists() && shrunk.exists());
    assert!(f.replay.contains(&format!("--seed {}", f.seed)), "{}", f.replay);
    assert!(f.replay.contains("--bug coordinator-admits-unknown-member-id"), "{}", f.replay);
    assert!(f.replay.ends_with(&format!("--schedule {}", shrunk.display())), "{}", f.replay);
    let text = std::fs::read_to_string(&shrunk).expect("reads");
    let schedule = FaultSchedule::from_json(&text).expect("a schedule file");
    assert_eq!(schedule.len(), size);
    let options = RunOptions { schedule: Some(schedule), ..s.options.clone() };
    let again = runner::run_seed_with(&s.scenarios[0], f.seed, &options).expect("replays");
    assert!(again.verdict.anomalies.iter().any(|a| a.class == class), "the replay fails alike");
    let _ = std::fs::remove_dir_all(&s.findings_dir);
}

/// The runs are shared by what each way of making candidates paid lately, within floors: fresh
/// seeds keep at least half (the sweep's order goes on beside the mutations), each kind of
/// mutation a tenth, however the others pay.
#[test]
fn fresh_seeds_keep_half_the_runs_and_each_mutation_a_tenth() {
    let idle = ArmStats { runs: 100, paid: 0 };
    let paying = ArmStats { runs: 100, paid: 90 };
    let total = |s: [u64; 3]| s.iter().sum::<u64>();
    let mutations_pay = arm_shares(&[idle, paying, paying]);
    assert!(mutations_pay[0] >= FRESH_FLOOR_PER_MILLE, "{mutations_pay:?}");
    assert!((999..=1_001).contains(&total(mutations_pay)), "{mutations_pay:?}");
    let fresh_pays = arm_shares(&[paying, idle, idle]);
    assert!(fresh_pays[0] > mutations_pay[0], "{fresh_pays:?}");
    assert!(fresh_pays[1..].iter().all(|&s| s >= FLOOR_PER_MILLE), "{fresh_pays:?}");
    let whole_pays = arm_shares(&[idle, paying, idle]);
    assert!(whole_pays[1] > whole_pays[2], "{whole_pays:?}");
}

/// A mutant stacks one to `MAX_STACK` operators on its parent (deep stacks find the pairs and
/// triples of faults a catch needs more often than single edits do), never more, and each is
/// named in its `how`.
#[test]
fn a_mutant_stacks_up_to_the_most_operators() {
    let s = settings(&["swarm"], ROUND, 1);
    let mut corpus = search(&s, Corpus::new(&s.scenarios, &s.options)).corpus;
    let v = vec![(Vocabulary::of(&s.scenarios[0], &s.options), SpecRanges::default())];
    let coverage = corpus.coverage();
    let weights: Vec<u64> =
        corpus.entries.iter().map(|e| weight(&coverage, &e.signature)).collect();
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let depths: Vec<usize> = (0..200)
        .filter_map(|_| mutant(&s, &mut corpus, &v, &weights, Arm::Whole, &mut rng))
        .map(|c| c.how.len())
        .collect();
    assert!(depths.len() >= 150, "most draws make a mutant: {}", depths.len());
    assert!(depths.iter().all(|&d| (1..=MAX_STACK as usize).contains(&d)), "{depths:?}");
    assert!(depths.contains(&1), "single edits still come: {depths:?}");
    assert!(depths.iter().any(|&d| d > 3), "deeper stacks come too: {depths:?}");
}
