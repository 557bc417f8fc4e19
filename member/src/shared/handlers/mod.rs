//! The handlers both protocols' members share, written once: each file is an extension trait
//! with provided methods over [`Protocol`](crate::shared::core::Protocol), implemented for every
//! member, named after the concern it drives. Members bring the traits into scope to call them.

pub(crate) mod answers;
pub(crate) mod cluster;
pub(crate) mod commits;
pub(crate) mod consumption;
pub(crate) mod fetch;
pub(crate) mod positions;
pub(crate) mod processing;

/// The shared handler traits, for a member's files to bring into scope at once.
pub(crate) mod prelude {
    pub(crate) use super::answers::Answers;
    pub(crate) use super::cluster::Cluster;
    pub(crate) use super::commits::Commits;
    pub(crate) use super::consumption::Consumption;
    pub(crate) use super::positions::OffsetFetchRules;
    pub(crate) use super::processing::Processing;
    pub(crate) use crate::shared::core::Plumbing;
}
