//! The soak's samples as a text table and as an SVG plot (three panels over time: serve's RSS,
//! its descriptors, the loopback clients' answer latency), written by hand like the repository's
//! other pictures.

use std::fmt::Write as _;

use super::sample::Sample;

/// The samples as a Markdown table (it reads as plain text too).
pub fn table(samples: &[Sample]) -> String {
    let mut out = String::from(
        "| t (s) | RSS (MiB) | fds | fds held | answered | p50 (ms) | p99 (ms) | max (ms) |\n\
         |---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for s in samples {
        let _ = writeln!(
            out,
            "| {:.0} | {:.1} | {} | {} | {} | {:.1} | {:.1} | {:.1} |",
            s.at_s,
            s.rss_kib as f64 / 1024.0,
            s.fds,
            s.held_fds(),
            s.answered,
            s.p50_ms,
            s.p99_ms,
            s.max_ms
        );
    }
    out
}

const WIDTH: f64 = 760.0;
const PANEL: f64 = 150.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 40.0;
const GAP: f64 = 40.0;

/// One line of a panel.
struct Series<'a> {
    label: &'a str,
    colour: &'a str,
    values: Vec<f64>,
}

/// The plot: `title` on top, the warm-up (before `warmup_s`) shaded in every panel.
pub fn svg(title: &str, samples: &[Sample], warmup_s: f64) -> String {
    let times: Vec<f64> = samples.iter().map(|s| s.at_s).collect();
    let t_max = times.iter().copied().fold(1.0, f64::max);
    let panels = [
        (
            "serve RSS (MiB)",
            vec![Series {
                label: "RSS",
                colour: "#1f77b4",
                values: samples.iter().map(|s| s.rss_kib as f64 / 1024.0).collect(),
            }],
        ),
        (
            "serve open descriptors",
            vec![
                Series {
                    label: "all",
                    colour: "#aaaaaa",
                    values: samples.iter().map(|s| s.fds as f64).collect(),
                },
                Series {
                    label: "held (beyond the load's connections)",
                    colour: "#2ca02c",
                    values: samples.iter().map(|s| s.held_fds() as f64).collect(),
                },
            ],
        ),
        (
            "answer latency of valid requests (ms)",
            vec![
                Series {
                    label: "p50",
                    colour: "#ff7f0e",
                    values: samples.iter().map(|s| s.p50_ms).collect(),
                },
                Series {
                    label: "p99",
                    colour: "#d62728",
                    values: samples.iter().map(|s| s.p99_ms).collect(),
                },
            ],
        ),
    ];
    let height = TOP + panels.len() as f64 * (PANEL + GAP) + 10.0;
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{height}\" \
         font-family=\"monospace\" font-size=\"11\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <text x=\"10\" y=\"20\" font-size=\"14\">{}</text>\n",
        escape(title)
    );
    let plot_w = WIDTH - LEFT - RIGHT;
    let x_of = |t: f64| LEFT + t / t_max * plot_w;
    for (i, (name, series)) in panels.iter().enumerate() {
        let top = TOP + i as f64 * (PANEL + GAP);
        let y_max = series.iter().flat_map(|s| s.values.iter().copied()).fold(0.0, f64::max);
        let y_max = if y_max > 0.0 { y_max * 1.1 } else { 1.0 };
        let y_of = |v: f64| top + PANEL - v / y_max * PANEL;
        let warm = x_of(warmup_s.min(t_max)) - LEFT;
        let _ = writeln!(
            out,
            "<rect x=\"{LEFT}\" y=\"{top}\" width=\"{warm:.1}\" height=\"{PANEL}\" fill=\"#eeeeee\"/>\n\
             <rect x=\"{LEFT}\" y=\"{top}\" width=\"{plot_w}\" height=\"{PANEL}\" fill=\"none\" stroke=\"#888\"/>\n\
             <text x=\"{LEFT}\" y=\"{:.1}\">{}</text>\n\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>\n\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">0</text>\n\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{t_max:.0} s</text>",
            top - 6.0,
            escape(name),
            LEFT - 4.0,
            top + 10.0,
            tick(y_max),
            LEFT - 4.0,
            top + PANEL,
            WIDTH - RIGHT,
            top + PANEL + 14.0,
        );
        for (k, s) in series.iter().enumerate() {
            let points: Vec<String> = times
                .iter()
                .zip(&s.values)
                .map(|(&t, &v)| format!("{:.1},{:.1}", x_of(t), y_of(v)))
                .collect();
            let _ = writeln!(
                out,
                "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\" points=\"{}\"/>\n\
                 <text x=\"{:.1}\" y=\"{:.1}\" fill=\"{}\">{}</text>",
                s.colour,
                points.join(" "),
                LEFT + 8.0 + 260.0 * k as f64,
                top + 14.0,
                s.colour,
                escape(s.label)
            );
            for p in &points {
                let (x, y) = p.split_once(',').unwrap_or(("0", "0"));
                let _ =
                    writeln!(out, "<circle cx=\"{x}\" cy=\"{y}\" r=\"2\" fill=\"{}\"/>", s.colour);
            }
        }
    }
    out.push_str("</svg>\n");
    out
}

/// An axis label for `v`: whole numbers when large, one decimal when small.
fn tick(v: f64) -> String {
    if v >= 10.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn samples() -> Vec<Sample> {
        (1..=3u32)
            .map(|i| Sample {
                at_s: f64::from(i) * 10.0,
                rss_kib: 10_240 + u64::from(i),
                fds: 20 + u64::from(i),
                load_connections: u64::from(i),
                answered: 100,
                p50_ms: 0.5,
                p99_ms: 2.0,
                max_ms: 9.0,
            })
            .collect()
    }

    #[test]
    fn the_table_has_a_row_per_sample_with_held_descriptors() {
        let t = table(&samples());
        assert_eq!(t.lines().count(), 2 + 3);
        assert!(t
            .lines()
            .nth(2)
            .unwrap()
            .starts_with("| 10 | 10.0 | 21 | 20 | 100 | 0.5 | 2.0 | 9.0 |"));
    }

    #[test]
    fn the_svg_is_one_document_with_three_panels_and_a_point_per_sample() {
        let svg = svg("soak <1 min> & co", &samples(), 15.0);
        assert!(svg.starts_with("<svg ") && svg.trim_end().ends_with("</svg>"));
        assert!(svg.contains("soak &lt;1 min&gt; &amp; co"), "the title is escaped");
        assert_eq!(svg.matches("<polyline").count(), 5, "RSS, two fd lines, two latency lines");
        assert_eq!(svg.matches("<circle").count(), 5 * 3);
        assert!(!svg.contains("NaN") && !svg.contains("inf"));
        let empty = svg_of_nothing();
        assert!(!empty.contains("NaN"), "no samples still draws: {empty}");
    }

    fn svg_of_nothing() -> String {
        svg("empty", &[], 0.0)
    }
}
