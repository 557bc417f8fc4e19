//! `fetch-skip` and `fetch-repeat`: the records a Fetch answer returns for a partition, from the
//! offset asked for on, must be that offset and the ones after it, each once. A broker may
//! return whole batches that start before the offset asked for (clients skip those records), so
//! records below it are not judged. The harness's producer writes plain batches (no
//! transactions, no compaction), so its topic's offsets have no legitimate gaps.

use super::log::{Answer, AnswerLog, Exchange, Request, NONE};
use super::{BrokerAnomaly, BrokerRule};

/// Finds every fetched record set that skips or repeats an offset.
pub fn check(log: &AnswerLog) -> Vec<BrokerAnomaly> {
    check_exchanges(log.exchanges())
}

/// [`check`] over exchanges with their indexes (a history's wire stream, read in place).
pub fn check_exchanges<'a>(
    exchanges: impl Iterator<Item = (usize, &'a Exchange)>,
) -> Vec<BrokerAnomaly> {
    let mut found = Vec::new();
    for (i, x) in exchanges {
        let (Request::Fetch { partitions: asked }, Answer::Fetch { partitions }) =
            (&x.request, &x.answer)
        else {
            continue;
        };
        for (tp, error, offsets) in partitions {
            if *error != NONE {
                continue;
            }
            let Some(&(_, from)) = asked.iter().find(|(t, _)| t == tp) else { continue };
            let mut expected = from;
            for &offset in offsets.iter().filter(|&&o| o >= from) {
                let rule = if offset > expected {
                    BrokerRule::FetchSkip
                } else if offset < expected {
                    BrokerRule::FetchRepeat
                } else {
                    expected += 1;
                    continue;
                };
                let summary = match rule {
                    BrokerRule::FetchSkip => {
                        format!(
                            "Fetch of {tp} from {from} returned {offset} where {expected} was due"
                        )
                    }
                    _ => format!("Fetch of {tp} from {from} returned {offset} again"),
                };
                found.push(BrokerAnomaly {
                    rule,
                    at_ms: x.answered_ms,
                    partition: Some(tp.clone()),
                    summary,
                    evidence: vec![i],
                });
                break;
            }
        }
    }
    found
}
