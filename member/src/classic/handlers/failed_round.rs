//! A rebalance round that fails, ended as kafka-go's consumer-group loop ends it.
//!
//! kafka-go runs each generation as one `nextGeneration` call: JoinGroup, the leader's
//! `readPartitions` on the coordinator connection, SyncGroup, the committed offsets' fetch.
//! When any step fails, other than by REBALANCE_IN_PROGRESS, `ConsumerGroup.run` sends
//! LeaveGroup under the member id the round had (none when the JoinGroup itself failed:
//! `joinGroup` returns an empty id with its error), forgets the id, and waits
//! `JoinGroupBackoff` before the next JoinGroup. The Java clients keep the id instead (unless
//! the coordinator named it unknown) and retry sooner.

use crate::classic::membership::Phase;
use crate::classic::Member;
use crate::probes;
use crate::shared::in_flight::Pending;
use crate::Millis;

impl Member {
    /// The round failed with `error`. For a profile that gives its member id up on a failed
    /// round (kafka-go): the id given up (recorded, so its later expiry at the coordinator is
    /// no stall) and, when `leave` (the round had got its id: a failed leader partition read,
    /// SyncGroup or offset fetch), a LeaveGroup under it owed; the next JoinGroup after the
    /// join backoff. True. False for the other profiles, whose caller goes on as before.
    pub(in crate::classic) fn give_up_round(
        &mut self,
        now: Millis,
        error: &str,
        leave: bool,
    ) -> bool {
        if !self.rules.gives_up_member_id_on_failed_round {
            return false;
        }
        probes::ROUND_GIVEN_UP.hit();
        let member_id = self.membership.member_id.clone();
        if member_id.is_empty() {
            self.membership.phase = Phase::Unjoined;
            self.membership.leader_job = None;
        } else {
            if leave {
                self.membership.owed_leave = Some(member_id);
            }
            self.reset_generation_with(error.to_string(), true, None);
        }
        self.retry_join_later(now);
        true
    }

    /// Sends the LeaveGroup a failed round owes, once the coordinator is known (after a lost
    /// connection, once it is found again); its answer changes nothing (kafka-go logs a failed
    /// leave and goes on).
    pub(in crate::classic) fn send_owed_leave(&mut self) {
        let Some(node) = self.core.discovery.coordinator else {
            return;
        };
        let Some(member_id) = self.membership.owed_leave.take() else {
            return;
        };
        self.send_leave_group(node, &member_id, None, Pending::LeaveAndRejoin);
    }
}
