//! Heartbeats (Kafka's `Heartbeat`): the session window. The next heartbeat's deadline lives in
//! the timer table; an awaited heartbeat in flight, in the in-flight table.

use kafka_protocol::messages::HeartbeatRequest;

use crate::compat::sb;
use crate::shared::{group_id, instance_id};
use crate::{MemberConfig, Millis};

/// The session as the member sees it.
#[derive(Debug, Default)]
pub(super) struct Heartbeat {
    /// When a heartbeat of the current generation last got through (or the session window was
    /// last reset: a new coordinator or a new assignment).
    pub(super) last_ok: Millis,
    /// Bug `heartbeat_thread_dies`: the heartbeat thread died; no heartbeat is sent again.
    pub(super) thread_dead: bool,
}

impl Heartbeat {
    /// No heartbeat got through for a whole session: the coordinator is presumed gone.
    pub(super) fn session_expired(&self, now: Millis, session_timeout_ms: i32) -> bool {
        now >= self.last_ok + session_timeout_ms.max(0) as u64
    }

    /// A Heartbeat for `generation` as `member_id`.
    pub(super) fn request(
        config: &MemberConfig,
        generation: i32,
        member_id: &str,
    ) -> HeartbeatRequest {
        HeartbeatRequest::default()
            .with_group_id(group_id(config))
            .with_generation_id(generation)
            .with_member_id(sb(member_id))
            .with_group_instance_id(instance_id(config))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_session_expires_a_full_timeout_after_the_last_answer() {
        let h = Heartbeat { last_ok: 1_000, ..Heartbeat::default() };
        assert!(!h.session_expired(10_999, 10_000));
        assert!(h.session_expired(11_000, 10_000));
        assert!(h.session_expired(1_000, -5), "a negative timeout counts as zero");
    }

    #[test]
    fn the_request_carries_generation_member_and_instance() {
        let mut config = MemberConfig::new("g", "c", vec!["t".into()]);
        config.group_instance_id = Some("i-1".into());
        let r = Heartbeat::request(&config, 3, "m-1");
        assert_eq!(r.group_id.0.as_str(), "g");
        assert_eq!(r.generation_id, 3);
        assert_eq!(r.member_id.as_str(), "m-1");
        assert_eq!(r.group_instance_id.as_deref(), Some("i-1"));
    }
}
