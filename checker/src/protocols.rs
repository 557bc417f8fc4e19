//! Which group protocol a group that migrated between them spoke when (KIP-848's online
//! migration): a classic group becomes a consumer group when a consumer-protocol member's join
//! upgrades it, and a classic group again when the last consumer-protocol member's departure
//! downgrades it. While it is a consumer group every member — classic-protocol members included,
//! whose generation is their member epoch — is judged by member epochs; while it is a classic
//! group, by generations. A coordinator that takes the group over loads whichever form was last
//! written (a conversion whose record was not written before the move is undone), so loads
//! switch too. A leaf: the views keep one history per group that ever converted.

use groupsim_wire::Millis;

/// A group protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Protocol {
    /// JoinGroup / SyncGroup / Heartbeat: generations.
    Classic,
    /// KIP-848 consumer group: member epochs.
    Consumer,
}

/// How a commit is judged: by the protocol the group spoke when the coordinator validated it,
/// or by either when the group converted within that millisecond.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Judged {
    /// By generations.
    Classic,
    /// By member epochs.
    Consumer,
    /// Either may have been in force: an anomaly only if both rules find one.
    Either,
}

/// The protocol switches of one group that converted, in order: from when on it spoke which.
#[derive(Clone, Debug, Default)]
pub(super) struct ProtocolHistory {
    switches: Vec<(Millis, Protocol)>,
}

impl ProtocolHistory {
    /// The group speaks `to` from `at` on (nothing if it already does).
    pub(super) fn switch(&mut self, at: Millis, to: Protocol) {
        if self.current() != Some(to) {
            self.switches.push((at, to));
        }
    }

    /// The protocol it speaks now.
    pub(super) fn current(&self) -> Option<Protocol> {
        self.switches.last().map(|(_, p)| *p)
    }

    /// How a commit validated at millisecond `at` is judged. Before the first switch the group
    /// spoke the other protocol.
    pub(super) fn judged_at(&self, at: Millis) -> Judged {
        let Some(&(_, first)) = self.switches.first() else { return Judged::Classic };
        let mut speaking = other(first);
        let mut both = false;
        for &(t, to) in &self.switches {
            if t > at {
                break;
            }
            if t == at {
                both = true;
            }
            speaking = to;
        }
        match (both, speaking) {
            (true, _) => Judged::Either,
            (false, Protocol::Classic) => Judged::Classic,
            (false, Protocol::Consumer) => Judged::Consumer,
        }
    }
}

fn other(p: Protocol) -> Protocol {
    match p {
        Protocol::Classic => Protocol::Consumer,
        Protocol::Consumer => Protocol::Classic,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_commit_is_judged_by_the_protocol_of_its_millisecond() {
        let mut h = ProtocolHistory::default();
        h.switch(100, Protocol::Consumer);
        h.switch(100, Protocol::Consumer); // already: no switch
        h.switch(300, Protocol::Classic);
        let cases = [
            (50, Judged::Classic),
            (100, Judged::Either),
            (200, Judged::Consumer),
            (300, Judged::Either),
            (400, Judged::Classic),
        ];
        for (at, judged) in cases {
            assert_eq!(h.judged_at(at), judged, "t={at}");
        }
        assert_eq!(h.current(), Some(Protocol::Classic));
    }
}
