//! The edge between the cores and the history: the coordinator's and the member's events
//! become the history's own types here, where the simulation records them. The history (and so
//! the checker) never sees a core type, and a core can change its events without touching the
//! history's form: the conversion below stops compiling instead, naming what to decide.
//!
//! Every conversion spells out each variant's fields, so a field added in a core is a compile
//! error here rather than a field silently left out of the history.

use groupsim_coordinator::consumer_event::{self as ce, ConsumerGroupEvent};
use groupsim_coordinator::event::MemberAssignment;
use groupsim_coordinator::{CoordinatorEvent, GroupState, RemovalReason};
use groupsim_history as h;
use groupsim_member::{MemberEvent, SentUnder};

/// A core's event turned into the history's type of it (the orphan rule rules out `From`
/// between two other crates' types, so this is sim's own trait).
pub trait IntoHistory {
    /// The history's type.
    type Recorded;
    /// The event as the history records it.
    fn into_history(self) -> Self::Recorded;
}

impl IntoHistory for GroupState {
    type Recorded = h::GroupState;
    fn into_history(self) -> h::GroupState {
        match self {
            GroupState::Empty => h::GroupState::Empty,
            GroupState::PreparingRebalance => h::GroupState::PreparingRebalance,
            GroupState::CompletingRebalance => h::GroupState::CompletingRebalance,
            GroupState::Stable => h::GroupState::Stable,
            GroupState::Dead => h::GroupState::Dead,
        }
    }
}

impl IntoHistory for RemovalReason {
    type Recorded = h::RemovalReason;
    fn into_history(self) -> h::RemovalReason {
        match self {
            RemovalReason::LeaveGroup => h::RemovalReason::LeaveGroup,
            RemovalReason::SessionTimeout => h::RemovalReason::SessionTimeout,
            RemovalReason::RebalanceTimeout => h::RemovalReason::RebalanceTimeout,
            RemovalReason::PendingJoinExpired => h::RemovalReason::PendingJoinExpired,
            RemovalReason::Fenced => h::RemovalReason::Fenced,
        }
    }
}

impl IntoHistory for Vec<MemberAssignment> {
    type Recorded = Vec<h::MemberAssignment>;
    fn into_history(self) -> Vec<h::MemberAssignment> {
        self.into_iter()
            .map(|MemberAssignment { member_id, partitions }| h::MemberAssignment {
                member_id,
                partitions,
            })
            .collect()
    }
}

impl IntoHistory for CoordinatorEvent {
    type Recorded = h::CoordinatorEvent;
    fn into_history(self) -> h::CoordinatorEvent {
        use h::CoordinatorEvent as H;
        match self {
            CoordinatorEvent::GroupStateChanged { group, from, to, generation } => {
                let (from, to) = (from.into_history(), to.into_history());
                H::GroupStateChanged { group, from, to, generation }
            }
            CoordinatorEvent::MemberAdded { group, member_id, group_instance_id, client_id } => {
                H::MemberAdded { group, member_id, group_instance_id, client_id }
            }
            CoordinatorEvent::MemberRemoved { group, member_id, reason } => {
                H::MemberRemoved { group, member_id, reason: reason.into_history() }
            }
            CoordinatorEvent::GenerationStarted {
                group,
                generation,
                protocol,
                leader,
                members,
            } => H::GenerationStarted { group, generation, protocol, leader, members },
            CoordinatorEvent::AssignmentStored { group, generation, assignments } => {
                H::AssignmentStored { group, generation, assignments: assignments.into_history() }
            }
            CoordinatorEvent::OffsetCommitAccepted {
                group,
                member_id,
                generation,
                partition,
                offset,
                validated_at_ms,
            } => H::OffsetCommitAccepted {
                group,
                member_id,
                generation,
                partition,
                offset,
                validated_at_ms,
            },
            CoordinatorEvent::OffsetCommitRejected {
                group,
                member_id,
                generation,
                partition,
                offset,
                error,
            } => H::OffsetCommitRejected { group, member_id, generation, partition, offset, error },
            CoordinatorEvent::GroupLoaded {
                group,
                partition,
                state,
                generation,
                protocol,
                leader,
                members,
                assignments,
                offsets,
            } => H::GroupLoaded {
                group,
                partition,
                state: state.into_history(),
                generation,
                protocol,
                leader,
                members,
                assignments: assignments.into_history(),
                offsets,
            },
            CoordinatorEvent::GroupUnloaded { group, partition } => {
                H::GroupUnloaded { group, partition }
            }
            CoordinatorEvent::ConsumerGroup(e) => H::ConsumerGroup(e.into_history()),
        }
    }
}

impl IntoHistory for ce::ConsumerRemovalReason {
    type Recorded = h::ConsumerRemovalReason;
    fn into_history(self) -> h::ConsumerRemovalReason {
        use ce::ConsumerRemovalReason as C;
        use h::ConsumerRemovalReason as H;
        match self {
            C::Left => H::Left,
            C::SessionTimeout => H::SessionTimeout,
            C::RebalanceTimeout => H::RebalanceTimeout,
            C::Replaced => H::Replaced,
            C::JoinTimeout => H::JoinTimeout,
            C::SyncTimeout => H::SyncTimeout,
        }
    }
}

impl IntoHistory for Vec<ce::ConvertedMember> {
    type Recorded = Vec<h::ConvertedMember>;
    fn into_history(self) -> Vec<h::ConvertedMember> {
        self.into_iter()
            .map(|ce::ConvertedMember { member_id, member_epoch, partitions }| h::ConvertedMember {
                member_id,
                member_epoch,
                partitions,
            })
            .collect()
    }
}

impl IntoHistory for ce::LoadedMember {
    type Recorded = h::LoadedMember;
    fn into_history(self) -> h::LoadedMember {
        let ce::LoadedMember {
            member_id,
            group_instance_id,
            member_epoch,
            owned,
            revoking,
            state,
            target,
            classic_protocol,
        } = self;
        h::LoadedMember {
            member_id,
            group_instance_id,
            member_epoch,
            owned,
            revoking,
            state,
            target,
            classic_protocol,
        }
    }
}

impl IntoHistory for ConsumerGroupEvent {
    type Recorded = h::ConsumerGroupEvent;
    fn into_history(self) -> h::ConsumerGroupEvent {
        use h::ConsumerGroupEvent as H;
        use ConsumerGroupEvent as C;
        match self {
            C::MemberJoined {
                group,
                member_id,
                group_instance_id,
                client_id,
                classic_protocol,
            } => {
                H::MemberJoined { group, member_id, group_instance_id, client_id, classic_protocol }
            }
            C::GroupEpochBumped { group, epoch } => H::GroupEpochBumped { group, epoch },
            C::TargetAssignmentComputed { group, epoch, assignor, assignments } => {
                let assignments = assignments
                    .into_iter()
                    .map(|ce::TargetShare { member_id, partitions }| h::TargetShare {
                        member_id,
                        partitions,
                    })
                    .collect();
                H::TargetAssignmentComputed { group, epoch, assignor, assignments }
            }
            C::MemberEpochChanged { group, member_id, from, to, state } => {
                H::MemberEpochChanged { group, member_id, from, to, state }
            }
            C::PartitionsAssigned { group, member_id, member_epoch, partitions } => {
                H::PartitionsAssigned { group, member_id, member_epoch, partitions }
            }
            C::PartitionsRevoking { group, member_id, member_epoch, partitions } => {
                H::PartitionsRevoking { group, member_id, member_epoch, partitions }
            }
            C::PartitionsReleased { group, member_id, member_epoch, partitions } => {
                H::PartitionsReleased { group, member_id, member_epoch, partitions }
            }
            C::MemberRemoved { group, member_id, member_epoch, reason } => {
                H::MemberRemoved { group, member_id, member_epoch, reason: reason.into_history() }
            }
            C::GroupLoaded { group, partition, group_epoch, assignment_epoch, members } => {
                let members = members.into_iter().map(IntoHistory::into_history).collect();
                H::GroupLoaded { group, partition, group_epoch, assignment_epoch, members }
            }
            C::GroupUpgraded { group, generation, members } => {
                H::GroupUpgraded { group, generation, members: members.into_history() }
            }
            C::GroupDowngraded { group, group_epoch, leaving_member, members } => {
                let members = members.into_history();
                H::GroupDowngraded { group, group_epoch, leaving_member, members }
            }
            C::UpgradeRefused { group, member_id, reason } => {
                H::UpgradeRefused { group, member_id, reason }
            }
            C::EmptyGroupDeleted { group } => H::EmptyGroupDeleted { group },
        }
    }
}

impl IntoHistory for MemberEvent {
    type Recorded = h::MemberEvent;
    fn into_history(self) -> h::MemberEvent {
        use h::MemberEvent as H;
        use MemberEvent as M;
        match self {
            M::CoordinatorFound { node_id } => H::CoordinatorFound { node_id },
            M::CoordinatorLost { reason } => H::CoordinatorLost { reason },
            M::Joined { member_id, generation, leader, protocol, is_leader } => {
                H::Joined { member_id, generation, leader, protocol, is_leader }
            }
            M::AssignmentComputed { generation, protocol, assignments } => {
                H::AssignmentComputed { generation, protocol, assignments }
            }
            M::Assigned { member_id, generation, partitions } => {
                H::Assigned { member_id, generation, partitions }
            }
            M::Revoked { member_id, generation, partitions } => {
                H::Revoked { member_id, generation, partitions }
            }
            M::Lost { member_id, generation, partitions, reason } => {
                H::Lost { member_id, generation, partitions, reason }
            }
            M::PositionInitialized {
                member_id,
                generation,
                partition,
                committed,
                position,
                reset_after,
            } => H::PositionInitialized {
                member_id,
                generation,
                partition,
                committed,
                position,
                reset_after,
            },
            M::RecordsProcessed { member_id, generation, partition, first_offset, last_offset } => {
                H::RecordsProcessed { member_id, generation, partition, first_offset, last_offset }
            }
            M::CommitSent { member_id, generation, partition, offset } => {
                H::CommitSent { member_id, generation, partition, offset }
            }
            M::CommitAcked { member_id, generation, partition, offset } => {
                H::CommitAcked { member_id, generation, partition, offset }
            }
            M::CommitFailed { member_id, generation, partition, offset, error } => {
                H::CommitFailed { member_id, generation, partition, offset, error }
            }
            M::GenerationReset { member_id, generation, error, reset_member_id, answer_about } => {
                let answer_about = answer_about.map(|SentUnder { member_id, generation }| {
                    h::SentUnder { member_id, generation }
                });
                H::GenerationReset { member_id, generation, error, reset_member_id, answer_about }
            }
            M::JoinRefused { error, protocols } => H::JoinRefused { error, protocols },
            M::Left { member_id } => H::Left { member_id },
            M::Fatal { member_id, generation, error } => H::Fatal { member_id, generation, error },
            M::MemberEpochChanged { member_id, previous, epoch } => {
                H::MemberEpochChanged { member_id, previous, epoch }
            }
            M::AssignmentReceived { member_id, epoch, partitions, unresolved } => {
                H::AssignmentReceived { member_id, epoch, partitions, unresolved }
            }
            M::Fenced { member_id, epoch, error } => H::Fenced { member_id, epoch, error },
            M::HeartbeatFailed { member_id, epoch, error } => {
                H::HeartbeatFailed { member_id, epoch, error }
            }
            M::GroupDescribed { node_id, sent_at, api, error, state, epoch, members } => {
                let members = members
                    .into_iter()
                    .map(|m| h::DescribedMember {
                        member_id: m.member_id,
                        instance_id: m.instance_id,
                        partitions: m.partitions,
                        epoch: m.epoch,
                    })
                    .collect();
                H::GroupDescribed { node_id, sent_at, api, error, state, epoch, members }
            }
            M::GroupsListed { node_id, sent_at, error, groups } => {
                let groups = groups
                    .into_iter()
                    .map(|g| h::ListedGroup {
                        group: g.group,
                        state: g.state,
                        group_type: g.group_type,
                    })
                    .collect();
                H::GroupsListed { node_id, sent_at, error, groups }
            }
            M::OffsetsFetched { node_id, sent_at, error, offsets } => {
                H::OffsetsFetched { node_id, sent_at, error, offsets }
            }
            M::InvalidRequestAnswered { node_id, sent_at, case, error } => {
                H::InvalidRequestAnswered { node_id, sent_at, case, error }
            }
        }
    }
}

impl IntoHistory for groupsim_member::ClientProfile {
    type Recorded = h::ClientProfile;
    fn into_history(self) -> h::ClientProfile {
        use groupsim_member::ClientProfile as P;
        match self {
            P::JavaEager => h::ClientProfile::JavaEager,
            P::JavaCooperative => h::ClientProfile::JavaCooperative,
            P::Brod => h::ClientProfile::Brod,
            P::Elsa => h::ClientProfile::Elsa,
            P::KafkaGo => h::ClientProfile::KafkaGo,
            P::JavaConsumer => h::ClientProfile::JavaConsumer,
            P::LibrdkafkaConsumer => h::ClientProfile::LibrdkafkaConsumer,
        }
    }
}

impl IntoHistory for groupsim_member::AssignorKind {
    type Recorded = h::AssignorKind;
    fn into_history(self) -> h::AssignorKind {
        use groupsim_member::AssignorKind as A;
        match self {
            A::Range => h::AssignorKind::Range,
            A::RoundRobin => h::AssignorKind::RoundRobin,
            A::Sticky => h::AssignorKind::Sticky,
            A::CooperativeSticky => h::AssignorKind::CooperativeSticky,
            A::RoundRobinV2 => h::AssignorKind::RoundRobinV2,
        }
    }
}

/// The member's client profile a fault names (a schedule's faults are history data; the
/// member upgrade they order runs with the member's own type).
pub fn member_profile(profile: h::ClientProfile) -> groupsim_member::ClientProfile {
    use groupsim_member::ClientProfile as P;
    match profile {
        h::ClientProfile::JavaEager => P::JavaEager,
        h::ClientProfile::JavaCooperative => P::JavaCooperative,
        h::ClientProfile::Brod => P::Brod,
        h::ClientProfile::Elsa => P::Elsa,
        h::ClientProfile::KafkaGo => P::KafkaGo,
        h::ClientProfile::JavaConsumer => P::JavaConsumer,
        h::ClientProfile::LibrdkafkaConsumer => P::LibrdkafkaConsumer,
    }
}

/// The member's assignor a fault names (see [`member_profile`]).
pub fn member_assignor(assignor: h::AssignorKind) -> groupsim_member::AssignorKind {
    use groupsim_member::AssignorKind as A;
    match assignor {
        h::AssignorKind::Range => A::Range,
        h::AssignorKind::RoundRobin => A::RoundRobin,
        h::AssignorKind::Sticky => A::Sticky,
        h::AssignorKind::CooperativeSticky => A::CooperativeSticky,
        h::AssignorKind::RoundRobinV2 => A::RoundRobinV2,
    }
}

/// The history's record of a held request reaching broker `node`'s coordinator (the
/// late-request hazard): its client id is the member's name.
pub fn late_request(
    node: i32,
    client_id: String,
    api: groupsim_history::GroupApi,
    member_id: Option<String>,
    read_at_ms: groupsim_wire::Millis,
) -> h::WorldEvent {
    h::WorldEvent::RequestProcessedLate { node, member: client_id, api, member_id, read_at_ms }
}

#[cfg(test)]
mod tests {
    use groupsim_coordinator::consumer_event::{ConvertedMember, LoadedMember, TargetShare};
    use groupsim_wire::TopicPartition;

    use super::*;

    /// The history's types carry the cores' names and fields in the same order, so an event's
    /// debug text (which anomaly evidence and traces print) is the same on both sides.
    fn same_text<E: IntoHistory + Clone + std::fmt::Debug>(event: E)
    where
        E::Recorded: std::fmt::Debug,
    {
        assert_eq!(format!("{event:?}"), format!("{:?}", event.clone().into_history()));
    }

    #[test]
    fn recorded_events_read_like_the_cores_events() {
        let tp = |p| TopicPartition::new("t", p);
        same_text(CoordinatorEvent::GroupLoaded {
            group: "g".into(),
            partition: 3,
            state: GroupState::Stable,
            generation: 2,
            protocol: Some("range".into()),
            leader: Some("a".into()),
            members: vec!["a".into()],
            assignments: vec![MemberAssignment { member_id: "a".into(), partitions: vec![tp(0)] }],
            offsets: vec![(tp(0), 5)],
        });
        same_text(CoordinatorEvent::MemberRemoved {
            group: "g".into(),
            member_id: "a".into(),
            reason: RemovalReason::Fenced,
        });
        same_text(CoordinatorEvent::ConsumerGroup(ConsumerGroupEvent::GroupLoaded {
            group: "g".into(),
            partition: 0,
            group_epoch: 4,
            assignment_epoch: 4,
            members: vec![LoadedMember {
                member_id: "a".into(),
                group_instance_id: Some("i".into()),
                member_epoch: 4,
                owned: vec![tp(0), tp(1)],
                revoking: vec![tp(1)],
                state: "UNREVOKED_PARTITIONS".into(),
                target: vec![tp(0)],
                classic_protocol: true,
            }],
        }));
        same_text(ConsumerGroupEvent::TargetAssignmentComputed {
            group: "g".into(),
            epoch: 4,
            assignor: "uniform".into(),
            assignments: vec![TargetShare { member_id: "a".into(), partitions: vec![tp(0)] }],
        });
        same_text(ConsumerGroupEvent::GroupDowngraded {
            group: "g".into(),
            group_epoch: 5,
            leaving_member: "b".into(),
            members: vec![ConvertedMember {
                member_id: "a".into(),
                member_epoch: 5,
                partitions: vec![tp(2)],
            }],
        });
        same_text(ConsumerGroupEvent::MemberRemoved {
            group: "g".into(),
            member_id: "a".into(),
            member_epoch: 5,
            reason: ce::ConsumerRemovalReason::SyncTimeout,
        });
        same_text(MemberEvent::GenerationReset {
            member_id: "a".into(),
            generation: 3,
            error: "ILLEGAL_GENERATION".into(),
            reset_member_id: false,
            answer_about: Some(SentUnder { member_id: "a".into(), generation: 2 }),
        });
        same_text(MemberEvent::AssignmentReceived {
            member_id: "a".into(),
            epoch: 6,
            partitions: vec![tp(0)],
            unresolved: vec!["topic-id".into()],
        });
    }
}
