//! The task that owns a sans-IO [`Broker`]: it takes requests from the connections' channel
//! ([`BrokerCalls`]), coordinator moves from a control channel, and the broker's own deadlines,
//! in a deterministic order, and routes the answers back. Simulated brokers and `groupsim
//! serve` both run it; the connections in front of it are `groupsim_wire::serve_connection`.

use std::collections::BTreeMap;
use std::time::Duration;

use groupsim_coordinator::broker::{Broker, BrokerControl};
use groupsim_coordinator::{CoordinatorEvent, CoordinatorOutput};
use groupsim_wire::probe;
use groupsim_wire::server::BrokerCalls;
use groupsim_wire::{Millis, RequestId};
use kafka_protocol::messages::ResponseKind;
use tokio::sync::{mpsc, oneshot};

/// Runs the broker: owns it, assigns [`RequestId`]s, feeds it calls and timer expiries in a
/// deterministic order, routes answers to the waiting connection (dropped silently if that
/// connection went away) and events to `on_event` stamped with the time they happened.
///
/// `clock` gives the current (simulated) time in ms; it must agree with `tokio::time`, which the
/// task sleeps on until the broker's next deadline. Returns when every [`BrokerHandle`](groupsim_wire::server::BrokerHandle) is
/// dropped (no connection can reach the broker any more).
pub async fn run_broker<C, E>(broker: Broker, calls: BrokerCalls, clock: C, on_event: E)
where
    C: Fn() -> Millis,
    E: FnMut(Millis, CoordinatorEvent),
{
    let (_keep, controls) = mpsc::unbounded_channel();
    run_broker_controlled(broker, calls, controls, clock, on_event).await
}

/// [`run_broker`] that also applies [`BrokerControl`] instructions (coordinator moves) from
/// `controls`, before any request waiting at the same instant. A closed control channel is
/// simply no longer read.
pub async fn run_broker_controlled<C, E>(
    mut broker: Broker,
    mut calls: BrokerCalls,
    mut controls: mpsc::UnboundedReceiver<BrokerControl>,
    clock: C,
    mut on_event: E,
) where
    C: Fn() -> Millis,
    E: FnMut(Millis, CoordinatorEvent),
{
    let mut controls_open = true;
    let mut next_id: u64 = 0;
    let mut waiting: BTreeMap<RequestId, oneshot::Sender<ResponseKind>> = BTreeMap::new();
    // A deadline we already fired at this instant: if the broker still reports it, sleeping
    // 1 ms beats spinning forever on a timer that does not clear.
    let mut fired: Option<(Millis, Millis)> = None;
    loop {
        if probe::is_tapping() {
            probe::set_actor(None); // timers and controls are nobody's request
        }
        let now = clock();
        drain_outputs(&mut broker, &mut waiting, &mut on_event, now);
        let deadline = broker.poll_timeout();
        if let Some(d) = deadline {
            if d <= now && fired != Some((d, now)) {
                fired = Some((d, now));
                broker.handle_timeout(now);
                continue;
            }
        }
        let sleep_ms = deadline.map(|d| d.saturating_sub(now).max(1));
        tokio::select! {
            biased;
            control = controls.recv(), if controls_open => {
                match control {
                    Some(control) => {
                        if probe::is_tapping() {
                            probe::set_actor(None);
                        }
                        broker.apply_control(clock(), control)
                    }
                    None => controls_open = false,
                }
            }
            call = calls.recv() => {
                let Some(call) = call else { return };
                let id = RequestId(next_id);
                next_id += 1;
                waiting.insert(id, call.reply);
                let client_id = call.client_id.as_deref().unwrap_or("");
                // Probes the request hits are the requesting client's (its name is its id).
                if probe::is_tapping() {
                    probe::set_actor(Some(client_id.into()));
                }
                broker.handle_request_from(clock(), id, call.api_version, client_id, call.request);
            }
            () = tokio::time::sleep(Duration::from_millis(sleep_ms.unwrap_or(0))), if sleep_ms.is_some() => {
                if probe::is_tapping() {
                    probe::set_actor(None);
                }
                broker.handle_timeout(clock());
            }
        }
    }
}

fn drain_outputs<E: FnMut(Millis, CoordinatorEvent)>(
    broker: &mut Broker,
    waiting: &mut BTreeMap<RequestId, oneshot::Sender<ResponseKind>>,
    on_event: &mut E,
    now: Millis,
) {
    while let Some(output) = broker.poll_output() {
        match output {
            CoordinatorOutput::Response { id, response } => match waiting.remove(&id) {
                // The connection may have gone away; its answer is dropped.
                Some(reply) => drop(reply.send(response)),
                None => tracing::warn!(?id, "broker answered a request that is not waiting"),
            },
            CoordinatorOutput::Event(event) => on_event(now, event),
        }
    }
}
