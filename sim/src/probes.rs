//! The world's coverage probes: situations the simulation itself creates (which fault struck
//! in which group state, which trigger fired). The cores keep their own catalogues
//! (`groupsim_coordinator::probes`, `groupsim_member::probes`); [`crate::coverage`] reads all.

groupsim_wire::probes! {
    /// A fault struck while the group was in a given state (detail `fault@State`): faults in
    /// CompletingRebalance and PreparingRebalance are where rebalance bugs live.
    FAULT_IN_GROUP_STATE = optional "world.fault.in_group_state":
        "a fault applied in a given group state (detail: fault@state)";
    /// A fault struck while the group was in CompletingRebalance (leader computing or sending
    /// the assignment): the window time-random faults almost never hit.
    FAULT_DURING_COMPLETING_REBALANCE = required "world.fault.during_completing_rebalance":
        "a fault applied while the group is in CompletingRebalance";
    /// A fault struck while the group was in PreparingRebalance (members rejoining).
    FAULT_DURING_PREPARING_REBALANCE = required "world.fault.during_preparing_rebalance":
        "a fault applied while the group is in PreparingRebalance";
    /// A fault struck while the group's coordinator was still loading it.
    FAULT_DURING_LOAD = required "world.fault.during_coordinator_load":
        "a fault applied while the group's coordinator is loading it";
    /// A broker answered a group request with an injected error (detail `api:error`): the
    /// error paths a correct client must take, reached on purpose rather than by timing.
    INJECTED_ERROR_ANSWERED = required "world.broker.injected_error":
        "a broker answered a group request with an injected error (detail: api:error)";
    /// The nemesis started a rebalance of the group, as a membership change elsewhere would.
    FORCED_REBALANCE = required "world.fault.forced_rebalance":
        "the nemesis forced a rebalance of the group";
    /// A member paused for less than its heartbeat interval (a GC pause): it comes back before
    /// anyone could notice.
    PAUSE_BELOW_HEARTBEAT = required "world.member.pause_below_heartbeat":
        "a member paused for less than its heartbeat interval";
    /// A member paused for longer than its heartbeat interval but less than its session: it
    /// comes back inside its session, after the group may have moved on.
    PAUSE_WITHIN_SESSION = required "world.member.pause_within_session":
        "a member paused past its heartbeat interval but within its session";
    /// A frame on a lossy link was lost and retransmitted: it lands a retransmission timeout
    /// late, holding back its connection's later frames.
    NET_RETRANSMITTED = required "world.net.retransmitted":
        "a frame was lost and retransmitted (late, not lost)";
    /// A one-way partition lost frames in its direction (the other direction still delivers).
    NET_ONE_WAY_LOST = required "world.net.one_way_lost":
        "a one-way partition lost frames in flight or sent its way";
    /// A frame waited for the connection's window (a bounded buffer) before it was sent.
    NET_WINDOW_HELD = required "world.net.window_held":
        "a frame waited for its connection's window to open";
    /// A run drew the order of its same-instant events from the seed.
    NET_TIES_DRAWN = required "world.net.ties_drawn":
        "a run drew the order of same-instant events from its seed";
    /// A broker closed a connection idle past `connections.max.idle.ms`.
    BROKER_IDLE_CLOSE = required "world.broker.idle_close":
        "a broker closed a connection idle past connections.max.idle.ms";
    /// The producer paused (a traffic lull).
    PRODUCER_LULL = required "world.producer.lull":
        "the producer produced nothing for a while (a traffic lull)";
    /// An event trigger fired (detail: the trigger's event).
    TRIGGER_FIRED = optional "world.trigger.fired":
        "an event-triggered fault fired (detail: the event)";
}
