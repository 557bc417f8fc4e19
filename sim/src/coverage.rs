//! Coverage: which probes a sweep's seeds reached. A probe nobody hits is a blind spot: the fix
//! is a scenario or a trigger that reaches it, not deleting the probe. `groupsim sweep
//! --coverage` prints the table after a sweep; `groupsim coverage` sweeps the default catalogue
//! and fails when a required probe was never hit.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use groupsim_wire::probe::Probe;

use crate::sweep::SweepRow;

/// Every probe catalogue, by crate: the coordinator's, the member's and the world's.
pub fn catalogue() -> Vec<&'static Probe> {
    let mut all: Vec<&'static Probe> = Vec::new();
    all.extend(groupsim_coordinator::probes::ALL.iter().copied());
    all.extend(groupsim_member::probes::ALL.iter().copied());
    all.extend(crate::probes::ALL.iter().copied());
    all
}

/// How many seeds hit each probe over a sweep.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Coverage {
    /// Seeds run.
    pub seeds: usize,
    /// Probe name (and `name:detail` for family members) -> seeds that hit it.
    pub hits: BTreeMap<String, usize>,
}

impl Coverage {
    /// Coverage summed over a sweep's rows.
    pub fn from_rows(rows: &[SweepRow]) -> Self {
        let mut c = Coverage::default();
        for row in rows {
            c.seeds += row.seeds;
            for (name, n) in &row.probe_seeds {
                *c.hits.entry(name.clone()).or_insert(0) += n;
            }
        }
        c
    }

    /// Seeds that hit `probe` (any member, for a family).
    pub fn seeds_hitting(&self, probe: &Probe) -> usize {
        self.hits.get(probe.name).copied().unwrap_or(0)
    }

    /// Required probes no seed hit, in catalogue order.
    pub fn unhit_required(&self) -> Vec<&'static Probe> {
        catalogue().into_iter().filter(|p| p.required && self.seeds_hitting(p) == 0).collect()
    }

    /// Probes (required or not) no seed hit, in catalogue order.
    pub fn unhit(&self) -> Vec<&'static Probe> {
        catalogue().into_iter().filter(|p| self.seeds_hitting(p) == 0).collect()
    }

    /// The table: every probe with the seeds that hit it, family members indented below their
    /// family, then the count of blind spots.
    pub fn table(&self) -> String {
        let mut out = format!("coverage over {} seeds\n", self.seeds);
        let _ = writeln!(out, "{:>7}  {:<3} {:<52} description", "seeds", "req", "probe");
        for p in catalogue() {
            let n = self.seeds_hitting(p);
            let req = if p.required { "yes" } else { "" };
            let mark = if n == 0 { "  <- never hit" } else { "" };
            let _ = writeln!(out, "{n:>7}  {req:<3} {:<52} {}{mark}", p.name, p.description);
            let prefix = format!("{}:", p.name);
            for (name, n) in self.hits.range(prefix.clone()..) {
                let Some(detail) = name.strip_prefix(&prefix) else { break };
                let _ = writeln!(out, "{n:>7}        {detail}");
            }
        }
        let unhit = self.unhit();
        let required = self.unhit_required();
        let _ = writeln!(
            out,
            "{} probes, {} never hit ({} of them required)",
            catalogue().len(),
            unhit.len(),
            required.len()
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(seeds: usize, hits: &[(&str, usize)]) -> SweepRow {
        SweepRow {
            scenario: "s".into(),
            seeds,
            passed: seeds,
            failed: 0,
            rebalances_per_seed: 0.0,
            simulated_seconds_per_wall_second: 0.0,
            seeds_per_second: 0.0,
            failures: vec![],
            replay: None,
            probe_seeds: hits.iter().map(|(n, c)| (n.to_string(), *c)).collect(),
            rebalances: 0,
            simulated_ms: 0,
            wall_seconds: 1.0,
            hazard_seeds: vec![],
        }
    }

    #[test]
    fn rows_sum_into_seed_counts_and_unhit_required_probes_are_listed() {
        let family = crate::probes::FAULT_IN_GROUP_STATE.name;
        let during = crate::probes::FAULT_DURING_COMPLETING_REBALANCE.name;
        let c = Coverage::from_rows(&[
            row(10, &[(during, 3), (family, 2), (&format!("{family}:member_crash@Stable"), 2)]),
            row(5, &[(during, 1)]),
        ]);
        assert_eq!(c.seeds, 15);
        assert_eq!(c.seeds_hitting(&crate::probes::FAULT_DURING_COMPLETING_REBALANCE), 4);
        let unhit: Vec<&str> = c.unhit_required().iter().map(|p| p.name).collect();
        assert!(!unhit.contains(&during));
        assert!(unhit.contains(&crate::probes::FAULT_DURING_LOAD.name));
        let table = c.table();
        assert!(table.contains("member_crash@Stable"), "{table}");
        assert!(table.contains("<- never hit"), "{table}");
    }
}
