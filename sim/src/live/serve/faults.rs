//! The served cluster's fault vocabulary and its seeded schedule: what `serve --seed N` and
//! `check-client` apply at the brokers on real time. Faults the simulation also has (connection
//! drops, latency, coordinator moves, broker crashes, partition growth) are recorded in the
//! history as the simulation's [`Fault`]s; the rest (a broker that stops answering, a held-back
//! answer, an injected error answer, a forced rebalance, an expelled member) as
//! `WorldEvent::ServeFault`. Targets among the group's members are picks (an index taken modulo
//! the members there are when the fault lands): real clients decide who is there, so a seed
//! reapplies the same schedule, not the same run.

use std::fmt;

use groupsim_member::GroupProtocol;
use groupsim_wire::Millis;
use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::rng::{self, Stream};
use crate::triggers::{self, Trigger, TriggerAction, TriggerEvent};

/// Which connections a reset closes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ResetScope {
    /// Every connection to every broker.
    All,
    /// Every connection to one broker.
    Broker(i32),
    /// Every connection of one group member's client (a pick).
    Member(u32),
    /// Only the connection a member's client sends its group requests on, while it has nothing
    /// in flight there, leaving its fetch connections open (a pick).
    CoordinatorConnection(u32),
}

/// The group APIs an answer can be held back on or replaced with an error for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum GroupApi {
    JoinGroup,
    SyncGroup,
    Heartbeat,
    OffsetCommit,
    OffsetFetch,
    /// KIP-848's one membership API.
    ConsumerGroupHeartbeat,
}

impl GroupApi {
    /// The APIs a classic group's members send, in draw order.
    pub const CLASSIC: [GroupApi; 5] = [
        GroupApi::JoinGroup,
        GroupApi::SyncGroup,
        GroupApi::Heartbeat,
        GroupApi::OffsetCommit,
        GroupApi::OffsetFetch,
    ];

    /// The APIs a consumer group's (KIP-848) members send, in draw order.
    pub const CONSUMER: [GroupApi; 3] =
        [GroupApi::ConsumerGroupHeartbeat, GroupApi::OffsetCommit, GroupApi::OffsetFetch];

    /// The APIs a schedule for `protocol`'s members draws from.
    pub fn drawn(protocol: GroupProtocol) -> &'static [GroupApi] {
        match protocol {
            GroupProtocol::Classic => &Self::CLASSIC,
            GroupProtocol::Consumer => &Self::CONSUMER,
        }
    }

    /// The error answers Kafka itself gives on this API to `protocol`'s members (so a client
    /// must handle them). While a group loads Kafka answers a Heartbeat with no error and a
    /// SyncGroup with REBALANCE_IN_PROGRESS, never COORDINATOR_LOAD_IN_PROGRESS, so neither gets
    /// that one. Kafka 4's group coordinator maps a timed-out write to COORDINATOR_NOT_AVAILABLE
    /// and never tells a consumer-protocol member REBALANCE_IN_PROGRESS, so a consumer group's
    /// commits and heartbeats get the three coordinator errors only.
    pub fn errors(self, protocol: GroupProtocol) -> &'static [InjectedError] {
        use InjectedError::*;
        const COORDINATOR: &[InjectedError] =
            &[NotCoordinator, CoordinatorLoadInProgress, CoordinatorNotAvailable];
        if protocol == GroupProtocol::Consumer {
            return COORDINATOR;
        }
        match self {
            GroupApi::OffsetCommit => &[
                NotCoordinator,
                CoordinatorLoadInProgress,
                CoordinatorNotAvailable,
                RebalanceInProgress,
                RequestTimedOut,
            ],
            GroupApi::Heartbeat | GroupApi::SyncGroup => {
                &[NotCoordinator, CoordinatorNotAvailable, RebalanceInProgress]
            }
            GroupApi::JoinGroup | GroupApi::OffsetFetch | GroupApi::ConsumerGroupHeartbeat => {
                COORDINATOR
            }
        }
    }
}

/// An error answer the nemesis gives instead of the coordinator's (the request is not applied).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum InjectedError {
    NotCoordinator,
    CoordinatorLoadInProgress,
    CoordinatorNotAvailable,
    RebalanceInProgress,
    RequestTimedOut,
}

impl InjectedError {
    /// Kafka's error code.
    pub fn code(self) -> i16 {
        match self {
            InjectedError::RequestTimedOut => 7,
            InjectedError::CoordinatorLoadInProgress => 14,
            InjectedError::CoordinatorNotAvailable => 15,
            InjectedError::NotCoordinator => 16,
            InjectedError::RebalanceInProgress => 27,
        }
    }
}

/// One fault the served cluster's nemesis applies.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ServeFault {
    /// Connections are closed (in-flight answers are lost).
    ConnectionReset { scope: ResetScope },
    /// Every answer of `broker` (all brokers when `None`) is delayed by `delay_ms` for a while.
    ResponseDelay { broker: Option<i32>, delay_ms: Millis, duration_ms: Millis },
    /// A broker accepts and reads requests but answers none for `duration_ms` (answers then go
    /// out, to whoever is still connected).
    Unresponsive { broker: i32, duration_ms: Millis },
    /// A broker goes down (listener and connections closed, state lost) and comes back.
    BrokerDown { broker: i32, down_ms: Millis },
    /// The group's coordinator moves to the next live broker, whose load takes `load_ms`.
    CoordinatorMove { load_ms: Millis },
    /// The next answer to `api` is held back `hold_ms` (past the client's timeouts); a held
    /// OffsetCommit answer (the commit is applied) also waits for the group's next generation,
    /// so an old generation's commit is answered only after the next JoinGroup.
    HoldResponse { api: GroupApi, hold_ms: Millis },
    /// The next `count` requests of `api` get `error` instead of reaching the coordinator.
    InjectError { api: GroupApi, error: InjectedError, count: u32 },
    /// The coordinator starts a rebalance of the group, as a membership change would.
    ForceRebalance,
    /// A member (a pick) is expelled as if its session had expired.
    ExpelMember { pick: u32 },
}

impl fmt::Display for ServeFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServeFault::ConnectionReset { scope } => match scope {
                ResetScope::All => write!(f, "connection reset: all"),
                ResetScope::Broker(b) => write!(f, "connection reset: broker-{b}"),
                ResetScope::Member(p) => write!(f, "connection reset: member #{p}"),
                ResetScope::CoordinatorConnection(p) => {
                    write!(f, "connection reset: member #{p}'s idle coordinator connection")
                }
            },
            ServeFault::ResponseDelay { broker, delay_ms, duration_ms } => {
                let on = broker.map_or("all brokers".to_string(), |b| format!("broker-{b}"));
                write!(f, "response delay: {on} +{delay_ms} ms for {duration_ms} ms")
            }
            ServeFault::Unresponsive { broker, duration_ms } => {
                write!(f, "unresponsive: broker-{broker} answers nothing for {duration_ms} ms")
            }
            ServeFault::BrokerDown { broker, down_ms } => {
                write!(f, "broker down: broker-{broker} for {down_ms} ms")
            }
            ServeFault::CoordinatorMove { load_ms } => {
                write!(f, "coordinator move to the next broker (load {load_ms} ms)")
            }
            ServeFault::HoldResponse { api, hold_ms } => {
                write!(f, "hold the next {api:?} answer {hold_ms} ms")
            }
            ServeFault::InjectError { api, error, count } => {
                write!(f, "answer the next {count} {api:?} with {error:?}")
            }
            ServeFault::ForceRebalance => write!(f, "forced rebalance"),
            ServeFault::ExpelMember { pick } => write!(f, "expel member #{pick} (session expiry)"),
        }
    }
}

/// A fault and when it lands, in ms after the fault phase starts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimedServeFault {
    pub at_ms: Millis,
    pub fault: ServeFault,
}

/// A seed's fault schedule at the brokers.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServeSchedule {
    /// Timed faults, in order.
    pub faults: Vec<TimedServeFault>,
    /// Event triggers (issue 10's), for the events a served cluster sees.
    pub triggers: Vec<Trigger>,
}

/// What a schedule is drawn for.
#[derive(Clone, Copy, Debug)]
pub struct ScheduleShape {
    /// Brokers in the cluster.
    pub brokers: i32,
    /// How long the fault phase lasts.
    pub duration_ms: Millis,
    /// Mean gap between faults.
    pub mean_gap_ms: Millis,
    /// The members' session timeout (sizes holds and outages around it).
    pub session_timeout_ms: Millis,
    /// Whether client-process trigger actions (pause, crash) have someone to apply them.
    pub client_actions: bool,
    /// The protocol the group's members speak: which APIs holds and injected errors target.
    pub protocol: GroupProtocol,
}

/// The events a served cluster can fire triggers on (the others need member-side probes).
pub const SERVED_TRIGGER_EVENTS: [TriggerEvent; 4] = [
    TriggerEvent::CompletingRebalance,
    TriggerEvent::JoinResponses,
    TriggerEvent::SyncResponses,
    TriggerEvent::CommitAppended,
];

/// Draws the schedule of `seed`: the same seed and shape, the same schedule.
pub fn draw(seed: u64, shape: ScheduleShape) -> ServeSchedule {
    let mut rng = rng::stream(seed, Stream::Faults);
    let mut faults = Vec::new();
    let gap = shape.mean_gap_ms.max(100);
    let mut at = rng.random_range(gap / 2..=gap);
    while at < shape.duration_ms {
        faults.push(TimedServeFault { at_ms: at, fault: draw_fault(&mut rng, shape) });
        at += rng.random_range(gap / 2..=gap * 3 / 2);
    }
    let mut trigger_rng = rng::stream(seed, Stream::Triggers);
    let triggers = triggers::draw(&mut trigger_rng, shape.session_timeout_ms, shape.brokers > 1)
        .into_iter()
        .filter(|t| SERVED_TRIGGER_EVENTS.contains(&t.on))
        .filter(|t| {
            shape.client_actions
                || matches!(
                    t.action,
                    TriggerAction::DropConnections | TriggerAction::MoveCoordinator { .. }
                )
        })
        .collect();
    ServeSchedule { faults, triggers }
}

fn draw_fault(rng: &mut ChaCha8Rng, shape: ScheduleShape) -> ServeFault {
    let broker = rng.random_range(0..shape.brokers.max(1));
    let pick = rng.random_range(0..1_000u32);
    let session = shape.session_timeout_ms.max(1_000);
    let apis = GroupApi::drawn(shape.protocol);
    let api = apis[rng.random_range(0..apis.len())];
    match rng.random_range(0..100u32) {
        0..=14 => {
            let scope = match rng.random_range(0..4u32) {
                0 => ResetScope::All,
                1 => ResetScope::Broker(broker),
                2 => ResetScope::Member(pick),
                _ => ResetScope::CoordinatorConnection(pick),
            };
            ServeFault::ConnectionReset { scope }
        }
        15..=24 => ServeFault::ResponseDelay {
            broker: rng.random_bool(0.5).then_some(broker),
            delay_ms: rng.random_range(20..=800),
            duration_ms: rng.random_range(1_000..=5_000),
        },
        25..=31 => ServeFault::Unresponsive {
            broker,
            duration_ms: rng.random_range(session / 4..=session * 3 / 2),
        },
        32..=38 if shape.brokers > 1 => {
            ServeFault::BrokerDown { broker, down_ms: rng.random_range(1_000..=6_000) }
        }
        39..=47 if shape.brokers > 1 => {
            ServeFault::CoordinatorMove { load_ms: rng.random_range(0..=3_000) }
        }
        48..=57 => {
            ServeFault::HoldResponse { api, hold_ms: rng.random_range(session / 2..=session * 2) }
        }
        58..=79 => {
            let errors = api.errors(shape.protocol);
            let error = errors[rng.random_range(0..errors.len())];
            ServeFault::InjectError { api, error, count: rng.random_range(1..=3) }
        }
        80..=89 => ServeFault::ForceRebalance,
        90..=99 => ServeFault::ExpelMember { pick },
        _ => ServeFault::ForceRebalance,
    }
}

impl fmt::Display for ServeSchedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for t in &self.faults {
            writeln!(f, "  t+{:>6} ms  {}", t.at_ms, t.fault)?;
        }
        for t in &self.triggers {
            writeln!(f, "  trigger {t}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(brokers: i32) -> ScheduleShape {
        ScheduleShape {
            brokers,
            duration_ms: 30_000,
            mean_gap_ms: 1_500,
            session_timeout_ms: 6_000,
            client_actions: false,
            protocol: GroupProtocol::Classic,
        }
    }

    #[test]
    fn a_seed_draws_the_same_schedule_and_faults_land_inside_the_phase() {
        let a = draw(7, shape(3));
        assert_eq!(a, draw(7, shape(3)));
        assert_ne!(a, draw(8, shape(3)));
        assert!(a.faults.len() >= 10, "{a}");
        assert!(a.faults.windows(2).all(|w| w[0].at_ms < w[1].at_ms));
        assert!(a.faults.iter().all(|t| t.at_ms < 30_000));
    }

    #[test]
    fn a_consumer_group_schedule_targets_its_own_apis_with_kafkas_errors_for_them() {
        let consumer = ScheduleShape { protocol: GroupProtocol::Consumer, ..shape(3) };
        let mut seen = std::collections::BTreeSet::new();
        for seed in 0..40 {
            for t in &draw(seed, consumer).faults {
                let api = match &t.fault {
                    ServeFault::HoldResponse { api, .. } => *api,
                    ServeFault::InjectError { api, error, .. } => {
                        assert_ne!(*error, InjectedError::RebalanceInProgress, "{}", t.fault);
                        assert_ne!(*error, InjectedError::RequestTimedOut, "{}", t.fault);
                        *api
                    }
                    _ => continue,
                };
                assert!(GroupApi::CONSUMER.contains(&api), "{}", t.fault);
                seen.insert(api);
            }
        }
        assert_eq!(seen.len(), 3, "every consumer-group API is drawn: {seen:?}");
        // The classic draw is the one it always was: same seed, same schedule as before the
        // consumer APIs existed (no ConsumerGroupHeartbeat in it).
        for seed in 0..40 {
            assert!(draw(seed, shape(3)).faults.iter().all(|t| !matches!(
                t.fault,
                ServeFault::HoldResponse { api: GroupApi::ConsumerGroupHeartbeat, .. }
                    | ServeFault::InjectError { api: GroupApi::ConsumerGroupHeartbeat, .. }
            )));
        }
    }

    #[test]
    fn one_broker_gets_no_broker_outage_or_move_and_serve_alone_no_client_actions() {
        for seed in 0..40 {
            let s = draw(seed, shape(1));
            assert!(s.faults.iter().all(|t| !matches!(
                t.fault,
                ServeFault::BrokerDown { .. } | ServeFault::CoordinatorMove { .. }
            )));
            assert!(s.triggers.iter().all(|t| SERVED_TRIGGER_EVENTS.contains(&t.on)
                && matches!(t.action, TriggerAction::DropConnections)));
            for t in &s.faults {
                if let ServeFault::InjectError { api, error, .. } = t.fault {
                    assert!(api.errors(GroupProtocol::Classic).contains(&error), "{}", t.fault);
                    let loading = error == InjectedError::CoordinatorLoadInProgress;
                    assert!(!loading || !matches!(api, GroupApi::Heartbeat | GroupApi::SyncGroup));
                }
            }
        }
    }
}
