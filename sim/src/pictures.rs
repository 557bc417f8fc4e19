//! Pictures of a run: a Mermaid sequence diagram of a chosen rebalance and an SVG timeline (or
//! an HTML page embedding it), all drawn from the history and the verdict alone.
//!
//! The SVG is hand-written (no external crates): one lane per member with the partitions it owned
//! in each generation, the group's state band, faults as markers with their duration, and the
//! events that prove each anomaly ringed in red. Every marker has a `<title>` tooltip.

mod mermaid;
mod model;
mod svg;

use std::fmt::Write as _;

use groupsim_history::History;

use groupsim_checker::Verdict;

/// Output formats of `groupsim trace`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// The full text trace: every rebalance event, line by line.
    Text,
    /// A compact rebalance summary: per generation (classic) or target assignment epoch
    /// (consumer), when it started and ended, why, the assignment and each member's commits;
    /// then the verdict, how the run ended, totals (what the trace snapshots hold).
    Summary,
    /// A Mermaid sequence diagram of one rebalance.
    Mermaid,
    /// An SVG timeline.
    Svg,
    /// An HTML page embedding the SVG timeline.
    Html,
}

/// A rendering problem (e.g. asking for a generation the run never reached).
#[derive(Debug, thiserror::Error)]
pub enum PictureError {
    /// The format is not available yet.
    #[error("the {0:?} format is not implemented yet")]
    NotImplemented(Format),
    /// `--generation` names a generation the run never started.
    #[error("generation {asked} never started in this run; generations that exist: {known}")]
    UnknownGeneration {
        /// What was asked for.
        asked: i32,
        /// The generations the run started, comma-separated (or `none`).
        known: String,
    },
    /// The run started no generation, so there is no rebalance to draw.
    #[error("the run started no generation: there is no rebalance to draw")]
    NoGeneration,
}

/// Renders a run in `format`. `generation` picks the rebalance for Mermaid (default: the first
/// one with more than one member).
pub fn render(
    format: Format,
    history: &History,
    verdict: &Verdict,
    generation: Option<i32>,
) -> Result<String, PictureError> {
    match format {
        Format::Text => Ok(crate::trace::text(history)),
        Format::Summary => Ok(crate::trace::summary(history, verdict)),
        Format::Mermaid => mermaid::render(history, generation),
        Format::Svg => Ok(svg(history, verdict)),
        Format::Html => Ok(html(history, verdict)),
    }
}

/// Escapes text for XML content and attribute values; drops control characters XML forbids.
pub(crate) fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\n' => out.push_str("&#10;"),
            c if (c as u32) < 0x20 && c != '\t' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// One line on the verdict: PASS, or FAIL with counts per anomaly class.
fn verdict_line(verdict: &Verdict) -> String {
    let s = &verdict.stats;
    let head = if verdict.is_ok() {
        "PASS".to_string()
    } else {
        let counts: Vec<String> =
            verdict.counts().iter().map(|(c, n)| format!("{c}×{n}")).collect();
        format!("FAIL ({})", counts.join(", "))
    };
    format!(
        "{head} · {} rebalances · commits {}/{} accepted/rejected · max unowned {} ms",
        s.rebalances, s.commits_accepted, s.commits_rejected, s.max_unowned_ms
    )
}

/// The SVG timeline of a run.
pub fn svg(history: &History, verdict: &Verdict) -> String {
    svg::render(&model::build(history, verdict), &verdict_line(verdict))
}

/// A self-contained HTML page: heading (scenario, seed, verdict), the SVG timeline, the anomaly
/// list with each proving event, and the faults. Well-formed XML (XHTML syntax) too.
pub fn html(history: &History, verdict: &Verdict) -> String {
    let t = model::build(history, verdict);
    let line = verdict_line(verdict);
    let svg = svg::render(&t, &line);
    let mut out = String::new();
    let title = format!("groupsim: {} seed {}", t.scenario, t.seed);
    out.push_str("<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n");
    let _ = writeln!(out, "<title>{}</title>", esc(&title));
    out.push_str(
        "<style>\nbody { font-family: 'DejaVu Sans', Arial, sans-serif; margin: 16px 24px; color: #212121; }\n\
         h1 { font-size: 20px; margin: 0 0 4px 0; }\nh2 { font-size: 16px; margin: 18px 0 6px 0; }\n\
         .pass { color: #2e7d32; font-weight: bold; }\n.fail { color: #d50000; font-weight: bold; }\n\
         .timeline { overflow-x: auto; border: 1px solid #e0e0e0; }\n.timeline svg { display: block; width: 100%; min-width: 1100px; height: auto; }\n\
         code, .ev { font-family: 'DejaVu Sans Mono', monospace; font-size: 12px; }\n\
         li { margin-bottom: 4px; }\nsummary { color: #757575; font-size: 12px; cursor: pointer; }\ntable { border-collapse: collapse; font-size: 13px; }\n\
         td { padding: 1px 10px 1px 0; vertical-align: top; }\n.muted { color: #757575; font-size: 12px; }\n</style>\n</head>\n<body>\n",
    );
    let _ = writeln!(out, "<h1>{}</h1>", esc(&format!("{} — seed {}", t.scenario, t.seed)));
    let _ = writeln!(
        out,
        "<p><span class=\"{}\">{}</span> <span class=\"muted\">· {} events · {:.1} simulated seconds · replay: <code>{}</code></span></p>",
        if verdict.is_ok() { "pass" } else { "fail" },
        esc(&line),
        history.len(),
        t.end_ms as f64 / 1000.0,
        esc(&crate::runner::replay_command(&t.scenario, t.seed))
    );
    let _ = writeln!(out, "<div class=\"timeline\">\n{svg}</div>");
    out.push_str("<p class=\"muted\">Hover bars, bands and markers for details.</p>\n");
    let _ = writeln!(out, "<h2>Anomalies ({})</h2>", verdict.anomalies.len());
    if verdict.anomalies.is_empty() {
        out.push_str("<p>None: the checker found no anomaly.</p>\n");
    } else {
        out.push_str("<ol>\n");
        for a in &verdict.anomalies {
            let mut head = format!("{} at t={} ms", a.class, a.at_ms);
            if let Some(tp) = &a.partition {
                let _ = write!(head, " on {tp}");
            }
            let _ = write!(
                out,
                "<li><b>{}</b>: {}<details><summary>{} proving events</summary><ul>",
                esc(&head),
                esc(&a.message),
                a.events.len()
            );
            for &i in &a.events {
                if let Some(e) = history.events().get(i) {
                    let _ = write!(out, "<li class=\"ev\">#{i} {}</li>", esc(&e.to_string()));
                }
            }
            out.push_str("</ul></details></li>\n");
        }
        out.push_str("</ol>\n");
    }
    let _ = writeln!(out, "<h2>Faults ({})</h2>", t.faults.len());
    if t.faults.is_empty() {
        out.push_str("<p>None.</p>\n");
    } else {
        out.push_str("<table>\n");
        for f in &t.faults {
            let _ = writeln!(
                out,
                "<tr><td class=\"ev\">t={} ms</td><td>{}</td></tr>",
                f.at,
                esc(&f.text)
            );
        }
        out.push_str("</table>\n");
    }
    out.push_str("</body>\n</html>\n");
    out
}
