//! groupsim-wire: what both sides of groupsim's Kafka wire share.
//!
//! The coordinator core (broker side) and the member core (client side) speak the same Kafka
//! protocol; everything they must agree on lives here, so neither depends on the other:
//!
//! - [`types`]: simulated time ([`Millis`]), request tokens ([`RequestId`]),
//!   [`TopicPartition`] and topic ids ([`topic_id`]); [`topic_name`]: one shared name per topic
//!   and thread, so partition keys compare without reading their text.
//! - [`error_codes`]: one table of the Kafka error codes groupsim uses, with Kafka's names.
//! - [`consumer_protocol`]: the classic consumer protocol's subscription and assignment bytes.
//! - [`records`]: v2 record batches as groupsim writes and reads them, defended against garbage.
//! - [`probe`]: coverage probes, counted per run outside the history.
//! - [`versions`]: the one table of API versions served, and version fitting.
//! - [`codec`] and [`frame`]: frame bytes to and from kafka-protocol messages, refusing bad input
//!   before it reaches the decoder.
//! - [`conn`]: the sans-IO connection layer both ends share (handshake, correlation ids,
//!   in-order serving, acks=0): every world and `groupsim serve` drive it.
//! - [`client`] and [`server`] (feature `io`): thin tokio loops around [`conn`], generic over
//!   `AsyncRead`/`AsyncWrite`.
//!
//! The sans-IO cores build this crate without the `io` feature, so tokio never enters them.

pub mod codec;
pub mod conn;
pub mod consumer_protocol;
pub mod error;
pub mod error_codes;
pub mod fixed_hash;
pub mod frame;
pub mod probe;
pub mod records;
mod shape;
pub mod topic_name;
pub mod types;
pub mod versions;

#[cfg(feature = "io")]
pub mod client;
#[cfg(feature = "io")]
pub mod server;
#[cfg(feature = "test-util")]
pub mod test_util;

pub use codec::{decode_request, decode_response, encode_request, encode_response, DecodedRequest};
pub use error::WireError;
pub use error_codes::error_name;
pub use frame::{encode_frame, DEFAULT_MAX_FRAME_BYTES};
pub use types::{topic_id, IntoTopic, Millis, RequestId, TopicPartition};

#[cfg(feature = "io")]
pub use client::{
    handshake, handshake_with_versions, NegotiatedVersions, RequestWriter, ResponseReader,
};
#[cfg(feature = "io")]
pub use frame::{read_frame, write_frame, FrameReader};
#[cfg(feature = "io")]
pub use server::{
    broker_channel, serve_connection, serve_connection_with, BrokerCall, BrokerCalls, BrokerHandle,
    RequestHandler, ServeOptions,
};
