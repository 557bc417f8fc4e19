//! Kafka's classic group states and the transitions allowed between them.
//!
//! A leaf module: the group state machine (`group/`), the history events (`event.rs`) and the
//! API handlers all name these states, so they live where every one of them can import them
//! without importing each other.

/// Kafka's classic group states.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum GroupState {
    /// No members; offsets may still be stored.
    Empty,
    /// Collecting JoinGroup requests for the next generation.
    PreparingRebalance,
    /// Join phase done; waiting for the leader's SyncGroup.
    CompletingRebalance,
    /// Every member has its assignment; heartbeats keep sessions alive.
    Stable,
    /// The group was removed (e.g. its coordinator moved away).
    Dead,
}

impl GroupState {
    /// Kafka's name for the state, as DescribeGroups reports it.
    pub fn kafka_name(self) -> &'static str {
        match self {
            GroupState::Empty => "Empty",
            GroupState::PreparingRebalance => "PreparingRebalance",
            GroupState::CompletingRebalance => "CompletingRebalance",
            GroupState::Stable => "Stable",
            GroupState::Dead => "Dead",
        }
    }

    /// Whether Kafka allows a group in `self` to move to `to` (GroupMetadata's
    /// `validPreviousStates`): Empty and Stable and CompletingRebalance may start a rebalance,
    /// only a completed join phase leads to CompletingRebalance (or Empty when nobody is left),
    /// only the leader's sync leads to Stable, and any state may die.
    pub fn can_transition_to(self, to: GroupState) -> bool {
        use GroupState::*;
        match to {
            Dead => true,
            PreparingRebalance => matches!(self, Stable | CompletingRebalance | Empty),
            CompletingRebalance => self == PreparingRebalance,
            Stable => self == CompletingRebalance,
            Empty => self == PreparingRebalance,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_kafkas_transitions_are_legal() {
        use GroupState::*;
        let all = [Empty, PreparingRebalance, CompletingRebalance, Stable, Dead];
        let legal = [
            (Empty, PreparingRebalance),
            (PreparingRebalance, CompletingRebalance),
            (PreparingRebalance, Empty),
            (CompletingRebalance, PreparingRebalance),
            (CompletingRebalance, Stable),
            (Stable, PreparingRebalance),
        ];
        for from in all {
            for to in all {
                let expected = to == Dead || legal.contains(&(from, to));
                assert_eq!(from.can_transition_to(to), expected, "{from:?} -> {to:?}");
            }
        }
    }
}
