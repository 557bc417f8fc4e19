//! At the rebalance timeout's edge: members that miss the end of a join phase by a hair.

use groupsim_member::ClientProfile;
use rand::RngExt;

use super::profiles::mixed_member_config;
use super::shape::{at, base};
use crate::faults::{Fault, FaultSchedule};
use crate::scenario::{liveness_bound, ScenarioSpec};
use crate::triggers::{Trigger, TriggerAction, TriggerEvent};

/// The session timeout of the static members: longer than the rebalance timeout, as static
/// membership is used to ride out restarts without a rebalance.
const STATIC_SESSION_MS: i32 = 25_000;

/// brod's default session timeout (`session_timeout_seconds`, 30 s), kept by the brod and Elsa
/// members while their rebalance timeout is the group's 15 s. brod's coordinator process does
/// not heartbeat while its revoke callback runs, so only a session longer than the rebalance
/// timeout leaves the join phase's end, not the session, to remove a member slow to revoke.
const BROD_SESSION_MS: i32 = 30_000;

/// The end of a join phase, met late. brod and Elsa members (m0-m2, m5) commit after their revoke
/// callback; triggers make the revoke callbacks of members drawn at each rebalance return just
/// before the rebalance timeout ends the join phase, so the commit is validated in the old generation and its offsets-log
/// append (an ISR round trip, 40-50 ms here) completes after the member was removed: Kafka
/// lands it all the same. Two static Java members (m3, m4) run with a session timeout longer
/// than the rebalance timeout; each is paused past the rebalance timeout but within its session
/// while the group rebalances (m5 joins, later leaves and comes back): the join phase ends without it, Kafka
/// keeps it in the new generation, and when it resumes its heartbeat and commit carry the old
/// generation (ILLEGAL_GENERATION) until it rejoins.
pub fn rebalance_timeout(seed: u64) -> ScenarioSpec {
    let (mut s, mut rng) = base("rebalance_timeout", seed, 6, 1, 3, 60_000);
    s.coordinator.offsets_append_delay_ms = rng.random_range(40..=50);
    // Kafka's default initial rebalance delay: the members starting within 3 s form the first
    // generation together, so the first rebalance of a formed group is m5's join.
    s.coordinator.initial_rebalance_delay_ms = 3_000;
    let profiles = [
        ClientProfile::Brod,
        ClientProfile::Elsa,
        ClientProfile::Brod,
        ClientProfile::JavaEager,
        ClientProfile::JavaEager,
        ClientProfile::Elsa,
    ];
    for (m, profile) in s.members.iter_mut().zip(profiles) {
        m.config = mixed_member_config(&m.name, profile);
    }
    // Busy partitions and a busy application: when a member starts to give its partitions up,
    // a batch is usually in progress (brod detaches it and collects its ack before the commit),
    // so there is progress to commit after the callback.
    s.producer.records_per_sec = (20, 40);
    for i in [0, 1, 2, 5] {
        s.members[i].config.session_timeout_ms = BROD_SESSION_MS;
        s.members[i].config.processing_ms_per_record = (4, 12);
    }
    for m in &mut s.members[3..5] {
        m.config.group_instance_id = Some(format!("instance-{}", m.name));
        m.config.session_timeout_ms = STATIC_SESSION_MS;
    }
    let joins = 12_000 + rng.random_range(0..2_000);
    s.members[5].start_ms = joins;
    let leaves = 32_000 + rng.random_range(0..2_000);
    let mut faults = Vec::new();
    for (member, rebalance_at) in [("m3", joins), ("m4", leaves)] {
        let pause_at = rebalance_at - rng.random_range(500..1_500);
        let duration_ms = rng.random_range(17_500..21_000);
        faults.push(at(pause_at, Fault::MemberPause { member: member.into(), duration_ms }));
    }
    let restart_after_ms = rng.random_range(2_000..4_000);
    faults.push(at(leaves, Fault::MemberLeave { member: "m5".into(), restart_after_ms }));
    // Four members of each rebalance's generation, drawn, are slow to give their partitions up:
    // their revoke callback returns a few tens of milliseconds before the join phase ends.
    let triggers: Vec<Trigger> = (0..4)
        .map(|id| Trigger {
            id,
            on: TriggerEvent::PreparingRebalance,
            action: TriggerAction::SlowRevokeToDeadline { margin_ms: rng.random_range(20..=35) },
            per_mille: 1_000,
            max_fires: 2,
            after_ms: None,
        })
        .collect();
    s.faults = FaultSchedule::new(faults).with_triggers(triggers);
    s.liveness_bound_ms = 2 * liveness_bound(&s.members[0].config, &s.coordinator);
    s
}

#[cfg(test)]
mod tests {
    use groupsim_wire::Millis;

    use super::*;

    #[test]
    fn static_members_outlive_the_rebalance_timeout_and_their_pauses_fit_their_session() {
        for seed in 0..20 {
            let s = rebalance_timeout(seed);
            let rebalance_ms = s.members[3].config.rebalance_timeout_ms as Millis;
            for f in &s.faults.faults {
                if let Fault::MemberPause { duration_ms, .. } = f.fault {
                    assert!(duration_ms > rebalance_ms, "seed {seed}: {duration_ms}");
                    // A heartbeat may be up to one interval old when the pause begins.
                    let heartbeat = s.members[3].config.heartbeat_interval_ms;
                    assert!(duration_ms + heartbeat < STATIC_SESSION_MS as Millis, "seed {seed}");
                }
            }
            let ap = s.coordinator.offsets_append_delay_ms;
            assert!((40..=50).contains(&ap), "seed {seed}: {ap}");
        }
    }
}
