//! The black-box rules on hand-made broker histories and processed-record logs.

use groupsim_history::{
    CoordinatorEvent, Event, EventKind, GroupState, History, MemberAssignment, WorldEvent,
};
use groupsim_wire::TopicPartition;

use super::*;

fn tp(p: i32) -> TopicPartition {
    TopicPartition::new("t", p)
}

fn coord(at_ms: u64, event: CoordinatorEvent) -> Event {
    Event { at_ms, kind: EventKind::Coordinator { broker: 0, event } }
}

fn world(at_ms: u64, event: WorldEvent) -> Event {
    Event { at_ms, kind: EventKind::World(event) }
}

fn added(at: u64, member: &str, client: &str) -> Event {
    coord(
        at,
        CoordinatorEvent::MemberAdded {
            group: "g".into(),
            member_id: member.into(),
            group_instance_id: None,
            client_id: client.into(),
        },
    )
}

fn generation(at: u64, generation: i32, members: &[&str]) -> Event {
    coord(
        at,
        CoordinatorEvent::GenerationStarted {
            group: "g".into(),
            generation,
            protocol: Some("range".into()),
            leader: Some(members[0].into()),
            members: members.iter().map(|m| m.to_string()).collect(),
        },
    )
}

fn assigned(at: u64, generation: i32, shares: &[(&str, &[i32])]) -> Event {
    let assignments = shares
        .iter()
        .map(|(m, ps)| MemberAssignment {
            member_id: m.to_string(),
            partitions: ps.iter().map(|p| tp(*p)).collect(),
        })
        .collect();
    coord(at, CoordinatorEvent::AssignmentStored { group: "g".into(), generation, assignments })
}

fn stable(at: u64, generation: i32) -> Event {
    coord(
        at,
        CoordinatorEvent::GroupStateChanged {
            group: "g".into(),
            from: GroupState::CompletingRebalance,
            to: GroupState::Stable,
            generation,
        },
    )
}

fn commit(at: u64, member: &str, generation: i32, p: i32, offset: i64) -> Event {
    coord(
        at,
        CoordinatorEvent::OffsetCommitAccepted {
            group: "g".into(),
            member_id: member.into(),
            generation,
            partition: tp(p),
            offset,
            validated_at_ms: at,
        },
    )
}

fn produced(p: i32, count: i64) -> Event {
    world(0, WorldEvent::Produced { partition: tp(p), base_offset: 0, count })
}

fn processed(client: &str, p: i32, offsets: std::ops::Range<i64>, at_ms: u64) -> Vec<Processed> {
    offsets
        .map(|offset| Processed { client: client.into(), partition: tp(p), offset, at_ms })
        .collect()
}

/// Two members, each with one partition of two, ten records each.
fn two_members() -> Vec<Event> {
    vec![
        produced(0, 10),
        produced(1, 10),
        added(1, "a", "ca"),
        added(1, "b", "cb"),
        generation(10, 1, &["a", "b"]),
        assigned(12, 1, &[("a", &[0]), ("b", &[1])]),
        stable(12, 1),
    ]
}

fn classes(v: &BlackBoxVerdict) -> Vec<AnomalyClass> {
    v.anomalies.iter().map(|a| a.class).collect()
}

#[test]
fn owners_committing_what_they_processed_pass_and_duplicates_are_only_counted() {
    let mut events = two_members();
    events.push(commit(30, "a", 1, 0, 10));
    events.push(commit(30, "b", 1, 1, 10));
    let mut records = processed("ca", 0, 0..10, 20);
    records.extend(processed("cb", 1, 0..10, 20));
    records.extend(processed("cb", 1, 5..10, 25));
    let v = check_black_box(&History::from_events(events), Some(&records));
    assert!(v.anomalies.is_empty(), "{:?}", v.anomalies);
    assert_eq!((v.processed, v.duplicates, v.produced), (25, 5, 20));
}

#[test]
fn a_commit_for_another_members_partition_is_unowned() {
    let mut events = two_members();
    events.push(commit(30, "a", 1, 1, 3));
    let v = check_black_box(&History::from_events(events), None);
    assert_eq!(classes(&v), vec![AnomalyClass::UnownedCommit]);
    assert!(v.anomalies[0].message.contains("owned by b"), "{}", v.anomalies[0].message);
}

#[test]
fn a_cooperative_member_may_commit_what_it_revokes_under_the_next_generation() {
    let mut events = two_members();
    events.push(generation(40, 2, &["a", "b"]));
    // KIP-429's first rebalance: partition 1 goes to nobody until b has revoked it.
    events.push(assigned(41, 2, &[("a", &[0]), ("b", &[])]));
    events.push(commit(42, "b", 2, 1, 4));
    let v = check_black_box(&History::from_events(events.clone()), None);
    assert!(v.anomalies.is_empty(), "{:?}", v.anomalies);
    // a never held partition 1: the same commit from a is unowned.
    events.push(commit(43, "a", 2, 1, 5));
    let v = check_black_box(&History::from_events(events), None);
    assert_eq!(classes(&v), vec![AnomalyClass::UnownedCommit]);
}

#[test]
fn a_committed_offset_moving_back_is_a_regression_and_an_old_generation_a_zombie() {
    let mut events = two_members();
    events.push(commit(30, "a", 1, 0, 8));
    events.push(commit(31, "a", 1, 0, 6));
    events.push(generation(40, 2, &["b"]));
    events.push(assigned(41, 2, &[("b", &[0, 1])]));
    events.push(commit(42, "a", 1, 0, 9));
    let v = check_black_box(&History::from_events(events), None);
    assert_eq!(classes(&v), vec![AnomalyClass::OffsetRegression, AnomalyClass::ZombieCommit]);
}

#[test]
fn records_below_the_final_commit_that_nobody_processed_are_lost() {
    // The commit-before-process mistake: a commits 10, processes 0..6 and is killed.
    let mut events = two_members();
    events.push(commit(30, "a", 1, 0, 10));
    let records = processed("ca", 0, 0..6, 31);
    let v = check_black_box(&History::from_events(events), Some(&records));
    assert_eq!(classes(&v), vec![AnomalyClass::LostRecord]);
    assert!(v.anomalies[0].message.contains("records 6..10"), "{}", v.anomalies[0].message);
}

#[test]
fn a_live_member_processing_a_partition_its_generation_gave_away_is_split() {
    let mut events = two_members();
    events.push(generation(50, 2, &["a", "b"]));
    events.push(assigned(51, 2, &[("a", &[0, 1]), ("b", &[])]));
    // b is still a member of generation 2 and processes partition 1, which a now owns.
    let mut records = processed("cb", 1, 3..4, 60);
    let v = check_black_box(&History::from_events(events.clone()), Some(&records));
    assert_eq!(classes(&v), vec![AnomalyClass::SplitProcessing]);
    // Processing it in generation 1 (before 50 ms) is b's right; after b was removed
    // (a zombie) it is only a duplicate.
    records = processed("cb", 1, 3..4, 40);
    events.push(coord(
        55,
        CoordinatorEvent::MemberRemoved {
            group: "g".into(),
            member_id: "b".into(),
            reason: groupsim_history::RemovalReason::SessionTimeout,
        },
    ));
    records.extend(processed("cb", 1, 4..5, 60));
    let v = check_black_box(&History::from_events(events), Some(&records));
    assert!(v.anomalies.is_empty(), "{:?}", v.anomalies);
}

#[test]
fn after_a_heal_phase_short_commits_or_unprocessed_records_are_stuck() {
    let mut events = two_members();
    events.push(commit(30, "a", 1, 0, 10));
    events.push(commit(30, "b", 1, 1, 7));
    events.push(world(40, WorldEvent::LivenessPhase { deadline_ms: 100, stall_ms: None }));
    let mut records = processed("ca", 0, 0..10, 20);
    records.extend(processed("cb", 1, 0..7, 20));
    let v = check_black_box(&History::from_events(events), Some(&records));
    assert_eq!(classes(&v), vec![AnomalyClass::Stuck]);
    let message = &v.anomalies[0].message;
    assert!(message.contains("t-1 committed 7 < log end 10"), "{message}");
    assert!(message.contains("t-1 records 7..10 never processed"), "{message}");
}

#[test]
fn a_group_first_seen_loaded_by_a_new_coordinator_has_its_stored_assignment() {
    // The history begins after a coordinator move: the group is only known from its load.
    let shares = vec![
        MemberAssignment { member_id: "a".into(), partitions: vec![tp(0)] },
        MemberAssignment { member_id: "b".into(), partitions: vec![tp(1)] },
    ];
    let loaded = CoordinatorEvent::GroupLoaded {
        group: "g".into(),
        partition: 7,
        state: GroupState::Stable,
        generation: 4,
        protocol: Some("range".into()),
        leader: Some("a".into()),
        members: vec!["a".into(), "b".into()],
        assignments: shares,
        offsets: Vec::new(),
    };
    let events = vec![coord(5, loaded), commit(30, "a", 4, 0, 4), commit(31, "a", 4, 1, 4)];
    let v = check_black_box(&History::from_events(events), None);
    assert_eq!(classes(&v), vec![AnomalyClass::UnownedCommit], "{:?}", v.anomalies);
    assert!(v.anomalies[0].message.contains("owned by b"), "{}", v.anomalies[0].message);
}

#[test]
fn a_commit_validated_in_its_generation_whose_append_lands_in_the_next_is_not_a_zombie() {
    // Kafka validates an OffsetCommit when it arrives and applies it when the offsets-log
    // append completes, without a second check: the accepted event can follow the next
    // generation's start. Judged when validated, it was current; validated later, a zombie's.
    let landing = |validated_at: u64| {
        let mut events = two_members();
        events.push(generation(40, 2, &["a", "b"]));
        let mut late = commit(42, "a", 1, 0, 5);
        if let EventKind::Coordinator {
            event: CoordinatorEvent::OffsetCommitAccepted { validated_at_ms, .. },
            ..
        } = &mut late.kind
        {
            *validated_at_ms = validated_at;
        }
        events.push(late);
        classes(&check_black_box(&History::from_events(events), None))
    };
    assert!(!landing(39).contains(&AnomalyClass::ZombieCommit));
    assert!(landing(41).contains(&AnomalyClass::ZombieCommit));
}

fn state(node: i32, at: u64, from: GroupState, to: GroupState, generation: i32) -> Event {
    let event = CoordinatorEvent::GroupStateChanged { group: "g".into(), from, to, generation };
    Event { at_ms: at, kind: EventKind::Coordinator { broker: node, event } }
}

/// A group whose first generation was never stored (its leader never synced) moves to another
/// coordinator, which finds nothing in the offsets log: it starts the group afresh at
/// generation 0 with no load event. Reading only the first coordinator's state changes, the
/// checker saw the group stuck in CompletingRebalance while broker-2 had it Stable (a false
/// `stuck` seen with a real client under faults).
#[test]
fn a_new_coordinator_that_starts_the_group_afresh_leads_it_without_a_load() {
    use GroupState::*;
    let history = History::from_events(vec![
        produced(0, 10),
        state(1, 10, Empty, PreparingRebalance, 0),
        added(15, "m-1", "c1"),
        generation(20, 1, &["m-1"]),
        state(1, 20, PreparingRebalance, CompletingRebalance, 1),
        // The coordinator moves; the group was never stored, so nothing is loaded.
        state(2, 40, Empty, PreparingRebalance, 0),
        generation(50, 1, &["m-1"]),
        state(2, 50, PreparingRebalance, CompletingRebalance, 1),
        assigned(52, 1, &[("m-1", &[0])]),
        state(2, 52, CompletingRebalance, Stable, 1),
        world(60, WorldEvent::LivenessPhase { deadline_ms: 100, stall_ms: None }),
        commit(70, "m-1", 1, 0, 10),
    ]);
    let v = check_black_box(&history, Some(&processed("c1", 0, 0..10, 65)));
    assert!(v.anomalies.is_empty(), "{:?}", v.anomalies);
    // Had the first coordinator kept the group, it would have been left unstable: stuck.
    let first_only: Vec<Event> =
        history.events().iter().filter(|e| e.at_ms < 40 || e.at_ms >= 60).cloned().collect();
    let v = check_black_box(&History::from_events(first_only), Some(&[]));
    assert!(classes(&v).contains(&AnomalyClass::Stuck), "{:?}", v.anomalies);
}

/// A cooperative member keeps its partitions through a rebalance. When that rebalance's
/// generation never gets an assignment stored (its leader never synced), the member goes on
/// processing and committing what it owned, under the new generation, and Kafka accepts it: the
/// checker called it an `unowned-commit` (seen with confluent-kafka under faults).
#[test]
fn a_member_keeps_its_partitions_through_a_generation_with_no_stored_assignment() {
    let mut events = two_members();
    events.push(generation(300, 2, &["a", "b"]));
    events.push(commit(310, "a", 2, 0, 5));
    let v = check_black_box(&History::from_events(events.clone()), None);
    assert!(v.anomalies.is_empty(), "{:?}", v.anomalies);
    // A partition the member did not hold before stays unowned.
    events.push(commit(320, "a", 2, 1, 5));
    let v = check_black_box(&History::from_events(events), None);
    assert_eq!(classes(&v), vec![AnomalyClass::UnownedCommit], "{:?}", v.anomalies);
}

/// Generation 2 moves partition 0 from `a` to `b`; `a` had committed 5 of its ten records.
fn handed_over() -> Vec<Event> {
    let mut events = two_members();
    events.push(commit(30, "a", 1, 0, 5));
    events.push(generation(40, 2, &["a", "b"]));
    events.push(assigned(42, 2, &[("a", &[1]), ("b", &[0])]));
    events.push(stable(42, 2));
    events
}

fn judged(events: Vec<Event>, records: &[Processed]) -> Vec<(AnomalyClass, String)> {
    let v = check_black_box(&History::from_events(events), Some(records));
    v.anomalies.into_iter().map(|a| (a.class, a.message)).collect()
}

#[test]
fn a_client_starting_a_handed_over_partition_at_the_committed_offset_passes() {
    let mut records = processed("ca", 0, 0..5, 20);
    records.extend(processed("cb", 1, 0..10, 20));
    records.extend(processed("cb", 0, 5..10, 50));
    let got = judged(handed_over(), &records);
    assert!(!got.iter().any(|(c, _)| *c == AnomalyClass::PositionRewind), "{got:?}");
    assert!(!got.iter().any(|(c, _)| *c == AnomalyClass::PositionSkip), "{got:?}");
}

/// kafka-python #2628 and aiokafka's reset on coordinator errors: a client that resets to
/// earliest when it cannot fetch the committed offset starts the partition from 0.
#[test]
fn a_client_starting_below_the_committed_offset_rewinds() {
    let mut records = processed("ca", 0, 0..5, 20);
    records.extend(processed("cb", 1, 0..10, 20));
    records.extend(processed("cb", 0, 0..10, 50));
    let got = judged(handed_over(), &records);
    let rewinds: Vec<_> = got.iter().filter(|(c, _)| *c == AnomalyClass::PositionRewind).collect();
    assert_eq!(rewinds.len(), 1, "{got:?}");
    assert!(rewinds[0].1.contains("cb (b) got t-0 at t=42ms with 5 committed"), "{}", rewinds[0].1);
    assert!(rewinds[0].1.contains("records 0..5 are delivered again"), "{}", rewinds[0].1);
}

/// The same client resetting to latest instead: records 5..8 are never processed by anyone.
#[test]
fn a_client_starting_above_the_committed_offset_past_unprocessed_records_skips() {
    let mut records = processed("ca", 0, 0..5, 20);
    records.extend(processed("cb", 1, 0..10, 20));
    records.extend(processed("cb", 0, 8..10, 50));
    let got = judged(handed_over(), &records);
    let skips: Vec<_> = got.iter().filter(|(c, _)| *c == AnomalyClass::PositionSkip).collect();
    assert_eq!(skips.len(), 1, "{got:?}");
    assert!(skips[0].1.contains("nobody ever processed records 5..8"), "{}", skips[0].1);
}

/// The previous owner processed past its last commit (async commits lag): the new owner starting
/// above the committed offset (its OffsetFetch came after a later commit) skips nothing.
#[test]
fn starting_above_the_committed_offset_over_records_someone_processed_is_no_skip() {
    let mut events = handed_over();
    events.push(commit(44, "a", 1, 0, 8));
    let mut records = processed("ca", 0, 0..8, 20);
    records.extend(processed("cb", 1, 0..10, 20));
    records.extend(processed("cb", 0, 8..10, 50));
    let got = judged(events, &records);
    assert!(!got.iter().any(|(c, _)| *c == AnomalyClass::PositionSkip), "{got:?}");
}

/// Nothing committed when the partition moved: the client's `auto.offset.reset` decides, and
/// a member that keeps a partition through a rebalance goes on from where it was.
#[test]
fn a_partition_with_nothing_committed_or_kept_through_a_rebalance_is_not_judged() {
    let mut events = two_members();
    events.push(generation(40, 2, &["a", "b"]));
    events.push(assigned(42, 2, &[("a", &[1]), ("b", &[0])]));
    events.push(stable(42, 2));
    events.push(commit(60, "a", 2, 1, 3));
    events.push(generation(70, 3, &["a", "b"]));
    events.push(assigned(72, 3, &[("a", &[1]), ("b", &[0])]));
    events.push(stable(72, 3));
    let mut records = processed("ca", 0, 0..3, 20);
    records.extend(processed("cb", 1, 0..10, 20));
    records.extend(processed("cb", 0, 9..10, 50));
    records.extend(processed("ca", 1, 0..3, 50));
    records.extend(processed("ca", 1, 7..10, 80));
    let got = judged(events, &records);
    assert!(!got.iter().any(|(c, _)| *c == AnomalyClass::PositionSkip), "{got:?}");
    assert!(!got.iter().any(|(c, _)| *c == AnomalyClass::PositionRewind), "{got:?}");
}

/// `two_members()`, then the faults heal at t=100 with a stall bound of 10 ms, the producer
/// having written ten records to each partition; the run ends at `end`.
fn healed_at_100(end: u64, extra: Vec<Event>) -> Vec<Event> {
    let mut events = two_members();
    events.push(world(100, WorldEvent::LivenessPhase { deadline_ms: 200, stall_ms: Some(10) }));
    events.extend(extra);
    events.push(world(end, WorldEvent::RunEnded));
    events
}

fn stalls_of(events: Vec<Event>, records: &[Processed]) -> Vec<String> {
    let v = check_black_box(&History::from_events(events), Some(records));
    let found = v.anomalies.into_iter().filter(|a| a.class == AnomalyClass::StalledMember);
    found.map(|a| a.message).collect()
}

/// A client whose member holds a partition with unprocessed records, and that processes none of
/// them for twice the stall bound after the heal, stopped consuming (the confluent-kafka
/// cooperative run where a member held two partitions for the whole run and processed nothing).
#[test]
fn a_client_holding_a_backlog_it_never_consumes_after_the_heal_is_stalled() {
    let records = processed("ca", 0, 0..10, 20);
    let got = stalls_of(healed_at_100(200, Vec::new()), &records);
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(got[0].contains("cb (b) holds t-1 (since t=12ms), whose records 0..10"), "{}", got[0]);
    assert!(got[0].contains("from t=100ms to t=120ms"), "{}", got[0]);
}

/// Consuming in the window, nothing left to consume, a holding that ended (the member was
/// removed), a run ending before the bound passed, or no bound recorded: no stall.
#[test]
fn progress_an_empty_backlog_an_ended_holding_or_no_bound_is_no_stall() {
    let mut records = processed("ca", 0, 0..10, 20);
    let mut consuming = records.clone();
    consuming.extend(processed("cb", 1, 0..10, 110));
    assert_eq!(stalls_of(healed_at_100(200, Vec::new()), &consuming), Vec::<String>::new());
    let mut done = records.clone();
    done.extend(processed("cb", 1, 0..10, 50));
    assert_eq!(stalls_of(healed_at_100(200, Vec::new()), &done), Vec::<String>::new());
    let removed = coord(
        110,
        CoordinatorEvent::MemberRemoved {
            group: "g".into(),
            member_id: "b".into(),
            reason: groupsim_history::RemovalReason::SessionTimeout,
        },
    );
    assert_eq!(stalls_of(healed_at_100(200, vec![removed]), &records), Vec::<String>::new());
    assert_eq!(stalls_of(healed_at_100(115, Vec::new()), &records), Vec::<String>::new());
    let mut unbounded = two_members();
    unbounded.push(world(100, WorldEvent::LivenessPhase { deadline_ms: 200, stall_ms: None }));
    unbounded.push(world(200, WorldEvent::RunEnded));
    records.truncate(10);
    assert_eq!(stalls_of(unbounded, &records), Vec::<String>::new());
}

fn started(at: u64, member: &str, host: &str) -> Event {
    world(
        at,
        WorldEvent::MemberStarted { member: member.into(), group: "g".into(), host: host.into() },
    )
}

fn session_expired(at: u64, member: &str) -> Event {
    coord(
        at,
        CoordinatorEvent::MemberRemoved {
            group: "g".into(),
            member_id: member.into(),
            reason: groupsim_history::RemovalReason::SessionTimeout,
        },
    )
}

/// kafkajs 2.2.4 under check-client (seed 10): after a coordinator move and an expelled member,
/// every consumer stopped rejoining while its process lived; the group ended Empty. A live
/// process with no member in the group for twice the bound after the heal stopped consuming.
#[test]
fn a_live_client_out_of_the_group_after_the_heal_is_stalled() {
    let processes = vec![started(0, "m0", "ca pid 1"), started(0, "m1", "cb pid 2")];
    let mut records = processed("ca", 0, 0..10, 20);
    records.extend(processed("cb", 1, 0..10, 20));
    let absent = |extra: Vec<Event>, end: u64| {
        let mut events = processes.clone();
        events.extend(healed_at_100(end, extra));
        stalls_of(events, &records)
    };
    let got = absent(vec![session_expired(50, "b")], 200);
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(
        got[0].contains("m1 (cb) lives but had no member in the group from t=50ms"),
        "{}",
        got[0]
    );
    assert!(got[0].contains("to t=120ms"), "{}", got[0]);
    // It rejoined in time, its process ended, or the run ended before the bound: no stall.
    assert_eq!(
        absent(vec![session_expired(50, "b"), added(110, "b2", "cb")], 200),
        Vec::<String>::new()
    );
    let stopped = world(60, WorldEvent::MemberStopped { member: "m1".into() });
    assert_eq!(absent(vec![session_expired(50, "b"), stopped], 200), Vec::<String>::new());
    assert_eq!(absent(vec![session_expired(50, "b")], 115), Vec::<String>::new());
}
