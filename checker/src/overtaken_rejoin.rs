//! The `overtaken-rejoin` hazard: a KIP-848 member rejoins (a ConsumerGroupHeartbeat at member
//! epoch 0 under its member id), gives that request up (its connection dropped or it timed out)
//! and rejoins again on a new connection, which the coordinator answers first. Kafka orders
//! requests per connection only, so the first rejoin, already read or still on its way, may be
//! processed afterwards. Kafka accepts epoch 0 from a member it knows (KAFKA-19233: a fenced
//! member rejoins so), reconciles the member with it and writes the partitions it moved into
//! an answer nobody reads. The coordinator sends a member its assignment only when the member
//! sends its owned partitions, rejoins, or the assignment changed since its last heartbeat; the
//! member, reconciled to the epoch of the answer it did read, sends neither, so it never hears
//! of partitions the coordinator counts as its own until the group's assignment changes.
//!
//! The history shows it: the coordinator gave the member partitions at an instant when none of
//! the member's heartbeats it read an answer to was in flight, after one of its rejoins went
//! unanswered and a later rejoin was answered at the epoch the partitions were given under.

use std::collections::BTreeMap;

use groupsim_history::wire::{Answer, Entry, Request};
use groupsim_history::{ConsumerGroupEvent, CoordinatorEvent, EventKind, History};
use groupsim_wire::Millis;

/// One member id's heartbeats on the wire.
#[derive(Default)]
struct Heartbeats {
    /// When each rejoin (epoch 0) the member never read an answer to was written.
    unanswered_rejoins: Vec<Millis>,
    /// Each heartbeat answered: written, answer read, epoch sent, epoch answered (if accepted).
    answered: Vec<(Millis, Millis, i32, Option<i32>)>,
}

/// Member id -> the event (index) where an overtaken rejoin gave it partitions it never heard
/// of: the first such event per member.
pub(crate) fn overtaken(history: &History) -> BTreeMap<String, usize> {
    let mut by_member: BTreeMap<&str, Heartbeats> = BTreeMap::new();
    for record in history.wire() {
        match &record.wire {
            Entry::Unanswered {
                call: Request::ConsumerHeartbeat { member_id, epoch: 0, .. },
                sent_ms,
                ..
            } if !member_id.is_empty() => {
                by_member.entry(member_id).or_default().unanswered_rejoins.push(*sent_ms);
            }
            Entry::Exchange(x) => {
                let (
                    Request::ConsumerHeartbeat { member_id, epoch, .. },
                    Answer::ConsumerHeartbeat { error, epoch: answered, .. },
                ) = (&x.request, &x.answer)
                else {
                    continue;
                };
                if member_id.is_empty() {
                    continue;
                }
                let accepted = (*error == 0).then_some(*answered);
                let hb = by_member.entry(member_id).or_default();
                hb.answered.push((x.sent_ms, x.answered_ms, *epoch, accepted));
            }
            _ => {}
        }
    }
    by_member.retain(|_, hb| !hb.unanswered_rejoins.is_empty());
    let mut found = BTreeMap::new();
    if by_member.is_empty() {
        return found;
    }
    for (idx, e) in history.events().iter().enumerate() {
        let EventKind::Coordinator {
            event:
                CoordinatorEvent::ConsumerGroup(ConsumerGroupEvent::PartitionsAssigned {
                    member_id,
                    member_epoch,
                    ..
                }),
            ..
        } = &e.kind
        else {
            continue;
        };
        let Some(hb) = by_member.get(member_id.as_str()) else { continue };
        if found.contains_key(member_id) {
            continue;
        }
        let at = e.at_ms;
        // Nothing the member read an answer to was being processed then.
        if hb.answered.iter().any(|(sent, read, _, _)| (*sent..=*read).contains(&at)) {
            continue;
        }
        // A rejoin it gave up, overtaken by a later rejoin answered (before this) at the epoch
        // the partitions were given under.
        let overtaken = hb.unanswered_rejoins.iter().any(|given_up| {
            hb.answered.iter().any(|(sent, read, epoch, accepted)| {
                *epoch == 0 && sent > given_up && *read <= at && *accepted == Some(*member_epoch)
            })
        });
        if overtaken {
            found.insert(member_id.clone(), idx);
        }
    }
    found
}
