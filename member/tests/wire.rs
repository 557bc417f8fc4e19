//! Every request the member builds encodes at every wire version once fitted to it, so the
//! driver can send it at whatever version it negotiated with the broker.

mod common;

use bytes::BytesMut;
use common::*;
use groupsim_member::compat::fit_request_to_version;
use groupsim_member::MemberOutput;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Message, VersionRange};

fn versions(r: &RequestKind) -> VersionRange {
    match r {
        RequestKind::Metadata(_) => MetadataRequest::VERSIONS,
        RequestKind::FindCoordinator(_) => FindCoordinatorRequest::VERSIONS,
        RequestKind::JoinGroup(_) => JoinGroupRequest::VERSIONS,
        RequestKind::SyncGroup(_) => SyncGroupRequest::VERSIONS,
        RequestKind::Heartbeat(_) => HeartbeatRequest::VERSIONS,
        RequestKind::LeaveGroup(_) => LeaveGroupRequest::VERSIONS,
        RequestKind::OffsetCommit(_) => OffsetCommitRequest::VERSIONS,
        RequestKind::OffsetFetch(_) => OffsetFetchRequest::VERSIONS,
        RequestKind::ListOffsets(_) => ListOffsetsRequest::VERSIONS,
        RequestKind::Fetch(_) => FetchRequest::VERSIONS,
        other => panic!("unexpected request {other:?}"),
    }
}

/// A static-membership leader's whole life, and a dynamic member's leave: every kind of request
/// a member sends.
fn journey_requests() -> Vec<RequestKind> {
    let mut cfg = config();
    cfg.group_instance_id = Some("instance-0".into());
    let mut h = H::new(cfg);
    let mut all = Vec::new();
    let mut keep = |o: &[MemberOutput]| {
        for x in o {
            if let MemberOutput::Send { request, .. } = x {
                all.push(request.clone());
            }
        }
    };
    h.m.start(0);
    let o = h.out();
    keep(&o);
    let (id, _, _) = one(&o, "Metadata");
    let o = h.respond(id, metadata(&[("t", 4, 1)]));
    keep(&o);
    let (id, _, _) = one(&o, "FindCoordinator");
    let o = h.respond(id, find_coordinator(0));
    keep(&o);
    let (id, _, _) = one(&o, "JoinGroup");
    let o = h.respond(id, join_ok("m-0", 1, "m-0", "range", &[("m-0", &["t"])]));
    keep(&o);
    let (id, _, _) = one(&o, "SyncGroup");
    let o = h.respond(id, sync_ok(&[tp("t", 0), tp("t", 1)]));
    keep(&o);
    let (id, _, _) = one(&o, "OffsetFetch");
    let o = h.respond(id, offset_fetch(&[(0, 5), (1, -1)]));
    keep(&o);
    let (fid, _, _) = one(&o, "Fetch");
    let o = h.respond(fid, fetch_answer(&[(0, 0, 5..8)]));
    keep(&o);
    let o = h.advance_to(3000);
    keep(&o);
    for (id, _, req) in sent(&o, "OffsetCommit") {
        let o = h.respond(id, commit_answer(&req, 0));
        keep(&o);
    }
    // A static member sends no LeaveGroup (Java since 2.3); a dynamic one does.
    h.m.leave(h.now);
    let o = h.out();
    keep(&o);
    assert_eq!(sent(&o, "LeaveGroup").len(), 0, "{:?}", summary(&o));
    let mut d = H::new(config());
    join_follower(&mut d, &[], &[]);
    d.m.leave(d.now);
    let o = d.out();
    keep(&o);
    assert_eq!(sent(&o, "LeaveGroup").len(), 1, "{:?}", summary(&o));
    all
}

#[test]
fn every_request_encodes_at_every_version_after_fitting() {
    let requests = journey_requests();
    let mut kinds: Vec<&str> = requests.iter().map(api).collect();
    kinds.sort();
    kinds.dedup();
    let expected = [
        "Fetch",
        "FindCoordinator",
        "Heartbeat",
        "JoinGroup",
        "LeaveGroup",
        "ListOffsets",
        "Metadata",
        "OffsetCommit",
        "OffsetFetch",
        "SyncGroup",
    ];
    assert_eq!(kinds, expected);
    for request in requests {
        let range = versions(&request);
        for v in range.min..=range.max {
            let fitted = fit_request_to_version(request.clone(), v);
            if let Err(e) = fitted.encode(&mut BytesMut::new(), v) {
                panic!("{} v{v} does not encode: {e}\n{fitted:?}", api(&request));
            }
        }
    }
}

#[test]
fn requests_encode_unfitted_at_the_simulated_brokers_newest_versions() {
    // The groupsim broker serves up to: Fetch 12, ListOffsets 7, Metadata 12, OffsetCommit 9,
    // OffsetFetch 9, FindCoordinator 6, JoinGroup 9, Heartbeat 4, LeaveGroup 5, SyncGroup 5.
    for request in journey_requests() {
        let v = match &request {
            RequestKind::Fetch(_) => 12,
            RequestKind::ListOffsets(_) => 7,
            RequestKind::Metadata(_) => 12,
            other => versions(other).max,
        };
        assert!(request.encode(&mut BytesMut::new(), v).is_ok(), "{} v{v}", api(&request));
    }
}
