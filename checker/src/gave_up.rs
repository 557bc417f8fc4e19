//! `member-gave-up`: a member that stopped consuming on its own.
//!
//! A member process stops when the scenario or the nemesis stops it (a requested leave, a crash,
//! the end of the run). One that stops by itself — a client error it treats as fatal, or a leave
//! nobody asked for — has given up while the group still expected it: its partitions wait for a
//! rebalance, and nothing consumes for that process again. Some errors stop any correct client,
//! because the cluster tells it to (another instance took its `group.instance.id`, the group is
//! full, it is not authorised, the broker does not speak its protocol): those are not judged.

use groupsim_history::MemberEvent;
use groupsim_wire::Millis;

use super::anomaly::{Anomaly, AnomalyClass};
use super::views::Views;

/// Errors after which Kafka expects every client to stop (its `fatal` errors for a group
/// member that no retry can cure).
const STOPS_ANY_CLIENT: &[&str] = &[
    "FENCED_INSTANCE_ID",
    "UNRELEASED_INSTANCE_ID",
    "GROUP_AUTHORIZATION_FAILED",
    "GROUP_MAX_SIZE_REACHED",
    "UNSUPPORTED_VERSION",
    "INVALID_SESSION_TIMEOUT",
    "INCONSISTENT_GROUP_PROTOCOL",
    "UNSUPPORTED_ASSIGNOR",
];

/// The anomaly of member `name`'s event `event` (number `idx`), if it stopped on its own.
pub(super) fn gave_up(
    views: &Views,
    idx: usize,
    at: Millis,
    name: &str,
    event: &MemberEvent,
) -> Option<Anomaly> {
    let member = views.members.get(name)?;
    let why = match event {
        MemberEvent::Fatal { error, member_id, generation } => {
            if STOPS_ANY_CLIENT.contains(&error.as_str()) {
                return None;
            }
            format!(
                "{name} ({member_id}, generation {generation}) stopped for good on {error}, an \
                 error a correct client survives: it no longer consumes"
            )
        }
        MemberEvent::Left { member_id } if !member.leave_requested => format!(
            "{name} ({member_id}) left the group though nobody asked it to: it no longer consumes"
        ),
        _ => return None,
    };
    Some(Anomaly::new(AnomalyClass::MemberGaveUp, None, at, why, vec![idx]))
}

#[cfg(test)]
mod tests {
    use groupsim_history::{MemberEvent, WorldEvent};

    use crate::tests::clean;
    use crate::{check, AnomalyClass};

    fn gave_up(events: &[MemberEvent], requested: bool) -> Vec<AnomalyClass> {
        let mut h = clean();
        if requested {
            h.world(WorldEvent::MemberLeaveRequested { member: "m0".into() });
        }
        for e in events {
            h.member("m0", e.clone());
        }
        let v = check(&h.finish(&[(0, 10), (1, 10)]));
        v.anomalies.iter().map(|a| a.class).filter(|c| *c == AnomalyClass::MemberGaveUp).collect()
    }

    fn fatal(error: &str) -> MemberEvent {
        MemberEvent::Fatal { member_id: "a".into(), generation: 1, error: error.into() }
    }

    /// kafkajs #1390: a JoinGroup answered COORDINATOR_LOAD_IN_PROGRESS crashed the consumer.
    #[test]
    fn a_member_stopping_on_a_retriable_error_gave_up() {
        assert_eq!(
            gave_up(&[fatal("COORDINATOR_LOAD_IN_PROGRESS")], false),
            [AnomalyClass::MemberGaveUp]
        );
    }

    #[test]
    fn a_member_fenced_by_its_replacement_did_not_give_up() {
        assert_eq!(gave_up(&[fatal("FENCED_INSTANCE_ID")], false), []);
    }

    #[test]
    fn leaving_unasked_is_giving_up_and_a_requested_leave_is_not() {
        let left = MemberEvent::Left { member_id: "a".into() };
        assert_eq!(gave_up(std::slice::from_ref(&left), false), [AnomalyClass::MemberGaveUp]);
        assert_eq!(gave_up(&[left], true), []);
    }
}
