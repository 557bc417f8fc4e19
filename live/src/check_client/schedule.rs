//! A seed's plan for one `check-client` run: the workload (members, partitions) and the faults
//! on the client processes (a member crash is a SIGKILL and a restart, a member pause a
//! SIGSTOP past the session timeout then SIGCONT, a graceful leave a SIGTERM close and a
//! restart; partitions added), beside the brokers' schedule ([`crate::serve::faults`]),
//! all in the one fault vocabulary ([`Fault`]). Members are named `m0`, `m1`, …, as the
//! simulation names them. The same seed draws the same plan.

use std::fmt;

use groupsim_member::GroupProtocol;
use groupsim_wire::Millis;
use rand::RngExt;
use rand_chacha::ChaCha8Rng;

use crate::serve::faults::{self as serve_faults, ScheduleShape, ServeSchedule};
use groupsim::faults::{Fault, FaultSchedule, Mode, ScheduleError, ScheduledFault};
use groupsim::rng::{self, Stream};

/// The topic every run consumes.
pub const TOPIC: &str = "orders";

/// The plan of one seed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// Member processes.
    pub members: usize,
    /// The topic's partitions at the start.
    pub partitions: i32,
    /// Faults on the member processes and the topic ([`is_process_fault`]), in time order.
    pub client: Vec<ScheduledFault>,
    /// Broker faults and triggers.
    pub brokers: ServeSchedule,
}

/// Whether `check-client` applies `fault` to its member processes or topic rather than at the
/// brokers.
pub fn is_process_fault(fault: &Fault) -> bool {
    matches!(
        fault,
        Fault::MemberPause { .. }
            | Fault::MemberCrash { .. }
            | Fault::MemberLeave { .. }
            | Fault::PartitionExpansion { .. }
    )
}

/// The member process a fault's member name (`m3`) names, among `members`.
pub fn member_index(name: &str, members: usize) -> Option<usize> {
    let i = name.strip_prefix('m')?.parse::<usize>().ok()?;
    (i < members && name == format!("m{i}")).then_some(i)
}

impl Plan {
    /// The plan with `schedule`'s faults and triggers in place of the drawn ones (the workload
    /// stays the seed's); refused, naming the fault, when a fault is one `check-client` cannot
    /// apply or names a member process the plan does not start.
    pub fn with_schedule(self, schedule: FaultSchedule) -> Result<Plan, ScheduleError> {
        schedule.refuse_unsupported(Mode::CheckClient)?;
        let (client, brokers): (Vec<_>, Vec<_>) =
            schedule.faults.into_iter().partition(|f| is_process_fault(&f.fault));
        for f in &client {
            let member = match &f.fault {
                Fault::MemberPause { member, .. }
                | Fault::MemberCrash { member, .. }
                | Fault::MemberLeave { member, .. } => member,
                _ => continue,
            };
            if member_index(member, self.members).is_none() {
                return Err(ScheduleError::UnknownMember {
                    member: member.clone(),
                    at_ms: f.at_ms,
                    members: self.members,
                });
            }
        }
        let brokers = FaultSchedule::new(brokers).with_triggers(schedule.triggers);
        Ok(Plan { client, brokers, ..self })
    }
}

/// What a plan is drawn for.
#[derive(Clone, Copy, Debug)]
pub struct PlanShape {
    /// Brokers in the cluster.
    pub brokers: i32,
    /// How long faults go on.
    pub fault_ms: Millis,
    /// The members' session timeout.
    pub session_timeout_ms: Millis,
    /// The group protocol the members speak (the brokers' schedule aims at its APIs).
    pub protocol: GroupProtocol,
}

/// Draws seed `seed`'s plan.
pub fn draw(seed: u64, shape: PlanShape) -> Plan {
    let mut rng = rng::stream(seed, Stream::Workload);
    let partitions = rng.random_range(3..=6);
    // Sometimes more members than partitions: some wait idle, ready to take over.
    let members = rng.random_range(2..=(partitions as usize + 1)).min(5);
    let session = shape.session_timeout_ms;
    let gap = (shape.fault_ms / 4).max(1_000);
    let mut client = Vec::new();
    let mut grown = partitions;
    let mut at = rng.random_range(gap / 3..=gap);
    while at < shape.fault_ms {
        let member = format!("m{}", rng.random_range(0..members));
        let faults = match rng.random_range(0..10u32) {
            0..=3 => vec![(
                0,
                Fault::MemberCrash { member, restart_after_ms: rng.random_range(500..=4_000) },
            )],
            4..=6 => pauses(&mut rng, &member, session),
            7..=8 => vec![(
                0,
                Fault::MemberLeave { member, restart_after_ms: rng.random_range(500..=4_000) },
            )],
            _ => {
                grown += rng.random_range(1..=2);
                vec![(0, Fault::PartitionExpansion { topic: TOPIC.into(), partitions: grown })]
            }
        };
        for (after, fault) in faults {
            if at + after < shape.fault_ms {
                client.push(ScheduledFault { at_ms: at + after, fault });
            }
        }
        at += rng.random_range(gap / 2..=gap * 3 / 2);
    }
    let brokers = serve_faults::draw(
        seed,
        ScheduleShape {
            brokers: shape.brokers,
            duration_ms: shape.fault_ms,
            mean_gap_ms: (shape.fault_ms / 6).max(700),
            session_timeout_ms: session,
            client_actions: true,
            protocol: shape.protocol,
        },
    );
    Plan { members, partitions, client, brokers }
}

/// The pauses of one pause fault, each with its offset from the fault's instant: across the
/// whole range of lengths against the members' session — a burst of GC-like pauses of a few
/// hundred milliseconds (below the adapters' heartbeat interval), one inside the session (the
/// member comes back to a group that may have moved on: ILLEGAL_GENERATION, not
/// UNKNOWN_MEMBER_ID), one just past it, or a long one.
fn pauses(rng: &mut ChaCha8Rng, member: &str, session: Millis) -> Vec<(Millis, Fault)> {
    let pause = |duration_ms| Fault::MemberPause { member: member.to_string(), duration_ms };
    let session = session.max(1_000);
    match rng.random_range(0..4u32) {
        0 => {
            let mut after = 0;
            let mut burst = Vec::new();
            for _ in 0..rng.random_range(3..=6) {
                let duration_ms = rng.random_range(50..=400);
                burst.push((after, pause(duration_ms)));
                after += duration_ms + rng.random_range(200..=1_500);
            }
            burst
        }
        1 => vec![(0, pause(rng.random_range(session / 4..=session * 3 / 4)))],
        2 => vec![(0, pause(rng.random_range(session + 200..=session + 2_000)))],
        _ => vec![(0, pause(rng.random_range(session + 1_000..=session * 2)))],
    }
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "  {} members, {} partitions", self.members, self.partitions)?;
        for t in &self.client {
            writeln!(f, "  t+{:>6} ms  {}", t.at_ms, t.fault)?;
        }
        write!(f, "{}", self.brokers)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use groupsim::faults::FaultRules;

    #[test]
    fn a_seed_draws_the_same_plan_within_its_fault_phase() {
        let shape = PlanShape {
            brokers: 3,
            fault_ms: 20_000,
            session_timeout_ms: 6_000,
            protocol: GroupProtocol::Classic,
        };
        let a = draw(11, shape);
        assert_eq!(a, draw(11, shape));
        assert!((2..=5).contains(&a.members) && (3..=6).contains(&a.partitions), "{a}");
        assert!(!a.client.is_empty());
        for t in &a.client {
            assert!(t.at_ms < 20_000);
            assert!(t.fault.applies_in(Mode::CheckClient) && is_process_fault(&t.fault));
        }
    }

    /// Pauses come in every length against the session: GC-like bursts, inside the session,
    /// just past it, long.
    #[test]
    fn pauses_are_drawn_across_the_whole_range_of_lengths() {
        let shape = PlanShape {
            brokers: 3,
            fault_ms: 20_000,
            session_timeout_ms: 6_000,
            protocol: GroupProtocol::Classic,
        };
        let mut lengths = std::collections::BTreeSet::new();
        for seed in 0..60 {
            for t in &draw(seed, shape).client {
                if let Fault::MemberPause { duration_ms, .. } = t.fault {
                    lengths.insert(match duration_ms {
                        0..500 => "burst",
                        500..6_000 => "inside the session",
                        6_000..=8_000 => "just past the session",
                        _ => "long",
                    });
                }
            }
        }
        assert_eq!(lengths.len(), 4, "{lengths:?}");
    }

    #[test]
    fn a_schedule_file_replaces_the_drawn_faults_and_bad_ones_are_refused_by_name() {
        let shape = PlanShape {
            brokers: 3,
            fault_ms: 20_000,
            session_timeout_ms: 6_000,
            protocol: GroupProtocol::Classic,
        };
        let plan = draw(11, shape);
        let file = |fault: &str| {
            let text = format!(
                r#"{{"faults":[{{"at_ms":5,"fault":{{"kind":"force_rebalance","group":""}}}},
                {{"at_ms":9,"fault":{fault}}}]}}"#
            );
            plan.clone().with_schedule(FaultSchedule::from_json(&text).unwrap())
        };
        let ok = file(r#"{"kind":"member_pause","member":"m1","duration_ms":9000}"#).unwrap();
        assert_eq!((ok.client.len(), ok.brokers.faults.len()), (1, 1));
        let err = file(r#"{"kind":"stale_ack","member":"m1","delay_ms":900}"#).unwrap_err();
        assert!(err.to_string().contains("check-client cannot apply stale_ack faults"), "{err}");
        let err = file(r#"{"kind":"member_crash","member":"m9","restart_after_ms":1}"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("m9") && err.contains("member processes"), "{err}");
    }
}
