//! What a soak is asked to do: its command-line arguments, checked, and the plan they make
//! (duration, sampling interval, warm-up).

use std::path::PathBuf;
use std::time::Duration;

use super::error::SoakError;

/// Longest soak the command accepts, in minutes (a day).
pub const MAX_MINUTES: u64 = 24 * 60;
/// Most loopback clients at once (each is one of serve's descriptors, and one of ours).
pub const MAX_CONCURRENCY: usize = 500;

/// `groupsim soak`: command-line arguments.
#[derive(clap::Args, Debug, Clone)]
pub struct SoakArgs {
    /// How long serve runs under load, in minutes.
    #[arg(long)]
    pub minutes: u64,
    /// Seconds between samples (default: 60, or 10 for soaks shorter than 10 minutes).
    #[arg(long)]
    pub sample_secs: Option<u64>,
    /// Loopback clients over the whole soak, their starts spread evenly.
    #[arg(long, default_value_t = 1_000)]
    pub clients: u32,
    /// Most loopback clients connected at once.
    #[arg(long, default_value_t = 50)]
    pub concurrency: usize,
    /// kafka-python consumers in the real group.
    #[arg(long, default_value_t = 3)]
    pub consumers: u32,
    /// A valid request unanswered this long, or a connection still open this long after a
    /// malformed frame, is a failure.
    #[arg(long, default_value_t = 30)]
    pub request_timeout_secs: u64,
    /// Seed of the loopback clients' plans.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// The Python with kafka-python (default: the one .ci/install-real-clients.sh installs).
    #[arg(long)]
    pub python: Option<PathBuf>,
    /// The folder of the client adapters (`python/member_kafka_python.py`).
    #[arg(long, default_value = "clients")]
    pub clients_dir: PathBuf,
    /// Where the history, logs and plot go.
    #[arg(long, default_value = "target/groupsim/soak")]
    pub out: PathBuf,
    /// Write the SVG plot here (default: `soak.svg` in --out).
    #[arg(long)]
    pub svg: Option<PathBuf>,
}

/// A soak's settings, checked.
#[derive(Clone, Debug)]
pub struct SoakPlan {
    /// How long the load runs and samples are taken.
    pub duration: Duration,
    /// Between samples.
    pub sample_every: Duration,
    /// Samples before this are the warm-up, not judged.
    pub warmup: Duration,
}

impl SoakArgs {
    /// The plan these arguments describe, or a message naming the argument that is wrong.
    pub fn plan(&self) -> Result<SoakPlan, SoakError> {
        let bad = |m: String| Err(SoakError::Setting(m));
        if !(1..=MAX_MINUTES).contains(&self.minutes) {
            return bad(format!("--minutes {} must be between 1 and {MAX_MINUTES}", self.minutes));
        }
        let duration = Duration::from_secs(self.minutes * 60);
        let every = self.sample_secs.unwrap_or(if self.minutes < 10 { 10 } else { 60 });
        if every == 0 || every * 2 > duration.as_secs() {
            return bad(format!(
                "--sample-secs {every} must be at least 1 and at most half the soak ({} s)",
                duration.as_secs() / 2
            ));
        }
        if self.clients == 0 {
            return bad("--clients must be at least 1".into());
        }
        if !(1..=MAX_CONCURRENCY).contains(&self.concurrency) {
            return bad(format!(
                "--concurrency {} must be between 1 and {MAX_CONCURRENCY}",
                self.concurrency
            ));
        }
        if !(1..=10).contains(&self.consumers) {
            return bad(format!("--consumers {} must be between 1 and 10", self.consumers));
        }
        if !(1..=600).contains(&self.request_timeout_secs) {
            return bad(format!(
                "--request-timeout-secs {} must be between 1 and 600",
                self.request_timeout_secs
            ));
        }
        // A fifth of the soak warms up, but never less than one sample.
        let warmup = (duration / 5).max(Duration::from_secs(every));
        Ok(SoakPlan { duration, sample_every: Duration::from_secs(every), warmup })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(minutes: u64) -> SoakArgs {
        SoakArgs {
            minutes,
            sample_secs: None,
            clients: 1_000,
            concurrency: 50,
            consumers: 3,
            request_timeout_secs: 30,
            seed: 0,
            python: None,
            clients_dir: "clients".into(),
            out: "target/groupsim/soak".into(),
            svg: None,
        }
    }

    fn error_of(a: SoakArgs) -> String {
        a.plan().expect_err("refused").to_string()
    }

    #[test]
    fn short_soaks_sample_often_and_long_ones_every_minute() {
        let p = args(1).plan().unwrap();
        assert_eq!((p.duration.as_secs(), p.sample_every.as_secs()), (60, 10));
        assert_eq!(p.warmup.as_secs(), 12);
        let p = args(30).plan().unwrap();
        assert_eq!((p.sample_every.as_secs(), p.warmup.as_secs()), (60, 360));
    }

    #[test]
    fn bad_soak_arguments_get_a_message_naming_the_argument() {
        let cases = [
            (args(0), "--minutes 0 must be between 1"),
            (args(MAX_MINUTES + 1), "--minutes 1441"),
            (SoakArgs { sample_secs: Some(0), ..args(1) }, "--sample-secs 0"),
            (SoakArgs { sample_secs: Some(31), ..args(1) }, "at most half the soak"),
            (SoakArgs { clients: 0, ..args(1) }, "--clients must be at least 1"),
            (SoakArgs { concurrency: 0, ..args(1) }, "--concurrency 0"),
            (SoakArgs { consumers: 0, ..args(1) }, "--consumers 0"),
            (SoakArgs { request_timeout_secs: 0, ..args(1) }, "--request-timeout-secs 0"),
        ];
        for (a, expected) in cases {
            let message = error_of(a.clone());
            assert!(message.contains(expected), "{a:?}: {message:?} lacks {expected:?}");
        }
    }
}
