//! Member ids as the summary shows them: by the member's scenario name (`m3`), which outlives
//! the member ids a restart or a reset hands out, so a snapshot does not churn when an id
//! counter moves.

use std::collections::{BTreeMap, BTreeSet};

use groupsim_history::ConsumerGroupEvent;
use groupsim_history::CoordinatorEvent;
use groupsim_history::MemberEvent;

use groupsim_history::{EventKind, History};

/// Member id -> name, learned from the whole history before rendering (an assignment names a
/// member before the member reports anything about itself).
#[derive(Default)]
pub(super) struct Names {
    /// Member id -> the member name that reported it (or, failing that, its client id).
    names: BTreeMap<String, String>,
    /// Member id -> its place among the ids of the same name, counting from 1.
    incarnation: BTreeMap<String, usize>,
}

impl Names {
    /// Learns every member id of `history`: what members report about themselves first, then
    /// the coordinators' client ids for ids no member reported (a served history has no member
    /// events).
    pub(super) fn learn(history: &History) -> Self {
        let mut names: BTreeMap<String, String> = BTreeMap::new();
        // Every id once, in the order the history first mentions it.
        let mut order: Vec<String> = Vec::new();
        let mut mentioned: BTreeSet<String> = BTreeSet::new();
        let mut clients: BTreeMap<String, String> = BTreeMap::new();
        for e in history.events() {
            match &e.kind {
                EventKind::Member { member, event } => {
                    let Some(id) = member_id(event).filter(|id| !id.is_empty()) else { continue };
                    if mentioned.insert(id.to_string()) {
                        order.push(id.to_string());
                    }
                    names.insert(id.to_string(), member.clone());
                }
                EventKind::Coordinator { event, .. } => {
                    let (id, client) = match event {
                        CoordinatorEvent::MemberAdded { member_id, client_id, .. } => {
                            (member_id, client_id)
                        }
                        CoordinatorEvent::ConsumerGroup(ConsumerGroupEvent::MemberJoined {
                            member_id,
                            client_id,
                            ..
                        }) => (member_id, client_id),
                        _ => continue,
                    };
                    if mentioned.insert(id.clone()) {
                        order.push(id.clone());
                    }
                    clients.entry(id.clone()).or_insert_with(|| client.clone());
                }
                EventKind::World(_) => {}
            }
        }
        for (id, client) in clients {
            names.entry(id.clone()).or_insert_with(|| client_name(&id, &client));
        }
        let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
        let mut incarnation = BTreeMap::new();
        for id in &order {
            let Some(name) = names.get(id) else { continue };
            let n = seen.entry(name.as_str()).or_insert(0);
            *n += 1;
            incarnation.insert(id.clone(), *n);
        }
        Self { names, incarnation }
    }

    /// The member name of `member_id` (the id itself, shortened, if nothing names it).
    pub(super) fn name(&self, member_id: &str) -> String {
        match self.names.get(member_id) {
            Some(name) => name.clone(),
            None => member_id.chars().take(12).collect(),
        }
    }

    /// The name of `member_id` with its incarnation (`m0#2`), to tell apart two ids of one
    /// member that meet in one rebalance.
    pub(super) fn distinct(&self, member_id: &str) -> String {
        let n = self.incarnation.get(member_id).copied().unwrap_or(1);
        format!("{}#{n}", self.name(member_id))
    }
}

/// A name for an id only a coordinator reported: its client id (which a restarted process
/// shares with its earlier incarnations, as a member name does).
fn client_name(member_id: &str, client_id: &str) -> String {
    if client_id.is_empty() {
        return member_id.chars().take(12).collect();
    }
    client_id.to_string()
}

/// The member id a member event carries, if it carries one.
fn member_id(e: &MemberEvent) -> Option<&str> {
    match e {
        MemberEvent::Joined { member_id, .. }
        | MemberEvent::Assigned { member_id, .. }
        | MemberEvent::Revoked { member_id, .. }
        | MemberEvent::Lost { member_id, .. }
        | MemberEvent::PositionInitialized { member_id, .. }
        | MemberEvent::RecordsProcessed { member_id, .. }
        | MemberEvent::CommitSent { member_id, .. }
        | MemberEvent::CommitAcked { member_id, .. }
        | MemberEvent::CommitFailed { member_id, .. }
        | MemberEvent::Left { member_id }
        | MemberEvent::Fatal { member_id, .. }
        | MemberEvent::MemberEpochChanged { member_id, .. }
        | MemberEvent::AssignmentReceived { member_id, .. }
        | MemberEvent::Fenced { member_id, .. }
        | MemberEvent::HeartbeatFailed { member_id, .. }
        | MemberEvent::GenerationReset { member_id, .. } => Some(member_id),
        MemberEvent::CoordinatorFound { .. }
        | MemberEvent::CoordinatorLost { .. }
        | MemberEvent::JoinRefused { .. }
        | MemberEvent::AssignmentComputed { .. }
        | MemberEvent::GroupDescribed { .. }
        | MemberEvent::GroupsListed { .. }
        | MemberEvent::OffsetsFetched { .. }
        | MemberEvent::InvalidRequestAnswered { .. } => None,
    }
}

/// Orders names like `m2` before `m10` (by the text before the trailing digits, then their
/// value), and a member's incarnations (`m4#2`) after its plain name, by number.
pub(super) fn natural_key(name: &str) -> (String, u64, u64, String) {
    let (base, incarnation) = name.split_once('#').unwrap_or((name, "0"));
    let digits = base.len() - base.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    let (prefix, num) = base.split_at(base.len() - digits);
    let incarnation = incarnation.parse().unwrap_or(0);
    (prefix.to_string(), num.parse().unwrap_or(0), incarnation, name.to_string())
}
