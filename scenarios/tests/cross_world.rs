//! The turmoil world is the cross-check of the default event world, so it must stay honest: over
//! the same swarm seeds, the two worlds apply the same faults about as often, reach the same
//! probes about as often, and meet Kafka's hazards about as often. A fault shape one world
//! silently stops applying, or a state one of them no longer reaches, shows here as a
//! distribution gone apart, long before a campaign would notice.
//!
//! Measured, not asserted equal: the worlds draw latencies differently (per frame against turmoil's
//! 5 ms steps), so one seed's histories differ. The event world's own network instruments
//! (`world.net.*`: retransmissions, windows, drawn ties, one-way losses) and its brokers' idle
//! close are not compared: turmoil applies those shapes through its own network (one-way
//! partitions, shuffled host order, the wire crate's idle close) without those probes.
//!
//! Seeds: `GROUPSIM_SEEDS=<n>` (default sized for CI).

use std::collections::{BTreeMap, BTreeSet};

use groupsim::faults::FaultRules;
use groupsim::runner::{RunOptions, WorldKind};
use groupsim::testing::seeds;
use groupsim_history::{EventKind, WorldEvent};

/// What one world did over the seeds.
#[derive(Default, Debug)]
struct Tally {
    seeds: u64,
    failed: Vec<u64>,
    hazard_seeds: u64,
    rebalances: u64,
    /// Per fault kind: (applied, injected).
    faults: BTreeMap<&'static str, (u64, u64)>,
    /// Per probe: the seeds that hit it.
    probes: BTreeMap<String, u64>,
}

fn tally(scenario: &str, world: WorldKind, seeds: &[u64]) -> Tally {
    let s = groupsim::scenarios::find(scenario).expect("in catalogue");
    let options = RunOptions { world, ..RunOptions::default() };
    let mut t = Tally::default();
    for &seed in seeds {
        let r = groupsim::runner::run_seed_with(&s, seed, &options).expect("the world runs");
        t.seeds += 1;
        if !r.verdict.is_ok() {
            t.failed.push(seed);
        }
        t.hazard_seeds += u64::from(!r.verdict.hazards.is_empty());
        t.rebalances += r.verdict.stats.rebalances as u64;
        for e in r.history.events() {
            if let EventKind::World(WorldEvent::FaultInjected { fault, applied }) = &e.kind {
                let entry = t.faults.entry(fault.kind().name()).or_default();
                entry.0 += u64::from(*applied);
                entry.1 += 1;
            }
        }
        // A probe hit with several details counts once for the seed.
        let names: BTreeSet<&str> =
            r.probes.keys().map(|p| p.split(':').next().unwrap_or(p)).collect();
        for name in names {
            *t.probes.entry(name.to_string()).or_default() += 1;
        }
    }
    t
}

/// Probes only the event world's own network and brokers hit (see the module docs).
fn event_only(probe: &str) -> bool {
    probe.starts_with("world.net.") || probe == "world.broker.idle_close"
}

fn compare(scenario: &str, default_seeds: u64) {
    let seeds = seeds(default_seeds);
    let event = tally(scenario, WorldKind::Event, &seeds);
    let turmoil = tally(scenario, WorldKind::Turmoil, &seeds);
    let n = event.seeds as f64;
    let mut problems = Vec::new();
    for (world, t) in [("event", &event), ("turmoil", &turmoil)] {
        if !t.failed.is_empty() {
            problems.push(format!("{world}: seeds {:?} fail", t.failed));
        }
    }
    // Faults: the schedule is the seed's in both worlds; the share applied must agree.
    let kinds: BTreeSet<&str> = event.faults.keys().chain(turmoil.faults.keys()).copied().collect();
    for kind in kinds {
        let (ea, ei) = event.faults.get(kind).copied().unwrap_or_default();
        let (ta, ti) = turmoil.faults.get(kind).copied().unwrap_or_default();
        if ei.max(ti) < 20 {
            continue;
        }
        let (es, ts) = (ea as f64 / ei.max(1) as f64, ta as f64 / ti.max(1) as f64);
        if (es - ts).abs() > 0.2 {
            problems
                .push(format!("fault {kind}: applied {ea}/{ei} (event) vs {ta}/{ti} (turmoil)"));
        }
    }
    // Probes: one reached by at least a fifth of the seeds in one world is reached by at least
    // a quarter as many in the other.
    let probes: BTreeSet<&String> = event.probes.keys().chain(turmoil.probes.keys()).collect();
    for probe in probes.into_iter().filter(|p| !event_only(p)) {
        let e = event.probes.get(probe).copied().unwrap_or(0) as f64;
        let t = turmoil.probes.get(probe).copied().unwrap_or(0) as f64;
        let (hi, lo) = (e.max(t), e.min(t));
        if hi >= n / 5.0 && lo < hi / 4.0 {
            problems.push(format!("probe {probe}: {e} seeds (event) vs {t} (turmoil)"));
        }
    }
    // Hazards and rebalances: within a factor of three and of two.
    let (eh, th) = (event.hazard_seeds as f64, turmoil.hazard_seeds as f64);
    if eh.max(th) >= n / 10.0 && eh.min(th) < eh.max(th) / 3.0 {
        problems.push(format!("hazard seeds: {eh} (event) vs {th} (turmoil)"));
    }
    let (er, tr) = (event.rebalances as f64, turmoil.rebalances as f64);
    if er.min(tr) < er.max(tr) / 2.0 {
        problems.push(format!("rebalances: {er} (event) vs {tr} (turmoil)"));
    }
    assert!(
        problems.is_empty(),
        "{scenario} over {} seeds: the worlds drift apart:\n  {}\nevent: {event:?}\nturmoil: {turmoil:?}",
        seeds.len(),
        problems.join("\n  ")
    );
}

#[test]
fn the_classic_swarm_meets_faults_probes_and_hazards_alike_in_both_worlds() {
    compare("swarm", 150);
}

#[test]
fn the_consumer_protocol_swarm_meets_faults_probes_and_hazards_alike_in_both_worlds() {
    compare("consumer_protocol_swarm", 100);
}

/// Both worlds record the wire stream from the one member shell they drive: every member
/// incarnation the events start speaks in it under its `<member>.<start>` name, the group APIs
/// and Fetch are all there, and each exchange sits after the events recorded before it.
#[test]
fn both_worlds_record_each_incarnations_requests_and_answers() {
    use groupsim_history::wire::{Entry, Request};
    let s = groupsim::scenarios::find("rolling_restart").expect("in catalogue");
    for world in [WorldKind::Event, WorldKind::Turmoil] {
        let options = RunOptions { world, ..RunOptions::default() };
        let r = groupsim::runner::run_seed_with(&s, 1, &options).expect("the world runs");
        let mut started: BTreeMap<String, u64> = BTreeMap::new();
        for e in r.history.events() {
            if let EventKind::World(WorldEvent::MemberStarted { member, .. }) = &e.kind {
                *started.entry(member.clone()).or_default() += 1;
            }
        }
        let mut apis = BTreeSet::new();
        let mut actors = BTreeSet::new();
        for w in r.history.wire() {
            assert!(w.after <= r.history.len(), "{world:?}: {w:?}");
            let Entry::Exchange(x) = &w.wire else { continue };
            // turmoil stamps events with its global clock and hosts read theirs up to a step
            // behind; the event world has one clock.
            let step = if world == WorldKind::Turmoil { 5 } else { 0 };
            let at = r.history.events()[w.after.saturating_sub(1)].at_ms;
            assert!(at <= x.answered_ms + step, "{world:?}: recorded after later events: {w:?}");
            let (member, start) = x.actor.split_once('.').expect("<member>.<start>");
            let start: u64 = start.parse().expect("a start number");
            assert!(start < started[member], "{world:?}: {} never started", x.actor);
            actors.insert(x.actor.clone());
            apis.insert(match x.request {
                Request::Join { .. } => "join",
                Request::Sync { .. } => "sync",
                Request::Heartbeat { .. } => "heartbeat",
                Request::Commit { .. } => "commit",
                Request::OffsetFetch { .. } => "offset-fetch",
                Request::Fetch { .. } => "fetch",
                _ => "other",
            });
        }
        let restarted = started.values().filter(|&&n| n > 1).count();
        assert!(restarted > 0, "{world:?}: rolling_restart restarts members");
        assert!(
            actors.len() > started.len(),
            "{world:?}: restarted incarnations speak: {actors:?}"
        );
        for api in ["join", "sync", "heartbeat", "commit", "offset-fetch", "fetch"] {
            assert!(apis.contains(api), "{world:?}: no {api} exchange in {apis:?}");
        }
        assert!(r.verdict.is_ok(), "{world:?}: {:?}", r.verdict.first());
    }
}
