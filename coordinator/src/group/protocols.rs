//! Protocol support and choice: which protocols (assignors) every member supports, and
//! Kafka's vote for the one a generation uses.

use std::collections::{BTreeMap, BTreeSet};

use indexmap::IndexMap;

use super::{Group, GroupState, MemberProtocol};

/// Counts one more member supporting each of `names`.
pub(super) fn count(support: &mut BTreeMap<String, usize>, names: BTreeSet<String>) {
    for p in names {
        *support.entry(p).or_default() += 1;
    }
}

/// Counts one member fewer supporting each of `names` (a count reaching 0 is dropped).
pub(super) fn uncount(support: &mut BTreeMap<String, usize>, names: BTreeSet<String>) {
    for p in names {
        if let Some(c) = support.get_mut(&p) {
            *c -= 1;
            if *c == 0 {
                support.remove(&p);
            }
        }
    }
}

impl Group {
    /// Kafka's `supportsProtocols`: an Empty group accepts any non-empty protocol type and list;
    /// otherwise the type must match and at least one protocol must be supported by everyone.
    pub fn supports_protocols(&self, protocol_type: &str, protocols: &BTreeSet<String>) -> bool {
        if self.state == GroupState::Empty {
            !protocol_type.is_empty() && !protocols.is_empty()
        } else {
            self.protocol_type.as_deref() == Some(protocol_type)
                && protocols.iter().any(|p| self.support_count(p) == self.members.len())
        }
    }

    fn support_count(&self, protocol: &str) -> usize {
        self.protocol_support.get(protocol).copied().unwrap_or(0)
    }

    /// Protocols every member supports.
    pub fn candidate_protocols(&self) -> BTreeSet<&str> {
        let n = self.members.len();
        self.protocol_support.iter().filter(|(_, c)| **c == n).map(|(p, _)| p.as_str()).collect()
    }

    /// Kafka's `selectProtocol`: among the protocols all members support, each member votes for
    /// its most preferred one and the most votes win. Ties go to the protocol whose first vote
    /// came from the earliest-joined member (Kafka leaves ties to hash order).
    pub fn select_protocol(&self) -> Option<String> {
        let candidates = self.candidate_protocols();
        let mut votes: IndexMap<&str, usize> = IndexMap::new();
        for m in self.members.values() {
            if let Some(v) = m.vote(&candidates) {
                *votes.entry(v).or_default() += 1;
            }
        }
        let mut best: Option<(&str, usize)> = None;
        for (p, c) in votes {
            if best.is_none_or(|(_, bc)| c > bc) {
                best = Some((p, c));
            }
        }
        best.map(|(p, _)| p.to_string())
    }

    /// Replaces a member's protocols (keeping the support counts right).
    pub(crate) fn update_protocols(&mut self, member_id: &str, protocols: Vec<MemberProtocol>) {
        let Some(m) = self.members.get_mut(member_id) else { return };
        uncount(&mut self.protocol_support, m.protocol_names());
        m.protocols = protocols;
        count(&mut self.protocol_support, m.protocol_names());
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::super::Member;
    use super::*;
    use crate::effects::Effects;

    fn member(id: &str, protocols: &[&str]) -> Member {
        Member {
            member_id: id.into(),
            group_instance_id: None,
            client_id: "c".into(),
            client_host: String::new(),
            rebalance_timeout_ms: 1000,
            session_timeout_ms: 1000,
            protocol_type: "consumer".into(),
            protocols: protocols
                .iter()
                .map(|p| MemberProtocol { name: p.to_string(), metadata: Bytes::new() })
                .collect(),
            assignment: Bytes::new(),
            awaiting_join: None,
            awaiting_sync: None,
            is_new: false,
            joined_at: 0,
            session_deadline: None,
        }
    }

    #[test]
    fn select_protocol_votes_among_protocols_every_member_supports() {
        // (members' preference lists, expected choice)
        let cases: &[(&[&[&str]], &str)] = &[
            (&[&["range", "roundrobin"], &["roundrobin", "range"], &["roundrobin"]], "roundrobin"),
            (&[&["a", "b"], &["a", "b"], &["b", "a"]], "a"),
            // "c" has most first preferences but only two members support it.
            (&[&["c", "b"], &["c", "b"], &["b"]], "b"),
            // Tie: the earliest member's vote wins.
            (&[&["x", "y"], &["y", "x"]], "x"),
        ];
        for (prefs, expected) in cases {
            let mut fx = Effects::default();
            let mut g = Group::new("g");
            for (i, p) in prefs.iter().enumerate() {
                g.add(member(&format!("m{i}"), p), &mut fx);
            }
            assert_eq!(g.select_protocol().as_deref(), Some(*expected), "{prefs:?}");
        }
    }

    #[test]
    fn supports_protocols_requires_type_match_and_a_common_protocol() {
        let mut fx = Effects::default();
        let mut g = Group::new("g");
        let set = |ps: &[&str]| ps.iter().map(|p| p.to_string()).collect::<BTreeSet<_>>();
        assert!(!g.supports_protocols("", &set(&["range"])), "empty type");
        assert!(!g.supports_protocols("consumer", &set(&[])), "no protocols");
        g.add(member("m1", &["range", "sticky"]), &mut fx);
        g.state = GroupState::Stable;
        assert!(g.supports_protocols("consumer", &set(&["sticky"])));
        assert!(!g.supports_protocols("connect", &set(&["sticky"])));
        assert!(!g.supports_protocols("consumer", &set(&["roundrobin"])));
    }
}
