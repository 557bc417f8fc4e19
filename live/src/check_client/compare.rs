//! `check-client --compare A B`: two releases of one client on the same seeds, commit modes
//! and fault schedules, and per seed where their verdicts differ — the question a maintainer
//! asks before a release ("does B break what A got right?") and a user asks before an
//! upgrade. Each seed runs A, then B, so both meet the same schedule close together in time.
//! Both draw the seed's assignor from what both releases offer, so a seed runs the same
//! assignor on each. A regression is a seed B fails that A passed.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::capabilities::Capabilities;
use super::clients::protocol_name;
use super::error::CheckError;
use super::run::{self, Outcome};
use super::spec::ClientSpec;
use super::{base_interpreters, modes, prepare, settings, spec, CheckArgs};

/// One side's verdict on one seed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Side {
    /// The release's version as its adapters reported it.
    pub version: String,
    /// Anomaly classes, each once (empty: the seed passed).
    pub classes: Vec<String>,
    /// The first anomaly, rendered, if any.
    pub first: Option<String>,
    /// Where the run's logs (and on failure its history and timelines) are.
    pub dir: PathBuf,
}

impl Side {
    fn of(outcome: &Outcome) -> Result<Side, CheckError> {
        let first = outcome
            .verdict
            .anomalies
            .first()
            .map(|a| format!("{} at t={}ms: {}", a.class, a.at_ms, a.message));
        if first.is_some() {
            run::write_artifacts(outcome)?;
        }
        Ok(Side {
            version: outcome.version.clone(),
            classes: run::classes(&outcome.verdict),
            first,
            dir: outcome.dir.clone(),
        })
    }

    fn passed(&self) -> bool {
        self.classes.is_empty()
    }

    fn verdict(&self) -> String {
        if self.passed() {
            "ok".into()
        } else {
            format!("FAIL {}", self.classes.join(" "))
        }
    }
}

/// One seed of one mode on both sides.
#[derive(Clone, Debug)]
pub struct Pair {
    pub mode: String,
    pub seed: u64,
    pub assignor: String,
    pub a: Side,
    pub b: Side,
}

impl Pair {
    /// B fails a seed A passed.
    pub fn regressed(&self) -> bool {
        self.a.passed() && !self.b.passed()
    }

    /// A fails a seed B passed.
    pub fn fixed(&self) -> bool {
        !self.a.passed() && self.b.passed()
    }

    /// The verdicts differ (in passing, or in the anomaly classes found).
    pub fn differs(&self) -> bool {
        self.a.classes != self.b.classes
    }
}

/// A whole comparison.
#[derive(Clone, Debug)]
pub struct Comparison {
    pub a: ClientSpec,
    pub b: ClientSpec,
    /// What both offer: the modes run and the assignors drawn from.
    pub common: Capabilities,
    pub pairs: Vec<Pair>,
}

impl Comparison {
    /// Whether B fails any seed A passed (the command's exit 1).
    pub fn regressed(&self) -> bool {
        self.pairs.iter().any(Pair::regressed)
    }
}

/// Runs the comparison `args.compare` names; `progress` gets each seed's lines as it finishes.
pub fn compare(
    args: &CheckArgs,
    root: &Path,
    out_dir: PathBuf,
    mut progress: impl FnMut(&str),
) -> Result<Comparison, CheckError> {
    let [a, b] = match args.compare.as_deref() {
        Some([a, b]) => [spec::parse(a)?, spec::parse(b)?],
        _ => return Err(CheckError::Setting("--compare takes two releases, A and B".into())),
    };
    if a.kind.name != b.kind.name {
        return Err(CheckError::Setting(format!(
            "--compare {a} {b}: compare two releases of one client"
        )));
    }
    let base = base_interpreters(args, root)?;
    let mut cache = None;
    let launch = |s: &ClientSpec, cache: &mut _| {
        prepare(s, &base, args, cache)?.ok_or_else(|| {
            CheckError::Setting(format!(
                "--compare {s}: not installed (name a release, {}{}VERSION, to install one)",
                s.kind.name,
                ClientSpec::separator(s.kind.runtime)
            ))
        })
    };
    let mut la = launch(&a, &mut cache)?;
    let mut lb = launch(&b, &mut cache)?;
    let common = la.capabilities.common(&lb.capabilities);
    let protocol = protocol_name(args.group_protocol);
    progress(&format!(
        "A {a}: {} {}, offers {}\nB {b}: {} {}, offers {}\nboth: {}\n",
        la.capabilities.client,
        la.capabilities.version,
        la.capabilities.summary(),
        lb.capabilities.client,
        lb.capabilities.version,
        lb.capabilities.summary(),
        common.summary()
    ));
    if common.assignors(args.group_protocol).is_empty() {
        return Err(CheckError::Setting(format!(
            "--compare {a} {b}: they share no assignor for group.protocol={protocol}"
        )));
    }
    la.capabilities = common.clone();
    lb.capabilities = common.clone();
    let modes = modes(&la, args.mode.as_deref())?;
    let base_settings = settings(args, out_dir);
    let side_settings = |tag: &str, s: &ClientSpec| run::Settings {
        out_dir: base_settings.out_dir.join(format!("compare-{tag}-{s}")),
        ..base_settings.clone()
    };
    let (sa, sb) = (side_settings("a", &a), side_settings("b", &b));
    let mut pairs = Vec::new();
    for mode in &modes {
        for seed in args.start..args.start + args.seeds {
            let assignor = common.assignor_for(args.group_protocol, seed).unwrap_or_default();
            let a_side = Side::of(&run::run_seed(&la, mode, seed, &sa)?)?;
            let b_side = Side::of(&run::run_seed(&lb, mode, seed, &sb)?)?;
            let pair =
                Pair { mode: mode.clone(), seed, assignor: assignor.into(), a: a_side, b: b_side };
            progress(&pair_report(&pair, protocol));
            pairs.push(pair);
        }
    }
    Ok(Comparison { a, b, common, pairs })
}

/// One seed's lines: both verdicts, and for a side that failed its first anomaly.
fn pair_report(p: &Pair, protocol: &str) -> String {
    let mark = if p.regressed() {
        "  <- B fails a seed A passed"
    } else if p.fixed() {
        "  <- B passes a seed A failed"
    } else if p.differs() {
        "  <- the anomalies differ"
    } else {
        ""
    };
    let mut out = format!(
        "{protocol} {} {} seed {}: A {}, B {}{mark}\n",
        p.mode,
        p.assignor,
        p.seed,
        p.a.verdict(),
        p.b.verdict()
    );
    if p.differs() {
        for (tag, side) in [("A", &p.a), ("B", &p.b)] {
            if let Some(first) = &side.first {
                let _ = writeln!(out, "  {tag} first anomaly: {first}");
                let _ =
                    writeln!(out, "  {tag} history, trace and timelines: {}", side.dir.display());
            }
        }
    }
    out
}

/// The summary after every seed: how many differ, and which way.
pub fn summary(c: &Comparison) -> String {
    let list = |f: fn(&Pair) -> bool| -> Vec<String> {
        c.pairs.iter().filter(|p| f(p)).map(|p| format!("{} seed {}", p.mode, p.seed)).collect()
    };
    let version = |pick: fn(&Pair) -> &Side| {
        c.pairs.first().map(|p| pick(p).version.clone()).unwrap_or_default()
    };
    let (regressed, fixed) = (list(Pair::regressed), list(Pair::fixed));
    let other = list(|p| p.differs() && !p.regressed() && !p.fixed());
    let show =
        |v: &[String]| if v.is_empty() { String::new() } else { format!(" ({})", v.join(", ")) };
    let mut out = format!(
        "compare A {} ({}) with B {} ({}): {} seed runs, verdicts differ on {}\n",
        c.a,
        version(|p| &p.a),
        c.b,
        version(|p| &p.b),
        c.pairs.len(),
        c.pairs.iter().filter(|p| p.differs()).count()
    );
    let _ = writeln!(out, "  B fails {} that A passed{}", regressed.len(), show(&regressed));
    let _ = writeln!(out, "  B passes {} that A failed{}", fixed.len(), show(&fixed));
    let _ = writeln!(out, "  both fail {} with different anomalies{}", other.len(), show(&other));
    out.push_str(
        "real clients and real time make a seed repeatable (same schedule), not bit-exact\n",
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn side(classes: &[&str]) -> Side {
        Side { classes: classes.iter().map(|c| c.to_string()).collect(), ..Side::default() }
    }

    fn pair(a: &[&str], b: &[&str]) -> Pair {
        Pair { mode: "sync".into(), seed: 3, assignor: "range".into(), a: side(a), b: side(b) }
    }

    #[test]
    fn a_seed_b_fails_and_a_passed_is_a_regression_and_the_only_one() {
        assert!(pair(&[], &["lost-record"]).regressed());
        assert!(!pair(&["lost-record"], &[]).regressed() && pair(&["lost-record"], &[]).fixed());
        let both = pair(&["stuck"], &["lost-record"]);
        assert!(!both.regressed() && !both.fixed() && both.differs());
        assert!(!pair(&["stuck"], &["stuck"]).differs());
    }

    #[test]
    fn a_differing_seed_shows_both_verdicts_and_the_first_anomaly() {
        let mut p = pair(&[], &["lost-record"]);
        p.b.first = Some("lost-record at t=5ms: orders-0 offset 3".into());
        let text = pair_report(&p, "classic");
        assert!(text.starts_with("classic sync range seed 3: A ok, B FAIL lost-record"), "{text}");
        assert!(text.contains("B fails a seed A passed"), "{text}");
        assert!(text.contains("B first anomaly: lost-record at t=5ms"), "{text}");
    }
}
