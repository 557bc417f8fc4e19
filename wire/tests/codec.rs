//! Codec tests: every served API round-trips at every served version (requests through the
//! server decoder, responses through the client decoder), and bad frames give the right error.

use groupsim_wire::test_util as wire_support;

use bytes::{BufMut, Bytes, BytesMut};
use groupsim_wire::codec::{
    decode_request, decode_response, decode_response_prefix, encode_api_versions_fallback,
    encode_request, encode_response,
};
use groupsim_wire::versions::{served_apis, served_versions};
use groupsim_wire::WireError;
use kafka_protocol::messages::{ApiKey, ApiVersionsResponse, RequestHeader, ResponseKind};
use kafka_protocol::protocol::{Encodable, StrBytes};
use wire_support::{sample_request, sample_response};

fn header(api_key: ApiKey, version: i16, correlation_id: i32) -> RequestHeader {
    RequestHeader::default()
        .with_request_api_key(api_key as i16)
        .with_request_api_version(version)
        .with_correlation_id(correlation_id)
        .with_client_id(Some(StrBytes::from_static_str("client-1")))
}

#[test]
fn every_served_request_round_trips_at_every_served_version() {
    for (api_key, range) in served_apis() {
        for v in range.min..=range.max {
            let request = sample_request(api_key, v);
            let frame = encode_request(&header(api_key, v, 7 + v as i32), &request)
                .unwrap_or_else(|e| panic!("{api_key:?} v{v}: {e}"));
            let decoded = decode_request(frame).unwrap_or_else(|e| panic!("{api_key:?} v{v}: {e}"));
            assert_eq!(decoded.api_key, api_key);
            assert_eq!(decoded.version, v);
            assert_eq!(decoded.header.correlation_id, 7 + v as i32);
            assert_eq!(decoded.header.client_id.as_deref(), Some("client-1"));
            assert_eq!(decoded.request, request, "{api_key:?} v{v}");
        }
    }
}

#[test]
fn every_served_response_round_trips_at_every_served_version() {
    for (api_key, range) in served_apis() {
        for v in range.min..=range.max {
            let response = sample_response(api_key, v);
            let frame = encode_response(99, api_key, v, &response)
                .unwrap_or_else(|e| panic!("{api_key:?} v{v}: {e}"));
            let (id, decoded) = decode_response(frame, api_key, v)
                .unwrap_or_else(|e| panic!("{api_key:?} v{v}: {e}"));
            assert_eq!(id, 99);
            assert_eq!(decoded, response, "{api_key:?} v{v}");
        }
    }
}

#[test]
fn api_versions_response_header_is_v0_even_for_flexible_versions() {
    let frame =
        encode_response(5, ApiKey::ApiVersions, 3, &sample_response(ApiKey::ApiVersions, 3))
            .unwrap();
    // Header v0 is the correlation id alone: the error code (0) follows at once, no tag byte.
    assert_eq!(&frame[..6], &[0, 0, 0, 5, 0, 0]);
    // Metadata v9 is flexible: header v1 has an (empty) tagged-field section after the id.
    let frame =
        encode_response(5, ApiKey::Metadata, 9, &sample_response(ApiKey::Metadata, 9)).unwrap();
    assert_eq!(&frame[..5], &[0, 0, 0, 5, 0]);
}

fn raw_header(api_key: i16, version: i16, correlation_id: i32) -> BytesMut {
    let mut buf = BytesMut::new();
    buf.put_i16(api_key);
    buf.put_i16(version);
    buf.put_i32(correlation_id);
    buf.put_i16(-1); // null client id
    buf
}

#[test]
fn unknown_api_key_error_carries_correlation_id() {
    let err = decode_request(raw_header(999, 0, 41).freeze()).unwrap_err();
    assert!(
        matches!(err, WireError::UnknownApiKey { api_key: 999, version: 0, correlation_id: 41 }),
        "{err}"
    );
}

#[test]
fn unserved_version_and_unserved_api_are_unsupported_version() {
    let max = served_versions(ApiKey::Fetch).unwrap().max;
    let err = decode_request(raw_header(ApiKey::Fetch as i16, max + 1, 8).freeze()).unwrap_err();
    assert!(
        matches!(
            err,
            WireError::UnsupportedVersion { api_key: ApiKey::Fetch, correlation_id: 8, .. }
        ),
        "{err}"
    );
    let err = decode_request(raw_header(ApiKey::Produce as i16, 12, 9).freeze()).unwrap_err();
    assert!(matches!(err, WireError::UnsupportedVersion { api_key: ApiKey::Produce, .. }), "{err}");
    let err = decode_request(raw_header(ApiKey::ApiVersions as i16, 4, 10).freeze()).unwrap_err();
    assert!(
        matches!(
            err,
            WireError::UnsupportedVersion { api_key: ApiKey::ApiVersions, version: 4, .. }
        ),
        "{err}"
    );
}

#[test]
fn short_frames_are_errors_not_panics() {
    for len in 0..10 {
        let frame = Bytes::from(vec![0u8; len]);
        assert!(decode_request(frame).is_err(), "len {len}");
    }
    for len in 0..5 {
        assert!(decode_response(Bytes::from(vec![0u8; len]), ApiKey::Metadata, 9).is_err());
    }
}

#[test]
fn trailing_bytes_make_a_request_malformed() {
    let mut frame = BytesMut::from(
        &encode_request(&header(ApiKey::Heartbeat, 4, 1), &sample_request(ApiKey::Heartbeat, 4))
            .unwrap()[..],
    );
    frame.put_u8(0);
    let err = decode_request(frame.freeze()).unwrap_err();
    assert!(matches!(err, WireError::MalformedRequest { .. }), "{err}");
    assert!(err.to_string().contains("trailing"), "{err}");
}

#[test]
fn truncated_requests_and_responses_are_malformed_at_every_cut() {
    let frame =
        encode_request(&header(ApiKey::JoinGroup, 9, 1), &sample_request(ApiKey::JoinGroup, 9))
            .unwrap();
    for cut in 10..frame.len() {
        let err = decode_request(frame.slice(..cut)).unwrap_err();
        assert!(matches!(err, WireError::MalformedRequest { .. }), "cut {cut}: {err}");
    }
    let frame = encode_response(1, ApiKey::Fetch, 12, &sample_response(ApiKey::Fetch, 12)).unwrap();
    for cut in 0..frame.len() {
        assert!(decode_response(frame.slice(..cut), ApiKey::Fetch, 12).is_err(), "cut {cut}");
    }
}

#[test]
fn response_of_the_wrong_kind_is_an_encode_error() {
    let err =
        encode_response(1, ApiKey::Fetch, 4, &sample_response(ApiKey::Metadata, 4)).unwrap_err();
    assert!(matches!(err, WireError::Encode { api_key: ApiKey::Fetch, .. }), "{err}");
}

#[test]
fn field_missing_from_the_version_is_an_encode_error() {
    // group_instance_id only exists from JoinGroup v5.
    let request = sample_request(ApiKey::JoinGroup, 5);
    let err = encode_request(&header(ApiKey::JoinGroup, 4, 1), &request).unwrap_err();
    assert!(
        matches!(err, WireError::Encode { api_key: ApiKey::JoinGroup, version: 4, .. }),
        "{err}"
    );
}

#[test]
fn api_versions_fallback_is_v0_layout_with_error_35() {
    let response = ApiVersionsResponse::default().with_error_code(35);
    let frame = encode_api_versions_fallback(3, &response).unwrap();
    let (id, decoded) = decode_response(frame.clone(), ApiKey::ApiVersions, 0).unwrap();
    assert_eq!(id, 3);
    assert_eq!(decoded, ResponseKind::ApiVersions(response.clone()));
    // Exactly the v0 bytes: correlation id, error code, empty i32-length array.
    let mut v0 = BytesMut::new();
    v0.put_i32(3);
    response.encode(&mut v0, 0).unwrap();
    assert_eq!(frame, v0.freeze());
}

/// A strict read refuses bytes after a response; a client's read ignores them and counts them
/// (librdkafka's mock cluster appends one to its Metadata v12 answers).
#[test]
fn bytes_after_a_response_are_malformed_strictly_and_counted_by_a_clients_read() {
    let response = sample_response(ApiKey::Metadata, 12);
    let frame = encode_response(7, ApiKey::Metadata, 12, &response).unwrap();
    let mut longer = BytesMut::from(&frame[..]);
    longer.put_u8(0);
    let longer = longer.freeze();
    let err = decode_response(longer.clone(), ApiKey::Metadata, 12).unwrap_err();
    assert!(err.to_string().contains("1 trailing bytes"), "{err}");
    let (id, decoded, trailing) = decode_response_prefix(longer, ApiKey::Metadata, 12).unwrap();
    assert_eq!((id, trailing), (7, 1));
    assert_eq!(decoded, response);
    let (_, _, none) = decode_response_prefix(frame, ApiKey::Metadata, 12).unwrap();
    assert_eq!(none, 0);
}

/// CreateTopics is never served, but `check-broker` sends it to make its topic: the request
/// encodes and its answer decodes (read whole, having no layout here) at every version the
/// library knows.
#[test]
fn create_topics_encodes_and_its_answer_decodes_for_check_broker() {
    use kafka_protocol::messages::create_topics_request::CreatableTopic;
    use kafka_protocol::messages::create_topics_response::CreatableTopicResult;
    use kafka_protocol::messages::{
        CreateTopicsRequest, CreateTopicsResponse, RequestKind, TopicName,
    };
    use kafka_protocol::protocol::Message;
    assert!(served_versions(ApiKey::CreateTopics).is_none(), "never served");
    let range = CreateTopicsRequest::VERSIONS;
    for version in range.min.max(2)..=range.max {
        let topic = CreatableTopic::default()
            .with_name(TopicName(StrBytes::from_static_str("orders")))
            .with_num_partitions(4)
            .with_replication_factor(-1);
        let request =
            RequestKind::CreateTopics(CreateTopicsRequest::default().with_topics(vec![topic]));
        let frame = encode_request(&header(ApiKey::CreateTopics, version, 3), &request).unwrap();
        assert!(frame.len() > 20, "v{version}");
        let answer = ResponseKind::CreateTopics(CreateTopicsResponse::default().with_topics(vec![
            CreatableTopicResult::default()
                .with_name(TopicName(StrBytes::from_static_str("orders")))
                .with_error_code(36),
        ]));
        let frame = encode_response(3, ApiKey::CreateTopics, version, &answer).unwrap();
        let (id, decoded) = decode_response(frame, ApiKey::CreateTopics, version).unwrap();
        assert_eq!((id, decoded), (3, answer), "v{version}");
    }
}

/// Frames our own encoder wrote are read without the layout walk (the event world's members and
/// coordinator): every served request and response must read exactly as the checked path reads
/// it, so skipping the walk changes nothing but the cost.
#[test]
fn frames_of_our_own_encoder_read_the_same_without_the_layout_walk() {
    use groupsim_wire::codec::{decode_request_from, decode_response_prefix_from, Source};
    for (api_key, range) in served_apis() {
        for v in range.min..=range.max {
            let request = sample_request(api_key, v);
            let frame = encode_request(&header(api_key, v, 3), &request).expect("encodes");
            let checked = decode_request(frame.clone()).expect("checked");
            let own = decode_request_from(frame, Source::OwnEncoder).expect("own");
            assert_eq!(own.request, checked.request, "{api_key:?} v{v}");
            let response = sample_response(api_key, v);
            let frame = encode_response(5, api_key, v, &response).expect("encodes");
            let checked = decode_response_prefix(frame.clone(), api_key, v).expect("checked");
            let own =
                decode_response_prefix_from(frame, api_key, v, Source::OwnEncoder).expect("own");
            assert_eq!(
                (own.0, &own.1, own.2),
                (checked.0, &checked.1, checked.2),
                "{api_key:?} v{v}"
            );
        }
    }
}
