//! Partition assignors. (Helper B fills in.)

use serde::{Deserialize, Serialize};

/// The assignors groupsim ships, by their Kafka protocol names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum AssignorKind {
    /// Kafka's `range`.
    Range,
    /// Kafka's `roundrobin`.
    RoundRobin,
}

/// A partition assignor.
pub trait Assignor {}
