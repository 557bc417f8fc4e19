//! The `downgrade-strands-member` hazard: a consumer-protocol member cut off past its session
//! (paused, partitioned) is removed from its consumer group; if the group's last
//! consumer-protocol member then leaves, Kafka downgrades the group to a classic group (online
//! migration, KIP-848). When the stranded member comes back, its ConsumerGroupHeartbeat (a
//! member epoch above 0) finds a classic group and is answered GROUP_ID_NOT_FOUND ("not a
//! consumer group"), which the Java consumer treats as fatal: the process stops consuming until
//! the application restarts it. The same happens when every member was removed and a classic
//! member's JoinGroup found the consumer group empty: Kafka replaces an empty consumer group by
//! a classic group. The history shows it: the member's fatal GROUP_ID_NOT_FOUND comes after its
//! removal from the consumer group and after the group became classic (a downgrade, or a classic
//! group state change of that group id).
//!
//! The `refused-upgrade-stops-member` hazard: a consumer-protocol member joining a classic group
//! with members asks the coordinator to convert it (online upgrade); when Kafka may not
//! (`group.consumer.migration.policy` forbids upgrades, the group exceeds
//! `group.consumer.max.size`, its protocol type is not `consumer`, or a member's embedded
//! protocol does not parse) the member is answered the same GROUP_ID_NOT_FOUND and stops. The
//! history shows the coordinator's refusal naming that member id before its fatal error.

use std::collections::BTreeMap;

use groupsim_history::{ConsumerGroupEvent, CoordinatorEvent, EventKind, History, MemberEvent};
use groupsim_wire::Millis;

use crate::hazard::{Explained, Hazard};
use crate::{Anomaly, AnomalyClass};

/// Splits `anomalies` into those this hazard does not explain and those it does.
pub(crate) fn explain(
    history: &History,
    anomalies: Vec<Anomaly>,
) -> (Vec<Anomaly>, Vec<Explained>) {
    let stranded = stranded_fatals(history);
    let refused = refused_fatals(history);
    if stranded.is_empty() && refused.is_empty() {
        return (anomalies, Vec::new());
    }
    let mut kept = Vec::new();
    let mut explained = Vec::new();
    for anomaly in anomalies {
        let gave_up = anomaly.class == AnomalyClass::MemberGaveUp;
        let cause = |by: &BTreeMap<usize, usize>, hazard: Hazard| {
            gave_up
                .then(|| anomaly.events.iter().find_map(|i| by.get(i).map(|c| (hazard, *c))))
                .flatten()
        };
        let found = cause(&stranded, Hazard::DowngradeStrandsMember)
            .or_else(|| cause(&refused, Hazard::RefusedUpgradeStopsMember));
        match found {
            Some((hazard, cause)) => explained.push(Explained { hazard, cause, anomaly }),
            None => kept.push(anomaly),
        }
    }
    (kept, explained)
}

/// Fatal GROUP_ID_NOT_FOUND events of members a consumer group had removed, when the group
/// became classic after the removal and no later than the fatal error's millisecond (events of
/// one millisecond on different hosts are recorded in no causal order): event index -> the
/// event that shows it classic.
fn stranded_fatals(history: &History) -> BTreeMap<usize, usize> {
    let events = history.events();
    // Signs of a classic group: a downgrade, or a classic group's state change (event, group,
    // when).
    let classic: Vec<(usize, &str, Millis)> = (events.iter().enumerate())
        .filter_map(|(idx, e)| match &e.kind {
            EventKind::Coordinator {
                event:
                    CoordinatorEvent::ConsumerGroup(ConsumerGroupEvent::GroupDowngraded {
                        group, ..
                    }),
                ..
            }
            | EventKind::Coordinator {
                event:
                    CoordinatorEvent::ConsumerGroup(ConsumerGroupEvent::EmptyGroupDeleted { group }),
                ..
            }
            | EventKind::Coordinator {
                event: CoordinatorEvent::GroupStateChanged { group, .. },
                ..
            } => Some((idx, group.as_str(), e.at_ms)),
            _ => None,
        })
        .collect();
    // Member id -> when, and from which group, a consumer group last removed it.
    let mut removed: BTreeMap<&str, (usize, &str)> = BTreeMap::new();
    let mut stranded = BTreeMap::new();
    for (idx, e) in events.iter().enumerate() {
        match &e.kind {
            EventKind::Coordinator {
                event:
                    CoordinatorEvent::ConsumerGroup(ConsumerGroupEvent::MemberRemoved {
                        group,
                        member_id,
                        ..
                    }),
                ..
            } => {
                removed.insert(member_id, (idx, group));
            }
            EventKind::Member { event: MemberEvent::Fatal { member_id, error, .. }, .. }
                if error == "GROUP_ID_NOT_FOUND" =>
            {
                let Some(&(gone, from)) = removed.get(member_id.as_str()) else { continue };
                let sign =
                    classic.iter().find(|&&(c, g, at)| c > gone && g == from && at <= e.at_ms);
                if let Some(&(sign, _, _)) = sign {
                    stranded.insert(idx, sign);
                }
            }
            _ => {}
        }
    }
    stranded
}

/// Fatal GROUP_ID_NOT_FOUND events of members whose join a coordinator refused to convert a
/// classic group for (the latest refusal naming the member before its fatal error): event index
/// -> the refusal's.
fn refused_fatals(history: &History) -> BTreeMap<usize, usize> {
    let mut refusals: BTreeMap<&str, usize> = BTreeMap::new();
    let mut refused = BTreeMap::new();
    for (idx, e) in history.events().iter().enumerate() {
        match &e.kind {
            EventKind::Coordinator {
                event:
                    CoordinatorEvent::ConsumerGroup(ConsumerGroupEvent::UpgradeRefused {
                        member_id,
                        ..
                    }),
                ..
            } => {
                refusals.insert(member_id, idx);
            }
            EventKind::Member { event: MemberEvent::Fatal { member_id, error, .. }, .. }
                if error == "GROUP_ID_NOT_FOUND" =>
            {
                if let Some(cause) = refusals.get(member_id.as_str()) {
                    refused.insert(idx, *cause);
                }
            }
            _ => {}
        }
    }
    refused
}
