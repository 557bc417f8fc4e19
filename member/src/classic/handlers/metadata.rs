//! Metadata requests and answers, and the partition-count watch that triggers a rebalance.

use groupsim_wire::error_codes as codes;
use kafka_protocol::messages::{MetadataResponse, RequestKind};

use crate::classic::in_flight::Pending;
use crate::classic::membership::Phase;
use crate::classic::timers::Timer;
use crate::classic::{Member, Target};
use crate::probes;
use crate::Millis;

impl Member {
    pub(in crate::classic) fn maybe_send_metadata(&mut self) {
        if !self.metadata.wanted
            || self.in_flight.has_metadata()
            || self.timers.is_set(Timer::MetadataRetry)
        {
            return;
        }
        let req = self.metadata.request(&self.config.topics);
        let target = Target::Broker(self.metadata.any_broker(self.config.bootstrap_node));
        let timeout = self.config.request_timeout_ms;
        self.send(target, RequestKind::Metadata(req), timeout, Pending::Metadata);
        self.metadata.wanted = false;
    }

    pub(in crate::classic) fn on_metadata(&mut self, now: Millis, resp: MetadataResponse) {
        // Like the Java client's metadata refresh backoff: at most one Metadata per backoff.
        self.retry_after_backoff(Timer::MetadataRetry, now);
        if resp.error_code != codes::NONE {
            probes::error_handled(self.config.profile, "Metadata", resp.error_code);
            self.metadata.wanted = true;
            return;
        }
        probes::errors_handled(
            self.config.profile,
            "Metadata",
            resp.topics.iter().map(|t| t.error_code),
        );
        self.metadata.apply(resp);
        let refresh = match self.rules.partition_watch_ms {
            Some(watch) => self.config.metadata_max_age_ms.min(watch),
            None => self.config.metadata_max_age_ms,
        };
        self.timers.set(Timer::MetadataRefresh, now + refresh);
        self.check_metadata_change();
    }

    /// A partition count that changed since the leader computed the current generation's
    /// assignment makes the leader rejoin, which rebalances the group (the Java client keeps
    /// this `assignmentSnapshot` on the leader only; followers do not react to metadata).
    fn check_metadata_change(&mut self) {
        if self.membership.phase != Phase::Stable || self.membership.rejoin_needed || self.leaving {
            return;
        }
        let watched = if self.rules.partition_watch_ms.is_some() {
            // kafka-go's partition watcher runs on every member, not only the leader.
            &self.membership.watched_counts
        } else {
            &self.membership.assignment_snapshot
        };
        if self.metadata.counts_changed(watched) {
            self.membership.rejoin_needed = true;
        }
    }

    /// Wants a Metadata refresh that also covers `topic` (if it is not subscribed already).
    pub(in crate::classic) fn want_metadata_for(&mut self, topic: &str) {
        self.metadata.want_for(topic, &self.config.topics);
    }
}
