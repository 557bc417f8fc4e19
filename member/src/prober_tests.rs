use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::leave_group_response::MemberResponse;
use kafka_protocol::messages::{
    BrokerId, ConsumerGroupHeartbeatResponse, FindCoordinatorResponse, LeaveGroupResponse,
};

use super::*;

fn prober() -> InvalidRequestProber {
    let mut config = MemberConfig::new("g", "x0", vec!["t".into()]);
    config.invalid_request_prober = true;
    InvalidRequestProber::new(config, 11)
}

/// Drains the outputs: the requests sent (id, target, request) and the events.
fn drain(
    p: &mut InvalidRequestProber,
) -> (Vec<(RequestId, Target, RequestKind)>, Vec<MemberEvent>) {
    let (mut sent, mut events) = (Vec::new(), Vec::new());
    while let Some(out) = p.poll_output() {
        match out {
            MemberOutput::Send { id, target, request, .. } => sent.push((id, target, request)),
            MemberOutput::Event(e) => events.push(e),
            MemberOutput::Close(_) => {}
        }
    }
    (sent, events)
}

/// Starts `p` and answers its FindCoordinator with broker 2; returns the next cycle's request.
fn found(p: &mut InvalidRequestProber) -> (RequestId, Target, RequestKind) {
    p.start(0);
    let (sent, _) = drain(p);
    let [(id, Target::Broker(_), RequestKind::FindCoordinator(_))] = &sent[..] else {
        panic!("a FindCoordinator first: {sent:?}")
    };
    let answer = FindCoordinatorResponse::default().with_coordinators(vec![Coordinator::default()
        .with_key(sb("g"))
        .with_node_id(BrokerId(2))]);
    p.handle_response(1, *id, ResponseKind::FindCoordinator(answer));
    let next = p.poll_timeout().expect("a next cycle");
    p.handle_timeout(next);
    let (mut sent, _) = drain(p);
    assert_eq!(sent.len(), 1, "{sent:?}");
    sent.remove(0)
}

#[test]
fn probes_the_coordinator_it_found_and_records_each_refusal() {
    let mut p = prober();
    let (id, target, _) = found(&mut p);
    assert_eq!(target, Target::Coordinator(2));
    let refused =
        ConsumerGroupHeartbeatResponse::default().with_error_code(codes::INVALID_GROUP_ID);
    let (case, sent_at) = match p.in_flight.get(&id) {
        Some(Asked::Probe { case, sent_at, .. }) => (*case, *sent_at),
        other => panic!("a probe in flight: {other:?}"),
    };
    p.handle_response(sent_at + 3, id, ResponseKind::ConsumerGroupHeartbeat(refused));
    let (_, events) = drain(&mut p);
    assert_eq!(
        events,
        vec![MemberEvent::InvalidRequestAnswered {
            node_id: 2,
            sent_at,
            case: case.name().into(),
            error: Some("INVALID_GROUP_ID".into()),
        }]
    );
    assert_eq!(p.coordinator, Some(2), "a refusal is not a coordinator change");
}

#[test]
fn an_accepted_probe_is_recorded_without_error_and_not_coordinator_sends_it_searching() {
    let mut p = prober();
    let (id, _, _) = found(&mut p);
    // Whatever the drawn case, a leave answer whose member errors are all NONE accepts it.
    let ok = LeaveGroupResponse::default()
        .with_members(vec![MemberResponse::default().with_member_id(sb(STRANGER))]);
    p.handle_response(3, id, ResponseKind::LeaveGroup(ok));
    let (_, events) = drain(&mut p);
    assert!(
        matches!(&events[..], [MemberEvent::InvalidRequestAnswered { error: None, .. }]),
        "{events:?}"
    );
    let next = p.poll_timeout().expect("a next cycle");
    p.handle_timeout(next);
    let (sent, _) = drain(&mut p);
    let (id, _, _) = &sent[0];
    let moved = LeaveGroupResponse::default().with_error_code(codes::NOT_COORDINATOR);
    p.handle_response(next + 1, *id, ResponseKind::LeaveGroup(moved));
    assert_eq!(p.coordinator, None);
}

#[test]
fn every_case_is_a_request_kafka_refuses_in_one_field() {
    for case in InvalidCase::ALL {
        let r = request(case, "g", &["t".to_string()]);
        match (case, r) {
            (InvalidCase::HeartbeatEmptyMemberId, RequestKind::ConsumerGroupHeartbeat(h)) => {
                assert!(h.member_id.is_empty() && h.member_epoch > 0)
            }
            (InvalidCase::HeartbeatEmptyGroupId, RequestKind::ConsumerGroupHeartbeat(h)) => {
                assert!(h.group_id.is_empty())
            }
            (
                InvalidCase::HeartbeatJoinWithoutSubscription,
                RequestKind::ConsumerGroupHeartbeat(h),
            ) => {
                assert!(h.member_epoch == 0 && h.subscribed_topic_names.is_none())
            }
            (
                InvalidCase::HeartbeatEpochBelowStaticLeave,
                RequestKind::ConsumerGroupHeartbeat(h),
            ) => {
                assert!(h.member_epoch < -2)
            }
            (InvalidCase::JoinSessionTimeoutTooShort, RequestKind::JoinGroup(j)) => {
                assert_eq!(j.session_timeout_ms, 1)
            }
            (InvalidCase::CommitStranger, RequestKind::OffsetCommit(c)) => {
                assert_eq!(c.member_id.as_str(), STRANGER)
            }
            (InvalidCase::FindCoordinatorUnknownKeyType, RequestKind::FindCoordinator(f)) => {
                assert!(f.key_type > 2)
            }
            (c, RequestKind::ConsumerGroupHeartbeat(_)) => {
                assert!(c.name().starts_with("heartbeat-"), "{c:?}")
            }
            (c, other) => assert!(
                !c.name().starts_with("heartbeat-")
                    || matches!(other, RequestKind::ConsumerGroupHeartbeat(_)),
                "{c:?}"
            ),
        }
    }
}
