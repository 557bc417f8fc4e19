//! `explore --versus-sweep`: the guided search and the blind sweep side by side, on the same
//! scenarios and the same number of runs — the distinct elements each reached, per CPU minute,
//! and a picture of elements over runs for both.

use std::fmt::Write as _;
use std::sync::atomic::AtomicBool;

use super::corpus::Corpus;
use super::{explore, ExploreError, Outcome, Settings, Strategy};

/// One side of the comparison.
#[derive(Clone, Debug)]
pub struct Side {
    /// `explore` or `sweep`.
    pub name: &'static str,
    /// Runs done.
    pub runs: u64,
    /// Distinct elements reached.
    pub elements: usize,
    /// CPU seconds of the runs.
    pub cpu_s: f64,
    /// Distinct elements after each run.
    pub growth: Vec<usize>,
    /// Distinct findings.
    pub findings: usize,
    /// How many runs reached each element.
    pub reached: std::collections::BTreeMap<crate::signature::Element, u64>,
    /// Runs that reached a rare element (see [`rare_hits`]), filled by [`compare`].
    pub rare_hits: u64,
}

impl Side {
    fn of(name: &'static str, outcome: &Outcome) -> Self {
        Self {
            name,
            runs: outcome.runs,
            elements: outcome.growth.last().copied().unwrap_or(0),
            cpu_s: outcome.cpu_s,
            growth: outcome.growth.clone(),
            findings: outcome.findings.len(),
            reached: outcome.corpus.coverage().reached,
            rare_hits: 0,
        }
    }

    /// Distinct elements per CPU minute.
    pub fn per_cpu_minute(&self) -> f64 {
        self.elements as f64 / (self.cpu_s / 60.0).max(1e-9)
    }
}

/// Runs the guided search, then the blind sweep, each from nothing, with `settings`' budget.
pub fn compare(settings: &Settings, stop: &AtomicBool) -> Result<[Side; 2], ExploreError> {
    let mut sides = Vec::new();
    for (name, strategy) in [("explore", Strategy::Guided), ("sweep", Strategy::Blind)] {
        let s = Settings { strategy, shrink: false, ..settings.clone() };
        let corpus = Corpus::new(&s.scenarios, &s.options);
        let outcome = explore(&s, corpus, stop, |_| {}, |_| {})?;
        sides.push(Side::of(name, &outcome));
    }
    let mut blind = sides.pop().expect("two sides");
    let mut guided = sides.pop().expect("two sides");
    let rare = rare_elements(&guided, &blind);
    guided.rare_hits = rare_hits(&guided, &rare);
    blind.rare_hits = rare_hits(&blind, &rare);
    Ok([guided, blind])
}

/// The elements at most one run in a hundred of both sides together reached: the rare
/// situations a search is for.
pub fn rare_elements(a: &Side, b: &Side) -> Vec<crate::signature::Element> {
    let runs = a.runs + b.runs;
    let bound = (runs / 100).max(1);
    let mut all = a.reached.clone();
    for (e, n) in &b.reached {
        *all.entry(e.clone()).or_insert(0) += n;
    }
    all.into_iter().filter(|(_, n)| *n <= bound).map(|(e, _)| e).collect()
}

/// How many times `side`'s runs reached one of `rare` (a run reaching two counts twice).
pub fn rare_hits(side: &Side, rare: &[crate::signature::Element]) -> u64 {
    rare.iter().map(|e| side.reached.get(e).copied().unwrap_or(0)).sum()
}

/// The comparison as a table.
pub fn table(sides: &[Side; 2]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<8} {:>7} {:>9} {:>8} {:>16} {:>9} {:>9}",
        "", "runs", "elements", "cpu s", "elements/cpu-min", "rare hits", "findings"
    );
    for s in sides {
        let _ = writeln!(
            out,
            "{:<8} {:>7} {:>9} {:>8.1} {:>16.1} {:>9} {:>9}",
            s.name,
            s.runs,
            s.elements,
            s.cpu_s,
            s.per_cpu_minute(),
            s.rare_hits,
            s.findings
        );
    }
    out
}

/// Elements over runs for both sides, as an SVG line plot.
pub fn svg(sides: &[Side; 2], title: &str) -> String {
    const W: f64 = 720.0;
    const H: f64 = 400.0;
    const LEFT: f64 = 60.0;
    const BOTTOM: f64 = 40.0;
    const TOP: f64 = 40.0;
    const RIGHT: f64 = 130.0;
    let runs = sides.iter().map(|s| s.growth.len()).max().unwrap_or(1).max(1);
    let top = sides.iter().flat_map(|s| s.growth.iter().copied()).max().unwrap_or(1).max(1);
    let (pw, ph) = (W - LEFT - RIGHT, H - TOP - BOTTOM);
    let x = |run: usize| LEFT + pw * run as f64 / runs as f64;
    let y = |elements: usize| TOP + ph * (1.0 - elements as f64 / top as f64);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"{H}\" \
         viewBox=\"0 0 {W} {H}\" font-family=\"sans-serif\" font-size=\"12\">"
    );
    let _ = writeln!(out, "<rect width=\"{W}\" height=\"{H}\" fill=\"white\"/>");
    let _ = writeln!(
        out,
        "<text x=\"{LEFT}\" y=\"22\" font-size=\"14\">{}</text>",
        crate::pictures::esc(title)
    );
    let _ = writeln!(
        out,
        "<line x1=\"{LEFT}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"black\"/>",
        TOP + ph,
        LEFT + pw,
        TOP + ph
    );
    let _ = writeln!(
        out,
        "<line x1=\"{LEFT}\" y1=\"{TOP}\" x2=\"{LEFT}\" y2=\"{}\" stroke=\"black\"/>",
        TOP + ph
    );
    for k in 0..=4 {
        let (r, e) = (runs * k / 4, top * k / 4);
        let _ = writeln!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{r}</text>",
            x(r),
            TOP + ph + 16.0
        );
        let _ = writeln!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{e}</text>",
            LEFT - 6.0,
            y(e) + 4.0
        );
    }
    let _ = writeln!(
        out,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">runs</text>",
        LEFT + pw / 2.0,
        H - 6.0
    );
    let _ = writeln!(
        out,
        "<text x=\"14\" y=\"{:.1}\" transform=\"rotate(-90 14 {:.1})\" text-anchor=\"middle\">\
         distinct elements</text>",
        TOP + ph / 2.0,
        TOP + ph / 2.0
    );
    for (side, colour) in sides.iter().zip(["#1f77b4", "#d62728"]) {
        let points: Vec<String> = std::iter::once((0, 0))
            .chain(side.growth.iter().enumerate().map(|(i, &e)| (i + 1, e)))
            .map(|(r, e)| format!("{:.1},{:.1}", x(r), y(e)))
            .collect();
        let _ = writeln!(
            out,
            "<polyline fill=\"none\" stroke=\"{colour}\" stroke-width=\"2\" points=\"{}\"/>",
            points.join(" ")
        );
        let end = side.growth.last().copied().unwrap_or(0);
        let _ = writeln!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\" fill=\"{colour}\">{} ({end})</text>",
            LEFT + pw + 8.0,
            y(end) + 4.0,
            side.name
        );
    }
    out.push_str("</svg>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_picture_and_table_show_both_sides() {
        let side = |name, growth: Vec<usize>| Side {
            name,
            runs: growth.len() as u64,
            elements: *growth.last().unwrap(),
            cpu_s: 30.0,
            growth,
            findings: 0,
            reached: Default::default(),
            rare_hits: 0,
        };
        let sides = [side("explore", vec![10, 20, 40]), side("sweep", vec![10, 15, 18])];
        let picture = svg(&sides, "a & b");
        assert!(picture.starts_with("<svg") && picture.ends_with("</svg>\n"));
        assert_eq!(picture.matches("<polyline").count(), 2);
        assert!(picture.contains("explore (40)") && picture.contains("sweep (18)"));
        assert!(picture.contains("a &amp; b"), "the title is escaped");
        let t = table(&sides);
        assert!(t.contains("80.0"), "40 elements in half a CPU minute: {t}");
    }
}
