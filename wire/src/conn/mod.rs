//! The sans-IO connection layer both ends of the wire share: frames in, frames out, no socket
//! and no clock. Every host that speaks Kafka drives one of these per connection — the event
//! world's network lanes, the turmoil world's simulated sockets, `groupsim serve`'s real
//! sockets — so the handshake, correlation ids, in-order serving and the acks=0 rule are
//! written once.
//!
//! - [`client::ClientConn`]: the ApiVersions handshake (with the fallback to an older version a
//!   broker asks for), then requests encoded at the negotiated version and answers matched to
//!   the oldest request in flight.
//! - [`server::ServerConn`]: requests read and not yet served, served one at a time in order
//!   (Kafka mutes a channel until its current answer is sent), the ApiVersions fallback answer,
//!   and no answer to a Produce with acks=0.
//! - [`handoff`]: an in-process world's Fetch requests and answers handed over as values, as
//!   the other side would decode them, in place of their frames.

pub mod client;
pub mod handoff;
pub mod server;

pub use client::{ClientConn, NegotiatedVersions, Received};
pub use handoff::{HandedRequest, HandedResponse};
pub use server::{Next, Outgoing, ReplyTo, ServerConn};
