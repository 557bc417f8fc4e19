use super::*;
use groupsim::faults::Fault;
use groupsim_member::GroupProtocol;
use groupsim_wire::TopicPartition;

fn shape() -> PlanShape {
    PlanShape {
        brokers: 3,
        fault_ms: 20_000,
        session_timeout_ms: 6_000,
        protocol: GroupProtocol::Classic,
    }
}

/// The served history of a run whose fault phase began at `start` (the producer's first
/// append after the preload) and in which `fired` triggers fired at their instants.
fn history(start: Millis, fired: &[(&str, Millis)]) -> History {
    let mut h = History::default();
    let partition = TopicPartition { topic: "orders".into(), partition: 0 };
    h.world(0, WorldEvent::Produced { partition: partition.clone(), base_offset: 0, count: 20 });
    h.world(start, WorldEvent::Produced { partition, base_offset: 20, count: 1 });
    for (trigger, at) in fired {
        let trigger = trigger.to_string();
        h.world(*at, WorldEvent::TriggerFired { trigger, target: "m0.0".into() });
    }
    h
}

/// Seed `seed`'s own plan with `faults` and `triggers` in place of its drawn ones.
fn plan_with(seed: u64, faults: Vec<ScheduledFault>, triggers: Vec<Trigger>) -> Plan {
    let schedule = FaultSchedule::new(faults).with_triggers(triggers);
    schedule::draw(seed, shape()).with_schedule(schedule).unwrap()
}

fn crash(member: &str, at_ms: Millis) -> ScheduledFault {
    ScheduledFault {
        at_ms,
        fault: Fault::MemberCrash { member: member.into(), restart_after_ms: 1_234 },
    }
}

/// A choice for the arm's bookkeeping alone.
fn chose(arm: Arm) -> Choice {
    Choice { plan: schedule::draw(0, shape()), how: String::new(), arm: Some(arm), sources: vec![] }
}

/// Whether every fault and trigger of `own` is in `plan` too.
fn keeps_its_own(plan: &Plan, own: &Plan) -> bool {
    let (mine, theirs) = (schedule_of(plan), schedule_of(own));
    theirs.faults.iter().all(|f| mine.faults.contains(f))
        && theirs.triggers.iter().all(|t| mine.triggers.contains(t))
}

/// A search that kept one run of the first seed, whose single find came at `at` into the fault
/// phase.
fn one_kept(faults: Vec<ScheduledFault>, at: Millis) -> ClientSearch {
    let mut search = ClientSearch::new(shape());
    let plan = plan_with(0, faults, vec![]);
    assert_eq!(search.learn(0, &plan, &history(5_000, &[("on x: drop", 5_000 + at)])).len(), 1);
    search
}

#[test]
fn a_finds_instant_is_counted_from_the_fault_phases_start() {
    let h = history(5_000, &[("on commit_appended: drop", 7_000), ("on x: y", 9_500)]);
    let (signature, first, fired) = met_timed(&h);
    let e = Element::Probe("trigger fired on commit_appended".into());
    assert!(signature.elements.contains(&e));
    assert_eq!(first[&e], 2_000);
    assert_eq!(fired["on x: y"], 4_500);
    assert_eq!(phase_start(&History::default()), 0, "no append: the history's start");
}

/// Before anything is kept every seed runs its own plan, with no arm; then each seed's coin
/// picks the arm at the share the arms' pay gives, a grafted seed keeps its own workload and
/// every fault and trigger of its own draw (unless one was aimed elsewhere), and the choice is
/// the same every time.
#[test]
fn a_seed_runs_its_own_draw_and_its_coin_picks_whether_to_graft() {
    let mut search = ClientSearch::new(shape());
    let first = search.plan_for(0);
    assert_eq!((first.arm, first.plan.clone()), (None, schedule::draw(0, shape())));
    for seed in 0..6 {
        let plan = schedule::draw(seed, shape());
        let on = format!("on e{seed}: drop");
        search.learn(seed, &plan, &history(3_000, &[(&on, 3_000 + 2_000 * seed)]));
    }
    assert_eq!(search.kept.len(), 6);
    let share = search.graft_per_mille();
    let mut grafted = 0;
    for seed in 6..80 {
        let choice = search.plan_for(seed);
        assert_eq!(choice, search.plan_for(seed), "deterministic");
        let coin = ClientSearch::rng(seed).random_ratio(share, 1_000);
        let own = schedule::draw(seed, shape());
        assert_eq!((choice.plan.members, choice.plan.partitions), (own.members, own.partitions));
        match choice.arm {
            Some(Arm::Graft) => {
                assert!(coin, "seed {seed}: {}", choice.how);
                grafted += 1;
                assert!(choice.how.starts_with("its own draw with seed "), "{}", choice.how);
                assert!(!choice.sources.is_empty() && choice.sources.len() <= 2);
                assert!(schedule_of(&choice.plan) != schedule_of(&own), "something was added");
                if !choice.how.contains("retarget-fault") {
                    assert!(keeps_its_own(&choice.plan, &own), "seed {seed}: {}", choice.how);
                }
            }
            Some(Arm::Fresh) => assert_eq!(choice.plan, own, "seed {seed}"),
            None => panic!("seed {seed} had something to choose from"),
        }
    }
    assert!(grafted > 20, "about half the seeds graft at first: {grafted}");
}

/// What each arm paid sets the share of grafted seeds, within the floors, judged over each
/// arm's latest seeds only.
#[test]
fn the_graft_share_follows_what_each_arm_paid_within_the_floors() {
    let mut search = one_kept(vec![crash("m0", 1_000)], 2_000);
    assert_eq!(search.graft_per_mille(), 500, "no seed of either arm yet");
    let nothing = History::default();
    let plan = schedule::draw(1, shape());
    for seed in 1..=4 {
        search.learn_chosen(seed, &chose(Arm::Fresh), &plan, &nothing);
    }
    // A grafted seed that met three new situations, fresh seeds that met none.
    let on = |s: u64| format!("on g{s}: drop");
    let three =
        |s| history(1_000, &[(&on(s), 2_000), (&on(s + 100), 2_000), (&on(s + 200), 2_000)]);
    assert_eq!(search.learn_chosen(5, &chose(Arm::Graft), &plan, &three(5)).len(), 3);
    assert_eq!(search.graft_per_mille(), 1_000 - FLOOR_PER_MILLE, "capped by fresh's floor");
    for seed in 6..6 + RECENT as u64 {
        search.learn_chosen(seed, &chose(Arm::Graft), &plan, &nothing);
    }
    assert!(search.graft_per_mille() < 500, "its find has left the window; more seeds paid none");
    for seed in 16..16 + RECENT as u64 - 4 {
        search.learn_chosen(seed, &chose(Arm::Fresh), &plan, &nothing);
    }
    assert_eq!(search.graft_per_mille(), 500, "as many seeds each, none paid: even again");
    for seed in 30..34 {
        search.learn_chosen(seed, &chose(Arm::Fresh), &plan, &three(seed));
    }
    assert_eq!(search.graft_per_mille(), FLOOR_PER_MILLE, "grafting keeps its floor");
    let before = search.graft_per_mille();
    search.learn_chosen(40, &Choice { arm: None, ..chose(Arm::Graft) }, &plan, &three(40));
    assert_eq!(search.graft_per_mille(), before, "a seed with no choice pays no arm");
}

/// The piece grafted is what acted shortly before the kept run met what it met first: not a
/// fault long before it, nor one after it. Fitted to the seed's members.
#[test]
fn a_graft_takes_a_fault_that_acted_shortly_before_the_find() {
    let search =
        one_kept(vec![crash("m0", 1_000), crash("m1", 9_000), crash("m1", 15_000)], 10_000);
    let mut grafted = 0;
    for seed in 1..60 {
        let choice = search.plan_for(seed);
        if choice.arm != Some(Arm::Graft) {
            continue;
        }
        grafted += 1;
        let how = &choice.how;
        assert!(how.contains("seed 0's member crash") && how.contains("at 9000 ms"), "{how}");
        let own = schedule::draw(seed, shape());
        let added: Vec<_> =
            choice.plan.client.iter().filter(|f| !own.client.contains(f)).cloned().collect();
        if !choice.how.contains("retarget-fault") {
            let member = format!("m{}", 1 % own.members);
            assert_eq!(added, vec![crash(&member, 9_000)], "seed {seed}");
        }
    }
    assert!(grafted > 10, "{grafted}");
}

/// With no fault of the kept schedule in the window before its find, the latest one before the
/// find is grafted; a find after the fault phase looks back from its end.
#[test]
fn a_graft_falls_back_to_the_latest_fault_before_the_find() {
    let search = one_kept(vec![crash("m0", 1_000), crash("m0", 2_000)], 30_000);
    let search_late = one_kept(vec![crash("m0", 1_000), crash("m0", 17_000)], 30_000);
    for seed in 1..40 {
        let choice = search.plan_for(seed);
        if choice.arm == Some(Arm::Graft) {
            assert!(choice.how.contains("at 2000 ms"), "{}", choice.how);
        }
        let choice = search_late.plan_for(seed);
        if choice.arm == Some(Arm::Graft) {
            assert!(choice.how.contains("at 17000 ms"), "{}", choice.how);
        }
    }
}

/// A trigger of the kept schedule that fired shortly before the find is grafted, with an
/// identity of its own, unless the seed's draw has one on the same event doing the same.
#[test]
fn a_graft_takes_a_trigger_that_fired_shortly_before_the_find() {
    let trigger = (0..50)
        .flat_map(|s| schedule::draw(s, shape()).brokers.triggers)
        .next()
        .expect("the draws have triggers");
    let label = trigger.to_string();
    let mut search = ClientSearch::new(shape());
    let plan = plan_with(0, vec![], vec![trigger.clone()]);
    let new = search.learn(0, &plan, &history(2_000, &[(&label, 8_000)]));
    assert_eq!(new.len(), 1);
    let mut grafted = 0;
    for seed in 1..60 {
        let choice = search.plan_for(seed);
        let own = schedule::draw(seed, shape());
        let same = |t: &Trigger| t.on == trigger.on && t.action == trigger.action;
        if own.brokers.triggers.iter().any(same) {
            assert_eq!(choice.plan, own, "nothing to graft: its own draw");
            continue;
        }
        if choice.arm == Some(Arm::Graft) {
            grafted += 1;
            let t = &choice.plan.brokers.triggers;
            assert_eq!(t.len(), own.brokers.triggers.len() + 1, "{}", choice.how);
            assert_eq!(t.iter().filter(|t| same(t)).count(), 1);
            let ids: std::collections::BTreeSet<u32> = t.iter().map(|t| t.id).collect();
            assert_eq!(ids.len(), t.len(), "identities distinct");
        }
    }
    assert!(grafted > 10, "{grafted}");
}

/// A kept run grafted from weighs less each time, so later finds are grafted from too, not
/// only the first kept.
#[test]
fn later_finds_get_grafted_from_too() {
    let mut search = ClientSearch::new(shape());
    for seed in 0..4 {
        let plan = plan_with(seed, vec![crash("m0", 3_000 + seed * 1_000)], vec![]);
        let on = format!("on k{seed}: drop");
        search.learn(seed, &plan, &history(1_000, &[(&on, 1_000 + 4_000 + seed * 1_000)]));
    }
    assert_eq!(search.weights(&[]), vec![1_000_000; 4]);
    let mut used = [0u64; 4];
    for seed in 4..100 {
        let choice = search.plan_for(seed);
        for &k in &choice.sources {
            used[k] += 1;
        }
        let plan = choice.plan.clone();
        search.learn_chosen(seed, &choice, &plan, &History::default());
    }
    assert_eq!(used.to_vec(), search.kept.iter().map(|k| k.uses).collect::<Vec<_>>());
    let (least, most) = (used.iter().min().unwrap(), used.iter().max().unwrap());
    assert!(*least > 0 && *most <= 2 * least, "each kept run in turn: {used:?}");
    let uses = search.kept[0].uses;
    assert_eq!(search.weights(&[])[0], 1_000_000 / (uses + 1));
    assert_eq!(search.weights(&[0])[0], 0, "a seed grafts from a kept run once");
    // A run kept now, as rare as the others, is the one grafted from most at first.
    let plan = plan_with(100, vec![crash("m0", 6_000)], vec![]);
    search.learn(100, &plan, &history(1_000, &[("on late: drop", 9_000)]));
    let before: Vec<u64> = search.kept.iter().map(|k| k.uses).collect();
    for seed in 101..111 {
        let choice = search.plan_for(seed);
        let plan = choice.plan.clone();
        search.learn_chosen(seed, &choice, &plan, &History::default());
    }
    let since: Vec<u64> = search.kept.iter().zip(&before).map(|(k, b)| k.uses - b).collect();
    assert!(since[4] >= *since[..4].iter().max().unwrap(), "the late find first: {since:?}");
    assert!(since[4] >= 3, "{since:?}");
}

/// Some grafted seeds also aim one of their faults at another member or broker, and name only
/// their own members.
#[test]
fn some_grafted_seeds_also_aim_a_fault_elsewhere() {
    let search = one_kept(vec![crash("m1", 2_000), crash("m0", 3_000)], 4_000);
    let mut retargeted = 0;
    for seed in 1..120 {
        let choice = search.plan_for(seed);
        retargeted += usize::from(choice.how.contains("retarget-fault"));
        for f in &choice.plan.client {
            if let Some(m) = serde_json::to_value(&f.fault).unwrap().get("member") {
                let m = m.as_str().unwrap();
                assert!(schedule::member_index(m, choice.plan.members).is_some(), "{m}");
            }
        }
    }
    assert!(retargeted > 3, "{retargeted}");
}

/// The same seeds meeting the same things give the same choices, seed after seed.
#[test]
fn the_search_is_deterministic_in_the_seeds() {
    let run = || {
        let mut search = ClientSearch::new(shape());
        let mut hows = Vec::new();
        for seed in 0..30 {
            let choice = search.plan_for(seed);
            let on = format!("on d{}: drop", seed % 7);
            let h = history(1_000, &[(&on, 2_000 + seed * 500)]);
            let plan = choice.plan.clone();
            search.learn_chosen(seed, &choice, &plan, &h);
            hows.push((choice.how, choice.plan));
        }
        hows
    };
    let first = run();
    assert_eq!(first, run());
    assert!(first.iter().any(|(how, _)| how.contains("seed ")), "some seeds grafted");
}
