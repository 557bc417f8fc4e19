//! The broker process: the sans-IO [`Broker`] core with the requests it owes answers. Each
//! request gets a [`RequestId`]; the host says where its answer goes (`R`: a connection and how
//! to encode, or a channel back to a connection task) and gets it back with the answer. Probes
//! a request hits are the requesting client's (its name is its client id); timers and control
//! instructions are nobody's.
//!
//! The process also plays the late-request hazard ([`BrokerOrder::HoldNext`]): a request it read
//! reaches the coordinator only later, as when a request handler stalls. Kafka orders requests
//! per connection only, so the held request is processed after whatever its client sent since
//! on another connection; its answer goes where the host said, which by then is usually a
//! connection the client closed (the host drops it).

use std::collections::BTreeMap;
use std::sync::Arc;

use groupsim_coordinator::api::refusal::group_error_response;
use groupsim_coordinator::broker::{Broker, BrokerControl};
use groupsim_coordinator::{CoordinatorEvent, CoordinatorOutput};
use groupsim_history::{GroupApi, InjectedError};
use groupsim_wire::probe::{self, Tap};
use groupsim_wire::{Millis, RequestId};
use kafka_protocol::messages::{RequestKind, ResponseKind};

use crate::faults::group_api;
use crate::probes;

/// An instruction for a broker process from the world.
#[derive(Clone, Debug, PartialEq)]
pub enum BrokerOrder {
    /// For the coordinator core (a coordinator move).
    Core(BrokerControl),
    /// The late-request hazard: client `client_id`'s next `api` request read before `until`
    /// reaches the coordinator `delay_ms` after it was read.
    HoldNext { client_id: String, api: GroupApi, delay_ms: Millis, until: Millis },
    /// Broker-side BUGGIFY: the next `count` `api` requests read before `until`, from any
    /// client, are answered `error` without reaching the coordinator (an error Kafka's
    /// coordinator gives on that API, so a correct client handles it).
    InjectNext { api: GroupApi, error: InjectedError, count: u32, until: Millis },
    /// The producer appended records: the Fetches the broker holds may have data now.
    LogsAppended,
}

impl From<BrokerControl> for BrokerOrder {
    fn from(control: BrokerControl) -> Self {
        BrokerOrder::Core(control)
    }
}

/// A request read and held back (the late-request hazard).
#[derive(Debug)]
struct Held {
    due: Millis,
    read_at: Millis,
    id: RequestId,
    version: i16,
    client_id: String,
    api: GroupApi,
    request: RequestKind,
}

/// An armed [`BrokerOrder::HoldNext`].
#[derive(Clone, Debug)]
struct Hold {
    client_id: String,
    api: GroupApi,
    delay_ms: Millis,
    until: Millis,
}

/// An armed [`BrokerOrder::InjectNext`].
#[derive(Clone, Debug)]
struct Inject {
    api: GroupApi,
    error: InjectedError,
    left: u32,
    until: Millis,
}

/// What the broker process hands its host, in the order produced.
#[derive(Debug)]
pub enum BrokerOutput<R> {
    /// The answer to a request, to send where the host said.
    Answer { to: R, response: ResponseKind },
    /// A coordinator event for the history.
    Event(CoordinatorEvent),
    /// A held request reaches the coordinator now (the late-request hazard); the events it
    /// causes follow. `member_id` is the member id the request carries, if any.
    Late { client_id: String, api: GroupApi, member_id: Option<String>, read_at: Millis },
}

/// A running broker (see the module docs).
#[derive(Debug)]
pub struct BrokerProcess<R> {
    core: Broker,
    waiting: BTreeMap<RequestId, R>,
    next_id: u64,
    taps: Vec<Tap>,
    holds: Vec<Hold>,
    held: Vec<Held>,
    injects: Vec<Inject>,
    /// Held requests released and injected answers, reported before the core's outputs.
    released: std::collections::VecDeque<BrokerOutput<R>>,
}

impl<R> BrokerProcess<R> {
    /// The process around `core` (just built: probes its loading hit are nobody's).
    pub fn new(core: Broker) -> Self {
        let mut process = Self {
            core,
            waiting: BTreeMap::new(),
            next_id: 0,
            taps: Vec::new(),
            holds: Vec::new(),
            held: Vec::new(),
            injects: Vec::new(),
            released: Default::default(),
        };
        process.taps(None);
        process
    }

    fn taps(&mut self, actor: Option<&str>) {
        for probe in probe::take_taps() {
            self.taps.push(Tap { probe, actor: actor.map(Arc::from) });
        }
    }

    /// A request from client `client_id`, encoded at `version`; its answer goes to `to`.
    pub fn request(
        &mut self,
        now: Millis,
        to: R,
        version: i16,
        client_id: &str,
        request: RequestKind,
    ) {
        let id = RequestId(self.next_id);
        self.next_id += 1;
        self.waiting.insert(id, to);
        self.holds.retain(|h| h.until > now);
        let api = group_api(&request);
        if let Some(response) = self.injected(now, api, version, &request) {
            if let Some(to) = self.waiting.remove(&id) {
                self.released.push_back(BrokerOutput::Answer { to, response });
            }
            self.taps(Some(client_id));
            return;
        }
        let hold = self.holds.iter().position(|h| h.client_id == client_id && Some(h.api) == api);
        if let (Some(i), Some(api)) = (hold, api) {
            let hold = self.holds.remove(i);
            let client_id = client_id.to_string();
            let due = now + hold.delay_ms.max(1);
            self.held.push(Held { due, read_at: now, id, version, client_id, api, request });
            return;
        }
        self.core.handle_request_from(now, id, version, client_id, request);
        self.taps(Some(client_id));
    }

    /// The injected error answer to this request, if one is armed for its API (and the API's
    /// error answer exists at this version).
    fn injected(
        &mut self,
        now: Millis,
        api: Option<GroupApi>,
        version: i16,
        request: &RequestKind,
    ) -> Option<ResponseKind> {
        self.injects.retain(|i| i.until > now && i.left > 0);
        let api = api?;
        let inject = self.injects.iter_mut().find(|i| i.api == api)?;
        let response = group_error_response(version, request, inject.error.code())?;
        inject.left -= 1;
        probes::INJECTED_ERROR_ANSWERED.hit_as(format_args!("{api:?}:{:?}", inject.error));
        Some(response)
    }

    /// Fires the coordinator's timers due at `now` (afterwards none is due at `now`: the core
    /// guarantees it), after handing the coordinator the held requests due.
    pub fn handle_timeout(&mut self, now: Millis) {
        while let Some(i) = self.held.iter().position(|h| h.due <= now) {
            let h = self.held.remove(i);
            let member_id = member_id_of(&h.request);
            self.released.push_back(BrokerOutput::Late {
                client_id: h.client_id.clone(),
                api: h.api,
                member_id,
                read_at: h.read_at,
            });
            self.core.handle_request_from(now, h.id, h.version, &h.client_id, h.request);
            self.taps(Some(&h.client_id));
        }
        self.core.handle_timeout(now);
        self.taps(None);
    }

    /// Applies a control instruction from the cluster (a coordinator move).
    pub fn apply_control(&mut self, now: Millis, control: BrokerControl) {
        self.core.apply_control(now, control);
        self.taps(None);
    }

    /// Applies an instruction from the world.
    pub fn apply_order(&mut self, now: Millis, order: BrokerOrder) {
        match order {
            BrokerOrder::Core(control) => self.apply_control(now, control),
            BrokerOrder::HoldNext { client_id, api, delay_ms, until } => {
                self.holds.push(Hold { client_id, api, delay_ms, until })
            }
            BrokerOrder::InjectNext { api, error, count, until } => {
                self.injects.push(Inject { api, error, left: count, until })
            }
            BrokerOrder::LogsAppended => {
                self.core.logs_appended(now);
                self.taps(None);
            }
        }
    }

    /// When [`Self::handle_timeout`] is next due.
    pub fn poll_timeout(&self) -> Option<Millis> {
        let held = self.held.iter().map(|h| h.due).min();
        match (self.core.poll_timeout(), held) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The next output. An answer to a request nobody waits for is dropped (with a warning).
    pub fn poll_output(&mut self) -> Option<BrokerOutput<R>> {
        if let Some(late) = self.released.pop_front() {
            return Some(late);
        }
        loop {
            let output = self.core.poll_output()?;
            return Some(match output {
                CoordinatorOutput::Event(event) => BrokerOutput::Event(event),
                CoordinatorOutput::Response { id, response } => match self.waiting.remove(&id) {
                    Some(to) => BrokerOutput::Answer { to, response },
                    None => {
                        tracing::warn!(?id, "broker answered a request that is not waiting");
                        continue;
                    }
                },
            });
        }
    }

    /// The probes hit since the last call, each with its actor.
    pub fn take_taps(&mut self) -> Vec<Tap> {
        std::mem::take(&mut self.taps)
    }
}

/// The member id a group request carries (empty ids are none).
fn member_id_of(request: &RequestKind) -> Option<String> {
    let id = match request {
        RequestKind::OffsetCommit(r) => &r.member_id,
        RequestKind::JoinGroup(r) => &r.member_id,
        RequestKind::SyncGroup(r) => &r.member_id,
        RequestKind::Heartbeat(r) => &r.member_id,
        RequestKind::ConsumerGroupHeartbeat(r) => &r.member_id,
        _ => return None,
    };
    Some(id.to_string()).filter(|id| !id.is_empty())
}

#[cfg(test)]
mod tests {
    use groupsim_coordinator::broker::{Broker, BrokerConfig};
    use groupsim_coordinator::log::{shared, PartitionLogs};
    use kafka_protocol::messages::{HeartbeatRequest, OffsetFetchRequest};

    use super::*;

    fn process() -> BrokerProcess<u32> {
        BrokerProcess::new(Broker::new(
            BrokerConfig::single("b", 9092),
            shared(PartitionLogs::new()),
        ))
    }

    fn drain(p: &mut BrokerProcess<u32>) -> Vec<String> {
        std::iter::from_fn(|| p.poll_output())
            .map(|o| match o {
                BrokerOutput::Answer { to, .. } => format!("answer {to}"),
                BrokerOutput::Event(_) => "event".into(),
                BrokerOutput::Late { client_id, api, read_at, .. } => {
                    format!("late {client_id} {api:?} read {read_at}")
                }
            })
            .filter(|s| s != "event")
            .collect()
    }

    fn heartbeat() -> RequestKind {
        RequestKind::Heartbeat(HeartbeatRequest::default())
    }

    /// The held request reaches the coordinator `delay_ms` after it was read, after a request
    /// the same client sent later; the hold is used up; other clients and APIs pass.
    #[test]
    fn a_held_request_is_processed_late_after_newer_ones_and_once() {
        let mut p = process();
        let hold = |until| BrokerOrder::HoldNext {
            client_id: "m1".into(),
            api: GroupApi::Heartbeat,
            delay_ms: 500,
            until,
        };
        p.apply_order(0, hold(1_000));
        p.request(10, 1, 4, "m2", heartbeat());
        p.request(10, 2, 4, "m1", RequestKind::OffsetFetch(OffsetFetchRequest::default()));
        assert_eq!(drain(&mut p), ["answer 1", "answer 2"], "other clients and APIs pass");
        p.request(20, 3, 4, "m1", heartbeat());
        assert_eq!(drain(&mut p), Vec::<String>::new(), "held");
        assert_eq!(p.poll_timeout(), Some(520));
        p.request(30, 4, 4, "m1", heartbeat());
        assert_eq!(drain(&mut p), ["answer 4"], "the newer request overtakes it; the hold is used");
        p.handle_timeout(520);
        assert_eq!(drain(&mut p), ["late m1 Heartbeat read 20", "answer 3"]);
        // A hold not used before `until` lapses.
        p.apply_order(600, hold(700));
        p.request(700, 5, 4, "m1", heartbeat());
        assert_eq!(drain(&mut p), ["answer 5"]);
    }

    /// An injected error answers the next requests of its API from any client without reaching
    /// the coordinator, as many as armed and only before `until`; other APIs pass.
    #[test]
    fn an_injected_error_answers_its_api_until_used_up_or_lapsed() {
        use kafka_protocol::messages::ResponseKind;
        let mut p = process();
        p.apply_order(
            0,
            BrokerOrder::InjectNext {
                api: GroupApi::Heartbeat,
                error: InjectedError::NotCoordinator,
                count: 2,
                until: 1_000,
            },
        );
        let answers = |p: &mut BrokerProcess<u32>| -> Vec<(u32, i16)> {
            std::iter::from_fn(|| p.poll_output())
                .filter_map(|o| match o {
                    BrokerOutput::Answer { to, response: ResponseKind::Heartbeat(r) } => {
                        Some((to, r.error_code))
                    }
                    BrokerOutput::Answer { to, .. } => Some((to, -1)),
                    _ => None,
                })
                .collect()
        };
        p.request(10, 1, 4, "m1", RequestKind::OffsetFetch(OffsetFetchRequest::default()));
        assert_eq!(answers(&mut p), [(1, -1)], "another API passes");
        p.request(20, 2, 4, "m1", heartbeat());
        p.request(30, 3, 4, "m2", heartbeat());
        assert_eq!(answers(&mut p), [(2, 16), (3, 16)], "NOT_COORDINATOR, for any client");
        p.request(40, 4, 4, "m1", heartbeat());
        let normal = answers(&mut p);
        assert!(normal.len() == 1 && normal[0].1 != 16, "used up: {normal:?}");
        p.apply_order(
            50,
            BrokerOrder::InjectNext {
                api: GroupApi::Heartbeat,
                error: InjectedError::NotCoordinator,
                count: 1,
                until: 60,
            },
        );
        p.request(60, 5, 4, "m1", heartbeat());
        let lapsed = answers(&mut p);
        assert!(lapsed.len() == 1 && lapsed[0].1 != 16, "lapsed at until: {lapsed:?}");
    }
}
