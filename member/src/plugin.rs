//! Members written outside groupsim: a client author's own sans-IO state machine, run in the
//! simulated group beside the built-in profiles, under the same faults and the same checker.
//!
//! A plug-in member keeps the contract every built-in member keeps: the world hands it the
//! current simulated time with every input (a start, a leave, a decoded answer or a request's
//! failure, a timer firing) and drains its [`MemberOutput`]s afterwards — requests to send to a
//! broker, connections to close, and the [`MemberEvent`](crate::MemberEvent)s the checker reads
//! (what it was assigned, what it processed, what it committed and what the coordinator
//! acknowledged). It never opens a socket, reads a clock or draws unseeded randomness: the seed it
//! is built with is its only source of chance, which is what makes a failing seed replay.
//!
//! A recipe names the member's kind with a [`PluginMember`]: a name (written into the saved
//! history's scenario) and the function that builds one for each process start.
//!
//! ```
//! use groupsim_member::{
//!     MemberConfig, MemberEvent, MemberOutput, Millis, PluginMember, RequestFailure, RequestId,
//!     SansIoMember, Target,
//! };
//! use kafka_protocol::messages::{FindCoordinatorRequest, RequestKind, ResponseKind};
//! use kafka_protocol::protocol::StrBytes;
//!
//! /// Finds its group's coordinator, says so, and waits: the smallest member that talks.
//! #[derive(Debug)]
//! struct Finder {
//!     group: String,
//!     out: Vec<MemberOutput>,
//! }
//!
//! impl SansIoMember for Finder {
//!     fn start(&mut self, _now: Millis) {
//!         let key = StrBytes::from_string(self.group.clone());
//!         let request = FindCoordinatorRequest::default().with_coordinator_keys(vec![key]);
//!         let request = RequestKind::FindCoordinator(request);
//!         self.out.push(MemberOutput::Send { id: RequestId(1), target: Target::Broker(0), request, timeout_ms: 5_000 });
//!     }
//!     fn leave(&mut self, _now: Millis) {}
//!     fn handle_response(&mut self, _now: Millis, _id: RequestId, response: ResponseKind) {
//!         if let ResponseKind::FindCoordinator(r) = response {
//!             let node_id = r.coordinators.first().map_or(r.node_id.0, |c| c.node_id.0);
//!             self.out.push(MemberOutput::Event(MemberEvent::CoordinatorFound { node_id }));
//!         }
//!     }
//!     fn handle_failure(&mut self, _now: Millis, _id: RequestId, _failure: RequestFailure) {}
//!     fn poll_timeout(&self) -> Option<Millis> {
//!         None
//!     }
//!     fn handle_timeout(&mut self, _now: Millis) {}
//!     fn poll_output(&mut self) -> Option<MemberOutput> {
//!         (!self.out.is_empty()).then(|| self.out.remove(0))
//!     }
//!     fn is_finished(&self) -> bool {
//!         false
//!     }
//!     fn member_id(&self) -> &str {
//!         ""
//!     }
//! }
//!
//! let kind = PluginMember::new("finder", |config: &MemberConfig, _seed| {
//!     Box::new(Finder { group: config.group_id.clone(), out: Vec::new() })
//! });
//! let config = MemberConfig::new("orders-app", "c1", vec!["orders".into()]);
//! let mut member = kind.build(&config, 7).expect("built by this program");
//! member.start(0);
//! assert!(matches!(member.poll_output(), Some(MemberOutput::Send { target: Target::Broker(0), .. })));
//! ```

use std::fmt;
use std::sync::Arc;

use kafka_protocol::messages::ResponseKind;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::{MemberConfig, MemberFault, MemberOutput, Millis, RequestFailure, RequestId};

/// A sans-IO consumer-group member the world can host.
///
/// Requests go out as [`MemberOutput::Send`] under ids the member picks (unique among its
/// requests in flight); each gets exactly one answer ([`Self::handle_response`]) or failure
/// ([`Self::handle_failure`]), in the order the connection delivers them. Events go out as
/// [`MemberOutput::Event`] when they become true: the checker judges them, so a member that
/// records what it did not do is judged on what it recorded.
pub trait SansIoMember: fmt::Debug + Send {
    /// The process started: begin finding the coordinator and joining.
    fn start(&mut self, now: Millis);
    /// The scenario asks the member to leave the group gracefully (commit, leave, stop).
    fn leave(&mut self, now: Millis);
    /// The answer to request `id`.
    fn handle_response(&mut self, now: Millis, id: RequestId, response: ResponseKind);
    /// Request `id` got no answer.
    fn handle_failure(&mut self, now: Millis, id: RequestId, failure: RequestFailure);
    /// When the member's next timer is due, if it has one.
    fn poll_timeout(&self) -> Option<Millis>;
    /// Fires every timer due at `now`; afterwards [`Self::poll_timeout`] must be later than
    /// `now`.
    fn handle_timeout(&mut self, now: Millis);
    /// The next output, in the order produced.
    fn poll_output(&mut self) -> Option<MemberOutput>;
    /// The member stopped for good (it left, or hit an error it does not survive).
    fn is_finished(&self) -> bool;
    /// The member id the coordinator gave it (empty before one).
    fn member_id(&self) -> &str;
    /// A fault aimed at the member's application (a slow batch, a slow revoke callback). The
    /// default ignores it: a member that models its application may honour it.
    fn inject(&mut self, now: Millis, fault: MemberFault) {
        let _ = (now, fault);
    }
    /// The faults injected and not yet felt are healed (the liveness phase begins).
    fn heal_pending_faults(&mut self) {}
}

/// Builds a plug-in member for one process start, from the member's configuration and the
/// seed of that start.
pub type MakeMember = dyn Fn(&MemberConfig, u64) -> Box<dyn SansIoMember> + Send + Sync;

/// A plug-in member kind: its name and the function that builds one.
///
/// Saved with a history, only the name survives: a history or schedule read back from a file
/// names the kind but cannot build it, and the world refuses to run it (replay such a seed from
/// the test that defines the member).
#[derive(Clone)]
pub struct PluginMember {
    name: String,
    make: Option<Arc<MakeMember>>,
}

impl PluginMember {
    /// A member kind called `name`, built by `make`.
    pub fn new(
        name: impl Into<String>,
        make: impl Fn(&MemberConfig, u64) -> Box<dyn SansIoMember> + Send + Sync + 'static,
    ) -> Self {
        Self { name: name.into(), make: Some(Arc::new(make)) }
    }

    /// The kind's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether this program can build the member (false when it was read from a file).
    pub fn can_build(&self) -> bool {
        self.make.is_some()
    }

    /// A member for one process start, or None when the kind was read from a file.
    pub fn build(&self, config: &MemberConfig, seed: u64) -> Option<Box<dyn SansIoMember>> {
        self.make.as_ref().map(|make| make(config, seed))
    }
}

impl fmt::Debug for PluginMember {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("PluginMember").field(&self.name).finish()
    }
}

impl PartialEq for PluginMember {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl Serialize for PluginMember {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.name)
    }
}

impl<'de> Deserialize<'de> for PluginMember {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Self { name: String::deserialize(d)?, make: None })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Idle;

    impl SansIoMember for Idle {
        fn start(&mut self, _: Millis) {}
        fn leave(&mut self, _: Millis) {}
        fn handle_response(&mut self, _: Millis, _: RequestId, _: ResponseKind) {}
        fn handle_failure(&mut self, _: Millis, _: RequestId, _: RequestFailure) {}
        fn poll_timeout(&self) -> Option<Millis> {
            None
        }
        fn handle_timeout(&mut self, _: Millis) {}
        fn poll_output(&mut self) -> Option<MemberOutput> {
            None
        }
        fn is_finished(&self) -> bool {
            false
        }
        fn member_id(&self) -> &str {
            ""
        }
    }

    #[test]
    fn a_kind_read_back_from_json_keeps_its_name_and_cannot_build() {
        let kind = PluginMember::new("idle", |_, _| Box::new(Idle));
        let config = MemberConfig::new("g", "c", vec![]);
        assert!(kind.can_build() && kind.build(&config, 1).is_some());
        let json = serde_json::to_string(&kind).expect("serializes");
        assert_eq!(json, "\"idle\"");
        let back: PluginMember = serde_json::from_str(&json).expect("deserializes");
        assert_eq!(back, kind);
        assert!(!back.can_build() && back.build(&config, 1).is_none());
    }
}
