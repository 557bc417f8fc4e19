//! The event world's network: hosts joined by links, and TCP connections between a member on a
//! client host and a broker, each a pair of FIFO lanes of frames.
//!
//! It re-models what turmoil gives the faults, explicitly:
//! - **Latency** is drawn per frame from the seed's network stream, as turmoil draws it: the
//!   link's minimum plus an Exp(5)-distributed share of its range, capped at its maximum (a
//!   latency spike raises a link's maximum). A frame never overtakes the one before it on the
//!   same lane (TCP delivers in order; turmoil's sockets reorder by sequence number).
//! - **Connections between two hosts share the path**: a frame lands at most the link's normal
//!   jitter (its usual latency range) before the frame sent before it in the same direction on
//!   any connection of that host pair. A latency spike is queueing on the path, so it delays
//!   every connection's frames alike; a later connection's frame cannot overtake an earlier
//!   one's by the spike's second.
//! - **Lost frames are retransmitted** on a lossy link (a frame-loss fault): each loss costs
//!   TCP's retransmission timeout, doubling per repeated loss, and holds back the frames behind
//!   it on the same connection (TCP delivers in order) but not other connections' frames.
//! - **A bounded window**, when the scenario sets one: a frame is not sent before the frame
//!   that many frames ahead of it on its lane has landed (TCP's window of unacknowledged
//!   segments), so a burst spreads out behind a slow frame.
//! - **A partition** drops every frame in flight on the cut links, and every frame sent while
//!   they are cut; a one-way partition does so in one direction only (a request may arrive
//!   and be processed while its answer is lost). A lane that lost a frame is dead for good: TCP's receiver waits for the
//!   missing segment forever (turmoil does not retransmit), so the client only learns of it by
//!   its request timeout. A lost connection attempt is refused at once (turmoil's SYN carries
//!   the channel its answer comes back on; losing it closes that channel).
//! - **Closing** a connection is a frame of its own (FIN, or RST when a host answers for a
//!   connection it does not have), sequenced behind the data, so what was sent before still
//!   arrives. A reset reaches even a lane that lost a frame (TCP accepts an RST in its window
//!   whatever is missing before it): a client writing, after a partition healed, on a
//!   connection whose close the partition lost learns of it at once, as from a real broker.
//!
//! Nothing is delivered between events: each frame queues one [`Event::Arrive`] at the instant
//! it lands.

use std::collections::{BTreeMap, VecDeque};

use bytes::Bytes;
use groupsim_wire::Millis;
use rand::RngExt;
use rand_chacha::ChaCha8Rng;

use super::queue::{ConnId, Dir, Event, EventQueue};
use crate::process::ConnKey;
use crate::rng::{self, Stream};
use crate::scenario::ScenarioSpec;
use crate::world::orders::{broker_host, client_host, RETRANSMIT_MIN_MS};
use groupsim_wire::conn::{HandedRequest, HandedResponse};

/// What travels on a lane.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Frame {
    /// A connection attempt (only toward the broker).
    Syn,
    /// One Kafka frame (its body, without the length prefix).
    Data(Bytes),
    /// A request handed over as a value in place of its frame (the member's side chooses:
    /// [`groupsim_wire::conn::handoff`]).
    Request(Box<HandedRequest>),
    /// An answer handed over as a value in place of its frame.
    Response(Box<HandedResponse>),
    /// The sender closed the connection (FIN), or its host crashed with it.
    Close,
    /// The sending host has no such connection (it closed it, or restarted since) and answers
    /// data on it with a reset (RST). A receiver accepts a reset whatever gap precedes it (TCP
    /// takes an RST whose sequence number is in its window), so a lane that lost a frame still
    /// delivers one, once its link works.
    Reset,
}

/// The λ of turmoil's latency distribution: a frame's share of a link's latency range.
const LATENCY_CURVE: f64 = 5.0;

#[derive(Debug, Default)]
struct Lane {
    /// Frames in flight, with the instant each lands, in sending order.
    flights: VecDeque<(Millis, Frame)>,
    /// When the last frame sent lands: no later frame lands before it.
    last_at: Millis,
    /// A frame was lost: nothing more is delivered (the receiver waits for the gap forever).
    dead: bool,
}

/// One TCP connection from a member to a broker.
#[derive(Debug)]
pub(super) struct Conn {
    /// The member (its index in the world) that opened it.
    pub(super) member: usize,
    /// The member's name for it.
    pub(super) key: ConnKey,
    /// The broker it goes to.
    pub(super) node: i32,
    client_host: usize,
    broker_host: usize,
    to_broker: Lane,
    to_client: Lane,
}

impl Conn {
    fn lane(&mut self, dir: Dir) -> &mut Lane {
        match dir {
            Dir::ToBroker => &mut self.to_broker,
            Dir::ToClient => &mut self.to_client,
        }
    }

    fn joins(&self, a: usize, b: usize) -> bool {
        (self.client_host, self.broker_host) == (a, b)
            || (self.client_host, self.broker_host) == (b, a)
    }
}

/// One direction of the path between two hosts.
#[derive(Clone, Copy, Debug)]
struct Link {
    cut: bool,
    max_ms: Millis,
    /// Frames lost (and retransmitted) per thousand.
    loss_per_mille: u32,
}

/// Hosts, links and connections (see the module docs).
#[derive(Debug)]
pub(super) struct Network {
    /// Host index by name: brokers `0..brokers`, then client hosts.
    index: BTreeMap<String, usize>,
    brokers: usize,
    hosts: usize,
    /// `hosts × hosts`, by direction (`from × hosts + to`).
    links: Vec<Link>,
    min_ms: Millis,
    /// How far a frame may land before one sent earlier on another connection of its path.
    jitter_ms: Millis,
    /// Per direction of each host pair (`from × hosts + to`): when the last frame sent lands.
    path_last_at: Vec<Millis>,
    rng: ChaCha8Rng,
    conns: Vec<Conn>,
    /// At most this many frames of one lane in flight (`None`: unbounded).
    window: Option<usize>,
}

impl Network {
    /// The hosts of `spec`, every link healthy with the scenario's latency range.
    pub(super) fn new(spec: &ScenarioSpec) -> Self {
        let brokers = spec.brokers.max(0) as usize;
        let names =
            (0..spec.brokers).map(broker_host).chain((0..spec.client_hosts).map(client_host));
        let index: BTreeMap<String, usize> = names.enumerate().map(|(i, n)| (n, i)).collect();
        let hosts = index.len();
        let link = Link { cut: false, max_ms: spec.latency_ms.1, loss_per_mille: 0 };
        Self {
            index,
            brokers,
            hosts,
            links: vec![link; hosts * hosts],
            min_ms: spec.latency_ms.0,
            jitter_ms: spec.latency_ms.1.saturating_sub(spec.latency_ms.0),
            path_last_at: vec![0; hosts * hosts],
            rng: rng::stream(spec.world_seed(), Stream::Network),
            conns: Vec::new(),
            window: spec.network.window_frames.map(|w| w.max(1) as usize),
        }
    }

    /// The connection `id`.
    pub(super) fn conn(&self, id: ConnId) -> &Conn {
        &self.conns[id]
    }

    /// Opens connection `key` from `member` on client host `client` to broker `node`: its
    /// connection attempt is the first frame toward the broker.
    pub(super) fn open(
        &mut self,
        queue: &mut EventQueue,
        now: Millis,
        (member, key): (usize, ConnKey),
        client: usize,
        node: i32,
    ) -> ConnId {
        let id = self.conns.len();
        self.conns.push(Conn {
            member,
            key,
            node,
            client_host: self.brokers + client,
            broker_host: node.max(0) as usize,
            to_broker: Lane::default(),
            to_client: Lane::default(),
        });
        self.send(queue, now, id, Dir::ToBroker, Frame::Syn);
        id
    }

    /// Sends `frame` on one direction of `conn`: it lands after a drawn latency, never before
    /// the frame sent before it, or is lost when the link is cut (and the lane with it).
    pub(super) fn send(
        &mut self,
        queue: &mut EventQueue,
        now: Millis,
        conn: ConnId,
        dir: Dir,
        frame: Frame,
    ) {
        let (a, b) = (self.conns[conn].client_host, self.conns[conn].broker_host);
        let path = match dir {
            Dir::ToBroker => a * self.hosts + b,
            Dir::ToClient => b * self.hosts + a,
        };
        let link = self.links[path];
        let lane_dead = self.conns[conn].lane(dir).dead;
        if lane_dead && frame != Frame::Reset {
            return;
        }
        if link.cut {
            if !self.links[reverse(path, self.hosts)].cut {
                crate::probes::NET_ONE_WAY_LOST.hit();
            }
            self.conns[conn].lane(dir).dead = true;
            if frame == Frame::Syn {
                queue.push(now, Event::Refused { conn });
            }
            return;
        }
        let delay = self.draw_latency(link.max_ms);
        // Retransmissions delay this connection only: the path's order is the first attempt's.
        let resent = match link.loss_per_mille {
            0 => 0,
            p => self.draw_retransmissions(p),
        };
        let behind = self.path_last_at[path].saturating_sub(self.jitter_ms);
        let window = self.window;
        let lane = self.conns[conn].lane(dir);
        // The window: not sent before the frame `window` ahead has landed.
        let sent = match window {
            Some(w) if lane.flights.len() >= w => now.max(lane.flights[lane.flights.len() - w].0),
            _ => now,
        };
        if sent > now {
            crate::probes::NET_WINDOW_HELD.hit();
        }
        if resent > 0 {
            crate::probes::NET_RETRANSMITTED.hit();
        }
        let first_try = (sent + delay).max(behind);
        let at = (first_try + resent).max(lane.last_at);
        lane.last_at = at;
        self.path_last_at[path] = self.path_last_at[path].max(first_try.max(at - resent));
        lane.flights.push_back((at, frame));
        queue.push(at, Event::Arrive { conn, dir });
    }

    /// The frame at the front of one direction of `conn`, if it has landed by `now`.
    pub(super) fn take_landed(&mut self, conn: ConnId, dir: Dir, now: Millis) -> Option<Frame> {
        let lane = self.conns[conn].lane(dir);
        match lane.flights.front() {
            Some((at, _)) if *at <= now => lane.flights.pop_front().map(|(_, f)| f),
            _ => None,
        }
    }

    /// turmoil's draw: the minimum plus an Exp(5) share of the range, capped at `max_ms`.
    fn draw_latency(&mut self, max_ms: Millis) -> Millis {
        let min = self.min_ms.min(max_ms);
        let u: f64 = self.rng.random();
        let share = -(1.0 - u).ln() / LATENCY_CURVE;
        let delay = min + ((max_ms - min) as f64 * share) as Millis;
        delay.min(max_ms)
    }

    /// How much later a frame lands for its lost transmissions on a link losing `per_mille`:
    /// each loss costs the retransmission timeout, doubled after every loss (at most six).
    fn draw_retransmissions(&mut self, per_mille: u32) -> Millis {
        let (mut extra, mut rto) = (0, RETRANSMIT_MIN_MS);
        for _ in 0..6 {
            if self.rng.random_range(0..1_000u32) >= per_mille {
                break;
            }
            extra += rto;
            rto *= 2;
        }
        extra
    }

    fn pair(&self, a: &str, b: &str) -> Option<(usize, usize)> {
        let (&a, &b) = (self.index.get(a)?, self.index.get(b)?);
        Some((a, b))
    }

    fn set_link(&mut self, a: usize, b: usize, set: impl Fn(&mut Link)) {
        set(&mut self.links[a * self.hosts + b]);
        set(&mut self.links[b * self.hosts + a]);
    }
}

impl Network {
    /// Cuts the link between hosts `a` and `b` (names as in [`crate::world::orders`]): every frame in
    /// flight on it is lost, its lane dead, and a lost connection attempt refused now.
    pub(super) fn partition(&mut self, queue: &mut EventQueue, now: Millis, a: &str, b: &str) {
        let Some((a, b)) = self.pair(a, b) else { return };
        self.set_link(a, b, |l| l.cut = true);
        for (id, conn) in self.conns.iter_mut().enumerate().filter(|(_, c)| c.joins(a, b)) {
            for lane in [&mut conn.to_broker, &mut conn.to_client] {
                lose_in_flight(queue, now, id, lane);
            }
        }
    }

    /// Cuts the link from host `from` to host `to` only: what is in flight that way is lost and
    /// its lanes dead; the other direction delivers as before.
    pub(super) fn partition_one_way(
        &mut self,
        queue: &mut EventQueue,
        now: Millis,
        from: &str,
        to: &str,
    ) {
        let Some((from, to)) = self.pair(from, to) else { return };
        self.links[from * self.hosts + to].cut = true;
        for (id, conn) in self.conns.iter_mut().enumerate() {
            let lane = match (conn.client_host, conn.broker_host) {
                (c, b) if (c, b) == (from, to) => &mut conn.to_broker,
                (c, b) if (b, c) == (from, to) => &mut conn.to_client,
                _ => continue,
            };
            if !lane.flights.is_empty() {
                crate::probes::NET_ONE_WAY_LOST.hit();
            }
            lose_in_flight(queue, now, id, lane);
        }
    }

    /// Restores the link between hosts `a` and `b` (dead lanes stay dead).
    pub(super) fn repair(&mut self, a: &str, b: &str) {
        if let Some((a, b)) = self.pair(a, b) {
            self.set_link(a, b, |l| l.cut = false);
        }
    }

    /// Restores the link from host `from` to host `to` (dead lanes stay dead).
    pub(super) fn repair_one_way(&mut self, from: &str, to: &str) {
        if let Some((from, to)) = self.pair(from, to) {
            self.links[from * self.hosts + to].cut = false;
        }
    }

    /// Sets the share of frames lost (and retransmitted) between hosts `a` and `b`.
    pub(super) fn set_loss(&mut self, a: &str, b: &str, per_mille: u32) {
        if let Some((a, b)) = self.pair(a, b) {
            self.set_link(a, b, |l| l.loss_per_mille = per_mille.min(1_000));
        }
    }

    /// Sets the largest latency of a frame between hosts `a` and `b`.
    pub(super) fn set_max_latency(&mut self, a: &str, b: &str, max_ms: Millis) {
        if let Some((a, b)) = self.pair(a, b) {
            self.set_link(a, b, |l| l.max_ms = max_ms);
        }
    }
}

/// The index of the opposite direction of link `path` among `hosts` hosts.
fn reverse(path: usize, hosts: usize) -> usize {
    (path % hosts) * hosts + path / hosts
}

/// A lane's frames in flight are lost and the lane dead; a lost connection attempt is refused now.
fn lose_in_flight(queue: &mut EventQueue, now: Millis, id: ConnId, lane: &mut Lane) {
    if lane.flights.iter().any(|(_, f)| *f == Frame::Syn) {
        queue.push(now, Event::Refused { conn: id });
    }
    if !lane.flights.is_empty() {
        lane.flights.clear();
        lane.dead = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn net() -> (Network, EventQueue) {
        let spec = crate::scenarios::find("steady_state").expect("in catalogue").build(1);
        (Network::new(&spec), EventQueue::default())
    }

    fn landed(net: &mut Network, q: &mut EventQueue) -> Vec<(Millis, ConnId, Frame)> {
        let mut out = Vec::new();
        while let Some((at, Event::Arrive { conn, dir })) = q.pop() {
            if let Some(f) = net.take_landed(conn, dir, at) {
                out.push((at, conn, f));
            }
        }
        out
    }

    #[test]
    fn frames_on_one_connection_never_overtake_each_other() {
        let (mut net, mut q) = net();
        let c = net.open(&mut q, 0, (0, 0), 0, 0);
        for i in 0..200u8 {
            net.send(&mut q, 0, c, Dir::ToBroker, Frame::Data(Bytes::from(vec![i])));
        }
        let got = landed(&mut net, &mut q);
        assert_eq!(got.len(), 201);
        assert!(got.windows(2).all(|w| w[0].0 <= w[1].0));
        let bytes: Vec<u8> = got
            .iter()
            .filter_map(|(_, _, f)| match f {
                Frame::Data(b) => Some(b[0]),
                _ => None,
            })
            .collect();
        assert_eq!(bytes, (0..200u8).collect::<Vec<_>>());
        let (min, max) = (got.iter().map(|g| g.0).min(), got.iter().map(|g| g.0).max());
        assert!(min >= Some(1) && max <= Some(15), "{min:?}..{max:?}");
    }

    #[test]
    fn a_partition_loses_what_is_in_flight_and_kills_the_lane_until_the_end() {
        let (mut net, mut q) = net();
        let c = net.open(&mut q, 0, (0, 0), 0, 0);
        net.partition(&mut q, 0, "client-0", "broker-0");
        assert_eq!(q.pop(), Some((0, Event::Refused { conn: c })), "the lost attempt is refused");
        assert!(landed(&mut net, &mut q).is_empty(), "the attempt was lost");
        net.repair("client-0", "broker-0");
        net.send(&mut q, 10, c, Dir::ToBroker, Frame::Close);
        net.send(&mut q, 10, c, Dir::ToClient, Frame::Close);
        let got = landed(&mut net, &mut q);
        assert_eq!(got.len(), 1, "only the untouched lane delivers: {got:?}");
        assert_eq!(got[0].2, Frame::Close);
        let other = net.open(&mut q, 20, (1, 0), 0, 0);
        let _ = landed(&mut net, &mut q);
        net.partition(&mut q, 20, "broker-0", "client-0");
        net.send(&mut q, 20, other, Dir::ToClient, Frame::Close);
        net.send(&mut q, 30, other, Dir::ToBroker, Frame::Close);
        assert!(landed(&mut net, &mut q).is_empty(), "sent while cut: lost");
    }

    /// A close lost to a partition leaves the client's lane dead, but the reset its next write
    /// after the repair draws still reaches it; while the link is cut the reset is lost too.
    #[test]
    fn a_reset_reaches_a_lane_that_lost_a_frame_once_the_link_works() {
        let (mut net, mut q) = net();
        let c = net.open(&mut q, 0, (0, 0), 0, 0);
        let _ = landed(&mut net, &mut q);
        net.partition(&mut q, 10, "client-0", "broker-0");
        net.send(&mut q, 10, c, Dir::ToClient, Frame::Close);
        net.send(&mut q, 20, c, Dir::ToClient, Frame::Reset);
        assert!(landed(&mut net, &mut q).is_empty(), "both lost while cut");
        net.repair("client-0", "broker-0");
        net.send(&mut q, 30, c, Dir::ToClient, Frame::Data(Bytes::from_static(b"x")));
        assert!(landed(&mut net, &mut q).is_empty(), "the dead lane delivers no data");
        net.send(&mut q, 40, c, Dir::ToClient, Frame::Reset);
        let got = landed(&mut net, &mut q);
        assert_eq!(got.iter().map(|g| &g.2).collect::<Vec<_>>(), [&Frame::Reset], "{got:?}");
    }

    #[test]
    fn a_later_connection_never_overtakes_an_earlier_one_by_more_than_the_jitter() {
        let (mut net, mut q) = net();
        net.set_max_latency("client-0", "broker-0", 2_000);
        let (first, second) =
            (net.open(&mut q, 0, (0, 0), 0, 0), net.open(&mut q, 0, (0, 1), 0, 0));
        let mut sent = Vec::new();
        for t in 0..200 {
            let conn = if t % 2 == 0 { first } else { second };
            net.send(&mut q, t, conn, Dir::ToBroker, Frame::Data(Bytes::from(vec![t as u8])));
            sent.push(net.conns[conn].to_broker.last_at);
        }
        let jitter = net.jitter_ms;
        for (i, at) in sent.iter().enumerate() {
            let Some(&earliest_later) = sent[i + 1..].iter().min() else { continue };
            assert!(earliest_later + jitter >= *at, "frame {i} at {at} overtaken: {sent:?}");
        }
        assert!(sent.iter().any(|&at| at > 100), "the spike slowed the path");
    }

    fn data(net: &mut Network, q: &mut EventQueue, now: Millis, c: ConnId, dir: Dir, b: u8) {
        net.send(q, now, c, dir, Frame::Data(Bytes::from(vec![b])));
    }

    #[test]
    fn a_one_way_partition_loses_one_direction_and_delivers_the_other() {
        let (mut net, mut q) = net();
        let c = net.open(&mut q, 0, (0, 0), 0, 0);
        let _ = landed(&mut net, &mut q);
        net.partition_one_way(&mut q, 10, "client-0", "broker-0");
        data(&mut net, &mut q, 10, c, Dir::ToBroker, 1);
        data(&mut net, &mut q, 10, c, Dir::ToClient, 2);
        let got = landed(&mut net, &mut q);
        assert_eq!(got.len(), 1, "only the answer direction delivers: {got:?}");
        assert_eq!(got[0].2, Frame::Data(Bytes::from(vec![2])));
        net.repair_one_way("client-0", "broker-0");
        data(&mut net, &mut q, 20, c, Dir::ToBroker, 3);
        assert!(landed(&mut net, &mut q).is_empty(), "the lane that lost a frame stays dead");
        let fresh = net.open(&mut q, 30, (0, 1), 0, 0);
        data(&mut net, &mut q, 30, fresh, Dir::ToBroker, 4);
        assert_eq!(landed(&mut net, &mut q).len(), 2, "a new connection after the repair works");
    }

    #[test]
    fn a_lost_frame_is_retransmitted_late_and_holds_back_only_its_own_connection() {
        let (mut net, mut q) = net();
        let (lossy, other) = (net.open(&mut q, 0, (0, 0), 0, 0), net.open(&mut q, 0, (1, 0), 1, 0));
        let _ = landed(&mut net, &mut q);
        net.set_loss("client-0", "broker-0", 1_000);
        data(&mut net, &mut q, 100, lossy, Dir::ToBroker, 1);
        data(&mut net, &mut q, 100, lossy, Dir::ToBroker, 2);
        data(&mut net, &mut q, 100, other, Dir::ToBroker, 3);
        let got = landed(&mut net, &mut q);
        assert_eq!(got.len(), 3, "nothing is lost for good: {got:?}");
        // Every transmission lost: six retransmissions, 200 ms doubling.
        let late = 100 + 200 * (1 + 2 + 4 + 8 + 16 + 32);
        let at = |b: u8| got.iter().find(|g| g.2 == Frame::Data(Bytes::from(vec![b]))).unwrap().0;
        assert!(at(1) >= late && at(2) >= at(1), "{got:?}");
        assert!(at(3) <= 115, "another host's connection is not held back: {got:?}");
        net.set_loss("client-0", "broker-0", 0);
        data(&mut net, &mut q, late + 100, lossy, Dir::ToBroker, 4);
        assert!(landed(&mut net, &mut q)[0].0 <= late + 115, "no loss, no delay");
    }

    #[test]
    fn a_bounded_window_holds_a_frame_until_the_one_ahead_has_landed() {
        let mut spec = crate::scenarios::find("steady_state").expect("in catalogue").build(1);
        spec.network.window_frames = Some(1);
        let (mut net, mut q) = (Network::new(&spec), EventQueue::default());
        net.set_max_latency("client-0", "broker-0", 2_000);
        let c = net.open(&mut q, 0, (0, 0), 0, 0);
        let _ = landed(&mut net, &mut q);
        for b in 0..20 {
            data(&mut net, &mut q, 10, c, Dir::ToBroker, b);
        }
        let got = landed(&mut net, &mut q);
        assert_eq!(got.len(), 20);
        assert!(got.windows(2).all(|w| w[1].0 > w[0].0), "each after the one ahead: {got:?}");
    }

    #[test]
    fn a_latency_spike_widens_the_draws_of_its_links_only() {
        let (mut net, mut q) = net();
        net.set_max_latency("client-0", "broker-0", 2_000);
        let slow = net.open(&mut q, 0, (0, 0), 0, 0);
        let far: Vec<Millis> = (0..300)
            .map(|_| {
                net.send(&mut q, 0, slow, Dir::ToClient, Frame::Close);
                net.conns[slow].to_client.last_at
            })
            .collect();
        assert!(far.iter().any(|&at| at > 15) && far.iter().all(|&at| at <= 2_000));
    }
}
