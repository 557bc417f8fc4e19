//! The consumer-protocol member's deadline kinds (the table is the shared one).

/// A kind of deadline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Timer {
    /// The revoke callback returns.
    RevokeCallback,
    /// Metadata may be sent again.
    MetadataRetry,
    /// Metadata is due for its periodic refresh.
    MetadataRefresh,
    /// FindCoordinator may be retried.
    FindCoordinatorRetry,
    /// OffsetFetch may be retried.
    OffsetFetchRetry,
    /// ListOffsets may be retried.
    ListOffsetsRetry,
    /// The next ConsumerGroupHeartbeat is due (the interval the coordinator returned, or a
    /// backoff after an error).
    Heartbeat,
    /// The next auto-commit is due.
    AutoCommit,
    /// The commit before revocation may be retried.
    CommitRetry,
}

/// The member's deadline table.
pub(super) type Timers = crate::shared::timers::Timers<Timer>;
