//! What a consumer-protocol member's request in flight was for (the table is the shared one).

use crate::TopicPartition;

/// Why a commit was sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum CommitPurpose {
    /// `auto.commit.interval.ms`.
    Auto,
    /// The commit a reconciliation (or a leave) makes before giving partitions up.
    Revoke,
}

/// What a request in flight was for, with what the member needs to read its answer.
#[derive(Clone, Debug)]
pub(super) enum Pending {
    Metadata,
    FindCoordinator,
    /// `leave`: the heartbeat that leaves the group (epoch -1 or -2).
    Heartbeat {
        leave: bool,
    },
    OffsetCommit {
        offsets: Vec<(TopicPartition, i64)>,
        purpose: CommitPurpose,
        epoch: u64,
    },
    OffsetFetch {
        epoch: u64,
        partitions: Vec<TopicPartition>,
    },
    ListOffsets {
        epoch: u64,
        partitions: Vec<TopicPartition>,
    },
}

impl Pending {
    /// The Kafka API's name.
    pub(super) fn api(&self) -> &'static str {
        match self {
            Pending::Metadata => "Metadata",
            Pending::FindCoordinator => "FindCoordinator",
            Pending::Heartbeat { .. } => "ConsumerGroupHeartbeat",
            Pending::OffsetCommit { .. } => "OffsetCommit",
            Pending::OffsetFetch { .. } => "OffsetFetch",
            Pending::ListOffsets { .. } => "ListOffsets",
        }
    }
}

/// The member's in-flight table.
pub(super) type InFlight = crate::shared::in_flight::RequestTable<Pending>;
