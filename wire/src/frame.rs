//! Kafka framing: every request and response is a 4-byte big-endian length followed by that many
//! bytes.
//!
//! Writes build the prefix and body in one buffer and hand it over with one write call: turmoil's
//! `tcp_capacity` counts write calls, so two writes per frame would halve it (TURMOIL_NOTES).

#[cfg(feature = "io")]
use bytes::{Buf, Bytes, BytesMut};
#[cfg(feature = "io")]
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::WireError;

/// Largest frame accepted by default (64 MiB): anything above is a corrupt or hostile length.
pub const DEFAULT_MAX_FRAME_BYTES: usize = 64 * 1024 * 1024;

#[cfg(feature = "io")]
/// Reads one frame. `Ok(None)` on a clean end of stream between frames; an error on a stream
/// that ends inside a frame, a negative length, or a length above `max_len`.
///
/// Not cancel safe (a partly read frame is lost if the future is dropped): use
/// [`FrameReader`] where the read races other branches of a `select!`.
pub async fn read_frame<R: AsyncRead + Unpin>(
    reader: &mut R,
    max_len: usize,
) -> Result<Option<Bytes>, WireError> {
    let mut prefix = [0u8; 4];
    let mut got = 0;
    while got < 4 {
        let n = reader.read(&mut prefix[got..]).await?;
        if n == 0 {
            return if got == 0 {
                Ok(None)
            } else {
                Err(WireError::TruncatedFrame { expected: 4, got })
            };
        }
        got += n;
    }
    let len = checked_len(i32::from_be_bytes(prefix), max_len)?;
    let mut body = vec![0u8; len];
    let mut filled = 0;
    while filled < len {
        let n = reader.read(&mut body[filled..]).await?;
        if n == 0 {
            return Err(WireError::TruncatedFrame { expected: len, got: filled });
        }
        filled += n;
    }
    Ok(Some(Bytes::from(body)))
}

#[cfg(feature = "io")]
/// Writes one frame (length prefix and body) with a single write call, then flushes.
pub async fn write_frame<W: AsyncWrite + Unpin>(
    writer: &mut W,
    body: &[u8],
) -> Result<(), WireError> {
    let buf = encode_frame(body)?;
    writer.write_all(&buf).await?;
    writer.flush().await?;
    Ok(())
}

/// The bytes of one frame: length prefix then body. Fails if the body exceeds `i32::MAX`.
pub fn encode_frame(body: &[u8]) -> Result<Vec<u8>, WireError> {
    let len = i32::try_from(body.len())
        .map_err(|_| WireError::FrameTooLarge { len: body.len() as i64, max: i32::MAX as usize })?;
    let mut buf = Vec::with_capacity(4 + body.len());
    buf.extend_from_slice(&len.to_be_bytes());
    buf.extend_from_slice(body);
    Ok(buf)
}

#[cfg_attr(not(feature = "io"), allow(dead_code))]
fn checked_len(len: i32, max_len: usize) -> Result<usize, WireError> {
    if len < 0 {
        return Err(WireError::NegativeFrameLength(len));
    }
    if len as usize > max_len {
        return Err(WireError::FrameTooLarge { len: len as i64, max: max_len });
    }
    Ok(len as usize)
}

#[cfg(feature = "io")]
/// A cancel-safe frame reader: bytes read so far are kept in an internal buffer, so dropping a
/// pending [`FrameReader::read_frame`] (e.g. a `select!` timeout branch won) loses nothing and
/// the next call continues where it stopped.
#[derive(Debug)]
pub struct FrameReader<R> {
    inner: R,
    buf: BytesMut,
    max_len: usize,
}

#[cfg(feature = "io")]
impl<R: AsyncRead + Unpin> FrameReader<R> {
    /// Wraps `inner`, refusing frames longer than `max_len`.
    pub fn new(inner: R, max_len: usize) -> Self {
        Self { inner, buf: BytesMut::with_capacity(4096), max_len }
    }

    /// Next frame, `Ok(None)` on a clean end of stream between frames. Same errors as
    /// [`read_frame`].
    pub async fn read_frame(&mut self) -> Result<Option<Bytes>, WireError> {
        loop {
            if let Some(frame) = self.parse_buffered()? {
                return Ok(Some(frame));
            }
            // `read_buf` is cancel safe: bytes it read are already in `self.buf`.
            let n = self.inner.read_buf(&mut self.buf).await?;
            if n == 0 {
                return match self.buf.len() {
                    0 => Ok(None),
                    got if got < 4 => Err(WireError::TruncatedFrame { expected: 4, got }),
                    got => {
                        let len = i32::from_be_bytes([
                            self.buf[0],
                            self.buf[1],
                            self.buf[2],
                            self.buf[3],
                        ]);
                        Err(WireError::TruncatedFrame {
                            expected: len.max(0) as usize,
                            got: got - 4,
                        })
                    }
                };
            }
        }
    }

    fn parse_buffered(&mut self) -> Result<Option<Bytes>, WireError> {
        if self.buf.len() < 4 {
            return Ok(None);
        }
        let len = checked_len(
            i32::from_be_bytes([self.buf[0], self.buf[1], self.buf[2], self.buf[3]]),
            self.max_len,
        )?;
        if self.buf.len() < 4 + len {
            self.buf.reserve(4 + len - self.buf.len());
            return Ok(None);
        }
        self.buf.advance(4);
        Ok(Some(self.buf.split_to(len).freeze()))
    }

    /// The wrapped reader.
    pub fn get_ref(&self) -> &R {
        &self.inner
    }

    /// The wrapped reader, mutably (e.g. to write answers on the same stream).
    pub fn get_mut(&mut self) -> &mut R {
        &mut self.inner
    }

    /// Bytes read from the stream but not yet returned as a frame.
    pub fn buffered(&self) -> usize {
        self.buf.len()
    }
}
