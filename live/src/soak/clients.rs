//! The soak's loopback clients: each connects, sends a few valid requests (waiting for every
//! answer, up to a timeout), ends with a clean close, a malformed frame or a half-frame, and
//! disconnects. Their plans are drawn from a seed; how many run at once, how many there are in
//! all, and how long each may take are all bounded, so the load stops by itself.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use groupsim_wire::codec::{decode_response, peek_correlation_id};
use groupsim_wire::FrameReader;
use kafka_protocol::messages::ApiKey;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio::sync::Semaphore;

use super::frames::{self, Malformed, Target, MALFORMED, VALID_APIS};

/// Most valid requests one client sends.
pub const MAX_REQUESTS_PER_CLIENT: u32 = 8;
/// Longest pause between a client's requests.
const MAX_THINK: Duration = Duration::from_millis(200);
/// Longest a half-frame client stalls before it disconnects.
const MAX_STALL: Duration = Duration::from_millis(1_000);
/// Largest answer a loopback client reads (its Fetches ask for far less).
const MAX_ANSWER_BYTES: usize = 4 * 1024 * 1024;

/// How a client's connection ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    /// It closes after its last answer.
    Close,
    /// It writes a malformed frame and waits for the broker to close the connection.
    Malformed(Malformed),
    /// It writes part of a valid frame and disconnects at once.
    HalfFrame,
    /// It writes part of a valid frame, stalls, then disconnects.
    HalfFrameStall,
}

/// What one client does, drawn from the soak's seed and the client's index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientPlan {
    /// Its index among the soak's clients (its `client.id` is `soak-<index>`).
    pub index: u32,
    /// The valid requests it sends, in order.
    pub requests: Vec<ApiKey>,
    /// How it ends.
    pub ending: Ending,
}

impl ClientPlan {
    /// Client `index`'s plan under `seed`: 1 to [`MAX_REQUESTS_PER_CLIENT`] valid requests, then
    /// half the time a clean close, else a malformed frame or a half-frame.
    pub fn draw(seed: u64, index: u32) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ (u64::from(index) << 20) ^ 0x50a4);
        let count = rng.random_range(1..=MAX_REQUESTS_PER_CLIENT);
        let requests =
            (0..count).map(|_| VALID_APIS[rng.random_range(0..VALID_APIS.len())]).collect();
        let ending = match rng.random_range(0..10u32) {
            0..5 => Ending::Close,
            5..8 => Ending::Malformed(MALFORMED[rng.random_range(0..MALFORMED.len())]),
            8 => Ending::HalfFrame,
            _ => Ending::HalfFrameStall,
        };
        Self { index, requests, ending }
    }
}

/// What the clients saw, counted as they go; the sampler takes the latencies of each interval.
#[derive(Debug, Default, Clone)]
pub struct LoadStats {
    /// Clients that finished their plan.
    pub clients_done: u64,
    /// Clients whose connect failed.
    pub connect_failures: u64,
    /// Valid requests written.
    pub sent: u64,
    /// Valid requests answered (with the right correlation id and a decodable answer).
    pub answered: u64,
    /// Valid requests with no answer within the timeout, or whose connection closed first.
    pub unanswered: u64,
    /// Answers that did not decode or carried another request's correlation id.
    pub bad_answers: u64,
    /// Malformed frames written.
    pub malformed_sent: u64,
    /// Malformed frames after which the broker closed the connection, as it must.
    pub malformed_closed: u64,
    /// Malformed frames the broker answered, or left the connection open past the timeout.
    pub malformed_not_closed: u64,
    /// Half-frames written.
    pub half_frames: u64,
    /// Clients still running when the load's deadline cut them off.
    pub cut_off: u64,
    /// Connections the clients hold open right now.
    pub open_connections: u64,
    /// Answer latencies (ms) since the sampler last took them.
    pub window_ms: Vec<f64>,
    /// The first few failures, described, for the report.
    pub failures: Vec<String>,
}

/// Failures kept word for word; the rest are only counted.
const KEPT_FAILURES: usize = 20;

impl LoadStats {
    fn fail(&mut self, what: String) {
        tracing::warn!("{what}");
        if self.failures.len() < KEPT_FAILURES {
            self.failures.push(what);
        }
    }
}

/// Shared between the clients and the sampler.
pub type SharedStats = Arc<Mutex<LoadStats>>;

/// Locks the stats, recovering them if a holder panicked.
pub fn lock(stats: &SharedStats) -> std::sync::MutexGuard<'_, LoadStats> {
    stats.lock().unwrap_or_else(|p| p.into_inner())
}

/// How the load runs.
#[derive(Clone, Debug)]
pub struct LoadConfig {
    /// The broker the clients connect to.
    pub addr: SocketAddr,
    /// What their valid requests name.
    pub target: Target,
    /// Clients in all.
    pub clients: u32,
    /// Most clients connected at once.
    pub concurrency: usize,
    /// Client starts are spread evenly over this span.
    pub spread: Duration,
    /// Longest wait for an answer to a valid request, or for the close after a malformed frame.
    pub request_timeout: Duration,
    /// The seed the plans are drawn from.
    pub seed: u64,
    /// When the load must have stopped, whatever is still running.
    pub deadline: Duration,
}

/// Runs every client of `config`, counting into `stats`; returns when all are done or the
/// deadline has passed (the rest are counted as cut off).
pub async fn run_load(config: LoadConfig, stats: SharedStats) {
    let started = tokio::time::Instant::now();
    let permits = Arc::new(Semaphore::new(config.concurrency.max(1)));
    let mut tasks = tokio::task::JoinSet::new();
    let config = Arc::new(config);
    let all = async {
        for index in 0..config.clients {
            let at = config.spread.mul_f64(f64::from(index) / f64::from(config.clients.max(1)));
            tokio::time::sleep_until(started + at).await;
            let Ok(permit) = permits.clone().acquire_owned().await else { break };
            let (config, stats) = (config.clone(), stats.clone());
            tasks.spawn(async move {
                run_client(&config, ClientPlan::draw(config.seed, index), &stats).await;
                drop(permit);
            });
            // Reap finished clients as we go, so the set holds only running ones.
            while tasks.try_join_next().is_some() {}
        }
        while tasks.join_next().await.is_some() {}
    };
    if tokio::time::timeout_at(started + config.deadline, all).await.is_err() {
        let mut s = lock(&stats);
        s.cut_off += tasks.len() as u64;
        if !tasks.is_empty() {
            let n = tasks.len();
            s.fail(format!("{n} client(s) still running at the load's deadline"));
        }
    }
    tasks.abort_all();
}

/// One client's life. Every wait is bounded by the request timeout.
async fn run_client(config: &LoadConfig, plan: ClientPlan, stats: &SharedStats) {
    let client_id = format!("soak-{}", plan.index);
    let stream =
        match tokio::time::timeout(config.request_timeout, TcpStream::connect(config.addr)).await {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => return connect_failed(stats, &client_id, &e.to_string()),
            Err(_) => return connect_failed(stats, &client_id, "timed out"),
        };
    let _ = stream.set_nodelay(true);
    lock(stats).open_connections += 1;
    let mut rng = ChaCha8Rng::seed_from_u64(config.seed ^ u64::from(plan.index) ^ 0xbad);
    let mut conn = FrameReader::new(stream, MAX_ANSWER_BYTES);
    let mut alive = true;
    for (i, &api) in plan.requests.iter().enumerate() {
        let correlation_id = i as i32 + 1;
        let n = plan.index.wrapping_mul(31).wrapping_add(i as u32);
        if !exchange(config, &mut conn, &client_id, api, correlation_id, n, stats).await {
            alive = false;
            break;
        }
        let think = MAX_THINK.mul_f64(rng.random_range(0.0..1.0));
        tokio::time::sleep(think).await;
    }
    if alive {
        end(config, &mut conn, &client_id, plan.ending, &mut rng, stats).await;
    }
    drop(conn);
    let mut s = lock(stats);
    s.open_connections -= 1;
    s.clients_done += 1;
}

fn connect_failed(stats: &SharedStats, client_id: &str, why: &str) {
    let mut s = lock(stats);
    s.connect_failures += 1;
    s.clients_done += 1;
    s.fail(format!("{client_id}: connect failed: {why}"));
}

/// Sends one valid request and waits for its answer; false if the connection is no longer
/// usable.
async fn exchange(
    config: &LoadConfig,
    conn: &mut FrameReader<TcpStream>,
    client_id: &str,
    api: ApiKey,
    correlation_id: i32,
    n: u32,
    stats: &SharedStats,
) -> bool {
    let Some(request) = frames::valid_request(api, &config.target, n) else { return true };
    let body = match frames::encode(api, &request, correlation_id, client_id) {
        Ok(b) => b,
        Err(e) => {
            lock(stats).fail(format!("{client_id}: cannot encode {api:?}: {e}"));
            return true;
        }
    };
    let sent = Instant::now();
    lock(stats).sent += 1;
    if let Err(e) = groupsim_wire::write_frame(conn.get_mut(), &body).await {
        let mut s = lock(stats);
        s.unanswered += 1;
        s.fail(format!("{client_id}: writing {api:?} failed: {e}"));
        return false;
    }
    let read = tokio::time::timeout(config.request_timeout, conn.read_frame()).await;
    let mut s = lock(stats);
    let frame = match read {
        Ok(Ok(Some(frame))) => frame,
        Ok(Ok(None)) => {
            s.unanswered += 1;
            s.fail(format!("{client_id}: {api:?} unanswered: the broker closed the connection"));
            return false;
        }
        Ok(Err(e)) => {
            s.unanswered += 1;
            s.fail(format!("{client_id}: {api:?} unanswered: {e}"));
            return false;
        }
        Err(_) => {
            s.unanswered += 1;
            let secs = config.request_timeout.as_secs();
            s.fail(format!("{client_id}: {api:?} unanswered after {secs} s"));
            return false;
        }
    };
    let latency_ms = sent.elapsed().as_secs_f64() * 1e3;
    let version = frames::version_of(api).unwrap_or(0);
    match (peek_correlation_id(&frame), decode_response(frame, api, version)) {
        (Some(id), Ok(_)) if id == correlation_id => {
            s.answered += 1;
            s.window_ms.push(latency_ms);
            true
        }
        (id, decoded) => {
            s.bad_answers += 1;
            let why = decoded.err().map(|e| e.to_string()).unwrap_or_default();
            s.fail(format!(
                "{client_id}: bad answer to {api:?} (correlation {id:?}, expected {correlation_id}) {why}"
            ));
            false
        }
    }
}

/// The client's ending (see [`Ending`]).
async fn end(
    config: &LoadConfig,
    conn: &mut FrameReader<TcpStream>,
    client_id: &str,
    ending: Ending,
    rng: &mut ChaCha8Rng,
    stats: &SharedStats,
) {
    match ending {
        Ending::Close => {
            let _ = conn.get_mut().shutdown().await;
        }
        Ending::Malformed(kind) => {
            let bytes = frames::malformed(kind, &config.target, rng);
            lock(stats).malformed_sent += 1;
            if conn.get_mut().write_all(&bytes).await.is_err() {
                // Already closed by the broker: what a malformed frame should get.
                lock(stats).malformed_closed += 1;
                return;
            }
            let read = tokio::time::timeout(config.request_timeout, conn.read_frame()).await;
            let mut s = lock(stats);
            match read {
                Ok(Ok(None) | Err(_)) => s.malformed_closed += 1,
                Ok(Ok(Some(_))) => {
                    s.malformed_not_closed += 1;
                    s.fail(format!("{client_id}: a malformed frame ({kind:?}) was answered"));
                }
                Err(_) => {
                    s.malformed_not_closed += 1;
                    let secs = config.request_timeout.as_secs();
                    s.fail(format!(
                        "{client_id}: the connection stayed open {secs} s after a malformed frame ({kind:?})"
                    ));
                }
            }
        }
        Ending::HalfFrame | Ending::HalfFrameStall => {
            let request = frames::valid_request(ApiKey::Metadata, &config.target, 0);
            let body = request
                .and_then(|r| frames::encode(ApiKey::Metadata, &r, 99, client_id).ok())
                .unwrap_or_default();
            let whole = groupsim_wire::encode_frame(&body).unwrap_or_default();
            let part = frames::half_frame_len(whole.len(), rng);
            lock(stats).half_frames += 1;
            let _ = conn.get_mut().write_all(&whole[..part]).await;
            if ending == Ending::HalfFrameStall {
                tokio::time::sleep(MAX_STALL.mul_f64(rng.random_range(0.0..1.0))).await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_are_bounded_repeatable_and_mixed() {
        let plans: Vec<ClientPlan> = (0..1_000).map(|i| ClientPlan::draw(7, i)).collect();
        assert_eq!(plans, (0..1_000).map(|i| ClientPlan::draw(7, i)).collect::<Vec<_>>());
        assert!(plans
            .iter()
            .all(|p| (1..=MAX_REQUESTS_PER_CLIENT as usize).contains(&p.requests.len())));
        let count = |f: &dyn Fn(&Ending) -> bool| plans.iter().filter(|p| f(&p.ending)).count();
        assert!(count(&|e| *e == Ending::Close) > 300);
        for kind in MALFORMED {
            assert!(count(&|e| *e == Ending::Malformed(kind)) > 20, "{kind:?} drawn");
        }
        assert!(count(&|e| *e == Ending::HalfFrame) > 20);
        assert!(count(&|e| *e == Ending::HalfFrameStall) > 20);
        for &api in VALID_APIS {
            assert!(plans.iter().any(|p| p.requests.contains(&api)), "{api:?} drawn");
        }
    }
}
