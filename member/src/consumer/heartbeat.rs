//! ConsumerGroupHeartbeat (key 68): the interval the coordinator returns, and which fields a
//! heartbeat carries. Java sends every field when joining and afterwards only those that
//! changed since the last heartbeat sent (`HeartbeatState.SentFields`, forgotten after every
//! error so the next heartbeat is full); librdkafka sends either a full heartbeat (joining, after
//! a coordinator change or lost connection) or a minimal one, plus the owned partitions when it
//! acknowledges. Group id, member id and epoch are always sent.

use kafka_protocol::messages::consumer_group_heartbeat_request::TopicPartitions;
use kafka_protocol::messages::{ConsumerGroupHeartbeatRequest, TopicName};
use uuid::Uuid;

use super::profile_rules::ConsumerRules;
use super::reconciliation::IdAssignment;
use crate::compat::sb;
use crate::shared::{group_id, instance_id};
use crate::{MemberConfig, Millis};

/// The fields of the last heartbeat sent (None: not sent since the last reset).
#[derive(Debug, Default, Clone, PartialEq)]
struct SentFields {
    rebalance_timeout_ms: Option<i32>,
    subscription: Option<Vec<String>>,
    server_assignor: Option<String>,
    /// The local assignment epoch whose partitions were last sent.
    owned: Option<u64>,
}

/// The heartbeat loop's state.
#[derive(Debug, Default)]
pub(super) struct HeartbeatState {
    /// The interval the coordinator returned last (0 before any answer).
    pub(super) interval_ms: Millis,
    sent: SentFields,
    /// librdkafka: the next heartbeat is a full one.
    full_next: bool,
}

/// What the member tells [`HeartbeatState::request`] about itself.
pub(super) struct HeartbeatView<'a> {
    pub(super) member_id: &'a str,
    pub(super) epoch: i32,
    /// Joining: every field is sent.
    pub(super) joining: bool,
    /// This heartbeat acknowledges a reconciliation.
    pub(super) acknowledging: bool,
    /// The member's owned partitions by topic id, and that assignment's local epoch.
    pub(super) owned: (&'a IdAssignment, u64),
}

impl HeartbeatState {
    /// Forget what was sent: the next heartbeat carries every field (after an error, a lost
    /// connection or a coordinator change).
    pub(super) fn reset(&mut self) {
        self.sent = SentFields::default();
        self.full_next = true;
    }

    /// The next heartbeat, recording what it carries.
    pub(super) fn request(
        &mut self,
        config: &MemberConfig,
        rules: &ConsumerRules,
        view: HeartbeatView<'_>,
    ) -> ConsumerGroupHeartbeatRequest {
        let full = view.joining || (!rules.delta_fields && self.full_next);
        let mut req = ConsumerGroupHeartbeatRequest::default()
            .with_group_id(group_id(config))
            .with_member_id(sb(view.member_id))
            .with_member_epoch(view.epoch)
            .with_rebalance_timeout_ms(-1);
        if full || rules.instance_id_every_heartbeat {
            req.instance_id = instance_id(config);
        }
        let send = |changed: bool| full || (rules.delta_fields && changed);
        let timeout = config.rebalance_timeout_ms;
        if send(self.sent.rebalance_timeout_ms != Some(timeout)) {
            req.rebalance_timeout_ms = timeout;
            self.sent.rebalance_timeout_ms = Some(timeout);
        }
        let mut topics = config.topics.clone();
        topics.sort();
        if send(self.sent.subscription.as_ref() != Some(&topics)) {
            req.subscribed_topic_names = Some(topics.iter().map(|t| TopicName(sb(t))).collect());
            self.sent.subscription = Some(topics);
        }
        if let Some(assignor) = &config.server_assignor {
            if send(self.sent.server_assignor.as_ref() != Some(assignor)) {
                req.server_assignor = Some(sb(assignor));
                self.sent.server_assignor = Some(assignor.clone());
            }
        }
        let (owned, local_epoch) = view.owned;
        if send(self.sent.owned != Some(local_epoch)) || view.acknowledging {
            req.topic_partitions = Some(topic_partitions(owned));
            self.sent.owned = Some(local_epoch);
        }
        self.full_next = false;
        req
    }
}

/// The owned partitions in the heartbeat's shape, by topic id.
fn topic_partitions(owned: &IdAssignment) -> Vec<TopicPartitions> {
    owned
        .iter()
        .map(|(id, parts): (&Uuid, _)| {
            TopicPartitions::default()
                .with_topic_id(*id)
                .with_partitions(parts.iter().copied().collect())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ClientProfile;

    fn view(
        joining: bool,
        acknowledging: bool,
        owned: &IdAssignment,
        local: u64,
    ) -> HeartbeatView<'_> {
        HeartbeatView { member_id: "m", epoch: 3, joining, acknowledging, owned: (owned, local) }
    }

    fn config() -> MemberConfig {
        let mut c = MemberConfig::new("g", "c", vec!["t".into()]);
        c.group_instance_id = Some("i".into());
        c
    }

    #[test]
    fn java_sends_everything_when_joining_then_only_what_changed() {
        let rules = ConsumerRules::of(ClientProfile::JavaConsumer);
        let mut h = HeartbeatState::default();
        let owned = IdAssignment::new();
        let first = h.request(&config(), &rules, view(true, false, &owned, 0));
        assert_eq!(first.rebalance_timeout_ms, 30_000);
        assert!(first.subscribed_topic_names.is_some() && first.topic_partitions.is_some());
        let delta = h.request(&config(), &rules, view(false, false, &owned, 0));
        assert_eq!(delta.rebalance_timeout_ms, -1);
        assert!(delta.subscribed_topic_names.is_none() && delta.topic_partitions.is_none());
        assert_eq!(delta.instance_id.as_deref(), Some("i"), "Java always sends the instance id");
        let after_reconcile = h.request(&config(), &rules, view(false, false, &owned, 1));
        assert!(after_reconcile.topic_partitions.is_some(), "a new local assignment is sent");
        h.reset();
        let after_error = h.request(&config(), &rules, view(false, false, &owned, 1));
        assert!(
            after_error.subscribed_topic_names.is_some() && after_error.topic_partitions.is_some()
        );
    }

    #[test]
    fn librdkafka_sends_full_or_minimal_heartbeats_and_owned_partitions_on_ack() {
        let rules = ConsumerRules::of(ClientProfile::LibrdkafkaConsumer);
        let mut h = HeartbeatState::default();
        let owned = IdAssignment::new();
        let first = h.request(&config(), &rules, view(true, false, &owned, 0));
        assert_eq!(first.instance_id.as_deref(), Some("i"));
        let minimal = h.request(&config(), &rules, view(false, false, &owned, 1));
        assert!(minimal.instance_id.is_none() && minimal.topic_partitions.is_none());
        assert!(minimal.subscribed_topic_names.is_none());
        let ack = h.request(&config(), &rules, view(false, true, &owned, 1));
        assert!(ack.topic_partitions.is_some() && ack.subscribed_topic_names.is_none());
        h.reset();
        let full = h.request(&config(), &rules, view(false, false, &owned, 1));
        assert!(full.instance_id.is_some() && full.subscribed_topic_names.is_some());
    }
}
