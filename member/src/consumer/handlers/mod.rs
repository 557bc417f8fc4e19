//! What the consumer-protocol member does on each input, per concern: `impl
//! ConsumerGroupMember` blocks that read and write several sub-states at once.

mod bugs;
mod commits;
pub(super) mod heartbeat;
mod poll_timer;
mod reconcile;
