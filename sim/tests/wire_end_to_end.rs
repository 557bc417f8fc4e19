//! End-to-end over `tokio::io::duplex`: `run_broker` + `serve_connection` + the client
//! handshake, writer and reader, with partition logs holding appended records.

use groupsim_wire::test_util as wire_support;

use std::sync::{Arc, Mutex};

use bytes::{BufMut, Bytes, BytesMut};
use groupsim::process::broker_task::run_broker;
use groupsim_coordinator::broker::{Broker, BrokerConfig};
use groupsim_coordinator::log::{shared, PartitionLogs, SharedLogs};
use groupsim_coordinator::CoordinatorEvent;
use groupsim_wire::frame::{read_frame, write_frame};
use groupsim_wire::versions::served_apis;
use groupsim_wire::{
    broker_channel, decode_response, handshake, handshake_with_versions, serve_connection,
    BrokerHandle, RequestWriter, ResponseReader, WireError,
};
use groupsim_wire::{Millis, TopicPartition};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::VersionRange;
use kafka_protocol::records::RecordBatchDecoder;
use tokio::io::{DuplexStream, ReadHalf, WriteHalf};
use tokio::task::JoinHandle;
use wire_support::{s, topic};

type Events = Arc<Mutex<Vec<(Millis, CoordinatorEvent)>>>;

/// Runs a test body with a (simulated) time limit: with paused time a stuck await would
/// otherwise hang the test binary forever instead of failing.
async fn deadline(body: impl std::future::Future<Output = ()>) {
    tokio::time::timeout(std::time::Duration::from_secs(600), body)
        .await
        .expect("test timed out (simulated time)");
}

fn test_logs() -> SharedLogs {
    let mut logs = PartitionLogs::new();
    logs.create_topic("orders", 2).unwrap();
    let tp = TopicPartition::new("orders", 1);
    for i in 0..5 {
        logs.append(
            &tp,
            Some(Bytes::from(format!("key{i}"))),
            Bytes::from(format!("value{i}")),
            100 * i,
        )
        .unwrap();
    }
    shared(logs)
}

/// Starts a one-broker cluster; returns the handle connections use and the recorded events.
fn start_broker(logs: SharedLogs) -> (BrokerHandle, Events, JoinHandle<()>) {
    let (handle, calls) = broker_channel();
    let broker = Broker::new(BrokerConfig::single("broker0", 9092), logs);
    let events: Events = Arc::default();
    let sink = events.clone();
    let start = tokio::time::Instant::now();
    let clock = move || start.elapsed().as_millis() as Millis;
    let task = tokio::spawn(run_broker(broker, calls, clock, move |at, e| {
        sink.lock().unwrap().push((at, e))
    }));
    (handle, events, task)
}

/// A new connection: the server half served by a task, the client half returned raw.
fn connect(handle: &BrokerHandle) -> (DuplexStream, JoinHandle<Result<(), WireError>>) {
    let (client, server) = tokio::io::duplex(1 << 16);
    (client, tokio::spawn(serve_connection(server, handle.clone())))
}

type Client = (RequestWriter<WriteHalf<DuplexStream>>, ResponseReader<ReadHalf<DuplexStream>>);

async fn client(handle: &BrokerHandle) -> Client {
    let (stream, _server) = connect(handle);
    handshake(stream, "member-1").await.unwrap()
}

async fn call(client: &mut Client, request: impl Into<RequestKind>) -> ResponseKind {
    let id = client.0.send(&request.into()).await.unwrap();
    let (got, response) = client.1.recv().await.unwrap();
    assert_eq!(got, id);
    response
}

#[tokio::test(start_paused = true)]
async fn metadata_find_coordinator_list_offsets_and_fetch_over_the_wire() {
    deadline(async {
        let (handle, _events, _task) = start_broker(test_logs());
        let mut c = client(&handle).await;
        assert_eq!(c.0.version_for(ApiKey::Fetch), Some(12));
        assert_eq!(c.0.version_for(ApiKey::Metadata), Some(12));

        let ResponseKind::Metadata(md) =
            call(&mut c, MetadataRequest::default().with_topics(None)).await
        else {
            panic!()
        };
        assert_eq!(md.topics.len(), 1);
        assert_eq!(md.topics[0].partitions.len(), 2);
        assert_eq!(md.brokers[0].host.as_str(), "broker0");

        let find = FindCoordinatorRequest::default().with_coordinator_keys(vec![s("my-group")]);
        let ResponseKind::FindCoordinator(fc) = call(&mut c, find).await else { panic!() };
        assert_eq!((fc.coordinators[0].error_code, fc.coordinators[0].node_id.0), (0, 0));

        let list = ListOffsetsRequest::default().with_replica_id(BrokerId(-1)).with_topics(vec![
            ListOffsetsTopic::default().with_name(topic("orders")).with_partitions(vec![
                ListOffsetsPartition::default().with_partition_index(1).with_timestamp(-2),
                ListOffsetsPartition::default().with_partition_index(1).with_timestamp(-1),
            ]),
        ]);
        let ResponseKind::ListOffsets(lo) = call(&mut c, list).await else { panic!() };
        let offsets: Vec<i64> = lo.topics[0].partitions.iter().map(|p| p.offset).collect();
        assert_eq!(offsets, [0, 5]);

        let fetch = FetchRequest::default()
            .with_replica_id(BrokerId(-1))
            .with_max_bytes(1 << 20)
            .with_topics(vec![FetchTopic::default().with_topic(topic("orders")).with_partitions(
                vec![FetchPartition::default()
                    .with_partition(1)
                    .with_fetch_offset(2)
                    .with_partition_max_bytes(1 << 20)],
            )]);
        let ResponseKind::Fetch(f) = call(&mut c, fetch).await else { panic!() };
        let p = &f.responses[0].partitions[0];
        assert_eq!((p.error_code, p.high_watermark), (0, 5));
        let mut bytes = p.records.clone().unwrap();
        let sets = RecordBatchDecoder::decode_all(&mut bytes).unwrap();
        assert_eq!(sets.len(), 1);
        let got: Vec<(i64, i64, Bytes)> = sets[0]
            .records
            .iter()
            .map(|r| (r.offset, r.timestamp, r.value.clone().unwrap()))
            .collect();
        assert_eq!(
            got,
            [
                (2, 200, Bytes::from("value2")),
                (3, 300, Bytes::from("value3")),
                (4, 400, Bytes::from("value4"))
            ]
        );
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn pipelined_requests_are_answered_in_order() {
    deadline(async {
        let (handle, _events, _task) = start_broker(test_logs());
        let (mut w, mut r) = client(&handle).await;
        let mut sent = Vec::new();
        for _ in 0..3 {
            sent.push(w.send(&MetadataRequest::default().with_topics(None).into()).await.unwrap());
            sent.push(
                w.send(
                    &FindCoordinatorRequest::default().with_coordinator_keys(vec![s("g")]).into(),
                )
                .await
                .unwrap(),
            );
        }
        assert_eq!(r.in_flight(), 6);
        for (i, expected) in sent.into_iter().enumerate() {
            let (id, response) = r.recv().await.unwrap();
            assert_eq!(id, expected);
            let is_metadata = matches!(response, ResponseKind::Metadata(_));
            assert_eq!(is_metadata, i % 2 == 0);
        }
        assert_eq!(r.in_flight(), 0);
    })
    .await;
}

/// A Metadata v1 request whose topic array claims i32::MAX entries.
fn hostile_frame() -> Bytes {
    let mut buf = BytesMut::new();
    buf.put_i16(ApiKey::Metadata as i16);
    buf.put_i16(1);
    buf.put_i32(1);
    buf.put_i16(-1);
    buf.put_i32(i32::MAX);
    buf.freeze()
}

#[tokio::test(start_paused = true)]
async fn malformed_frame_closes_only_that_connection() {
    deadline(async {
        let (handle, _events, _task) = start_broker(test_logs());
        let mut good = client(&handle).await;
        let (mut bad, server) = connect(&handle);
        write_frame(&mut bad, &hostile_frame()).await.unwrap();
        assert!(
            read_frame(&mut bad, 1 << 20).await.unwrap().is_none(),
            "server closed the connection"
        );
        let err = server.await.unwrap().unwrap_err();
        assert!(
            matches!(err, WireError::MalformedRequest { api_key: ApiKey::Metadata, .. }),
            "{err}"
        );
        // The other connection, and new ones, are still served.
        assert!(matches!(
            call(&mut good, MetadataRequest::default()).await,
            ResponseKind::Metadata(_)
        ));
        let mut again = client(&handle).await;
        assert!(matches!(
            call(&mut again, MetadataRequest::default()).await,
            ResponseKind::Metadata(_)
        ));
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn unknown_api_key_and_unserved_versions_close_the_connection() {
    deadline(async {
        let (handle, _events, _task) = start_broker(test_logs());
        for (key, version) in
            [(1000i16, 0i16), (ApiKey::Produce as i16, 9), (ApiKey::Fetch as i16, 13)]
        {
            let (mut stream, server) = connect(&handle);
            let mut frame = BytesMut::new();
            frame.put_i16(key);
            frame.put_i16(version);
            frame.put_i32(5);
            frame.put_i16(-1);
            write_frame(&mut stream, &frame).await.unwrap();
            assert!(read_frame(&mut stream, 1 << 20).await.unwrap().is_none());
            assert!(server.await.unwrap().is_err());
        }
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn unserved_api_versions_version_gets_error_35_in_v0_layout_and_the_connection_stays_open() {
    deadline(async {
        let (handle, _events, _task) = start_broker(test_logs());
        let (mut stream, _server) = connect(&handle);
        // ApiVersions v9 with a body we could not parse anyway.
        let mut frame = BytesMut::new();
        frame.put_i16(ApiKey::ApiVersions as i16);
        frame.put_i16(9);
        frame.put_i32(11);
        frame.put_i16(-1);
        frame.put_slice(b"\x00future body");
        write_frame(&mut stream, &frame).await.unwrap();
        let answer = read_frame(&mut stream, 1 << 20).await.unwrap().unwrap();
        let (id, response) = decode_response(answer, ApiKey::ApiVersions, 0).unwrap();
        assert_eq!(id, 11);
        let ResponseKind::ApiVersions(av) = response else { panic!() };
        assert_eq!(av.error_code, 35);
        let listed = av.api_keys.iter().find(|k| k.api_key == ApiKey::ApiVersions as i16).unwrap();
        assert_eq!((listed.min_version, listed.max_version), (0, 3));
        // The client may now retry on the same connection.
        let (w, r) = handshake(stream, "retry").await.unwrap();
        assert_eq!(w.version_for(ApiKey::ApiVersions), Some(3));
        drop((w, r));
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn client_asking_api_versions_v4_falls_back_to_the_brokers_v3() {
    deadline(async {
        let (handle, _events, _task) = start_broker(test_logs());
        let (stream, _server) = connect(&handle);
        let ours: Vec<(ApiKey, VersionRange)> = served_apis()
            .into_iter()
            .map(|(k, r)| {
                if k == ApiKey::ApiVersions {
                    (k, VersionRange { min: 0, max: 4 })
                } else {
                    (k, r)
                }
            })
            .collect();
        let mut c = handshake_with_versions(stream, "newer-client", &ours).await.unwrap();
        assert_eq!(c.0.version_for(ApiKey::ApiVersions), Some(3));
        // Correlation ids 0 and 1 went to the two ApiVersions attempts.
        assert_eq!(c.0.send(&MetadataRequest::default().into()).await.unwrap(), 2);
        assert!(matches!(c.1.recv().await.unwrap().1, ResponseKind::Metadata(_)));
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn client_profile_pins_versions_and_reports_what_it_cannot_send() {
    deadline(async {
        let (handle, _events, _task) = start_broker(test_logs());
        let (stream, _server) = connect(&handle);
        let ours = [
            (ApiKey::ApiVersions, VersionRange { min: 0, max: 0 }),
            (ApiKey::Metadata, VersionRange { min: 0, max: 5 }),
            (ApiKey::JoinGroup, VersionRange { min: 0, max: 4 }),
        ];
        let (mut w, mut r) = handshake_with_versions(stream, "old-client", &ours).await.unwrap();
        assert_eq!(w.version_for(ApiKey::Metadata), Some(5));
        assert_eq!(w.version_for(ApiKey::Fetch), None);
        let err = w.send(&FetchRequest::default().into()).await.unwrap_err();
        assert!(matches!(err, WireError::NotNegotiated(ApiKey::Fetch)), "{err}");
        // group_instance_id needs JoinGroup v5: encoding at v4 fails and nothing is left in flight.
        let join = JoinGroupRequest::default().with_group_instance_id(Some(s("static")));
        let err = w.send(&join.into()).await.unwrap_err();
        assert!(
            matches!(err, WireError::Encode { api_key: ApiKey::JoinGroup, version: 4, .. }),
            "{err}"
        );
        assert_eq!(r.in_flight(), 0);
        let id = w.send(&MetadataRequest::default().with_topics(None).into()).await.unwrap();
        assert_eq!(r.recv().await.unwrap().0, id);
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn reader_reports_a_closed_connection() {
    deadline(async {
        let (handle, _events, _task) = start_broker(test_logs());
        let (stream, server) = connect(&handle);
        let (mut w, mut r) = handshake(stream, "m").await.unwrap();
        w.shutdown().await.unwrap();
        // Closing our sending direction ends the server loop, which drops its end of the stream.
        server.await.unwrap().unwrap();
        assert!(matches!(r.recv().await.unwrap_err(), WireError::ConnectionClosed));
    })
    .await;
}

/// Group APIs through the wire, with the broker task's timers: the first JoinGroup gets
/// MEMBER_ID_REQUIRED, the second is held until `group.initial.rebalance.delay.ms` (3 s) runs
/// out on the broker's clock, and the events are stamped with that clock.
#[tokio::test(start_paused = true)]
async fn join_group_answer_waits_for_the_initial_rebalance_delay() {
    deadline(async {
        let (handle, events, _task) = start_broker(test_logs());
        let mut c = client(&handle).await;
        let join = |member: &str| {
            JoinGroupRequest::default()
                .with_group_id(GroupId(s("g")))
                .with_session_timeout_ms(10_000)
                .with_rebalance_timeout_ms(30_000)
                .with_member_id(kafka_protocol::protocol::StrBytes::from_string(member.to_string()))
                .with_protocol_type(s("consumer"))
                .with_protocols(vec![join_group_request::JoinGroupRequestProtocol::default()
                    .with_name(s("range"))
                    .with_metadata(Bytes::from_static(
                        b"\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00",
                    ))])
        };
        let ResponseKind::JoinGroup(first) = call(&mut c, join("")).await else { panic!() };
        assert_eq!(first.error_code, 79, "MEMBER_ID_REQUIRED");
        assert!(
            first.member_id.starts_with("member-1"),
            "member ids start with the client id: {}",
            first.member_id
        );
        let started = tokio::time::Instant::now();
        let ResponseKind::JoinGroup(second) = call(&mut c, join(&first.member_id)).await else {
            panic!()
        };
        assert_eq!((second.error_code, second.generation_id), (0, 1));
        assert!(started.elapsed().as_millis() >= 3_000, "held for the initial rebalance delay");
        let events = events.lock().unwrap();
        let generation_at = events
            .iter()
            .find_map(|(at, e)| {
                matches!(e, CoordinatorEvent::GenerationStarted { .. }).then_some(*at)
            })
            .expect("a GenerationStarted event");
        assert!(generation_at >= 3_000, "stamped with the broker clock: {generation_at}");
    })
    .await;
}
