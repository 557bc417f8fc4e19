//! The coordinator's timer keys: which deadline an entry of the timer queue belongs to.
//!
//! A leaf module: groups arm and disarm their own timers (join phase, pending sync, sessions,
//! pending members) and the coordinator arms its own (appends, partition loads), all in the one
//! queue kept by [`crate::effects::Effects`]; the coordinator fires them by key.

/// Which timer an entry of the timer queue belongs to. Entries are ordered by deadline first,
/// then by this key, so timers due at the same instant fire in a fixed order.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum TimerKey {
    /// End of a join phase (rebalance timeout, or a step of the initial delay).
    Join { group: String },
    /// End of the wait for SyncGroup from every member of a new generation.
    Sync { group: String },
    /// A member's session (or new-member join) deadline.
    Session { group: String, member: String },
    /// A pending member (told MEMBER_ID_REQUIRED) must have rejoined by then.
    PendingMember { group: String, member: String },
    /// An append to the offsets log completes (is replicated).
    Append { seq: u64 },
    /// An offsets partition finishes loading.
    Load { partition: i32 },
    /// A consumer group member's session deadline.
    ConsumerSession { group: String, member: String },
    /// A consumer group member's rebalance deadline (it must have revoked by then).
    ConsumerRebalance { group: String, member: String },
    /// A classic member of a consumer group told to rejoin must have rejoined by then.
    ConsumerClassicJoin { group: String, member: String },
    /// A classic member of a consumer group that joined must have sent SyncGroup by then.
    ConsumerClassicSync { group: String, member: String },
}
