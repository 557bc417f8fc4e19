//! Members against groupsim's own broker core, in process: every request and answer goes
//! through the Kafka wire encoding at the broker's newest served version, with 1 ms of latency
//! and no faults. This checks that the member and the coordinator agree on the protocol.

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;
use groupsim_coordinator::broker::{Broker, BrokerConfig};
use groupsim_coordinator::log::{shared, PartitionLogs};
use groupsim_coordinator::CoordinatorOutput;
use groupsim_member::compat::fit_request_to_version;
use groupsim_member::{
    Member, MemberConfig, MemberEvent, MemberOutput, Millis, RequestId, TopicPartition,
};
use groupsim_wire::codec::{
    decode_request, decode_response, encode_request, encode_response, request_api_key,
};
use groupsim_wire::versions::served_versions;
use kafka_protocol::messages::{ApiKey, RequestHeader, RequestKind, ResponseKind};
use kafka_protocol::protocol::StrBytes;

const PARTITIONS: i32 = 6;
const RECORDS: i64 = 20;

enum Msg {
    ToBroker { member: usize, id: RequestId, request: RequestKind },
    ToMember { member: usize, id: RequestId, response: ResponseKind },
}

struct World {
    broker: Broker,
    members: Vec<Member>,
    queue: BTreeMap<(Millis, u64), Msg>,
    seq: u64,
    now: Millis,
    /// Broker-side request id -> (member, member's request id, api, version).
    routes: BTreeMap<u64, (usize, RequestId, ApiKey, i16)>,
    history: Vec<(Millis, usize, MemberEvent)>,
}

impl World {
    fn new(members: usize) -> Self {
        let mut logs = PartitionLogs::new();
        logs.create_topic("t", PARTITIONS).unwrap();
        for p in 0..PARTITIONS {
            for i in 0..RECORDS {
                logs.append(&TopicPartition::new("t", p), None, Bytes::from_static(b"v"), i)
                    .unwrap();
            }
        }
        let broker = Broker::new(BrokerConfig::single("broker-0", 9092), shared(logs));
        let members = (0..members)
            .map(|i| {
                let mut c = MemberConfig::new("g", format!("client-{i}"), vec!["t".to_string()]);
                c.max_records_per_fetch = 5;
                Member::new(c, i as u64)
            })
            .collect();
        Self {
            broker,
            members,
            queue: BTreeMap::new(),
            seq: 0,
            now: 0,
            routes: BTreeMap::new(),
            history: Vec::new(),
        }
    }

    fn push(&mut self, at: Millis, msg: Msg) {
        self.seq += 1;
        self.queue.insert((at, self.seq), msg);
    }

    fn drain(&mut self) {
        for m in 0..self.members.len() {
            while let Some(out) = self.members[m].poll_output() {
                match out {
                    MemberOutput::Send { id, request, .. } => {
                        self.push(self.now + 1, Msg::ToBroker { member: m, id, request });
                    }
                    MemberOutput::Close(_) => {}
                    MemberOutput::Event(e) => self.history.push((self.now, m, e)),
                }
            }
        }
        while let Some(out) = self.broker.poll_output() {
            if let CoordinatorOutput::Response { id, response } = out {
                let (member, mid, api, version) =
                    self.routes.remove(&id.0).expect("answer to a known request");
                let frame = encode_response(id.0 as i32, api, version, &response)
                    .expect("response encodes");
                let (_, response) = decode_response(frame, api, version).expect("response decodes");
                self.push(self.now + 1, Msg::ToMember { member, id: mid, response });
            }
        }
    }

    fn deliver(&mut self, msg: Msg) {
        match msg {
            Msg::ToBroker { member, id, request } => {
                let api = request_api_key(&request).unwrap();
                let version = served_versions(api).unwrap().max;
                let request = fit_request_to_version(request, version);
                self.seq += 1;
                let header = RequestHeader::default()
                    .with_request_api_key(api as i16)
                    .with_request_api_version(version)
                    .with_correlation_id(self.seq as i32)
                    .with_client_id(Some(StrBytes::from_string(format!("client-{member}"))));
                let frame = encode_request(&header, &request).expect("request encodes");
                let decoded = decode_request(frame).expect("request decodes");
                self.routes.insert(self.seq, (member, id, api, version));
                self.broker.handle_request_from(
                    self.now,
                    RequestId(self.seq),
                    version,
                    &format!("client-{member}"),
                    decoded.request,
                );
            }
            Msg::ToMember { member, id, response } => {
                self.members[member].handle_response(self.now, id, response)
            }
        }
    }

    fn run_until(&mut self, end: Millis) {
        loop {
            let next = [
                self.queue.keys().next().map(|(t, _)| *t),
                self.broker.poll_timeout(),
                self.members.iter().filter_map(Member::poll_timeout).min(),
            ]
            .into_iter()
            .flatten()
            .min();
            let Some(t) = next.filter(|t| *t <= end) else {
                self.now = end;
                return;
            };
            self.now = self.now.max(t);
            if self.broker.poll_timeout().is_some_and(|x| x <= self.now) {
                self.broker.handle_timeout(self.now);
            }
            for m in 0..self.members.len() {
                if self.members[m].poll_timeout().is_some_and(|x| x <= self.now) {
                    self.members[m].handle_timeout(self.now);
                }
            }
            self.drain();
            while let Some(entry) = self.queue.first_entry() {
                if entry.key().0 > self.now {
                    break;
                }
                let msg = entry.remove();
                self.deliver(msg);
                self.drain();
            }
        }
    }

    fn processed(&self) -> BTreeSet<(i32, i64)> {
        let mut out = BTreeSet::new();
        for (_, _, e) in &self.history {
            if let MemberEvent::RecordsProcessed { partition, first_offset, last_offset, .. } = e {
                for o in *first_offset..=*last_offset {
                    out.insert((partition.partition, o));
                }
            }
        }
        out
    }

    fn assert_partitions_owned_once_by(&self, owners: &[usize]) {
        let mut seen = BTreeSet::new();
        for &m in owners {
            for tp in self.members[m].assigned() {
                assert!(seen.insert(tp.clone()), "{tp} owned twice");
            }
        }
        assert_eq!(seen.len(), PARTITIONS as usize, "every partition owned");
    }
}

#[test]
fn three_members_share_the_topic_process_everything_and_one_leaves_cleanly() {
    let mut w = World::new(3);
    for m in 0..3 {
        w.members[m].start(0);
    }
    w.drain();
    w.run_until(20_000);

    let generations: BTreeSet<i32> = w.members.iter().map(Member::generation).collect();
    assert_eq!(generations.len(), 1, "one generation: {generations:?}");
    w.assert_partitions_owned_once_by(&[0, 1, 2]);
    let all: BTreeSet<(i32, i64)> =
        (0..PARTITIONS).flat_map(|p| (0..RECORDS).map(move |o| (p, o))).collect();
    assert_eq!(w.processed(), all, "every record processed");
    for p in 0..PARTITIONS {
        let committed = w.broker.coordinator().committed_offset("g", &TopicPartition::new("t", p));
        assert_eq!(committed, Some(RECORDS), "t-{p} committed to the log end");
    }

    let leaver = 0;
    w.members[leaver].leave(w.now);
    w.drain();
    w.run_until(40_000);
    assert!(w.members[leaver].is_finished());
    assert!(w
        .history
        .iter()
        .any(|(_, m, e)| *m == leaver && matches!(e, MemberEvent::Left { .. })));
    w.assert_partitions_owned_once_by(&[1, 2]);
    let lost = w.history.iter().filter(|(_, _, e)| matches!(e, MemberEvent::Lost { .. })).count();
    assert_eq!(lost, 0, "a clean run loses nothing");
    if std::env::var_os("SHOW_HISTORY").is_some() {
        for (t, m, e) in &w.history {
            eprintln!("{t:>6} m{m} {e:?}");
        }
    }
}
