//! Fitting the member's requests to the wire version the driver picked.
//!
//! A few Kafka requests changed shape between versions: FindCoordinator batched its keys in v4,
//! LeaveGroup batched its members in v3 and OffsetFetch batched its groups in v8. The member
//! builds each request once, in the newest shape; the driver, which knows the version it will
//! encode with (the highest both sides support), passes the request through
//! [`fit_request_to_version`] so that `kafka-protocol`'s encoder does not refuse a field the
//! version lacks. Fields that only newer versions carry (`reason`, `group_instance_id`) are
//! dropped when the version cannot carry them: a broker too old for static membership simply
//! sees a dynamic member. The member reads both shapes of the matching responses.

use kafka_protocol::messages::leave_group_request::MemberIdentity;
use kafka_protocol::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopic, OffsetFetchRequestTopics,
};
use kafka_protocol::messages::RequestKind;
use kafka_protocol::protocol::StrBytes;

/// Returns `request` rewritten into the shape wire version `version` can encode (see module docs).
/// Requests without version-dependent shapes are returned unchanged.
pub fn fit_request_to_version(request: RequestKind, version: i16) -> RequestKind {
    match request {
        RequestKind::FindCoordinator(mut r) => {
            if version >= 4 {
                if r.coordinator_keys.is_empty() && !r.key.is_empty() {
                    r.coordinator_keys = vec![std::mem::take(&mut r.key)];
                }
            } else if !r.coordinator_keys.is_empty() {
                r.key = r.coordinator_keys.remove(0);
                r.coordinator_keys.clear();
            }
            RequestKind::FindCoordinator(r)
        }
        RequestKind::LeaveGroup(mut r) => {
            if version >= 3 {
                if r.members.is_empty() && !r.member_id.is_empty() {
                    r.members =
                        vec![MemberIdentity::default()
                            .with_member_id(std::mem::take(&mut r.member_id))];
                }
                if version < 5 {
                    for m in &mut r.members {
                        m.reason = None;
                    }
                }
            } else if !r.members.is_empty() {
                r.member_id = r.members.remove(0).member_id;
                r.members.clear();
            }
            RequestKind::LeaveGroup(r)
        }
        RequestKind::OffsetFetch(mut r) => {
            if version >= 8 {
                if r.groups.is_empty() && !r.group_id.is_empty() {
                    let topics = r.topics.take().map(|ts| {
                        ts.into_iter()
                            .map(|t| {
                                OffsetFetchRequestTopics::default()
                                    .with_name(t.name)
                                    .with_partition_indexes(t.partition_indexes)
                            })
                            .collect()
                    });
                    r.groups = vec![OffsetFetchRequestGroup::default()
                        .with_group_id(std::mem::take(&mut r.group_id))
                        .with_topics(topics)];
                    r.topics = Some(Vec::new());
                }
            } else if !r.groups.is_empty() {
                let g = r.groups.remove(0);
                r.groups.clear();
                r.group_id = g.group_id;
                r.topics = g.topics.map(|ts| {
                    ts.into_iter()
                        .map(|t| {
                            OffsetFetchRequestTopic::default()
                                .with_name(t.name)
                                .with_partition_indexes(t.partition_indexes)
                        })
                        .collect()
                });
            }
            if version < 7 {
                r.require_stable = false;
            }
            RequestKind::OffsetFetch(r)
        }
        RequestKind::JoinGroup(mut r) => {
            if version < 8 {
                r.reason = None;
            }
            if version < 5 {
                r.group_instance_id = None;
            }
            RequestKind::JoinGroup(r)
        }
        RequestKind::SyncGroup(mut r) => {
            if version < 3 {
                r.group_instance_id = None;
            }
            RequestKind::SyncGroup(r)
        }
        RequestKind::Heartbeat(mut r) => {
            if version < 3 {
                r.group_instance_id = None;
            }
            RequestKind::Heartbeat(r)
        }
        RequestKind::OffsetCommit(mut r) => {
            if version < 7 {
                r.group_instance_id = None;
            }
            RequestKind::OffsetCommit(r)
        }
        other => other,
    }
}

/// A `StrBytes` from a `&str` (small convenience shared by the request builders).
pub(crate) fn sb(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}

#[cfg(test)]
mod tests {
    use bytes::BytesMut;
    use kafka_protocol::messages::{
        FindCoordinatorRequest, GroupId, LeaveGroupRequest, OffsetFetchRequest, TopicName,
    };
    use kafka_protocol::protocol::{Encodable, Message};

    use super::*;

    fn encodes<M: Encodable>(m: &M, v: i16) -> bool {
        m.encode(&mut BytesMut::new(), v).is_ok()
    }

    #[test]
    fn find_coordinator_fits_every_version() {
        let newest = FindCoordinatorRequest::default().with_coordinator_keys(vec![sb("g")]);
        for v in FindCoordinatorRequest::VERSIONS.min..=FindCoordinatorRequest::VERSIONS.max {
            let RequestKind::FindCoordinator(r) =
                fit_request_to_version(RequestKind::FindCoordinator(newest.clone()), v)
            else {
                unreachable!()
            };
            assert!(encodes(&r, v), "v{v}");
            if v < 4 {
                assert_eq!(r.key.as_str(), "g");
            } else {
                assert_eq!(r.coordinator_keys, vec![sb("g")]);
            }
        }
    }

    #[test]
    fn leave_group_fits_every_version() {
        let newest =
            LeaveGroupRequest::default().with_group_id(GroupId(sb("g"))).with_members(vec![
                MemberIdentity::default().with_member_id(sb("m-1")).with_reason(Some(sb("bye"))),
            ]);
        for v in LeaveGroupRequest::VERSIONS.min..=LeaveGroupRequest::VERSIONS.max {
            let RequestKind::LeaveGroup(r) =
                fit_request_to_version(RequestKind::LeaveGroup(newest.clone()), v)
            else {
                unreachable!()
            };
            assert!(encodes(&r, v), "v{v}");
            if v < 3 {
                assert_eq!(r.member_id.as_str(), "m-1");
            }
        }
    }

    #[test]
    fn offset_fetch_fits_every_version() {
        let newest =
            OffsetFetchRequest::default().with_groups(vec![OffsetFetchRequestGroup::default()
                .with_group_id(GroupId(sb("g")))
                .with_topics(Some(vec![OffsetFetchRequestTopics::default()
                    .with_name(TopicName(sb("t")))
                    .with_partition_indexes(vec![0, 1])]))]);
        for v in OffsetFetchRequest::VERSIONS.min..=OffsetFetchRequest::VERSIONS.max {
            let RequestKind::OffsetFetch(r) =
                fit_request_to_version(RequestKind::OffsetFetch(newest.clone()), v)
            else {
                unreachable!()
            };
            assert!(encodes(&r, v), "v{v}");
            if v < 8 {
                assert_eq!(r.group_id.0.as_str(), "g");
                assert_eq!(r.topics.as_ref().unwrap()[0].partition_indexes, vec![0, 1]);
            }
            // And back up again.
            let RequestKind::OffsetFetch(up) =
                fit_request_to_version(RequestKind::OffsetFetch(r), 9)
            else {
                unreachable!()
            };
            assert!(encodes(&up, 9), "v{v} -> v9");
        }
    }
}
