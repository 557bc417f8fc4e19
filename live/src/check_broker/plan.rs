//! A seed's plan for one `check-broker` run: the members and their client profiles, the topic's
//! partitions, the producer's pace, and the fault schedule on the client side (the local proxy's
//! drops, one-way stalls and latency; member pauses across the timeout range, crashes and
//! restarts, graceful leaves, late acks and slow revoke callbacks; in the seeds whose members are
//! static, a member's process replaced by a new one under the same `group.instance.id`). Every
//! fault starts inside the fault phase; the proxy's end there (the heal lifts them), a pause
//! runs its length. Members are named `m0`, `m1`, … as the simulation names them. The same seed
//! and protocol draw the same plan.

use std::fmt;

use groupsim_member::{ClientProfile, GroupProtocol};
use groupsim_wire::Millis;
use rand::RngExt;
use rand_chacha::ChaCha8Rng;

use groupsim::rng::{self, Stream};

/// The members' session timeout (classic protocol; a consumer group's is the broker's).
pub const SESSION_TIMEOUT_MS: Millis = 10_000;

/// Which way a one-way stall holds bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// Requests, member to broker.
    Requests,
    /// Answers, broker to member (held responses).
    Answers,
}

/// One client-side fault.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Every connection of the member's proxy is reset.
    Drop { member: usize },
    /// The member's proxy holds the bytes going one way for this long.
    Stall { member: usize, direction: Direction, ms: Millis },
    /// The member's proxy delays every chunk by `latency_ms` for `ms`.
    Latency { member: usize, latency_ms: Millis, ms: Millis },
    /// The member process stops the world for this long.
    Pause { member: usize, ms: Millis },
    /// The member process dies (no LeaveGroup) and starts again as a new member later.
    Crash { member: usize, restart_after_ms: Millis },
    /// The member leaves the group gracefully and starts again as a new member later.
    Leave { member: usize, restart_after_ms: Millis },
    /// The processing under way finishes this late, detached from the next revoke (its ack
    /// may arrive in a later generation).
    StaleAck { member: usize, delay_ms: Millis },
    /// The member's next revoke callback takes this much longer.
    SlowRevoke { member: usize, extra_ms: Millis },
    /// A static member's process is replaced, as a redeploy does it: the process dies (no
    /// LeaveGroup) and a new one takes its `group.instance.id` over this soon after, well within
    /// the session, so the coordinator hands the instance to the new member id.
    Replace { member: usize, after_ms: Millis },
}

impl Fault {
    /// The member it strikes.
    pub fn member(&self) -> usize {
        match self {
            Fault::Drop { member }
            | Fault::Stall { member, .. }
            | Fault::Latency { member, .. }
            | Fault::Pause { member, .. }
            | Fault::Crash { member, .. }
            | Fault::Leave { member, .. }
            | Fault::StaleAck { member, .. }
            | Fault::SlowRevoke { member, .. }
            | Fault::Replace { member, .. } => *member,
        }
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fault::Drop { member } => write!(f, "connection_drop m{member}"),
            Fault::Stall { member, direction, ms } => {
                let way = match direction {
                    Direction::Requests => "requests",
                    Direction::Answers => "answers",
                };
                write!(f, "stall m{member} {way} for {ms} ms")
            }
            Fault::Latency { member, latency_ms, ms } => {
                write!(f, "latency m{member} +{latency_ms} ms for {ms} ms")
            }
            Fault::Pause { member, ms } => write!(f, "member_pause m{member} for {ms} ms"),
            Fault::Crash { member, restart_after_ms } => {
                write!(f, "member_crash m{member}, restart after {restart_after_ms} ms")
            }
            Fault::Leave { member, restart_after_ms } => {
                write!(f, "member_leave m{member}, restart after {restart_after_ms} ms")
            }
            Fault::StaleAck { member, delay_ms } => {
                write!(f, "stale_ack m{member}, {delay_ms} ms late")
            }
            Fault::SlowRevoke { member, extra_ms } => {
                write!(f, "slow_revoke m{member}, {extra_ms} ms slower")
            }
            Fault::Replace { member, after_ms } => {
                write!(f, "static_replace m{member}, new process after {after_ms} ms")
            }
        }
    }
}

/// The plan of one seed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// The seed it was drawn from.
    pub seed: u64,
    /// The group protocol the members speak.
    pub protocol: GroupProtocol,
    /// Each member's client profile, `m0` first.
    pub profiles: Vec<ClientProfile>,
    /// The server assignor a consumer group asks for (`uniform` or `range`).
    pub server_assignor: Option<&'static str>,
    /// Whether the members are static (`group.instance.id` `groupsim-<seed>-m<i>`): in half
    /// the seeds whose clients support it (not kafka-go, whose JoinGroup v1 has no instance id).
    pub static_members: bool,
    /// Partitions of the topic when the harness creates it.
    pub partitions: i32,
    /// Records the producer appends to each partition per round.
    pub records_per_round: usize,
    /// Faults, `(at_ms, fault)` in time order, all within the fault phase.
    pub faults: Vec<(Millis, Fault)>,
    /// How long faults go on.
    pub fault_ms: Millis,
    /// When the broker-restart command runs (empty without `--restart-cmd`).
    pub restarts: Vec<Millis>,
}

/// Draws seed `seed`'s plan for members of `protocol`, with `fault_ms` of faults.
pub fn draw(seed: u64, protocol: GroupProtocol, fault_ms: Millis) -> Plan {
    let mut rng = rng::stream(seed, Stream::Workload);
    let partitions = rng.random_range(2..=6);
    let members = rng.random_range(2..=4usize);
    let records_per_round = rng.random_range(1..=5);
    let mut clients = rng::stream(seed, Stream::Clients);
    let pool: &[ClientProfile] = match protocol {
        GroupProtocol::Classic => &[
            ClientProfile::JavaEager,
            ClientProfile::JavaCooperative,
            ClientProfile::KafkaGo,
            ClientProfile::Brod,
            ClientProfile::Elsa,
        ],
        GroupProtocol::Consumer => &ClientProfile::CONSUMER,
    };
    // One classic group speaks one assignor family: a mix of eager and cooperative members
    // would not agree on a protocol, so the seed picks one profile for the group.
    let profiles = match protocol {
        GroupProtocol::Classic => vec![pool[clients.random_range(0..pool.len())]; members],
        GroupProtocol::Consumer => {
            (0..members).map(|_| pool[clients.random_range(0..pool.len())]).collect()
        }
    };
    let server_assignor = (protocol == GroupProtocol::Consumer)
        .then(|| ["uniform", "range"][clients.random_range(0..2usize)]);
    let static_members = profiles.iter().all(|p| static_capable(*p)) && clients.random_bool(0.5);
    let faults = faults(&mut rng::stream(seed, Stream::Faults), members, fault_ms, static_members);
    Plan {
        seed,
        protocol,
        profiles,
        server_assignor,
        static_members,
        partitions,
        records_per_round,
        faults,
        fault_ms,
        restarts: Vec::new(),
    }
}

/// When seed `seed` runs the broker-restart command: once or twice, inside the fault phase's
/// middle three fifths (the group has formed, and has time to recover before the heal). Drawn
/// from a stream of their own, so the rest of the plan is the same with or without them.
pub fn restarts(seed: u64, fault_ms: Millis) -> Vec<Millis> {
    if fault_ms == 0 {
        return Vec::new();
    }
    let mut rng = rng::stream(seed, Stream::Triggers);
    let n = rng.random_range(1..=2);
    let mut at: Vec<Millis> =
        (0..n).map(|_| rng.random_range(fault_ms / 5..=fault_ms * 4 / 5)).collect();
    at.sort();
    at
}

/// Whether the profile's client can be a static member as the harness runs it: the Java
/// clients and both KIP-848 clients. kafka-go's JoinGroup v1 carries no instance id; the brod
/// and Elsa profiles heartbeat at v0, which carries none either.
fn static_capable(profile: ClientProfile) -> bool {
    !matches!(profile, ClientProfile::KafkaGo | ClientProfile::Brod | ClientProfile::Elsa)
}

/// A schedule of client-side faults over `fault_ms`, every one over before it ends; with
/// static members, half the crashes are replacements.
fn faults(
    rng: &mut ChaCha8Rng,
    members: usize,
    fault_ms: Millis,
    static_members: bool,
) -> Vec<(Millis, Fault)> {
    let mut out = Vec::new();
    if fault_ms == 0 {
        return out;
    }
    let gap = (fault_ms / 5).max(500);
    let mut at = rng.random_range(gap / 2..=gap);
    while at < fault_ms {
        let member = rng.random_range(0..members);
        let room = fault_ms - at;
        let fault = match rng.random_range(0..14u32) {
            0..=1 => Fault::Drop { member },
            2..=3 => Fault::Stall {
                member,
                direction: if rng.random_bool(0.5) {
                    Direction::Requests
                } else {
                    Direction::Answers
                },
                ms: rng.random_range(200..=6_000).min(room),
            },
            4 => Fault::Latency {
                member,
                latency_ms: rng.random_range(5..=200),
                ms: rng.random_range(1_000..=5_000).min(room),
            },
            // A pause may outlast the fault phase: the member comes back on its own, a zombie
            // when it outslept its session.
            5..=7 => Fault::Pause { member, ms: pause_length(rng) },
            8 if static_members => Fault::Replace { member, after_ms: rng.random_range(0..=1_000) },
            8..=9 => Fault::Crash { member, restart_after_ms: rng.random_range(300..=3_000) },
            10..=11 => Fault::Leave { member, restart_after_ms: rng.random_range(300..=3_000) },
            12 => Fault::StaleAck { member, delay_ms: rng.random_range(500..=SESSION_TIMEOUT_MS) },
            _ => Fault::SlowRevoke { member, extra_ms: rng.random_range(500..=SESSION_TIMEOUT_MS) },
        };
        out.push((at, fault));
        at += rng.random_range(gap / 2..=gap * 3 / 2);
    }
    out
}

/// A pause across the timeout range: a GC-like blip, one inside the session, or (as often as
/// both together) one just past it, which makes the member a zombie when it wakes.
fn pause_length(rng: &mut ChaCha8Rng) -> Millis {
    match rng.random_range(0..4u32) {
        0 => rng.random_range(50..=800),
        1 => rng.random_range(SESSION_TIMEOUT_MS / 4..=SESSION_TIMEOUT_MS * 3 / 4),
        _ => rng.random_range(SESSION_TIMEOUT_MS + 500..=SESSION_TIMEOUT_MS + 3_000),
    }
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let protocol = match self.protocol {
            GroupProtocol::Classic => "classic",
            GroupProtocol::Consumer => "consumer",
        };
        writeln!(f, "seed {}: {protocol} protocol, {} members", self.seed, self.profiles.len())?;
        for (i, p) in self.profiles.iter().enumerate() {
            writeln!(f, "  m{i}: {}", p.name())?;
        }
        if let Some(a) = self.server_assignor {
            writeln!(f, "  server assignor: {a}")?;
        }
        if self.static_members {
            writeln!(f, "  static members: group.instance.id groupsim-{}-m<i>", self.seed)?;
        }
        writeln!(
            f,
            "  workload: {} partitions (when created), {} record(s) per partition per round",
            self.partitions, self.records_per_round
        )?;
        writeln!(f, "  faults over {} ms:", self.fault_ms)?;
        if self.faults.is_empty() {
            writeln!(f, "    (none)")?;
        }
        for (at, fault) in &self.faults {
            writeln!(f, "    t+{at} ms: {fault}")?;
        }
        for at in &self.restarts {
            writeln!(f, "    t+{at} ms: broker_restart (--restart-cmd)")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_seed_draws_one_plan() {
        let a = draw(7, GroupProtocol::Classic, 20_000);
        assert_eq!(a, draw(7, GroupProtocol::Classic, 20_000));
        assert_ne!(a, draw(8, GroupProtocol::Classic, 20_000), "another seed, another plan");
    }

    /// Static members come in half the seeds whose clients carry an instance id, and only
    /// their seeds draw replacements; both protocols draw some.
    #[test]
    fn static_members_and_their_replacements_are_drawn_where_the_clients_support_them() {
        for protocol in [GroupProtocol::Classic, GroupProtocol::Consumer] {
            let mut replaced = 0;
            for seed in 0..200 {
                let plan = draw(seed, protocol, 20_000);
                let replaces =
                    plan.faults.iter().filter(|(_, f)| matches!(f, Fault::Replace { .. })).count();
                if plan.static_members {
                    assert!(plan.profiles.iter().all(|p| static_capable(*p)), "seed {seed}");
                    replaced += replaces;
                } else {
                    assert_eq!(replaces, 0, "seed {seed}: a replacement needs static members");
                }
            }
            assert!(replaced >= 5, "{protocol:?}: {replaced} replacements in 200 seeds");
        }
        assert!(!static_capable(ClientProfile::KafkaGo));
        assert!(static_capable(ClientProfile::JavaCooperative));
    }

    /// Restarts come once or twice, inside the fault phase, and leave the rest of the plan as
    /// it was (they have a stream of their own).
    #[test]
    fn broker_restarts_fall_inside_the_fault_phase() {
        for seed in 0..50 {
            let at = restarts(seed, 20_000);
            assert!((1..=2).contains(&at.len()), "seed {seed}: {at:?}");
            assert!(at.iter().all(|t| (4_000..=16_000).contains(t)), "seed {seed}: {at:?}");
            assert!(at.windows(2).all(|w| w[0] <= w[1]));
        }
        assert!(restarts(3, 0).is_empty());
    }

    #[test]
    fn every_fault_falls_inside_the_fault_phase_and_names_a_member() {
        for seed in 0..50 {
            let plan = draw(seed, GroupProtocol::Consumer, 15_000);
            for (at, fault) in &plan.faults {
                assert!(*at < plan.fault_ms, "seed {seed}: {fault} at {at}");
                assert!(fault.member() < plan.profiles.len(), "seed {seed}: {fault}");
            }
            assert!(plan.profiles.iter().all(|p| p.group_protocol() == GroupProtocol::Consumer));
        }
    }
}
