//! `groupsim_live::serve::Cluster` over real loopback sockets, from a raw client: bad frames close
//! only their own connection, the server keeps serving the others, and the Kafka behaviours a
//! real client relies on (ApiVersions fallback, acks=0, long-polling Fetch, Produce errors,
//! stopping and starting a broker) hold on the wire.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use bytes::Bytes;
use groupsim_live::serve::{Cluster, ClusterConfig, TopicSpec};
use groupsim_wire::codec::{decode_response, encode_request};
use groupsim_wire::frame::encode_frame;
use groupsim_wire::TopicPartition;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::Compression;

const TIMEOUT: Duration = Duration::from_secs(10);

fn cluster(brokers: usize) -> Cluster {
    Cluster::start(ClusterConfig {
        brokers,
        topics: vec![TopicSpec::new("t", 1).unwrap()],
        preload: 3,
        ..ClusterConfig::default()
    })
    .unwrap()
}

fn connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(TIMEOUT)).unwrap();
    s
}

fn frame(key: ApiKey, version: i16, correlation_id: i32, request: RequestKind) -> Vec<u8> {
    let header = RequestHeader::default()
        .with_request_api_key(key as i16)
        .with_request_api_version(version)
        .with_correlation_id(correlation_id)
        .with_client_id(Some(StrBytes::from_static_str("raw")));
    encode_frame(&encode_request(&header, &request).unwrap()).unwrap()
}

/// Reads one response frame; `None` when the server closed the connection.
fn read_frame(s: &mut TcpStream) -> Option<Bytes> {
    let mut len = [0u8; 4];
    match s.read_exact(&mut len) {
        Ok(()) => {}
        Err(e) if matches!(e.kind(), ErrorKind::UnexpectedEof | ErrorKind::ConnectionReset) => {
            return None
        }
        Err(e) => panic!("reading a response: {e}"),
    }
    let mut body = vec![0u8; i32::from_be_bytes(len) as usize];
    s.read_exact(&mut body).expect("a whole response frame");
    Some(Bytes::from(body))
}

fn call(s: &mut TcpStream, key: ApiKey, version: i16, id: i32, req: RequestKind) -> ResponseKind {
    s.write_all(&frame(key, version, id, req)).unwrap();
    let answer = read_frame(s).expect("an answer, not a closed connection");
    let (correlation_id, response) = decode_response(answer, key, version).unwrap();
    assert_eq!(correlation_id, id);
    response
}

fn api_versions(s: &mut TcpStream, id: i32) -> ApiVersionsResponse {
    match call(s, ApiKey::ApiVersions, 3, id, RequestKind::ApiVersions(api_versions_request())) {
        ResponseKind::ApiVersions(r) => r,
        other => panic!("{other:?}"),
    }
}

fn api_versions_request() -> ApiVersionsRequest {
    ApiVersionsRequest::default()
        .with_client_software_name(StrBytes::from_static_str("raw"))
        .with_client_software_version(StrBytes::from_static_str("1"))
}

fn assert_closed(s: &mut TcpStream, what: &str) {
    assert_eq!(read_frame(s), None, "{what}: the server should close the connection");
}

fn batch(values: &[&str]) -> Bytes {
    groupsim_wire::test_util::produced_batch(values, Compression::None)
}

fn produce(acks: i16, records: Bytes) -> RequestKind {
    RequestKind::Produce(
        ProduceRequest::default().with_acks(acks).with_timeout_ms(1000).with_topic_data(vec![
            TopicProduceData::default()
                .with_name(TopicName(StrBytes::from_static_str("t")))
                .with_partition_data(vec![PartitionProduceData::default()
                    .with_index(0)
                    .with_records(Some(records))]),
        ]),
    )
}

fn fetch(offset: i64, max_wait_ms: i32) -> RequestKind {
    RequestKind::Fetch(
        FetchRequest::default()
            .with_replica_id(BrokerId(-1))
            .with_max_wait_ms(max_wait_ms)
            .with_min_bytes(1)
            .with_max_bytes(1 << 20)
            .with_topics(vec![FetchTopic::default()
                .with_topic(TopicName(StrBytes::from_static_str("t")))
                .with_partitions(vec![FetchPartition::default()
                    .with_partition(0)
                    .with_fetch_offset(offset)
                    .with_partition_max_bytes(1 << 20)])]),
    )
}

fn fetched_bytes(r: &ResponseKind) -> usize {
    let ResponseKind::Fetch(f) = r else { panic!("{r:?}") };
    f.responses[0].partitions[0].records.as_ref().map_or(0, Bytes::len)
}

#[test]
fn bad_frames_close_only_their_own_connection() {
    let cluster = cluster(1);
    let addr = cluster.addrs()[0];
    let mut healthy = connect(addr);
    api_versions(&mut healthy, 1);

    // A half-sent frame stays open on its own connection meanwhile.
    let mut half = connect(addr);
    half.write_all(&[0, 0, 0, 50, 1, 2, 3]).unwrap();

    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("unknown API key", {
            let mut body = vec![0x03, 0xe7, 0, 0, 0, 0, 0, 9, 0, 0]; // key 999 v0 corr 9
            body.extend_from_slice(&[0; 6]);
            encode_frame(&body).unwrap()
        }),
        ("oversize frame", i32::MAX.to_be_bytes().to_vec()),
        ("negative length", (-5i32).to_be_bytes().to_vec()),
        ("frame too short for a header", encode_frame(&[0, 3]).unwrap()),
        ("malformed Metadata body", {
            let mut body = vec![0, 3, 0, 9, 0, 0, 0, 4, 0xff, 0xff, 0]; // Metadata v9, no client id
            body.extend_from_slice(&[0x7f, 0xff, 0xff, 0xff]); // a hostile array length
            encode_frame(&body).unwrap()
        }),
        ("Produce at a version not served", {
            let mut body = vec![0, 0, 0, 1, 0, 0, 0, 5, 0xff, 0xff]; // Produce v1
            body.extend_from_slice(&[0; 8]);
            encode_frame(&body).unwrap()
        }),
    ];
    for (what, bytes) in cases {
        let mut s = connect(addr);
        s.write_all(&bytes).unwrap();
        assert_closed(&mut s, what);
        // Everything else is still served, the earlier connection included.
        api_versions(&mut healthy, 2);
        api_versions(&mut connect(addr), 3);
    }

    // A frame cut short by the end of the stream closes the connection too.
    half.shutdown(std::net::Shutdown::Write).unwrap();
    assert_closed(&mut half, "truncated frame");
    api_versions(&mut healthy, 4);
}

#[test]
fn api_versions_at_an_unserved_version_gets_error_35_in_the_v0_layout() {
    let cluster = cluster(1);
    let mut s = connect(cluster.addrs()[0]);
    // ApiVersions v99 with a v2 header: key 18, version 99, correlation id 77, client id "x".
    let body = [0, 18, 0, 99, 0, 0, 0, 77, 0, 1, b'x', 0, 1, b'y', 0];
    s.write_all(&encode_frame(&body).unwrap()).unwrap();
    let answer = read_frame(&mut s).expect("an answer");
    let (correlation_id, response) = decode_response(answer, ApiKey::ApiVersions, 0).unwrap();
    assert_eq!(correlation_id, 77);
    let ResponseKind::ApiVersions(r) = response else { panic!() };
    assert_eq!(r.error_code, 35, "UNSUPPORTED_VERSION");
    let range = |key: ApiKey| {
        r.api_keys.iter().find(|k| k.api_key == key as i16).map(|k| (k.min_version, k.max_version))
    };
    assert_eq!(range(ApiKey::Produce), Some((3, 11)));
    assert_eq!(range(ApiKey::InitProducerId), Some((0, 4)));
    assert_eq!(range(ApiKey::ApiVersions), Some((0, 3)));
    // The connection stays usable: the client retries at a version we serve.
    api_versions(&mut s, 78);
}

#[test]
fn produce_appends_and_acks_zero_gets_no_answer() {
    let cluster = cluster(1);
    let mut s = connect(cluster.addrs()[0]);
    let ResponseKind::Produce(r) =
        call(&mut s, ApiKey::Produce, 7, 1, produce(-1, batch(&["a", "b"])))
    else {
        panic!()
    };
    let p = &r.responses[0].partition_responses[0];
    assert_eq!((p.error_code, p.base_offset), (0, 3), "after the 3 preloaded records");

    // acks=0: no answer; the next answer on the connection is the next request's.
    s.write_all(&frame(ApiKey::Produce, 7, 2, produce(0, batch(&["c"])))).unwrap();
    assert_eq!(api_versions(&mut s, 3).error_code, 0);
    let tp = TopicPartition::new("t", 0);
    assert_eq!(cluster.logs().lock().unwrap().log_end_offset(&tp), Some(6));

    // Garbage records: CORRUPT_MESSAGE, nothing appended, the connection stays open.
    let ResponseKind::Produce(r) =
        call(&mut s, ApiKey::Produce, 7, 4, produce(1, Bytes::from_static(b"garbage")))
    else {
        panic!()
    };
    assert_eq!(r.responses[0].partition_responses[0].error_code, 2, "CORRUPT_MESSAGE");
    assert_eq!(cluster.logs().lock().unwrap().log_end_offset(&tp), Some(6));
}

#[test]
fn init_producer_id_hands_out_fresh_ids() {
    let cluster = cluster(1);
    let mut s = connect(cluster.addrs()[0]);
    let req = || {
        RequestKind::InitProducerId(
            InitProducerIdRequest::default()
                .with_transactional_id(None)
                .with_transaction_timeout_ms(60_000)
                .with_producer_id(ProducerId(-1))
                .with_producer_epoch(-1),
        )
    };
    let ResponseKind::InitProducerId(a) = call(&mut s, ApiKey::InitProducerId, 4, 1, req()) else {
        panic!()
    };
    let ResponseKind::InitProducerId(b) = call(&mut s, ApiKey::InitProducerId, 4, 2, req()) else {
        panic!()
    };
    assert_eq!((a.error_code, a.producer_epoch, b.producer_epoch), (0, 0, 0));
    assert!(a.producer_id.0 >= 0 && a.producer_id != b.producer_id);
}

#[test]
fn fetch_at_the_log_end_waits_for_a_produce() {
    let cluster = cluster(1);
    let addr = cluster.addrs()[0];
    let mut s = connect(addr);
    // Data available: answered at once.
    assert!(fetched_bytes(&call(&mut s, ApiKey::Fetch, 11, 1, fetch(0, 5_000))) > 0);

    // Nothing to read: the answer waits out max_wait_ms.
    let started = Instant::now();
    assert_eq!(fetched_bytes(&call(&mut s, ApiKey::Fetch, 11, 2, fetch(3, 300))), 0);
    assert!(started.elapsed() >= Duration::from_millis(250), "{:?}", started.elapsed());

    // A Produce on another connection wakes the waiting Fetch long before its max wait.
    let producer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        let mut p = connect(addr);
        call(&mut p, ApiKey::Produce, 7, 1, produce(1, batch(&["late"])));
    });
    let started = Instant::now();
    let answer = call(&mut s, ApiKey::Fetch, 11, 3, fetch(3, 8_000));
    assert!(fetched_bytes(&answer) > 0);
    assert!(started.elapsed() < Duration::from_secs(4), "{:?}", started.elapsed());
    producer.join().unwrap();
}

#[test]
fn a_stopped_broker_refuses_connections_until_started_again() {
    let cluster = cluster(2);
    let addr = cluster.addrs()[1];
    let mut before = connect(addr);
    api_versions(&mut before, 1);
    cluster.stop_broker(1).unwrap();
    assert!(!cluster.is_running(1));
    assert_closed(&mut before, "connection to a stopped broker");
    assert!(TcpStream::connect(addr).is_err(), "the listener is closed");
    assert!(cluster.stop_broker(1).is_err(), "already stopped");
    // Broker 0 keeps serving.
    api_versions(&mut connect(cluster.addrs()[0]), 2);
    cluster.start_broker(1).unwrap();
    api_versions(&mut connect(addr), 3);
    assert!(cluster.start_broker(1).is_err(), "already running");
    assert!(cluster.stop_broker(7).is_err(), "no such broker");
}

#[test]
fn moving_a_group_coordinator_changes_find_coordinator_and_keeps_offsets() {
    let cluster = cluster(3);
    let group = "moving-group";
    let from = cluster.group_coordinator(group).unwrap();
    let to = (from + 1) % 3;
    let commit = |s: &mut TcpStream, id: i32| {
        let req = OffsetCommitRequest::default()
            .with_group_id(GroupId(StrBytes::from_static_str(group)))
            .with_generation_id_or_member_epoch(-1)
            .with_topics(vec![offset_commit_request::OffsetCommitRequestTopic::default()
                .with_name(TopicName(StrBytes::from_static_str("t")))
                .with_partitions(vec![
                    offset_commit_request::OffsetCommitRequestPartition::default()
                        .with_partition_index(0)
                        .with_committed_offset(2),
                ])]);
        call(s, ApiKey::OffsetCommit, 8, id, RequestKind::OffsetCommit(req))
    };
    let find = |s: &mut TcpStream, id: i32| {
        let req = FindCoordinatorRequest::default()
            .with_key(StrBytes::from_static_str(group))
            .with_key_type(0);
        match call(s, ApiKey::FindCoordinator, 1, id, RequestKind::FindCoordinator(req)) {
            ResponseKind::FindCoordinator(r) => r.node_id.0,
            other => panic!("{other:?}"),
        }
    };
    let mut old = connect(cluster.addrs()[from as usize]);
    let ResponseKind::OffsetCommit(r) = commit(&mut old, 1) else { panic!() };
    assert_eq!(r.topics[0].partitions[0].error_code, 0);
    assert_eq!(find(&mut connect(cluster.addrs()[0]), 2), from);

    cluster.move_group_coordinator(group, to).unwrap();
    assert_eq!(cluster.group_coordinator(group), Some(to));
    let mut any = connect(cluster.addrs()[0]);
    assert_eq!(find(&mut any, 3), to);
    let fetch_offsets = |s: &mut TcpStream, id: i32| {
        let req = OffsetFetchRequest::default()
            .with_group_id(GroupId(StrBytes::from_static_str(group)))
            .with_topics(None);
        match call(s, ApiKey::OffsetFetch, 7, id, RequestKind::OffsetFetch(req)) {
            ResponseKind::OffsetFetch(r) => r,
            other => panic!("{other:?}"),
        }
    };
    let moved = fetch_offsets(&mut connect(cluster.addrs()[to as usize]), 4);
    assert_eq!(moved.error_code, 0);
    assert_eq!(moved.topics[0].partitions[0].committed_offset, 2, "offsets moved along");
    let refused = fetch_offsets(&mut connect(cluster.addrs()[from as usize]), 5);
    assert_eq!(refused.error_code, 16, "NOT_COORDINATOR on the old coordinator");
}

#[test]
fn stopping_a_groups_coordinator_fails_over_with_its_committed_offsets() {
    let cluster = cluster(3);
    let group = "failover-group";
    let from = cluster.group_coordinator(group).unwrap();
    let mut s = connect(cluster.addrs()[from as usize]);
    let req = OffsetCommitRequest::default()
        .with_group_id(GroupId(StrBytes::from_static_str(group)))
        .with_generation_id_or_member_epoch(-1)
        .with_topics(vec![offset_commit_request::OffsetCommitRequestTopic::default()
            .with_name(TopicName(StrBytes::from_static_str("t")))
            .with_partitions(vec![offset_commit_request::OffsetCommitRequestPartition::default(
            )
            .with_partition_index(0)
            .with_committed_offset(1)])]);
    call(&mut s, ApiKey::OffsetCommit, 8, 1, RequestKind::OffsetCommit(req));

    cluster.stop_broker(from).unwrap();
    let to = cluster.group_coordinator(group).unwrap();
    assert_ne!(to, from, "the offsets partition moved to a live broker");
    assert!(cluster.is_running(to));
    let req = OffsetFetchRequest::default()
        .with_group_id(GroupId(StrBytes::from_static_str(group)))
        .with_topics(None);
    let mut s = connect(cluster.addrs()[to as usize]);
    let ResponseKind::OffsetFetch(r) =
        call(&mut s, ApiKey::OffsetFetch, 7, 2, RequestKind::OffsetFetch(req))
    else {
        panic!()
    };
    assert_eq!(r.error_code, 0);
    assert_eq!(r.topics[0].partitions[0].committed_offset, 1, "loaded from the offsets log");
}

/// `connections.max.idle.ms`: a connection that sends no request for that long is closed by the
/// broker, as Kafka's `Selector` closes it; one waiting on a long-polling Fetch is in service, not
/// idle, and a connection that keeps sending stays open.
#[test]
fn a_connection_idle_past_connections_max_idle_ms_is_closed() {
    let cluster = Cluster::start(ClusterConfig {
        topics: vec![TopicSpec::new("t", 1).unwrap()],
        preload: 3,
        connections_max_idle_ms: Some(400),
        ..ClusterConfig::default()
    })
    .unwrap();
    let addr = cluster.addrs()[0];
    let (mut idle, mut busy) = (connect(addr), connect(addr));
    api_versions(&mut idle, 1);
    api_versions(&mut busy, 1);
    // A Fetch waiting 900 ms at the log end is served all that time: the connection is not idle.
    assert_eq!(fetched_bytes(&call(&mut busy, ApiKey::Fetch, 11, 2, fetch(3, 900))), 0);
    for id in 3..8 {
        std::thread::sleep(Duration::from_millis(150));
        api_versions(&mut busy, id);
    }
    assert_closed(&mut idle, "a connection idle past the bound");
    api_versions(&mut busy, 9);
}
