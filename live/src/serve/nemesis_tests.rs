//! The nemesis against a real loopback cluster: faults land when due, are recorded in the
//! history, and heal.

use std::io::Read;
use std::net::TcpStream;

use super::super::config::{ClusterConfig, TopicSpec};
use groupsim_history::{ConsumerGroupEvent, CoordinatorEvent, EventKind, TargetShare};
use groupsim_wire::TopicPartition;

use super::super::faults::{GroupApi, InjectedError};
use super::*;
use groupsim::faults::ScheduledFault;

fn cluster(brokers: usize) -> Cluster {
    Cluster::start(ClusterConfig {
        brokers,
        topics: vec![TopicSpec::new("t", 2).unwrap()],
        ..ClusterConfig::default()
    })
    .unwrap()
}

fn schedule(faults: Vec<(Millis, Fault)>) -> ServeSchedule {
    ServeSchedule::new(
        faults.into_iter().map(|(at_ms, fault)| ScheduledFault { at_ms, fault }).collect(),
    )
}

fn world_events(cluster: &Cluster) -> Vec<WorldEvent> {
    cluster
        .history()
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::World(w) => Some(w.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn a_reset_of_all_connections_closes_an_idle_client_socket() {
    let cluster = cluster(1);
    let mut socket = TcpStream::connect(cluster.addrs()[0]).unwrap();
    socket.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    std::thread::sleep(Duration::from_millis(50)); // the connection task is serving
    let reset = Fault::ConnectionReset { broker: None };
    let mut nemesis = Nemesis::new(&cluster, schedule(vec![(0, reset.clone())]), "g", 1);
    nemesis.step(&cluster);
    assert!(nemesis.done());
    let mut buf = [0u8; 8];
    let n = socket.read(&mut buf).expect("the broker closes the socket, no timeout");
    assert_eq!(n, 0, "EOF: the nemesis closed the connection");
    let recorded = WorldEvent::FaultInjected { fault: reset, applied: true };
    assert!(world_events(&cluster).contains(&recorded));
    cluster.shutdown();
}

#[test]
fn a_broker_goes_down_and_comes_back_after_its_outage_and_the_last_one_stays_up() {
    let cluster = cluster(2);
    let down = Fault::BrokerCrash { node: 1, restart_after_ms: 100 };
    let last = Fault::BrokerCrash { node: 0, restart_after_ms: 100 };
    let mut nemesis = Nemesis::new(&cluster, schedule(vec![(0, down), (0, last)]), "g", 1);
    nemesis.step(&cluster);
    assert!(!cluster.is_running(1));
    assert!(cluster.is_running(0), "the last live broker is not taken down");
    std::thread::sleep(Duration::from_millis(150));
    nemesis.step(&cluster);
    assert!(cluster.is_running(1), "back after its outage");
    let events = world_events(&cluster);
    let crash = |node, applied| WorldEvent::FaultInjected {
        fault: groupsim_history::Fault::BrokerCrash { node, restart_after_ms: 100 },
        applied,
    };
    assert!(events.contains(&crash(1, true)) && events.contains(&crash(0, false)), "{events:?}");
    assert!(events.contains(&WorldEvent::BrokerRestarted { node: 1 }));
    cluster.shutdown();
}

#[test]
fn faults_are_applied_only_when_due_and_none_after_the_heal() {
    let cluster = cluster(1);
    let inject = Fault::InjectError {
        api: GroupApi::Heartbeat,
        error: InjectedError::NotCoordinator,
        count: 1,
    };
    let mut nemesis =
        Nemesis::new(&cluster, schedule(vec![(0, inject.clone()), (60_000, inject)]), "g", 1);
    nemesis.step(&cluster);
    assert!(!nemesis.done(), "the second fault is a minute away");
    nemesis.heal(&cluster);
    nemesis.step(&cluster);
    let faults = world_events(&cluster)
        .into_iter()
        .filter(|w| matches!(w, WorldEvent::FaultInjected { .. }))
        .count();
    assert_eq!(faults, 1);
    assert!(world_events(&cluster).iter().any(|w| matches!(w,
        WorldEvent::FaultHealed { description } if description.starts_with("heal phase"))));
    cluster.shutdown();
}

/// A trigger that always fires, dropping its target's connections.
fn always(id: u32, on: TriggerEvent) -> Trigger {
    Trigger {
        id,
        on,
        action: TriggerAction::DropConnections,
        per_mille: 1000,
        max_fires: 1,
        after_ms: None,
    }
}

/// The faults the nemesis recorded as triggered: (trigger label, the member struck).
fn fired(cluster: &Cluster) -> Vec<(String, Fault)> {
    let events = world_events(cluster);
    let mut out = Vec::new();
    for pair in events.windows(2) {
        if let [WorldEvent::TriggerFired { trigger, .. }, WorldEvent::FaultInjected { fault, .. }] =
            pair
        {
            let groupsim_history::Fault::ConnectionDrop { member } = fault else { continue };
            out.push((trigger.clone(), Fault::ConnectionDrop { member: member.clone() }));
        }
    }
    out
}

#[test]
fn serves_triggers_fire_from_the_shared_watch_on_a_classic_group() {
    let cluster = cluster(1);
    let mut s = schedule(Vec::new());
    s.triggers = vec![always(0, TriggerEvent::CompletingRebalance)];
    let mut nemesis = Nemesis::new(&cluster, s, "", 1);
    let coordinator = |event| cluster.recorder().history_coordinator(0, event);
    for (id, client) in [("id-b", "m1.0"), ("id-a", "m0.0")] {
        coordinator(CoordinatorEvent::MemberAdded {
            group: "g".into(),
            member_id: id.into(),
            group_instance_id: None,
            client_id: client.into(),
        });
    }
    coordinator(CoordinatorEvent::GroupStateChanged {
        group: "g".into(),
        from: groupsim_history::GroupState::PreparingRebalance,
        to: groupsim_history::GroupState::CompletingRebalance,
        generation: 1,
    });
    coordinator(CoordinatorEvent::GenerationStarted {
        group: "g".into(),
        generation: 1,
        protocol: Some("range".into()),
        leader: Some("id-b".into()),
        members: vec!["id-a".into(), "id-b".into()],
    });
    nemesis.step(&cluster);
    // The watch reports CompletingRebalance once the generation's leader is known, named by
    // its client id, as in the simulation.
    let fired = fired(&cluster);
    assert_eq!(fired.len(), 1, "{fired:?}");
    assert!(fired[0].0.contains("completing_rebalance"), "{fired:?}");
    assert_eq!(fired[0].1, Fault::ConnectionDrop { member: "m1.0".into() });
    assert_eq!(nemesis.group(), "g", "the first group that forms");
    assert_eq!(nemesis.resolve("#3"), Some(("id-b".to_string(), "m1.0".to_string())));
    assert_eq!(nemesis.resolve("m0"), Some(("id-a".to_string(), "m0.0".to_string())));
    cluster.shutdown();
}

#[test]
fn a_consumer_groups_revocation_fires_a_trigger_at_the_new_owner_as_in_the_simulation() {
    let cluster = cluster(1);
    let mut s = schedule(Vec::new());
    s.triggers = vec![always(0, TriggerEvent::RevocationRequested)];
    let mut nemesis = Nemesis::new(&cluster, s, "cg", 1);
    let cg = |e: ConsumerGroupEvent| {
        cluster.recorder().history_coordinator(0, CoordinatorEvent::ConsumerGroup(e))
    };
    // Another group's events are not the watched group's.
    for (group, member, client) in [("other", "x", "x.0"), ("cg", "a", "m0.0"), ("cg", "b", "m1.0")]
    {
        cg(ConsumerGroupEvent::MemberJoined {
            group: group.into(),
            member_id: member.into(),
            group_instance_id: None,
            client_id: client.into(),
            classic_protocol: false,
        });
    }
    let tp = TopicPartition::new("t", 0);
    cg(ConsumerGroupEvent::TargetAssignmentComputed {
        group: "cg".into(),
        epoch: 2,
        assignor: "uniform".into(),
        assignments: vec![TargetShare { member_id: "b".into(), partitions: vec![tp.clone()] }],
    });
    cg(ConsumerGroupEvent::PartitionsRevoking {
        group: "cg".into(),
        member_id: "a".into(),
        member_epoch: 2,
        partitions: vec![tp],
    });
    nemesis.step(&cluster);
    let fired = fired(&cluster);
    assert_eq!(fired.len(), 1, "{fired:?}");
    assert!(fired[0].0.contains("revocation_requested"), "{fired:?}");
    assert_eq!(fired[0].1, Fault::ConnectionDrop { member: "m1.0".into() }, "the new owner");
    assert_eq!(nemesis.resolve("#0").map(|(id, _)| id), Some("a".to_string()));
    assert_eq!(nemesis.resolve("x"), None, "not a member of the watched group");
    cluster.shutdown();
}

#[test]
fn a_pick_with_no_members_is_recorded_as_not_applied() {
    let cluster = cluster(1);
    let expel = Fault::ExpelMember { member: "#4".into() };
    let mut nemesis = Nemesis::new(&cluster, schedule(vec![(0, expel.clone())]), "g", 1);
    nemesis.step(&cluster);
    let recorded = WorldEvent::FaultInjected { fault: expel, applied: false };
    assert!(world_events(&cluster).contains(&recorded));
    cluster.shutdown();
}
