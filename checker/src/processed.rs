//! One line of an application's processed-record log, as the black-box rules read it, and how
//! far its clock may be from the broker's.

use groupsim_wire::{Millis, TopicPartition};
use serde::{Deserialize, Serialize};

/// Clock jitter allowed between an adapter's timestamps and the broker's (same host, both real
/// time, rounded to milliseconds): a record processed this close to a generation's start is
/// not judged against that generation.
pub const CLOCK_JITTER_MS: Millis = 3;

/// One record an application processed, from its processed-record log.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Processed {
    /// The client id the processing client sent (what `MemberAdded.client_id` shows).
    pub client: String,
    /// The record's partition.
    pub partition: TopicPartition,
    /// The record's offset.
    pub offset: i64,
    /// When it was processed, in the history's milliseconds.
    pub at_ms: Millis,
}
