//! The nemesis's hold on the wire: what the request hook consults before and after the broker
//! answers (delays, a broker that answers nothing, held-back answers, injected error answers, a
//! commit answer lost after the append) and the reset signal every connection listens to.
//! Thin tokio code; the broker core knows nothing of it.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use groupsim_coordinator::api::refusal::group_error_response;
use kafka_protocol::messages::{RequestKind, ResponseKind};
use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use tokio::sync::watch;
use tokio::time::Instant;

use super::faults::{GroupApi, InjectedError};

/// Which connections one reset closes, resolved to client ids.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Resolved {
    /// Nothing (the initial value of the signal).
    Nobody,
    All,
    Broker(i32),
    /// Every connection whose requests carry this client id.
    Client(String),
    /// This client's connection carrying group requests, if nothing is in flight on it.
    IdleGroupConnection(String),
}

/// What one connection is, as far as resets and the wire stream are concerned.
#[derive(Default)]
pub(super) struct ConnInfo {
    pub(super) node: i32,
    /// The connection's number, never given to another connection of the process (the wire
    /// stream's `conn`).
    pub(super) id: u64,
    client: Mutex<Option<String>>,
    carries_group: AtomicBool,
    in_flight: AtomicBool,
}

impl ConnInfo {
    pub(super) fn new(node: i32) -> Self {
        static NEXT_ID: AtomicU64 = AtomicU64::new(0);
        Self { node, id: NEXT_ID.fetch_add(1, Ordering::Relaxed), ..Self::default() }
    }

    /// Whether `reset` closes this connection.
    pub(super) fn hit_by(&self, reset: &Resolved) -> bool {
        let client = self.client.lock().unwrap_or_else(|p| p.into_inner()).clone();
        match reset {
            Resolved::Nobody => false,
            Resolved::All => true,
            Resolved::Broker(b) => *b == self.node,
            Resolved::Client(c) => client.as_ref() == Some(c),
            Resolved::IdleGroupConnection(c) => {
                client.as_ref() == Some(c)
                    && self.carries_group.load(Ordering::Relaxed)
                    && !self.in_flight.load(Ordering::Relaxed)
            }
        }
    }
}

/// Marks a request in flight on a connection for as long as it lives.
pub(super) struct InFlight(Arc<ConnInfo>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.store(false, Ordering::Relaxed);
    }
}

/// A window during which a broker's answers wait.
struct Window {
    broker: Option<i32>,
    until: Instant,
    /// `None`: nothing is answered before `until`; `Some(d)`: every answer waits `d`.
    delay: Option<Duration>,
}

/// A commit-appended trigger armed at the gate: after an accepted OffsetCommit, with this
/// chance, the connection closes before the answer goes out.
struct LoseCommitAnswer {
    per_mille: u16,
    left: u16,
    rng: ChaCha8Rng,
    label: String,
}

#[derive(Default)]
struct State {
    windows: Vec<Window>,
    holds: Vec<(GroupApi, Duration)>,
    errors: Vec<(GroupApi, InjectedError, u32)>,
    lose_commit: Vec<LoseCommitAnswer>,
    /// Trigger firings the nemesis has not recorded yet: (trigger label, client).
    fired: Vec<(String, String)>,
}

/// The nemesis's wire-level state, shared by every connection of a cluster.
pub(super) struct Gate {
    state: Mutex<State>,
    resets: watch::Sender<(u64, Resolved)>,
    /// Bumped whenever a coordinator starts a generation.
    generations: watch::Sender<u64>,
}

impl Default for Gate {
    fn default() -> Self {
        Self {
            state: Mutex::default(),
            resets: watch::channel((0, Resolved::Nobody)).0,
            generations: watch::channel(0).0,
        }
    }
}

pub(super) use groupsim::faults::group_api;

impl Gate {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Closes the connections `scope` names.
    pub(super) fn reset(&self, scope: Resolved) {
        self.resets.send_modify(|(serial, s)| {
            *serial += 1;
            *s = scope;
        });
    }

    /// The reset signal, for a new connection.
    pub(super) fn resets(&self) -> watch::Receiver<(u64, Resolved)> {
        self.resets.subscribe()
    }

    /// Every answer of `broker` (all when `None`) waits `delay` (or, with `None`, until the
    /// window ends) for `length`.
    pub(super) fn window(&self, broker: Option<i32>, delay: Option<Duration>, length: Duration) {
        let until = Instant::now() + length;
        self.lock().windows.push(Window { broker, until, delay });
    }

    /// The next answer to `api` waits `hold`.
    pub(super) fn hold(&self, api: GroupApi, hold: Duration) {
        self.lock().holds.push((api, hold));
    }

    /// The next `count` requests of `api` get `error`.
    pub(super) fn inject(&self, api: GroupApi, error: InjectedError, count: u32) {
        self.lock().errors.push((api, error, count));
    }

    /// Arms a commit-appended trigger (see [`LoseCommitAnswer`]).
    pub(super) fn lose_commit_answers(
        &self,
        label: String,
        per_mille: u16,
        left: u16,
        rng: ChaCha8Rng,
    ) {
        self.lock().lose_commit.push(LoseCommitAnswer { per_mille, left, rng, label });
    }

    /// Forgets every delay, hold, injected error and armed trigger (the heal phase).
    pub(super) fn clear(&self) {
        let mut state = self.lock();
        state.windows.clear();
        state.holds.clear();
        state.errors.clear();
        state.lose_commit.clear();
    }

    /// Trigger firings since the last call.
    pub(super) fn take_fired(&self) -> Vec<(String, String)> {
        std::mem::take(&mut self.lock().fired)
    }

    /// Notes a request arriving on `conn`; the guard marks it in flight until dropped.
    pub(super) fn arrive(
        conn: &Arc<ConnInfo>,
        client_id: Option<&str>,
        api: Option<GroupApi>,
    ) -> InFlight {
        if let Some(c) = client_id {
            let mut slot = conn.client.lock().unwrap_or_else(|p| p.into_inner());
            if slot.as_deref() != Some(c) {
                *slot = Some(c.to_string());
            }
        }
        if api.is_some() {
            conn.carries_group.store(true, Ordering::Relaxed);
        }
        conn.in_flight.store(true, Ordering::Relaxed);
        InFlight(conn.clone())
    }

    /// An injected error answer for this request, if one is armed for its API.
    pub(super) fn injected(
        &self,
        version: i16,
        api: Option<GroupApi>,
        request: &RequestKind,
    ) -> Option<ResponseKind> {
        let api = api?;
        let mut state = self.lock();
        let slot = state.errors.iter_mut().find(|(a, _, n)| *a == api && *n > 0)?;
        let answer = group_error_response(version, request, slot.1.code())?;
        slot.2 -= 1;
        state.errors.retain(|(_, _, n)| *n > 0);
        Some(answer)
    }

    /// Whether an armed trigger loses this accepted commit's answer (the connection closes).
    pub(super) fn loses_commit_answer(
        &self,
        client: Option<&str>,
        response: &ResponseKind,
    ) -> bool {
        let ResponseKind::OffsetCommit(r) = response else { return false };
        let accepted = r.topics.iter().flat_map(|t| &t.partitions).any(|p| p.error_code == 0);
        if !accepted {
            return false;
        }
        let mut state = self.lock();
        let mut fired = None;
        for t in state.lose_commit.iter_mut().filter(|t| t.left > 0) {
            if t.rng.random_range(0..1000u16) < t.per_mille {
                t.left -= 1;
                fired = Some(t.label.clone());
                break;
            }
        }
        let Some(label) = fired else { return false };
        state.fired.push((label, client.unwrap_or("").to_string()));
        true
    }

    /// How long the answer to a request of `api` on `broker` waits now. A held OffsetCommit
    /// answer also waits for the group's next generation (an old generation's commit answered
    /// only after the next JoinGroup; in a consumer group, after the next group epoch), at most
    /// twice its hold.
    pub(super) fn wait(&self, broker: i32, api: Option<GroupApi>) -> Wait {
        let now = Instant::now();
        let mut state = self.lock();
        state.windows.retain(|w| w.until > now);
        let mut wait = Wait { at_least: Duration::ZERO, next_generation: None };
        for w in state.windows.iter().filter(|w| w.broker.is_none_or(|b| b == broker)) {
            wait.at_least = wait.at_least.max(w.delay.unwrap_or(w.until - now));
        }
        if let Some(api) = api {
            if let Some(i) = state.holds.iter().position(|(a, _)| *a == api) {
                wait.at_least = wait.at_least.max(state.holds.remove(i).1);
                if api == GroupApi::OffsetCommit {
                    wait.next_generation = Some(self.generations.subscribe());
                }
            }
        }
        wait
    }

    /// A coordinator started a new generation, or bumped a consumer group's epoch (held commit
    /// answers may go).
    pub(super) fn generation_started(&self) {
        self.generations.send_modify(|n| *n += 1);
    }
}

/// How long one answer waits (see [`Gate::wait`]).
pub(super) struct Wait {
    /// At least this long.
    pub(super) at_least: Duration,
    /// And, when set, until the next generation starts (at most `at_least` more).
    pub(super) next_generation: Option<watch::Receiver<u64>>,
}

impl Wait {
    /// Sleeps as long as the wait says.
    pub(super) async fn done(self) {
        if !self.at_least.is_zero() {
            tokio::time::sleep(self.at_least).await;
        }
        if let Some(mut generations) = self.next_generation {
            let _ = tokio::time::timeout(self.at_least, generations.changed()).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::offset_commit_response::{
        OffsetCommitResponsePartition, OffsetCommitResponseTopic,
    };
    use kafka_protocol::messages::{HeartbeatRequest, OffsetCommitRequest, OffsetCommitResponse};
    use rand::SeedableRng;

    #[test]
    fn an_injected_error_answers_its_api_count_times_then_stops() {
        let gate = Gate::default();
        gate.inject(GroupApi::Heartbeat, InjectedError::RebalanceInProgress, 2);
        let hb = RequestKind::Heartbeat(HeartbeatRequest::default());
        let commit = RequestKind::OffsetCommit(OffsetCommitRequest::default());
        assert!(gate.injected(4, Some(GroupApi::OffsetCommit), &commit).is_none());
        for _ in 0..2 {
            let Some(ResponseKind::Heartbeat(r)) = gate.injected(4, Some(GroupApi::Heartbeat), &hb)
            else {
                panic!("a heartbeat error answer")
            };
            assert_eq!(r.error_code, 27);
        }
        assert!(gate.injected(4, Some(GroupApi::Heartbeat), &hb).is_none());
    }

    #[test]
    fn holds_apply_once_to_their_api_and_windows_to_their_broker() {
        let gate = Gate::default();
        gate.hold(GroupApi::OffsetFetch, Duration::from_secs(9));
        gate.window(Some(1), Some(Duration::from_millis(300)), Duration::from_secs(60));
        let wait = |broker, api| gate.wait(broker, api).at_least;
        assert_eq!(wait(0, Some(GroupApi::Heartbeat)), Duration::ZERO);
        assert_eq!(wait(1, None), Duration::from_millis(300));
        assert_eq!(wait(0, Some(GroupApi::OffsetFetch)), Duration::from_secs(9));
        assert_eq!(wait(0, Some(GroupApi::OffsetFetch)), Duration::ZERO, "once");
        gate.window(Some(2), None, Duration::from_secs(60));
        assert!(wait(2, None) > Duration::from_secs(59), "unresponsive: until the end");
        gate.clear();
        assert_eq!(wait(2, None), Duration::ZERO);
        gate.hold(GroupApi::OffsetCommit, Duration::from_secs(1));
        let held = gate.wait(0, Some(GroupApi::OffsetCommit));
        let generations = held.next_generation.expect("a held commit waits for a generation");
        assert!(!generations.has_changed().unwrap());
        gate.generation_started();
        assert!(generations.has_changed().unwrap(), "the next generation releases it");
    }

    #[test]
    fn a_commit_trigger_loses_accepted_answers_only_and_at_most_its_fires() {
        let gate = Gate::default();
        gate.lose_commit_answers("t".into(), 1000, 1, ChaCha8Rng::seed_from_u64(1));
        let answer = |error_code: i16| {
            let partition = OffsetCommitResponsePartition::default().with_error_code(error_code);
            let topic = OffsetCommitResponseTopic::default().with_partitions(vec![partition]);
            ResponseKind::OffsetCommit(OffsetCommitResponse::default().with_topics(vec![topic]))
        };
        let (refused, accepted) = (answer(27), answer(0));
        assert!(!gate.loses_commit_answer(Some("c"), &refused));
        assert!(gate.loses_commit_answer(Some("c"), &accepted));
        assert!(!gate.loses_commit_answer(Some("c"), &accepted), "max one fire");
        assert_eq!(gate.take_fired(), vec![("t".to_string(), "c".to_string())]);
    }
}
