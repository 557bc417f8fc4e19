//! Pictures of a run (`groupsim trace --format mermaid|svg|html`): the SVG and the HTML page are
//! well-formed XML, show a lane for every member and a marker for every fault, ring the events
//! that prove an anomaly, and the Mermaid diagram draws the chosen rebalance. A tiny XML checker
//! lives here so the test needs no XML crate.

use groupsim::pictures::{self, Format, PictureError};
use groupsim::runner::{run_seed, run_seed_with, RunOptions};
use groupsim::scenarios;
use groupsim_checker::{Anomaly, AnomalyClass, Verdict};
use groupsim_history::{EventKind, History, WorldEvent};

/// One element: its name, attributes (unescaped) and the text directly inside it (unescaped).
#[derive(Debug)]
struct Element {
    name: String,
    attrs: Vec<(String, String)>,
    text: String,
}

impl Element {
    fn attr(&self, name: &str) -> Option<&str> {
        self.attrs.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
}

fn unescape(s: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        let end = rest[i..].find(';').ok_or_else(|| format!("unterminated entity in {s:?}"))?;
        let entity = &rest[i + 1..i + end];
        let c = match entity {
            "amp" => '&',
            "lt" => '<',
            "gt" => '>',
            "quot" => '"',
            "apos" => '\'',
            e if e.starts_with("#x") => u32::from_str_radix(&e[2..], 16)
                .ok()
                .and_then(char::from_u32)
                .ok_or_else(|| format!("bad entity &{e};"))?,
            e if e.starts_with('#') => e[1..]
                .parse::<u32>()
                .ok()
                .and_then(char::from_u32)
                .ok_or_else(|| format!("bad entity &{e};"))?,
            e => return Err(format!("unknown entity &{e};")),
        };
        out.push(c);
        rest = &rest[i + end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

fn is_name_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '-' | '_' | ':' | '.')
}

/// Checks that `doc` is well-formed XML (one root, tags nested and closed, attributes quoted and
/// unique, entities known, no raw `<` or `&` in text) and returns its elements in document order.
fn parse_xml(doc: &str) -> Result<Vec<Element>, String> {
    let mut elements: Vec<Element> = Vec::new();
    let mut stack: Vec<(String, usize)> = Vec::new();
    let mut roots = 0;
    let mut i = 0;
    let b = doc.as_bytes();
    while i < doc.len() {
        if b[i] == b'<' {
            let rest = &doc[i..];
            if let Some(r) = rest.strip_prefix("<!--") {
                let end = r.find("-->").ok_or("unterminated comment")?;
                i += 4 + end + 3;
            } else if rest.starts_with("<?") {
                i += rest.find("?>").ok_or("unterminated processing instruction")? + 2;
            } else if rest.starts_with("<!DOCTYPE") {
                if roots > 0 || !stack.is_empty() {
                    return Err("DOCTYPE after the root".into());
                }
                i += rest.find('>').ok_or("unterminated DOCTYPE")? + 1;
            } else if let Some(r) = rest.strip_prefix("</") {
                let end = r.find('>').ok_or("unterminated end tag")?;
                let name = r[..end].trim();
                let (open, _) = stack.pop().ok_or_else(|| format!("</{name}> closes nothing"))?;
                if open != name {
                    return Err(format!("</{name}> closes <{open}>"));
                }
                i += 2 + end + 1;
            } else {
                // A start tag: name, attributes, `>` or `/>`.
                let mut j = i + 1;
                while j < doc.len() && is_name_char(doc[j..].chars().next().unwrap()) {
                    j += doc[j..].chars().next().unwrap().len_utf8();
                }
                let name = doc[i + 1..j].to_string();
                if name.is_empty() {
                    return Err(format!("raw '<' at byte {i}"));
                }
                let mut attrs: Vec<(String, String)> = Vec::new();
                let self_closing;
                loop {
                    while j < doc.len() && b[j].is_ascii_whitespace() {
                        j += 1;
                    }
                    if doc[j..].starts_with("/>") {
                        self_closing = true;
                        j += 2;
                        break;
                    }
                    if doc[j..].starts_with('>') {
                        self_closing = false;
                        j += 1;
                        break;
                    }
                    let k = j;
                    while j < doc.len() && is_name_char(doc[j..].chars().next().unwrap()) {
                        j += doc[j..].chars().next().unwrap().len_utf8();
                    }
                    let an = doc[k..j].to_string();
                    if an.is_empty() || !doc[j..].starts_with('=') {
                        return Err(format!("bad attribute in <{name}> at byte {k}"));
                    }
                    j += 1;
                    let q = doc[j..].chars().next().ok_or("eof in attribute")?;
                    if q != '"' && q != '\'' {
                        return Err(format!("unquoted attribute {an} in <{name}>"));
                    }
                    let end = doc[j + 1..].find(q).ok_or("unterminated attribute")?;
                    let raw = &doc[j + 1..j + 1 + end];
                    if raw.contains('<') {
                        return Err(format!("'<' in attribute {an} of <{name}>"));
                    }
                    if attrs.iter().any(|(a, _)| *a == an) {
                        return Err(format!("duplicate attribute {an} in <{name}>"));
                    }
                    attrs.push((an, unescape(raw)?));
                    j += 1 + end + 1;
                }
                if stack.is_empty() {
                    roots += 1;
                    if roots > 1 {
                        return Err(format!("second root element <{name}>"));
                    }
                }
                elements.push(Element { name: name.clone(), attrs, text: String::new() });
                if !self_closing {
                    stack.push((name, elements.len() - 1));
                }
                i = j;
            }
        } else {
            let end = doc[i..].find('<').map_or(doc.len(), |e| i + e);
            let raw = &doc[i..end];
            let text = unescape(raw)?;
            match stack.last() {
                Some(&(_, idx)) => elements[idx].text.push_str(&text),
                None if text.trim().is_empty() => {}
                None => return Err(format!("text outside the root: {:?}", text.trim())),
            }
            i = end;
        }
    }
    if let Some((open, _)) = stack.pop() {
        return Err(format!("<{open}> never closed"));
    }
    if roots != 1 {
        return Err("no root element".into());
    }
    Ok(elements)
}

fn run(name: &str, seed: u64) -> groupsim::runner::RunReport {
    run_seed(&scenarios::find(name).expect("in catalogue"), seed).expect("run")
}

fn faults(history: &History) -> Vec<String> {
    history
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::World(WorldEvent::FaultInjected { fault, .. }) => Some(fault.to_string()),
            _ => None,
        })
        .collect()
}

fn members(history: &History) -> Vec<String> {
    let mut names: Vec<String> = history
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Member { member, .. } => Some(member.clone()),
            EventKind::World(WorldEvent::MemberStarted { member, .. }) => Some(member.clone()),
            _ => None,
        })
        .collect();
    names.sort();
    names.dedup();
    names
}

#[test]
fn xml_checker_rejects_broken_documents() {
    assert!(parse_xml(r#"<svg a="1"><g><title>x &amp; y</title></g></svg>"#).is_ok());
    for bad in [
        "<svg><g></svg>",
        "<svg>a < b</svg>",
        "<svg>a & b</svg>",
        r#"<svg a=1/>"#,
        r#"<svg a="<"/>"#,
        r#"<svg a="1" a="2"/>"#,
        "<svg/><svg/>",
        "<svg><g>",
    ] {
        assert!(parse_xml(bad).is_err(), "{bad} accepted");
    }
}

#[test]
fn swarm_svg_is_well_formed_with_every_member_lane_and_every_fault() {
    let r = run("swarm", 1);
    let svg = pictures::render(Format::Svg, &r.history, &r.verdict, None).expect("svg");
    let els = parse_xml(&svg).unwrap_or_else(|e| panic!("SVG not well-formed: {e}"));
    assert_eq!(els[0].name, "svg");
    assert_eq!(els[0].attr("xmlns"), Some("http://www.w3.org/2000/svg"));

    let lanes: Vec<&str> = els
        .iter()
        .filter(|e| e.attr("class") == Some("lane"))
        .filter_map(|e| e.attr("data-member"))
        .collect();
    assert_eq!(lanes, members(&r.history), "one lane per member, in order");

    let fault_titles: Vec<&str> = els
        .iter()
        .enumerate()
        .filter(|(_, e)| e.attr("class") == Some("fault"))
        .map(|(i, _)| els[i + 1].text.as_str())
        .collect();
    let injected = faults(&r.history);
    assert!(!injected.is_empty(), "swarm seed 1 injects faults");
    assert_eq!(fault_titles.len(), injected.len());
    for (title, fault) in fault_titles.iter().zip(&injected) {
        assert!(title.contains(fault.as_str()), "{title:?} lacks {fault:?}");
    }
    // The group's state band and the ownership bars are there, and no anomaly is drawn on a
    // clean run.
    assert!(els.iter().any(|e| e.attr("class") == Some("state")));
    assert!(
        els.iter().filter(|e| e.attr("class") == Some("owned")).count()
            >= members(&r.history).len()
    );
    assert!(r.verdict.is_ok());
    assert!(!els.iter().any(|e| e.attr("class") == Some("anomaly")));
}

#[test]
fn html_page_is_well_formed_and_embeds_the_svg_with_heading_and_anomaly_list() {
    let r = run("swarm", 1);
    let html = pictures::render(Format::Html, &r.history, &r.verdict, None).expect("html");
    assert!(html.starts_with("<!DOCTYPE html>"));
    let els = parse_xml(&html).unwrap_or_else(|e| panic!("HTML not well-formed: {e}"));
    assert_eq!(els[0].name, "html");
    assert!(els.iter().any(|e| e.name == "svg"));
    let h1 = els.iter().find(|e| e.name == "h1").expect("heading");
    assert!(h1.text.contains("swarm") && h1.text.contains("seed 1"), "{}", h1.text);
    assert!(els.iter().any(|e| e.name == "span" && e.text.starts_with("PASS")));
    assert!(els.iter().any(|e| e.name == "h2" && e.text == "Anomalies (0)"));
}

#[test]
fn anomalies_are_ringed_in_red_when_a_bug_switch_is_on() {
    let s = scenarios::find("membership_churn").expect("in catalogue");
    let bug = groupsim::bugs::find("assignor-double-assigns").expect("bug switch");
    let r =
        run_seed_with(&s, 0, &RunOptions { bug: Some(bug), ..RunOptions::default() }).expect("run");
    assert!(
        r.verdict.anomalies.iter().any(|a| a.class == AnomalyClass::SplitAssignment),
        "the bug switch bites: {:?}",
        r.verdict.counts()
    );
    let svg = pictures::render(Format::Svg, &r.history, &r.verdict, None).expect("svg");
    let els = parse_xml(&svg).unwrap_or_else(|e| panic!("SVG not well-formed: {e}"));
    let anomaly_groups: Vec<usize> = els
        .iter()
        .enumerate()
        .filter(|(_, e)| e.attr("class") == Some("anomaly"))
        .map(|(i, _)| i)
        .collect();
    assert_eq!(anomaly_groups.len(), r.verdict.anomalies.len());
    let first = &r.verdict.anomalies[0];
    assert!(els[anomaly_groups[0] + 1].text.contains(&first.message));
    let rings = els.iter().filter(|e| e.attr("class") == Some("anomaly-ring")).count();
    let proving: usize = r.verdict.anomalies.iter().map(|a| a.events.len().max(1)).sum();
    assert_eq!(rings, proving, "one red ring per proving event");

    let html = pictures::render(Format::Html, &r.history, &r.verdict, None).expect("html");
    let els = parse_xml(&html).unwrap_or_else(|e| panic!("HTML not well-formed: {e}"));
    let items =
        els.iter().filter(|e| e.name == "b" && e.text.starts_with("split-assignment")).count();
    assert!(items >= 1, "the anomaly list names the split assignment");
}

#[test]
fn hand_made_anomaly_rings_the_member_lane_of_a_zombie_commit() {
    use groupsim_checker::Stats;
    use groupsim_history::CoordinatorEvent;
    use groupsim_wire::TopicPartition;
    let tp = TopicPartition::new("orders", 0);
    let mut h = History::new();
    h.world(0, WorldEvent::RunStarted { scenario: "hand<made>".into(), seed: 7 });
    h.world(
        10,
        WorldEvent::MemberStarted {
            member: "m0".into(),
            group: "g".into(),
            host: "client-0".into(),
        },
    );
    h.record(
        20,
        EventKind::Coordinator {
            broker: 0,
            event: CoordinatorEvent::MemberAdded {
                group: "g".into(),
                member_id: "m0-1".into(),
                group_instance_id: None,
                client_id: "m0".into(),
            },
        },
    );
    h.record(
        5_000,
        EventKind::Coordinator {
            broker: 0,
            event: CoordinatorEvent::OffsetCommitAccepted {
                group: "g".into(),
                member_id: "m0-1".into(),
                generation: 1,
                partition: tp.clone(),
                offset: 3,
                validated_at_ms: 4_998,
            },
        },
    );
    h.world(9_000, WorldEvent::RunEnded);
    let verdict = Verdict {
        anomalies: vec![Anomaly {
            class: AnomalyClass::ZombieCommit,
            partition: Some(tp),
            at_ms: 5_000,
            message: "m0-1 committed after it was removed & \"fenced\"".into(),
            events: vec![3],
            exchanges: Vec::new(),
        }],
        hazards: Vec::new(),
        stats: Stats::default(),
    };
    let svg = pictures::render(Format::Svg, &h, &verdict, None).expect("svg");
    let els = parse_xml(&svg).unwrap_or_else(|e| panic!("SVG not well-formed: {e}"));
    let ring = els.iter().find(|e| e.attr("class") == Some("anomaly-ring")).expect("ring");
    let lane_label =
        els.iter().find(|e| e.attr("class") == Some("lane-label") && e.text == "m0").expect("lane");
    let ring_y: f64 = ring.attr("cy").unwrap().parse().unwrap();
    let label_y: f64 = lane_label.attr("y").unwrap().parse().unwrap();
    assert!((ring_y - label_y).abs() < 10.0, "ring at y={ring_y}, m0 lane label at y={label_y}");
    assert!(svg.contains("hand&lt;made&gt;"), "text is escaped");
    let html = pictures::render(Format::Html, &h, &verdict, None).expect("html");
    parse_xml(&html).unwrap_or_else(|e| panic!("HTML not well-formed: {e}"));
    let _ = groupsim_checker::check; // the verdict above is hand-made, not the checker's
}

#[test]
fn mermaid_starts_with_sequence_diagram_and_names_the_default_generation() {
    let r = run("swarm", 1);
    let m = pictures::render(Format::Mermaid, &r.history, &r.verdict, None).expect("mermaid");
    assert!(m.starts_with("sequenceDiagram\n"), "{m}");
    // The default is the first generation with more than one member.
    let first_multi = r
        .history
        .events()
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::Coordinator {
                event:
                    groupsim_history::CoordinatorEvent::GenerationStarted {
                        generation, members, ..
                    },
                ..
            } if members.len() > 1 => Some(*generation),
            _ => None,
        })
        .expect("a generation with several members");
    assert!(m.contains(&format!("rebalance to generation {first_multi} ")), "{m}");
    assert!(m.contains(&format!("generation {first_multi} started")), "{m}");
    assert!(m.contains("JoinGroup ok") && m.contains("SyncGroup ok"), "{m}");
    assert!(!m.contains(';') && !m.contains('#'), "no Mermaid statement separators or entities");
}

#[test]
fn mermaid_draws_the_asked_generation_and_rejects_one_that_never_started() {
    let r = run("swarm", 1);
    let m = pictures::render(Format::Mermaid, &r.history, &r.verdict, Some(2)).expect("mermaid");
    assert!(m.contains("rebalance to generation 2 "), "{m}");
    let err = pictures::render(Format::Mermaid, &r.history, &r.verdict, Some(999)).unwrap_err();
    assert!(matches!(err, PictureError::UnknownGeneration { asked: 999, .. }), "{err}");
    let text = err.to_string();
    assert!(text.contains("999") && text.contains("1, 2"), "{text}");
}

#[test]
fn join_storm_svg_has_a_lane_for_each_of_a_thousand_members() {
    let r =
        groupsim::runner::run_spec(groupsim::scenarios::storm::join_storm_1000(0)).expect("run");
    let svg = pictures::render(Format::Svg, &r.history, &r.verdict, None).expect("svg");
    let els = parse_xml(&svg).unwrap_or_else(|e| panic!("SVG not well-formed: {e}"));
    let lanes = els.iter().filter(|e| e.attr("class") == Some("lane")).count();
    assert_eq!(lanes, 1_000);
    // For a look in a browser: GROUPSIM_PICTURES_OUT=<dir> writes the page there.
    if let Ok(dir) = std::env::var("GROUPSIM_PICTURES_OUT") {
        let html = pictures::render(Format::Html, &r.history, &r.verdict, None).expect("html");
        std::fs::write(std::path::Path::new(&dir).join("join_storm_1000-0.html"), html)
            .expect("write");
        std::fs::write(std::path::Path::new(&dir).join("join_storm_1000-0.txt"), r.summary())
            .expect("write");
    }
}
