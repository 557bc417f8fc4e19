//! FindCoordinator: which broker coordinates a group.
//!
//! Rules:
//! - Key type 0 (group): the coordinator is the current leader of the group's offsets
//!   partition, `abs(javaHashCode(group)) % offsets_topic_partitions` (see `placement.rs`), read from
//!   the shared cluster state, as in Kafka, so every broker gives the same answer and group APIs
//!   sent elsewhere get NOT_COORDINATOR. (A crashed leader is still named until its death is
//!   detected and the partition moves; the client's request to it then times out.)
//! - Key type 1 (transaction): we run no transaction coordinator: COORDINATOR_NOT_AVAILABLE.
//!   Any other key type (2, share groups, from v6): INVALID_REQUEST.
//! - v0–3 look up one key (`key`); v4+ look up a batch (`coordinator_keys`), each with its own
//!   error. On an error the node is Kafka's "no node": id -1, empty host, port -1.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::{BrokerId, FindCoordinatorRequest, FindCoordinatorResponse};
use kafka_protocol::protocol::StrBytes;

use crate::cluster::ClusterState;

/// Kafka's `CoordinatorType.GROUP`.
pub const KEY_TYPE_GROUP: i8 = 0;
/// Kafka's `CoordinatorType.TRANSACTION`.
pub const KEY_TYPE_TRANSACTION: i8 = 1;

/// Answers a FindCoordinator request of `version`.
pub fn handle(
    version: i16,
    request: &FindCoordinatorRequest,
    cluster: &ClusterState,
) -> FindCoordinatorResponse {
    // v0 has no key type: it only finds group coordinators.
    let key_type = if version >= 1 { request.key_type } else { KEY_TYPE_GROUP };
    if version >= 4 {
        let coordinators = request
            .coordinator_keys
            .iter()
            .map(|key| {
                let found = lookup(key_type, key, cluster);
                Coordinator::default()
                    .with_key(key.clone())
                    .with_node_id(BrokerId(found.node_id))
                    .with_host(found.host)
                    .with_port(found.port)
                    .with_error_code(found.error_code)
                    .with_error_message(found.error_message)
            })
            .collect();
        return FindCoordinatorResponse::default().with_coordinators(coordinators);
    }
    let found = lookup(key_type, &request.key, cluster);
    FindCoordinatorResponse::default()
        .with_error_code(found.error_code)
        .with_error_message(found.error_message)
        .with_node_id(BrokerId(found.node_id))
        .with_host(found.host)
        .with_port(found.port)
}

struct Found {
    error_code: i16,
    error_message: Option<StrBytes>,
    node_id: i32,
    host: StrBytes,
    port: i32,
}

fn lookup(key_type: i8, key: &str, cluster: &ClusterState) -> Found {
    let error = |e: ResponseError, message: &'static str| Found {
        error_code: e.code(),
        error_message: Some(StrBytes::from_static_str(message)),
        node_id: -1,
        host: StrBytes::default(),
        port: -1,
    };
    match key_type {
        KEY_TYPE_GROUP => match cluster.group_coordinator(key) {
            Some(b) => Found {
                error_code: 0,
                error_message: None,
                node_id: b.node_id,
                host: StrBytes::from_string(b.host.clone()),
                port: b.port,
            },
            None => error(ResponseError::CoordinatorNotAvailable, "no brokers configured"),
        },
        KEY_TYPE_TRANSACTION => {
            error(ResponseError::CoordinatorNotAvailable, "transactions are not supported")
        }
        _ => error(ResponseError::InvalidRequest, "unknown coordinator key type"),
    }
}
