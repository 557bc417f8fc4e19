//! The served cluster's history: the same [`History`] events the simulation records, from the
//! same coordinator core, stamped with real milliseconds since the cluster started.
//!
//! The brokers' cores report their [`CoordinatorEvent`]s here (group states, generations,
//! members, the assignment each member received, commits accepted and refused, loads and
//! unloads); the Produce hook reports the records appended per partition; the admin hooks and
//! the nemesis report what they did to the cluster (broker stops and starts, coordinator moves,
//! faults). Unlike a simulated history it is repeatable, not bit-exact: real clients and real
//! time decide the interleaving.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use groupsim_coordinator::cluster::{self, SharedClusterState};
use groupsim_coordinator::CoordinatorEvent;
use groupsim_history::wire::WireRecord;
use groupsim_history::{EventKind, History, WorldEvent};
use groupsim_wire::records::check_batches;
use groupsim_wire::{Millis, TopicPartition};
use kafka_protocol::messages::{ProduceRequest, ProduceResponse};
use kafka_protocol::records::RecordBatchDecoder;

use groupsim::record::IntoHistory;

/// Records a served cluster's history; cheap to clone (all clones share one history).
#[derive(Clone)]
pub struct Recorder {
    started: Instant,
    /// `started` as Unix milliseconds, to put other processes' wall-clock stamps on this clock.
    started_unix_ms: f64,
    history: Arc<Mutex<History>>,
    /// Every group a coordinator reported, to name the groups a coordinator move takes along.
    groups: Arc<Mutex<BTreeSet<String>>>,
    /// Where the wire stream goes instead of memory, once [`Self::spill_wire_to`] is called.
    spill: Arc<Mutex<Option<Spill>>>,
}

/// The wire stream written to a file as it is recorded: a long-running `serve` answers far more
/// requests than it records events, and kept in memory its wire stream would grow its RSS with
/// every request served.
struct Spill {
    path: PathBuf,
    file: BufWriter<File>,
}

impl Recorder {
    /// An empty history whose clock starts at `started`.
    pub fn new(started: Instant) -> Self {
        let since_unix = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
        let started_unix_ms = (since_unix.saturating_sub(started.elapsed())).as_secs_f64() * 1e3;
        Self {
            started,
            started_unix_ms,
            history: Arc::default(),
            groups: Arc::default(),
            spill: Arc::default(),
        }
    }

    /// Real milliseconds since the cluster started.
    pub fn now(&self) -> Millis {
        self.started.elapsed().as_millis() as Millis
    }

    /// When the cluster started.
    pub fn started(&self) -> Instant {
        self.started
    }

    /// When the cluster started, in Unix milliseconds (for adapters' wall-clock stamps).
    pub fn started_unix_ms(&self) -> f64 {
        self.started_unix_ms
    }

    /// Records a coordinator event of broker `broker` at `at_ms`.
    pub fn coordinator(&self, broker: i32, at_ms: Millis, event: CoordinatorEvent) {
        if let CoordinatorEvent::GroupStateChanged { group, .. } = &event {
            let mut groups = self.groups.lock().unwrap_or_else(|p| p.into_inner());
            if !groups.contains(group) {
                groups.insert(group.clone());
            }
        }
        self.record(at_ms, EventKind::Coordinator { broker, event: event.into_history() });
    }

    /// Records a world event now.
    pub fn world(&self, event: WorldEvent) {
        self.record(self.now(), EventKind::World(event));
    }

    /// Records, for every partition `request` appended to without error, the records it added.
    pub fn produced(&self, request: &ProduceRequest, response: &ProduceResponse) {
        for (topic, answer) in request.topic_data.iter().zip(&response.responses) {
            for (data, part) in topic.partition_data.iter().zip(&answer.partition_responses) {
                let count = record_count(data.records.as_ref());
                if part.error_code != 0 || count == 0 || data.index != part.index {
                    continue;
                }
                self.world(WorldEvent::Produced {
                    partition: TopicPartition::new(topic.name.to_string(), data.index),
                    base_offset: part.base_offset,
                    count,
                });
            }
        }
    }

    /// The groups seen so far whose coordinator is offsets partition `partition`'s leader.
    pub fn groups_of_partition(&self, partition: i32, state: &SharedClusterState) -> Vec<String> {
        let groups = self.groups.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let state = cluster::lock(state);
        groups.into_iter().filter(|g| state.group_partition(g) == partition).collect()
    }

    /// The events recorded after the first `from` (for watchers that read as it grows).
    pub fn events_since(&self, from: usize) -> Vec<groupsim_history::Event> {
        self.lock().events().get(from..).map(<[_]>::to_vec).unwrap_or_default()
    }

    /// A copy of the history so far. Events are in the order recorded; brokers stamp their
    /// events when they happen, so two brokers' events may be a millisecond out of order. A
    /// spilled wire stream is read back from its file.
    pub fn snapshot(&self) -> History {
        // The history's lock, then the spill's: the order `wire` takes them in.
        let history = self.lock();
        let mut spill = self.spill.lock().unwrap_or_else(|p| p.into_inner());
        let Some(spill) = spill.as_mut() else { return history.clone() };
        let wire = spill.read_back().unwrap_or_else(|e| {
            let file = spill.path.display();
            tracing::warn!(%file, error = %e, "the spilled wire stream did not read back");
            Vec::new()
        });
        History::from_parts(history.events().to_vec(), wire)
    }

    /// From now on, writes the wire stream to `path` (JSON lines, as the history file holds
    /// them) instead of keeping it in memory; what was recorded before goes there first.
    /// [`Self::save`] then copies it after the events, and [`Self::snapshot`] reads it back.
    pub fn spill_wire_to(&self, path: &Path) -> std::io::Result<()> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        let mut file = BufWriter::new(File::create(path)?);
        let mut history = self.lock();
        for record in history.wire() {
            write_line(&mut file, record)?;
        }
        *history = History::from_parts(history.events().to_vec(), Vec::new());
        let spill = Spill { path: path.to_path_buf(), file };
        *self.spill.lock().unwrap_or_else(|p| p.into_inner()) = Some(spill);
        Ok(())
    }

    /// Writes the history so far to `path` as JSON lines (the format of `groupsim run --save`):
    /// the events, then the wire stream, copied from its spill file when it has one.
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        let history = self.lock();
        let mut spill = self.spill.lock().unwrap_or_else(|p| p.into_inner());
        let Some(spill) = spill.as_mut() else {
            return std::fs::write(path, history.to_jsonl());
        };
        spill.file.flush()?;
        let events = History::from_parts(history.events().to_vec(), Vec::new());
        let mut out = BufWriter::new(File::create(path)?);
        out.write_all(events.to_jsonl().as_bytes())?;
        std::io::copy(&mut File::open(&spill.path)?, &mut out)?;
        out.flush()
    }

    /// Removes the spill file (once the history is saved for good).
    pub fn remove_spill(&self) {
        if let Some(spill) = self.spill.lock().unwrap_or_else(|p| p.into_inner()).take() {
            drop(spill.file);
            let _ = std::fs::remove_file(&spill.path);
        }
    }

    /// Records a coordinator event already in the history's form, now (tests feed the nemesis
    /// moments no real client is there to make).
    #[cfg(test)]
    pub(super) fn history_coordinator(
        &self,
        broker: i32,
        event: groupsim_history::CoordinatorEvent,
    ) {
        self.record(self.now(), EventKind::Coordinator { broker, event });
    }

    /// Adds an entry to the wire stream (after the events recorded so far).
    pub fn wire(&self, entry: groupsim_history::wire::Entry) {
        let mut history = self.lock();
        let mut spill = self.spill.lock().unwrap_or_else(|p| p.into_inner());
        let Some(spill) = spill.as_mut() else { return history.record_wire(entry) };
        let record = WireRecord { after: history.events().len(), wire: entry };
        if let Err(e) = write_line(&mut spill.file, &record) {
            tracing::warn!(file = %spill.path.display(), error = %e, "a wire entry was not spilled");
        }
    }

    fn record(&self, at_ms: Millis, kind: EventKind) {
        self.lock().record(at_ms, kind);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, History> {
        self.history.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Spill {
    /// The wire stream written so far.
    fn read_back(&mut self) -> std::io::Result<Vec<WireRecord>> {
        self.file.flush()?;
        let text = std::fs::read_to_string(&self.path)?;
        text.lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).map_err(std::io::Error::other))
            .collect()
    }
}

/// One JSON line.
fn write_line(out: &mut impl Write, record: &WireRecord) -> std::io::Result<()> {
    serde_json::to_writer(&mut *out, record).map_err(std::io::Error::other)?;
    out.write_all(b"\n")
}

/// How many records a (valid, uncompressed) record set holds; 0 for anything else.
fn record_count(records: Option<&bytes::Bytes>) -> i64 {
    let Some(bytes) = records else { return 0 };
    if check_batches(bytes).is_err() {
        return 0;
    }
    RecordBatchDecoder::decode_batch_info(&mut bytes.clone())
        .map_or(0, |infos| infos.iter().map(|i| i64::from(i.record_count)).sum())
}

#[cfg(test)]
mod tests {
    use super::*;
    use groupsim_wire::test_util::produced_batch;
    use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
    use kafka_protocol::messages::produce_response::{
        PartitionProduceResponse, TopicProduceResponse,
    };
    use kafka_protocol::messages::TopicName;
    use kafka_protocol::protocol::StrBytes;
    use kafka_protocol::records::Compression;

    #[test]
    fn a_produce_is_recorded_per_partition_with_its_base_offset_and_count() {
        let recorder = Recorder::new(Instant::now());
        let data = |index, values: &[&str]| {
            PartitionProduceData::default()
                .with_index(index)
                .with_records(Some(produced_batch(values, Compression::None)))
        };
        let request = ProduceRequest::default().with_topic_data(vec![TopicProduceData::default()
            .with_name(TopicName(StrBytes::from_static_str("t")))
            .with_partition_data(vec![data(0, &["a", "b"]), data(1, &["c"])])]);
        let answer = |index, base, error| {
            PartitionProduceResponse::default()
                .with_index(index)
                .with_base_offset(base)
                .with_error_code(error)
        };
        let response =
            ProduceResponse::default().with_responses(vec![TopicProduceResponse::default()
                .with_partition_responses(vec![
                    answer(0, 7, 0),
                    answer(1, -1, 6), // NOT_LEADER_OR_FOLLOWER: nothing appended
                ])]);
        recorder.produced(&request, &response);
        let history = recorder.snapshot();
        let produced: Vec<&WorldEvent> = history
            .events()
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::World(w) => Some(w),
                _ => None,
            })
            .collect();
        assert_eq!(
            produced,
            vec![&WorldEvent::Produced {
                partition: TopicPartition::new("t", 0),
                base_offset: 7,
                count: 2
            }]
        );
    }

    /// A wire stream spilled to a file saves, snapshots and reads back exactly as one kept in
    /// memory, with each entry still after the events recorded before it; the spill file goes
    /// once removed.
    #[test]
    fn a_spilled_wire_stream_saves_and_snapshots_as_one_kept_in_memory() {
        use groupsim_history::wire::{Entry, Request};
        let entry = |k: u64| Entry::Unanswered {
            actor: format!("m{k}.0"),
            sent_ms: k,
            call: Request::OffsetFetch { partitions: vec![TopicPartition::new("t", 0)] },
            group: "g".into(),
        };
        let play = |recorder: &Recorder| {
            recorder.world(WorldEvent::RunEnded);
            recorder.wire(entry(1));
            recorder.world(WorldEvent::RunEnded);
            recorder.wire(entry(2));
            recorder.wire(entry(3));
        };
        // A folder that does not exist yet: the spill makes it, as `save` does.
        let dir = std::env::temp_dir().join(format!("groupsim-spill-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let memory = Recorder::new(Instant::now());
        play(&memory);
        let spilled = Recorder::new(Instant::now());
        spilled.wire(entry(0)); // before the spill: moved to the file
        spilled.spill_wire_to(&dir.join("h.jsonl.wire")).expect("spill file");
        play(&spilled);
        memory.wire(entry(4));
        spilled.wire(entry(4));
        let mut expected = memory.snapshot();
        expected = History::from_parts(expected.events().to_vec(), {
            let mut w = vec![WireRecord { after: 0, wire: entry(0) }];
            w.extend(expected.wire().iter().cloned());
            w
        });
        assert_eq!(spilled.snapshot().wire(), expected.wire());
        assert_eq!(spilled.snapshot().events().len(), expected.events().len());
        spilled.save(&dir.join("h.jsonl")).expect("saves");
        let text = std::fs::read_to_string(dir.join("h.jsonl")).expect("reads");
        let read = History::from_jsonl(&text).expect("a history file");
        assert_eq!(read.wire(), expected.wire());
        assert_eq!(read.events(), spilled.snapshot().events());
        spilled.remove_spill();
        assert!(!dir.join("h.jsonl.wire").exists(), "the spill file is removed");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
