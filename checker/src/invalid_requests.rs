//! `invalid-request-accepted`: a misbehaving client (the `invalid_requests` scenario's) sends
//! the coordinator requests Kafka refuses whatever state the group is in — a malformed
//! ConsumerGroupHeartbeat, a JoinGroup with an empty group id or a session timeout out of
//! bounds, group requests from a member id the group never gave, an unknown coordinator key
//! type. Each answer is in the history; one that carries no error is a coordinator that let a
//! stranger in, or read garbage as a request.
//!
//! One exception is Kafka's own: a classic Heartbeat reaching a coordinator that is still
//! loading the group is answered NONE without being read (both of Kafka's group coordinators
//! "respond blindly", so members keep their sessions through the load). A stranger's heartbeat
//! answered NONE is excused when the answering broker's next load or unload of the group after
//! the request was sent is a load: it was loading the group then.

use groupsim_history::{ConsumerGroupEvent, CoordinatorEvent, EventKind, History, MemberEvent};

use crate::{Anomaly, AnomalyClass};

/// The case whose NONE is Kafka's blind answer while the group loads.
const BLIND_WHILE_LOADING: &str = "classic-heartbeat-stranger";

/// Every accepted invalid request, proved by its answer.
pub(super) fn check(history: &History) -> Vec<Anomaly> {
    let mut out = Vec::new();
    let events = history.events();
    for (idx, e) in events.iter().enumerate() {
        let EventKind::Member { member, event } = &e.kind else { continue };
        let MemberEvent::InvalidRequestAnswered { node_id, sent_at, case, error: None } = event
        else {
            continue;
        };
        if case == BLIND_WHILE_LOADING && loading(history, *node_id, *sent_at) {
            continue;
        }
        out.push(Anomaly::new(
            AnomalyClass::InvalidRequestAccepted,
            None,
            e.at_ms,
            format!(
                "{member}'s {case} request (sent at {sent_at} ms) was answered by broker \
                 {node_id} without an error"
            ),
            vec![idx],
        ));
    }
    out
}

/// Whether broker `node`'s first load or unload of a group at or after `sent_at` is a load (it
/// was loading then). The misbehaving client only ever names its own group.
fn loading(history: &History, node: i32, sent_at: u64) -> bool {
    history
        .events()
        .iter()
        .filter(|e| e.at_ms >= sent_at)
        .find_map(|e| match &e.kind {
            EventKind::Coordinator { broker, event } if *broker == node => match event {
                CoordinatorEvent::GroupLoaded { .. }
                | CoordinatorEvent::ConsumerGroup(ConsumerGroupEvent::GroupLoaded { .. }) => {
                    Some(true)
                }
                CoordinatorEvent::GroupUnloaded { .. } => Some(false),
                _ => None,
            },
            _ => None,
        })
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use groupsim_history::{CoordinatorEvent, EventKind, GroupState, History, MemberEvent};

    use crate::{check, AnomalyClass};

    fn answered(h: &mut History, case: &str, error: Option<&str>) {
        let event = MemberEvent::InvalidRequestAnswered {
            node_id: 1,
            sent_at: 5,
            case: case.into(),
            error: error.map(str::to_string),
        };
        h.record(10, EventKind::Member { member: "x0".into(), event });
    }

    fn loaded_by_broker_1(h: &mut History) {
        let event = CoordinatorEvent::GroupLoaded {
            group: "g".into(),
            partition: 0,
            state: GroupState::Empty,
            generation: 0,
            protocol: None,
            leader: None,
            members: Vec::new(),
            assignments: Vec::new(),
            offsets: Vec::new(),
        };
        h.record(20, EventKind::Coordinator { broker: 1, event });
    }

    #[test]
    fn a_refused_invalid_request_passes() {
        let mut h = History::new();
        answered(&mut h, "join-stranger", Some("UNKNOWN_MEMBER_ID"));
        let v = check(&h);
        assert!(v.anomalies.is_empty(), "{:?}", v.anomalies);
    }

    #[test]
    fn an_accepted_invalid_request_fails_proved_by_its_answer() {
        let mut h = History::new();
        answered(&mut h, "join-stranger", None);
        let v = check(&h);
        let [a] = &v.anomalies[..] else { panic!("one anomaly: {:?}", v.anomalies) };
        assert_eq!(a.class, AnomalyClass::InvalidRequestAccepted);
        assert_eq!(a.events, vec![0]);
        assert!(a.message.contains("x0's join-stranger request"), "{}", a.message);
    }

    #[test]
    fn a_strangers_heartbeat_answered_blindly_while_the_group_loads_passes() {
        let mut h = History::new();
        answered(&mut h, "classic-heartbeat-stranger", None);
        loaded_by_broker_1(&mut h);
        assert!(check(&h).anomalies.is_empty());
    }

    #[test]
    fn a_strangers_heartbeat_accepted_by_a_broker_holding_the_group_fails() {
        let mut h = History::new();
        answered(&mut h, "classic-heartbeat-stranger", None);
        let v = check(&h);
        assert_eq!(v.anomalies.len(), 1, "{:?}", v.anomalies);
        // Only the heartbeat has Kafka's blind answer: a join accepted while loading fails.
        let mut h = History::new();
        answered(&mut h, "join-stranger", None);
        loaded_by_broker_1(&mut h);
        assert_eq!(check(&h).anomalies.len(), 1);
    }
}
