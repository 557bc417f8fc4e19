//! A directed search (`explore --toward FILE`): entries are weighed by how near they come to a
//! switch's situation, as directed greybox fuzzers (AFLGo) weigh inputs by their distance to a
//! target, and a directed mutation after the frontier starts shortly before the instant the
//! entry came nearest.
//!
//! Nearness is a table of signature elements with a score each (the lift of an element for
//! catching the switch: how much likelier a run holding it is to catch, times 100), read from a
//! JSON file of `[element, score]` pairs. An entry's nearness is its best-scored element's.
//! Without a table the search is the undirected one, draw for draw.

use std::collections::BTreeMap;

use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::signature::{Element, Signature};
use groupsim_wire::Millis;

/// Of the mutations, the share (thousandths) whose parent is drawn by nearness rather than by
/// rarity, once some entry is near at all.
pub const DIRECTED_PER_MILLE: u64 = 500;

/// Of all runs, the share (thousandths) a directed search spends on mutations of the entries
/// near its aim once there are any, whatever the arms have paid in new elements: early in a
/// search fresh seeds pay nearly every run and would take most runs by pay alone.
pub const AIMED_PER_MILLE: u64 = 400;

/// A directed mutation after the frontier changes the faults from this long before the instant
/// the entry reached its nearest element: what made the situation is usually a fault just before
/// it.
pub const LEAD_MS: Millis = 1_000;

/// How near one entry came: its best element's score, and the instant it first reached its
/// best-scored element that carries one (probes carry none).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Near {
    /// The best score among the entry's elements.
    pub score: u64,
    /// When the entry first reached its best-scored timed element.
    pub at_ms: Option<Millis>,
}

/// The elements a directed search aims at, each with its score.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Direction {
    /// Score of each element (absent: 0).
    pub scores: BTreeMap<Element, u64>,
}

impl Direction {
    /// A table from its JSON text: a list of `[element, score]`.
    pub fn from_json(text: &str) -> Result<Self, String> {
        let pairs: Vec<(Element, u64)> = serde_json::from_str(text).map_err(|e| e.to_string())?;
        Ok(Self { scores: pairs.into_iter().filter(|(_, s)| *s > 0).collect() })
    }

    /// How near a run with `signature`, first reaching its timed elements at `first_ms`, came;
    /// `None` when it holds no scored element.
    pub fn near(
        &self,
        signature: &Signature,
        first_ms: &BTreeMap<Element, Millis>,
    ) -> Option<Near> {
        let score = |e: &Element| self.scores.get(e).copied().unwrap_or(0);
        let best = signature.elements.iter().map(score).max().filter(|&s| s > 0)?;
        // The best timed element, the earliest among equals.
        let at_ms = signature
            .elements
            .iter()
            .filter_map(|e| first_ms.get(e).map(|&at| (score(e), at)))
            .filter(|&(s, _)| s > 0)
            .max_by_key(|&(s, at)| (s, std::cmp::Reverse(at)))
            .map(|(_, at)| at);
        Some(Near { score: best, at_ms })
    }
}

/// Each entry's draw weight by nearness: its score squared (0 for an entry not near), so the
/// nearest entries take most directed draws.
pub fn weights(near: impl Iterator<Item = Option<Near>>) -> Vec<u64> {
    near.map(|n| n.map_or(0, |n| n.score.saturating_mul(n.score))).collect()
}

/// Whether this mutation's parent is drawn by nearness: only when some entry is near (no draw
/// otherwise, so an undirected search's draws are unchanged).
pub fn directed_draw(weights: &[u64], rng: &mut ChaCha8Rng) -> bool {
    weights.iter().any(|&w| w > 0) && rng.random_range(0..1_000) < DIRECTED_PER_MILLE
}

/// Whether this run goes to the directed share ([`AIMED_PER_MILLE`]): only when some entry is
/// near (no draw otherwise).
pub fn aimed_draw(weights: &[u64], rng: &mut ChaCha8Rng) -> bool {
    weights.iter().any(|&w| w > 0) && rng.random_range(0..1_000) < AIMED_PER_MILLE
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn probe(s: &str) -> Element {
        Element::Probe(s.into())
    }

    fn step(from: &str, to: &str) -> Element {
        Element::MemberStep { from: from.into(), to: to.into() }
    }

    /// An entry is as near as its best element; the instant is that of its best timed element
    /// (a probe carries none), and a run holding nothing scored is not near at all.
    #[test]
    fn an_entry_is_as_near_as_its_best_element_and_timed_by_its_best_timed_one() {
        let table = serde_json::to_string(&vec![
            (probe("site"), 900u64),
            (step("Assigned", "CoordinatorLost"), 600),
            (step("Joined", "Joined"), 200),
            (probe("never"), 0),
        ])
        .unwrap();
        let d = Direction::from_json(&table).expect("a table");
        assert_eq!(d.scores.len(), 3, "a zero score is dropped");
        let sig = Signature {
            elements: [
                probe("site"),
                step("Assigned", "CoordinatorLost"),
                step("Joined", "Joined"),
            ]
            .into(),
        };
        let first: BTreeMap<Element, Millis> =
            [(step("Assigned", "CoordinatorLost"), 7_000), (step("Joined", "Joined"), 2_000)]
                .into();
        assert_eq!(d.near(&sig, &first), Some(Near { score: 900, at_ms: Some(7_000) }));
        let far = Signature { elements: [probe("other")].into() };
        assert_eq!(d.near(&far, &first), None);
        let untimed = Signature { elements: [probe("site")].into() };
        assert_eq!(d.near(&untimed, &BTreeMap::new()), Some(Near { score: 900, at_ms: None }));
        assert!(Direction::from_json("{").is_err());
    }

    /// Nearness weighs by the score squared; with no entry near, no draw is taken from the
    /// stream, so an undirected search draws exactly as before.
    #[test]
    fn directed_draws_favour_the_nearest_and_take_nothing_when_none_is_near() {
        let w = weights(
            [None, Some(Near { score: 3, at_ms: None }), Some(Near { score: 10, at_ms: Some(1) })]
                .into_iter(),
        );
        assert_eq!(w, [0, 9, 100]);
        let mut a = ChaCha8Rng::seed_from_u64(1);
        let b = a.clone();
        assert!(!directed_draw(&[0, 0], &mut a));
        assert_eq!(a, b, "nothing drawn");
        let directed = (0..1_000).filter(|_| directed_draw(&w, &mut a)).count();
        assert!((400..600).contains(&directed), "about half: {directed}");
    }
}
