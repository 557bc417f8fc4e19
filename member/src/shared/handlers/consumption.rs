//! The tail of every drive: positions for the partitions that need them, then processing and
//! fetching, then any Metadata that became wanted.

use super::cluster::Cluster;
use super::fetch::Fetch;
use super::positions::{OffsetFetchRules, Positions};
use super::processing::Processing;
use crate::Millis;

/// Positions, processing and fetching, in the order both members run them.
pub(crate) trait Consumption: OffsetFetchRules {
    /// `in_group`: the member holds its assignment (a stable classic generation, a KIP-848
    /// member epoch), so committed and earliest offsets may be looked up.
    fn drive_consumption(&mut self, now: Millis, in_group: bool) {
        if in_group {
            self.maybe_fetch_committed();
            self.maybe_list_offsets();
        }
        if self.consuming() {
            // Start processing before fetching so the partition being processed is fetched
            // ahead, as the Java consumer sends its next fetch while the application works.
            self.maybe_start_processing(now);
            self.maybe_fetch(now);
        }
        self.maybe_send_metadata();
    }
}

impl<M: OffsetFetchRules + ?Sized> Consumption for M {}
