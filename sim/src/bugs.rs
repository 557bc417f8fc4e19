//! Bug switches: named, off by default, each making the coordinator or the members misbehave in
//! one realistic way. They prove the checker: a switch that the checker cannot catch would mean
//! a blind spot. `groupsim bugs` lists them; `--bug <name>` turns one on for `run`, `sweep`,
//! `replay` and `shrink`.

use crate::scenario::ScenarioSpec;
use groupsim_checker::AnomalyClass;
use groupsim_member::OffsetReset;

/// One bug switch.
#[derive(Clone, Copy)]
pub struct BugSwitch {
    /// The name used with `--bug`.
    pub name: &'static str,
    /// Which side misbehaves and how.
    pub summary: &'static str,
    /// The real bug the switch is modelled on (issue and fix), or "groupsim model" for a
    /// misbehaviour made up to cover a rule.
    pub reference: &'static str,
    /// The anomaly classes the checker should report when the bug bites.
    pub expected: &'static [AnomalyClass],
    apply: fn(&mut ScenarioSpec),
}

impl std::fmt::Debug for BugSwitch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BugSwitch").field("name", &self.name).finish()
    }
}

impl BugSwitch {
    /// Turns the bug on in a drawn scenario.
    pub fn apply(&self, spec: &mut ScenarioSpec) {
        (self.apply)(spec)
    }

    /// Turns the bug on in a coordinator's settings alone (for `serve --bug`); refused, naming
    /// the switch, when it changes anything beyond the coordinator (a member's behaviour).
    pub fn apply_to_coordinator(
        &self,
        config: &mut groupsim_coordinator::CoordinatorConfig,
    ) -> Result<(), NotACoordinatorBug> {
        let spec = ScenarioSpec {
            name: String::new(),
            seed: 0,
            tick_ms: 1,
            latency_ms: (0, 0),
            brokers: 1,
            offsets_topic_partitions: 1,
            coordinator: config.clone(),
            topics: Vec::new(),
            client_hosts: 0,
            members: Vec::new(),
            producer: crate::scenario::ProducerPlan {
                records_per_sec: (0, 0),
                stop_ms: 0,
                lulls: Vec::new(),
            },
            liveness_start_ms: 0,
            liveness_bound_ms: 0,
            swarm: None,
            faults: Default::default(),
            network: Default::default(),
            world_seed: None,
        };
        let mut changed = spec.clone();
        self.apply(&mut changed);
        let coordinator = std::mem::replace(&mut changed.coordinator, config.clone());
        if changed != spec || !self.name.starts_with("coordinator-") {
            return Err(NotACoordinatorBug { name: self.name.to_string() });
        }
        *config = coordinator;
        Ok(())
    }

    /// Whether a verdict shows this bug (one of its expected classes occurred).
    pub fn caught_by(&self, classes: &[AnomalyClass]) -> bool {
        classes.iter().any(|c| self.expected.contains(c))
    }
}

/// A `--bug` name that does not exist.
#[derive(Debug, thiserror::Error)]
#[error("unknown bug switch {name:?}; known switches: {known}")]
pub struct UnknownBug {
    /// What was asked for.
    pub name: String,
    /// Known names, comma-separated.
    pub known: String,
}

/// A switch `serve --bug` cannot apply: it changes more than the coordinator.
#[derive(Debug, thiserror::Error)]
#[error("bug switch {name:?} is not the coordinator's alone (serve runs only the coordinator)")]
pub struct NotACoordinatorBug {
    /// The switch asked for.
    pub name: String,
}

/// Every bug switch.
pub fn all() -> Vec<BugSwitch> {
    vec![
        BugSwitch {
            name: "coordinator-skips-generation-check",
            reference: "groupsim model",
            summary:
                "coordinator: OffsetCommit is accepted whatever the member id and generation, \
                      so a paused zombie's commit gets in",
            expected: &[
                AnomalyClass::ZombieCommit,
                AnomalyClass::UnownedCommit,
                AnomalyClass::UncoveredCommit,
            ],
            apply: |s| s.coordinator.bugs.skip_commit_generation_check = true,
        },
        BugSwitch {
            name: "coordinator-acks-before-log-append",
            reference: "groupsim model",
            summary:
                "coordinator: a commit is acknowledged before its offsets-log append completes; \
                      a broker crash in between loses an acknowledged commit",
            expected: &[
                AnomalyClass::LostCommit,
                AnomalyClass::OffsetRegression,
                AnomalyClass::DuplicateCommit,
            ],
            // The bug bites when replication is slow (a lagging follower in the ISR): model a
            // 500 ms offsets-log append so a crash lands inside the window.
            apply: |s| {
                s.coordinator.bugs.ack_commit_before_log_append = true;
                s.coordinator.offsets_append_delay_ms =
                    s.coordinator.offsets_append_delay_ms.max(500);
            },
        },
        BugSwitch {
            name: "member-keeps-stale-acks",
            reference: "groupsim model",
            summary: "member: acks from an older generation are applied and committed under the \
                      current generation",
            expected: &[
                AnomalyClass::UncoveredCommit,
                AnomalyClass::DuplicateCommit,
                AnomalyClass::UnownedCommit,
            ],
            apply: |s| s.members.iter_mut().for_each(|m| m.config.bugs.keep_stale_acks = true),
        },
        BugSwitch {
            name: "member-commits-after-revoke",
            reference: "groupsim model",
            summary:
                "member: after revoking, it commits the revoked partitions' offsets under its \
                      new generation",
            expected: &[
                AnomalyClass::UnownedCommit,
                AnomalyClass::UncoveredCommit,
                AnomalyClass::DuplicateCommit,
            ],
            apply: |s| s.members.iter_mut().for_each(|m| m.config.bugs.commit_after_revoke = true),
        },
        BugSwitch {
            name: "member-overcommits-after-skipped-revoke-commit",
            reference: "groupsim model",
            summary: "member: forgets to commit on revoke, and later commits a higher offset than \
                      it processed",
            expected: &[AnomalyClass::UncoveredCommit],
            apply: |s| {
                s.members
                    .iter_mut()
                    .for_each(|m| m.config.bugs.skip_revoke_commit_then_overcommit = true)
            },
        },
        BugSwitch {
            name: "assignor-double-assigns",
            reference: "groupsim model",
            summary: "member (leader): the assignor gives one partition to two members",
            expected: &[AnomalyClass::SplitAssignment],
            apply: |s| s.members.iter_mut().for_each(|m| m.config.bugs.double_assign = true),
        },
        BugSwitch {
            name: "member-resets-generation-on-stale-response",
            reference: "KAFKA-9823 (apache/kafka#8445)",
            summary: "member: an ILLEGAL_GENERATION / UNKNOWN_MEMBER_ID answer to a request sent \
                      under an older generation resets the generation it has joined since",
            expected: &[AnomalyClass::StaleReset],
            apply: |s| {
                s.members
                    .iter_mut()
                    .for_each(|m| m.config.bugs.resets_generation_on_stale_response = true)
            },
        },
        BugSwitch {
            name: "member-keeps-owned-after-sync-error",
            reference: "KAFKA-13419 (apache/kafka#11451)",
            summary: "member (cooperative): after a SyncGroup error it keeps its owned partitions \
                      and claims them again under the failed SyncGroup's generation",
            expected: &[
                AnomalyClass::SplitAssignment,
                AnomalyClass::UnownedCommit,
                AnomalyClass::OffsetRegression,
                AnomalyClass::DuplicateCommit,
                AnomalyClass::UncoveredCommit,
            ],
            apply: |s| {
                s.members.iter_mut().for_each(|m| m.config.bugs.keeps_owned_after_sync_error = true)
            },
        },
        BugSwitch {
            name: "member-commits-stale-stored-offset",
            reference: "librdkafka #3774 (confluentinc/librdkafka#3774)",
            summary: "member: the offset stored for a partition survives its revoke and is \
                      committed when the partition comes back, rewinding the group",
            expected: &[AnomalyClass::OffsetRegression, AnomalyClass::UncoveredCommit],
            apply: |s| {
                s.members.iter_mut().for_each(|m| m.config.bugs.commits_stale_stored_offset = true)
            },
        },
        BugSwitch {
            name: "member-sends-past-generation-commits",
            reference: "kafka-go #1308 (segmentio/kafka-go#1330)",
            summary: "member: commits queued when a generation ends are sent in the next one, \
                      stamped with the new generation",
            expected: &[
                AnomalyClass::UnownedCommit,
                AnomalyClass::UncoveredCommit,
                AnomalyClass::OffsetRegression,
                AnomalyClass::DuplicateCommit,
            ],
            apply: |s| {
                s.members
                    .iter_mut()
                    .for_each(|m| m.config.bugs.sends_past_generation_commits = true)
            },
        },
        BugSwitch {
            name: "member-retries-superseded-commit",
            reference: "spring-kafka #3186 (spring-projects/spring-kafka#3189)",
            summary: "member: a commit refused with REBALANCE_IN_PROGRESS is retried after the \
                      next revoke commit, moving the committed offset back",
            expected: &[
                AnomalyClass::OffsetRegression,
                AnomalyClass::UnownedCommit,
                AnomalyClass::UncoveredCommit,
            ],
            apply: |s| {
                s.members.iter_mut().for_each(|m| m.config.bugs.retries_superseded_commit = true)
            },
        },
        BugSwitch {
            name: "member-revoke-commit-never-completes",
            reference: "KAFKA-14024 (apache/kafka#12349)",
            summary: "member: the answer to the commit made before rejoining is lost; the member \
                      waits for it for ever and never rejoins",
            expected: &[AnomalyClass::Stuck],
            apply: |s| {
                s.members
                    .iter_mut()
                    .for_each(|m| m.config.bugs.revoke_commit_never_completes = true)
            },
        },
        BugSwitch {
            name: "member-rewinds-when-offset-fetch-fails",
            reference: "kafka-python #2628 (dpkp/kafka-python#2629)",
            summary: "member: an OffsetFetch that fails is taken for \"nothing committed\": \
                      auto.offset.reset=earliest restarts the partition from the log start",
            expected: &[AnomalyClass::PositionRewind],
            apply: |s| {
                s.members.iter_mut().for_each(|m| {
                    m.config.bugs.resets_position_on_offset_fetch_failure =
                        Some(OffsetReset::Earliest)
                })
            },
        },
        BugSwitch {
            name: "member-skips-when-offset-fetch-fails",
            reference: "kafka-python #2628 (dpkp/kafka-python#2629)",
            summary: "member: an OffsetFetch that fails is taken for \"nothing committed\": \
                      auto.offset.reset=latest jumps to the log end, skipping uncommitted records",
            expected: &[AnomalyClass::PositionSkip, AnomalyClass::UncoveredCommit],
            apply: |s| {
                s.members.iter_mut().for_each(|m| {
                    m.config.bugs.resets_position_on_offset_fetch_failure =
                        Some(OffsetReset::Latest)
                })
            },
        },
        BugSwitch {
            name: "member-gives-up-on-join-load-in-progress",
            reference: "kafkajs #1390 (tulios/kafkajs#1390)",
            summary: "member: a JoinGroup answered COORDINATOR_LOAD_IN_PROGRESS crashes the \
                      consumer instead of being retried; it stops consuming for good",
            expected: &[AnomalyClass::MemberGaveUp],
            apply: |s| {
                s.members
                    .iter_mut()
                    .for_each(|m| m.config.bugs.gives_up_on_join_load_in_progress = true)
            },
        },
        BugSwitch {
            name: "member-heartbeat-thread-dies",
            reference: "KAFKA-14729 (apache/kafka#13270)",
            summary: "member: a lost heartbeat kills the heartbeat thread; the consumer goes on \
                      fetching while its session expires, again after every rejoin",
            expected: &[AnomalyClass::StalledMember, AnomalyClass::RequestLapsedSession],
            apply: |s| {
                s.members.iter_mut().for_each(|m| m.config.bugs.heartbeat_thread_dies = true)
            },
        },
        // KIP-848 (consumer group protocol) switches: they bite consumer-protocol groups only.
        BugSwitch {
            name: "coordinator-assigns-unreleased-partitions",
            reference: "robot-head/crabka#521",
            summary: "coordinator (KIP-848): a heartbeat answer hands a member its whole target, \
                      partitions another member has not released included",
            expected: &[AnomalyClass::SplitAssignment],
            apply: |s| s.coordinator.bugs.assigns_unreleased_partitions = true,
        },
        BugSwitch {
            name: "coordinator-forgets-reclaimed-partition-owner",
            reference: "KAFKA-16147 (apache/kafka#15212)",
            summary: "coordinator (KIP-848): a partition given back to the member revoking it \
                      loses its owner epoch, so the next target hands it over unreleased",
            expected: &[AnomalyClass::SplitAssignment],
            apply: |s| s.coordinator.bugs.forgets_owner_of_reclaimed_partition = true,
        },
        BugSwitch {
            name: "member-commits-unprocessed-positions",
            reference: "KAFKA-18641 (apache/kafka#18737)",
            summary: "member (KIP-848 Java consumer): commits cover the batch the application \
                      is still processing; a crash before it finishes loses those records",
            expected: &[AnomalyClass::UncoveredCommit],
            apply: |s| {
                s.members
                    .iter_mut()
                    .for_each(|m| m.config.bugs.commits_unprocessed_positions = true)
            },
        },
        BugSwitch {
            name: "member-keeps-partitions-when-fenced",
            reference: "groupsim model",
            summary: "member (KIP-848): fenced, it rejoins keeping its partitions and commits \
                      them under its new member epoch though they were given to others",
            expected: &[
                AnomalyClass::UnownedCommit,
                AnomalyClass::OffsetRegression,
                AnomalyClass::DuplicateCommit,
                AnomalyClass::UncoveredCommit,
            ],
            apply: |s| {
                s.members.iter_mut().for_each(|m| m.config.bugs.keeps_partitions_when_fenced = true)
            },
        },
        BugSwitch {
            name: "coordinator-fences-rejoin-at-epoch-zero",
            reference: "KAFKA-19233 (apache/kafka#21305)",
            summary: "coordinator (KIP-848): a fenced member's rejoin at epoch 0 with its member \
                      id is fenced again, until its session runs out",
            expected: &[AnomalyClass::FencedJoin],
            apply: |s| s.coordinator.bugs.fences_rejoin_at_epoch_zero = true,
        },
        BugSwitch {
            name: "coordinator-accepts-stale-heartbeat",
            reference: "groupsim model (the check KAFKA-2557, apache/kafka#222, put first)",
            summary: "coordinator: a classic Heartbeat is checked for its member id but not its \
                      generation, so a member that missed its JoinGroup answer is told all is \
                      well and keeps its old partitions",
            expected: &[AnomalyClass::AnswerStaleGenerationAccepted],
            apply: |s| s.coordinator.bugs.accepts_heartbeat_of_any_generation = true,
        },
        BugSwitch {
            name: "coordinator-keeps-silent-member",
            reference: "groupsim model (Kafka's hasSatisfiedHeartbeat; the Scala coordinator's \
                        heartbeatSatisfied flag)",
            summary: "coordinator: a classic member whose session runs out is kept as if it still \
                      awaited its join, so a member paused past its session is told all is well \
                      when it comes back",
            expected: &[AnomalyClass::AnswerRemovedMemberAccepted],
            apply: |s| s.coordinator.bugs.keeps_silent_members_alive = true,
        },
        BugSwitch {
            name: "coordinator-restarts-session-only-on-change",
            reference: "groupsim model (Kafka's scheduleConsumerGroupSessionTimeout on every \
                        heartbeat)",
            summary: "coordinator (KIP-848): a heartbeat that changes nothing does not restart \
                      the member's session, so a steady member is fenced one session after its \
                      last change though it heartbeats on time",
            expected: &[AnomalyClass::AnswerLiveMemberFenced],
            apply: |s| s.coordinator.bugs.restarts_session_only_on_change = true,
        },
        BugSwitch {
            name: "coordinator-admits-unknown-member-id",
            reference: "KIP-394 (KAFKA-7824, apache/kafka#6058; KAFKA-7610): the check it added",
            summary: "coordinator: a new dynamic member's JoinGroup v4+ joins at once instead of \
                      being answered MEMBER_ID_REQUIRED, so a retried first join leaves a ghost \
                      member",
            expected: &[AnomalyClass::AnswerWrongError],
            apply: |s| s.coordinator.bugs.admits_unknown_member_id = true,
        },
        BugSwitch {
            name: "coordinator-forgets-fenced-instance",
            reference: "KAFKA-8225 (apache/kafka#6650, KIP-345 part 2): the fencing it added",
            summary: "coordinator: a static member whose instance id another member id now holds \
                      is answered UNKNOWN_MEMBER_ID instead of FENCED_INSTANCE_ID, so it rejoins \
                      and takes the instance back",
            expected: &[AnomalyClass::AnswerWrongError, AnomalyClass::Stuck],
            apply: |s| s.coordinator.bugs.forgets_fenced_instances = true,
        },
    ]
}

/// Looks a bug switch up by name.
pub fn find(name: &str) -> Result<BugSwitch, UnknownBug> {
    let all = all();
    all.iter().find(|b| b.name == name).copied().ok_or_else(|| UnknownBug {
        name: name.to_string(),
        known: all.iter().map(|b| b.name).collect::<Vec<_>>().join(", "),
    })
}
