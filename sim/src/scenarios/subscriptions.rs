//! Members of one group subscribed to different topics: the leader must fetch metadata for
//! topics only others subscribe to, and each assignor must give a topic's partitions to its
//! subscribers only.

use groupsim_member::{AssignorKind, ClientProfile};
use groupsim_wire::Millis;
use rand::RngExt;

use super::shape::{at, base};
use crate::faults::{Fault, FaultSchedule};
use crate::rng::{self, Stream};
use crate::scenario::{widest_liveness_bound, ScenarioSpec, GROUP_ID};

/// The topics and their partition counts.
const TOPICS: [(&str, i32); 3] = [("orders", 8), ("payments", 4), ("audit", 3)];

/// The subscriptions a member draws from.
const SUBSCRIPTIONS: [&[&str]; 6] = [
    &["orders"],
    &["payments"],
    &["orders", "payments"],
    &["payments", "audit"],
    &["audit", "orders"],
    &["orders", "payments", "audit"],
];

/// The group's client and assignor, drawn from the seed: Java eager with `range`, `roundrobin`
/// or `sticky`, or Java cooperative with `cooperative-sticky`.
fn client(n: u32) -> (ClientProfile, AssignorKind) {
    match n {
        0 => (ClientProfile::JavaEager, AssignorKind::Range),
        1 => (ClientProfile::JavaEager, AssignorKind::RoundRobin),
        2 => (ClientProfile::JavaEager, AssignorKind::Sticky),
        _ => (ClientProfile::JavaCooperative, AssignorKind::CooperativeSticky),
    }
}

/// Six classic Java members on three topics, each subscribed to one to three of them (drawn;
/// every topic has a subscriber): the group's leader often subscribes to fewer topics than the
/// group, so it asks for the others' metadata before it assigns. Three members bounce (leave
/// and come back 2–4 s later, as new members), connections drop now and then, and the
/// coordinator moves once.
pub fn mixed_subscriptions(seed: u64) -> ScenarioSpec {
    let (mut s, mut rng) = base("mixed_subscriptions", seed, 6, 3, 2, 60_000);
    s.topics = TOPICS.iter().map(|(t, n)| (t.to_string(), *n)).collect();
    let (profile, assignor) = client(rng.random_range(0..4));
    let mut subscribed = [false; TOPICS.len()];
    let count = s.members.len();
    for (i, m) in s.members.iter_mut().enumerate() {
        let mut topics: Vec<String> = SUBSCRIPTIONS[rng.random_range(0..SUBSCRIPTIONS.len())]
            .iter()
            .map(|t| t.to_string())
            .collect();
        if i + 1 == count {
            // The last member takes up whatever topic nobody else subscribed to.
            for (k, (topic, _)) in TOPICS.iter().enumerate() {
                if !subscribed[k] && !topics.iter().any(|t| t == topic) {
                    topics.push(topic.to_string());
                }
            }
        }
        for (k, (topic, _)) in TOPICS.iter().enumerate() {
            subscribed[k] |= topics.iter().any(|t| t == topic);
        }
        m.config.topics = topics;
        m.config.profile = profile;
        m.config.assignors = vec![assignor];
    }
    s.liveness_bound_ms = widest_liveness_bound(&s.members, &s.coordinator);

    let mut frng = rng::stream(seed, Stream::Faults);
    let mut faults = Vec::new();
    let mut t: Millis = 10_000;
    for i in [0u32, 2, 4] {
        t += frng.random_range(4_000..9_000);
        let member = format!("m{}", (i + frng.random_range(0..2)) % 6);
        faults.push(at(
            t,
            Fault::MemberLeave { member, restart_after_ms: frng.random_range(2_000..4_000) },
        ));
    }
    let mut drop_at = frng.random_range(5_000..9_000);
    while drop_at < 54_000 {
        let member = format!("m{}", frng.random_range(0..6));
        faults.push(at(drop_at, Fault::ConnectionDrop { member }));
        drop_at += frng.random_range(4_000..10_000);
    }
    let to = frng.random_range(0..s.brokers);
    let load_ms = frng.random_range(0..=2_000);
    faults.push(at(
        frng.random_range(15_000..50_000),
        Fault::CoordinatorMove { group: GROUP_ID.into(), to, load_ms },
    ));
    faults.sort_by_key(|f| f.at_ms);
    s.faults = FaultSchedule::new(faults);
    s
}
