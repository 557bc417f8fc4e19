//! The nemesis against a real loopback cluster: faults land when due, are recorded in the
//! history, and heal.

use std::io::Read;
use std::net::TcpStream;

use super::super::config::{ClusterConfig, TopicSpec};
use super::super::faults::{GroupApi, InjectedError, TimedServeFault};
use super::*;

fn cluster(brokers: usize) -> Cluster {
    Cluster::start(ClusterConfig {
        brokers,
        topics: vec![TopicSpec::new("t", 2).unwrap()],
        ..ClusterConfig::default()
    })
    .unwrap()
}

fn schedule(faults: Vec<(Millis, ServeFault)>) -> ServeSchedule {
    ServeSchedule {
        faults: faults.into_iter().map(|(at_ms, fault)| TimedServeFault { at_ms, fault }).collect(),
        triggers: Vec::new(),
    }
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
    let reset = ServeFault::ConnectionReset { scope: ResetScope::All };
    let mut nemesis = Nemesis::new(&cluster, schedule(vec![(0, reset)]), "g", 1);
    nemesis.step(&cluster);
    assert!(nemesis.done());
    let mut buf = [0u8; 8];
    let n = socket.read(&mut buf).expect("the broker closes the socket, no timeout");
    assert_eq!(n, 0, "EOF: the nemesis closed the connection");
    assert!(world_events(&cluster).iter().any(|w| matches!(w,
        WorldEvent::ServeFault { description, .. } if description == "connection reset: all")));
    cluster.shutdown();
}

#[test]
fn a_broker_goes_down_and_comes_back_after_its_outage_and_the_last_one_stays_up() {
    let cluster = cluster(2);
    let down = ServeFault::BrokerDown { broker: 1, down_ms: 100 };
    let last = ServeFault::BrokerDown { broker: 0, down_ms: 100 };
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
    let inject = ServeFault::InjectError {
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
        .filter(|w| matches!(w, WorldEvent::ServeFault { .. }))
        .count();
    assert_eq!(faults, 1);
    assert!(world_events(&cluster).iter().any(|w| matches!(w,
        WorldEvent::FaultHealed { description } if description.starts_with("heal phase"))));
    cluster.shutdown();
}

#[test]
fn a_consumer_group_is_watched_from_its_own_events_and_its_moments_fire_triggers() {
    use groupsim_history::TargetShare;
    let cluster = cluster(1);
    let mut nemesis = Nemesis::new(&cluster, schedule(Vec::new()), "", 1);
    let cg = |e: ConsumerGroupEvent| CoordinatorEvent::ConsumerGroup(e);
    for (member, client) in [("b", "m1.0"), ("a", "m0.0")] {
        let joined = ConsumerGroupEvent::MemberJoined {
            group: "cg".into(),
            member_id: member.into(),
            group_instance_id: None,
            client_id: client.into(),
            classic_protocol: false,
        };
        assert_eq!(nemesis.watch_event(&cg(joined)), None);
    }
    assert_eq!(nemesis.group, "cg", "the first group that forms");
    assert_eq!(nemesis.watch.members, vec!["a".to_string(), "b".to_string()]);
    assert_eq!(nemesis.pick_client(3), Some("m1.0".to_string()));
    let target = ConsumerGroupEvent::TargetAssignmentComputed {
        group: "cg".into(),
        epoch: 3,
        assignor: "uniform".into(),
        assignments: ["a", "b"]
            .iter()
            .map(|m| TargetShare { member_id: m.to_string(), partitions: Vec::new() })
            .collect(),
    };
    assert_eq!(
        nemesis.watch_event(&cg(target)),
        Some((TriggerEvent::CompletingRebalance, "b".to_string()))
    );
    let parts = |kind: &str| {
        let (group, member_id, member_epoch, partitions) = ("cg".into(), "a".into(), 3, vec![]);
        match kind {
            "revoking" => ConsumerGroupEvent::PartitionsRevoking {
                group,
                member_id,
                member_epoch,
                partitions,
            },
            _ => ConsumerGroupEvent::PartitionsAssigned {
                group,
                member_id,
                member_epoch,
                partitions,
            },
        }
    };
    assert_eq!(
        nemesis.watch_event(&cg(parts("revoking"))),
        Some((TriggerEvent::JoinResponses, "a".to_string()))
    );
    assert_eq!(
        nemesis.watch_event(&cg(parts("assigned"))),
        Some((TriggerEvent::SyncResponses, "a".to_string()))
    );
    let removed = ConsumerGroupEvent::MemberRemoved {
        group: "cg".into(),
        member_id: "a".into(),
        member_epoch: 3,
        reason: groupsim_history::ConsumerRemovalReason::SessionTimeout,
    };
    nemesis.watch_event(&cg(removed));
    assert_eq!(nemesis.watch.members, vec!["b".to_string()]);
    cluster.shutdown();
}
