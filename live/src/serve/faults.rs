//! The served cluster's seeded fault schedule: what `serve --seed N` and `check-client` apply
//! at the brokers on real time, in the one fault vocabulary ([`Fault`]) every mode shares.
//! Targets among the group's members are picks (`#N`: the N-th member when the fault lands,
//! see [`groupsim::faults`]): real clients decide who is there, so a seed reapplies the same
//! schedule, not the same run. A coordinator move names the broker drawn; when that broker is
//! down or already coordinates the group, the next live broker after it takes the group.

use groupsim_member::GroupProtocol;
use groupsim_wire::Millis;
use rand::RngExt;
use rand_chacha::ChaCha8Rng;

pub use groupsim::faults::{
    drawn_apis, kafka_errors, GroupApi, InjectedError, CLASSIC_APIS, CONSUMER_APIS,
};
use groupsim::faults::{Fault, FaultSchedule, Mode, ScheduleError, ScheduledFault};
use groupsim::rng::{self, Stream};
use groupsim::triggers::{self, TriggerAction, TriggerEvent};
use groupsim::watch::WATCHED_TRIGGER_EVENTS;

/// A seed's fault schedule at the brokers: timed faults (ms after the fault phase starts) and
/// event triggers.
pub type ServeSchedule = FaultSchedule;

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

/// The events a served cluster can fire triggers on: those the shared group watch reports
/// (the others need member-side probes).
pub const SERVED_TRIGGER_EVENTS: [TriggerEvent; 8] = WATCHED_TRIGGER_EVENTS;

/// Whether a served cluster's nemesis can take `action` when a trigger fires: what it does at
/// the brokers, and, with `client_actions` (`check-client`, which owns the member processes),
/// pausing or killing a process.
fn servable(action: TriggerAction, client_actions: bool) -> bool {
    match action {
        TriggerAction::DropConnections | TriggerAction::MoveCoordinator { .. } => true,
        TriggerAction::Pause { .. } | TriggerAction::Crash { .. } => client_actions,
        TriggerAction::Leave { .. } | TriggerAction::SlowRevokeToDeadline { .. } => false,
    }
}

/// Reads a schedule file for `mode` (`serve` or `check-client`): refused, naming the culprit,
/// when it holds a fault the mode cannot apply or a trigger on an event it does not see or
/// with an action it cannot take.
pub fn read_schedule(text: &str, mode: Mode) -> Result<ServeSchedule, ScheduleError> {
    let schedule = FaultSchedule::from_json_for(text, mode)?;
    let client_actions = mode == Mode::CheckClient;
    if let Some(t) = schedule
        .triggers
        .iter()
        .find(|t| !SERVED_TRIGGER_EVENTS.contains(&t.on) || !servable(t.action, client_actions))
    {
        return Err(ScheduleError::Trigger { trigger: t.to_string(), mode });
    }
    Ok(schedule)
}

/// Draws the schedule of `seed`: the same seed and shape, the same schedule.
pub fn draw(seed: u64, shape: ScheduleShape) -> ServeSchedule {
    let mut rng = rng::stream(seed, Stream::Faults);
    let mut faults = Vec::new();
    let gap = shape.mean_gap_ms.max(100);
    let mut at = rng.random_range(gap / 2..=gap);
    while at < shape.duration_ms {
        faults.push(ScheduledFault { at_ms: at, fault: draw_fault(&mut rng, shape) });
        at += rng.random_range(gap / 2..=gap * 3 / 2);
    }
    let mut trigger_rng = rng::stream(seed, Stream::Triggers);
    let events: &[TriggerEvent] = match shape.protocol {
        GroupProtocol::Classic => TriggerEvent::CLASSIC_SWARM,
        GroupProtocol::Consumer => &TriggerEvent::CONSUMER_SWARM,
    };
    let allow_move = shape.brokers > 1;
    let triggers =
        triggers::draw_for(&mut trigger_rng, events, shape.session_timeout_ms, allow_move, false)
            .into_iter()
            .filter(|t| SERVED_TRIGGER_EVENTS.contains(&t.on))
            .filter(|t| servable(t.action, shape.client_actions))
            .collect();
    FaultSchedule::new(faults).with_triggers(triggers)
}

/// A pick among the group's members when the fault lands (see [`groupsim::faults`]).
fn pick(n: u32) -> String {
    format!("#{n}")
}

fn draw_fault(rng: &mut ChaCha8Rng, shape: ScheduleShape) -> Fault {
    let broker = rng.random_range(0..shape.brokers.max(1));
    let member = pick(rng.random_range(0..1_000u32));
    let session = shape.session_timeout_ms.max(1_000);
    let apis = drawn_apis(shape.protocol);
    let api = apis[rng.random_range(0..apis.len())];
    match rng.random_range(0..100u32) {
        0..=14 => match rng.random_range(0..4u32) {
            0 => Fault::ConnectionReset { broker: None },
            1 => Fault::ConnectionReset { broker: Some(broker) },
            2 => Fault::ConnectionDrop { member },
            _ => Fault::GroupConnectionReset { member },
        },
        15..=24 => Fault::ResponseDelay {
            broker: rng.random_bool(0.5).then_some(broker),
            delay_ms: rng.random_range(20..=800),
            duration_ms: rng.random_range(1_000..=5_000),
        },
        25..=31 => Fault::Unresponsive {
            broker,
            duration_ms: rng.random_range(session / 4..=session * 3 / 2),
        },
        32..=38 if shape.brokers > 1 => {
            Fault::BrokerCrash { node: broker, restart_after_ms: rng.random_range(1_000..=6_000) }
        }
        39..=47 if shape.brokers > 1 => Fault::CoordinatorMove {
            group: String::new(),
            to: broker,
            load_ms: rng.random_range(0..=3_000),
        },
        48..=57 => {
            Fault::HoldResponse { api, hold_ms: rng.random_range(session / 2..=session * 2) }
        }
        58..=79 => {
            let errors = kafka_errors(api, shape.protocol);
            let error = errors[rng.random_range(0..errors.len())];
            Fault::InjectError { api, error, count: rng.random_range(1..=3) }
        }
        90..=99 => Fault::ExpelMember { member },
        _ => Fault::ForceRebalance { group: String::new() },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_schedule_file_serve_cannot_apply_is_refused_naming_the_fault_or_trigger() {
        let fault = r#"{"faults":[{"at_ms":5,"fault":{"kind":"network_partition",
            "host":"m0","peers":["broker-0"],"heal_after_ms":100}}]}"#;
        let err = read_schedule(fault, Mode::Serve).unwrap_err().to_string();
        assert!(err.contains("serve cannot apply network_partition faults"), "{err}");
        let pause = r#"{"faults":[{"at_ms":5,"fault":{"kind":"member_pause","member":"m0",
            "duration_ms":100}}]}"#;
        let err = read_schedule(pause, Mode::Serve).unwrap_err().to_string();
        assert!(err.contains("serve cannot apply member_pause faults"), "{err}");
        assert!(read_schedule(pause, Mode::CheckClient).is_ok());
        let on = |on, action| {
            let t = groupsim::triggers::Trigger {
                id: 0,
                on,
                action,
                per_mille: 500,
                max_fires: 1,
                after_ms: None,
            };
            FaultSchedule::default().with_triggers(vec![t]).to_json()
        };
        let trigger = on(TriggerEvent::RevokeStarted, TriggerAction::DropConnections);
        let err = read_schedule(&trigger, Mode::Serve).unwrap_err().to_string();
        assert!(
            err.contains("serve cannot fire trigger") && err.contains("revoke_started"),
            "{err}"
        );
        let pause = on(TriggerEvent::SyncResponses, TriggerAction::Pause { duration_ms: 9 });
        assert!(read_schedule(&pause, Mode::Serve).is_err(), "serve alone has no processes");
        assert!(read_schedule(&pause, Mode::CheckClient).is_ok());
    }

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
        assert!(a.refuse_unsupported(groupsim::faults::Mode::Serve).is_ok(), "{a}");
    }

    #[test]
    fn a_consumer_group_schedule_targets_its_own_apis_with_kafkas_errors_for_them() {
        let consumer = ScheduleShape { protocol: GroupProtocol::Consumer, ..shape(3) };
        let mut seen = std::collections::BTreeSet::new();
        for seed in 0..40 {
            for t in &draw(seed, consumer).faults {
                let api = match &t.fault {
                    Fault::HoldResponse { api, .. } => *api,
                    Fault::InjectError { api, error, .. } => {
                        assert_ne!(*error, InjectedError::RebalanceInProgress, "{}", t.fault);
                        assert_ne!(*error, InjectedError::RequestTimedOut, "{}", t.fault);
                        *api
                    }
                    _ => continue,
                };
                assert!(CONSUMER_APIS.contains(&api), "{}", t.fault);
                seen.insert(api);
            }
        }
        assert_eq!(seen.len(), 3, "every consumer-group API is drawn: {seen:?}");
        // The classic draw is the one it always was: same seed, same schedule as before the
        // consumer APIs existed (no ConsumerGroupHeartbeat in it).
        for seed in 0..40 {
            assert!(draw(seed, shape(3)).faults.iter().all(|t| !matches!(
                t.fault,
                Fault::HoldResponse { api: GroupApi::ConsumerGroupHeartbeat, .. }
                    | Fault::InjectError { api: GroupApi::ConsumerGroupHeartbeat, .. }
            )));
        }
    }

    #[test]
    fn one_broker_gets_no_broker_outage_or_move_and_serve_alone_no_client_actions() {
        for seed in 0..40 {
            let s = draw(seed, shape(1));
            assert!(s.faults.iter().all(|t| !matches!(
                t.fault,
                Fault::BrokerCrash { .. } | Fault::CoordinatorMove { .. }
            )));
            assert!(s.triggers.iter().all(|t| SERVED_TRIGGER_EVENTS.contains(&t.on)
                && matches!(t.action, TriggerAction::DropConnections)));
            assert!(read_schedule(&s.to_json(), Mode::Serve).is_ok(), "{s}");
            for t in &s.faults {
                if let Fault::InjectError { api, error, .. } = t.fault {
                    assert!(
                        kafka_errors(api, GroupProtocol::Classic).contains(&error),
                        "{}",
                        t.fault
                    );
                    let loading = error == InjectedError::CoordinatorLoadInProgress;
                    assert!(!loading || !matches!(api, GroupApi::Heartbeat | GroupApi::SyncGroup));
                }
            }
        }
    }
}
