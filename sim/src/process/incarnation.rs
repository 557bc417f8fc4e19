//! One incarnation of a member process: the sans-IO [`GroupMember`] and its connections, one
//! per [`Target`]. It carries out the core's outputs (records its events, writes its requests on
//! the connection to their target, asking the host to open it first, closes connections) and
//! feeds the core answers, failures and timeouts with the current instant.
//!
//! It also records the history's wire stream for its member: each request it writes, with the
//! answer it reads or the fact that none will come (the connection closed, or the incarnation
//! ended), in the member's own order of writing and reading.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use groupsim_history::wire::{Entry, Exchange, Request};
use groupsim_member::compat::fit_request_to_version;
use groupsim_member::{GroupMember, MemberOutput, RequestFailure, Target};
use groupsim_wire::codec::request_api_key;
use groupsim_wire::conn::handoff::Handover;
use groupsim_wire::conn::{ClientConn, HandedRequest, Received};
use groupsim_wire::probe::{self, Tap};
use groupsim_wire::{topic_id, Millis, RequestId};
use kafka_protocol::messages::{ApiKey, RequestKind, ResponseKind};

use super::actions::{Action, ConnKey, Delivery};
use crate::exchange::{self, TopicNames};
use crate::record::IntoHistory;
use groupsim_history::EventKind;

/// What the wire stream keeps of a request in flight: its group, when it was written, and what
/// the rules read of it (`None`: an API they do not read).
#[derive(Debug)]
struct Written {
    group: String,
    node: i32,
    conn: ConnKey,
    sent_ms: Millis,
    request: Option<Request>,
}

/// One request in flight on a link.
#[derive(Debug)]
struct InFlight {
    correlation_id: i32,
    id: RequestId,
    deadline: Millis,
    written: Written,
}

/// The member's side of one connection: the wire connection once its handshake is done, the
/// requests waiting for it, and the requests in flight with their deadlines.
#[derive(Debug)]
struct Link {
    key: ConnKey,
    client: Option<Box<ClientConn>>,
    /// Requests waiting for the connection to open.
    queued: Vec<(RequestId, RequestKind, Millis)>,
    /// Requests written, oldest first.
    in_flight: VecDeque<InFlight>,
}

impl Link {
    fn earliest_deadline(&self) -> Option<Millis> {
        let q = self.queued.iter().map(|r| r.2);
        q.chain(self.in_flight.iter().map(|r| r.deadline)).min()
    }

    /// Every request queued or in flight, with its deadline (queued first).
    fn request_ids(&self) -> impl Iterator<Item = (RequestId, Millis)> + '_ {
        let in_flight = self.in_flight.iter().map(|r| (r.id, r.deadline));
        self.queued.iter().map(|r| (r.0, r.2)).chain(in_flight)
    }
}

/// A running member core and its connections (see the module docs).
#[derive(Debug)]
pub struct Incarnation {
    member: GroupMember,
    links: BTreeMap<Target, Link>,
    /// The member's name: the actor of every probe its core hits.
    name: Arc<str>,
    /// The versions its client pins below what the broker offers.
    pinned: &'static [(ApiKey, i16)],
    /// Its name in the wire stream: the member's name and which start of it this is (`m0.1`).
    actor: String,
    /// Topic ids to names, for the wire stream: the subscribed topics, then every topic a
    /// Metadata answer named.
    topics: TopicNames,
}

/// Where an incarnation's actions go, and the process's connection-key counter.
pub(crate) struct Out<'a> {
    pub(crate) actions: &'a mut VecDeque<Action>,
    pub(crate) next_key: &'a mut ConnKey,
    /// Requests go to the host as values where they can ([`Action::Hand`]).
    pub(crate) hand_over: bool,
}

impl Out<'_> {
    /// The probes hit since the last call, as this member's.
    fn taps(&mut self, name: &Arc<str>) {
        for probe in probe::take_taps() {
            self.actions.push_back(Action::Tap(Tap { probe, actor: Some(name.clone()) }));
        }
    }
}

impl Incarnation {
    /// A member core that has not started yet: the `incarnation`-th start (from 0) of member
    /// `name`, subscribed to `topics`.
    pub fn new(
        member: GroupMember,
        name: &str,
        incarnation: u64,
        topics: &[String],
        pinned: &'static [(ApiKey, i16)],
    ) -> Self {
        Self {
            member,
            links: BTreeMap::new(),
            name: Arc::from(name),
            pinned,
            actor: format!("{name}.{incarnation}"),
            topics: topics.iter().map(|t| (topic_id(t), t.clone())).collect(),
        }
    }

    /// Hands the core one input (`f`), then collects the probes it hit.
    pub(crate) fn input<T>(
        &mut self,
        out: &mut Out<'_>,
        f: impl FnOnce(&mut GroupMember) -> T,
    ) -> T {
        let r = f(&mut self.member);
        out.taps(&self.name);
        r
    }

    /// Whether the core has finished (left the group, or stopped for good).
    pub fn is_finished(&self) -> bool {
        self.member.is_finished()
    }

    /// The earliest instant something is due: the core's timer or a request's deadline.
    pub fn deadline(&self) -> Option<Millis> {
        let requests = self.links.values().filter_map(Link::earliest_deadline).min();
        self.member.poll_timeout().into_iter().chain(requests).min()
    }

    /// Carries out every queued output of the core (which may queue more).
    pub(crate) fn drain(&mut self, out: &mut Out<'_>, now: Millis) {
        while let Some(output) = self.member.poll_output() {
            out.taps(&self.name);
            match output {
                MemberOutput::Event(event) => {
                    let (member, event) = (String::from(&*self.name), event.into_history());
                    out.actions.push_back(Action::Record(EventKind::Member { member, event }))
                }
                MemberOutput::Close(target) => self.close(out, now, target, None),
                MemberOutput::Send { id, target, request, timeout_ms } => {
                    self.send(out, now, target, id, request, now + timeout_ms);
                }
            }
        }
    }

    fn send(
        &mut self,
        out: &mut Out<'_>,
        now: Millis,
        target: Target,
        id: RequestId,
        request: RequestKind,
        deadline: Millis,
    ) {
        let link = self.links.entry(target).or_insert_with(|| {
            let key = *out.next_key;
            *out.next_key += 1;
            let node = match target {
                Target::Broker(n) | Target::Coordinator(n) => n,
            };
            out.actions.push_back(Action::Connect { conn: key, node });
            Link { key, client: None, queued: Vec::new(), in_flight: VecDeque::new() }
        });
        tracing::trace!(at_ms = now, member = %self.name, ?target, id = id.0, "request");
        let Some(client) = link.client.as_mut() else {
            link.queued.push((id, request, deadline));
            return;
        };
        match write(client, request, self.pinned, now, &self.topics, out.hand_over) {
            Ok((correlation_id, sent, mut written)) => {
                written.node = match target {
                    Target::Broker(n) | Target::Coordinator(n) => n,
                };
                written.conn = link.key;
                link.in_flight.push_back(InFlight { correlation_id, id, deadline, written });
                let conn = link.key;
                out.actions.push_back(match sent {
                    Sent::Frame(frame) => Action::Transmit { conn, frame },
                    Sent::Value(request) => Action::Hand { conn, request },
                });
            }
            Err(why) => {
                self.input(out, |m| m.handle_failure(now, id, RequestFailure::Unsupported(why)))
            }
        }
    }

    /// Drops the connection to `target` (the broker sees it closed); its requests fail
    /// (`timed_out` ones with Timeout, the others Disconnected).
    pub(crate) fn close(
        &mut self,
        out: &mut Out<'_>,
        now: Millis,
        target: Target,
        timed_out: Option<Millis>,
    ) {
        let Some(link) = self.links.remove(&target) else { return };
        tracing::debug!(at_ms = now, member = %self.name, ?target, ?timed_out, "closing connection");
        out.actions.push_back(Action::Close { conn: link.key });
        self.never_answered(out, link.in_flight.iter().map(|r| &r.written));
        for (id, deadline) in link.request_ids() {
            let failure = match timed_out {
                Some(t) if deadline <= t => RequestFailure::Timeout,
                _ => RequestFailure::Disconnected,
            };
            self.input(out, |m| m.handle_failure(now, id, failure));
        }
    }

    /// Drops every connection.
    pub(crate) fn close_all(&mut self, out: &mut Out<'_>, now: Millis) {
        let targets: Vec<Target> = self.links.keys().copied().collect();
        for t in targets {
            self.close(out, now, t, None);
        }
    }

    /// Drops every connection without telling the core: the process is gone.
    pub(crate) fn abort(self, out: &mut Out<'_>) {
        for link in self.links.values() {
            out.actions.push_back(Action::Close { conn: link.key });
            self.never_answered(out, link.in_flight.iter().map(|r| &r.written));
        }
    }

    /// Records in the wire stream that these requests' answers will never be read.
    fn never_answered<'a>(&self, out: &mut Out<'_>, written: impl Iterator<Item = &'a Written>) {
        for w in written {
            let Some(call) = w.request.clone() else { continue };
            let (actor, sent_ms, group) = (self.actor.clone(), w.sent_ms, w.group.clone());
            out.actions.push_back(Action::Wire(Entry::Unanswered { actor, sent_ms, call, group }));
        }
    }

    /// Records in the wire stream that `written`'s answer, `response`, was read at `now`; learns
    /// the topic names a Metadata answer gives.
    fn answered(
        &mut self,
        out: &mut Out<'_>,
        now: Millis,
        written: Written,
        response: &ResponseKind,
    ) {
        if let ResponseKind::Metadata(m) = response {
            for t in &m.topics {
                if let Some(name) = &t.name {
                    self.topics.insert(t.topic_id, name.to_string());
                }
            }
        }
        let Some(request) = written.request else { return };
        let entry = match exchange::answer(response, &self.topics) {
            Some(answer) => Entry::Exchange(Exchange {
                actor: self.actor.clone(),
                sent_ms: written.sent_ms,
                answered_ms: now,
                request,
                answer,
                group: written.group,
                node: Some(written.node),
                conn: Some(written.conn),
            }),
            None => {
                let (actor, sent_ms, group) = (self.actor.clone(), written.sent_ms, written.group);
                Entry::Unanswered { actor, sent_ms, call: request, group }
            }
        };
        out.actions.push_back(Action::Wire(entry));
    }

    /// Drops the connections with a request past its deadline, in target order.
    pub(crate) fn expire_requests(&mut self, out: &mut Out<'_>, now: Millis) {
        let overdue = |l: &Link| l.earliest_deadline().is_some_and(|d| d <= now);
        while let Some(target) = self.links.iter().find(|(_, l)| overdue(l)).map(|(t, _)| *t) {
            self.close(out, now, target, Some(now));
        }
    }

    /// Writing the last request sent on `conn` failed: the connection is dropped and its
    /// requests fail Disconnected, that one first.
    pub(crate) fn write_failed(&mut self, out: &mut Out<'_>, now: Millis, conn: ConnKey) {
        let Some(target) = self.target_of(conn) else { return };
        let mut link = self.links.remove(&target).expect("found above");
        out.actions.push_back(Action::Close { conn: link.key });
        self.never_answered(out, link.in_flight.iter().map(|r| &r.written));
        let failed = link.in_flight.pop_back().map(|r| (r.id, r.deadline));
        let all: Vec<(RequestId, Millis)> = failed.into_iter().chain(link.request_ids()).collect();
        for (id, _) in all {
            self.input(out, |m| m.handle_failure(now, id, RequestFailure::Disconnected));
        }
    }

    fn target_of(&self, conn: ConnKey) -> Option<Target> {
        self.links.iter().find(|(_, l)| l.key == conn).map(|(t, _)| *t)
    }

    /// Whether connection `conn` is one of this incarnation's.
    pub fn holds(&self, conn: ConnKey) -> bool {
        self.target_of(conn).is_some()
    }

    /// What the connection to `target` read (`None`: no connection yet): an answer to the
    /// oldest request in flight goes to the core; anything else drops the connection.
    fn answer_read(
        &mut self,
        out: &mut Out<'_>,
        now: Millis,
        target: Target,
        read: Option<Result<Received, groupsim_wire::WireError>>,
    ) {
        let answer = match read {
            Some(Ok(Received::Response { correlation_id, response })) => {
                Some((correlation_id, response))
            }
            Some(Ok(_)) | Some(Err(_)) | None => None,
        };
        let front = self.links.get(&target).and_then(|l| l.in_flight.front());
        match (answer, front) {
            (Some((got, response)), Some(r)) if got == r.correlation_id => {
                let link = self.links.get_mut(&target).expect("found above");
                let r = link.in_flight.pop_front().expect("the front, matched");
                self.answered(out, now, r.written, &response);
                self.input(out, |m| m.handle_response(now, r.id, *response));
            }
            _ => self.close(out, now, target, None),
        }
    }

    /// Takes what a connection delivered: the handshake's result (queued requests go out), an
    /// answer (to the core, if it answers the oldest request in flight; else the connection is
    /// dropped), or a failure (the connection is dropped).
    pub(crate) fn take(&mut self, out: &mut Out<'_>, now: Millis, delivery: Delivery) {
        let Some(target) = self.target_of(delivery.conn()) else {
            return; // a connection this incarnation dropped since
        };
        let link = self.links.get_mut(&target).expect("found above");
        match delivery {
            Delivery::Connected { client, .. } => {
                link.client = Some(client);
                for (id, request, deadline) in std::mem::take(&mut link.queued) {
                    self.send(out, now, target, id, request, deadline);
                }
            }
            Delivery::Frame { frame, .. } => {
                let read = link.client.as_mut().map(|c| c.on_frame(frame));
                self.answer_read(out, now, target, read);
            }
            Delivery::Handed { response, .. } => {
                let read = link.client.as_mut().map(|c| c.on_handed(*response));
                self.answer_read(out, now, target, read);
            }
            Delivery::Failed { reason, .. } => {
                tracing::debug!(at_ms = now, member = %self.name, ?target, %reason, "connection failed");
                self.close(out, now, target, None)
            }
        }
    }
}

/// How a request goes to the host: as its frame, or handed over as a value.
enum Sent {
    Frame(bytes::Bytes),
    Value(Box<HandedRequest>),
}

/// Encodes `request` at the version negotiated for its API, or the client's pinned one when
/// lower (reshaped for that version, as the member builds requests in its newest shape), with
/// what the wire stream keeps of it as written at `now`; with `hand_over`, a request the
/// handover takes goes as a value instead. Fails, saying why, when no version both sides speak
/// fits or the request does not encode at it.
fn write(
    client: &mut ClientConn,
    request: RequestKind,
    pinned: &[(ApiKey, i16)],
    now: Millis,
    topics: &TopicNames,
    hand_over: bool,
) -> Result<(i32, Sent, Written), String> {
    let key = request_api_key(&request);
    let version = client.versions().and_then(|v| key.and_then(|k| v.version_for(k)));
    let Some(mut version) = version else {
        return Err("the broker serves no version of this API".to_string());
    };
    if let Some(&(_, pin)) = pinned.iter().find(|(k, _)| Some(*k) == key) {
        version = version.min(pin);
    }
    let request = fit_request_to_version(request, version);
    let written = Written {
        group: exchange::group(&request),
        node: -1,
        conn: 0,
        sent_ms: now,
        request: exchange::request(&request, version, topics),
    };
    let request = match hand_over {
        true => match client.write_handed(request, version) {
            Handover::Value(handed) => {
                return Ok((handed.correlation_id, Sent::Value(Box::new(handed)), written));
            }
            Handover::Refused(e) => return Err(e.to_string()),
            Handover::Framed(request) => request,
        },
        false => request,
    };
    let (correlation_id, frame) = client.write(&request, version).map_err(|e| e.to_string())?;
    Ok((correlation_id, Sent::Frame(frame), written))
}
