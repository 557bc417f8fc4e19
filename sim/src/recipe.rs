//! Scenarios written in a user's own crate: a [`Recipe`] says what the cluster, the group and the
//! faults are, and turns each seed into a run of the same seeded, replayable world the catalogue
//! runs in, judged by the same checker.
//!
//! ```
//! use groupsim::recipe::Recipe;
//! use groupsim::faults::FaultKind;
//! use groupsim_member::ClientProfile;
//!
//! let recipe = Recipe::builder("two_cooperative_members")
//!     .topic("orders", 4)
//!     .members(2, ClientProfile::JavaCooperative)
//!     .safety_phase_ms(10_000)
//!     .faults(&[FaultKind::ConnectionDrop], 4_000)
//!     .build()
//!     .expect("a valid recipe");
//! let run = recipe.run(1).expect("the world runs");
//! assert!(run.verdict.is_ok(), "{}", recipe.failure_report(&run));
//! ```
//!
//! In a test, [`Recipe::check`] runs the seeds `GROUPSIM_SEED` / `GROUPSIM_SEEDS` name (or a
//! default count) and fails with the report the command line prints — the first anomaly with
//! the events that prove it — and the line that replays the failing seed.

use std::ops::Range;
use std::sync::Arc;

use groupsim_coordinator::CoordinatorConfig;
use groupsim_member::{ClientProfile, GroupProtocol, MemberConfig, PluginMember};
use groupsim_wire::Millis;
use rand_chacha::ChaCha8Rng;

use crate::fault_draw::{FaultContext, PauseTiming};
use crate::faults::FaultKind;
use crate::rng::{self, Stream};
use crate::runner::{self, RunReport, WorldKind};
use crate::scenario::{
    member_config, widest_liveness_bound, MemberPlan, ProducerPlan, ScenarioSpec, GROUP_ID,
    LATENCY_MS, OFFSETS_TOPIC_PARTITIONS, TICK_MS,
};
use crate::swarm_draw::{draw_swarm, fewer_partitions, SwarmDraw};
use crate::triggers::{self, TriggerEvent};
use crate::world::WorldError;

/// Adjusts a member's configuration: called with the member's name (`m0`, `m1`, …) and the
/// configuration its profile gives.
pub type Configure = Arc<dyn Fn(&str, &mut MemberConfig) + Send + Sync>;

/// What is wrong with a recipe.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecipeError {
    /// A count that must be positive is not.
    #[error("recipe {recipe}: {what} must be at least 1")]
    Zero { recipe: String, what: &'static str },
    /// No topic to consume.
    #[error("recipe {recipe}: no topic (add one with .topic(name, partitions))")]
    NoTopic { recipe: String },
    /// A topic named twice, or with no partition.
    #[error("recipe {recipe}: topic {topic}: {why}")]
    BadTopic { recipe: String, topic: String, why: &'static str },
    /// The producer's rate range is empty.
    #[error("recipe {recipe}: producer rate {low}..={high} records/s is empty")]
    BadRate { recipe: String, low: u32, high: u32 },
    /// The safety phase leaves no room for the group to form and faults to land.
    #[error("recipe {recipe}: safety phase of {ms} ms is shorter than the {min} ms a group needs")]
    ShortSafetyPhase { recipe: String, ms: Millis, min: Millis },
    /// A fault kind the simulation does not apply.
    #[error("recipe {recipe}: fault kind {kind} is not simulated (see FaultKind::ALL)")]
    NotSimulated { recipe: String, kind: &'static str },
    /// A member's start window is empty or ends after the safety phase.
    #[error(
        "recipe {recipe}: member {member} starts within {from}..{to} ms, which is empty or \
         ends after the {safety_ms} ms safety phase"
    )]
    BadStart { recipe: String, member: String, from: Millis, to: Millis, safety_ms: Millis },
    /// Members of both group protocols in one recipe that did not allow it.
    #[error(
        "recipe {recipe}: members speak both group protocols; use one profile family, or \
         .mixed_protocols() for a consumer group that classic members join"
    )]
    MixedProtocols { recipe: String },
}

/// The shortest safety phase a recipe may have: the group's first rebalance and some work.
pub const MIN_SAFETY_MS: Millis = 5_000;

/// When members start unless a recipe says otherwise: within the first three seconds.
const DEFAULT_START: Range<Millis> = 0..3_000;

/// One member of a recipe: its profile, the plug-in running in its place if any, and the
/// window its start is drawn in.
#[derive(Clone)]
struct Slot {
    profile: ClientProfile,
    plugin: Option<PluginMember>,
    start: Range<Millis>,
}

impl Slot {
    fn new(profile: ClientProfile, plugin: Option<PluginMember>, start: Range<Millis>) -> Self {
        Self { profile, plugin, start }
    }
}

/// A scenario defined outside the catalogue (see the module docs).
#[derive(Clone)]
pub struct Recipe {
    name: String,
    brokers: i32,
    client_hosts: usize,
    topics: Vec<(String, i32)>,
    members: Vec<Slot>,
    /// Whether `members` still holds the default members (the first member added replaces them).
    default_members: bool,
    configure: Option<Configure>,
    coordinator: CoordinatorConfig,
    rate: (u32, u32),
    safety_ms: Millis,
    faults: Vec<(FaultKind, Millis)>,
    /// Swarm mode: the kinds each seed switches on or off, and their shortest mean interval.
    swarm: Option<(Vec<FaultKind>, Millis)>,
    /// Whether members of both group protocols may share the group.
    mixed_protocols: bool,
    trigger_events: Vec<TriggerEvent>,
    liveness_bound_ms: Option<Millis>,
    world: WorldKind,
}

impl std::fmt::Debug for Recipe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recipe").field("name", &self.name).finish_non_exhaustive()
    }
}

/// Builds a [`Recipe`]; every setting has a default (see [`Recipe::builder`]).
#[derive(Clone, Debug)]
pub struct RecipeBuilder {
    recipe: Recipe,
}

impl Recipe {
    /// A recipe named `name` (its runs' histories carry the name). Defaults: one broker, one
    /// client host per member up to three, no topic (add one), three Java eager members (the
    /// first member added replaces them), each starting within the first 3 s, the
    /// catalogue's member settings (10 s session, 3 s heartbeats), 2–20 records per second per
    /// partition, a 30 s safety phase, no faults and no triggers, the liveness bound the
    /// members' settings imply, the event world.
    pub fn builder(name: &str) -> RecipeBuilder {
        RecipeBuilder {
            recipe: Recipe {
                name: name.to_string(),
                brokers: 1,
                client_hosts: 0,
                topics: Vec::new(),
                members: vec![Slot::new(ClientProfile::JavaEager, None, DEFAULT_START); 3],
                default_members: true,
                configure: None,
                coordinator: CoordinatorConfig {
                    initial_rebalance_delay_ms: 1_000,
                    ..Default::default()
                },
                rate: (2, 20),
                safety_ms: 30_000,
                faults: Vec::new(),
                swarm: None,
                mixed_protocols: false,
                trigger_events: Vec::new(),
                liveness_bound_ms: None,
                world: WorldKind::Event,
            },
        }
    }

    /// The recipe's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The run seed `seed` draws: members starting within their windows on the client hosts,
    /// the producer until the safety phase ends, faults of the allowed kinds at drawn instants
    /// (each kind's mean interval as given), triggers on the allowed events, then the liveness
    /// phase.
    pub fn spec(&self, seed: u64) -> ScenarioSpec {
        self.draw(seed).0
    }

    /// [`Self::spec`], and the seed's workload stream as the draw left it: to shape the run
    /// further from the same seed — members that start or leave later, traffic lulls, faults at
    /// fixed instants — as the catalogue's scenarios do. Draws from the stream change the run
    /// only through what they shape, so the same seed still gives the same run.
    pub fn draw(&self, seed: u64) -> (ScenarioSpec, ChaCha8Rng) {
        self.draw_with(seed, rng::stream(seed, Stream::Workload))
    }

    /// [`Self::draw`] from a workload stream the caller has already drawn from: for a scenario
    /// that first draws per-seed choices of its own (which client each member runs, a broker
    /// setting) from [`rng::stream`]`(seed, Stream::Workload)`, builds its recipe from them, and
    /// lets the recipe go on drawing from the same stream.
    pub fn draw_with(&self, seed: u64, mut rng: ChaCha8Rng) -> (ScenarioSpec, ChaCha8Rng) {
        let hosts = self.hosts();
        let topics: Vec<String> = self.topics.iter().map(|(t, _)| t.clone()).collect();
        let members: Vec<MemberPlan> = (0..self.members.len())
            .map(|i| {
                let slot = &self.members[i];
                let name = format!("m{i}");
                let mut config = member_config(&name, slot.profile);
                config.topics = topics.clone();
                if let Some(configure) = &self.configure {
                    configure(&name, &mut config);
                }
                MemberPlan {
                    host: i % hosts,
                    start_ms: rand::RngExt::random_range(&mut rng, slot.start.clone()),
                    leave_ms: None,
                    config,
                    seed: rng::sub_seed(seed, Stream::Member(i as u32)),
                    name,
                    plugin: slot.plugin.clone(),
                }
            })
            .collect();
        let protocol = self.protocol();
        let session = match protocol {
            GroupProtocol::Consumer => self.coordinator.consumer_session_timeout_ms,
            GroupProtocol::Classic => members[0].config.session_timeout_ms,
        }
        .max(0) as Millis;
        let ctx = FaultContext {
            members: members.iter().map(|m| m.name.clone()).collect(),
            brokers: (0..self.brokers).map(crate::world::orders::broker_host).collect(),
            client_hosts: (0..hosts).map(crate::world::orders::client_host).collect(),
            broker_ids: (0..self.brokers).collect(),
            topics: self.topics.clone(),
            group: GROUP_ID.to_string(),
            start_ms: 4_000.min(self.safety_ms / 2),
            end_ms: self.safety_ms.saturating_sub(2_000),
            protocol,
        };
        let drawn = match &self.swarm {
            Some((kinds, interval)) => {
                let timing = PauseTiming {
                    heartbeat_ms: members[0].config.heartbeat_interval_ms,
                    session_ms: session,
                };
                draw_swarm(seed, kinds, *interval, &ctx, timing, self.safety_ms)
            }
            None => SwarmDraw::every_seed(seed, &self.faults, &ctx),
        };
        let topics = match drawn.fewer_partitions {
            true => fewer_partitions(&self.topics),
            false => self.topics.clone(),
        };
        let mut schedule = drawn.faults;
        if !self.trigger_events.is_empty() {
            let consumer = protocol == GroupProtocol::Consumer;
            let mut t = rng::stream(seed, Stream::Triggers);
            let drawn = triggers::draw_for(
                &mut t,
                &self.trigger_events,
                session,
                self.brokers > 1,
                consumer,
            );
            schedule = schedule.with_triggers(drawn);
        }
        let liveness_bound_ms = self
            .liveness_bound_ms
            .unwrap_or_else(|| 2 * widest_liveness_bound(&members, &self.coordinator));
        let spec = ScenarioSpec {
            name: self.name.clone(),
            seed,
            tick_ms: TICK_MS,
            latency_ms: LATENCY_MS,
            brokers: self.brokers,
            offsets_topic_partitions: OFFSETS_TOPIC_PARTITIONS,
            coordinator: self.coordinator.clone(),
            topics,
            client_hosts: hosts,
            members,
            producer: ProducerPlan {
                records_per_sec: self.rate,
                stop_ms: self.safety_ms,
                lulls: drawn.lulls,
            },
            liveness_start_ms: self.safety_ms,
            liveness_bound_ms,
            swarm: (!drawn.swarm.enabled.is_empty()).then_some(drawn.swarm),
            faults: schedule,
            network: drawn.network,
            world_seed: None,
        };
        (spec, rng)
    }

    /// Runs seed `seed` and checks its history: the verdict, the history and the drawn spec.
    pub fn run(&self, seed: u64) -> Result<RunReport, WorldError> {
        runner::run_spec_in(self.spec(seed), self.world)
    }

    /// Runs every seed of `seeds`, in order, on this thread.
    pub fn sweep(&self, seeds: Range<u64>) -> Vec<(u64, Result<RunReport, WorldError>)> {
        seeds.map(|seed| (seed, self.run(seed))).collect()
    }

    /// The report of a failing run: the scenario, the seed, the schedule, the first anomaly with
    /// the events that prove it, and how to replay it (the test, under `GROUPSIM_SEED`).
    pub fn failure_report(&self, run: &RunReport) -> String {
        format!(
            "{}replay: GROUPSIM_SEED={} cargo test  (the test that checks recipe {})\n",
            run.failure_details(),
            run.spec.seed,
            self.name
        )
    }

    /// For tests: runs the seeds `GROUPSIM_SEED` or `GROUPSIM_SEEDS` (from `GROUPSIM_SEED_START`)
    /// name, else seeds `0..default_count`, and panics at the first failing one with
    /// [`Self::failure_report`] (its history written under `target/groupsim/`). Returns the
    /// runs for further assertions.
    pub fn check(&self, default_count: u64) -> Vec<RunReport> {
        let mut runs = Vec::new();
        for seed in crate::seeds::seeds(default_count) {
            let run = self.run(seed).unwrap_or_else(|e| {
                panic!("recipe {} seed {seed}: the harness failed: {e}", self.name)
            });
            if !run.verdict.is_ok() {
                let saved = run
                    .save_history()
                    .map(|p| format!("history written to {}", p.display()))
                    .unwrap_or_else(|e| format!("could not write the history: {e}"));
                panic!("{}{saved}", self.failure_report(&run));
            }
            runs.push(run);
        }
        runs
    }

    fn hosts(&self) -> usize {
        match self.client_hosts {
            0 => self.members.len().clamp(1, 3),
            n => n,
        }
    }

    fn protocol(&self) -> GroupProtocol {
        self.members.first().map_or(GroupProtocol::Classic, |m| m.profile.group_protocol())
    }
}

impl RecipeBuilder {
    /// Brokers in the cluster (the group's coordinator is one of them).
    pub fn brokers(mut self, n: i32) -> Self {
        self.recipe.brokers = n;
        self
    }

    /// Client hosts the members are spread over, round-robin (default: one per member, up to
    /// three). Several members on one host share its network faults.
    pub fn client_hosts(mut self, n: usize) -> Self {
        self.recipe.client_hosts = n;
        self
    }

    /// A topic the group subscribes to, with its partition count.
    pub fn topic(mut self, name: &str, partitions: i32) -> Self {
        self.recipe.topics.push((name.to_string(), partitions));
        self
    }

    /// `n` members running `profile` (replaces the members set so far).
    pub fn members(mut self, n: usize, profile: ClientProfile) -> Self {
        self.recipe.members = vec![Slot::new(profile, None, DEFAULT_START); n];
        self.recipe.default_members = false;
        self
    }

    /// One more member running `profile` (the first member added replaces the default three).
    pub fn member(self, profile: ClientProfile) -> Self {
        self.add(Slot::new(profile, None, DEFAULT_START))
    }

    /// `n` more members running `profile` that start at instants drawn within `window`
    /// (milliseconds from the run's start) rather than in the first three seconds: members
    /// that join a group already at work. The window must be non-empty and end within the
    /// safety phase.
    ///
    /// ```
    /// use groupsim::recipe::Recipe;
    /// use groupsim_member::ClientProfile;
    ///
    /// let recipe = Recipe::builder("late_joiners")
    ///     .topic("orders", 6)
    ///     .members(2, ClientProfile::JavaCooperative)
    ///     .members_starting(2, ClientProfile::JavaCooperative, 10_000..20_000)
    ///     .build()
    ///     .expect("a valid recipe");
    /// let spec = recipe.spec(3);
    /// assert!(spec.members[2..].iter().all(|m| (10_000..20_000).contains(&m.start_ms)));
    /// ```
    pub fn members_starting(self, n: usize, profile: ClientProfile, window: Range<Millis>) -> Self {
        (0..n).fold(self, |b, _| b.add(Slot::new(profile, None, window.clone())))
    }

    fn add(mut self, slot: Slot) -> Self {
        if std::mem::take(&mut self.recipe.default_members) {
            self.recipe.members.clear();
        }
        self.recipe.members.push(slot);
        self
    }

    /// `n` more members of your own (`kind`, a [`SansIoMember`](groupsim_member::SansIoMember)),
    /// each built with the configuration `profile` gives its members (group, topics, timeouts,
    /// commit interval; then [`Self::configure`]). The profile also names the group protocol
    /// the run expects of them.
    pub fn plugin_members(self, n: usize, profile: ClientProfile, kind: PluginMember) -> Self {
        (0..n).fold(self, |b, _| b.add(Slot::new(profile, Some(kind.clone()), DEFAULT_START)))
    }

    /// Adjusts each member's configuration after its profile's defaults (session and
    /// rebalance timeouts, commit interval, assignors, `group.instance.id`, …).
    pub fn configure(
        mut self,
        f: impl Fn(&str, &mut MemberConfig) + Send + Sync + 'static,
    ) -> Self {
        self.recipe.configure = Some(Arc::new(f));
        self
    }

    /// Adjusts the brokers' group coordinator settings.
    pub fn coordinator(mut self, f: impl FnOnce(&mut CoordinatorConfig)) -> Self {
        f(&mut self.recipe.coordinator);
        self
    }

    /// The producer's rate per partition, drawn per partition in `low..=high` records a second.
    pub fn producer_rate(mut self, low: u32, high: u32) -> Self {
        self.recipe.rate = (low, high);
        self
    }

    /// How long the safety phase lasts: members work, faults land, the producer produces; then
    /// the liveness phase, where the group must converge.
    pub fn safety_phase_ms(mut self, ms: Millis) -> Self {
        self.recipe.safety_ms = ms;
        self
    }

    /// Allows faults of `kinds`, each drawn at gaps of a half to one and a half times
    /// `mean_interval_ms` during the safety phase, in every seed. Replaces [`Self::swarm`].
    pub fn faults(mut self, kinds: &[FaultKind], mean_interval_ms: Millis) -> Self {
        self.recipe.faults = kinds.iter().map(|k| (*k, mean_interval_ms.max(1))).collect();
        self.recipe.swarm = None;
        self
    }

    /// Swarm mode, as the catalogue's swarms run: each seed switches each of `kinds` on or off
    /// (at least one on) and paces it at one to four times `min_interval_ms`; in half the seeds
    /// each it adds late requests, broker-side error injection and forced rebalances, pauses of
    /// every length, and fault breadth (stuck poll loops, one-way partitions, lossy links, the
    /// network's shape, traffic lulls, topics shrunk below the member count). A different mix
    /// per seed reaches more than every kind in every seed. Replaces [`Self::faults`].
    ///
    /// ```
    /// use groupsim::faults::FaultKind;
    /// use groupsim::recipe::Recipe;
    /// use groupsim_member::ClientProfile;
    ///
    /// let kinds = [FaultKind::ConnectionDrop, FaultKind::CoordinatorMove, FaultKind::MemberCrash];
    /// let recipe = Recipe::builder("my_swarm")
    ///     .brokers(3)
    ///     .topic("orders", 8)
    ///     .members(4, ClientProfile::JavaEager)
    ///     .swarm(&kinds, 5_000)
    ///     .build()
    ///     .expect("a valid recipe");
    /// // Each seed draws its own mix: print it with the seed.
    /// let mix = recipe.spec(11).swarm.expect("swarm mode draws a swarm").describe();
    /// assert!(!mix.is_empty());
    /// ```
    pub fn swarm(mut self, kinds: &[FaultKind], min_interval_ms: Millis) -> Self {
        self.recipe.swarm = Some((kinds.to_vec(), min_interval_ms.max(1)));
        self.recipe.faults = Vec::new();
        self
    }

    /// Lets members of both group protocols share the group: a consumer group (KIP-848) that
    /// classic members join, as during a rolling migration, as far as the brokers'
    /// `group.consumer.migration.policy` ([`CoordinatorConfig`]) allows. The first member's
    /// protocol aims the faults and triggers. Without it a recipe mixing them is refused.
    pub fn mixed_protocols(mut self) -> Self {
        self.recipe.mixed_protocols = true;
        self
    }

    /// Allows event triggers on `events`: each drawn on with probability one half, with an
    /// action and odds drawn per seed (see [`triggers::draw_for`]).
    pub fn triggers(mut self, events: &[TriggerEvent]) -> Self {
        self.recipe.trigger_events = events.to_vec();
        self
    }

    /// How long the group has to converge after the safety phase (default: twice what the
    /// members' settings imply).
    pub fn liveness_bound_ms(mut self, ms: Millis) -> Self {
        self.recipe.liveness_bound_ms = Some(ms);
        self
    }

    /// The world that simulates the runs (default: the event world).
    pub fn world(mut self, world: WorldKind) -> Self {
        self.recipe.world = world;
        self
    }

    /// The recipe, or what is wrong with it.
    pub fn build(self) -> Result<Recipe, RecipeError> {
        let r = self.recipe;
        let recipe = r.name.clone();
        let zero = |what| Err(RecipeError::Zero { recipe: recipe.clone(), what });
        if r.brokers < 1 {
            return zero("brokers");
        }
        if r.members.is_empty() {
            return zero("members");
        }
        if r.topics.is_empty() {
            return Err(RecipeError::NoTopic { recipe });
        }
        for (i, (topic, partitions)) in r.topics.iter().enumerate() {
            let why = if *partitions < 1 {
                Some("needs at least one partition")
            } else if r.topics[..i].iter().any(|(t, _)| t == topic) {
                Some("named twice")
            } else {
                None
            };
            if let Some(why) = why {
                return Err(RecipeError::BadTopic { recipe, topic: topic.clone(), why });
            }
        }
        if r.rate.0 > r.rate.1 {
            return Err(RecipeError::BadRate { recipe, low: r.rate.0, high: r.rate.1 });
        }
        if r.safety_ms < MIN_SAFETY_MS {
            return Err(RecipeError::ShortSafetyPhase {
                recipe,
                ms: r.safety_ms,
                min: MIN_SAFETY_MS,
            });
        }
        for (i, m) in r.members.iter().enumerate() {
            if m.start.is_empty() || m.start.end > r.safety_ms {
                return Err(RecipeError::BadStart {
                    recipe,
                    member: format!("m{i}"),
                    from: m.start.start,
                    to: m.start.end,
                    safety_ms: r.safety_ms,
                });
            }
        }
        let swarm_kinds = r.swarm.iter().flat_map(|(kinds, _)| kinds.iter());
        if let Some(k) = r.faults.iter().map(|(k, _)| k).chain(swarm_kinds).find(|k| !k.simulated())
        {
            return Err(RecipeError::NotSimulated { recipe, kind: k.name() });
        }
        if r.swarm.as_ref().is_some_and(|(kinds, _)| kinds.is_empty()) {
            return zero("swarm fault kinds");
        }
        let protocols: std::collections::BTreeSet<bool> = r
            .members
            .iter()
            .map(|m| m.profile.group_protocol() == GroupProtocol::Consumer)
            .collect();
        if protocols.len() > 1 && !r.mixed_protocols {
            return Err(RecipeError::MixedProtocols { recipe });
        }
        Ok(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two_members() -> RecipeBuilder {
        Recipe::builder("r").topic("orders", 4).members(2, ClientProfile::JavaEager)
    }

    /// A recipe's seed draws the same run every time, with the members, topics, phases and
    /// faults it asked for.
    #[test]
    fn a_recipe_draws_what_it_asks_for() {
        let r = two_members()
            .brokers(3)
            .safety_phase_ms(20_000)
            .faults(&[FaultKind::ConnectionDrop, FaultKind::MemberPause], 3_000)
            .triggers(&[TriggerEvent::CommitAppended])
            .configure(|_, c| c.session_timeout_ms = 12_000)
            .build()
            .expect("valid");
        let spec = r.spec(4);
        assert_eq!(spec, r.spec(4), "deterministic");
        assert_eq!(spec.name, "r");
        assert_eq!(spec.brokers, 3);
        assert_eq!(spec.topics, vec![("orders".to_string(), 4)]);
        assert_eq!(spec.members.len(), 2);
        assert!(spec.members.iter().all(|m| m.config.session_timeout_ms == 12_000));
        assert!(spec.members.iter().all(|m| m.config.topics == ["orders"]));
        assert_eq!(spec.liveness_start_ms, 20_000);
        assert!(!spec.faults.faults.is_empty());
        for f in &spec.faults.faults {
            let kind = crate::faults::FaultRules::kind(&f.fault);
            assert!(matches!(kind, FaultKind::ConnectionDrop | FaultKind::MemberPause), "{kind:?}");
            assert!(f.at_ms < 20_000);
        }
        let with_triggers = (0..20).any(|s| !r.spec(s).faults.triggers.is_empty());
        assert!(with_triggers, "triggers are drawn on the allowed event");
    }

    /// Members added one by one replace the default three; members added with a start window
    /// start within it, the others within the first three seconds, in the order added.
    #[test]
    fn members_start_within_their_windows() {
        let r = Recipe::builder("late")
            .topic("orders", 4)
            .member(ClientProfile::JavaCooperative)
            .members_starting(2, ClientProfile::JavaCooperative, 10_000..12_000)
            .build()
            .expect("valid");
        for seed in 0..10 {
            let spec = r.spec(seed);
            assert_eq!(spec.members.len(), 3, "the default members were replaced");
            assert!(spec.members[0].start_ms < 3_000);
            for m in &spec.members[1..] {
                assert!((10_000..12_000).contains(&m.start_ms), "{}: {}", m.name, m.start_ms);
            }
        }
    }

    /// In swarm mode each seed switches the allowed kinds on or off, so the mix differs from
    /// seed to seed, and the extras (late requests, BUGGIFY, pauses, breadth) join some seeds.
    #[test]
    fn swarm_mode_draws_a_different_mix_per_seed() {
        let kinds = [FaultKind::ConnectionDrop, FaultKind::MemberPause, FaultKind::CoordinatorMove];
        let r = two_members().brokers(2).swarm(&kinds, 3_000).build().expect("valid");
        let mut mixes = std::collections::BTreeSet::new();
        let mut shaped = 0;
        for seed in 0..20 {
            let spec = r.spec(seed);
            let swarm = spec.swarm.as_ref().expect("a swarm is drawn");
            let on: Vec<FaultKind> = swarm.enabled.iter().map(|(k, _)| *k).collect();
            assert!(on.iter().any(|k| kinds.contains(k)), "seed {seed}: one allowed kind is on");
            for f in &spec.faults.faults {
                let kind = crate::faults::FaultRules::kind(&f.fault);
                let extra = kind == FaultKind::MemberPause; // pauses of every length
                assert!(on.contains(&kind) || extra, "seed {seed}: {kind:?} is not on");
            }
            mixes.insert(format!("{on:?}"));
            if spec.network != Default::default() || !spec.producer.lulls.is_empty() {
                shaped += 1;
            }
        }
        assert!(mixes.len() > 3, "the mix differs between seeds: {mixes:?}");
        assert!(shaped > 0, "fault breadth shapes some seeds");
    }

    /// Members of both protocols are refused unless the recipe asks for a mixed group.
    #[test]
    fn mixed_protocols_are_allowed_when_asked_for() {
        let mixed = two_members().member(ClientProfile::JavaConsumer).mixed_protocols();
        let spec = mixed.build().expect("allowed").spec(1);
        assert_eq!(spec.members[2].config.profile, ClientProfile::JavaConsumer);
    }

    #[test]
    fn a_bad_recipe_is_a_named_error() {
        let name = |b: RecipeBuilder| b.build().expect_err("invalid").to_string();
        assert!(name(two_members().brokers(0)).contains("brokers"));
        assert!(name(Recipe::builder("r").members(2, ClientProfile::JavaEager)).contains("topic"));
        assert!(name(two_members().topic("orders", 2)).contains("named twice"));
        assert!(name(two_members().topic("x", 0)).contains("at least one partition"));
        assert!(name(two_members().producer_rate(5, 1)).contains("5..=1"));
        assert!(name(two_members().safety_phase_ms(10)).contains("10 ms"));
        assert!(
            name(two_members().faults(&[FaultKind::HoldResponse], 1_000)).contains("hold_response")
        );
        let mixed = two_members().member(ClientProfile::JavaConsumer);
        assert!(name(mixed).contains("both group protocols"));
        assert!(name(two_members().swarm(&[], 1_000)).contains("swarm fault kinds"));
        assert!(
            name(two_members().swarm(&[FaultKind::HoldResponse], 1_000)).contains("hold_response")
        );
        assert!(name(two_members().members(0, ClientProfile::JavaEager)).contains("members"));
        let empty = two_members().members_starting(1, ClientProfile::JavaEager, 5_000..5_000);
        assert!(name(empty).contains("member m2 starts within 5000..5000 ms"));
        let late = two_members().members_starting(1, ClientProfile::JavaEager, 1_000..40_000);
        assert!(name(late).contains("ends after the 30000 ms safety phase"));
    }

    /// A recipe runs in the simulated world and is judged by the checker; its failure report
    /// names the test to replay, not a catalogue command.
    #[test]
    fn a_recipe_runs_and_is_judged() {
        let r = two_members().safety_phase_ms(8_000).build().expect("valid");
        let runs = r.sweep(0..2);
        assert_eq!(runs.len(), 2);
        for (seed, run) in runs {
            let run = run.expect("runs");
            assert!(run.verdict.is_ok(), "seed {seed}: {}", r.failure_report(&run));
            assert!(run.verdict.stats.rebalances > 0);
            let report = r.failure_report(&run);
            assert!(report.contains(&format!("GROUPSIM_SEED={seed} cargo test")), "{report}");
            assert!(!report.contains("cargo run --release -- replay"), "{report}");
        }
    }

    /// A member that does nothing: enough to show how a plug-in kind travels.
    #[derive(Debug)]
    struct Idle;

    impl groupsim_member::SansIoMember for Idle {
        fn start(&mut self, _: Millis) {}
        fn leave(&mut self, _: Millis) {}
        fn handle_response(
            &mut self,
            _: Millis,
            _: groupsim_wire::RequestId,
            _: kafka_protocol::messages::ResponseKind,
        ) {
        }
        fn handle_failure(
            &mut self,
            _: Millis,
            _: groupsim_wire::RequestId,
            _: groupsim_member::RequestFailure,
        ) {
        }
        fn poll_timeout(&self) -> Option<Millis> {
            None
        }
        fn handle_timeout(&mut self, _: Millis) {}
        fn poll_output(&mut self) -> Option<groupsim_member::MemberOutput> {
            None
        }
        fn is_finished(&self) -> bool {
            false
        }
        fn member_id(&self) -> &str {
            ""
        }
    }

    /// Plug-in members take their place in the drawn spec by name; a spec read back from JSON
    /// names the kind but cannot build it, and the world refuses it saying so rather than
    /// running the profile's own member in its place.
    #[test]
    fn a_plug_in_kind_read_back_from_a_file_is_refused_by_name() {
        let kind = PluginMember::new("idle", |_, _| Box::new(Idle));
        let r = Recipe::builder("plugged")
            .topic("orders", 2)
            .members(1, ClientProfile::JavaEager)
            .plugin_members(2, ClientProfile::JavaEager, kind)
            .build()
            .expect("valid");
        let spec = r.spec(3);
        let kinds: Vec<Option<&str>> =
            spec.members.iter().map(|m| m.plugin.as_ref().map(|k| k.name())).collect();
        assert_eq!(kinds, [None, Some("idle"), Some("idle")]);
        let json = serde_json::to_string(&spec).expect("serializes");
        let back: ScenarioSpec = serde_json::from_str(&json).expect("deserializes");
        assert_eq!(back, spec, "the kind keeps its name");
        let err = runner::run_spec_in(back, WorldKind::Event).expect_err("cannot build the kind");
        let text = err.to_string();
        assert!(text.contains("m1 runs the plug-in member `idle`"), "{text}");
        assert!(text.contains("GROUPSIM_SEED=3"), "{text}");
        assert!(runner::run_spec_in(spec, WorldKind::Event).is_ok(), "the built kind runs");
    }

    /// The plug-in path is faithful: the built-in member run as a plug-in kind gives the same
    /// history, event for event and exchange for exchange, as the built-in member itself.
    #[test]
    fn a_built_in_member_run_as_a_plug_in_gives_the_same_history() {
        let builtin =
            |config: &MemberConfig, seed: u64| -> Box<dyn groupsim_member::SansIoMember> {
                Box::new(groupsim_member::GroupMember::new(config.clone(), seed))
            };
        let kind = PluginMember::new("java_eager_again", builtin);
        let base = || {
            Recipe::builder("faithful")
                .brokers(2)
                .topic("orders", 4)
                .faults(&[FaultKind::ConnectionDrop, FaultKind::MemberCrash], 4_000)
        };
        let own = base().members(3, ClientProfile::JavaEager).build().expect("valid");
        let plugged = base()
            .members(1, ClientProfile::JavaEager)
            .plugin_members(2, ClientProfile::JavaEager, kind)
            .build()
            .expect("valid");
        for seed in 0..3 {
            let (a, b) = (own.run(seed).expect("runs"), plugged.run(seed).expect("runs"));
            assert_eq!(a.history_hash(), b.history_hash(), "seed {seed}");
            assert!(a.history.events().len() > 100, "seed {seed}: the members worked");
        }
    }
}
