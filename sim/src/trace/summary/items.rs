//! What happened around a rebalance, as the summary lists it: members joining and leaving the
//! group, faults (with the trigger that fired them), processes exiting, protocol conversions.

use groupsim_history::ConsumerRemovalReason;
use groupsim_history::RemovalReason;
use groupsim_wire::Millis;

use groupsim_history::Fault;

/// One thing that happened, stamped with when, and the group it concerns (`None`: the whole
/// cluster, such as a fault).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Item {
    /// Simulated milliseconds.
    pub(super) at_ms: Millis,
    /// The group it concerns, if one.
    pub(super) group: Option<String>,
    /// What happened.
    pub(super) what: What,
}

/// The kinds of [`Item`]: joins and removals keep the member id, named when rendered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum What {
    /// The coordinator added a member.
    Joined(String),
    /// The coordinator removed a member, for this reason.
    Removed(String, &'static str),
    /// Anything else, already in words.
    Text(String),
}

/// Why a classic member was removed, in a word or two.
pub(super) fn classic_removal(reason: RemovalReason) -> &'static str {
    match reason {
        RemovalReason::LeaveGroup => "left",
        RemovalReason::SessionTimeout => "session expired",
        RemovalReason::RebalanceTimeout => "rebalance timeout",
        RemovalReason::PendingJoinExpired => "pending join expired",
        RemovalReason::Fenced => "replaced",
    }
}

/// Why a consumer-group member was removed, in a word or two.
pub(super) fn consumer_removal(reason: ConsumerRemovalReason) -> &'static str {
    match reason {
        ConsumerRemovalReason::Left => "left",
        ConsumerRemovalReason::SessionTimeout => "session expired",
        ConsumerRemovalReason::RebalanceTimeout => "rebalance timeout",
        ConsumerRemovalReason::Replaced => "replaced",
        ConsumerRemovalReason::JoinTimeout => "join timeout",
        ConsumerRemovalReason::SyncTimeout => "sync timeout",
    }
}

/// A fault in a few words: its kind, its target and the figures that set its reach.
pub(super) fn fault(f: &Fault) -> String {
    match f {
        Fault::ConnectionDrop { member } => format!("drop {member}"),
        Fault::NetworkPartition { host, peers, heal_after_ms } => {
            let n = peers.len();
            let peers = if n == 1 { "1 peer".to_string() } else { format!("{n} peers") };
            format!("partition {host} from {peers} for {heal_after_ms} ms")
        }
        Fault::LatencySpike { host, max_latency_ms, duration_ms } => {
            format!("latency {host} up to {max_latency_ms} ms for {duration_ms} ms")
        }
        Fault::CoordinatorMove { to, load_ms, .. } => {
            format!("coordinator -> broker-{to} (load {load_ms} ms)")
        }
        Fault::BrokerCrash { node, restart_after_ms } => {
            format!("crash broker-{node} for {restart_after_ms} ms")
        }
        Fault::MemberPause { member, duration_ms } => format!("pause {member} {duration_ms} ms"),
        Fault::MemberCrash { member, .. } => format!("crash {member}"),
        Fault::MemberLeave { member, .. } => format!("leave {member}"),
        Fault::MemberUpgrade { member, profile, .. } => format!("upgrade {member} to {profile:?}"),
        Fault::StaleAck { member, delay_ms } => format!("stale ack {member} +{delay_ms} ms"),
        Fault::SlowRevoke { member, extra_ms } => format!("slow revoke {member} +{extra_ms} ms"),
        Fault::SlowBatch { member, extra_ms } => format!("slow batch {member} +{extra_ms} ms"),
        Fault::OneWayPartition { from, to, .. } => format!("cut {from} -> {to}"),
        Fault::FrameLoss { host, per_mille, .. } => format!("loss {per_mille}/1000 at {host}"),
        Fault::SlowRevokeUntil { member, until_ms } => {
            format!("slow revoke {member} until {until_ms}")
        }
        Fault::PartitionExpansion { topic, partitions } => {
            format!("{topic} grows to {partitions} partitions")
        }
        // Real-time-only faults: their display text is already short.
        other => other.to_string(),
    }
}

/// The protocol event a trigger fires on, from its description (`on join_responses: drop its
/// connections, p=0.110, at most 2x` gives `join_responses`).
pub(super) fn trigger_event(trigger: &str) -> &str {
    let head = trigger.split(':').next().unwrap_or(trigger);
    head.trim().trim_start_matches("on ").trim()
}
