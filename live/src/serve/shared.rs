//! What every connection and admin hook of a served cluster shares: the partition logs, the
//! cluster metadata, the offsets log, the history, the fetch wake-up and the nemesis's gate.

use groupsim_coordinator::cluster::SharedClusterState;
use groupsim_coordinator::log::SharedLogs;
use groupsim_coordinator::offsets_log::SharedOffsetsLog;
use groupsim_wire::Millis;

use super::gate::Gate;
use super::recorder::Recorder;

/// What every connection and admin hook of a cluster shares.
pub(super) struct Shared {
    pub(super) logs: SharedLogs,
    pub(super) state: SharedClusterState,
    pub(super) offsets_log: SharedOffsetsLog,
    /// The cluster's history (its clock starts with the cluster).
    pub(super) recorder: Recorder,
    /// The nemesis's hold on the wire.
    pub(super) gate: Gate,
}

impl Shared {
    pub(super) fn now(&self) -> Millis {
        self.recorder.now()
    }
}
