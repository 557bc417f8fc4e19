//! The client half over a tokio stream: the ApiVersions handshake, then a writer that picks the
//! negotiated version for each request and a reader that matches answers to requests in order.
//! Both are thin loops around the sans-IO [`ClientConn`], which owns the protocol.
//!
//! The writer and reader are the two halves of one stream (`tokio::io::split`), so a client can
//! keep reading answers while it writes (Kafka clients pipeline requests; answers come back in
//! request order). They share the [`ClientConn`]: the writer encodes with it (recording which
//! answer comes next), the reader decodes with it.

use std::sync::{Arc, Mutex};

use kafka_protocol::messages::{ApiKey, RequestKind, ResponseKind};
use kafka_protocol::protocol::VersionRange;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadHalf, WriteHalf};

use crate::codec::request_api_key;
pub use crate::conn::client::{CLIENT_SOFTWARE_NAME, CLIENT_SOFTWARE_VERSION};
pub use crate::conn::NegotiatedVersions;
use crate::conn::{ClientConn, Received};
use crate::frame::{write_frame, FrameReader, DEFAULT_MAX_FRAME_BYTES};
use crate::versions::served_apis;
use crate::WireError;

type Shared = Arc<Mutex<ClientConn>>;

fn lock(conn: &Shared) -> std::sync::MutexGuard<'_, ClientConn> {
    // Nothing panics while holding the lock, but a poisoned connection is still a valid one.
    conn.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The writing half of a client connection.
#[derive(Debug)]
pub struct RequestWriter<W> {
    writer: W,
    conn: Shared,
    versions: Arc<NegotiatedVersions>,
}

/// The reading half of a client connection.
#[derive(Debug)]
pub struct ResponseReader<R> {
    reader: FrameReader<R>,
    conn: Shared,
    versions: Arc<NegotiatedVersions>,
}

/// Runs `conn`'s ApiVersions handshake over `reader` and `writer` (retrying at an older version
/// when the broker asks for one). Afterwards `conn` is open.
pub async fn open<R: AsyncRead + Unpin, W: AsyncWrite + Unpin>(
    conn: &mut ClientConn,
    reader: &mut FrameReader<R>,
    writer: &mut W,
) -> Result<(), WireError> {
    let hello = conn.hello()?;
    write_frame(writer, &hello).await?;
    loop {
        let answer = reader.read_frame().await?.ok_or(WireError::ConnectionClosed)?;
        match conn.on_frame(answer)? {
            Received::Retry(frame) => write_frame(writer, &frame).await?,
            Received::Ready => break,
            Received::Response { .. } => {
                return Err(WireError::Handshake("an answer before the handshake's".into()))
            }
        }
    }
    if reader.buffered() > 0 {
        return Err(WireError::Handshake("bytes after the ApiVersions answer".into()));
    }
    Ok(())
}

/// Connects the client side of `stream`: ApiVersions at our highest version (falling back as
/// Kafka clients do when the broker answers UNSUPPORTED_VERSION), then per API the highest
/// version both sides speak, from the served-versions table.
pub async fn handshake<S: AsyncRead + AsyncWrite + Unpin>(
    stream: S,
    client_id: &str,
) -> Result<(RequestWriter<WriteHalf<S>>, ResponseReader<ReadHalf<S>>), WireError> {
    handshake_with_versions(stream, client_id, &served_apis()).await
}

/// [`handshake`] for a client that speaks `ours` (e.g. a client profile pinned to older
/// versions, or a newer client asking ApiVersions v4).
pub async fn handshake_with_versions<S: AsyncRead + AsyncWrite + Unpin>(
    stream: S,
    client_id: &str,
    ours: &[(ApiKey, VersionRange)],
) -> Result<(RequestWriter<WriteHalf<S>>, ResponseReader<ReadHalf<S>>), WireError> {
    let (read_half, mut write_half) = tokio::io::split(stream);
    let mut reader = FrameReader::new(read_half, DEFAULT_MAX_FRAME_BYTES);
    let mut conn = ClientConn::new(client_id, ours.to_vec());
    open(&mut conn, &mut reader, &mut write_half).await?;
    let versions = conn.versions().cloned().unwrap_or_default();
    let conn: Shared = Arc::new(Mutex::new(conn));
    let writer =
        RequestWriter { writer: write_half, conn: conn.clone(), versions: versions.clone() };
    Ok((writer, ResponseReader { reader, conn, versions }))
}

impl<W: AsyncWrite + Unpin> RequestWriter<W> {
    /// Sends `request` at the negotiated version of its API and returns its correlation id.
    /// Fails if the broker has no common version or the request cannot be encoded at it (e.g. a
    /// field that version lacks). Not cancel safe: dropping it mid-write leaves a partial frame,
    /// after which the connection must be dropped.
    pub async fn send(&mut self, request: &RequestKind) -> Result<i32, WireError> {
        let api_key = request_api_key(request)
            .ok_or_else(|| WireError::UnsupportedRequest(format!("{request:?}")))?;
        let version =
            self.versions.version_for(api_key).ok_or(WireError::NotNegotiated(api_key))?;
        self.send_at(request, version).await
    }

    /// Sends `request` at an explicit `version`, which must lie in the broker's range.
    pub async fn send_at(&mut self, request: &RequestKind, version: i16) -> Result<i32, WireError> {
        // Recorded before writing, so the reader can never see the answer first.
        let (correlation_id, frame) = lock(&self.conn).write(request, version)?;
        write_frame(&mut self.writer, &frame).await?;
        Ok(correlation_id)
    }

    /// The version [`Self::send`] uses for `api_key`.
    pub fn version_for(&self, api_key: ApiKey) -> Option<i16> {
        self.versions.version_for(api_key)
    }

    /// Closes our sending direction (the broker sees end of stream and closes the connection
    /// once it has answered what it read). Dropping the writer alone does not close a stream
    /// split with `tokio::io::split`: the reader half keeps it open.
    pub async fn shutdown(&mut self) -> Result<(), WireError> {
        self.writer.shutdown().await?;
        Ok(())
    }

    /// The negotiated versions.
    pub fn versions(&self) -> &NegotiatedVersions {
        &self.versions
    }
}

impl<R: AsyncRead + Unpin> ResponseReader<R> {
    /// The next answer, with the correlation id of the request it answers. Answers arrive in
    /// request order; an answer for another request than the oldest in flight is an error.
    /// [`WireError::ConnectionClosed`] when the broker closed the connection. Cancel safe.
    pub async fn recv(&mut self) -> Result<(i32, ResponseKind), WireError> {
        let frame = self.reader.read_frame().await?.ok_or(WireError::ConnectionClosed)?;
        match lock(&self.conn).on_frame(frame)? {
            Received::Response { correlation_id, response } => Ok((correlation_id, *response)),
            Received::Retry(_) | Received::Ready => {
                Err(WireError::Handshake("a handshake answer after the handshake".into()))
            }
        }
    }

    /// Requests written and not yet answered.
    pub fn in_flight(&self) -> usize {
        lock(&self.conn).in_flight()
    }

    /// The version requests of `api_key` are sent with.
    pub fn version_for(&self, api_key: ApiKey) -> Option<i16> {
        self.versions.version_for(api_key)
    }
}
