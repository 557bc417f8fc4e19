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
    /// An event trigger fired (detail: the trigger's event).
    TRIGGER_FIRED = optional "world.trigger.fired":
        "an event-triggered fault fired (detail: the event)";
}
