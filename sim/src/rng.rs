//! Seeded randomness. One run seed feeds independent ChaCha streams, one per purpose, so adding
//! a draw in one place (say the workload) does not shift every other draw (say the network).

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// The purposes that draw randomness, each with its own ChaCha stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    /// Scenario shape: member schedules, which members leave, production rates.
    Workload,
    /// turmoil's own RNG (message latency).
    Network,
    /// Fault plan (nemesis).
    Faults,
    /// Per-member processing times; `Member(i)` for member number `i`.
    Member(u32),
    /// Event triggers: which of a swarm's events get a trigger and how it acts.
    Triggers,
    /// Whether trigger number `i` fires at each matching event.
    Trigger(u32),
    /// Per-member client choices a scenario draws beside its shape (which profile each member
    /// runs, which server assignor the group asks for), so adding them shifts no workload draw.
    Clients,
    /// Hazards Kafka allows (a swarm's late requests), drawn beside the faults so adding them
    /// shifts no fault draw.
    Hazards,
    /// Broker-side BUGGIFY (a swarm's injected error answers and forced rebalances), beside the
    /// faults for the same reason.
    Buggify,
    /// A swarm's pauses across the whole range of lengths (GC-like bursts, pauses inside the
    /// session, just past it), beside the faults for the same reason.
    Pauses,
    /// A swarm's fault breadth (slow batches, one-way partitions, lossy links, the network's
    /// shape, idle members, traffic lulls), beside the faults for the same reason.
    Breadth,
    /// The order of events due at the same instant, when a scenario shuffles it.
    Ties,
    /// A static member's twin (a second process on its `group.instance.id`), beside the faults
    /// so adding it shifts no fault draw.
    Twins,
}

impl Stream {
    fn id(self) -> u64 {
        match self {
            Stream::Workload => 1,
            Stream::Network => 2,
            Stream::Faults => 3,
            Stream::Member(i) => 1_000 + u64::from(i),
            Stream::Triggers => 4,
            Stream::Trigger(i) => 1_000_000 + u64::from(i),
            Stream::Clients => 5,
            Stream::Hazards => 6,
            Stream::Buggify => 7,
            Stream::Pauses => 8,
            Stream::Breadth => 9,
            Stream::Ties => 10,
            Stream::Twins => 11,
        }
    }
}

/// A ChaCha generator for `purpose` under run seed `seed`.
pub fn stream(seed: u64, purpose: Stream) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(purpose.id());
    rng
}

/// A u64 seed for `purpose` (for components that seed their own generator, like turmoil or a
/// member core).
pub fn sub_seed(seed: u64, purpose: Stream) -> u64 {
    use rand::Rng;
    stream(seed, purpose).next_u64()
}
