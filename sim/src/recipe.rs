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

use crate::fault_draw::{draw_schedule, FaultContext};
use crate::faults::{FaultKind, FaultSchedule, Swarm};
use crate::rng::{self, Stream};
use crate::runner::{self, RunReport, WorldKind};
use crate::scenario::{
    member_config, widest_liveness_bound, MemberPlan, ProducerPlan, ScenarioSpec, GROUP_ID,
    LATENCY_MS, OFFSETS_TOPIC_PARTITIONS, TICK_MS,
};
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
    /// Members of both group protocols in one recipe.
    #[error("recipe {recipe}: members speak both group protocols; use one profile family")]
    MixedProtocols { recipe: String },
}

/// The shortest safety phase a recipe may have: the group's first rebalance and some work.
pub const MIN_SAFETY_MS: Millis = 5_000;

/// A scenario defined outside the catalogue (see the module docs).
#[derive(Clone)]
pub struct Recipe {
    name: String,
    brokers: i32,
    client_hosts: usize,
    topics: Vec<(String, i32)>,
    profiles: Vec<ClientProfile>,
    /// Per member (as `profiles`), the plug-in member running in its place.
    plugins: Vec<Option<PluginMember>>,
    configure: Option<Configure>,
    coordinator: CoordinatorConfig,
    rate: (u32, u32),
    safety_ms: Millis,
    faults: Vec<(FaultKind, Millis)>,
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
    /// client host per member up to three, no topic (add one), three Java eager members, the
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
                profiles: vec![ClientProfile::JavaEager; 3],
                plugins: vec![None; 3],
                configure: None,
                coordinator: CoordinatorConfig {
                    initial_rebalance_delay_ms: 1_000,
                    ..Default::default()
                },
                rate: (2, 20),
                safety_ms: 30_000,
                faults: Vec::new(),
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

    /// The run seed `seed` draws: members starting within the first 3 s on the client hosts,
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
    pub fn draw(&self, seed: u64) -> (ScenarioSpec, rand_chacha::ChaCha8Rng) {
        let mut rng = rng::stream(seed, Stream::Workload);
        let hosts = self.hosts();
        let topics: Vec<String> = self.topics.iter().map(|(t, _)| t.clone()).collect();
        let members: Vec<MemberPlan> = (0..self.profiles.len())
            .map(|i| {
                let name = format!("m{i}");
                let mut config = member_config(&name, self.profiles[i]);
                config.topics = topics.clone();
                if let Some(configure) = &self.configure {
                    configure(&name, &mut config);
                }
                MemberPlan {
                    host: i % hosts,
                    start_ms: rand::RngExt::random_range(&mut rng, 0..3_000),
                    leave_ms: None,
                    config,
                    seed: rng::sub_seed(seed, Stream::Member(i as u32)),
                    name,
                    plugin: self.plugins[i].clone(),
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
        let swarm = Swarm { enabled: self.faults.clone() };
        let mut schedule = if swarm.enabled.is_empty() {
            FaultSchedule::default()
        } else {
            draw_schedule(&mut rng::stream(seed, Stream::Faults), &swarm, &ctx)
        };
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
            topics: self.topics.clone(),
            client_hosts: hosts,
            members,
            producer: ProducerPlan {
                records_per_sec: self.rate,
                stop_ms: self.safety_ms,
                lulls: Vec::new(),
            },
            liveness_start_ms: self.safety_ms,
            liveness_bound_ms,
            swarm: (!swarm.enabled.is_empty()).then_some(swarm),
            faults: schedule,
            network: Default::default(),
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
            0 => self.profiles.len().clamp(1, 3),
            n => n,
        }
    }

    fn protocol(&self) -> GroupProtocol {
        self.profiles.first().map_or(GroupProtocol::Classic, |p| p.group_protocol())
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
        self.recipe.profiles = vec![profile; n];
        self.recipe.plugins = vec![None; n];
        self
    }

    /// One more member running `profile`.
    pub fn member(mut self, profile: ClientProfile) -> Self {
        self.recipe.profiles.push(profile);
        self.recipe.plugins.push(None);
        self
    }

    /// `n` more members of your own (`kind`, a [`SansIoMember`](groupsim_member::SansIoMember)),
    /// each built with the configuration `profile` gives its members (group, topics, timeouts,
    /// commit interval; then [`Self::configure`]). The profile also names the group protocol
    /// the run expects of them.
    pub fn plugin_members(mut self, n: usize, profile: ClientProfile, kind: PluginMember) -> Self {
        for _ in 0..n {
            self.recipe.profiles.push(profile);
            self.recipe.plugins.push(Some(kind.clone()));
        }
        self
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
    /// `mean_interval_ms` during the safety phase (as the catalogue's swarms draw them).
    pub fn faults(mut self, kinds: &[FaultKind], mean_interval_ms: Millis) -> Self {
        self.recipe.faults = kinds.iter().map(|k| (*k, mean_interval_ms.max(1))).collect();
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
        if r.profiles.is_empty() {
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
        if let Some((k, _)) = r.faults.iter().find(|(k, _)| !k.simulated()) {
            return Err(RecipeError::NotSimulated { recipe, kind: k.name() });
        }
        let protocols: std::collections::BTreeSet<bool> =
            r.profiles.iter().map(|p| p.group_protocol() == GroupProtocol::Consumer).collect();
        if protocols.len() > 1 {
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
        assert!(name(two_members().members(0, ClientProfile::JavaEager)).contains("members"));
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
