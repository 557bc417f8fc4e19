//! The soak's verdict: each goal judged on its own, so a failure names which goal failed.

use super::clients::LoadStats;
use super::sample::Sample;

/// How far a measure may drift between the first sample after warm-up and the last.
pub const FLAT_TOLERANCE: f64 = 0.10;

/// The shortest span, in seconds from the first sample after warm-up to the last, over which
/// RSS and descriptors are judged flat. Over a shorter one the allocator's and the runtime's
/// own settling moves RSS by as much as the tolerance (docs/serve.md, "Soak"), so a short run
/// (CI's) prints the figures without a verdict on them.
pub const MIN_TREND_S: f64 = 600.0;
/// Descriptor counts are small: a drift of this many is within noise whatever the percentage
/// (a connection the kernel has not yet reported closed, a log file rotated).
pub const FD_SLACK: u64 = 2;

/// One goal's outcome.
#[derive(Clone, Debug, PartialEq)]
pub struct Goal {
    /// What the goal is, in a few words.
    pub name: &'static str,
    /// Whether it was met (when it was judged).
    pub passed: bool,
    /// Whether the run could judge it: resources are judged only over a span long enough for
    /// growth to show apart from warm-up (`MIN_TREND_S`); a shorter run prints the figures.
    pub judged: bool,
    /// The figures that decided it.
    pub detail: String,
}

/// The first sample at or after `warmup_s` and the last sample, when they are two different
/// samples.
pub fn baseline_and_last(samples: &[Sample], warmup_s: f64) -> Option<(&Sample, &Sample)> {
    let first = samples.iter().position(|s| s.at_s >= warmup_s)?;
    let last = samples.len() - 1;
    (first < last).then(|| (&samples[first], &samples[last]))
}

/// Whether `last` is within `tolerance` (a fraction of `base`) or `slack` of `base`.
pub fn flat(base: u64, last: u64, tolerance: f64, slack: u64) -> bool {
    let allowed = ((base as f64 * tolerance).floor() as u64).max(slack);
    last.abs_diff(base) <= allowed
}

/// Relative change from `base` to `last`, in percent.
fn change(base: u64, last: u64) -> f64 {
    if base == 0 {
        return 0.0;
    }
    (last as f64 - base as f64) / base as f64 * 100.0
}

/// RSS and descriptors after warm-up.
pub fn resource_goals(samples: &[Sample], warmup_s: f64) -> Vec<Goal> {
    let Some((base, last)) = baseline_and_last(samples, warmup_s) else {
        let detail = format!(
            "{} sample(s), fewer than two after the {warmup_s:.0} s warm-up: run longer or \
             sample more often",
            samples.len()
        );
        return vec![
            Goal { name: "RSS flat", passed: false, judged: true, detail: detail.clone() },
            Goal { name: "descriptors flat", passed: false, judged: true, detail },
        ];
    };
    let judged = last.at_s - base.at_s >= MIN_TREND_S;
    let (b, l) = (base.rss_kib, last.rss_kib);
    let rss = Goal {
        name: "RSS flat",
        passed: flat(b, l, FLAT_TOLERANCE, 0),
        judged,
        detail: format!(
            "{b} KiB at {:.0} s, {l} KiB at {:.0} s ({:+.1}%, allowed ±{:.0}%)",
            base.at_s,
            last.at_s,
            change(b, l),
            FLAT_TOLERANCE * 100.0
        ),
    };
    let (b, l) = (base.held_fds(), last.held_fds());
    let fds = Goal {
        name: "descriptors flat",
        passed: flat(b, l, FLAT_TOLERANCE, FD_SLACK),
        judged,
        detail: format!(
            "{b} at {:.0} s, {l} at {:.0} s beyond the loopback clients' open connections \
             (allowed ±{:.0}% or ±{FD_SLACK})",
            base.at_s,
            last.at_s,
            FLAT_TOLERANCE * 100.0
        ),
    };
    vec![rss, fds]
}

/// Every valid request answered in time, every malformed frame closed, no client cut off.
pub fn load_goal(stats: &LoadStats, clients: u32) -> Goal {
    let passed = stats.unanswered == 0
        && stats.bad_answers == 0
        && stats.malformed_not_closed == 0
        && stats.connect_failures == 0
        && stats.cut_off == 0
        && stats.clients_done == u64::from(clients);
    Goal {
        name: "loopback clients served",
        passed,
        judged: true,
        detail: format!(
            "{} of {clients} clients done, {} connect failures, {} cut off; {} valid requests: \
             {} answered, {} unanswered, {} bad answers; {} malformed frames: {} closed, {} not; \
             {} half-frames",
            stats.clients_done,
            stats.connect_failures,
            stats.cut_off,
            stats.sent,
            stats.answered,
            stats.unanswered,
            stats.bad_answers,
            stats.malformed_sent,
            stats.malformed_closed,
            stats.malformed_not_closed,
            stats.half_frames
        ),
    }
}

/// Whether every goal passed.
pub fn all_passed(goals: &[Goal]) -> bool {
    goals.iter().all(|g| g.passed || !g.judged)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(at_s: f64, rss_kib: u64, fds: u64, load_connections: u64) -> Sample {
        Sample {
            at_s,
            rss_kib,
            fds,
            load_connections,
            answered: 0,
            p50_ms: 0.0,
            p99_ms: 0.0,
            max_ms: 0.0,
        }
    }

    #[test]
    fn flat_allows_the_tolerance_or_the_slack_whichever_is_larger() {
        assert!(flat(1000, 1100, 0.10, 0));
        assert!(flat(1000, 900, 0.10, 0));
        assert!(!flat(1000, 1101, 0.10, 0));
        assert!(flat(10, 12, 0.10, 2), "the slack covers small counts");
        assert!(!flat(10, 13, 0.10, 2));
    }

    #[test]
    fn resources_are_judged_only_over_a_long_enough_span() {
        let short = [sample(20.0, 1000, 10, 0), sample(60.0, 1200, 10, 0)];
        let goals = resource_goals(&short, 10.0);
        assert!(goals.iter().all(|g| !g.judged), "{goals:?}");
        assert!(all_passed(&goals), "a goal not judged fails nothing");
        let long = [sample(20.0, 1000, 10, 0), sample(20.0 + MIN_TREND_S, 1200, 10, 0)];
        let goals = resource_goals(&long, 10.0);
        assert!(goals.iter().all(|g| g.judged));
        assert!(!all_passed(&goals), "RSS grew 20%");
    }

    #[test]
    fn the_baseline_is_the_first_sample_after_warm_up() {
        let samples =
            [sample(10.0, 500, 9, 0), sample(20.0, 1000, 10, 3), sample(30.0, 1050, 12, 4)];
        let (base, last) = baseline_and_last(&samples, 15.0).unwrap();
        assert_eq!((base.at_s, last.at_s), (20.0, 30.0));
        assert!(baseline_and_last(&samples, 25.0).is_none(), "only one sample after warm-up");
        let goals = resource_goals(&samples, 15.0);
        assert!(all_passed(&goals), "{goals:?}");
        let grown = [sample(20.0, 1000, 10, 0), sample(30.0, 1200, 30, 0)];
        let goals = resource_goals(&grown, 15.0);
        assert!(goals.iter().all(|g| !g.passed), "{goals:?}");
        assert!(goals[0].detail.contains("+20.0%"), "{}", goals[0].detail);
        let too_few = resource_goals(&samples[..1], 0.0);
        assert!(too_few.iter().all(|g| !g.passed && g.detail.contains("fewer than two")));
    }

    #[test]
    fn the_load_goal_fails_on_any_unanswered_request_or_open_malformed_connection() {
        let ok = LoadStats { clients_done: 3, sent: 5, answered: 5, ..LoadStats::default() };
        assert!(load_goal(&ok, 3).passed);
        assert!(!load_goal(&LoadStats { unanswered: 1, ..ok.clone() }, 3).passed);
        assert!(!load_goal(&LoadStats { malformed_not_closed: 1, ..ok.clone() }, 3).passed);
        assert!(!load_goal(&ok, 4).passed, "a client that never finished");
    }
}
