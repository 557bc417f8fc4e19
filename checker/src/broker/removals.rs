//! When a classic member id stopped being a member, as the answers prove it: what the commit
//! rule ([`super::commits`]) and the removed-member rule ([`super::removed`]) ask of every
//! request they judge. Built once per log and indexed by member id and generation, so judging
//! every heartbeat of a long run costs a lookup, not a scan of the log.
//!
//! Proofs that hold for the rest of the log (Kafka wrote them, [`super::eras`]): the member's
//! static instance given to another member id (KIP-345: the coordinator fences the old id with
//! FENCED_INSTANCE_ID), a SyncGroup answered NONE at a later generation. Proofs that hold inside
//! their era only, while the group is plainly classic when both the proof and the judged
//! request are read (a consumer group creates a classic member a JoinGroup names when it does
//! not know it, and may be deleted and made again: [`Eras::plain`]), and until a JoinGroup lets
//! the member id back in: a JoinGroup answer of a later generation, its generation's member list without it, its
//! LeaveGroup accepted, an answer UNKNOWN_MEMBER_ID (to a request naming no instance, or the
//! instance it was given under; not while the id was pending, told MEMBER_ID_REQUIRED and not
//! joined yet), and its session expired ([`super::sessions`]).

use std::collections::{BTreeMap, BTreeSet};

use groupsim_wire::Millis;

use super::eras::Eras;
use super::log::{
    answer_error, request_member, same_connection, Answer, AnswerLog, Entry, Exchange, Request,
    NONE, UNKNOWN_MEMBER_ID,
};
use super::sessions::Sessions;
use super::statics::{self, Replacement};

/// Evidence that a member id stopped being a member at some instant.
#[derive(Clone, Debug)]
pub struct Removal {
    /// When the harness read the proof.
    pub at_ms: Millis,
    /// The proof's entry.
    pub entry: usize,
    /// What it proves, in words.
    pub why: String,
    /// What kind of proof.
    pub kind: Kind,
}

/// The kinds of proof that a member id is no member.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Its static instance was given to another member id.
    Replaced,
    /// Its LeaveGroup was accepted.
    Left,
    /// It was answered UNKNOWN_MEMBER_ID.
    Unknown,
    /// A later generation was answered (the stale-generation rule's concern for heartbeats).
    LaterGeneration,
    /// The leader's member list of its generation left it out (the membership rule's concern
    /// for syncs).
    ListedWithout,
    /// Its session expired.
    Expired,
}

/// The instance id a classic request names, if any.
fn request_instance(r: &Request) -> Option<&str> {
    match r {
        Request::Join { instance, .. }
        | Request::Sync { instance, .. }
        | Request::Heartbeat { instance, .. }
        | Request::Leave { instance, .. }
        | Request::Commit { instance, .. } => instance.as_deref(),
        _ => None,
    }
}

/// The indexes [`Removals::first`] reads.
pub struct Removals<'a> {
    log: &'a AnswerLog,
    eras: Eras,
    replacements: Vec<Replacement>,
    static_joins: BTreeSet<(String, i32)>,
    /// Member-level proofs per member id: (entry, kind).
    proofs: BTreeMap<String, Vec<(usize, Kind)>>,
    /// SyncGroup answers NONE: (generation, entry, the member id synced).
    syncs: Vec<(i32, usize, &'a str)>,
    /// JoinGroup answers NONE per generation: entries, ascending.
    joins_at: BTreeMap<i32, Vec<usize>>,
    /// The leaders' JoinGroup answers NONE (those that list the members) per generation.
    listings_at: BTreeMap<i32, Vec<usize>>,
    /// JoinGroup answers NONE per member id given: (entry, answered at, generation).
    joins_of: BTreeMap<&'a str, Vec<(usize, Millis, i32)>>,
    /// When each member id's own JoinGroups were written, answered or not.
    join_writes: BTreeMap<&'a str, Vec<Millis>>,
    /// The JoinGroups that may have let each member id in: those naming it, answered or not,
    /// and those answered with it; when each was written and when its answer was read.
    readmits: BTreeMap<&'a str, Vec<(Millis, Option<Millis>)>>,
    sessions: Sessions<'a>,
}

impl<'a> Removals<'a> {
    /// Indexes `log`.
    pub fn of(log: &'a AnswerLog) -> Self {
        let replacements = statics::replacements(log);
        let mut proofs: BTreeMap<String, Vec<(usize, Kind)>> = BTreeMap::new();
        for r in &replacements {
            proofs.entry(r.old.clone()).or_default().push((r.entry, Kind::Replaced));
        }
        let mut syncs = Vec::new();
        let mut joins_at: BTreeMap<i32, Vec<usize>> = BTreeMap::new();
        let mut listings_at: BTreeMap<i32, Vec<usize>> = BTreeMap::new();
        let mut joins_of: BTreeMap<&str, Vec<(usize, Millis, i32)>> = BTreeMap::new();
        // The instance each member id was given under. UNKNOWN_MEMBER_ID to a request naming
        // an instance says nobody holds that instance (Kafka's `validateMember`), which proves
        // the member id gone only when it held that instance: a dynamic member that names a
        // stranger's instance is answered so and stays a member.
        let mut instances: BTreeMap<&str, &str> = BTreeMap::new();
        for (i, x) in log.exchanges() {
            match (&x.request, &x.answer) {
                (Request::Sync { member_id, generation, .. }, Answer::Sync { error: NONE, .. }) => {
                    syncs.push((*generation, i, member_id.as_str()))
                }
                (_, Answer::Join { error: NONE, generation, member_id, leader, members }) => {
                    joins_at.entry(*generation).or_default().push(i);
                    if leader == member_id && !members.is_empty() {
                        listings_at.entry(*generation).or_default().push(i);
                    }
                    joins_of.entry(member_id).or_default().push((i, x.answered_ms, *generation));
                }
                (Request::Leave { member_id, .. }, Answer::Error { error: NONE }) => {
                    proofs.entry(member_id.clone()).or_default().push((i, Kind::Left))
                }
                _ => {}
            }
            if let Some(m) = request_member(&x.request) {
                let own_instance = match request_instance(&x.request) {
                    None => true,
                    Some(named) => instances.get(m).is_some_and(|held| *held == named),
                };
                // A pending member id (told MEMBER_ID_REQUIRED) is refused until its JoinGroup
                // lets it in: UNKNOWN_MEMBER_ID then proves nothing about later requests.
                if answer_error(&x.answer) == UNKNOWN_MEMBER_ID
                    && own_instance
                    && !log.pending_when_written(m, x)
                {
                    proofs.entry(m.to_string()).or_default().push((i, Kind::Unknown));
                }
            }
            if let (
                Request::Join { instance: Some(named), .. },
                Answer::Join { error: NONE, member_id, .. },
            ) = (&x.request, &x.answer)
            {
                instances.insert(member_id.as_str(), named.as_str());
            }
        }
        for v in proofs.values_mut() {
            v.sort_unstable_by_key(|p| p.0);
        }
        let mut join_writes: BTreeMap<&str, Vec<Millis>> = BTreeMap::new();
        let mut readmits: BTreeMap<&str, Vec<(Millis, Option<Millis>)>> = BTreeMap::new();
        for e in &log.entries {
            let (call, sent_ms, answered) = match e {
                Entry::Exchange(x) => (&x.request, x.sent_ms, Some(x)),
                Entry::Unanswered { call, sent_ms, .. } => (call, *sent_ms, None),
                Entry::Mark { .. } => continue,
            };
            let Request::Join { member_id, .. } = call else { continue };
            let read = answered.map(|x| x.answered_ms);
            if !member_id.is_empty() {
                join_writes.entry(member_id.as_str()).or_default().push(sent_ms);
                readmits.entry(member_id.as_str()).or_default().push((sent_ms, read));
            }
            if let Some(Answer::Join { error: NONE, member_id: given, .. }) =
                answered.map(|x| &x.answer)
            {
                if given != member_id {
                    readmits.entry(given.as_str()).or_default().push((sent_ms, read));
                }
            }
        }
        Self {
            log,
            eras: Eras::of(log),
            static_joins: statics::static_joins(log),
            replacements,
            proofs,
            syncs,
            joins_at,
            listings_at,
            joins_of,
            join_writes,
            readmits,
            sessions: Sessions::of(log),
        }
    }

    /// The first proof, read before the request of entry `judged` was written (or, for the
    /// member's own leave or refusal, answered before it on the same connection:
    /// [`same_connection`]), that `member_id` was not a member of `generation` when that request
    /// was validated (see the module docs), of a kind `counts` accepts.
    pub fn first(
        &self,
        member_id: &str,
        generation: i32,
        judged: usize,
        counts: impl Fn(Kind) -> bool,
    ) -> Option<Removal> {
        let Some(Entry::Exchange(c)) = self.log.entries.get(judged) else { return None };
        let eras = &self.eras;
        let before =
            |i: usize| i < judged && self.answer(i).is_some_and(|x| x.answered_ms < c.sent_ms);
        // Let back in at the judged generation (or later), or given it or a lower one (a group
        // deleted and made again starts over), since entry `i`.
        let joined = |i: usize, fits: &dyn Fn(i32) -> bool| {
            self.joins_of
                .get(member_id)
                .is_some_and(|v| v.iter().any(|&(k, at, g)| k > i && at <= c.sent_ms && fits(g)))
        };
        let rejoined = |i: usize| joined(i, &|g| g >= generation);
        let restarted = |i: usize| joined(i, &|g| g <= generation);
        let in_era = |i: usize| eras.plain(i, judged) && eras.same(i, judged);
        let mut best: Option<Removal> = None;
        // Later generations are looked for only where they count (the commit rule): a heartbeat
        // need not walk every SyncGroup of the run.
        let later_generations = counts(Kind::LaterGeneration);
        // The reason is written only for a proof that beats the best so far: most do not.
        let mut offer = |entry: usize, why: &dyn Fn() -> String, kind: Kind| {
            if counts(kind) && best.as_ref().is_none_or(|b| entry < b.entry) {
                let at_ms = self.answer(entry).map(|x| x.answered_ms).unwrap_or_default();
                best = Some(Removal { at_ms, entry, why: why(), kind });
            }
        };
        for &(i, kind) in self.proofs.get(member_id).into_iter().flatten() {
            let queued = matches!(kind, Kind::Left | Kind::Unknown)
                && self.decided_first(i, judged, c, member_id);
            if !before(i) && !queued {
                continue;
            }
            match kind {
                Kind::Replaced => {
                    // Kafka stores a takeover in a Stable group before it answers it, but one
                    // made during a rebalance only with that generation's assignment: until a
                    // SyncGroup of its generation (or a later one) is answered by the same
                    // coordinator, a coordinator that takes the group over loads the instance as
                    // last stored (and may hand out the same generation number again).
                    let stored = |r: &Replacement| {
                        self.syncs
                            .iter()
                            .any(|&(g, k, _)| g >= r.generation && before(k) && eras.same(i, k))
                    };
                    if let Some(r) = statics::at_entry(&self.replacements, i)
                        .filter(|r| eras.same(i, judged) || stored(r))
                    {
                        offer(
                            i,
                            &|| format!("its instance {} was given to {}", r.instance, r.new),
                            kind,
                        );
                    }
                }
                Kind::Left if in_era(i) && !rejoined(i) => {
                    offer(i, &|| "its LeaveGroup was accepted by the same coordinator".into(), kind)
                }
                Kind::Unknown if in_era(i) && !rejoined(i) => {
                    offer(i, &|| "the same coordinator answered it UNKNOWN_MEMBER_ID".into(), kind)
                }
                _ => {}
            }
        }
        if later_generations {
            // Entries ascend within each list, and a proof beats only those of later entries:
            // each walk stops at its first proof, or where entries reach the judged one.
            for &(g, i, synced) in &self.syncs {
                if i >= judged {
                    break;
                }
                let classic = eras.plain(i, judged);
                if g > generation
                    && before(i)
                    && (classic || (synced == member_id && !restarted(i)))
                {
                    offer(
                        i,
                        &|| format!("a SyncGroup answered NONE at generation {g}"),
                        Kind::LaterGeneration,
                    );
                    break;
                }
            }
            for (&g, entries) in self.joins_at.range(generation.saturating_add(1)..) {
                for &i in entries {
                    if i >= judged {
                        break;
                    }
                    if before(i) && in_era(i) {
                        offer(
                            i,
                            &|| {
                                format!(
                                    "a JoinGroup answer of generation {g} from the same \
                                     coordinator"
                                )
                            },
                            Kind::LaterGeneration,
                        );
                        break;
                    }
                }
            }
        }
        for &i in self.listings_at.get(&generation).into_iter().flatten() {
            let Some(Answer::Join { leader, members, member_id: to, .. }) =
                self.answer(i).map(|x| &x.answer)
            else {
                continue;
            };
            // A JoinGroup of the member written since the list was read may have added it to
            // the group, which keeps the generation's number until the rebalance completes:
            // Kafka takes a commit from it at that number meanwhile.
            let listed_at = self.answer(i).map_or(0, |x| x.answered_ms);
            let joined_since = self
                .join_writes
                .get(member_id)
                .is_some_and(|w| w.iter().any(|&t| t >= listed_at && t <= c.sent_ms));
            if before(i)
                && in_era(i)
                && !joined_since
                && leader == to
                && !members.is_empty()
                && !members.iter().any(|m| m == member_id)
                && !statics::replaced_into(&self.replacements, member_id, generation)
                && !self.static_joins.contains(&(member_id.to_string(), generation))
            {
                offer(
                    i,
                    &|| format!("generation {generation}'s member list without it"),
                    Kind::ListedWithout,
                );
            }
        }
        if let Some(e) = self.sessions.expired(member_id, judged) {
            if in_era(e.last) && eras.same(e.last, judged) && !rejoined(e.last) {
                offer(
                    e.last,
                    &|| {
                        format!(
                            "its session of {} ms ran out: nothing of it could reach the \
                             coordinator in the {} ms after the answer below",
                            e.session_ms,
                            c.sent_ms.saturating_sub(e.last_ms),
                        )
                    },
                    Kind::Expired,
                );
            }
        }
        best
    }

    /// Whether the member's own exchange `i`, answered before the judged exchange `c` (entry
    /// `judged`) on the same connection, was decided before `c` was read
    /// ([`same_connection`]) with nothing since that could have let `member_id` back in: no
    /// JoinGroup naming it or answered with it written before `c`'s answer was read, unless its
    /// own answer was read before `i` was written (so it was served before `i`).
    fn decided_first(&self, i: usize, judged: usize, c: &Exchange, member_id: &str) -> bool {
        let Some(x) = self.answer(i) else { return false };
        let readmitted = self.readmits.get(member_id).is_some_and(|joins| {
            joins.iter().any(|&(sent, read)| {
                sent <= c.answered_ms && read.is_none_or(|read| read >= x.sent_ms)
            })
        });
        i < judged && same_connection(x, c) && !readmitted
    }

    fn answer(&self, i: usize) -> Option<&'a Exchange> {
        match self.log.entries.get(i) {
            Some(Entry::Exchange(x)) => Some(x),
            _ => None,
        }
    }
}
