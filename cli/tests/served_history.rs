//! A served cluster records the broker-side history of a real client's run: the same events the
//! simulation records, on real milliseconds. One kafka-python member (clients/python,
//! member_kafka_python.py) consumes, processes and commits; the history must hold the group's
//! generation, the member's assignment, its commits and the records produced, render with the
//! simulation's renderers, survive a save and load, and pass the checker's black-box rules.
//! kafka-python installs on first use (see `common::real_clients`); the test skips, saying so on
//! stderr, when python3 is absent (a failure under CI) or GROUPSIM_SKIP_REAL_CLIENTS=1.

mod common;

use std::time::{Duration, Instant};

use groupsim::pictures::{self, Format};
use groupsim_checker::black_box::check_black_box;
use groupsim_checker::Verdict;
use groupsim_coordinator::CoordinatorConfig;
use groupsim_history::{CoordinatorEvent, EventKind, History, WorldEvent};
use groupsim_live::check_client::clients;
use groupsim_live::check_client::process::Adapter;
use groupsim_live::check_client::processed::read_log;
use groupsim_live::serve::{Cluster, ClusterConfig, TopicSpec};

use common::real_clients::{self, Runtime};

fn committed(history: &History, partition: i32) -> Option<i64> {
    history.events().iter().rev().find_map(|e| match &e.kind {
        EventKind::Coordinator {
            event: CoordinatorEvent::OffsetCommitAccepted { partition: tp, offset, .. },
            ..
        } if tp.partition == partition => Some(*offset),
        _ => None,
    })
}

#[test]
fn a_real_clients_served_run_records_a_history_that_renders_and_passes_the_black_box_rules() {
    const TEST: &str =
        "a_real_clients_served_run_records_a_history_that_renders_and_passes_the_black_box_rules";
    if !real_clients::ready(TEST, Runtime::Python) {
        return;
    }
    let launcher = clients::launcher(clients::CLIENTS[0], &real_clients::interpreters())
        .expect("probing kafka-python")
        .expect("kafka-python was installed but does not import");
    let cluster = Cluster::start(ClusterConfig {
        brokers: 2,
        topics: vec![TopicSpec::new("t", 2).unwrap()],
        preload: 10,
        coordinator: CoordinatorConfig {
            initial_rebalance_delay_ms: 100,
            ..CoordinatorConfig::default()
        },
        label: "served-history-test".into(),
        ..ClusterConfig::default()
    })
    .unwrap();
    let dir = std::env::temp_dir().join(format!("groupsim-served-history-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("m0.jsonl");
    let args: Vec<String> = [
        format!("bootstrap={}", cluster.bootstrap()),
        "topic=t".into(),
        "group=g".into(),
        "client_id=m0.0".into(),
        "commit=sync".into(),
        format!("out={}", log.display()),
    ]
    .into();
    let mut member = Adapter::spawn(&launcher, "m0", &args).unwrap();
    let version = member.wait_ready(Duration::from_secs(30)).unwrap();
    cluster.produce("t", 0, 5).unwrap();
    cluster.produce("t", 1, 5).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while (0..2).any(|p| committed(&cluster.history(), p) != Some(15)) {
        assert!(
            Instant::now() < deadline,
            "kafka-python {version} did not commit 15 on both partitions in 60 s\n{}",
            member.stderr_tail(30)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(member.close(Duration::from_secs(20)), "closes on SIGTERM\n{}", member.stderr_tail(30));
    cluster.recorder().world(WorldEvent::RunEnded);
    let history = cluster.history();
    let started_unix_ms = cluster.recorder().started_unix_ms();
    cluster.shutdown();

    // The same events as a simulated history, from the same coordinator core.
    let coordinator = |f: &dyn Fn(&CoordinatorEvent) -> bool| {
        history
            .events()
            .iter()
            .any(|e| matches!(&e.kind, EventKind::Coordinator { event, .. } if f(event)))
    };
    assert!(coordinator(
        &|e| matches!(e, CoordinatorEvent::MemberAdded { client_id, .. } if client_id == "m0.0")
    ));
    assert!(coordinator(&|e| matches!(e, CoordinatorEvent::AssignmentStored { assignments, .. }
        if assignments.len() == 1 && assignments[0].partitions.len() == 2)));
    let produced: i64 = history
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::World(WorldEvent::Produced { count, .. }) => Some(*count),
            _ => None,
        })
        .sum();
    assert_eq!(produced, 30, "preload 2 x 10 and 2 x 5 produced");

    // It survives a save and load, and renders like a simulated one.
    let loaded = History::from_jsonl(&history.to_jsonl()).unwrap();
    assert_eq!(loaded, history);
    let text = pictures::render(Format::Text, &history, &Verdict::default(), None).unwrap();
    assert!(text.contains("run served-history-test"), "{text}");
    assert!(text.contains("-> Stable"), "{text}");
    for format in [Format::Svg, Format::Html] {
        let picture = pictures::render(format, &history, &Verdict::default(), None).unwrap();
        assert!(picture.contains("<svg"), "{format:?}");
    }

    // The black-box rules accept it: every record processed, nothing lost or split.
    let processed = read_log(&log, started_unix_ms).unwrap();
    let verdict = check_black_box(&history, Some(&processed));
    assert!(verdict.anomalies.is_empty(), "{:?}", verdict.anomalies);
    assert!(verdict.processed >= 30, "processed {}", verdict.processed);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A served history has no member events (real clients report nothing to the broker), so its
/// timeline draws ownership from the coordinator: each generation's stored assignment, on the
/// lane of the process slot check-client started (incarnations `m0.0`, `m0.1` share lane `m0`),
/// until the next generation starts, the member is removed or its process stops.
#[test]
fn a_served_history_draws_each_generations_stored_assignment_as_ownership_bars() {
    use groupsim_history::{MemberAssignment, RemovalReason};
    use groupsim_wire::TopicPartition;

    let mut h = History::new();
    let coord = |event| EventKind::Coordinator { broker: 0, event };
    let group = || "check".to_string();
    let tp = |p| TopicPartition::new("orders", p);
    let started = |member: &str, host: &str| {
        EventKind::World(WorldEvent::MemberStarted {
            member: member.into(),
            group: group(),
            host: host.into(),
        })
    };
    let added = |id: &str, client: &str| {
        coord(CoordinatorEvent::MemberAdded {
            group: group(),
            member_id: id.into(),
            group_instance_id: None,
            client_id: client.into(),
        })
    };
    let generation = |g: i32, members: &[&str]| {
        coord(CoordinatorEvent::GenerationStarted {
            group: group(),
            generation: g,
            protocol: Some("range".into()),
            leader: Some(members[0].into()),
            members: members.iter().map(|m| m.to_string()).collect(),
        })
    };
    let stored = |g: i32, assignments: Vec<(&str, Vec<i32>)>| {
        coord(CoordinatorEvent::AssignmentStored {
            group: group(),
            generation: g,
            assignments: assignments
                .into_iter()
                .map(|(id, ps)| MemberAssignment {
                    member_id: id.into(),
                    partitions: ps.into_iter().map(tp).collect(),
                })
                .collect(),
        })
    };
    h.world(0, WorldEvent::RunStarted { scenario: "check-client fake".into(), seed: 0 });
    h.world(0, WorldEvent::TopicCreated { topic: "orders".into(), partitions: 2 });
    h.record(5, started("m0", "m0.0 pid 1"));
    h.record(6, started("m1", "m1.0 pid 2"));
    h.record(10, added("m0.0-1", "m0.0"));
    h.record(11, added("m1.0-2", "m1.0"));
    h.record(300, generation(1, &["m0.0-1", "m1.0-2"]));
    h.record(305, stored(1, vec![("m0.0-1", vec![0]), ("m1.0-2", vec![1])]));
    h.record(
        2_000,
        coord(CoordinatorEvent::MemberRemoved {
            group: group(),
            member_id: "m0.0-1".into(),
            reason: RemovalReason::SessionTimeout,
        }),
    );
    h.record(2_100, generation(2, &["m1.0-2"]));
    h.record(2_105, stored(2, vec![("m1.0-2", vec![0, 1])]));
    h.record(2_500, EventKind::World(WorldEvent::MemberStopped { member: "m0".into() }));
    h.record(2_600, started("m0", "m0.1 pid 3"));
    h.record(2_610, added("m0.1-3", "m0.1"));
    h.record(3_000, generation(3, &["m1.0-2", "m0.1-3"]));
    h.record(3_005, stored(3, vec![("m1.0-2", vec![1]), ("m0.1-3", vec![0])]));
    h.world(4_000, WorldEvent::RunEnded);

    let svg = pictures::render(Format::Svg, &h, &Verdict::default(), None).unwrap();
    let bars: Vec<&str> = svg
        .split(r#"<rect class="owned""#)
        .skip(1)
        .map(|r| &r[r.find("<title>").unwrap() + 7..r.find("</title>").unwrap()])
        .collect();
    let expected = [
        "m0 generation 1 owns orders[0] (t=305–2000 ms, ended: removed: SessionTimeout)",
        "m0 generation 3 owns orders[0] (t=3005–4000 ms, ended: run ended)",
        "m1 generation 1 owns orders[1] (t=305–2100 ms, ended: generation 2 started)",
        "m1 generation 2 owns orders[0-1] (t=2105–3000 ms, ended: generation 3 started)",
        "m1 generation 3 owns orders[1] (t=3005–4000 ms, ended: run ended)",
    ];
    for bar in expected {
        assert!(bars.contains(&bar), "missing bar {bar:?} in {bars:#?}");
    }
    assert_eq!(bars.len(), expected.len(), "{bars:#?}");
    assert!(!svg.contains(">m0.0<") && !svg.contains(">m0.1<"), "incarnations share lane m0");
}
