//! What the member does on each input, per concern: `impl Member` blocks that read and write
//! several sub-states at once (a JoinGroup answer touches membership, rebalance, positions and
//! timers). Each file is named after the sub-state it mostly drives; none defines a type the
//! member holds, so imports flow one way: handlers name the member and its sub-states, never
//! the reverse.

mod bugs;
mod commits;
mod failed_round;
mod heartbeat;
mod membership;
mod metadata;
mod probes;
mod processing;
mod rebalance;
