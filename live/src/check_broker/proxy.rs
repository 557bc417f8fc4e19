//! The local TCP proxy the harness owns: one listener per member and broker node on 127.0.0.1,
//! forwarding to the broker, so faults happen on the member's side of the wire and need nothing
//! from the broker. A member's [`Link`] carries its faults: a reset of every connection, one-way
//! stalls (requests, or answers: held responses) and added latency per forwarded chunk. Bytes
//! are forwarded in order; a stall or latency delays them, never reorders them.

use std::cell::RefCell;
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use super::plan::Direction;

/// One member's faults, shared by its proxies' connections.
#[derive(Debug)]
struct LinkState {
    requests_until: Option<Instant>,
    answers_until: Option<Instant>,
    latency: Option<(Duration, Instant)>,
}

/// The fault controls of one member's proxies.
#[derive(Clone, Debug)]
pub struct Link {
    state: Rc<RefCell<LinkState>>,
    drops: watch::Sender<u64>,
}

impl Default for Link {
    fn default() -> Self {
        Self::new()
    }
}

impl Link {
    /// A link with no fault.
    pub fn new() -> Self {
        let state = LinkState { requests_until: None, answers_until: None, latency: None };
        Self { state: Rc::new(RefCell::new(state)), drops: watch::channel(0).0 }
    }

    /// Resets every connection open now.
    pub fn drop_all(&self) {
        self.drops.send_modify(|n| *n += 1);
    }

    /// Holds the bytes going `direction` for `d`.
    pub fn stall(&self, direction: Direction, d: Duration) {
        let until = Some(Instant::now() + d);
        let mut s = self.state.borrow_mut();
        match direction {
            Direction::Requests => s.requests_until = until,
            Direction::Answers => s.answers_until = until,
        }
    }

    /// Delays every chunk by `latency` for `d`.
    pub fn slow(&self, latency: Duration, d: Duration) {
        self.state.borrow_mut().latency = Some((latency, Instant::now() + d));
    }

    /// Lifts every stall and latency.
    pub fn heal(&self) {
        let mut s = self.state.borrow_mut();
        s.requests_until = None;
        s.answers_until = None;
        s.latency = None;
    }

    /// How long the stall on `direction` still holds bytes, if one does.
    fn stalled(&self, direction: Direction) -> Option<Duration> {
        let s = self.state.borrow();
        let now = Instant::now();
        let until = match direction {
            Direction::Requests => s.requests_until,
            Direction::Answers => s.answers_until,
        };
        until.filter(|t| *t > now).map(|t| t - now)
    }

    /// The latency added to a chunk now, if any.
    fn latency(&self) -> Option<Duration> {
        let now = Instant::now();
        self.state.borrow().latency.filter(|(_, until)| *until > now).map(|(l, _)| l)
    }
}

/// Starts a proxy to `upstream` for `link`'s member; its local address.
pub async fn start(upstream: String, link: Link) -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
    let addr = listener.local_addr()?;
    tokio::task::spawn_local(async move {
        while let Ok((client, _)) = listener.accept().await {
            tokio::task::spawn_local(forward(client, upstream.clone(), link.clone()));
        }
    });
    Ok(addr)
}

/// One proxied connection: connects upstream, then pumps both ways until either side closes
/// or the link drops its connections.
async fn forward(client: TcpStream, upstream: String, link: Link) {
    let mut drops = link.drops.subscribe();
    drops.mark_unchanged();
    let Ok(server) = TcpStream::connect(&upstream).await else { return };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (client_read, client_write) = client.into_split();
    let (server_read, server_write) = server.into_split();
    let up = pump(client_read, server_write, link.clone(), Direction::Requests);
    let down = pump(server_read, client_write, link, Direction::Answers);
    tokio::select! {
        _ = up => {}
        _ = down => {}
        _ = drops.changed() => {}
    }
    // Dropping both halves of both streams closes them: the member sees its connection reset.
}

async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    link: Link,
    direction: Direction,
) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        // Re-read in small steps: a heal lifts a stall early.
        while let Some(wait) = link.stalled(direction) {
            tokio::time::sleep(wait.min(Duration::from_millis(50))).await;
        }
        if let Some(latency) = link.latency() {
            tokio::time::sleep(latency).await;
        }
        if to.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An upstream that echoes what it reads.
    async fn echo() -> String {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        tokio::task::spawn_local(async move {
            while let Ok((mut s, _)) = listener.accept().await {
                tokio::task::spawn_local(async move {
                    let mut buf = [0u8; 1024];
                    while let Ok(n) = s.read(&mut buf).await {
                        if n == 0 || s.write_all(&buf[..n]).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        addr
    }

    fn local(f: impl std::future::Future<Output = ()>) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        tokio::task::LocalSet::new().block_on(&rt, f);
    }

    async fn round_trip(client: &mut TcpStream) -> Duration {
        let started = Instant::now();
        client.write_all(b"ping").await.unwrap();
        let mut buf = [0u8; 4];
        client.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"ping");
        started.elapsed()
    }

    #[test]
    fn a_proxy_forwards_both_ways_and_a_stall_of_answers_holds_them() {
        local(async {
            let link = Link::new();
            let proxy = start(echo().await, link.clone()).await.unwrap();
            let mut client = TcpStream::connect(proxy).await.unwrap();
            assert!(round_trip(&mut client).await < Duration::from_millis(300));
            link.stall(Direction::Answers, Duration::from_millis(400));
            assert!(round_trip(&mut client).await >= Duration::from_millis(350), "held");
            link.slow(Duration::from_millis(150), Duration::from_secs(5));
            assert!(round_trip(&mut client).await >= Duration::from_millis(250), "two chunks late");
            link.heal();
            assert!(round_trip(&mut client).await < Duration::from_millis(300), "healed");
        });
    }

    #[test]
    fn dropping_a_link_resets_its_connections_and_new_ones_work() {
        local(async {
            let link = Link::new();
            let proxy = start(echo().await, link.clone()).await.unwrap();
            let mut client = TcpStream::connect(proxy).await.unwrap();
            round_trip(&mut client).await;
            link.drop_all();
            let mut buf = [0u8; 4];
            let read = tokio::time::timeout(Duration::from_secs(2), client.read(&mut buf)).await;
            assert!(matches!(read, Ok(Ok(0)) | Ok(Err(_))), "closed: {read:?}");
            let mut again = TcpStream::connect(proxy).await.unwrap();
            round_trip(&mut again).await;
        });
    }
}
