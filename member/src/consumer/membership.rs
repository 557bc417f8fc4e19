//! Membership of a consumer group (KIP-848, the Java consumer's `AbstractMembershipManager`):
//! the member id the client draws for itself, the member epoch the coordinator hands out, and
//! where the member stands ([`MemberState`]).

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The epoch a member joins with.
pub const JOIN_EPOCH: i32 = 0;
/// The epoch a dynamic member leaves with.
pub const LEAVE_EPOCH: i32 = -1;
/// The epoch a static member (with `group.instance.id`) leaves with: a temporary leave that
/// keeps its assignment for the instance id's return.
pub const LEAVE_STATIC_EPOCH: i32 = -2;

/// Where a consumer-protocol member stands (Kafka's `MemberState`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MemberState {
    /// Not in the group and not trying to be (before start, after leaving).
    Unsubscribed,
    /// Heartbeating with epoch 0 until the coordinator answers with an epoch.
    Joining,
    /// A target assignment differs from what the member owns: revoke, commit, assign.
    Reconciling,
    /// The reconciliation is done: the next heartbeat (sent at once) acknowledges it.
    Acknowledging,
    /// Owns its target assignment; heartbeats at the interval.
    Stable,
    /// The coordinator fenced it: partitions are released as lost, then it rejoins.
    Fenced,
    /// Leaving: giving partitions up (commit, revoke callback) before the leave heartbeat.
    PrepareLeaving,
    /// The leave heartbeat (epoch -1 or -2) is due or under way.
    Leaving,
    /// A fatal error: it stopped for good.
    Fatal,
    /// Left after its poll timer expired; rejoins when polled again.
    Stale,
}

impl MemberState {
    /// Whether an answer's assignment may be taken as the new target (Kafka's
    /// `canHandleNewAssignment`).
    pub fn can_handle_new_assignment(self) -> bool {
        !matches!(
            self,
            MemberState::Unsubscribed
                | MemberState::Fenced
                | MemberState::PrepareLeaving
                | MemberState::Leaving
                | MemberState::Fatal
                | MemberState::Stale
        )
    }

    /// Whether the member sends no heartbeat in this state (Kafka's `shouldSkipHeartbeat`).
    pub fn skips_heartbeat(self) -> bool {
        matches!(
            self,
            MemberState::Unsubscribed
                | MemberState::Fenced
                | MemberState::Fatal
                | MemberState::Stale
        )
    }

    /// Whether a heartbeat goes out now rather than at the interval (Kafka's
    /// `shouldHeartbeatNow`).
    pub fn heartbeats_now(self) -> bool {
        matches!(self, MemberState::Joining | MemberState::Acknowledging | MemberState::Leaving)
    }
}

/// Member id, member epoch and state.
#[derive(Debug)]
pub(super) struct Membership {
    /// Drawn once by the client (KIP-1082: a UUID) and kept across fencing and rejoins.
    pub(super) member_id: String,
    /// The member epoch: 0 when joining, then what the coordinator returned.
    pub(super) epoch: i32,
    pub(super) state: MemberState,
}

impl Membership {
    /// A member whose id is drawn from `seed` (its own stream: processing draws are not shifted).
    pub(super) fn new(seed: u64) -> Self {
        Self {
            member_id: draw_member_id(seed),
            epoch: JOIN_EPOCH,
            state: MemberState::Unsubscribed,
        }
    }

    /// The epoch of the leave heartbeat: -2 for a static member, -1 otherwise.
    pub(super) fn leave_epoch(is_static: bool) -> i32 {
        if is_static {
            LEAVE_STATIC_EPOCH
        } else {
            LEAVE_EPOCH
        }
    }

    /// Whether the coordinator counts the member in the group (an epoch it handed out).
    pub(super) fn in_group(&self) -> bool {
        self.epoch > 0
            && matches!(
                self.state,
                MemberState::Reconciling | MemberState::Acknowledging | MemberState::Stable
            )
    }
}

/// A member id in Kafka's `Uuid.toString()` shape: 16 bytes from the seeded stream, base64url
/// without padding (22 characters).
fn draw_member_id(seed: u64) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(0x4b49_5038_3438); // "KIP848": apart from the processing stream
    let bits: u128 = rng.random();
    (0..22).map(|i| ALPHABET[((bits >> (i * 6)) & 63) as usize] as char).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn member_ids_are_uuid_shaped_and_follow_the_seed() {
        let a = Membership::new(7).member_id;
        assert_eq!(a.len(), 22);
        assert_eq!(a, Membership::new(7).member_id);
        assert_ne!(a, Membership::new(8).member_id);
    }

    #[test]
    fn static_members_leave_with_minus_two() {
        assert_eq!(Membership::leave_epoch(true), -2);
        assert_eq!(Membership::leave_epoch(false), -1);
    }

    #[test]
    fn states_that_skip_or_hurry_heartbeats() {
        assert!(MemberState::Acknowledging.heartbeats_now());
        assert!(!MemberState::Stable.heartbeats_now());
        assert!(MemberState::Fenced.skips_heartbeat());
        assert!(!MemberState::Leaving.can_handle_new_assignment());
        assert!(MemberState::Reconciling.can_handle_new_assignment());
    }
}
