//! [`WorldError`]: a run that could not be carried out.

use groupsim_wire::Millis;

/// A run that could not be carried out (not an anomaly: the harness itself failed).
#[derive(Debug, thiserror::Error)]
pub enum WorldError {
    /// The simulation reported an error (a host's software failed).
    #[error("simulation failed at t={at_ms}ms: {reason}")]
    Sim { at_ms: Millis, reason: String },
    /// The run's code panicked (a core, a plug-in member, the checker): the panic's message
    /// and where it happened. The seed replays the same panic.
    #[error("the run panicked: {message}")]
    Panicked { message: String },
    /// The scenario is inconsistent.
    #[error("invalid scenario {name}: {reason}")]
    InvalidScenario { name: String, reason: String },
}
