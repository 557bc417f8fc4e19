//! The adapters' processed-record logs: one JSON line per record an application processed
//! (`{"client", "topic", "partition", "offset", "ts"}`, `ts` in Unix milliseconds), read into
//! the checker's [`Processed`] records on the history's clock.

use std::path::Path;

use groupsim_wire::{Millis, TopicPartition};
use serde::Deserialize;

use super::error::CheckError;
use groupsim_checker::black_box::Processed;

#[derive(Deserialize)]
struct Line {
    client: String,
    topic: String,
    partition: i32,
    offset: i64,
    ts: f64,
}

/// Reads one processed-record log. `started_unix_ms` is when the cluster's clock started. A
/// last line without its newline is a record whose processing a SIGKILL cut short: it was not
/// processed (its commit cannot have been sent). Any other line that is not a record is garbage.
pub fn read_log(path: &Path, started_unix_ms: f64) -> Result<Vec<Processed>, CheckError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(CheckError::io(format!("reading {}", path.display()), e)),
    };
    let complete = match text.rfind('\n') {
        Some(i) => &text[..=i],
        None => "",
    };
    let mut out = Vec::new();
    for (i, line) in complete.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let parsed: Line =
            serde_json::from_str(line).map_err(|_| CheckError::ProcessedGarbage {
                path: path.to_path_buf(),
                line: i + 1,
                text: line.chars().take(200).collect(),
            })?;
        out.push(Processed {
            client: parsed.client,
            partition: TopicPartition::new(parsed.topic, parsed.partition),
            offset: parsed.offset,
            at_ms: (parsed.ts - started_unix_ms).max(0.0) as Millis,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_read_on_the_cluster_clock_and_a_torn_last_line_is_not_processed() {
        let dir = std::env::temp_dir().join(format!("groupsim-processed-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("m0.jsonl");
        let line = |o: i64| {
            format!(
                r#"{{"client":"c","topic":"t","partition":1,"offset":{o},"ts":{}}}"#,
                1000.5 + o as f64
            )
        };
        std::fs::write(&path, format!("{}\n{}\n{{\"client\":\"c\",\"top", line(0), line(1)))
            .unwrap();
        let got = read_log(&path, 1000.0).unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!((got[1].offset, got[1].at_ms, got[1].partition.partition), (1, 1, 1));
        std::fs::write(&path, format!("{}\nnot json\n", line(0))).unwrap();
        let e = read_log(&path, 1000.0).unwrap_err().to_string();
        assert!(e.contains("m0.jsonl:2: not a processed record"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
