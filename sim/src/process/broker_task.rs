//! The tokio loop around a [`BrokerProcess`]: it takes requests from the connections' channel
//! ([`BrokerCalls`]), control instructions from a channel of their own, and the broker's own
//! deadlines, in a deterministic order, and routes the answers back. The turmoil world's brokers
//! and `groupsim serve` both run it; the connections in front of it run
//! `groupsim_wire::serve_connection`.

use std::time::Duration;

use groupsim_coordinator::broker::Broker;
use groupsim_coordinator::CoordinatorEvent;
use groupsim_wire::probe::Tap;
use groupsim_wire::server::BrokerCalls;
use groupsim_wire::Millis;
use kafka_protocol::messages::ResponseKind;
use tokio::sync::{mpsc, oneshot};

use super::broker::{BrokerOrder, BrokerOutput, BrokerProcess};

/// What the loop reports as it goes: coordinator events stamped with the time they happened,
/// and probe hits.
pub trait BrokerReport {
    /// A coordinator event at `at`.
    fn event(&mut self, at: Millis, event: CoordinatorEvent);
    /// A probe hit (for event triggers); ignored by default.
    fn tap(&mut self, _tap: Tap) {}
    /// A held request reached the coordinator (see [`BrokerOutput::Late`]); ignored by
    /// default.
    fn late(&mut self, _at: Millis, _late: BrokerOutput<()>) {}
}

impl<F: FnMut(Millis, CoordinatorEvent)> BrokerReport for F {
    fn event(&mut self, at: Millis, event: CoordinatorEvent) {
        self(at, event)
    }
}

/// Runs the broker: feeds it calls and timer expiries in a deterministic order, routes answers
/// to the waiting connection (dropped silently if that connection went away) and events to
/// `report`. `clock` gives the current (simulated) time in ms; it must agree with
/// `tokio::time`, which the task sleeps on until the broker's next deadline. Returns when every
/// [`BrokerHandle`](groupsim_wire::server::BrokerHandle) is dropped.
pub async fn run_broker<C: Fn() -> Millis>(
    broker: Broker,
    calls: BrokerCalls,
    clock: C,
    report: impl BrokerReport,
) {
    let (_keep, controls) = mpsc::unbounded_channel();
    run_broker_controlled(broker, calls, controls, clock, report).await
}

/// [`run_broker`] that also applies [`BrokerOrder`]s (coordinator moves, armed late requests)
/// from `controls`, before any request waiting at the same instant. A closed control channel
/// is simply no longer read.
pub async fn run_broker_controlled<C: Fn() -> Millis>(
    broker: Broker,
    mut calls: BrokerCalls,
    mut controls: mpsc::UnboundedReceiver<BrokerOrder>,
    clock: C,
    mut report: impl BrokerReport,
) {
    let mut process: BrokerProcess<oneshot::Sender<ResponseKind>> = BrokerProcess::new(broker);
    let mut controls_open = true;
    loop {
        let now = clock();
        drain(&mut process, &mut report, now);
        let deadline = process.poll_timeout();
        if deadline.is_some_and(|d| d <= now) {
            process.handle_timeout(now);
            continue;
        }
        let sleep = deadline.map(|d| Duration::from_millis(d - now));
        tokio::select! {
            biased;
            control = controls.recv(), if controls_open => match control {
                Some(control) => process.apply_order(clock(), control),
                None => controls_open = false,
            },
            call = calls.recv() => {
                let Some(call) = call else { return };
                let client_id = call.client_id.as_deref().unwrap_or("");
                process.request(clock(), call.reply, call.api_version, client_id, call.request);
            }
            () = tokio::time::sleep(sleep.unwrap_or_default()), if sleep.is_some() => {
                process.handle_timeout(clock());
            }
        }
    }
}

fn drain(
    process: &mut BrokerProcess<oneshot::Sender<ResponseKind>>,
    report: &mut impl BrokerReport,
    now: Millis,
) {
    for tap in process.take_taps() {
        report.tap(tap);
    }
    while let Some(output) = process.poll_output() {
        match output {
            // The connection may have gone away; its answer is dropped.
            BrokerOutput::Answer { to, response } => drop(to.send(response)),
            BrokerOutput::Event(event) => report.event(now, event),
            BrokerOutput::Late { client_id, api, member_id, read_at } => {
                report.late(now, BrokerOutput::Late { client_id, api, member_id, read_at })
            }
        }
    }
}
