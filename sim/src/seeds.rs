//! Which seeds a test runs: `GROUPSIM_SEED=<n>` exactly that one (what a failure tells you to
//! run), `GROUPSIM_SEEDS=<count>` from `GROUPSIM_SEED_START` (default 0), else the test's own
//! count.

/// The seeds a scenario test should run, from the environment or `default_count`.
pub fn seeds(default_count: u64) -> Vec<u64> {
    if let Some(seed) = env_u64("GROUPSIM_SEED") {
        return vec![seed];
    }
    let count = env_u64("GROUPSIM_SEEDS").unwrap_or(default_count);
    let start = env_u64("GROUPSIM_SEED_START").unwrap_or(0);
    (start..start + count).collect()
}

fn env_u64(name: &str) -> Option<u64> {
    let raw = std::env::var(name).ok()?;
    match raw.trim().parse() {
        Ok(v) => Some(v),
        Err(_) => panic!("{name}={raw:?} is not a whole number"),
    }
}
