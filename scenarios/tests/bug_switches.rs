//! Bug switches prove the checker: each switch makes the coordinator or the members misbehave in
//! one realistic way, and the checker must catch it within a stated number of seeds, while the
//! same seeds pass with the switch off. A caught seed must also shrink to a schedule of at most a
//! few faults, and replay to the same history hash.
//!
//! The per-switch tests below run in the turmoil world (`--world turmoil`), whose caught seeds
//! their doc comments describe; `every_switch_is_caught_in_the_default_world` runs every switch
//! in the event world, the default of `sweep`, `run` and `replay`.

use groupsim::bugs::{self, BugSwitch};
use groupsim::runner::{run_seed_with, RunOptions, WorldKind};
use groupsim::scenarios;
use groupsim::shrink::shrink_in;
use groupsim_checker::AnomalyClass;

/// Runs `scenario` with `bug` on seeds 0.. until one shows an expected anomaly; returns it.
fn first_caught(scenario_name: &str, bug: BugSwitch, max_seeds: u64) -> (u64, AnomalyClass) {
    first_caught_in(scenario_name, bug, max_seeds, WorldKind::Turmoil)
}

/// [`first_caught`] in `world`.
fn first_caught_in(
    scenario_name: &str,
    bug: BugSwitch,
    max_seeds: u64,
    world: WorldKind,
) -> (u64, AnomalyClass) {
    let s = scenarios::find(scenario_name).expect("in catalogue");
    let options = RunOptions { bug: Some(bug), world, ..RunOptions::default() };
    for seed in 0..max_seeds {
        let r = run_seed_with(&s, seed, &options).expect("run");
        let classes: Vec<AnomalyClass> = r.verdict.anomalies.iter().map(|a| a.class).collect();
        if bug.caught_by(&classes) {
            let first = *classes.iter().find(|c| bug.expected.contains(c)).expect("caught");
            return (seed, first);
        }
    }
    panic!(
        "bug {} was not caught by {scenario_name} within {max_seeds} seeds ({} world)",
        bug.name,
        world.name()
    );
}

fn check_switch(name: &str, scenario_name: &str, max_seeds: u64) {
    check_switch_shrinking_to(name, scenario_name, max_seeds, 3);
}

/// As [`check_switch`], with the caught seed shrinking to at most `max_faults` faults.
fn check_switch_shrinking_to(name: &str, scenario_name: &str, max_seeds: u64, max_faults: usize) {
    let bug = bugs::find(name).expect("known switch");
    let (seed, class) = first_caught(scenario_name, bug, max_seeds);
    check_caught(WorldKind::Turmoil, bug, scenario_name, seed, class, Some(max_faults));
}

/// `scenario_name`'s `seed` with switch `name` on shows `class` (one of the switch's expected
/// classes) in the turmoil world; then as [`check_switch_shrinking_to`].
fn check_switch_at(
    name: &str,
    scenario_name: &str,
    seed: u64,
    class: AnomalyClass,
    max_faults: usize,
) {
    check_switch_at_in(WorldKind::Turmoil, name, scenario_name, seed, class, Some(max_faults));
}

/// [`check_switch_at`] in `world`; no shrinking when `max_faults` is `None`.
fn check_switch_at_in(
    world: WorldKind,
    name: &str,
    scenario_name: &str,
    seed: u64,
    class: AnomalyClass,
    max_faults: Option<usize>,
) {
    let bug = bugs::find(name).expect("known switch");
    assert!(bug.expected.contains(&class), "{class} is not expected of {name}");
    let s = scenarios::find(scenario_name).expect("in catalogue");
    let r = run_seed_with(&s, seed, &options(world, Some(bug))).expect("run");
    let classes: Vec<AnomalyClass> = r.verdict.anomalies.iter().map(|a| a.class).collect();
    assert!(
        classes.contains(&class),
        "{name}: seed {seed} shows {classes:?}, not {class} ({} world)",
        world.name()
    );
    check_caught(world, bug, scenario_name, seed, class, max_faults);
}

/// The run options of `world`, with `bug` on or off.
fn options(world: WorldKind, bug: Option<BugSwitch>) -> RunOptions {
    RunOptions { bug, world, ..RunOptions::default() }
}

/// In `world`, the caught `seed` passes with the switch off, replays bit for bit with it on,
/// and (unless `max_faults` is `None`) shrinks to at most `max_faults` faults that still show
/// `class`.
fn check_caught(
    world: WorldKind,
    bug: BugSwitch,
    scenario_name: &str,
    seed: u64,
    class: AnomalyClass,
    max_faults: Option<usize>,
) {
    let (name, w) = (bug.name, world.name());
    let s = scenarios::find(scenario_name).expect("in catalogue");
    // Same seed, switch off: clean.
    let clean = run_seed_with(&s, seed, &options(world, None)).expect("run");
    assert!(
        clean.verdict.is_ok(),
        "seed {seed} fails even without {name} ({w} world):\n{}",
        clean.failure_report()
    );
    // Replays bit for bit.
    let on = options(world, Some(bug));
    let a = run_seed_with(&s, seed, &on).expect("run");
    let b = run_seed_with(&s, seed, &on).expect("run");
    assert_eq!(a.history_hash(), b.history_hash(), "{name}: seed {seed} replays ({w} world)");
    eprintln!("{name}: caught by {scenario_name} seed {seed} ({class}, {w} world)");
    // Shrinks to a few faults.
    let Some(max_faults) = max_faults else { return };
    let shrunk = shrink_in(&a.spec, class, world).expect("shrink");
    assert!(
        shrunk.schedule.len() <= max_faults,
        "{name}: shrunk to {} faults: {:?}",
        shrunk.schedule.len(),
        shrunk.schedule
    );
    eprintln!("{name}: seed {seed} shrinks to {} faults", shrunk.schedule.len());
}

#[test]
fn coordinator_skipping_the_generation_check_is_caught() {
    check_switch("coordinator-skips-generation-check", "swarm", 40);
}

#[test]
fn coordinator_acking_before_the_log_append_is_caught() {
    check_switch("coordinator-acks-before-log-append", "swarm", 60);
}

#[test]
fn member_keeping_stale_acks_is_caught() {
    check_switch("member-keeps-stale-acks", "swarm", 40);
}

#[test]
fn member_committing_after_revoke_is_caught() {
    check_switch("member-commits-after-revoke", "swarm", 40);
}

/// The caught seed keeps four faults: a coordinator move and a broker crash bring the rebalance
/// whose revoke the member skips committing, and two drops of its connections lose commits
/// around it.
#[test]
fn member_overcommitting_after_skipped_revoke_commit_is_caught() {
    check_switch_shrinking_to("member-overcommits-after-skipped-revoke-commit", "swarm", 40, 4);
}

#[test]
fn assignor_double_assigning_is_caught() {
    check_switch("assignor-double-assigns", "swarm", 10);
}

// Switches modelled on real client bugs. Each test names the bug; the switch's doc comment on
// `MemberBugs` opens with the bug's mechanism.

/// librdkafka #3774: a stored offset outlives its partition's revoke and is committed when the
/// partition comes back, below what the owner in between committed.
#[test]
fn member_committing_a_stale_stored_offset_is_caught() {
    check_switch("member-commits-stale-stored-offset", "coordinator_moves", 10);
}

/// kafka-go #1308: commits queued under a past generation go out in the next one, stamped with
/// the new generation. The caught seed (1) shrinks to five faults, not three: a partition
/// expansion and two coordinator moves (one with a slow load) end generations, commits answered
/// REBALANCE_IN_PROGRESS by an injected error stay queued across them, and a one-way partition
/// loses a broker's answers to one client host meanwhile.
#[test]
fn member_sending_past_generation_commits_is_caught() {
    check_switch_shrinking_to("member-sends-past-generation-commits", "swarm", 5, 5);
}

/// spring-kafka #3186: a commit refused with REBALANCE_IN_PROGRESS is retried after newer ones
/// succeeded. The refusal needs a commit to reach the coordinator while the group rebalances:
/// the caught seed (19; seed order moved as the swarms drew new fault shapes and again when
/// Fetches began to wait at the broker) shrinks to a coordinator move, a client host cut off
/// from every broker for about two seconds, and broker-side BUGGIFY answering the next commit
/// REBALANCE_IN_PROGRESS.
#[test]
fn member_retrying_a_superseded_commit_is_caught() {
    let name = "member-retries-superseded-commit";
    check_switch_at(name, "swarm", 19, AnomalyClass::OffsetRegression, 3);
}

/// KAFKA-13419: after a failed SyncGroup a cooperative member keeps the partitions it owned and
/// claims them under the failed generation. The harm needs the group to move on without it:
/// the group gave its partitions to others meanwhile, it kept processing and committing them
/// (commits on partitions the group gave others, moving their offsets back). The caught seed
/// (56) fails the SyncGroups with answers broker-side BUGGIFY injects (NOT_COORDINATOR,
/// REBALANCE_IN_PROGRESS); member crashes and a pause past the session make room for
/// rebalances, and triggers drop connections and move the coordinator.
#[test]
fn member_keeping_owned_partitions_after_a_sync_error_is_caught() {
    let name = "member-keeps-owned-after-sync-error";
    check_switch_at(name, "swarm_cooperative", 56, AnomalyClass::UnownedCommit, 8);
}

/// KAFKA-14024: the commit made before rejoining never completes, so the member never rejoins.
#[test]
fn member_whose_revoke_commit_never_completes_is_caught() {
    check_switch("member-revoke-commit-never-completes", "membership_churn", 5);
}

/// KAFKA-9823: an ILLEGAL_GENERATION / UNKNOWN_MEMBER_ID answering a request sent under an
/// older membership resets the current one. With one request at a time per connection, stale
/// answers come right behind the answer that reset the member (a commit and a heartbeat both
/// refused after a session loss); the buggy member resets again on the second.
#[test]
fn member_resetting_on_a_stale_response_is_caught() {
    check_switch("member-resets-generation-on-stale-response", "swarm", 5);
}

/// kafka-python #2628: an OffsetFetch that failed (timed out, or answered with a coordinator
/// error) was taken for "nothing committed" and `auto_offset_reset=earliest` applied: the
/// member restarts a partition the group had committed far into from the log start,
/// re-delivering it. A coordinator move or a dropped connection while the fetch is in flight is
/// all it takes.
#[test]
fn member_rewinding_when_an_offset_fetch_fails_is_caught() {
    check_switch("member-rewinds-when-offset-fetch-fails", "swarm", 10);
}

/// The same kafka-python bug under `auto_offset_reset=latest`: the member jumps to the log end,
/// skipping the records nobody committed (and its next commit covers them: uncovered).
#[test]
fn member_skipping_when_an_offset_fetch_fails_is_caught() {
    check_switch("member-skips-when-offset-fetch-fails", "swarm", 10);
}

/// kafkajs #1390: a JoinGroup answered COORDINATOR_LOAD_IN_PROGRESS escaped the consumer's run
/// loop and stopped it for good. A coordinator move with a slow load while members rejoin is
/// all it takes.
#[test]
fn member_giving_up_on_a_loading_coordinator_is_caught() {
    check_switch("member-gives-up-on-join-load-in-progress", "swarm", 20);
}

/// KAFKA-14729: the Java consumer's heartbeat thread died while the application thread kept
/// polling; the coordinator expired its session, again after every rejoin. A connection drop
/// or a partition that loses one heartbeat is all it takes; the checker flags the member when
/// its session expires after it had reached the coordinator in the healed cluster, not at the
/// deadline.
#[test]
fn member_whose_heartbeat_thread_dies_is_caught() {
    check_switch("member-heartbeat-thread-dies", "swarm", 10);
}

/// The same member seen from its requests: in the group after the heal, it writes nothing that
/// keeps its session for longer than the session its JoinGroup asked for
/// (`request-lapsed-session`, the client's side of the protocol's rules). swarm's seed 0 in both
/// worlds.
#[test]
fn member_whose_heartbeat_thread_dies_breaks_its_session_promise() {
    let name = "member-heartbeat-thread-dies";
    let class = AnomalyClass::RequestLapsedSession;
    check_switch_at_in(WorldKind::Turmoil, name, "swarm", 0, class, None);
    check_switch_at_in(WorldKind::Event, name, "swarm", 0, class, None);
}

// KIP-848 (consumer group protocol) switches, caught by `consumer_protocol_swarm` at fixed
// seeds. Each switch's doc comment (`CoordinatorBugs`, `MemberBugs`) opens with its mechanism.

/// robot-head/crabka#521: the coordinator answers a heartbeat with the member's whole target,
/// withholding nothing, so a partition goes to its new owner while the previous owner still
/// owns it. Any reassignment between live members shows it: no fault needed.
#[test]
fn coordinator_assigning_unreleased_partitions_is_caught() {
    let class = AnomalyClass::SplitAssignment;
    check_switch_at(
        "coordinator-assigns-unreleased-partitions",
        "consumer_protocol_swarm",
        0,
        class,
        0,
    );
}

/// KAFKA-16147: a partition pending revocation given back to the member revoking it loses its
/// owner epoch, and the next target that moves it away hands it over before the member
/// released it. It takes a member asked to give a partition up while the partition's new
/// owner leaves, so the next target gives it back: the caught seed shrinks to two triggers, the
/// `revocation_requested` one making the new owner leave and a member leaving as it starts
/// processing. (Seed 53 shrank to the first alone until overlapping pauses ended with the later
/// one instead of adding up; seed 16 is the first of the turmoil world's catches since to
/// shrink to two.)
#[test]
fn coordinator_forgetting_a_reclaimed_partitions_owner_is_caught() {
    let name = "coordinator-forgets-reclaimed-partition-owner";
    check_switch_at(name, "consumer_protocol_swarm", 16, AnomalyClass::SplitAssignment, 2);
}

/// KAFKA-19233: a member fenced on its side gives its partitions up and rejoins at epoch 0 with
/// its member id. The coordinator before the fix judged that 0 like a stale epoch and fenced the
/// rejoin, and every retry after it, until the member's session ran out, its partitions held
/// for it meanwhile; `fenced-join` flags the first refused rejoin. A correct member is fenced
/// only when two answers that moved its epoch on are lost in a row (its retry at the previous
/// epoch is accepted, so the group must move on between the two): the `member_epoch_advanced`
/// trigger drops the member's connections as each answer is on its way. Seed 6 gets to a
/// rejoin at epoch 0 in both worlds (it passes with the switch off and replays to the same
/// history hash); the event world's seed shrinks to two faults: a slow batch that holds a
/// member's poll loop for about sixteen seconds, and a coordinator move whose load answers the
/// member COORDINATOR_LOAD_IN_PROGRESS until it rejoins.
#[test]
fn coordinator_fencing_a_rejoin_at_epoch_zero_is_caught() {
    let (name, class) = ("coordinator-fences-rejoin-at-epoch-zero", AnomalyClass::FencedJoin);
    let scenario = "consumer_protocol_swarm";
    check_switch_at_in(WorldKind::Turmoil, name, scenario, 6, class, None);
    check_switch_at_in(WorldKind::Event, name, scenario, 6, class, Some(2));
}

/// KAFKA-18641: the Java consumer's commits cover the batch the application is still
/// processing. They are lost when the member loses the partition before the batch finishes.
/// Seed 0 caught it until the late-request hazard joined its draws; seed 1 does now.
#[test]
fn member_committing_unprocessed_positions_is_caught() {
    let name = "member-commits-unprocessed-positions";
    check_switch_at(name, "consumer_protocol_swarm", 1, AnomalyClass::UncoveredCommit, 4);
}

/// A fenced member that rejoins keeping its partitions commits them under its new epoch, though
/// the coordinator gave them to others with the fencing: a network partition long enough to
/// expire its session is all it takes.
#[test]
fn member_keeping_partitions_when_fenced_is_caught() {
    let name = "member-keeps-partitions-when-fenced";
    check_switch_at(name, "consumer_protocol_swarm", 1, AnomalyClass::UnownedCommit, 1);
}

/// A coordinator that checks a classic Heartbeat's member id but not its generation tells a
/// member that missed a generation's JoinGroup answer that all is well: it keeps consuming its
/// old partitions, never syncs, and its commits are refused, so nothing it commits is lost and
/// the offset rules see nothing. Only the answers show it: a Heartbeat answered NONE at a
/// generation the same coordinator had moved past. static_churn's seed 0 gets there in both
/// worlds (a static member cut off by a network partition across a rebalance) and shrinks to
/// that partition and a crash.
#[test]
fn coordinator_accepting_a_stale_heartbeat_is_caught_by_its_answers() {
    let name = "coordinator-accepts-stale-heartbeat";
    let class = AnomalyClass::AnswerStaleGenerationAccepted;
    check_switch_at_in(WorldKind::Turmoil, name, "static_churn", 0, class, None);
    check_switch_at_in(WorldKind::Event, name, "static_churn", 0, class, Some(3));
}

/// A coordinator that never expires a classic member that once completed a join keeps a member
/// paused past its session: when it comes back, its heartbeat at its old generation is answered
/// NONE (Kafka: UNKNOWN_MEMBER_ID, and it rejoins). Nothing is lost when nothing else happened
/// meanwhile, so the offset rules see nothing; the answers show it, against the member's own
/// silence longer than the session timeout its JoinGroup asked for. zombie_pause gets there in
/// both worlds.
#[test]
fn coordinator_keeping_a_silent_member_is_caught_by_its_answers() {
    let name = "coordinator-keeps-silent-member";
    let class = AnomalyClass::AnswerRemovedMemberAccepted;
    check_switch_at_in(WorldKind::Turmoil, name, "zombie_pause", 13, class, None);
    check_switch_at_in(WorldKind::Event, name, "zombie_pause", 15, class, Some(2));
}

/// A coordinator that restarts a KIP-848 member's session only on a heartbeat that changes the
/// member fences every steady member one session after its last change, though it heartbeats
/// on time: its partitions go to others, it rejoins at epoch 0, and a session later it is fenced
/// again. Its answers show it: an OffsetCommit or heartbeat answered UNKNOWN_MEMBER_ID within
/// the heartbeat interval of a heartbeat answered NONE, which Kafka, whose session always
/// outlasts the interval, never gives. consumer_protocol_churn draws no fault: a steady member
/// is all it takes, in both worlds from seed 0.
#[test]
fn coordinator_restarting_sessions_only_on_change_is_caught_by_its_answers() {
    let name = "coordinator-restarts-session-only-on-change";
    let class = AnomalyClass::AnswerLiveMemberFenced;
    check_switch_at_in(WorldKind::Turmoil, name, "consumer_protocol_churn", 0, class, None);
    check_switch_at_in(WorldKind::Event, name, "consumer_protocol_churn", 0, class, Some(0));
}

/// A coordinator that admits a new dynamic member's JoinGroup v4+ at once (as before KIP-394)
/// answers NONE where Kafka answers MEMBER_ID_REQUIRED: every new Java-like member shows it on
/// its first join, whatever the faults, and nothing else need go wrong for the answers to show
/// it. membership_churn's seed 0 in both worlds, shrunk to no fault at all.
#[test]
fn coordinator_admitting_an_unknown_member_id_is_caught_by_its_answers() {
    let name = "coordinator-admits-unknown-member-id";
    let class = AnomalyClass::AnswerWrongError;
    check_switch_at_in(WorldKind::Turmoil, name, "membership_churn", 0, class, None);
    check_switch_at_in(WorldKind::Event, name, "membership_churn", 0, class, Some(0));
}

/// A coordinator that answers a static member whose instance another id now holds
/// UNKNOWN_MEMBER_ID (before KAFKA-8225) sends it back to join, taking the instance from its
/// holder, which is then refused the same way: static_churn's two processes configured with one
/// instance id take it from each other at every request. The answers show it whether or not the
/// group ends stuck: each refusal is followed by a rejoin the coordinator answers as a
/// replacement at the group's generation, which it makes only of an instance someone held.
/// static_churn's seed 2 in the event world shrinks to no fault at all (the shared instance id
/// is the scenario's own); seed 2 in turmoil too.
#[test]
fn coordinator_forgetting_a_fenced_instance_is_caught_by_its_answers() {
    let name = "coordinator-forgets-fenced-instance";
    let class = AnomalyClass::AnswerWrongError;
    check_switch_at_in(WorldKind::Turmoil, name, "static_churn", 2, class, None);
    check_switch_at_in(WorldKind::Event, name, "static_churn", 2, class, Some(0));
}

/// The event world, the default (`sweep`, `run`, `replay` without `--world`), draws other
/// histories from the same seeds, so it catches each switch at other seeds: it must catch every
/// one within a few, with the same seed clean when the switch is off, and the caught seed must
/// replay bit for bit.
#[test]
fn every_switch_is_caught_in_the_default_world() {
    assert_eq!(WorldKind::default(), WorldKind::Event);
    let cases = [
        ("coordinator-skips-generation-check", "swarm"),
        ("coordinator-acks-before-log-append", "swarm"),
        ("member-keeps-stale-acks", "swarm"),
        ("member-commits-after-revoke", "swarm"),
        ("member-overcommits-after-skipped-revoke-commit", "swarm"),
        ("assignor-double-assigns", "swarm"),
        ("member-commits-stale-stored-offset", "coordinator_moves"),
        ("member-sends-past-generation-commits", "swarm"),
        ("member-retries-superseded-commit", "swarm"),
        ("member-keeps-owned-after-sync-error", "swarm_cooperative"),
        ("member-revoke-commit-never-completes", "membership_churn"),
        ("member-resets-generation-on-stale-response", "swarm"),
        ("coordinator-assigns-unreleased-partitions", "consumer_protocol_swarm"),
        ("coordinator-forgets-reclaimed-partition-owner", "consumer_protocol_swarm"),
        ("member-commits-unprocessed-positions", "consumer_protocol_swarm"),
        ("member-keeps-partitions-when-fenced", "consumer_protocol_swarm"),
        ("coordinator-fences-rejoin-at-epoch-zero", "consumer_protocol_swarm"),
        ("coordinator-accepts-stale-heartbeat", "static_churn"),
        ("coordinator-keeps-silent-member", "zombie_pause"),
        ("coordinator-restarts-session-only-on-change", "consumer_protocol_churn"),
        ("coordinator-admits-unknown-member-id", "membership_churn"),
        ("coordinator-forgets-fenced-instance", "static_churn"),
        ("member-rewinds-when-offset-fetch-fails", "swarm"),
        ("member-skips-when-offset-fetch-fails", "swarm"),
        ("member-gives-up-on-join-load-in-progress", "swarm"),
        ("member-heartbeat-thread-dies", "swarm"),
    ];
    assert_eq!(cases.len(), bugs::all().len(), "every switch has a case");
    for (name, scenario_name) in cases {
        let bug = bugs::find(name).expect("known switch");
        let (seed, class) = first_caught_in(scenario_name, bug, 100, WorldKind::default());
        check_caught(WorldKind::default(), bug, scenario_name, seed, class, None);
    }
}
