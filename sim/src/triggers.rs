//! Event-triggered faults (FoundationDB's BUGGIFY, applied to a protocol): a trigger waits for a
//! protocol event — the group entering CompletingRebalance, an offset commit appended, a member
//! starting to revoke — and, with a probability of its own, fires a fault at the member or group
//! the event concerns, between the next two simulation steps. Faults at drawn instants almost
//! never land in the millisecond windows where rebalance bugs live; triggered faults land there
//! on purpose.
//!
//! A trigger is plain data in the [`crate::faults::FaultSchedule`]: it prints, serialises,
//! replays bit for bit and shrinks like a timed fault. Whether it fires at a matching event is
//! drawn from a ChaCha stream of its own (its `id`), so removing one trigger while shrinking
//! leaves the others' draws unchanged.

use std::fmt;

use groupsim_wire::Millis;
use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// The protocol events a trigger can wait for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TriggerEvent {
    /// The group entered CompletingRebalance: the join phase ended, the leader computes the
    /// assignment and every member's SyncGroup waits for it. Target: the leader.
    CompletingRebalance,
    /// A generation started: JoinGroup answers are on their way. Target: the leader.
    JoinResponses,
    /// The leader's assignment was stored: SyncGroup answers are on their way. Target: one
    /// member of the generation, drawn.
    SyncResponses,
    /// An offset commit was appended to the offsets log; its answer has not reached the member
    /// yet. Target: the committer.
    CommitAppended,
    /// The coordinator received an OffsetFetch (a new owner is about to pick its starting
    /// offsets). Target: the member that sent it.
    OffsetFetchArrived,
    /// A member began revoking partitions (its revoke callback, and the commit it makes, are
    /// under way). Target: that member.
    RevokeStarted,
    /// A member started processing a batch of records. Target: that member.
    ProcessingStarted,
    /// A rebalance of a group with members began (it left Stable or CompletingRebalance for
    /// PreparingRebalance): members learn of it with their next heartbeat, and its join phase
    /// ends when all have rejoined or a rebalance timeout from now. Target: one member of the
    /// current generation, drawn.
    PreparingRebalance,
    /// KIP-848: the coordinator asked a consumer-group member to revoke partitions (the
    /// heartbeat answer with its smaller assignment is on its way). Target: one of the members
    /// the target assignment gives those partitions to, drawn (their new owner, waiting for the
    /// release), or the revoking member when there is none. (`revoke_started` and
    /// `revocation_done` aim at the revoking member.)
    RevocationRequested,
    /// KIP-848: a consumer-group member gave up the partitions it was asked to revoke; the
    /// heartbeat acknowledging it goes out now. Target: that member.
    RevocationDone,
    /// KIP-848: a partition another member released was handed to its new owner (the
    /// coordinator's answer is on its way; the new owner will fetch its committed offset).
    /// Target: the new owner, or the previous owner if still in the group, drawn.
    PartitionHandedOver,
    /// KIP-848: a member was answered FENCED_MEMBER_EPOCH or UNKNOWN_MEMBER_ID, gave its
    /// partitions up and rejoins with epoch 0. Target: that member.
    MemberFenced,
    /// KIP-848: the coordinator moved a member in the group to a newer member epoch (not a
    /// join); the heartbeat answer carrying it is on its way. Lost, the member retries at the
    /// epoch it knows: the previous one is accepted, an older one (a second answer lost) is
    /// fenced, and the fenced member rejoins at epoch 0 with its member id (KAFKA-19233).
    /// Target: that member.
    MemberEpochAdvanced,
    /// A new dynamic member's JoinGroup was answered MEMBER_ID_REQUIRED with the member id the
    /// coordinator keeps pending for it (JoinGroup v4+); the answer is on its way. Lost, the
    /// member joins again without an id and gets another, and the first stays pending until its
    /// session timeout; a member gone meanwhile never rejoins. Target: that member.
    MemberIdRequired,
}

impl TriggerEvent {
    /// Every event, in a fixed order: the classic protocol's, KIP-848's, then later additions.
    pub const ALL: [TriggerEvent; 14] = [
        TriggerEvent::CompletingRebalance,
        TriggerEvent::JoinResponses,
        TriggerEvent::SyncResponses,
        TriggerEvent::CommitAppended,
        TriggerEvent::OffsetFetchArrived,
        TriggerEvent::RevokeStarted,
        TriggerEvent::ProcessingStarted,
        TriggerEvent::PreparingRebalance,
        TriggerEvent::RevocationRequested,
        TriggerEvent::RevocationDone,
        TriggerEvent::PartitionHandedOver,
        TriggerEvent::MemberFenced,
        TriggerEvent::MemberEpochAdvanced,
        TriggerEvent::MemberIdRequired,
    ];

    /// The events a swarm of classic-protocol members draws triggers for (with a drop, pause,
    /// crash or move): the first seven of [`Self::ALL`], then `member_id_required`.
    /// `preparing_rebalance` is left to scenarios that aim a slow revoke callback at the end of
    /// the join phase it starts; the KIP-848 events never happen there. New events go at the
    /// end, as for [`Self::CONSUMER_SWARM`].
    pub const CLASSIC_SWARM: &'static [TriggerEvent] = &[
        TriggerEvent::CompletingRebalance,
        TriggerEvent::JoinResponses,
        TriggerEvent::SyncResponses,
        TriggerEvent::CommitAppended,
        TriggerEvent::OffsetFetchArrived,
        TriggerEvent::RevokeStarted,
        TriggerEvent::ProcessingStarted,
        TriggerEvent::MemberIdRequired,
    ];

    /// The events a swarm of consumer-protocol (KIP-848) members draws triggers for: those of
    /// the classic protocol that also happen there, and KIP-848's own. New events go at the
    /// end: each event's draws follow the ones before it, so the triggers drawn for the others
    /// stay those of before.
    pub const CONSUMER_SWARM: [TriggerEvent; 9] = [
        TriggerEvent::CommitAppended,
        TriggerEvent::OffsetFetchArrived,
        TriggerEvent::RevokeStarted,
        TriggerEvent::ProcessingStarted,
        TriggerEvent::RevocationRequested,
        TriggerEvent::RevocationDone,
        TriggerEvent::PartitionHandedOver,
        TriggerEvent::MemberFenced,
        TriggerEvent::MemberEpochAdvanced,
    ];

    /// The event's name in schedules and reports.
    pub fn name(self) -> &'static str {
        match self {
            TriggerEvent::CompletingRebalance => "completing_rebalance",
            TriggerEvent::JoinResponses => "join_responses",
            TriggerEvent::SyncResponses => "sync_responses",
            TriggerEvent::CommitAppended => "commit_appended",
            TriggerEvent::OffsetFetchArrived => "offset_fetch_arrived",
            TriggerEvent::RevokeStarted => "revoke_started",
            TriggerEvent::ProcessingStarted => "processing_started",
            TriggerEvent::PreparingRebalance => "preparing_rebalance",
            TriggerEvent::RevocationRequested => "revocation_requested",
            TriggerEvent::RevocationDone => "revocation_done",
            TriggerEvent::PartitionHandedOver => "partition_handed_over",
            TriggerEvent::MemberFenced => "member_fenced",
            TriggerEvent::MemberEpochAdvanced => "member_epoch_advanced",
            TriggerEvent::MemberIdRequired => "member_id_required",
        }
    }

    /// The probe whose hits (logged with the actor that hit it) are this event, for events the
    /// history does not record; `None` for events read from the history.
    pub fn probe(self) -> Option<&'static str> {
        match self {
            TriggerEvent::OffsetFetchArrived => {
                Some(groupsim_coordinator::probes::OFFSET_FETCH_RECEIVED.name)
            }
            TriggerEvent::RevokeStarted => Some(groupsim_member::probes::REVOKE_STARTED.name),
            TriggerEvent::ProcessingStarted => {
                Some(groupsim_member::probes::PROCESSING_STARTED.name)
            }
            TriggerEvent::RevocationDone => {
                Some(groupsim_member::probes::CONSUMER_REVOCATION_DONE.name)
            }
            TriggerEvent::MemberFenced => {
                Some(groupsim_member::probes::CONSUMER_FENCED_REJOINING.name)
            }
            TriggerEvent::MemberIdRequired => {
                Some(groupsim_coordinator::probes::MEMBER_ID_REQUIRED_ANSWERED.name)
            }
            _ => None,
        }
    }
}

/// What a fired trigger does to its target.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum TriggerAction {
    /// Reset every connection of the target member: answers in flight to it are lost.
    DropConnections,
    /// Stop the target member's world for a while (longer than the session timeout: a zombie).
    Pause { duration_ms: Millis },
    /// Crash the target member; it restarts as a new member later.
    Crash { restart_after_ms: Millis },
    /// The target member leaves the group gracefully (commit, revoke, leave heartbeat) and
    /// starts again as a new member later: a scale-down at a protocol moment.
    Leave { restart_after_ms: Millis },
    /// Move the group's coordinator to another broker, whose load takes `load_ms`.
    MoveCoordinator { load_ms: Millis },
    /// Make the target's revoke callback (the one under way, or else its next) last until
    /// `margin_ms` before the join phase of the rebalance under way ends (its start plus the
    /// group's rebalance timeout): an application slow to give its partitions up, whose commit
    /// after the callback (brod, Elsa) is validated just before the rebalance timeout removes
    /// the member. Nothing happens (and the trigger does not count as fired) when no rebalance
    /// is under way.
    SlowRevokeToDeadline { margin_ms: Millis },
}

/// A fault fired by a protocol event, with a probability, at most `max_fires` times.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Trigger {
    /// Identity of the trigger's random stream (stable when other triggers are removed).
    pub id: u32,
    /// The event it waits for.
    pub on: TriggerEvent,
    /// What it does when it fires.
    pub action: TriggerAction,
    /// Chance of firing at each matching event, in thousandths.
    pub per_mille: u16,
    /// Most times it fires in a run.
    pub max_fires: u16,
    /// The instant it is armed from (simulated ms, or ms into a real-time run's fault phase);
    /// armed from the start when absent. Before it the trigger ignores its event and draws
    /// nothing, so a trigger armed at T leaves a run's history before T as it was: what lets
    /// `explore` add one after the moment a run reached something rare and keep that moment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_ms: Option<Millis>,
}

impl fmt::Display for Trigger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let action = match self.action {
            TriggerAction::DropConnections => "drop its connections".to_string(),
            TriggerAction::Pause { duration_ms } => format!("pause it {duration_ms} ms"),
            TriggerAction::Crash { restart_after_ms } => {
                format!("crash it (restart after {restart_after_ms} ms)")
            }
            TriggerAction::Leave { restart_after_ms } => {
                format!("make it leave (restart after {restart_after_ms} ms)")
            }
            TriggerAction::MoveCoordinator { load_ms } => {
                format!("move the coordinator (load {load_ms} ms)")
            }
            TriggerAction::SlowRevokeToDeadline { margin_ms } => {
                format!("slow its revoke callback to {margin_ms} ms before the rebalance timeout")
            }
        };
        write!(
            f,
            "on {}: {action}, p={}.{:03}, at most {}x",
            self.on.name(),
            self.per_mille / 1000,
            self.per_mille % 1000,
            self.max_fires
        )?;
        match self.after_ms {
            Some(at) => write!(f, ", from t={at}ms"),
            None => Ok(()),
        }
    }
}

/// Draws a classic swarm's triggers ([`TriggerEvent::CLASSIC_SWARM`]): see [`draw_for`].
pub fn draw(rng: &mut ChaCha8Rng, session_timeout_ms: Millis, allow_move: bool) -> Vec<Trigger> {
    draw_for(rng, TriggerEvent::CLASSIC_SWARM, session_timeout_ms, allow_move, false)
}

/// Draws a swarm's triggers: each of `events` is switched on with probability one half, with
/// an action that makes sense for it (a drop, pause, crash, coordinator move when
/// `allow_move`, and a leave when `allow_leave`) and a firing chance of 5% to 50%; trigger ids
/// are the events' places in `events`. `session_timeout_ms` sizes the pauses (half of them
/// outlast the session: zombies). Two KIP-848 events draw their own action: a revocation asked
/// for makes the new owner leave (or pause, or crash), and an epoch advance always drops the
/// member's connections, up to ten times as often as the others fire.
pub fn draw_for(
    rng: &mut ChaCha8Rng,
    events: &[TriggerEvent],
    session_timeout_ms: Millis,
    allow_move: bool,
    allow_leave: bool,
) -> Vec<Trigger> {
    let mut out = Vec::new();
    let actions = if allow_leave { 5 } else { 4 };
    for (i, &on) in events.iter().enumerate() {
        let enabled = rng.random_bool(0.5);
        let choice = rng.random_range(0..actions);
        let per_mille = rng.random_range(50..=500u16);
        let max_fires = rng.random_range(1..=3u16);
        let pause = rng.random_range(session_timeout_ms / 2..=session_timeout_ms * 2);
        let restart = rng.random_range(1_000..=8_000);
        let load = rng.random_range(50..=3_000);
        if !enabled {
            continue;
        }
        let action = match (on, choice) {
            // What matters about an epoch advance is its answer on the way: it is lost.
            (TriggerEvent::MemberEpochAdvanced, _) => TriggerAction::DropConnections,
            (_, 1) => TriggerAction::Pause { duration_ms: pause },
            (_, 2) => TriggerAction::Crash { restart_after_ms: restart },
            // A revocation asked for is aimed at the partitions' new owner. What races the
            // revoking member's acknowledgement there is the new owner leaving (the next target
            // gives the partitions back to the member still revoking them: a reclaim), so a
            // leave is drawn there in place of a drop or a coordinator move.
            (TriggerEvent::RevocationRequested, _) if allow_leave => {
                TriggerAction::Leave { restart_after_ms: restart }
            }
            (_, 0) => TriggerAction::DropConnections,
            (_, 4) => TriggerAction::Leave { restart_after_ms: restart },
            _ if allow_move => TriggerAction::MoveCoordinator { load_ms: load },
            _ => TriggerAction::DropConnections,
        };
        // Epoch advances come tens of times a run, every member's every step: a fence takes two
        // answers lost in a row (the retry at the previous epoch is accepted), so this trigger
        // may fire ten times as often as the others, or it is spent in the group's first seconds.
        let max_fires =
            if on == TriggerEvent::MemberEpochAdvanced { max_fires * 10 } else { max_fires };
        out.push(Trigger { id: i as u32, on, action, per_mille, max_fires, after_ms: None });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn draws_are_deterministic_and_within_bounds() {
        let a = draw(&mut ChaCha8Rng::seed_from_u64(7), 10_000, true);
        let b = draw(&mut ChaCha8Rng::seed_from_u64(7), 10_000, true);
        assert_eq!(a, b);
        for t in &a {
            assert!((50..=500).contains(&t.per_mille), "{t}");
            assert!((1..=3).contains(&t.max_fires), "{t}");
        }
        let ids: Vec<u32> = a.iter().map(|t| t.id).collect();
        let mut sorted = ids.clone();
        sorted.dedup();
        assert_eq!(ids, sorted, "ids are distinct and in event order");
    }

    #[test]
    fn without_moves_no_trigger_moves_the_coordinator() {
        for seed in 0..50 {
            let ts = draw(&mut ChaCha8Rng::seed_from_u64(seed), 10_000, false);
            assert!(ts.iter().all(|t| !matches!(t.action, TriggerAction::MoveCoordinator { .. })));
        }
    }

    #[test]
    fn the_swarm_never_draws_the_preparing_rebalance_event() {
        for seed in 0..50 {
            let ts = draw(&mut ChaCha8Rng::seed_from_u64(seed), 10_000, true);
            assert!(ts.iter().all(|t| t.on != TriggerEvent::PreparingRebalance));
        }
        assert!(TriggerEvent::ALL.contains(&TriggerEvent::PreparingRebalance));
    }

    #[test]
    fn a_consumer_swarm_draws_kip_848_events_and_no_classic_only_one() {
        let classic_only = [
            TriggerEvent::CompletingRebalance,
            TriggerEvent::JoinResponses,
            TriggerEvent::SyncResponses,
            TriggerEvent::PreparingRebalance,
        ];
        let mut drawn = std::collections::BTreeSet::new();
        for seed in 0..50 {
            let rng = &mut ChaCha8Rng::seed_from_u64(seed);
            for t in draw_for(rng, &TriggerEvent::CONSUMER_SWARM, 10_000, true, true) {
                assert!(!classic_only.contains(&t.on), "{t}");
                assert_eq!(TriggerEvent::CONSUMER_SWARM[t.id as usize], t.on, "id is the place");
                if t.on == TriggerEvent::MemberEpochAdvanced {
                    assert_eq!(t.action, TriggerAction::DropConnections, "{t}");
                    assert!((10..=30).contains(&t.max_fires), "{t}");
                }
                drawn.insert(t.on);
            }
        }
        assert_eq!(drawn.len(), TriggerEvent::CONSUMER_SWARM.len(), "each drawn by some seed");
        for e in TriggerEvent::CONSUMER_SWARM {
            assert!(TriggerEvent::ALL.contains(&e));
        }
    }

    /// One case per action and per kind of event (classic, aimed, KIP-848): the printed form,
    /// and a JSON round trip (schedules carry triggers as data).
    #[test]
    fn triggers_print_their_event_action_and_odds_and_round_trip() {
        let t = |id, on, action, per_mille, max_fires| Trigger {
            id,
            on,
            action,
            per_mille,
            max_fires,
            after_ms: None,
        };
        let cases = [
            (
                t(3, TriggerEvent::CommitAppended, TriggerAction::DropConnections, 250, 2),
                "on commit_appended: drop its connections, p=0.250, at most 2x",
            ),
            (
                t(
                    0,
                    TriggerEvent::PreparingRebalance,
                    TriggerAction::SlowRevokeToDeadline { margin_ms: 25 },
                    1_000,
                    2,
                ),
                "on preparing_rebalance: slow its revoke callback to 25 ms before the rebalance \
                 timeout, p=1.000, at most 2x",
            ),
            (
                t(
                    5,
                    TriggerEvent::PartitionHandedOver,
                    TriggerAction::Leave { restart_after_ms: 2_000 },
                    100,
                    1,
                ),
                "on partition_handed_over: make it leave (restart after 2000 ms), p=0.100, at \
                 most 1x",
            ),
        ];
        for (trigger, text) in cases {
            assert_eq!(trigger.to_string(), text);
            let json = serde_json::to_string(&trigger).unwrap();
            assert!(json.contains(&format!("\"{}\"", trigger.on.name())), "{json}");
            assert_eq!(serde_json::from_str::<Trigger>(&json).unwrap(), trigger);
        }
    }
}
