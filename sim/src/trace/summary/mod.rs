//! The rebalance summary: a run told rebalance by rebalance, short enough to review in a minute,
//! which is what the trace snapshots hold (the full trace stays one `groupsim trace` away).
//!
//! One block per rebalance (a classic group's generation, a consumer group's target assignment
//! epoch): when it started and how it ended, what preceded it and what happened during it
//! (members joining and leaving, faults and the triggers that fired them), and the assignment
//! with each member's commits under it. A closing block gives the verdict, how the run ended and
//! its totals. Members go by their scenario names (`m3`), partitions in the trace's compact
//! form (`orders[0-1] payments[0]`), times in simulated milliseconds.

mod classic;
mod consumer;
mod items;
mod names;
mod render;
mod story;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use groupsim_checker::Verdict;
use groupsim_history::{EventKind, History, MemberEvent};

/// Renders the rebalance summary of a history with its verdict.
pub fn summary(history: &History, verdict: &Verdict) -> String {
    let names = names::Names::learn(history);
    let mut out = render::render(&story::build(history), &names, verdict);
    out.push_str(&admin_answers(history));
    out
}

/// A closing line per client beside the group (an admin client, a misbehaving one): how many
/// answers of each kind it got, and how many were errors (empty when the run had none).
fn admin_answers(history: &History) -> String {
    let mut by: BTreeMap<&str, BTreeMap<&str, (usize, usize)>> = BTreeMap::new();
    for e in history.events() {
        let EventKind::Member { member, event } = &e.kind else { continue };
        let (api, error) = match event {
            MemberEvent::GroupDescribed { api, error, .. } => (api.as_str(), error.is_some()),
            MemberEvent::GroupsListed { error, .. } => ("ListGroups", error.is_some()),
            MemberEvent::OffsetsFetched { error, .. } => ("OffsetFetch", error.is_some()),
            MemberEvent::InvalidRequestAnswered { error, .. } => {
                ("requests Kafka refuses", error.is_some())
            }
            _ => continue,
        };
        let n = by.entry(member.as_str()).or_default().entry(api).or_default();
        n.0 += 1;
        n.1 += usize::from(error);
    }
    let mut out = String::new();
    for (member, apis) in by {
        let each: Vec<String> =
            apis.iter().map(|(api, (n, errors))| format!("{api} {n} ({errors} errors)")).collect();
        out.push_str(&format!("client {member} beside the group: {}\n", each.join(", ")));
    }
    out
}
