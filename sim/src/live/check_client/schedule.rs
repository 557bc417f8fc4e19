//! A seed's plan for one `check-client` run: the workload (members, partitions) and the faults
//! on the client processes (SIGKILL and restart, SIGSTOP past the session timeout then SIGCONT,
//! graceful close and restart, partitions added), beside the brokers' schedule
//! ([`crate::live::serve::faults`]). The same seed draws the same plan.

use std::fmt;

use groupsim_member::GroupProtocol;
use groupsim_wire::Millis;
use rand::RngExt;

use crate::live::serve::faults::{self as serve_faults, ScheduleShape, ServeSchedule};
use crate::rng::{self, Stream};

/// A fault on one member process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClientFault {
    /// SIGKILL; a new incarnation starts `restart_after_ms` later.
    Kill { member: usize, restart_after_ms: Millis },
    /// SIGSTOP for `duration_ms` (past the session timeout: a zombie), then SIGCONT.
    Pause { member: usize, duration_ms: Millis },
    /// SIGTERM (the member leaves the group); a new incarnation starts `restart_after_ms` later.
    Close { member: usize, restart_after_ms: Millis },
    /// The topic grows by `more` partitions.
    AddPartitions { more: i32 },
}

impl fmt::Display for ClientFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientFault::Kill { member, restart_after_ms } => {
                write!(f, "SIGKILL m{member}, restart after {restart_after_ms} ms")
            }
            ClientFault::Pause { member, duration_ms } => {
                write!(f, "SIGSTOP m{member} for {duration_ms} ms, then SIGCONT")
            }
            ClientFault::Close { member, restart_after_ms } => {
                write!(f, "close m{member} (SIGTERM), restart after {restart_after_ms} ms")
            }
            ClientFault::AddPartitions { more } => write!(f, "add {more} partition(s)"),
        }
    }
}

/// The plan of one seed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// Member processes.
    pub members: usize,
    /// The topic's partitions at the start.
    pub partitions: i32,
    /// Client faults: (ms after the start, fault).
    pub client: Vec<(Millis, ClientFault)>,
    /// Broker faults and triggers.
    pub brokers: ServeSchedule,
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
    let mut at = rng.random_range(gap / 3..=gap);
    while at < shape.fault_ms {
        let member = rng.random_range(0..members);
        let fault = match rng.random_range(0..10u32) {
            0..=3 => ClientFault::Kill { member, restart_after_ms: rng.random_range(500..=4_000) },
            4..=6 => ClientFault::Pause {
                member,
                duration_ms: rng.random_range(session + 1_000..=session * 2),
            },
            7..=8 => ClientFault::Close { member, restart_after_ms: rng.random_range(500..=4_000) },
            _ => ClientFault::AddPartitions { more: rng.random_range(1..=2) },
        };
        client.push((at, fault));
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

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "  {} members, {} partitions", self.members, self.partitions)?;
        for (at, fault) in &self.client {
            writeln!(f, "  t+{at:>6} ms  {fault}")?;
        }
        write!(f, "{}", self.brokers)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        for (at, fault) in &a.client {
            assert!(*at < 20_000);
            if let ClientFault::Pause { duration_ms, .. } = fault {
                assert!(*duration_ms > 6_000, "pauses outlast the session: {fault}");
            }
        }
    }
}
