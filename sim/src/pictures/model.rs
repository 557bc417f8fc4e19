//! The timeline model the SVG is drawn from: what each member owned when, the group's states,
//! faults and anomalies, all read from the history alone.

use std::collections::{BTreeMap, BTreeSet};

use groupsim_history::{
    CoordinatorEvent, EventKind, Fault, GroupState, History, MemberEvent, WorldEvent,
};
use groupsim_wire::{Millis, TopicPartition};

use groupsim_checker::Verdict;

/// A run reduced to what the timeline shows.
#[derive(Debug, Default)]
pub(crate) struct Timeline {
    /// Scenario name (from `RunStarted`).
    pub scenario: String,
    /// Seed (from `RunStarted`).
    pub seed: u64,
    /// Time of the last event.
    pub end_ms: Millis,
    /// One lane per member, in natural name order (`m2` before `m10`).
    pub lanes: Vec<Lane>,
    /// Group state segments, per group.
    pub bands: BTreeMap<String, Vec<Band>>,
    /// Generation starts: (time, group, generation, leader member name).
    pub generations: Vec<(Millis, String, i32, String)>,
    /// Faults injected, in order.
    pub faults: Vec<FaultMark>,
    /// Healed faults and cluster events (crashes, coordinator moves): (time, text, kind).
    pub points: Vec<PointMark>,
    /// When the liveness phase began, if it did.
    pub liveness_ms: Option<Millis>,
    /// Anomalies with where to mark them.
    pub anomalies: Vec<AnomalyMark>,
}

/// One member's lane.
#[derive(Debug, Default)]
pub(crate) struct Lane {
    /// Scenario name of the member.
    pub name: String,
    /// When its process ran: (start, stop).
    pub alive: Vec<(Millis, Millis)>,
    /// What it owned.
    pub owned: Vec<Ownership>,
    /// Commits the coordinator rejected: (time, text).
    pub rejected: Vec<(Millis, String)>,
}

/// A stretch of time during which a member owned a fixed set of partitions.
#[derive(Debug)]
pub(crate) struct Ownership {
    pub start: Millis,
    pub end: Millis,
    pub generation: i32,
    pub partitions: Vec<TopicPartition>,
    /// How it ended: `revoked`, `lost: <reason>`, `stopped`, `run ended`, `reassigned`.
    pub ended_by: String,
}

/// A stretch of time in one group state.
#[derive(Debug)]
pub(crate) struct Band {
    pub start: Millis,
    pub end: Millis,
    pub state: GroupState,
    pub generation: i32,
    pub broker: i32,
}

/// An injected fault.
#[derive(Debug)]
pub(crate) struct FaultMark {
    pub at: Millis,
    /// When its effect ends (for faults with a duration that were applied).
    pub until: Option<Millis>,
    /// The fault's Display text (plus a note when it had no target).
    pub text: String,
    pub applied: bool,
    /// The member it targets, if any.
    pub member: Option<String>,
}

/// A point event on the faults row.
#[derive(Debug)]
pub(crate) struct PointMark {
    pub at: Millis,
    pub text: String,
    /// True for a heal, false for a cluster event (crash, restart, coordinator move).
    pub healed: bool,
}

/// Where on the picture an anomaly's proving event sits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Spot {
    /// On a member's lane.
    Member(String),
    /// On a group's state band.
    Group(String),
    /// On the faults row.
    Faults,
}

/// An anomaly and the spots of its proving events.
#[derive(Debug)]
pub(crate) struct AnomalyMark {
    pub at: Millis,
    /// `class: message`.
    pub text: String,
    /// (time, spot, event description) per proving event.
    pub spots: Vec<(Millis, Spot, String)>,
}

/// Orders names like `m2` before `m10`: by the non-digit prefix, then the numeric suffix.
pub(crate) fn natural_key(name: &str) -> (String, u64, String) {
    let digits = name.len() - name.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    let (prefix, num) = name.split_at(name.len() - digits);
    (prefix.to_string(), num.parse().unwrap_or(0), name.to_string())
}

/// How long an applied fault's effect lasts, when it has a duration.
fn fault_duration(f: &Fault) -> Option<Millis> {
    match f {
        Fault::NetworkPartition { heal_after_ms, .. } => Some(*heal_after_ms),
        Fault::LatencySpike { duration_ms, .. } => Some(*duration_ms),
        Fault::BrokerCrash { restart_after_ms, .. } => Some(*restart_after_ms),
        Fault::MemberPause { duration_ms, .. } => Some(*duration_ms),
        Fault::MemberCrash { restart_after_ms, .. } => Some(*restart_after_ms),
        Fault::MemberLeave { restart_after_ms, .. } => Some(*restart_after_ms),
        Fault::MemberUpgrade { restart_after_ms, .. } => Some(*restart_after_ms),
        Fault::StaleAck { delay_ms, .. } => Some(*delay_ms),
        Fault::SlowBatch { extra_ms, .. } => Some(*extra_ms),
        Fault::OneWayPartition { heal_after_ms, .. } => Some(*heal_after_ms),
        Fault::FrameLoss { duration_ms, .. } => Some(*duration_ms),
        Fault::ResponseDelay { duration_ms, .. } => Some(*duration_ms),
        Fault::Unresponsive { duration_ms, .. } => Some(*duration_ms),
        Fault::HoldResponse { hold_ms, .. } => Some(*hold_ms),
        Fault::LateRequest { delay_ms, .. } => Some(*delay_ms),
        Fault::SlowRevoke { .. }
        | Fault::SlowRevokeUntil { .. }
        | Fault::ConnectionDrop { .. }
        | Fault::CoordinatorMove { .. }
        | Fault::PartitionExpansion { .. }
        | Fault::ConnectionReset { .. }
        | Fault::GroupConnectionReset { .. }
        | Fault::InjectError { .. }
        | Fault::ForceRebalance { .. }
        | Fault::ExpelMember { .. } => None,
    }
}

/// The member a fault acts on, if it acts on one.
fn fault_member(f: &Fault) -> Option<&str> {
    match f {
        Fault::ConnectionDrop { member }
        | Fault::MemberPause { member, .. }
        | Fault::MemberCrash { member, .. }
        | Fault::MemberLeave { member, .. }
        | Fault::StaleAck { member, .. }
        | Fault::SlowBatch { member, .. }
        | Fault::SlowRevoke { member, .. }
        | Fault::SlowRevokeUntil { member, .. }
        | Fault::GroupConnectionReset { member }
        | Fault::ExpelMember { member }
        | Fault::LateRequest { member, .. } => Some(member),
        _ => None,
    }
}

/// Member id -> scenario name, learned from the whole history (MemberAdded's client id, and the
/// member ids members report for themselves).
pub(crate) fn member_names(history: &History) -> BTreeMap<String, String> {
    let mut names = BTreeMap::new();
    for e in history.events() {
        match &e.kind {
            EventKind::Member { member, event } => {
                let id = match event {
                    MemberEvent::Joined { member_id, .. }
                    | MemberEvent::Assigned { member_id, .. }
                    | MemberEvent::Revoked { member_id, .. }
                    | MemberEvent::Lost { member_id, .. }
                    | MemberEvent::Left { member_id } => member_id,
                    _ => continue,
                };
                if !id.is_empty() {
                    names.insert(id.clone(), member.clone());
                }
            }
            EventKind::Coordinator {
                event: CoordinatorEvent::MemberAdded { member_id, client_id, .. },
                ..
            } => {
                names.entry(member_id.clone()).or_insert_with(|| client_id.clone());
            }
            _ => {}
        }
    }
    names
}

/// Builds the timeline of a run.
pub(crate) fn build(history: &History, verdict: &Verdict) -> Timeline {
    let names = member_names(history);
    let name_of = |id: &str| names.get(id).cloned().unwrap_or_else(|| id.to_string());
    // A served history has no member events (real clients report nothing to the broker): its
    // ownership bars are the coordinator's view, each generation's stored assignment from when
    // it was stored until the group's next generation starts, the member is removed or its
    // process stops. Its members' incarnations (client ids `m0.0`, `m0.1`) share the lane of
    // the process slot `check-client` started (`m0`).
    let served = !history.events().iter().any(|e| matches!(e.kind, EventKind::Member { .. }));
    let started: BTreeSet<&str> = history
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::World(WorldEvent::MemberStarted { member, .. }) => Some(member.as_str()),
            _ => None,
        })
        .collect();
    let lane_of = |id: &str| {
        let name = name_of(id);
        let slot = name
            .rsplit_once('.')
            .filter(|(m, n)| served && started.contains(m) && n.parse::<u32>().is_ok());
        slot.map_or_else(|| name.clone(), |(m, _)| m.to_string())
    };
    // Served: the group each open ownership belongs to.
    let mut open_group: BTreeMap<String, String> = BTreeMap::new();
    let mut t =
        Timeline { end_ms: history.events().last().map_or(0, |e| e.at_ms), ..Default::default() };
    let mut lanes: BTreeMap<(String, u64, String), Lane> = BTreeMap::new();
    let mut alive_since: BTreeMap<String, Millis> = BTreeMap::new();
    let mut open: BTreeMap<String, Ownership> = BTreeMap::new();
    let mut open_band: BTreeMap<String, Band> = BTreeMap::new();

    fn lane<'a>(lanes: &'a mut BTreeMap<(String, u64, String), Lane>, name: &str) -> &'a mut Lane {
        lanes
            .entry(natural_key(name))
            .or_insert_with(|| Lane { name: name.to_string(), ..Default::default() })
    }
    fn close(
        lanes: &mut BTreeMap<(String, u64, String), Lane>,
        open: &mut BTreeMap<String, Ownership>,
        member: &str,
        at: Millis,
        why: &str,
    ) {
        if let Some(mut o) = open.remove(member) {
            o.end = at;
            o.ended_by = why.to_string();
            lane(lanes, member).owned.push(o);
        }
    }
    // Removes `gone` from the member's open ownership; what is left continues as a new stretch.
    fn give_up(
        lanes: &mut BTreeMap<(String, u64, String), Lane>,
        open: &mut BTreeMap<String, Ownership>,
        member: &str,
        at: Millis,
        gone: &[TopicPartition],
        why: &str,
    ) {
        let Some(o) = open.get(member) else { return };
        let rest: Vec<TopicPartition> =
            o.partitions.iter().filter(|p| !gone.contains(p)).cloned().collect();
        let generation = o.generation;
        close(lanes, open, member, at, why);
        if !rest.is_empty() {
            open.insert(
                member.to_string(),
                Ownership {
                    start: at,
                    end: at,
                    generation,
                    partitions: rest,
                    ended_by: String::new(),
                },
            );
        }
    }
    fn set_band(
        bands: &mut BTreeMap<String, Vec<Band>>,
        open_band: &mut BTreeMap<String, Band>,
        group: &str,
        b: Band,
    ) {
        if let Some(mut old) = open_band.remove(group) {
            old.end = b.start;
            bands.entry(group.to_string()).or_default().push(old);
        }
        open_band.insert(group.to_string(), b);
    }

    for e in history.events() {
        let at = e.at_ms;
        match &e.kind {
            EventKind::World(w) => match w {
                WorldEvent::RunStarted { scenario, seed } => {
                    t.scenario = scenario.clone();
                    t.seed = *seed;
                }
                WorldEvent::MemberStarted { member, .. } => {
                    lane(&mut lanes, member);
                    alive_since.insert(member.clone(), at);
                }
                WorldEvent::MemberStopped { member } => {
                    open_group.remove(member);
                    close(&mut lanes, &mut open, member, at, "stopped");
                    if let Some(s) = alive_since.remove(member) {
                        lane(&mut lanes, member).alive.push((s, at));
                    }
                }
                WorldEvent::LivenessPhase { .. } => t.liveness_ms = Some(at),
                WorldEvent::FaultInjected { fault, applied } => {
                    let mut text = fault.to_string();
                    if !applied {
                        text.push_str(" (no target: skipped)");
                    }
                    t.faults.push(FaultMark {
                        at,
                        until: if *applied { fault_duration(fault).map(|d| at + d) } else { None },
                        text,
                        applied: *applied,
                        member: fault_member(fault).map(str::to_string),
                    });
                }
                WorldEvent::ServeFault { description, duration_ms } => t.faults.push(FaultMark {
                    at,
                    until: (*duration_ms > 0).then(|| at + duration_ms),
                    text: description.clone(),
                    applied: true,
                    member: None,
                }),
                WorldEvent::FaultHealed { description } => {
                    t.points.push(PointMark { at, text: format!("healed: {description}"), healed: true })
                }
                WorldEvent::BrokerCrashed { node } => {
                    t.points.push(PointMark { at, text: format!("broker-{node} crashed"), healed: false })
                }
                WorldEvent::MemberExited { member, client_id, status, .. } => t.points.push(PointMark {
                    at,
                    text: format!("{member} ({client_id}) exited by itself ({status})"),
                    healed: false,
                }),
                WorldEvent::BrokerRestarted { node } => t.points.push(PointMark {
                    at,
                    text: format!("broker-{node} restarted (empty state)"),
                    healed: false,
                }),
                WorldEvent::CoordinatorMoved { partition, from, to, load_ms, reason, .. } => {
                    t.points.push(PointMark {
                        at,
                        text: format!(
                            "coordinator (offsets partition {partition}) moved broker-{from} -> broker-{to} ({reason}, load {load_ms} ms)"
                        ),
                        healed: false,
                    })
                }
                WorldEvent::PartitionsAdded { topic, partitions } => t.points.push(PointMark {
                    at,
                    text: format!("topic {topic} grows to {partitions} partitions"),
                    healed: false,
                }),
                _ => {}
            },
            EventKind::Member { member, event } => match event {
                MemberEvent::Assigned { generation, partitions, .. } => {
                    close(&mut lanes, &mut open, member, at, "reassigned");
                    lane(&mut lanes, member);
                    open.insert(
                        member.clone(),
                        Ownership {
                            start: at,
                            end: at,
                            generation: *generation,
                            partitions: partitions.clone(),
                            ended_by: String::new(),
                        },
                    );
                }
                MemberEvent::Revoked { partitions, .. } => {
                    give_up(&mut lanes, &mut open, member, at, partitions, "revoked")
                }
                MemberEvent::Lost { partitions, reason, .. } => {
                    give_up(&mut lanes, &mut open, member, at, partitions, &format!("lost: {reason}"))
                }
                MemberEvent::Left { .. } | MemberEvent::Fatal { .. } => {
                    close(&mut lanes, &mut open, member, at, "left")
                }
                _ => {
                    lane(&mut lanes, member);
                }
            },
            EventKind::Coordinator { broker, event } => match event {
                CoordinatorEvent::GroupStateChanged { group, to, generation, .. } => set_band(
                    &mut t.bands,
                    &mut open_band,
                    group,
                    Band { start: at, end: at, state: *to, generation: *generation, broker: *broker },
                ),
                CoordinatorEvent::GroupLoaded { group, state, generation, .. } => set_band(
                    &mut t.bands,
                    &mut open_band,
                    group,
                    Band { start: at, end: at, state: *state, generation: *generation, broker: *broker },
                ),
                CoordinatorEvent::GroupUnloaded { group, .. } => {
                    let generation = open_band.get(group).map_or(0, |b| b.generation);
                    set_band(
                        &mut t.bands,
                        &mut open_band,
                        group,
                        Band { start: at, end: at, state: GroupState::Dead, generation, broker: *broker },
                    )
                }
                CoordinatorEvent::GenerationStarted { group, generation, leader, .. } => {
                    let leader = leader.as_deref().map(name_of).unwrap_or_else(|| "-".into());
                    t.generations.push((at, group.clone(), *generation, leader));
                    if served {
                        let ended: Vec<String> = open_group
                            .iter()
                            .filter(|(_, g)| *g == group)
                            .map(|(m, _)| m.clone())
                            .collect();
                        let why = format!("generation {generation} started");
                        for member in ended {
                            open_group.remove(&member);
                            close(&mut lanes, &mut open, &member, at, &why);
                        }
                    }
                }
                CoordinatorEvent::AssignmentStored { group, generation, assignments } if served => {
                    for a in assignments {
                        let member = lane_of(&a.member_id);
                        close(&mut lanes, &mut open, &member, at, "reassigned");
                        lane(&mut lanes, &member);
                        if a.partitions.is_empty() {
                            continue;
                        }
                        open_group.insert(member.clone(), group.clone());
                        open.insert(
                            member,
                            Ownership {
                                start: at,
                                end: at,
                                generation: *generation,
                                partitions: a.partitions.clone(),
                                ended_by: String::new(),
                            },
                        );
                    }
                }
                CoordinatorEvent::MemberRemoved { member_id, reason, .. } if served => {
                    let member = lane_of(member_id);
                    open_group.remove(&member);
                    close(&mut lanes, &mut open, &member, at, &format!("removed: {reason:?}"));
                }
                CoordinatorEvent::OffsetCommitRejected { member_id, generation, partition, offset, error, .. } => {
                    let member = lane_of(member_id);
                    lane(&mut lanes, &member).rejected.push((
                        at,
                        format!(
                            "t={at}ms broker-{broker} rejected commit {partition}@{offset} from {member_id} (generation {generation}): {error}"
                        ),
                    ));
                }
                _ => {}
            },
        }
    }
    let end = t.end_ms;
    for member in open.keys().cloned().collect::<Vec<_>>() {
        close(&mut lanes, &mut open, &member, end, "run ended");
    }
    for (member, s) in std::mem::take(&mut alive_since) {
        lane(&mut lanes, &member).alive.push((s, end));
    }
    for (group, mut b) in std::mem::take(&mut open_band) {
        b.end = end;
        t.bands.entry(group).or_default().push(b);
    }
    t.lanes = lanes.into_values().collect();
    for l in &mut t.lanes {
        l.owned.sort_by_key(|o| o.start);
        l.alive.sort_unstable();
    }

    let group_of = |e: &CoordinatorEvent| -> String {
        match e {
            CoordinatorEvent::GroupStateChanged { group, .. }
            | CoordinatorEvent::MemberAdded { group, .. }
            | CoordinatorEvent::MemberRemoved { group, .. }
            | CoordinatorEvent::GenerationStarted { group, .. }
            | CoordinatorEvent::AssignmentStored { group, .. }
            | CoordinatorEvent::OffsetCommitAccepted { group, .. }
            | CoordinatorEvent::OffsetCommitRejected { group, .. }
            | CoordinatorEvent::GroupLoaded { group, .. }
            | CoordinatorEvent::GroupUnloaded { group, .. } => group.clone(),
            CoordinatorEvent::ConsumerGroup(e) => e.group().to_string(),
        }
    };
    let first_group =
        t.bands.keys().next().cloned().unwrap_or_else(|| crate::scenario::GROUP_ID.into());
    for a in &verdict.anomalies {
        let mut spots = Vec::new();
        for &i in &a.events {
            let Some(e) = history.events().get(i) else { continue };
            let spot = match &e.kind {
                EventKind::Member { member, .. } => Spot::Member(member.clone()),
                EventKind::Coordinator { event, .. } => match event {
                    CoordinatorEvent::OffsetCommitAccepted { member_id, .. }
                    | CoordinatorEvent::OffsetCommitRejected { member_id, .. }
                    | CoordinatorEvent::MemberAdded { member_id, .. }
                    | CoordinatorEvent::MemberRemoved { member_id, .. } => {
                        Spot::Member(lane_of(member_id))
                    }
                    other => Spot::Group(group_of(other)),
                },
                EventKind::World(WorldEvent::MemberStarted { member, .. })
                | EventKind::World(WorldEvent::MemberStopped { member })
                | EventKind::World(WorldEvent::MemberExited { member, .. })
                | EventKind::World(WorldEvent::MemberLeaveRequested { member }) => {
                    Spot::Member(member.clone())
                }
                EventKind::World(WorldEvent::FaultInjected { .. })
                | EventKind::World(WorldEvent::ServeFault { .. }) => Spot::Faults,
                EventKind::World(_) => Spot::Group(first_group.clone()),
            };
            spots.push((e.at_ms, spot, format!("#{i} {e}")));
        }
        if spots.is_empty() {
            spots.push((a.at_ms, Spot::Group(first_group.clone()), "no proving event".into()));
        }
        let mut text = format!("{}: {}", a.class, a.message);
        if let Some(tp) = &a.partition {
            text = format!("{} on {tp}: {}", a.class, a.message);
        }
        t.anomalies.push(AnomalyMark { at: a.at_ms, text, spots });
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn natural_order_puts_m2_before_m10() {
        let mut v = vec!["m10", "m2", "a", "m1"];
        v.sort_by_key(|n| natural_key(n));
        assert_eq!(v, vec!["a", "m1", "m2", "m10"]);
    }
}
