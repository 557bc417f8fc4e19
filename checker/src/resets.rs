//! The membership rule, `stale-reset`: a member gives up its generation or member id only on an
//! answer about the membership it holds. An ILLEGAL_GENERATION or UNKNOWN_MEMBER_ID answering a
//! request sent under an earlier generation or member id says nothing about the current one
//! (the member has reset or rejoined since); acting on it drops a live assignment and forces a
//! needless rebalance (KAFKA-9823, fixed in apache/kafka#8445: the Java consumer remembers the
//! generation each request was sent under and ignores such answers).

use groupsim_history::{MemberEvent, SentUnder};
use groupsim_wire::Millis;

use super::anomaly::{Anomaly, AnomalyClass};

/// `stale-reset`, shown by a member's `GenerationReset` at history index `idx`: the reset
/// answered a request sent under another membership. Flagged whether or not the member still
/// held a generation: a member that already reset and acts on the stale answer again restarts
/// its join for nothing (Kafka's own consumer tests hold the client to ignoring such answers).
pub(super) fn stale_reset(
    idx: usize,
    at: Millis,
    member: &str,
    event: &MemberEvent,
) -> Option<Anomaly> {
    let MemberEvent::GenerationReset { member_id, generation, error, answer_about, .. } = event
    else {
        return None;
    };
    let SentUnder { member_id: sent_id, generation: sent_generation } = answer_about.as_ref()?;
    let held = if *generation >= 0 {
        format!("dropped generation {generation} ({member_id})")
    } else if !member_id.is_empty() {
        format!("reset again (no generation, member id {member_id})")
    } else {
        "reset again (no generation, no member id)".to_string()
    };
    let sent = if sent_id.is_empty() { "no member id".to_string() } else { sent_id.clone() };
    Some(Anomaly::new(
        AnomalyClass::StaleReset,
        None,
        at,
        format!(
            "{member} {held} on {error} answering a request sent under generation \
             {sent_generation} ({sent})"
        ),
        vec![idx],
    ))
}
