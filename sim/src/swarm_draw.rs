//! Swarm testing's per-seed draw (Groce et al.: a different mix of faults per run finds more
//! than every fault in every run): which of the allowed kinds are on and how often they strike,
//! and, each in half the seeds and from a stream of its own, late requests, broker-side error
//! injection (BUGGIFY), pauses of every length, and fault breadth. Shared by the catalogue's
//! swarms and by recipes in swarm mode, so it depends on no catalogue module.

use groupsim_wire::Millis;
use rand::RngExt;
use rand_chacha::ChaCha8Rng;

use crate::fault_draw::{draw_pauses, draw_schedule, FaultContext, PauseTiming};
use crate::faults::{FaultKind, FaultSchedule, Swarm};
use crate::rng::{self, Stream};
use crate::scenario::NetworkShape;

/// A seed's swarm: the kinds on (with their pacing) and the faults they drew, plus what fault
/// breadth changed in the run's shape.
#[derive(Clone, Debug)]
pub struct SwarmDraw {
    /// Every kind on in this seed, the extras included.
    pub swarm: Swarm,
    /// The faults drawn for them (triggers not included).
    pub faults: FaultSchedule,
    /// The network's shape (the default unless fault breadth drew one).
    pub network: NetworkShape,
    /// Windows in which nothing is produced.
    pub lulls: Vec<(Millis, Millis)>,
    /// Whether the topics shrink to fewer partitions than members, so some members idle.
    pub fewer_partitions: bool,
}

impl SwarmDraw {
    /// No swarm: every kind of `faults` (with its mean interval) on in every seed, drawn from
    /// the seed's fault stream, with none of the extras and the run's shape as it is.
    pub fn every_seed(seed: u64, faults: &[(FaultKind, Millis)], ctx: &FaultContext) -> Self {
        let swarm = Swarm { enabled: faults.to_vec() };
        let faults = match swarm.enabled.is_empty() {
            true => FaultSchedule::default(),
            false => draw_schedule(&mut rng::stream(seed, Stream::Faults), &swarm, ctx),
        };
        Self {
            swarm,
            faults,
            network: NetworkShape::default(),
            lulls: Vec::new(),
            fewer_partitions: false,
        }
    }
}

/// Draws seed `seed`'s swarm over `kinds` (each on with probability one half, paced at one to
/// four times `min_interval_ms`) aimed at `ctx`, with the extras: the late-request hazard,
/// BUGGIFY (injected errors Kafka's coordinator gives, forced rebalances), pauses of every
/// length against `timing`, and fault breadth (poll loops stuck below and past
/// max.poll.interval, one-way partitions, lossy links, the network's shape, traffic lulls,
/// fewer partitions than members) within a safety phase ending at `safety_end`. Each part comes
/// from a stream of its own, so adding one leaves the others' draws as they were.
pub fn draw_swarm(
    seed: u64,
    kinds: &[FaultKind],
    min_interval_ms: Millis,
    ctx: &FaultContext,
    timing: PauseTiming,
    safety_end: Millis,
) -> SwarmDraw {
    let mut frng = rng::stream(seed, Stream::Faults);
    let mut swarm = Swarm::draw(&mut frng, kinds, min_interval_ms);
    let mut faults = draw_schedule(&mut frng, &swarm, ctx);
    let mut hrng = rng::stream(seed, Stream::Hazards);
    if hrng.random_bool(0.5) {
        let hazards =
            Swarm { enabled: vec![(FaultKind::LateRequest, hrng.random_range(6_000..=24_000))] };
        faults = faults.merged(draw_schedule(&mut hrng, &hazards, ctx));
        swarm.enabled.extend(hazards.enabled);
    }
    let mut brng = rng::stream(seed, Stream::Buggify);
    if brng.random_bool(0.5) {
        let buggify = Swarm {
            enabled: vec![
                (FaultKind::InjectError, brng.random_range(3_000..=12_000)),
                (FaultKind::ForceRebalance, brng.random_range(10_000..=40_000)),
            ],
        };
        faults = faults.merged(draw_schedule(&mut brng, &buggify, ctx));
        swarm.enabled.extend(buggify.enabled);
    }
    let mut prng = rng::stream(seed, Stream::Pauses);
    if prng.random_bool(0.5) {
        faults = faults.merged(draw_pauses(&mut prng, ctx, timing));
    }
    let mut network = NetworkShape::default();
    let mut lulls = Vec::new();
    let mut fewer_partitions = false;
    let mut wrng = rng::stream(seed, Stream::Breadth);
    if wrng.random_bool(0.5) {
        let breadth = Swarm {
            enabled: vec![
                (FaultKind::SlowBatch, wrng.random_range(8_000..=30_000)),
                (FaultKind::OneWayPartition, wrng.random_range(8_000..=30_000)),
                (FaultKind::FrameLoss, wrng.random_range(8_000..=30_000)),
            ],
        };
        faults = faults.merged(draw_schedule(&mut wrng, &breadth, ctx));
        swarm.enabled.extend(breadth.enabled);
        network = draw_network(&mut wrng);
        if wrng.random_bool(0.5) {
            lulls = draw_lulls(&mut wrng, ctx.start_ms, safety_end);
        }
        fewer_partitions = wrng.random_bool(0.3);
    }
    SwarmDraw { swarm, faults, network, lulls, fewer_partitions }
}

/// `topics` shrunk to a quarter of their partitions (at least one each): fewer partitions than
/// a swarm's members, so some members own nothing and idle in the group.
pub fn fewer_partitions(topics: &[(String, i32)]) -> Vec<(String, i32)> {
    topics.iter().map(|(t, n)| (t.clone(), (n / 4).max(1))).collect()
}

/// A drawn network shape: each of a bounded window, shuffled same-instant order and brokers
/// closing idle connections, on or off.
pub fn draw_network(rng: &mut ChaCha8Rng) -> NetworkShape {
    NetworkShape {
        window_frames: rng.random_bool(0.5).then(|| rng.random_range(1..=8)),
        shuffle_ties: rng.random_bool(0.5),
        // Kafka's default is 10 minutes, against sessions of 45 s; scaled to these sessions,
        // a member's connections to brokers it only fetches from, or looks a coordinator up
        // on, go idle long enough.
        idle_close_ms: rng.random_bool(0.5).then(|| rng.random_range(5_000..=20_000)),
    }
}

/// One or two windows of 3 to 15 s within `[start, end)` in which nothing is produced.
pub fn draw_lulls(rng: &mut ChaCha8Rng, start: Millis, end: Millis) -> Vec<(Millis, Millis)> {
    let mut lulls: Vec<(Millis, Millis)> = (0..rng.random_range(1..=2))
        .map(|_| {
            let from = rng.random_range(start..end);
            (from, (from + rng.random_range(3_000..=15_000)).min(end))
        })
        .collect();
    lulls.sort();
    lulls
}
