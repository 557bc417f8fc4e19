//! groupsim-member: a sans-IO Kafka consumer-group member (the client half of a rebalance),
//! its partition assignors and its commit policy.
//!
//! A [`Member`] is a plain state machine. The driver (in `groupsim`) feeds it decoded responses,
//! request failures and timer firings, each with the current simulated time, and drains
//! [`MemberOutput`]s: requests to send (with a per-request timeout), connections to close, and
//! history events. The member never opens a socket or reads a clock.

pub mod app;
pub mod assignor;
pub mod classic;
pub mod compat;
pub mod config;
pub mod consumer;
pub mod event;
mod group_member;
pub mod observer;
pub mod plugin;
pub mod prober;
pub mod probes;
mod shared;

pub use app::{Application, ProfileApplication};
pub use assignor::{
    Assignor, AssignorKind, CooperativeStickyAssignor, RangeAssignor, RoundRobinAssignor,
    RoundRobinV2Assignor, StickyAssignor, StickyUserData,
};
pub use classic::{Member, MemberFault, MemberOutput, RequestFailure, Target};
pub use config::{ClientProfile, GroupProtocol, MemberBugs, MemberConfig, OffsetReset};
pub use consumer::{ConsumerGroupMember, MemberState};
pub use event::{DescribedMember, ListedGroup, MemberEvent, SentUnder};
pub use group_member::GroupMember;
pub use groupsim_wire::{Millis, RequestId, TopicPartition};
pub use observer::AdminObserver;
pub use plugin::{MakeMember, PluginMember, SansIoMember};
pub use prober::{InvalidCase, InvalidRequestProber};
