//! Member-epoch checks of OffsetCommit and OffsetFetch for consumer groups (Kafka's
//! ConsumerGroup.validateOffsetCommit and validateOffsetFetch). In the consumer protocol the
//! commit's generation id field carries the member epoch.
//!
//! - A commit with a negative epoch to a group without members is accepted (an admin client or
//!   a consumer that does not use group management).
//! - An unknown member: UNKNOWN_MEMBER_ID.
//! - A consumer-protocol member committing below OffsetCommit v9: UNSUPPORTED_VERSION.
//! - An epoch other than the member's: STALE_MEMBER_EPOCH. A member keeps committing at its
//!   epoch while it revokes (the epoch only moves once the revocation is acknowledged), so a
//!   commit before revoking is accepted; a fenced member's commit is not.
//! - OffsetFetch without member id and with a negative epoch is accepted; with a member id the
//!   same member and epoch checks apply.
//! - A member speaking the classic protocol commits with its generation (its member epoch) at
//!   any version; another generation is ILLEGAL_GENERATION, as in a classic group.

use kafka_protocol::error::ResponseError;

use super::ConsumerGroup;
use crate::probes;

impl ConsumerGroup {
    /// Validates an OffsetCommit of wire version `version`.
    pub(crate) fn validate_offset_commit(
        &self,
        member_id: &str,
        member_epoch: i32,
        version: i16,
    ) -> Result<(), ResponseError> {
        if member_epoch < 0 && self.members.is_empty() {
            return Ok(());
        }
        let Some(m) = self.members.get(member_id) else {
            probes::CONSUMER_COMMIT_UNKNOWN_MEMBER.hit();
            return Err(ResponseError::UnknownMemberId);
        };
        if version < 9 && !m.uses_classic_protocol() {
            return Err(ResponseError::UnsupportedVersion);
        }
        if member_epoch != m.member_epoch {
            return Err(if m.uses_classic_protocol() {
                ResponseError::IllegalGeneration
            } else {
                probes::CONSUMER_COMMIT_STALE_MEMBER_EPOCH.hit();
                ResponseError::StaleMemberEpoch
            });
        }
        Ok(())
    }

    /// Validates an OffsetFetch naming `member_id` (v9+) at `member_epoch`.
    pub(crate) fn validate_offset_fetch(
        &self,
        member_id: Option<&str>,
        member_epoch: i32,
    ) -> Result<(), ResponseError> {
        let Some(member_id) = member_id else {
            return if member_epoch < 0 { Ok(()) } else { Err(ResponseError::UnknownMemberId) };
        };
        let Some(m) = self.members.get(member_id) else {
            return Err(ResponseError::UnknownMemberId);
        };
        if member_epoch != m.member_epoch {
            return Err(if m.uses_classic_protocol() {
                ResponseError::IllegalGeneration
            } else {
                probes::CONSUMER_FETCH_STALE_MEMBER_EPOCH.hit();
                ResponseError::StaleMemberEpoch
            });
        }
        Ok(())
    }
}
