//! One member of either group protocol, chosen by its profile, an admin client watching the
//! group, or a member written outside groupsim: what the world's driver runs. Each method hands
//! the call to the classic [`Member`], the KIP-848 [`ConsumerGroupMember`], the
//! [`AdminObserver`], the prober or the plug-in [`SansIoMember`]; all keep the same sans-IO
//! contract.

use kafka_protocol::messages::ResponseKind;

use crate::observer::AdminObserver;
use crate::prober::InvalidRequestProber;
use crate::{
    ConsumerGroupMember, GroupProtocol, Member, MemberConfig, MemberFault, MemberOutput, Millis,
    RequestFailure, RequestId, SansIoMember,
};

/// A member speaking the group protocol its profile names.
#[derive(Debug)]
pub enum GroupMember {
    /// JoinGroup / SyncGroup / Heartbeat.
    Classic(Box<Member>),
    /// KIP-848's ConsumerGroupHeartbeat.
    Consumer(Box<ConsumerGroupMember>),
    /// Not a member: an admin client describing and listing the group.
    Observer(Box<AdminObserver>),
    /// Not a member: a client sending requests Kafka must refuse.
    Prober(Box<InvalidRequestProber>),
    /// A member written outside groupsim.
    Plugin(Box<dyn SansIoMember>),
}

/// Calls `$call` on whichever member `$self` holds.
macro_rules! each {
    ($self:expr, $m:ident => $call:expr) => {
        match $self {
            GroupMember::Classic($m) => $call,
            GroupMember::Consumer($m) => $call,
            GroupMember::Observer($m) => $call,
            GroupMember::Prober($m) => $call,
            GroupMember::Plugin($m) => $call,
        }
    };
}

impl GroupMember {
    /// The member `config.profile` calls for; `seed` as each member takes it.
    pub fn new(config: MemberConfig, seed: u64) -> Self {
        if config.admin_observer {
            return GroupMember::Observer(Box::new(AdminObserver::new(config, seed)));
        }
        if config.invalid_request_prober {
            return GroupMember::Prober(Box::new(InvalidRequestProber::new(config, seed)));
        }
        match config.profile.group_protocol() {
            GroupProtocol::Classic => GroupMember::Classic(Box::new(Member::new(config, seed))),
            GroupProtocol::Consumer => {
                GroupMember::Consumer(Box::new(ConsumerGroupMember::new(config, seed)))
            }
        }
    }

    /// See [`Member::start`].
    pub fn start(&mut self, now: Millis) {
        each!(self, m => m.start(now))
    }

    /// See [`Member::leave`].
    pub fn leave(&mut self, now: Millis) {
        each!(self, m => m.leave(now))
    }

    /// See [`Member::handle_response`].
    pub fn handle_response(&mut self, now: Millis, id: RequestId, response: ResponseKind) {
        each!(self, m => m.handle_response(now, id, response))
    }

    /// See [`Member::handle_failure`].
    pub fn handle_failure(&mut self, now: Millis, id: RequestId, failure: RequestFailure) {
        each!(self, m => m.handle_failure(now, id, failure))
    }

    /// See [`Member::poll_timeout`].
    pub fn poll_timeout(&self) -> Option<Millis> {
        each!(self, m => m.poll_timeout())
    }

    /// See [`Member::handle_timeout`].
    ///
    /// Afterwards no timer is due at `now` any more ([`Self::poll_timeout`] is later), so a host
    /// never fires twice at one instant.
    pub fn handle_timeout(&mut self, now: Millis) {
        each!(self, m => m.handle_timeout(now));
        debug_assert!(
            self.poll_timeout().is_none_or(|t| t > now),
            "a member timer is still due at {now} after the timers fired"
        );
    }

    /// See [`Member::poll_output`].
    pub fn poll_output(&mut self) -> Option<MemberOutput> {
        each!(self, m => m.poll_output())
    }

    /// See [`Member::is_finished`].
    pub fn is_finished(&self) -> bool {
        each!(self, m => m.is_finished())
    }

    /// See [`Member::inject`].
    pub fn inject(&mut self, now: Millis, fault: MemberFault) {
        each!(self, m => m.inject(now, fault))
    }

    /// See [`Member::heal_pending_faults`].
    pub fn heal_pending_faults(&mut self) {
        each!(self, m => m.heal_pending_faults())
    }

    /// The member id (empty for a classic member before the coordinator gave one).
    pub fn member_id(&self) -> &str {
        each!(self, m => m.member_id())
    }
}

/// The built-in members keep the same contract as a plug-in one: a built-in member can run as a
/// plug-in (which is how the plug-in path is proved faithful).
impl SansIoMember for GroupMember {
    fn start(&mut self, now: Millis) {
        GroupMember::start(self, now)
    }
    fn leave(&mut self, now: Millis) {
        GroupMember::leave(self, now)
    }
    fn handle_response(&mut self, now: Millis, id: RequestId, response: ResponseKind) {
        GroupMember::handle_response(self, now, id, response)
    }
    fn handle_failure(&mut self, now: Millis, id: RequestId, failure: RequestFailure) {
        GroupMember::handle_failure(self, now, id, failure)
    }
    fn poll_timeout(&self) -> Option<Millis> {
        GroupMember::poll_timeout(self)
    }
    fn handle_timeout(&mut self, now: Millis) {
        GroupMember::handle_timeout(self, now)
    }
    fn poll_output(&mut self) -> Option<MemberOutput> {
        GroupMember::poll_output(self)
    }
    fn is_finished(&self) -> bool {
        GroupMember::is_finished(self)
    }
    fn member_id(&self) -> &str {
        GroupMember::member_id(self)
    }
    fn inject(&mut self, now: Millis, fault: MemberFault) {
        GroupMember::inject(self, now, fault)
    }
    fn heal_pending_faults(&mut self) {
        GroupMember::heal_pending_faults(self)
    }
}
