//! The client's side of the protocol: requests a correct client never writes, judged from the
//! requests each actor (one client process incarnation) wrote and the answers it had read before.
//!
//! `unknown-generation-sent`: a group request carrying a member id and generation (or member
//! epoch) the actor was never given. Classic protocol: a SyncGroup, Heartbeat or OffsetCommit
//! must carry a member id and generation pair a JoinGroup answered NONE had given it, and a
//! LeaveGroup or JoinGroup a member id a JoinGroup answer (NONE or MEMBER_ID_REQUIRED, KIP-394)
//! had given it (the Java consumer's AbstractCoordinator sends the generation it holds, reset to
//! no member id and generation -1 when it loses it). KIP-848: a ConsumerGroupHeartbeat at a
//! member epoch other than 0 (join) or -1/-2 (leave) must carry an epoch a heartbeat answer had
//! given that member id, and an OffsetCommit a member epoch one had given it. A commit without a
//! group member (generation -1, no member id) is always allowed: a client that assigns itself
//! partitions commits so. Kafka refuses the rest (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID,
//! FENCED_MEMBER_EPOCH), so the coordinator's answer hides nothing; the client had no business
//! sending it, and a client that does is confused about its own membership.
//!
//! `join-owning-partitions`: a ConsumerGroupHeartbeat at member epoch 0 listing owned partitions.
//! GroupMetadataManager's request validation refuses it (INVALID_REQUEST: the partitions must be
//! empty when joining or rejoining): a client that sends it believes it keeps partitions across
//! a fencing.
//!
//! Requests whose answers never came prove nothing about what the actor was given, and give it
//! nothing. An actor is a client process as its requests name it (`client.id` for a real
//! client); where the log marks which actors are member processes, an actor it does not mark is
//! a connection no process owned up to (a client library that commits through a second client
//! with its default id, as samsa does): its requests are judged against what any actor was
//! given. A misbehaving client's deliberate requests (the invalid_requests scenario's prober)
//! are excused one by one, by the case it names for each ([`Excused`]).

use std::collections::{BTreeMap, BTreeSet};

use groupsim_wire::Millis;

use super::log::{Answer, AnswerLog, Entry, Mark, Request, MEMBER_ID_REQUIRED, NONE};
use super::{BrokerAnomaly, BrokerRule};

/// The requests a deliberately misbehaving client declared, each by the case it names when it
/// reads the answer: (member name, answer read at). Its requests whose answers never came
/// cannot be declared, so they are excused as its own ([`Excused::members`]).
#[derive(Clone, Debug, Default)]
pub struct Excused {
    /// (member name, answer read at) of each declared request.
    pub cases: BTreeSet<(String, Millis)>,
    /// The members that declared any.
    pub members: BTreeSet<String>,
    /// Actors excused by name for everything they write: a harness's own deliberate prober
    /// (check-broker's observer, whose stale-commit probe commits as members it saw fenced).
    pub actors: BTreeSet<String>,
}

impl Excused {
    /// Nothing excused.
    pub fn new() -> Self {
        Self::default()
    }

    fn covers(&self, member: &str, answered_ms: Option<Millis>) -> bool {
        match answered_ms {
            Some(t) => self.cases.contains(&(member.to_string(), t)),
            None => self.members.contains(member),
        }
    }
}

/// What one actor had been given, as the answers it read say.
#[derive(Default)]
struct Given {
    /// Member ids a JoinGroup answer named.
    member_ids: BTreeSet<String>,
    /// (member id, generation) pairs JoinGroup answers NONE gave.
    generations: BTreeSet<(String, i32)>,
    /// (member id, member epoch) pairs ConsumerGroupHeartbeat answers NONE gave.
    epochs: BTreeSet<(String, i32)>,
}

/// Finds every request its actor had no business writing, skipping `excused` ones.
pub fn check(log: &AnswerLog, excused: &Excused) -> Vec<BrokerAnomaly> {
    // The actor's answers, by when it read them: a request is judged by what was read before it
    // was written.
    let mut found = Vec::new();
    let mut given: BTreeMap<&str, Given> = BTreeMap::new();
    // What any actor was given, for actors no member process owns.
    let mut anyone = Given::default();
    let members: BTreeSet<&str> = log
        .entries
        .iter()
        .filter_map(|e| match e {
            Entry::Mark { mark: Mark::Started(actor), .. } => Some(actor.as_str()),
            _ => None,
        })
        .collect();
    let exchanges: Vec<(usize, &super::log::Exchange)> = log.exchanges().collect();
    let mut by_answer: Vec<usize> = (0..exchanges.len()).collect();
    by_answer.sort_by_key(|&k| (exchanges[k].1.answered_ms, exchanges[k].0));
    let mut next_answer = 0;
    // (written at, exchange index or MAX, actor, request, answer read at)
    let mut requests: Vec<(Millis, usize, &str, &Request, Option<Millis>)> = Vec::new();
    for e in &log.entries {
        if let Entry::Unanswered { actor, sent_ms, call, .. } = e {
            requests.push((*sent_ms, usize::MAX, actor, call, None));
        }
    }
    for &(i, x) in &exchanges {
        requests.push((x.sent_ms, i, &x.actor, &x.request, Some(x.answered_ms)));
    }
    requests.sort_by_key(|r| (r.0, r.1));
    for (sent_ms, i, actor, request, answered_ms) in requests {
        // Every answer read before this request was written is known to its actor (one read in
        // the same millisecond may have been read first: it counts).
        while next_answer < by_answer.len()
            && exchanges[by_answer[next_answer]].1.answered_ms <= sent_ms
        {
            let (_, x) = exchanges[by_answer[next_answer]];
            learn(given.entry(&x.actor).or_default(), &x.request, &x.answer);
            learn(&mut anyone, &x.request, &x.answer);
            next_answer += 1;
        }
        let member = actor.split('.').next().unwrap_or(actor);
        if excused.covers(member, answered_ms) || excused.actors.contains(actor) {
            continue;
        }
        let unowned = !members.is_empty() && !members.contains(actor);
        let g = if unowned { &mut anyone } else { given.entry(actor).or_default() };
        if let Some(why) = judge(g, request) {
            found.push(BrokerAnomaly {
                rule: why.0,
                at_ms: sent_ms,
                partition: None,
                summary: format!("{actor} wrote {}", why.1),
                evidence: if i == usize::MAX { Vec::new() } else { vec![i] },
            });
        }
    }
    found
}

/// What an answer gave its actor.
fn learn(g: &mut Given, request: &Request, answer: &Answer) {
    match (request, answer) {
        (_, Answer::Join { error, member_id, generation, .. }) => {
            if !member_id.is_empty() && (*error == NONE || *error == MEMBER_ID_REQUIRED) {
                g.member_ids.insert(member_id.clone());
            }
            if *error == NONE {
                g.generations.insert((member_id.clone(), *generation));
            }
        }
        (
            Request::ConsumerHeartbeat { member_id: asked, .. },
            Answer::ConsumerHeartbeat { error: NONE, member_id, epoch, .. },
        ) => {
            let id = if member_id.is_empty() { asked } else { member_id };
            g.epochs.insert((id.clone(), *epoch));
        }
        _ => {}
    }
}

/// The rule `request` breaks, given what its actor had been given, and how.
fn judge(g: &Given, request: &Request) -> Option<(BrokerRule, String)> {
    let unknown = BrokerRule::UnknownGenerationSent;
    match request {
        Request::Sync { member_id, generation, .. } | Request::Heartbeat { member_id, generation, .. } => {
            (!g.generations.contains(&(member_id.clone(), *generation))).then(|| {
                let api = if matches!(request, Request::Sync { .. }) { "SyncGroup" } else { "Heartbeat" };
                (unknown, format!("a {api} as {member_id:?} at generation {generation}, which no JoinGroup answer had given it"))
            })
        }
        Request::Commit { member_id, generation, .. } => {
            if *generation < 0 && member_id.is_empty() {
                return None;
            }
            let pair = (member_id.clone(), *generation);
            (!g.generations.contains(&pair) && !g.epochs.contains(&pair)).then(|| {
                (unknown, format!("an OffsetCommit as {member_id:?} at generation or member epoch {generation}, which no answer had given it"))
            })
        }
        Request::Leave { member_id, .. } | Request::Join { member_id, .. } => {
            (!member_id.is_empty() && !g.member_ids.contains(member_id)).then(|| {
                let api = if matches!(request, Request::Leave { .. }) { "LeaveGroup" } else { "JoinGroup" };
                (unknown, format!("a {api} as {member_id:?}, a member id no JoinGroup answer had given it"))
            })
        }
        Request::ConsumerHeartbeat { member_id, epoch, owned, .. } => {
            if *epoch == 0 {
                let owning = owned.as_ref().is_some_and(|o| !o.is_empty());
                return owning.then(|| {
                    (BrokerRule::JoinOwningPartitions, format!("a join (member epoch 0) as {member_id:?} listing owned partitions"))
                });
            }
            (*epoch > 0 && !g.epochs.contains(&(member_id.clone(), *epoch))).then(|| {
                (unknown, format!("a ConsumerGroupHeartbeat as {member_id:?} at member epoch {epoch}, which no answer had given it"))
            })
        }
        Request::OffsetFetch { .. } | Request::Fetch { .. } => None,
    }
}
