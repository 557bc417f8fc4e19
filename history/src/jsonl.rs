//! The history's JSON-lines form: a header line naming the format version, then one event per
//! line, then one line per entry of the wire stream (`{"after":…,"wire":…}`). The history hash
//! covers the event lines only, so neither the header nor the wire stream changes it; the wire
//! stream has a hash of its own.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::history::History;
use crate::wire::WireRecord;

/// The version of the JSON-lines form this crate writes and the newest it reads. Files without
/// a header (written before it existed) are version 1.
pub const FORMAT_VERSION: u32 = 1;

/// The first line of a history file.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Header {
    groupsim_history: u32,
}

impl History {
    /// The header line, then one JSON object per event line: what `--save` and `serve --history`
    /// write. The event lines are the canonical serialisation the hash covers.
    pub fn to_jsonl(&self) -> String {
        let header = Header { groupsim_history: FORMAT_VERSION };
        let mut out = serde_json::to_string(&header).expect("the header always serialises");
        out.push('\n');
        for e in self.events() {
            out.push_str(&serde_json::to_string(e).expect("history events always serialise"));
            out.push('\n');
        }
        for w in self.wire() {
            out.push_str(&serde_json::to_string(w).expect("wire entries always serialise"));
            out.push('\n');
        }
        out
    }

    /// Reads a history written by [`Self::to_jsonl`] (a simulated run's or a served cluster's),
    /// with or without its header line; blank lines are skipped. A header naming a newer version
    /// is refused, and so is anything else that is not an event, with its line.
    pub fn from_jsonl(text: &str) -> Result<Self, HistoryParseError> {
        let mut events = Vec::new();
        let mut wire = Vec::new();
        let mut first = true;
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            if std::mem::take(&mut first) {
                if let Ok(Header { groupsim_history: version }) = serde_json::from_str(line) {
                    if version > FORMAT_VERSION {
                        return Err(HistoryParseError::Version { version });
                    }
                    continue;
                }
            }
            match serde_json::from_str(line) {
                Ok(event) => events.push(event),
                Err(source) => match serde_json::from_str::<WireRecord>(line) {
                    Ok(record) if record.after <= events.len() => wire.push(record),
                    Ok(record) => {
                        let (line, after) = (i + 1, record.after);
                        return Err(HistoryParseError::WireAhead { line, after });
                    }
                    Err(_) => return Err(HistoryParseError::Line { line: i + 1, source }),
                },
            }
        }
        Ok(Self::from_parts(events, wire))
    }

    /// SHA-256 of the event lines of [`Self::to_jsonl`], as hex. Same seed and binary: same hash.
    pub fn hash_hex(&self) -> String {
        let mut hasher = Sha256::new();
        // One buffer for every line: the hash of a long history is a sizeable share of a run.
        let mut line = Vec::new();
        for e in self.events() {
            line.clear();
            serde_json::to_writer(&mut line, e).expect("history events always serialise");
            line.push(b'\n');
            hasher.update(&line);
        }
        hasher.finalize().iter().map(|b| format!("{b:02x}")).collect()
    }

    /// SHA-256 of the wire lines of [`Self::to_jsonl`], as hex: the wire stream's own hash,
    /// so that recording it (or changing what it keeps) never changes [`Self::hash_hex`].
    pub fn wire_hash_hex(&self) -> String {
        let mut hasher = Sha256::new();
        let mut line = Vec::new();
        for w in self.wire() {
            line.clear();
            serde_json::to_writer(&mut line, w).expect("wire entries always serialise");
            line.push(b'\n');
            hasher.update(&line);
        }
        hasher.finalize().iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// A history file this build cannot read.
#[derive(Debug, thiserror::Error)]
pub enum HistoryParseError {
    /// A line is not a history event.
    #[error("line {line} is not a history event (JSON lines as written by `groupsim run --save` or `serve --history`)")]
    Line {
        /// The line, counting from 1.
        line: usize,
        /// What the JSON parser said.
        #[source]
        source: serde_json::Error,
    },
    /// A wire line placed after more events than the file holds before it.
    #[error(
        "line {line} is a wire entry placed after event {after}, which no line before it holds"
    )]
    WireAhead {
        /// The line, counting from 1.
        line: usize,
        /// The event count it names.
        after: usize,
    },
    /// The header names a format newer than this build reads.
    #[error(
        "history format version {version} is newer than this build reads (up to {FORMAT_VERSION})"
    )]
    Version {
        /// The version the header names.
        version: u32,
    },
}

#[cfg(test)]
mod tests {
    use groupsim_wire::TopicPartition;

    use super::*;
    use crate::{
        ConsumerGroupEvent, CoordinatorEvent, EventKind, Fault, LoadedMember, MemberEvent,
        WorldEvent,
    };

    fn sample() -> History {
        let mut h = History::new();
        h.world(0, WorldEvent::RunStarted { scenario: "s".into(), seed: 7 });
        h.world(
            5,
            WorldEvent::FaultInjected {
                fault: Fault::MemberPause { member: "m1".into(), duration_ms: 100 },
                applied: true,
            },
        );
        h.record(
            9,
            EventKind::Member {
                member: "m1".into(),
                event: MemberEvent::GenerationReset {
                    member_id: "a".into(),
                    generation: 2,
                    error: "ILLEGAL_GENERATION".into(),
                    reset_member_id: false,
                    answer_about: None,
                },
            },
        );
        h.record(
            12,
            EventKind::Coordinator {
                broker: 1,
                event: CoordinatorEvent::ConsumerGroup(ConsumerGroupEvent::GroupLoaded {
                    group: "g".into(),
                    partition: 0,
                    group_epoch: 3,
                    assignment_epoch: 3,
                    members: vec![LoadedMember {
                        member_id: "a".into(),
                        group_instance_id: None,
                        member_epoch: 3,
                        owned: vec![TopicPartition::new("t", 0)],
                        revoking: vec![],
                        state: "STABLE".into(),
                        target: vec![],
                        classic_protocol: false,
                    }],
                }),
            },
        );
        h
    }

    #[test]
    fn the_file_form_is_a_header_then_one_event_per_line_and_reads_back() {
        let h = sample();
        let text = h.to_jsonl();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], r#"{"groupsim_history":1}"#);
        assert_eq!(lines.len(), 1 + h.len());
        assert_eq!(History::from_jsonl(&text).unwrap(), h);
    }

    #[test]
    fn empty_and_default_fields_are_left_out_of_event_lines() {
        let text = sample().to_jsonl();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[3],
            r#"{"at_ms":9,"kind":{"Member":{"member":"m1","event":{"GenerationReset":{"member_id":"a","generation":2,"error":"ILLEGAL_GENERATION","reset_member_id":false}}}}}"#
        );
        assert_eq!(
            lines[4],
            r#"{"at_ms":12,"kind":{"Coordinator":{"broker":1,"event":{"ConsumerGroup":{"GroupLoaded":{"group":"g","partition":0,"group_epoch":3,"assignment_epoch":3,"members":[{"member_id":"a","member_epoch":3,"owned":[{"topic":"t","partition":0}],"state":"STABLE"}]}}}}}}"#
        );
        assert!(lines[2].contains(r#""fault":{"kind":"member_pause","member":"m1""#));
    }

    #[test]
    fn the_hash_covers_the_event_lines_only() {
        let h = sample();
        let text = h.to_jsonl();
        let events = text.split_once('\n').unwrap().1;
        let expected: String =
            Sha256::digest(events.as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(h.hash_hex(), expected);
    }

    #[test]
    fn a_file_without_a_header_reads_as_version_one() {
        let h = sample();
        let text = h.to_jsonl();
        let events = text.split_once('\n').unwrap().1;
        assert_eq!(History::from_jsonl(&format!("\n{events}")).unwrap(), h);
    }

    #[test]
    fn a_newer_version_and_a_line_that_is_no_event_are_refused() {
        let newer = format!("{{\"groupsim_history\":{}}}\n", FORMAT_VERSION + 1);
        let e = History::from_jsonl(&newer).unwrap_err();
        assert!(
            matches!(e, HistoryParseError::Version { version } if version == FORMAT_VERSION + 1)
        );
        let text = format!("{}{{\"groupsim_history\":1}}\n", sample().to_jsonl());
        let e = History::from_jsonl(&text).unwrap_err();
        assert!(matches!(e, HistoryParseError::Line { line: 6, .. }), "{e}");
    }

    fn with_wire() -> History {
        use crate::wire::{Answer, Entry, Exchange, Request};
        let mut h = sample();
        h.record_wire(Entry::Exchange(Exchange {
            actor: "m1.0".into(),
            sent_ms: 12,
            answered_ms: 14,
            request: Request::Heartbeat { member_id: "a".into(), generation: 2, instance: None },
            answer: Answer::Error { error: 27 },
            group: "g".into(),
            node: Some(1),
            conn: None,
        }));
        h
    }

    #[test]
    fn the_wire_stream_follows_the_events_reads_back_and_leaves_the_history_hash_alone() {
        let (plain, wired) = (sample(), with_wire());
        assert_eq!(plain.hash_hex(), wired.hash_hex());
        assert_ne!(plain.wire_hash_hex(), wired.wire_hash_hex());
        let text = wired.to_jsonl();
        assert!(text.lines().last().unwrap().starts_with(r#"{"after":4,"wire":{"Exchange""#));
        assert_eq!(History::from_jsonl(&text).unwrap(), wired);
    }

    #[test]
    fn a_wire_line_placed_after_events_not_yet_read_is_refused() {
        let text = with_wire().to_jsonl();
        let mut lines: Vec<&str> = text.lines().collect();
        let wire = lines.pop().unwrap();
        lines.insert(2, wire);
        let e = History::from_jsonl(&lines.join("\n")).unwrap_err();
        assert!(matches!(e, HistoryParseError::WireAhead { line: 3, after: 4 }), "{e}");
    }
}
