//! A run's signature: the distinct protocol situations it reached, the feedback a coverage-guided
//! search keeps schedules by (issue 43's `explore`). Read from a finished run only — the probes
//! it hit and its history — so computing it never changes a run.
//!
//! Elements:
//! - every coverage probe hit (family members with their detail: a request answered in a given
//!   group state with a given error is one element per state and error);
//! - every (API, error, group protocol) a coordinator answered, from the wire stream, the group's
//!   protocol being consumer from the first ConsumerGroupHeartbeat it was sent;
//! - every pair of consecutive events of one member (the kind of the event before, the kind of
//!   the event), the member's sub-state transitions as its events show them;
//! - every kind of coordinator event;
//! - how often a run reached each of those, in AFL's manner: each count of [`OFTEN`] an element
//!   reached in one run is one more element, so a schedule that makes a situation recur (more
//!   rebalances, more fenced commits) counts as new though nothing in it is.
//!
//! A [`Coverage`] is the union over runs, with how many runs reached each element, so a search can
//! favour the schedules that hold the rarest.

use std::collections::{BTreeMap, BTreeSet};

use groupsim_history::wire::{Entry, Request};
use groupsim_history::{EventKind, History};
use groupsim_wire::probe::ProbeHits;
use groupsim_wire::Millis;
use serde::{Deserialize, Serialize};

/// One distinct situation a run reached (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Element {
    /// A coverage probe, with its detail when it has one (`name:detail`).
    Probe(String),
    /// A coordinator's answer: the API, its error code, and the group's protocol then.
    Answer { api: String, error: i16, consumer_group: bool },
    /// Two consecutive events of one member: the kind before (`start` for its first) and after.
    MemberStep { from: String, to: String },
    /// A kind of coordinator event.
    Coordinator(String),
    /// An element reached at least `at_least` times in one run (one of [`OFTEN`]).
    Often { of: Box<Element>, at_least: u64 },
}

/// The counts at which an element reached again becomes a new element ([`Element::Often`]).
pub const OFTEN: [u64; 5] = [2, 4, 8, 32, 128];

impl Element {
    /// The element itself, whatever count of it this is.
    pub fn base(&self) -> &Element {
        match self {
            Element::Often { of, .. } => of.base(),
            e => e,
        }
    }
}

/// The elements one run reached.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Signature {
    /// The elements, ordered.
    pub elements: BTreeSet<Element>,
}

impl Signature {
    /// The signature of a run that hit `probes` and recorded `history`.
    pub fn of(probes: &ProbeHits, history: &History) -> Self {
        Self::timed(probes, history).0
    }

    /// [`Self::of`], with the instant each element other than a probe was first reached (a
    /// probe's hits carry no time).
    pub fn timed(probes: &ProbeHits, history: &History) -> (Self, BTreeMap<Element, Millis>) {
        let mut elements: BTreeSet<Element> = BTreeSet::new();
        for (name, &hits) in probes {
            let probe = Element::Probe(name.clone());
            for at_least in OFTEN.into_iter().filter(|&n| hits >= n) {
                elements.insert(Element::Often { of: Box::new(probe.clone()), at_least });
            }
            elements.insert(probe);
        }
        let mut first: BTreeMap<Element, Millis> = BTreeMap::new();
        let mut times: BTreeMap<Element, u64> = BTreeMap::new();
        let mut reach = |e: Element, at: Millis, elements: &mut BTreeSet<Element>| {
            let n = times.entry(e.clone()).or_insert(0);
            *n += 1;
            if OFTEN.contains(n) {
                let often = Element::Often { of: Box::new(e.clone()), at_least: *n };
                first.insert(often.clone(), at);
                elements.insert(often);
            }
            let earliest = first.entry(e.clone()).or_insert(at);
            *earliest = (*earliest).min(at);
            elements.insert(e);
        };
        let mut consumer_groups: BTreeSet<&str> = BTreeSet::new();
        for record in history.wire() {
            let Entry::Exchange(x) = &record.wire else { continue };
            if matches!(x.request, Request::ConsumerHeartbeat { .. }) {
                consumer_groups.insert(&x.group);
            }
            let e = Element::Answer {
                api: x.request.api().to_string(),
                error: x.answer.error(),
                consumer_group: consumer_groups.contains(x.group.as_str()),
            };
            reach(e, x.answered_ms, &mut elements);
        }
        let mut last: BTreeMap<&str, String> = BTreeMap::new();
        for event in history.events() {
            match &event.kind {
                EventKind::Member { member, event: e } => {
                    let to = kind(e);
                    let from = last.insert(member, to.clone()).unwrap_or_else(|| "start".into());
                    reach(Element::MemberStep { from, to }, event.at_ms, &mut elements);
                }
                EventKind::Coordinator { event: e, .. } => {
                    reach(Element::Coordinator(kind(e)), event.at_ms, &mut elements);
                }
                EventKind::World(_) => {}
            }
        }
        (Self { elements }, first)
    }
}

/// The union of the signatures of many runs, with how many runs reached each element.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Coverage {
    /// Each element reached, and by how many runs.
    pub reached: BTreeMap<Element, u64>,
    /// Runs added.
    pub runs: u64,
}

impl Coverage {
    /// Adds one run's signature; returns the elements no earlier run had reached.
    pub fn add(&mut self, signature: &Signature) -> Vec<Element> {
        self.runs += 1;
        let mut new = Vec::new();
        for e in &signature.elements {
            let count = self.reached.entry(e.clone()).or_insert(0);
            if *count == 0 {
                new.push(e.clone());
            }
            *count += 1;
        }
        new
    }

    /// How rare `signature`'s rarest element is: the fewest runs that reached any of its
    /// elements (`u64::MAX` for an empty signature). A search favours low values.
    pub fn rarest(&self, signature: &Signature) -> u64 {
        signature
            .elements
            .iter()
            .map(|e| self.reached.get(e).copied().unwrap_or(0))
            .min()
            .unwrap_or(u64::MAX)
    }
}

/// The variant name of a history event (serde's external tag).
fn kind(event: &impl Serialize) -> String {
    match serde_json::to_value(event) {
        Ok(serde_json::Value::Object(map)) => map.keys().next().cloned().unwrap_or_default(),
        Ok(serde_json::Value::String(name)) => name,
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::{run_seed_with, RunOptions};

    fn signature(scenario: &str, seed: u64) -> Signature {
        let s = crate::scenarios::find(scenario).expect("in catalogue");
        let r = run_seed_with(&s, seed, &RunOptions::default()).expect("run");
        Signature::of(&r.probes, &r.history)
    }

    /// The signature is read from the run alone: the same seed gives the same one, and it holds
    /// what the run did (a classic group's joins answered, its members' joins after their
    /// coordinator was found).
    #[test]
    fn a_runs_signature_is_its_own_and_names_what_it_reached() {
        let a = signature("membership_churn", 3);
        assert_eq!(a, signature("membership_churn", 3));
        assert!(a.elements.contains(&Element::Answer {
            api: "JoinGroup".into(),
            error: 0,
            consumer_group: false
        }));
        assert!(a.elements.iter().any(|e| matches!(e, Element::MemberStep { from, to }
            if from == "start" && to == "CoordinatorFound")));
        assert!(a.elements.iter().any(|e| matches!(e, Element::Probe(_))));
        let consumer = signature("consumer_protocol_churn", 3);
        assert!(consumer.elements.contains(&Element::Answer {
            api: "ConsumerGroupHeartbeat".into(),
            error: 0,
            consumer_group: true
        }));
    }

    /// How often a run reached an element is feedback too: a probe hit five times adds the
    /// elements "at least 2" and "at least 4" (not 8), a member step taken twice "at least 2",
    /// and the instant of a count is when the run reached it, not when it first took the step.
    #[test]
    fn an_element_reached_again_and_again_adds_its_counts() {
        use groupsim_history::{MemberEvent, WorldEvent};
        let probes: ProbeHits = [("p".to_string(), 5), ("q".to_string(), 1)].into();
        let mut history = History::new();
        history.world(0, WorldEvent::RunEnded);
        for at in [10, 20, 30] {
            history.record(
                at,
                EventKind::Member {
                    member: "m0".into(),
                    event: MemberEvent::CoordinatorFound { node_id: 0 },
                },
            );
        }
        let (sig, first) = Signature::timed(&probes, &history);
        let often = |of: Element, at_least| Element::Often { of: Box::new(of), at_least };
        let p = Element::Probe("p".into());
        assert!(sig.elements.contains(&often(p.clone(), 2)));
        assert!(sig.elements.contains(&often(p.clone(), 4)));
        assert!(!sig.elements.contains(&often(p, 8)));
        assert!(!sig.elements.iter().any(|e| matches!(e, Element::Often { of, .. }
            if **of == Element::Probe("q".into()))));
        let again =
            Element::MemberStep { from: "CoordinatorFound".into(), to: "CoordinatorFound".into() };
        assert!(sig.elements.contains(&often(again.clone(), 2)));
        assert!(!sig.elements.contains(&often(again.clone(), 4)));
        assert_eq!(first[&often(again.clone(), 2)], 30, "the second such step came at 30");
        assert_eq!(first[&again], 20);
        assert_eq!(
            often(often(Element::Probe("x".into()), 2), 4).base(),
            &Element::Probe("x".into())
        );
    }

    /// The union counts runs per element and says what a run added; rarity favours the run
    /// holding an element few others reached.
    #[test]
    fn coverage_counts_and_names_what_is_new() {
        let e = |s: &str| Element::Probe(s.into());
        let one = Signature { elements: [e("a"), e("b")].into() };
        let two = Signature { elements: [e("b"), e("c")].into() };
        let mut c = Coverage::default();
        assert_eq!(c.add(&one), [e("a"), e("b")]);
        assert_eq!(c.add(&two), [e("c")]);
        assert_eq!(c.add(&two), Vec::<Element>::new());
        assert_eq!(c.runs, 3);
        assert_eq!(c.reached[&e("b")], 3);
        assert_eq!(c.rarest(&one), 1, "a was reached once");
        assert_eq!(c.rarest(&two), 2, "c twice");
        assert_eq!(c.rarest(&Signature::default()), u64::MAX);
    }
}
