//! State changes: moving between Kafka's group states (only the legal moves, each recorded),
//! and leaving this coordinator altogether (unload, Dead).

use kafka_protocol::error::ResponseError;

use super::{Group, GroupState};
use crate::effects::Effects;
use crate::{probes, CoordinatorEvent};

impl Group {
    /// Moves to `to` if Kafka allows it and records the change.
    pub(crate) fn transition_to(&mut self, to: GroupState, fx: &mut Effects) {
        if !self.state.can_transition_to(to) {
            tracing::error!(group = %self.group_id, from = ?self.state, ?to, "illegal group transition");
            debug_assert!(false, "illegal transition {:?} -> {:?}", self.state, to);
            return;
        }
        let from = self.state;
        self.state = to;
        fx.event(CoordinatorEvent::GroupStateChanged {
            group: self.group_id.clone(),
            from,
            to,
            generation: self.generation_id,
        });
    }

    /// The group leaves this coordinator (unloaded): parked requests get NOT_COORDINATOR, every
    /// timer stops, the group is Dead.
    pub(crate) fn unload(&mut self, fx: &mut Effects) {
        let ids: Vec<String> = self.members.keys().cloned().collect();
        for id in &ids {
            let key = self.session_key(id);
            let m = self.members.get_mut(id).expect("listed above");
            fx.disarm(&mut m.session_deadline, key);
            if m.is_awaiting_join() || m.is_awaiting_sync() {
                probes::PARKED_ANSWERED_ON_UNLOAD.hit();
            }
            m.fail_parked(id, ResponseError::NotCoordinator, fx);
        }
        let pending: Vec<String> = self.pending_members.keys().cloned().collect();
        for id in pending {
            self.remove_pending_member(&id, fx);
        }
        self.set_join_timer(None, fx);
        self.clear_pending_sync(fx);
        if self.state != GroupState::Dead {
            self.transition_to(GroupState::Dead, fx);
        }
    }
}
