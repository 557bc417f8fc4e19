//! Trace lines of KIP-848 consumer groups and consumer-protocol members, in the classic lines'
//! style: partitions as `orders[0-2]`, members by their client id. A consumer member id is a
//! 22-character id the client draws, so it is shown as `client-abcd` (client id and the id's
//! first four characters), as a classic member id reads `client-N`. Processed records and
//! accepted commits are summed per member over the epochs it held its partitions in, and
//! printed when it revokes or loses partitions (and at the end).

use std::collections::{BTreeMap, BTreeSet};

use groupsim_history::{
    partition_list, ConsumerGroupEvent, CoordinatorEvent, EventKind, History, MemberEvent,
};

/// Records processed and commits accepted by one member since its last summary, and the
/// member epochs they ran under.
#[derive(Clone, Copy)]
struct EpochTally {
    from: i32,
    to: i32,
    processed: u64,
    commits: u64,
}

impl EpochTally {
    fn new(epoch: i32) -> Self {
        Self { from: epoch, to: epoch, processed: 0, commits: 0 }
    }

    fn at(&mut self, epoch: i32) {
        self.from = self.from.min(epoch);
        self.to = self.to.max(epoch);
    }
}

/// What the trace knows about consumer-protocol members while it reads the history.
#[derive(Default)]
pub(super) struct ConsumerTrace {
    /// Member id -> the client id it belongs to.
    clients: BTreeMap<String, String>,
    /// Member id -> the name of the member process that reported it.
    names: BTreeMap<String, String>,
    /// Member ids of classic-protocol members of a consumer group (shown as they are).
    classic: BTreeSet<String>,
    /// Names of members that speak the consumer protocol.
    members: BTreeSet<String>,
    /// Member name -> its tally since its last summary.
    tallies: BTreeMap<String, EpochTally>,
}

impl ConsumerTrace {
    /// A trace that knows every consumer member id's client up front (a target assignment
    /// names a member before the event that records its joining).
    pub(super) fn new(history: &History) -> Self {
        let mut t = Self::default();
        for e in history.events() {
            let EventKind::Coordinator { event: CoordinatorEvent::ConsumerGroup(e), .. } = &e.kind
            else {
                continue;
            };
            match e {
                ConsumerGroupEvent::MemberJoined {
                    member_id, client_id, classic_protocol, ..
                } => {
                    t.clients.entry(member_id.clone()).or_insert_with(|| client_id.clone());
                    if *classic_protocol {
                        t.classic.insert(member_id.clone());
                    }
                }
                ConsumerGroupEvent::GroupUpgraded { members, .. } => {
                    t.classic.extend(members.iter().map(|m| m.member_id.clone()));
                }
                _ => {}
            }
        }
        t
    }

    /// `member_id` as the trace shows it: `client-abcd` (a classic member's `client-N` as is).
    fn id(&self, member_id: &str) -> String {
        if self.classic.contains(member_id) {
            return member_id.to_string();
        }
        let short: String = member_id.chars().take(4).collect();
        match self.clients.get(member_id) {
            Some(client) => format!("{client}-{short}"),
            None => member_id.chars().take(6).collect(),
        }
    }

    /// `member_id` as the trace shows it, if it is a consumer member's.
    pub(super) fn member_id(&self, member_id: &str) -> Option<String> {
        self.clients.contains_key(member_id).then(|| self.id(member_id))
    }

    /// The lines of a consumer-group event recorded by `broker`.
    pub(super) fn coordinator(&mut self, broker: i32, e: &ConsumerGroupEvent) -> Vec<String> {
        let b = format!("broker-{broker}");
        match e {
            ConsumerGroupEvent::MemberJoined {
                member_id,
                group_instance_id,
                client_id,
                classic_protocol,
                ..
            } => {
                self.clients.insert(member_id.clone(), client_id.clone());
                if *classic_protocol {
                    self.classic.insert(member_id.clone());
                }
                let instance = group_instance_id
                    .as_ref()
                    .map(|i| format!(" (instance {i})"))
                    .unwrap_or_default();
                let classic = if *classic_protocol { " (classic protocol)" } else { "" };
                vec![format!("{b} adds {}{instance}{classic}", self.id(member_id))]
            }
            ConsumerGroupEvent::GroupEpochBumped { group, epoch } => {
                vec![format!("{b} group {group}: group epoch {epoch}")]
            }
            ConsumerGroupEvent::TargetAssignmentComputed {
                epoch, assignor, assignments, ..
            } => assignments
                .iter()
                .map(|a| {
                    format!(
                        "{b} target epoch {epoch} ({assignor}) assigns {} <- {}",
                        self.id(&a.member_id),
                        partition_list(&a.partitions)
                    )
                })
                .collect(),
            ConsumerGroupEvent::MemberEpochChanged { member_id, from, to, state, .. } => {
                let m = self.id(member_id);
                if from == to {
                    vec![format!("{b} {m} at epoch {to}: {state}")]
                } else {
                    vec![format!("{b} {m} epoch {from} -> {to}: {state}")]
                }
            }
            ConsumerGroupEvent::PartitionsAssigned {
                member_id,
                member_epoch,
                partitions: ps,
                ..
            } => {
                vec![format!(
                    "{b} gives {} {} (epoch {member_epoch})",
                    self.id(member_id),
                    partition_list(ps)
                )]
            }
            ConsumerGroupEvent::PartitionsRevoking {
                member_id,
                member_epoch,
                partitions: ps,
                ..
            } => {
                vec![format!(
                    "{b} asks {} to revoke {} (epoch {member_epoch})",
                    self.id(member_id),
                    partition_list(ps)
                )]
            }
            ConsumerGroupEvent::PartitionsReleased {
                member_id,
                member_epoch,
                partitions: ps,
                ..
            } => {
                vec![format!(
                    "{b} {} released {} (epoch {member_epoch})",
                    self.id(member_id),
                    partition_list(ps)
                )]
            }
            ConsumerGroupEvent::MemberRemoved { member_id, member_epoch, reason, .. } => {
                vec![format!(
                    "{b} removes {} at epoch {member_epoch} ({reason:?})",
                    self.id(member_id)
                )]
            }
            ConsumerGroupEvent::GroupLoaded {
                group,
                partition,
                group_epoch,
                assignment_epoch,
                members,
            } => {
                let held: Vec<String> = members
                    .iter()
                    .map(|m| {
                        format!(
                            "{} epoch {} {}",
                            self.id(&m.member_id),
                            m.member_epoch,
                            partition_list(&m.owned)
                        )
                    })
                    .collect();
                vec![format!(
                    "{b} loads consumer group {group} (offsets partition {partition}): group epoch \
                     {group_epoch}, target epoch {assignment_epoch}, members [{}]",
                    held.join(", ")
                )]
            }
            ConsumerGroupEvent::GroupUpgraded { group, generation, members } => {
                self.classic.extend(members.iter().map(|m| m.member_id.clone()));
                let held: Vec<String> = members
                    .iter()
                    .map(|m| format!("{} {}", self.id(&m.member_id), partition_list(&m.partitions)))
                    .collect();
                vec![format!(
                    "{b} upgrades classic group {group} (generation {generation}) to a consumer \
                     group at epoch {generation}, classic members [{}]",
                    held.join(", ")
                )]
            }
            ConsumerGroupEvent::GroupDowngraded { group, group_epoch, leaving_member, members } => {
                let held: Vec<String> = members
                    .iter()
                    .map(|m| format!("{} {}", self.id(&m.member_id), partition_list(&m.partitions)))
                    .collect();
                vec![format!(
                    "{b} downgrades consumer group {group} to a classic group at generation \
                     {group_epoch} ({} was the last consumer-protocol member), members [{}]",
                    self.id(leaving_member),
                    held.join(", ")
                )]
            }
            ConsumerGroupEvent::UpgradeRefused { group, member_id, reason } => vec![format!(
                "{b} refuses to upgrade classic group {group} for {} ({reason}): \
                 GROUP_ID_NOT_FOUND",
                self.id(member_id)
            )],
            ConsumerGroupEvent::EmptyGroupDeleted { group } => {
                vec![format!("{b} deletes empty consumer group {group} for a classic JoinGroup")]
            }
        }
    }

    /// An accepted commit, if it is a consumer member's: counted in its tally.
    pub(super) fn commit_accepted(&mut self, member_id: &str, epoch: i32) -> bool {
        let Some(name) = self.names.get(member_id) else { return false };
        self.tallies.entry(name.clone()).or_insert_with(|| EpochTally::new(epoch)).at(epoch);
        if let Some(t) = self.tallies.get_mut(name) {
            t.commits += 1;
        }
        true
    }

    /// The lines of member `name`'s event, if the member speaks the consumer protocol (`None`:
    /// a classic member, whose lines the classic trace writes).
    pub(super) fn member(&mut self, name: &str, e: &MemberEvent) -> Option<Vec<String>> {
        if matches!(
            e,
            MemberEvent::MemberEpochChanged { .. }
                | MemberEvent::AssignmentReceived { .. }
                | MemberEvent::Fenced { .. }
                | MemberEvent::HeartbeatFailed { .. }
        ) {
            self.members.insert(name.to_string());
        }
        // Only a classic member joins a generation: a member rolled back to the classic protocol
        // (online migration) is the classic trace's again.
        if matches!(e, MemberEvent::Joined { .. }) {
            self.members.remove(name);
        }
        if !self.members.contains(name) {
            return None;
        }
        let lines = match e {
            MemberEvent::MemberEpochChanged { member_id, previous, epoch } => {
                self.names.insert(member_id.clone(), name.to_string());
                self.clients.entry(member_id.clone()).or_insert_with(|| name.to_string());
                vec![format!("{name} epoch {previous} -> {epoch}")]
            }
            MemberEvent::AssignmentReceived { epoch, partitions: ps, unresolved, .. } => {
                let more = if unresolved.is_empty() {
                    String::new()
                } else {
                    format!(" and {} unresolved topic id(s)", unresolved.len())
                };
                vec![format!(
                    "{name} receives assignment {}{more} (epoch {epoch})",
                    partition_list(ps)
                )]
            }
            MemberEvent::Assigned { generation, partitions: ps, .. } => {
                vec![format!("{name} owns {} (epoch {generation})", partition_list(ps))]
            }
            MemberEvent::Revoked { generation, partitions: ps, .. } => {
                let mut lines = self.flush(name);
                lines.push(format!("{name} revokes {} (epoch {generation})", partition_list(ps)));
                lines
            }
            MemberEvent::Lost { generation, partitions: ps, reason, .. } => {
                let mut lines = self.flush(name);
                lines.push(format!(
                    "{name} loses {} (epoch {generation}): {reason}",
                    partition_list(ps)
                ));
                lines
            }
            MemberEvent::Fenced { epoch, error, .. } => {
                vec![format!("{name} fenced at epoch {epoch}: {error}")]
            }
            MemberEvent::HeartbeatFailed { epoch, error, .. } => {
                vec![format!("{name} heartbeat at epoch {epoch} failed: {error}")]
            }
            MemberEvent::Fatal { generation, error, .. } => {
                vec![format!("{name} stops at epoch {generation}: {error}")]
            }
            MemberEvent::CoordinatorLost { reason } => {
                vec![format!("{name} lost its coordinator: {reason}")]
            }
            MemberEvent::Left { member_id } => {
                vec![format!("{name} left as {}", self.id(member_id))]
            }
            MemberEvent::RecordsProcessed { generation, first_offset, last_offset, .. } => {
                let t = self
                    .tallies
                    .entry(name.to_string())
                    .or_insert_with(|| EpochTally::new(*generation));
                t.at(*generation);
                t.processed += (last_offset - first_offset + 1).max(0) as u64;
                Vec::new()
            }
            _ => Vec::new(),
        };
        Some(lines)
    }

    /// The summary line of `name`'s tally, if it has one, and a fresh tally.
    fn flush(&mut self, name: &str) -> Vec<String> {
        self.tallies.remove(name).map(|t| summary(name, &t)).into_iter().collect()
    }

    /// The summary lines of every tally left at the end, by member name.
    pub(super) fn finish(&mut self) -> Vec<String> {
        std::mem::take(&mut self.tallies).iter().map(|(name, t)| summary(name, t)).collect()
    }
}

fn summary(name: &str, t: &EpochTally) -> String {
    let epochs = if t.from == t.to {
        format!("epoch {}", t.from)
    } else {
        format!("epochs {}-{}", t.from, t.to)
    };
    format!("{name} {epochs}: processed {} records, {} commits accepted", t.processed, t.commits)
}
