//! The SVG timeline: x is simulated time; a band per group shows its state, a faults row shows
//! injected faults (with their duration) and heals, and one lane per member shows the partitions
//! it owned in each generation. Anomalies are red rings on the events that prove them.

use std::fmt::Write as _;

use groupsim_history::{partition_list, GroupState};
use groupsim_wire::Millis;

use super::esc;
use super::model::{Spot, Timeline};

const WIDTH: f64 = 1560.0;
const LEFT: f64 = 120.0;
const RIGHT: f64 = 30.0;
const BAND_H: f64 = 24.0;
const FAULT_ROW_H: f64 = 16.0;
/// Approximate advance of one character of the 11 px monospace labels.
const CHAR_W: f64 = 6.7;

const ANOMALY: &str = "#d50000";
const FAULT: &str = "#e65100";
const HEALED: &str = "#2e7d32";
const CLUSTER: &str = "#6a1b9a";
const REJECTED: &str = "#ff6f00";
/// Ownership bar colours, cycled by generation.
const GENERATION_COLOURS: [&str; 8] =
    ["#64b5f6", "#9575cd", "#4db6ac", "#ba68c8", "#7986cb", "#4dd0e1", "#aed581", "#a1887f"];

/// Fill colour and short label of a group state.
pub(crate) fn state_style(s: GroupState) -> (&'static str, &'static str) {
    match s {
        GroupState::Empty => ("#cfd8dc", "Empty"),
        GroupState::PreparingRebalance => ("#ffb74d", "Preparing"),
        GroupState::CompletingRebalance => ("#fff176", "Completing"),
        GroupState::Stable => ("#81c784", "Stable"),
        GroupState::Dead => ("#757575", "Dead"),
    }
}

/// The colour of generation `g`'s ownership bars.
fn generation_colour(g: i32) -> &'static str {
    GENERATION_COLOURS[g.rem_euclid(GENERATION_COLOURS.len() as i32) as usize]
}

/// An ownership bar's label: `g3 orders[0-1] payments[0]` when it fits, else `g3 3p` (partition
/// count), else `g3`, else nothing.
fn bar_label(generation: i32, parts: &str, count: usize, width: f64) -> Option<String> {
    let room = ((width - 6.0) / CHAR_W).floor().max(0.0) as usize;
    [format!("g{generation} {parts}"), format!("g{generation} {count}p"), format!("g{generation}")]
        .into_iter()
        .find(|l| l.chars().count() <= room)
}

/// `text` cut to fit `width` pixels of label, or None when not even a few characters fit.
fn fit(text: &str, width: f64) -> Option<String> {
    let max = ((width - 6.0) / CHAR_W).floor();
    if max < 3.0 {
        return None;
    }
    let max = max as usize;
    if text.chars().count() <= max {
        Some(text.to_string())
    } else {
        Some(format!("{}…", text.chars().take(max.saturating_sub(1)).collect::<String>()))
    }
}

fn seconds(ms: Millis) -> String {
    if ms.is_multiple_of(1000) {
        format!("{} s", ms / 1000)
    } else {
        format!("{:.1} s", ms as f64 / 1000.0)
    }
}

/// Packs intervals (in pixels) into rows so that none overlap; returns each interval's row.
fn pack(intervals: &[(f64, f64)]) -> (Vec<usize>, usize) {
    let mut row_end: Vec<f64> = Vec::new();
    let mut rows = Vec::with_capacity(intervals.len());
    for &(s, e) in intervals {
        let r = match row_end.iter().position(|&end| end + 2.0 <= s) {
            Some(r) => r,
            None => {
                row_end.push(f64::MIN);
                row_end.len() - 1
            }
        };
        row_end[r] = e;
        rows.push(r);
    }
    let n = row_end.len().max(1);
    (rows, n)
}

/// Renders the timeline as a standalone SVG document. `verdict_line` goes into the header.
pub(crate) fn render(t: &Timeline, verdict_line: &str) -> String {
    let end = t.end_ms.max(1);
    let plot = WIDTH - LEFT - RIGHT;
    let x = |ms: Millis| LEFT + ms.min(end) as f64 * plot / end as f64;
    let n_lanes = t.lanes.len();
    let lane_h = match n_lanes {
        0..=40 => 26.0,
        41..=150 => 12.0,
        _ => 5.0,
    };
    let mut b = String::new();

    // Layout, top to bottom.
    let header_h = 30.0;
    let gen_row_y = header_h + 4.0;
    // A row for anomaly numbers, only when there are anomalies.
    let anomaly_row_y = gen_row_y + 14.0;
    let bands_y = if t.anomalies.is_empty() { gen_row_y + 16.0 } else { anomaly_row_y + 16.0 };
    let bands_h = t.bands.len().max(1) as f64 * (BAND_H + 2.0);
    let faults_y = bands_y + bands_h + 6.0;
    let spans: Vec<(f64, f64)> = t
        .faults
        .iter()
        .map(|f| {
            let s = x(f.at) - 6.0;
            let e = f.until.map_or(x(f.at) + 6.0, |u| x(u).max(x(f.at) + 6.0));
            (s, e)
        })
        .collect();
    let (fault_rows, n_fault_rows) = pack(&spans);
    let faults_h = n_fault_rows as f64 * FAULT_ROW_H;
    let points_y = faults_y + faults_h + 2.0;
    let lanes_y = points_y + FAULT_ROW_H + 8.0;
    let lanes_h = n_lanes as f64 * lane_h;
    let axis_y = lanes_y + lanes_h + 4.0;
    let legend_y = axis_y + 34.0;
    let height = legend_y + 44.0;

    // Background: liveness phase shading and the time grid.
    if let Some(l) = t.liveness_ms {
        let _ = writeln!(
            b,
            r##"<rect x="{:.1}" y="{gen_row_y:.1}" width="{:.1}" height="{:.1}" fill="#eef3fb"><title>liveness phase from t={l} ms: no more faults or membership changes; the group must converge</title></rect>"##,
            x(l),
            (x(end) - x(l)).max(0.0),
            axis_y - gen_row_y
        );
        let _ = writeln!(
            b,
            r##"<text x="{:.1}" y="{:.1}" font-size="11" fill="#5c6bc0" font-style="italic">liveness phase</text>"##,
            x(l) + 4.0,
            header_h - 6.0 + 14.0
        );
    }
    let step_s = [1u64, 2, 5, 10, 15, 20, 30, 60, 120, 300, 600, 1800, 3600]
        .into_iter()
        .find(|s| end / (s * 1000) <= 16)
        .unwrap_or(3600);
    let mut tick = 0;
    while tick <= end {
        let tx = x(tick);
        let _ = writeln!(
            b,
            r##"<line x1="{tx:.1}" y1="{bands_y:.1}" x2="{tx:.1}" y2="{axis_y:.1}" stroke="#e0e0e0" stroke-width="1"/>"##
        );
        let _ = writeln!(
            b,
            r##"<line x1="{tx:.1}" y1="{axis_y:.1}" x2="{tx:.1}" y2="{:.1}" stroke="#424242"/><text x="{tx:.1}" y="{:.1}" font-size="11" text-anchor="middle">{}</text>"##,
            axis_y + 5.0,
            axis_y + 17.0,
            esc(&seconds(tick))
        );
        tick += step_s * 1000;
    }
    let _ = writeln!(
        b,
        r##"<line x1="{LEFT:.1}" y1="{axis_y:.1}" x2="{:.1}" y2="{axis_y:.1}" stroke="#424242"/><text x="{:.1}" y="{:.1}" font-size="11" text-anchor="end" fill="#424242">simulated time</text>"##,
        x(end),
        x(end),
        axis_y + 30.0
    );

    // Member lanes: background stripes and names.
    for (i, lane) in t.lanes.iter().enumerate() {
        let y = lanes_y + i as f64 * lane_h;
        if i % 2 == 0 {
            let _ = writeln!(
                b,
                r##"<rect x="{LEFT:.1}" y="{y:.1}" width="{plot:.1}" height="{lane_h:.1}" fill="#f5f5f5" fill-opacity="0.7"/>"##
            );
        }
        if lane_h >= 10.0 || i % 50 == 0 {
            let _ = writeln!(
                b,
                r##"<text x="{:.1}" y="{:.1}" font-size="{}" text-anchor="end" class="lane-label">{}</text>"##,
                LEFT - 8.0,
                y + lane_h / 2.0 + 4.0,
                if lane_h >= 20.0 { 12 } else { 9 },
                esc(&lane.name)
            );
        }
    }

    // Generation starts: dashed lines through the lanes, labelled above the bands.
    let mut last_label = f64::MIN;
    for (at, group, generation, leader) in &t.generations {
        let gx = x(*at);
        let _ = writeln!(
            b,
            r##"<line x1="{gx:.1}" y1="{bands_y:.1}" x2="{gx:.1}" y2="{:.1}" stroke="#9e9e9e" stroke-dasharray="3,3" stroke-width="1"><title>{}</title></line>"##,
            lanes_y + lanes_h,
            esc(&format!(
                "t={at} ms: group {group} generation {generation} started, leader {leader}"
            ))
        );
        if gx - last_label >= 22.0 {
            let _ = writeln!(
                b,
                r##"<text x="{gx:.1}" y="{:.1}" font-size="10" text-anchor="middle" fill="#616161">g{generation}<title>{}</title></text>"##,
                gen_row_y + 11.0,
                esc(&format!("generation {generation} started at t={at} ms, leader {leader}"))
            );
            last_label = gx;
        }
    }

    // Group state bands.
    let mut band_row = std::collections::BTreeMap::new();
    for (gi, (group, bands)) in t.bands.iter().enumerate() {
        let y = bands_y + gi as f64 * (BAND_H + 2.0);
        band_row.insert(group.clone(), y);
        let _ = writeln!(
            b,
            r##"<text x="{:.1}" y="{:.1}" font-size="12" text-anchor="end" font-weight="bold">{}</text>"##,
            LEFT - 8.0,
            y + BAND_H / 2.0 + 4.0,
            esc(&format!("group {group}"))
        );
        for band in bands {
            let (fill, short) = state_style(band.state);
            let bx = x(band.start);
            let w = (x(band.end) - bx).max(1.0);
            let _ = write!(
                b,
                r##"<rect class="state" x="{bx:.1}" y="{y:.1}" width="{w:.1}" height="{BAND_H:.1}" fill="{fill}"><title>{}</title></rect>"##,
                esc(&format!(
                    "{} generation {} on broker-{}, t={}–{} ms",
                    band.state.kafka_name(),
                    band.generation,
                    band.broker,
                    band.start,
                    band.end
                ))
            );
            if let Some(label) = fit(&format!("{short} g{}", band.generation), w) {
                let colour = if band.state == GroupState::Dead { "#ffffff" } else { "#212121" };
                let _ = write!(
                    b,
                    r##"<text x="{:.1}" y="{:.1}" font-size="11" font-family="DejaVu Sans Mono, monospace" fill="{colour}" pointer-events="none">{}</text>"##,
                    bx + 3.0,
                    y + BAND_H / 2.0 + 4.0,
                    esc(&label)
                );
            }
            b.push('\n');
        }
    }

    // Faults: a triangle where each was injected, a translucent span while it lasts.
    let _ = writeln!(
        b,
        r##"<text x="{:.1}" y="{:.1}" font-size="12" text-anchor="end" font-weight="bold">faults</text>"##,
        LEFT - 8.0,
        faults_y + 12.0
    );
    for (f, row) in t.faults.iter().zip(&fault_rows) {
        let fx = x(f.at);
        let y = faults_y + *row as f64 * FAULT_ROW_H;
        let title = esc(&format!("t={} ms FAULT {}", f.at, f.text));
        let _ = write!(b, r##"<g class="fault"><title>{title}</title>"##);
        if let Some(u) = f.until {
            let _ = write!(
                b,
                r##"<rect x="{fx:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{FAULT}" fill-opacity="0.18" stroke="{FAULT}" stroke-opacity="0.5"/>"##,
                y + 3.0,
                (x(u) - fx).max(1.0),
                FAULT_ROW_H - 6.0
            );
        }
        let (fill, stroke) = if f.applied { (FAULT, FAULT) } else { ("none", "#9e9e9e") };
        let _ = write!(
            b,
            r##"<path d="M{:.1},{:.1} L{:.1},{:.1} L{fx:.1},{:.1} Z" fill="{fill}" stroke="{stroke}"/>"##,
            fx - 5.0,
            y + 2.0,
            fx + 5.0,
            y + 2.0,
            y + FAULT_ROW_H - 3.0
        );
        if let Some(label) = f.until.and_then(|u| fit(&short_fault(&f.text), x(u) - fx - 6.0)) {
            let _ = write!(
                b,
                r##"<text x="{:.1}" y="{:.1}" font-size="10" fill="#bf360c" pointer-events="none">{}</text>"##,
                fx + 7.0,
                y + FAULT_ROW_H - 4.5,
                esc(&label)
            );
        }
        b.push_str("</g>\n");
    }
    let _ = writeln!(
        b,
        r##"<text x="{:.1}" y="{:.1}" font-size="10" text-anchor="end" fill="#616161">heals, cluster</text>"##,
        LEFT - 8.0,
        points_y + 12.0
    );
    for p in &t.points {
        let px = x(p.at);
        let cy = points_y + FAULT_ROW_H / 2.0;
        let title = esc(&format!("t={} ms {}", p.at, p.text));
        if p.healed {
            let _ = writeln!(
                b,
                r##"<circle class="healed" cx="{px:.1}" cy="{cy:.1}" r="4" fill="{HEALED}"><title>{title}</title></circle>"##
            );
        } else {
            let _ = writeln!(
                b,
                r##"<path class="cluster" d="M{px:.1},{:.1} L{:.1},{cy:.1} L{px:.1},{:.1} L{:.1},{cy:.1} Z" fill="{CLUSTER}"><title>{title}</title></path>"##,
                cy - 6.0,
                px + 6.0,
                cy + 6.0,
                px - 6.0
            );
        }
    }

    // Member lanes: process lifetime, ownership bars, member faults, rejected commits.
    for (i, lane) in t.lanes.iter().enumerate() {
        let y = lanes_y + i as f64 * lane_h;
        let mid = y + lane_h / 2.0;
        let _ = write!(b, r##"<g class="lane" data-member="{}">"##, esc(&lane.name));
        for &(s, e) in &lane.alive {
            let _ = write!(
                b,
                r##"<line x1="{:.1}" y1="{mid:.1}" x2="{:.1}" y2="{mid:.1}" stroke="#9e9e9e" stroke-width="2"><title>{}</title></line>"##,
                x(s),
                x(e),
                esc(&format!("{} process running t={s}–{e} ms", lane.name))
            );
        }
        for o in &lane.owned {
            let ox = x(o.start);
            let w = (x(o.end) - ox).max(1.5);
            let pad = if lane_h >= 20.0 { 4.0 } else { 1.0 };
            let parts = partition_list(&o.partitions);
            let title = esc(&format!(
                "{} generation {} owns {} (t={}–{} ms, ended: {})",
                lane.name, o.generation, parts, o.start, o.end, o.ended_by
            ));
            let (fill, dash) = if o.partitions.is_empty() {
                ("#ffffff", r#" stroke-dasharray="3,2""#)
            } else {
                (generation_colour(o.generation), "")
            };
            let _ = write!(
                b,
                r##"<rect class="owned" x="{ox:.1}" y="{:.1}" width="{w:.1}" height="{:.1}" rx="2" fill="{fill}" stroke="#37474f" stroke-width="0.6"{dash}><title>{title}</title></rect>"##,
                y + pad,
                lane_h - 2.0 * pad
            );
            if o.ended_by.starts_with("lost") {
                let ex = ox + w;
                let _ = write!(
                    b,
                    r##"<line x1="{ex:.1}" y1="{:.1}" x2="{ex:.1}" y2="{:.1}" stroke="{ANOMALY}" stroke-width="2.5"><title>{title}</title></line>"##,
                    y + 1.0,
                    y + lane_h - 1.0
                );
            }
            if lane_h >= 20.0 {
                if let Some(label) = bar_label(o.generation, &parts, o.partitions.len(), w) {
                    let _ = write!(
                        b,
                        r##"<text x="{:.1}" y="{:.1}" font-size="11" font-family="DejaVu Sans Mono, monospace" fill="#102027" pointer-events="none">{}</text>"##,
                        ox + 3.0,
                        mid + 4.0,
                        esc(&label)
                    );
                }
            }
        }
        for f in t.faults.iter().filter(|f| f.member.as_deref() == Some(lane.name.as_str())) {
            let fx = x(f.at);
            let (fill, stroke) = if f.applied { (FAULT, "#ffffff") } else { ("none", "#9e9e9e") };
            let _ = write!(
                b,
                r##"<path class="member-fault" d="M{:.1},{y:.1} L{:.1},{y:.1} L{fx:.1},{:.1} Z" fill="{fill}" stroke="{stroke}" stroke-width="0.8"><title>{}</title></path>"##,
                fx - 5.0,
                fx + 5.0,
                y + (lane_h * 0.45).min(9.0),
                esc(&format!("t={} ms FAULT {}", f.at, f.text))
            );
        }
        for (at, text) in &lane.rejected {
            let rx = x(*at);
            let _ = write!(
                b,
                r##"<path class="rejected" d="M{:.1},{:.1} L{:.1},{:.1} M{:.1},{:.1} L{:.1},{:.1}" stroke="{REJECTED}" stroke-width="2"><title>{}</title></path>"##,
                rx - 3.0,
                y + lane_h - 8.0,
                rx + 3.0,
                y + lane_h - 2.0,
                rx + 3.0,
                y + lane_h - 8.0,
                rx - 3.0,
                y + lane_h - 2.0,
                esc(text)
            );
        }
        b.push_str("</g>\n");
    }

    // Anomalies: a red line at the time it became visible, red rings on its proving events,
    // numbered in the anomaly row (numbers and lines thinned out where they would pile up).
    if !t.anomalies.is_empty() {
        let _ = writeln!(
            b,
            r##"<text x="{:.1}" y="{:.1}" font-size="10" text-anchor="end" fill="{ANOMALY}" font-weight="bold">anomalies</text>"##,
            LEFT - 8.0,
            anomaly_row_y + 11.0
        );
    }
    let mut last_line = f64::MIN;
    let mut last_number = f64::MIN;
    for (k, a) in t.anomalies.iter().enumerate() {
        let ax = x(a.at);
        let title = esc(&format!("anomaly {}: t={} ms {}", k + 1, a.at, a.text));
        let _ = write!(b, r##"<g class="anomaly"><title>{title}</title>"##);
        if ax - last_line >= 3.0 {
            let _ = write!(
                b,
                r##"<line x1="{ax:.1}" y1="{anomaly_row_y:.1}" x2="{ax:.1}" y2="{:.1}" stroke="{ANOMALY}" stroke-width="1" stroke-opacity="0.55"/>"##,
                lanes_y + lanes_h
            );
            last_line = ax;
        }
        for (at, spot, what) in &a.spots {
            let cy = match spot {
                Spot::Member(m) => t
                    .lanes
                    .iter()
                    .position(|l| &l.name == m)
                    .map(|i| lanes_y + i as f64 * lane_h + lane_h / 2.0),
                Spot::Group(g) => band_row.get(g).map(|y| y + BAND_H / 2.0),
                Spot::Faults => Some(faults_y + FAULT_ROW_H / 2.0),
            }
            // A member the history never named, or a group with no band: the first band.
            .or_else(|| band_row.values().next().map(|y| y + BAND_H / 2.0))
            .unwrap_or(faults_y + FAULT_ROW_H / 2.0);
            let _ = write!(
                b,
                r##"<circle class="anomaly-ring" cx="{:.1}" cy="{cy:.1}" r="7" fill="{ANOMALY}" fill-opacity="0.25" stroke="{ANOMALY}" stroke-width="2"><title>{}</title></circle>"##,
                x(*at),
                esc(&format!("{}\n{what}", a.text))
            );
        }
        let label = format!("!{}", k + 1);
        if ax - last_number >= label.len() as f64 * 7.0 + 4.0 {
            let _ = write!(
                b,
                r##"<text x="{:.1}" y="{:.1}" font-size="11" font-weight="bold" fill="{ANOMALY}">{label}</text>"##,
                ax + 2.0,
                anomaly_row_y + 11.0
            );
            last_number = ax;
        }
        b.push_str("</g>\n");
    }

    // Legend.
    let mut lx = LEFT;
    let ly = legend_y;
    let mut item = |b: &mut String, swatch: String, label: &str| {
        let _ = write!(
            b,
            r##"<g transform="translate({lx:.1},{ly:.1})">{swatch}<text x="18" y="11" font-size="11">{}</text></g>"##,
            esc(label)
        );
        lx += 26.0 + label.chars().count() as f64 * 6.3;
    };
    b.push_str(r#"<g class="legend">"#);
    for s in [
        GroupState::Empty,
        GroupState::PreparingRebalance,
        GroupState::CompletingRebalance,
        GroupState::Stable,
        GroupState::Dead,
    ] {
        let (fill, _) = state_style(s);
        item(&mut b, format!(r##"<rect width="14" height="14" fill="{fill}"/>"##), s.kafka_name());
    }
    item(
        &mut b,
        format!(
            r##"<rect width="14" height="14" rx="2" fill="{}" stroke="#37474f" stroke-width="0.6"/>"##,
            GENERATION_COLOURS[1]
        ),
        "owned partitions (gN = generation)",
    );
    item(
        &mut b,
        r##"<line x1="0" y1="7" x2="14" y2="7" stroke="#9e9e9e" stroke-width="2"/>"##.into(),
        "process running",
    );
    item(
        &mut b,
        r##"<line x1="7" y1="0" x2="7" y2="14" stroke="#9e9e9e" stroke-dasharray="3,3"/>"##.into(),
        "generation start",
    );
    b.push_str("</g>\n<g class=\"legend\">");
    lx = LEFT;
    let ly = legend_y + 20.0;
    let mut item = |b: &mut String, swatch: String, label: &str| {
        let _ = write!(
            b,
            r##"<g transform="translate({lx:.1},{ly:.1})">{swatch}<text x="18" y="11" font-size="11">{}</text></g>"##,
            esc(label)
        );
        lx += 26.0 + label.chars().count() as f64 * 6.3;
    };
    item(
        &mut b,
        format!(r##"<path d="M2,1 L12,1 L7,12 Z" fill="{FAULT}"/>"##),
        "fault injected (span: its duration)",
    );
    item(
        &mut b,
        r##"<path d="M2,1 L12,1 L7,12 Z" fill="none" stroke="#9e9e9e"/>"##.into(),
        "fault skipped (no target)",
    );
    item(&mut b, format!(r##"<circle cx="7" cy="7" r="4" fill="{HEALED}"/>"##), "healed");
    item(
        &mut b,
        format!(r##"<path d="M7,1 L13,7 L7,13 L1,7 Z" fill="{CLUSTER}"/>"##),
        "cluster event",
    );
    item(
        &mut b,
        format!(r##"<path d="M4,4 L10,10 M10,4 L4,10" stroke="{REJECTED}" stroke-width="2"/>"##),
        "commit rejected",
    );
    item(
        &mut b,
        format!(r##"<line x1="7" y1="0" x2="7" y2="14" stroke="{ANOMALY}" stroke-width="2.5"/>"##),
        "partitions lost",
    );
    item(
        &mut b,
        format!(
            r##"<circle cx="7" cy="7" r="6" fill="{ANOMALY}" fill-opacity="0.25" stroke="{ANOMALY}" stroke-width="2"/>"##
        ),
        "anomaly (hover for details)",
    );
    b.push_str("</g>\n");

    let title = if t.scenario.is_empty() {
        "groupsim timeline".to_string()
    } else {
        format!("groupsim timeline: {} seed {}", t.scenario, t.seed)
    };
    let mut out = String::new();
    let _ = writeln!(
        out,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH:.0}" height="{height:.0}" viewBox="0 0 {WIDTH:.0} {height:.0}" font-family="DejaVu Sans, Arial, sans-serif">"##
    );
    let _ = writeln!(out, "<title>{}</title>", esc(&format!("{title} — {verdict_line}")));
    let _ = writeln!(out, r##"<rect width="100%" height="100%" fill="#ffffff"/>"##);
    let _ = writeln!(
        out,
        r##"<text x="{LEFT:.1}" y="20" font-size="15" font-weight="bold">{}</text><text x="{:.1}" y="20" font-size="13" text-anchor="end" fill="{}">{}</text>"##,
        esc(&title),
        WIDTH - RIGHT,
        if t.anomalies.is_empty() { HEALED } else { ANOMALY },
        esc(verdict_line)
    );
    out.push_str(&b);
    out.push_str("</svg>\n");
    out
}

/// The first words of a fault's text (its kind and target), for labels inside fault spans.
fn short_fault(text: &str) -> String {
    match text.split_once(" from [") {
        Some((head, _)) => head.to_string(),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlapping_fault_spans_go_to_separate_rows() {
        let (rows, n) = pack(&[(0.0, 100.0), (50.0, 60.0), (110.0, 120.0), (55.0, 200.0)]);
        assert_eq!(rows, vec![0, 1, 0, 2]);
        assert_eq!(n, 3);
    }

    #[test]
    fn bar_labels_fall_back_to_a_partition_count() {
        assert_eq!(
            bar_label(3, "orders[0-1] payments[0]", 3, 500.0).as_deref(),
            Some("g3 orders[0-1] payments[0]")
        );
        assert_eq!(bar_label(3, "orders[0-1] payments[0]", 3, 50.0).as_deref(), Some("g3 3p"));
        assert_eq!(bar_label(3, "orders[0-1] payments[0]", 3, 25.0).as_deref(), Some("g3"));
        assert_eq!(bar_label(3, "orders[0-1] payments[0]", 3, 10.0), None);
    }

    #[test]
    fn labels_are_cut_to_fit_or_dropped() {
        assert_eq!(fit("g1 orders[0-1]", 500.0).as_deref(), Some("g1 orders[0-1]"));
        assert_eq!(fit("g1 orders[0-1]", 10.0), None);
        let cut = fit("g1 orders[0-1] payments[0]", 60.0).unwrap();
        assert!(cut.ends_with('…') && cut.chars().count() <= 8, "{cut}");
    }
}
