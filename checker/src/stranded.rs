//! The `downgrade-strands-member` hazard: a consumer-protocol member cut off past its session
//! (paused, partitioned) is removed from its consumer group; if the group's last
//! consumer-protocol member then leaves, Kafka downgrades the group to a classic group (online
//! migration, KIP-848). When the stranded member comes back, its ConsumerGroupHeartbeat (a
//! member epoch above 0) finds a classic group and is answered GROUP_ID_NOT_FOUND ("not a
//! consumer group"), which the Java consumer treats as fatal: the process stops consuming until
//! the application restarts it. The history shows it: the member's fatal GROUP_ID_NOT_FOUND
//! comes after its removal from the consumer group and after a downgrade.

use std::collections::BTreeMap;

use groupsim_history::{ConsumerGroupEvent, CoordinatorEvent, EventKind, History, MemberEvent};

use crate::hazard::{Explained, Hazard};
use crate::{Anomaly, AnomalyClass};

/// Splits `anomalies` into those this hazard does not explain and those it does.
pub(crate) fn explain(
    history: &History,
    anomalies: Vec<Anomaly>,
) -> (Vec<Anomaly>, Vec<Explained>) {
    let stranded = stranded_fatals(history);
    if stranded.is_empty() {
        return (anomalies, Vec::new());
    }
    let mut kept = Vec::new();
    let mut explained = Vec::new();
    for anomaly in anomalies {
        let cause = (anomaly.class == AnomalyClass::MemberGaveUp)
            .then(|| anomaly.events.iter().find_map(|i| stranded.get(i).copied()))
            .flatten();
        match cause {
            Some(cause) => {
                explained.push(Explained { hazard: Hazard::DowngradeStrandsMember, cause, anomaly })
            }
            None => kept.push(anomaly),
        }
    }
    (kept, explained)
}

/// Fatal GROUP_ID_NOT_FOUND events of members a consumer group had removed, when a downgrade
/// came after the removal: event index -> the downgrade's.
fn stranded_fatals(history: &History) -> BTreeMap<usize, usize> {
    // Member id -> when the consumer group removed it; the latest downgrade.
    let mut removed: BTreeMap<&str, usize> = BTreeMap::new();
    let mut downgraded: Option<usize> = None;
    let mut stranded = BTreeMap::new();
    for (idx, e) in history.events().iter().enumerate() {
        match &e.kind {
            EventKind::Coordinator { event: CoordinatorEvent::ConsumerGroup(c), .. } => match c {
                ConsumerGroupEvent::MemberRemoved { member_id, .. } => {
                    removed.insert(member_id, idx);
                }
                ConsumerGroupEvent::GroupDowngraded { .. } => downgraded = Some(idx),
                _ => {}
            },
            EventKind::Member { event: MemberEvent::Fatal { member_id, error, .. }, .. }
                if error == "GROUP_ID_NOT_FOUND" =>
            {
                let gone = removed.get(member_id.as_str()).copied();
                if let (Some(gone), Some(down)) = (gone, downgraded) {
                    if gone <= down {
                        stranded.insert(idx, down);
                    }
                }
            }
            _ => {}
        }
    }
    stranded
}
