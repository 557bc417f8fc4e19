//! The summary's text: a heading, one block per rebalance, a closing block.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use sha2::{Digest, Sha256};

use super::items::{Item, What};
use super::names::{natural_key, Names};
use super::story::{Kind, Outcome, Story, Tally, Unit};
use groupsim_checker::Verdict;
use groupsim_history::partition_list as partitions;

/// Lines wrap before this width.
const WIDTH: usize = 100;
/// A rebalance with more members than this shows its assignment's shape, not one line each.
const LISTED_MEMBERS: usize = 12;
/// A list with more joins (or removals for one reason) than this counts them instead.
const LISTED_CHANGES: usize = 8;

/// Renders a story with the run's verdict.
pub(super) fn render(story: &Story, names: &Names, verdict: &Verdict) -> String {
    let mut out = String::new();
    let topics: Vec<String> =
        story.topics.iter().map(|(t, n)| format!("{t} ({n} partitions)")).collect();
    match &story.run {
        Some((scenario, seed)) => {
            let _ = writeln!(out, "{scenario} seed {seed}: topics {}", topics.join(", "));
        }
        None => {
            let _ = writeln!(out, "topics {}", topics.join(", "));
        }
    }
    if let Some(swarm) = &story.swarm {
        let words: Vec<String> = swarm.split_whitespace().map(str::to_string).collect();
        wrap(&mut out, "swarm: ", "    ", "", &words);
    }
    let groups: BTreeSet<&str> = story.units.iter().map(|u| u.group.as_str()).collect();
    let mut rest = &story.units[..];
    // Each group's latest block so far, to tell a rebalance that took over from an unsettled one.
    let mut previous: BTreeMap<&str, &Unit> = BTreeMap::new();
    while !rest.is_empty() {
        // A run of target epochs each superseded by the next is one block.
        let run = rest.iter().take_while(|u| superseded(u) && u.group == rest[0].group).count();
        let take = run.max(1);
        out.push('\n');
        let many = groups.len() > 1;
        let before = previous.get(rest[0].group.as_str()).copied();
        if run > 1 {
            let last = rest[run - 1].number;
            unit(&mut out, &merge(&rest[..run]), before, Some(last), names, many);
        } else {
            unit(&mut out, &rest[0], before, None, names, many);
        }
        previous.insert(&rest[0].group, &rest[take - 1]);
        rest = &rest[take..];
    }
    out.push('\n');
    if story.units.is_empty() {
        out.push_str("no rebalance\n");
    }
    list(&mut out, "", "after the last rebalance", &story.after, names);
    closing(&mut out, story, verdict);
    out
}

/// Whether a unit is a target epoch the group moved on from before it settled.
fn superseded(u: &Unit) -> bool {
    u.kind == Kind::TargetEpoch && matches!(u.outcome, Outcome::Superseded(_))
}

/// A run of superseded target epochs as one: the first one's start and why, everything else
/// that happened until the last one was superseded, the last one's members, all the commits.
fn merge(run: &[Unit]) -> Unit {
    let mut m = run[0].clone();
    let last = &run[run.len() - 1];
    for u in &run[1..] {
        m.during.extend(u.why.iter().cloned());
        m.during.extend(u.during.iter().cloned());
        for (id, t) in &u.commits {
            add(m.commits.entry(id.clone()).or_default(), t);
        }
    }
    m.outcome = last.outcome.clone();
    m.members = last.members.clone();
    m.assignment = last.assignment.clone();
    m
}

/// Adds one tally to another.
fn add(to: &mut Tally, t: &Tally) {
    to.accepted += t.accepted;
    for (e, n) in &t.refused {
        *to.refused.entry(e.clone()).or_insert(0) += n;
    }
}

/// One rebalance's block (`before`: the group's previous one; `last`: the last target epoch of
/// a merged run).
fn unit(
    out: &mut String,
    u: &Unit,
    before: Option<&Unit>,
    last: Option<i32>,
    names: &Names,
    name_groups: bool,
) {
    let what = match (u.kind, last) {
        (Kind::Generation, _) => format!("generation {}", u.number),
        (Kind::TargetEpoch, None) => format!("target epoch {}", u.number),
        (Kind::TargetEpoch, Some(l)) => format!("target epochs {}-{l}", u.number),
    };
    let group = if name_groups { format!("group {} ", u.group) } else { String::new() };
    let end = match &u.outcome {
        Outcome::Settled(t) => format!("{t} settled"),
        Outcome::Empty => format!("{} empty: no member left", u.formed_ms.unwrap_or(u.started_ms)),
        Outcome::Abandoned(t) => format!("{t} abandoned before sync"),
        Outcome::Interrupted(t, why) => format!("{t} interrupted: {why}"),
        Outcome::Superseded(t) if last.is_some() => {
            format!("{t} each superseded by the next group epoch")
        }
        Outcome::Superseded(t) => format!("{t} superseded by the next group epoch"),
        Outcome::Unsettled if u.formed_ms.is_none() => "unsettled at the end, never formed".into(),
        Outcome::Unsettled => "unsettled at the end".into(),
    };
    let mut how = Vec::new();
    if let Some(p) = &u.protocol {
        how.push(p.clone());
    }
    if let Some(l) = &u.leader {
        how.push(format!("leader {}", names.name(l)));
    }
    let how = if how.is_empty() { String::new() } else { format!(" ({})", how.join(", ")) };
    let _ = writeln!(out, "{group}{what}: {} -> {end}{how}", u.started_ms);
    let took_over = before.is_some_and(|b| b.end_ms() == Some(u.started_ms) && !b.settled());
    if u.why.is_empty() && !took_over {
        let what = match u.kind {
            // A known member's JoinGroup leaves no event of its own.
            Kind::Generation => "a member rejoined",
            Kind::TargetEpoch => "the group epoch moved",
        };
        let _ = writeln!(out, "  why: {what} (no join, leave or fault before it)");
    }
    list(out, "  ", "why", &u.why, names);
    list(out, "  ", "during", &u.during, names);
    members(out, u, names);
}

/// One row of a rebalance's member table.
#[derive(Default)]
struct Row {
    /// The member's partitions, if it is a member.
    partitions: Option<String>,
    /// Its commits under the rebalance.
    commits: Tally,
}

/// The members of a rebalance with their partitions and commits. A settled rebalance has a
/// row per member (or its assignment's shape, when large); one that did not settle lists its
/// members and who committed. Commits by an id that is not a member are shown under the
/// member of the same name (a static member's replacement, a restarted member), or apart.
fn members(out: &mut String, u: &Unit, names: &Names) {
    let mut ids: Vec<&str> = u.members.iter().map(String::as_str).collect();
    if let Some(a) = &u.assignment {
        ids.extend(a.keys().map(String::as_str).filter(|id| !u.members.iter().any(|m| m == id)));
    }
    let mut per_name: BTreeMap<String, usize> = BTreeMap::new();
    for id in &ids {
        *per_name.entry(names.name(id)).or_insert(0) += 1;
    }
    let label = |id: &str| {
        let name = names.name(id);
        if per_name.get(&name).copied().unwrap_or(0) > 1 {
            names.distinct(id)
        } else {
            name
        }
    };
    let mut rows: BTreeMap<(String, u64, u64, String), Row> = BTreeMap::new();
    for id in &ids {
        let parts = u.assignment.as_ref().map(|a| a.get(*id).map_or(&[][..], Vec::as_slice));
        let row = rows.entry(natural_key(&label(id))).or_default();
        row.partitions = Some(parts.map_or_else(String::new, partitions));
    }
    for (id, t) in &u.commits {
        add(&mut rows.entry(natural_key(&label(id))).or_default().commits, t);
    }
    let settled = u.settled();
    if settled && ids.len() > LISTED_MEMBERS {
        shape(out, u, &ids);
        return;
    }
    if !settled {
        let listed: Vec<String> = if ids.len() > LISTED_MEMBERS {
            vec![format!("{} members", ids.len())]
        } else {
            rows.iter().filter(|(_, r)| r.partitions.is_some()).map(|(k, _)| k.3.clone()).collect()
        };
        if !listed.is_empty() {
            wrap(out, "  members: ", "      ", ",", &listed);
        }
        let committed: Vec<String> = rows
            .iter()
            .filter_map(|((_, _, _, name), r)| {
                let not = if r.partitions.is_none() { " (not a member)" } else { "" };
                accepted_refused(&r.commits).map(|c| format!("{name}{not} {c}"))
            })
            .collect();
        if !committed.is_empty() {
            wrap(out, "  commits: ", "      ", ";", &committed);
        }
        return;
    }
    let table: Vec<(String, String, String)> = rows
        .into_iter()
        .map(|((_, _, _, name), r)| {
            let parts = r.partitions.unwrap_or_else(|| "(not a member)".into());
            (name, parts, commits(&r.commits))
        })
        .collect();
    let w0 = table.iter().map(|r| r.0.len()).max().unwrap_or(0);
    let w1 = table.iter().map(|r| r.1.len()).max().unwrap_or(0);
    for (name, parts, c) in table {
        let line = format!("  {name:<w0$}  {parts:<w1$}  {c}");
        let _ = writeln!(out, "{}", line.trim_end());
    }
}

/// A large rebalance's assignment in two lines: how many members hold how many partitions, a
/// digest of who holds what (so the snapshot still changes when the assignment does), and the
/// commits made under it.
fn shape(out: &mut String, u: &Unit, ids: &[&str]) {
    let mut by_count: BTreeMap<usize, usize> = BTreeMap::new();
    let mut digest = Sha256::new();
    for id in ids {
        let held = u.assignment.as_ref().and_then(|a| a.get(*id));
        *by_count.entry(held.map_or(0, Vec::len)).or_insert(0) += 1;
        if let Some(ps) = held {
            digest.update(format!("{id} {}\n", partitions(ps)));
        }
    }
    let counts: Vec<String> = by_count
        .iter()
        .rev()
        .map(|(held, n)| match held {
            0 => format!("{n} with none"),
            1 => format!("{n} with 1 partition"),
            _ => format!("{n} with {held} partitions"),
        })
        .collect();
    let hex: String = digest.finalize().iter().take(4).map(|b| format!("{b:02x}")).collect();
    let _ = writeln!(out, "  {} members: {} (assignment {hex})", ids.len(), counts.join(", "));
    let mut all = Tally::default();
    for t in u.commits.values() {
        add(&mut all, t);
    }
    if !u.commits.is_empty() {
        let _ = writeln!(out, "  {} from {} members", commits(&all), u.commits.len());
    }
}

/// A member's commits: `commits 12`, `commits 3, 2 refused (ILLEGAL_GENERATION)`, or nothing.
fn commits(t: &Tally) -> String {
    match accepted_refused(t) {
        Some(c) => format!("commits {c}"),
        None => String::new(),
    }
}

/// `12`, `3, 2 refused (ILLEGAL_GENERATION)`, `0, 3 refused (A x2 B)`; `None` for no commit.
fn accepted_refused(t: &Tally) -> Option<String> {
    let refused: u64 = t.refused.values().sum();
    if refused == 0 {
        return (t.accepted > 0).then(|| t.accepted.to_string());
    }
    let errors: Vec<String> = t
        .refused
        .iter()
        .map(|(e, n)| if *n == 1 || t.refused.len() == 1 { e.clone() } else { format!("{e} x{n}") })
        .collect();
    Some(format!("{}, {refused} refused ({})", t.accepted, errors.join(" ")))
}

/// A labelled list of items, wrapped: joins as `+m3`, removals as `-m3 (left)`, repeats counted
/// (`drop m0 x3`), long runs of joins or removals counted instead of named.
fn list(out: &mut String, indent: &str, label: &str, items: &[Item], names: &Names) {
    if items.is_empty() {
        return;
    }
    let joins = items.iter().filter(|i| matches!(i.what, What::Joined(_))).count();
    let mut removals: BTreeMap<&str, usize> = BTreeMap::new();
    for i in items {
        if let What::Removed(_, why) = &i.what {
            *removals.entry(why).or_insert(0) += 1;
        }
    }
    let mut texts: Vec<String> = Vec::new();
    let mut counted_joins = false;
    let mut counted_removals: BTreeSet<&str> = BTreeSet::new();
    for i in items {
        let text = match &i.what {
            What::Joined(_) if joins > LISTED_CHANGES => {
                if std::mem::replace(&mut counted_joins, true) {
                    continue;
                }
                format!("+{joins} members")
            }
            What::Joined(id) => format!("+{}", names.name(id)),
            What::Removed(_, why) if removals[why] > LISTED_CHANGES => {
                if !counted_removals.insert(why) {
                    continue;
                }
                format!("-{} members ({why})", removals[why])
            }
            What::Removed(id, why) => format!("-{} ({why})", names.name(id)),
            What::Text(t) => t.clone(),
        };
        texts.push(text);
    }
    // Repeats of one text are counted at its first place.
    let mut counted: Vec<(String, usize)> = Vec::new();
    for t in texts {
        match counted.iter_mut().find(|(s, _)| *s == t) {
            Some((_, n)) => *n += 1,
            None => counted.push((t, 1)),
        }
    }
    let parts: Vec<String> =
        counted.into_iter().map(|(t, n)| if n == 1 { t } else { format!("{t} x{n}") }).collect();
    wrap(out, &format!("{indent}{label}: "), &format!("{indent}    "), ",", &parts);
}

/// Writes `parts` after `head`, each but the last followed by `sep`, wrapping before [`WIDTH`]
/// onto lines that start with `cont`.
fn wrap(out: &mut String, head: &str, cont: &str, sep: &str, parts: &[String]) {
    let mut line = head.to_string();
    let mut fresh = true;
    for (i, p) in parts.iter().enumerate() {
        let sep = if i + 1 < parts.len() { sep } else { "" };
        if !fresh && line.len() + 1 + p.len() + sep.len() > WIDTH {
            let _ = writeln!(out, "{line}");
            line = cont.to_string();
            fresh = true;
        }
        if !fresh {
            line.push(' ');
        }
        line.push_str(p);
        line.push_str(sep);
        fresh = false;
    }
    let _ = writeln!(out, "{line}");
}

/// The verdict, how the run ended, and its totals.
fn closing(out: &mut String, story: &Story, verdict: &Verdict) {
    if verdict.is_ok() {
        out.push_str("verdict: ok\n");
    } else {
        let counts: Vec<String> = verdict
            .counts()
            .iter()
            .map(|(c, n)| if *n == 1 { c.to_string() } else { format!("{c} x{n}") })
            .collect();
        let _ = writeln!(out, "verdict: FAIL {}", counts.join(", "));
    }
    if !verdict.hazards.is_empty() {
        let mut counts: std::collections::BTreeMap<(String, String), usize> = Default::default();
        for e in &verdict.hazards {
            *counts.entry((e.hazard.to_string(), e.anomaly.class.to_string())).or_default() += 1;
        }
        let explained: Vec<String> = (counts.iter())
            .map(
                |((h, c), n)| {
                    if *n == 1 {
                        format!("{c} ({h})")
                    } else {
                        format!("{c} x{n} ({h})")
                    }
                },
            )
            .collect();
        let _ = writeln!(out, "hazards Kafka allows, not failures: {}", explained.join(", "));
    }
    let e = &story.ending;
    let end = match (e.held, e.deadline_ms) {
        (Some((since, grace)), _) => {
            format!(
                "converged at {since} and held for the {grace} ms grace; ended at {}",
                e.ended_ms
            )
        }
        (None, Some(deadline)) => {
            format!("ran to the liveness deadline {deadline}; ended at {}", e.ended_ms)
        }
        (None, None) => format!("ended at {}", e.ended_ms),
    };
    let _ = writeln!(out, "end: {end}");
    let settled = story.units.iter().filter(|u| u.settled()).count();
    let s = &verdict.stats;
    let rebalances = match story.units.len() {
        1 => "1 rebalance".to_string(),
        n => format!("{n} rebalances"),
    };
    let _ = writeln!(
        out,
        "totals: {rebalances} ({settled} settled), commits {} accepted and {} refused\n\
         records: {} produced, {} processed ({} again); partitions unowned at most {} ms",
        s.commits_accepted,
        s.commits_rejected,
        s.records_produced,
        s.records_processed,
        s.records_reprocessed,
        s.max_unowned_ms
    );
}
