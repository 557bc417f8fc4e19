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

use groupsim_checker::Verdict;
use groupsim_history::History;

/// Renders the rebalance summary of a history with its verdict.
pub fn summary(history: &History, verdict: &Verdict) -> String {
    let names = names::Names::learn(history);
    render::render(&story::build(history), &names, verdict)
}
