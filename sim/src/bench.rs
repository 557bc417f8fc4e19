//! `groupsim bench`: throughput of standard scenarios (seeds per second, simulated seconds per
//! wall second, events per second). Wall-clock time is read here, outside any simulation.
//! (Being written.)

/// Runs the benchmark and returns its report.
pub fn run(seeds: u64) -> Result<String, crate::world::WorldError> {
    let _ = seeds;
    Ok("bench: not implemented yet\n".into())
}
