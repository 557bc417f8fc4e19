//! InitProducerId: hand an idempotent producer its producer id and epoch.
//!
//! Rules:
//! - Without a transactional id: a fresh producer id with epoch 0. A producer that names the
//!   id it already has (v3+, `producer_id >= 0`) gets the same id with its epoch bumped, as
//!   Kafka does when an idempotent producer resets its sequence numbers.
//! - With a transactional id: there is no transaction coordinator, so
//!   TRANSACTIONAL_ID_AUTHORIZATION_FAILED (not retriable: the producer stops, rather than
//!   retrying forever). An empty transactional id is INVALID_REQUEST, as in Kafka.
//!
//! Producer ids come from [`ProducerIds`], owned by the broker. Each broker draws from its own
//! range (node id in the upper bits) so ids stay unique across a cluster.

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::{InitProducerIdRequest, InitProducerIdResponse, ProducerId};

/// A broker's producer id allocator.
#[derive(Clone, Debug)]
pub struct ProducerIds {
    next: i64,
}

impl ProducerIds {
    /// Ids for broker `node_id`: `node_id * 2^32 + 1000`, then consecutive.
    pub fn for_node(node_id: i32) -> Self {
        Self { next: (i64::from(node_id.max(0)) << 32) + 1000 }
    }

    fn allocate(&mut self) -> i64 {
        let id = self.next;
        self.next += 1;
        id
    }
}

/// Answers an InitProducerId request of `version`.
pub fn handle(
    version: i16,
    request: &InitProducerIdRequest,
    ids: &mut ProducerIds,
) -> InitProducerIdResponse {
    let refused = |e: ResponseError| {
        InitProducerIdResponse::default()
            .with_error_code(e.code())
            .with_producer_id(ProducerId(-1))
            .with_producer_epoch(-1)
    };
    match &request.transactional_id {
        None => {}
        Some(id) if id.is_empty() => return refused(ResponseError::InvalidRequest),
        Some(_) => return refused(ResponseError::TransactionalIdAuthorizationFailed),
    }
    let (id, epoch) = if version >= 3 && request.producer_id.0 >= 0 {
        let epoch = request.producer_epoch.checked_add(1).filter(|e| *e >= 0);
        match epoch {
            Some(epoch) => (request.producer_id.0, epoch),
            None => (ids.allocate(), 0),
        }
    } else {
        (ids.allocate(), 0)
    };
    InitProducerIdResponse::default().with_producer_id(ProducerId(id)).with_producer_epoch(epoch)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::TransactionalId;
    use kafka_protocol::protocol::StrBytes;

    #[test]
    fn idempotent_producers_get_fresh_ids_with_epoch_zero() {
        let mut ids = ProducerIds::for_node(1);
        let req = InitProducerIdRequest::default()
            .with_transactional_id(None)
            .with_producer_id(ProducerId(-1))
            .with_producer_epoch(-1);
        let a = handle(0, &req, &mut ids);
        let b = handle(4, &req, &mut ids);
        assert_eq!((a.error_code, a.producer_epoch, b.producer_epoch), (0, 0, 0));
        assert_ne!(a.producer_id, b.producer_id);
        assert!(a.producer_id.0 > 1 << 32, "node 1 draws from its own range");
    }

    #[test]
    fn known_producer_id_gets_its_epoch_bumped() {
        let mut ids = ProducerIds::for_node(0);
        let req = InitProducerIdRequest::default()
            .with_transactional_id(None)
            .with_producer_id(ProducerId(1234))
            .with_producer_epoch(3);
        let r = handle(3, &req, &mut ids);
        assert_eq!((r.producer_id.0, r.producer_epoch), (1234, 4));
    }

    #[test]
    fn transactional_producers_are_refused() {
        let mut ids = ProducerIds::for_node(0);
        let req = InitProducerIdRequest::default()
            .with_transactional_id(Some(TransactionalId(StrBytes::from_static_str("tx"))));
        let r = handle(1, &req, &mut ids);
        assert_eq!(r.error_code, ResponseError::TransactionalIdAuthorizationFailed.code());
        let empty = InitProducerIdRequest::default(); // kafka-protocol's default id is ""
        assert_eq!(handle(1, &empty, &mut ids).error_code, ResponseError::InvalidRequest.code());
    }
}
