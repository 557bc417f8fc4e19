//! Framing tests: round trips, clean and unclean ends of stream, bad lengths, one write per
//! frame, and the cancel safety of `FrameReader`.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use groupsim_wire::frame::{read_frame, write_frame, FrameReader};
use groupsim_wire::WireError;
use tokio::io::{AsyncWrite, AsyncWriteExt};

#[tokio::test]
async fn frames_round_trip_and_clean_eof_between_frames_is_none() {
    let (mut a, mut b) = tokio::io::duplex(1024);
    write_frame(&mut a, b"hello").await.unwrap();
    write_frame(&mut a, b"").await.unwrap();
    write_frame(&mut a, &[7u8; 300]).await.unwrap();
    drop(a);
    assert_eq!(read_frame(&mut b, 1024).await.unwrap().as_deref(), Some(&b"hello"[..]));
    assert_eq!(read_frame(&mut b, 1024).await.unwrap().as_deref(), Some(&b""[..]));
    assert_eq!(read_frame(&mut b, 1024).await.unwrap().map(|f| f.len()), Some(300));
    assert_eq!(read_frame(&mut b, 1024).await.unwrap(), None);
}

#[tokio::test]
async fn eof_inside_prefix_or_body_is_truncated_frame() {
    for bytes in [&[0u8, 0][..], &[0, 0, 0, 5, 1, 2][..]] {
        let (mut a, mut b) = tokio::io::duplex(64);
        a.write_all(bytes).await.unwrap();
        drop(a);
        let err = read_frame(&mut b, 1024).await.unwrap_err();
        assert!(matches!(err, WireError::TruncatedFrame { .. }), "{err}");

        let (mut a, b) = tokio::io::duplex(64);
        a.write_all(bytes).await.unwrap();
        drop(a);
        let err = FrameReader::new(b, 1024).read_frame().await.unwrap_err();
        assert!(matches!(err, WireError::TruncatedFrame { .. }), "{err}");
    }
}

#[tokio::test]
async fn negative_and_oversized_lengths_are_refused() {
    for (prefix, negative) in [(-1i32, true), (1025, false)] {
        let (mut a, mut b) = tokio::io::duplex(64);
        a.write_all(&prefix.to_be_bytes()).await.unwrap();
        let err = read_frame(&mut b, 1024).await.unwrap_err();
        assert_eq!(matches!(err, WireError::NegativeFrameLength(-1)), negative, "{err}");
        assert_eq!(
            matches!(err, WireError::FrameTooLarge { len: 1025, max: 1024 }),
            !negative,
            "{err}"
        );

        let (mut a, b) = tokio::io::duplex(64);
        a.write_all(&prefix.to_be_bytes()).await.unwrap();
        let err = FrameReader::new(b, 1024).read_frame().await.unwrap_err();
        assert!(
            matches!(err, WireError::NegativeFrameLength(_) | WireError::FrameTooLarge { .. }),
            "{err}"
        );
    }
}

/// Counts `poll_write` calls.
#[derive(Default)]
struct CountingWriter {
    writes: usize,
    bytes: Vec<u8>,
}

impl AsyncWrite for CountingWriter {
    fn poll_write(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        self.writes += 1;
        self.bytes.extend_from_slice(buf);
        Poll::Ready(Ok(buf.len()))
    }
    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[tokio::test]
async fn write_frame_uses_one_write_call() {
    let mut w = CountingWriter::default();
    write_frame(&mut w, b"abcdef").await.unwrap();
    assert_eq!(w.writes, 1);
    assert_eq!(w.bytes, [0, 0, 0, 6, b'a', b'b', b'c', b'd', b'e', b'f']);
}

#[tokio::test(start_paused = true)]
async fn frame_reader_keeps_partial_frames_across_cancelled_reads() {
    let (mut a, b) = tokio::io::duplex(64);
    let mut reader = FrameReader::new(b, 1024);
    a.write_all(&[0, 0, 0, 4, b'a', b'b']).await.unwrap();
    // The read cannot finish; a timeout cancels it after it consumed the first bytes.
    let timed_out = tokio::time::timeout(Duration::from_millis(10), reader.read_frame()).await;
    assert!(timed_out.is_err());
    a.write_all(b"cd").await.unwrap();
    assert_eq!(reader.read_frame().await.unwrap().as_deref(), Some(&b"abcd"[..]));
}
