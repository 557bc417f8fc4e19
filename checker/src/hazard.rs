//! The hazards Kafka allows, by name: what the checker sets apart from the anomalies that prove
//! a bug (`hazards` and `taken_partitions` find where each acted; `liveness` the lost downgrade
//! rebalance).

use std::fmt;

use groupsim_wire::TopicPartition;
use serde::{Deserialize, Serialize};

use crate::Anomaly;

/// A hazard Kafka allows, which the history shows acting (the world may play it as a named
/// fault). The late request's anomalies are found here; the lost downgrade rebalance's by the
/// liveness rule, which reads the group's generations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Hazard {
    /// A request processed after its client gave up on it and sent newer ones
    /// (`Fault::LateRequest`).
    LateRequest,
    /// A classic group was converted to a consumer group while a rebalance had reset its
    /// members' assignments: partitions cooperative members still held were handed out again.
    UpgradeMidRebalance,
    /// A static member cut off within its session stayed in a generation it did not join, with
    /// the owned partitions of its last subscription: the assignor gave one it held since to
    /// another member.
    StaticMemberMissedRebalance,
    /// A consumer-protocol member removed while cut off came back to a group that became classic
    /// meanwhile (downgraded, or emptied and taken by a classic join) and stopped on
    /// GROUP_ID_NOT_FOUND.
    DowngradeStrandsMember,
    /// A coordinator gave a group up between the downgrade to the classic protocol it wrote
    /// and the rebalance that downgrade started; the next loaded the written generation as
    /// Stable and started none.
    LostDowngradeRebalance,
    /// A classic group was converted to a consumer group while some partitions had no owner
    /// (a rebalance was under way), and static members took their instances over without
    /// bumping the group epoch: those partitions stayed unassigned.
    StaticUpgradeOrphans,
    /// A group loaded from the offsets log knows each member by the protocol it chose only: a
    /// client not offering that protocol is refused until a loaded member rejoins.
    LoadedGroupRefusesProtocol,
    /// A consumer group re-created a classic member rejoining under the id it had removed: the
    /// member still owned partitions given to others, and its commits on them were accepted.
    RemovedClassicMemberRejoins,
    /// A consumer-protocol member joined a classic group the coordinator may not convert
    /// (migration policy, size, protocol type) and stopped on GROUP_ID_NOT_FOUND.
    RefusedUpgradeStopsMember,
    /// Partitions were added while a consumer group held classic-protocol members only: no
    /// target assignment covered them.
    ClassicMembersMissNewPartitions,
    /// A static leader's replacement, told to skip the assignment (KIP-814), snapshotted the
    /// partition counts as they were then: partitions added before it joined stay unassigned.
    StaticLeaderSkipsNewPartitions,
    /// A cooperative generation revoked partitions from a member whose process was replaced
    /// (static, no rebalance) before it rejoined: nobody starts the follow-up rebalance.
    ReplacedMemberSkipsFollowUpRebalance,
    /// Two live processes of one classic static member (one `group.instance.id`) inside a
    /// consumer group took the instance from each other: a commit, answered UNKNOWN_MEMBER_ID,
    /// sent the replaced one back to join before a heartbeat could fence it.
    ClassicTwinsReplaceEachOther,
    /// A consumer-protocol member's rejoin, given up and overtaken by a later one the
    /// coordinator answered first, was processed afterwards and moved partitions to the member
    /// in an answer it never read.
    OvertakenRejoin,
}

impl Hazard {
    /// The kebab-case name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            Hazard::LateRequest => "late-request",
            Hazard::LostDowngradeRebalance => "lost-downgrade-rebalance",
            Hazard::UpgradeMidRebalance => "upgrade-mid-rebalance",
            Hazard::StaticMemberMissedRebalance => "static-member-missed-rebalance",
            Hazard::DowngradeStrandsMember => "downgrade-strands-member",
            Hazard::StaticUpgradeOrphans => "static-upgrade-orphans",
            Hazard::LoadedGroupRefusesProtocol => "loaded-group-refuses-protocol",
            Hazard::RemovedClassicMemberRejoins => "removed-classic-member-rejoins",
            Hazard::RefusedUpgradeStopsMember => "refused-upgrade-stops-member",
            Hazard::ClassicMembersMissNewPartitions => "classic-members-miss-new-partitions",
            Hazard::StaticLeaderSkipsNewPartitions => "static-leader-skips-new-partitions",
            Hazard::ReplacedMemberSkipsFollowUpRebalance => {
                "replaced-member-skips-follow-up-rebalance"
            }
            Hazard::ClassicTwinsReplaceEachOther => "classic-twins-replace-each-other",
            Hazard::OvertakenRejoin => "overtaken-rejoin",
        }
    }

    /// Why Kafka allows it, in a sentence.
    pub fn why(self) -> &'static str {
        match self {
            Hazard::LateRequest => {
                "Kafka orders requests per connection only: a request read before its \
                 connection closed is processed after the client's newer requests"
            }
            Hazard::UpgradeMidRebalance => {
                "Kafka converts a classic group to a consumer group with each member's stored \
                 assignment, which a rebalance in progress has reset to empty: partitions \
                 cooperative members still own are handed to others before those members \
                 revoke them, and their commits on them are accepted"
            }
            Hazard::StaticMemberMissedRebalance => {
                "Kafka keeps a static member that did not rejoin in the next generation with \
                 the subscription it last sent: its owned partitions there are a generation \
                 old, so a cooperative assignor may give a partition the member holds to \
                 another, and the member's commit on revoking it is accepted"
            }
            Hazard::DowngradeStrandsMember => {
                "Kafka answers a consumer-protocol heartbeat for a group downgraded to the \
                 classic protocol GROUP_ID_NOT_FOUND, which the Java consumer treats as fatal: \
                 a member removed while cut off that comes back after the group became classic \
                 (downgraded, or emptied and replaced by a classic member's join) stops"
            }
            Hazard::LostDowngradeRebalance => {
                "Kafka starts the rebalance of a group downgraded to the classic protocol in \
                 memory only: a coordinator that takes the group over before it completes loads \
                 the written generation as Stable, the leaver's partitions unassigned and the \
                 members' targets unreconciled (a partition still being revoked already \
                 another's), until a membership change rebalances it"
            }
            Hazard::StaticUpgradeOrphans => {
                "Kafka converts a classic group to a consumer group with each member's stored \
                 assignment as its target, and a static member taking over its instance copies \
                 the old member's subscription, which bumps no group epoch: partitions no member \
                 held when the group converted (a rebalance was under way) stay unassigned \
                 until a membership change computes a new target"
            }
            Hazard::LoadedGroupRefusesProtocol => {
                "Kafka rebuilds a classic group loaded from the offsets log with each member \
                 supporting only the protocol the group chose: a client that does not offer it \
                 is refused INCONSISTENT_GROUP_PROTOCOL, which starts no rebalance, so it stays \
                 out until a loaded member rejoins with its full protocol list (the Java \
                 consumer stops on the error; kafka-go, brod and Elsa retry)"
            }
            Hazard::RemovedClassicMemberRejoins => {
                "Kafka's consumer group creates the member a classic JoinGroup names when it does \
                 not know it, so a classic member removed while cut off (its session expired) \
                 that rejoins under its old id never hears UNKNOWN_MEMBER_ID: a cooperative \
                 member still owns the partitions its removal released, which others may hold \
                 by now, and its commits on revoking them are accepted under its new epoch"
            }
            Hazard::RefusedUpgradeStopsMember => {
                "Kafka answers a consumer-protocol member joining a classic group it may not \
                 convert (group.consumer.migration.policy forbids upgrades, the group is larger \
                 than group.consumer.max.size, or its members' embedded protocol does not parse) \
                 GROUP_ID_NOT_FOUND, which the Java consumer and librdkafka treat as fatal: the \
                 member stops while the classic group goes on without it"
            }
            Hazard::ClassicMembersMissNewPartitions => {
                "Kafka refreshes a consumer group's view of its topics on consumer-protocol \
                 heartbeats and on classic JoinGroups, not on classic Heartbeats, and answers a \
                 classic member's JoinGroup naming no leader, so its client watches no partition \
                 counts: a consumer group whose members all speak the classic protocol leaves \
                 partitions added to its topics unassigned until a member joins or rejoins"
            }
            Hazard::StaticLeaderSkipsNewPartitions => {
                "Kafka answers a static member that takes the leader's instance over in a Stable \
                 classic group with the current generation and SkipAssignment (KIP-814), and the \
                 Java consumer then snapshots the partition counts it sees: partitions added \
                 after the generation's assignment, whose leader stopped before it rejoined, \
                 stay unassigned until the membership changes"
            }
            Hazard::ReplacedMemberSkipsFollowUpRebalance => {
                "a cooperative rebalance gives the partitions a member must revoke to nobody, and \
                 the member that revoked them rejoins to start the follow-up rebalance that hands \
                 them out; when its process dies first and a new one takes its static instance \
                 over, Kafka keeps the Stable group without a rebalance (the selected protocol is \
                 unchanged), the new process owns nothing to revoke, and the partitions stay \
                 unassigned until the membership changes"
            }
            Hazard::ClassicTwinsReplaceEachOther => {
                "Kafka's consumer group checks a classic member's Heartbeat and SyncGroup against \
                 its static instance id (FENCED_INSTANCE_ID, which the client treats as fatal) \
                 but its OffsetCommit by member id only (UNKNOWN_MEMBER_ID), and lets a classic \
                 JoinGroup without a member id take the instance over at once: a process whose \
                 twin took its instance and whose next request is a commit resets its member id \
                 and takes the instance back, so two live processes on one instance id replace \
                 each other for as long as both commit between heartbeats, and the group does \
                 not settle"
            }
            Hazard::OvertakenRejoin => {
                "Kafka orders requests per connection only and accepts member epoch 0 from a \
                 member it knows (a fenced member rejoins so): a rejoin the member gave up, \
                 processed after its newer rejoin was answered, reconciles the member and \
                 writes the partitions it moved into an answer nobody reads; the coordinator \
                 sends an assignment again only when it changes or the member sends its owned \
                 partitions, which a reconciled member does not, so the partitions stay with a \
                 member that does not know it holds them until the group's assignment changes"
            }
        }
    }
}

impl fmt::Display for Hazard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An anomaly a named hazard explains.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Explained {
    /// The hazard.
    pub hazard: Hazard,
    /// The history event (by index) where the hazard acted: the late commit.
    pub cause: usize,
    /// The anomaly it explains.
    pub anomaly: Anomaly,
}

/// Where one hazard's effect on a partition lasts.
#[derive(Debug)]
pub(crate) struct Window {
    pub(crate) hazard: Hazard,
    pub(crate) cause: usize,
    pub(crate) partition: TopicPartition,
    /// Inclusive range of event indices.
    pub(crate) from: usize,
    pub(crate) to: usize,
}
