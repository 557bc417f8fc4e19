//! The Kafka error codes groupsim's coordinator returns and its members react to: one table,
//! named as Kafka names them, so both sides of the wire and the history agree on spelling.

use kafka_protocol::error::ResponseError as E;

/// No error.
pub const NONE: i16 = 0;
/// The server hit an error it could not classify.
pub const UNKNOWN_SERVER_ERROR: i16 = E::UnknownServerError.code();
/// The requested offset is outside the partition's log.
pub const OFFSET_OUT_OF_RANGE: i16 = E::OffsetOutOfRange.code();
/// A record batch failed its checks.
pub const CORRUPT_MESSAGE: i16 = E::CorruptMessage.code();
/// The broker does not host this topic partition.
pub const UNKNOWN_TOPIC_OR_PARTITION: i16 = E::UnknownTopicOrPartition.code();
/// The partition has no leader right now.
pub const LEADER_NOT_AVAILABLE: i16 = E::LeaderNotAvailable.code();
/// This broker does not lead the partition.
pub const NOT_LEADER_OR_FOLLOWER: i16 = E::NotLeaderOrFollower.code();
/// A replica is not available.
pub const REPLICA_NOT_AVAILABLE: i16 = E::ReplicaNotAvailable.code();
/// The broker's log directory failed.
pub const KAFKA_STORAGE_ERROR: i16 = E::KafkaStorageError.code();
/// The leader epoch in the request is older than the broker's.
pub const FENCED_LEADER_EPOCH: i16 = E::FencedLeaderEpoch.code();
/// The leader epoch in the request is newer than the broker's.
pub const UNKNOWN_LEADER_EPOCH: i16 = E::UnknownLeaderEpoch.code();
/// The offset is not yet available (leader election in progress).
pub const OFFSET_NOT_AVAILABLE: i16 = E::OffsetNotAvailable.code();
/// The coordinator is still loading the group's offsets partition.
pub const COORDINATOR_LOAD_IN_PROGRESS: i16 = E::CoordinatorLoadInProgress.code();
/// The coordinator is not available (group being unloaded or dead).
pub const COORDINATOR_NOT_AVAILABLE: i16 = E::CoordinatorNotAvailable.code();
/// This broker is not the group's coordinator.
pub const NOT_COORDINATOR: i16 = E::NotCoordinator.code();
/// The request's generation is not the group's current one.
pub const ILLEGAL_GENERATION: i16 = E::IllegalGeneration.code();
/// The member's protocol type or protocols do not match the group's.
pub const INCONSISTENT_GROUP_PROTOCOL: i16 = E::InconsistentGroupProtocol.code();
/// The group id is empty or otherwise invalid.
pub const INVALID_GROUP_ID: i16 = E::InvalidGroupId.code();
/// The coordinator does not know this member id.
pub const UNKNOWN_MEMBER_ID: i16 = E::UnknownMemberId.code();
/// The session timeout is outside the broker's allowed range.
pub const INVALID_SESSION_TIMEOUT: i16 = E::InvalidSessionTimeout.code();
/// The group is rebalancing: rejoin.
pub const REBALANCE_IN_PROGRESS: i16 = E::RebalanceInProgress.code();
/// The request's API version is not supported.
pub const UNSUPPORTED_VERSION: i16 = E::UnsupportedVersion.code();
/// A first JoinGroup (v4+) must be retried with the member id the coordinator chose.
pub const MEMBER_ID_REQUIRED: i16 = E::MemberIdRequired.code();
/// The group has reached `group.max.size`.
pub const GROUP_MAX_SIZE_REACHED: i16 = E::GroupMaxSizeReached.code();
/// Another instance with the same `group.instance.id` replaced this static member.
pub const FENCED_INSTANCE_ID: i16 = E::FencedInstanceId.code();
/// KIP-848: the member's epoch is not one the coordinator accepts; it must rejoin at epoch 0.
pub const FENCED_MEMBER_EPOCH: i16 = E::FencedMemberEpoch.code();
/// KIP-848: an offset request carried an older member epoch than the member's current one.
pub const STALE_MEMBER_EPOCH: i16 = E::StaleMemberEpoch.code();
/// GROUP_ID_NOT_FOUND: no such group (of the kind asked for).
pub const GROUP_ID_NOT_FOUND: i16 = E::GroupIdNotFound.code();

/// Partition errors that mean a client's view of partition leadership is stale: refresh
/// metadata and retry against the new leader.
pub fn is_leadership_error(code: i16) -> bool {
    matches!(
        code,
        NOT_LEADER_OR_FOLLOWER
            | UNKNOWN_TOPIC_OR_PARTITION
            | LEADER_NOT_AVAILABLE
            | REPLICA_NOT_AVAILABLE
            | KAFKA_STORAGE_ERROR
            | FENCED_LEADER_EPOCH
            | UNKNOWN_LEADER_EPOCH
            | OFFSET_NOT_AVAILABLE
    )
}

/// Kafka's name for an error code (`ILLEGAL_GENERATION`, `NONE`, …), for histories and logs.
pub fn error_name(code: i16) -> String {
    use kafka_protocol::error::ParseResponseErrorCode;
    match code.err() {
        None => "NONE".to_string(),
        Some(e) => {
            // ResponseError's Debug is CamelCase; Kafka spells codes in SCREAMING_SNAKE_CASE.
            let camel = format!("{e:?}");
            let mut out = String::with_capacity(camel.len() + 8);
            for (i, ch) in camel.chars().enumerate() {
                if ch.is_ascii_uppercase() && i > 0 {
                    out.push('_');
                }
                out.push(ch.to_ascii_uppercase());
            }
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_kafkas_screaming_snake_case() {
        assert_eq!(error_name(NONE), "NONE");
        assert_eq!(error_name(ILLEGAL_GENERATION), "ILLEGAL_GENERATION");
        assert_eq!(error_name(COORDINATOR_LOAD_IN_PROGRESS), "COORDINATOR_LOAD_IN_PROGRESS");
    }

    #[test]
    fn leadership_errors_exclude_group_errors() {
        assert!(is_leadership_error(NOT_LEADER_OR_FOLLOWER));
        assert!(!is_leadership_error(NOT_COORDINATOR));
        assert!(!is_leadership_error(NONE));
    }
}
