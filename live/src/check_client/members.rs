//! The member processes of one run: each slot is one group member (`m0`, `m1`, …) whose
//! incarnations are adapter processes with client ids `m0.0`, `m0.1`, … and processed-record logs
//! of the same names. The slots apply the client faults and record them, and the members'
//! starts and stops, in the cluster's history.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use groupsim_history::WorldEvent;
use groupsim_member::GroupProtocol;
use groupsim_wire::Millis;

use super::clients::Launcher;
use super::error::CheckError;
use super::process::Adapter;
use crate::serve::Cluster;
use groupsim::faults::Fault;

/// How long a first start may take to say it is ready.
pub const READY: Duration = Duration::from_secs(30);
/// How long a graceful close may take before SIGKILL.
pub const CLOSE: Duration = Duration::from_secs(10);
/// An adapter that exited by itself in the middle of a run: the member gave up (the checker's
/// `member-gave-up`), is not started again, and the run goes on without it. Only processes the
/// nemesis killed or closed are restarted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdapterExit {
    /// The member (`m0`, …).
    pub member: String,
    /// The incarnation's client id (`m0.1`, …).
    pub client_id: String,
    /// How it exited (`exit status: 3`, `signal: 6 (SIGABRT)`).
    pub status: String,
    /// The last lines it wrote to stderr.
    pub stderr_tail: String,
}

/// What every incarnation is started with.
pub struct MemberArgs {
    pub bootstrap: String,
    pub topic: String,
    pub group: String,
    pub mode: String,
    pub protocol: GroupProtocol,
    pub assignor: String,
    pub work_ms: u64,
    pub session_timeout_ms: Millis,
    pub dir: PathBuf,
}

/// One member and its current incarnation.
struct Slot {
    adapter: Option<Adapter>,
    incarnation: u32,
    /// When to start the next incarnation (after a kill or close).
    restart_at: Option<Instant>,
    /// When to SIGCONT a paused process.
    resume_at: Option<Instant>,
    /// A SIGTERM was sent: SIGKILL if still running then.
    closing_until: Option<Instant>,
}

/// Every member of a run.
pub struct Members<'a> {
    launcher: &'a Launcher,
    args: MemberArgs,
    slots: Vec<Slot>,
    /// The client version the first incarnation reported.
    pub version: String,
    /// Adapters that exited by themselves, in order.
    pub exits: Vec<AdapterExit>,
}

impl<'a> Members<'a> {
    /// Starts `count` members, waiting for each to be ready (a crash, garbage or silence is a
    /// named error).
    pub fn start(
        launcher: &'a Launcher,
        args: MemberArgs,
        count: usize,
        cluster: &Cluster,
    ) -> Result<Self, CheckError> {
        let mut members =
            Self { launcher, args, slots: Vec::new(), version: String::new(), exits: Vec::new() };
        for i in 0..count {
            members.slots.push(Slot {
                adapter: None,
                incarnation: 0,
                restart_at: None,
                resume_at: None,
                closing_until: None,
            });
            let mut adapter = members.spawn(i, cluster)?;
            let version = adapter.wait_ready(READY)?;
            if members.version.is_empty() {
                members.version = version;
            }
            members.slots[i].adapter = Some(adapter);
        }
        Ok(members)
    }

    fn spawn(&mut self, i: usize, cluster: &Cluster) -> Result<Adapter, CheckError> {
        let slot = &mut self.slots[i];
        let client_id = format!("m{i}.{}", slot.incarnation);
        slot.incarnation += 1;
        let a = &self.args;
        let log = a.dir.join(format!("{client_id}.jsonl"));
        let mut argv: Vec<String> = vec![
            format!("bootstrap={}", a.bootstrap),
            format!("topic={}", a.topic),
            format!("group={}", a.group),
            format!("client_id={client_id}"),
            format!("commit={}", a.mode),
            format!("assignor={}", a.assignor),
            format!("out={}", log.display()),
            format!("work_ms={}", a.work_ms),
            format!("session_timeout_ms={}", a.session_timeout_ms),
        ];
        if a.protocol == GroupProtocol::Consumer {
            argv.push("group_protocol=consumer".to_string());
        }
        let mut adapter = Adapter::spawn(self.launcher, &format!("m{i}"), &argv)?;
        adapter.keep_stderr_in(a.dir.join(format!("{client_id}.stderr.txt")));
        cluster.recorder().world(WorldEvent::MemberStarted {
            member: format!("m{i}"),
            group: a.group.clone(),
            host: format!("{client_id} pid {}", adapter.pid()),
        });
        Ok(adapter)
    }

    /// The slot whose current incarnation has client id `client`.
    pub fn by_client(&self, client: &str) -> Option<usize> {
        let (name, inc) = client.strip_prefix('m')?.split_once('.')?;
        let (i, inc) = (name.parse::<usize>().ok()?, inc.parse::<u32>().ok()?);
        let slot = self.slots.get(i)?;
        (slot.incarnation == inc + 1 && slot.adapter.is_some()).then_some(i)
    }

    /// SIGKILL member `i`; restart it after `restart_after_ms`.
    pub fn kill(&mut self, i: usize, restart_after_ms: Millis, cluster: &Cluster) {
        let member = format!("m{i}");
        let slot = &mut self.slots[i];
        let applied = slot.adapter.is_some() && slot.closing_until.is_none();
        let fault = Fault::MemberCrash { member: member.clone(), restart_after_ms };
        cluster.recorder().world(WorldEvent::FaultInjected { fault, applied });
        if !applied {
            return;
        }
        if let Some(mut a) = slot.adapter.take() {
            a.kill();
        }
        slot.resume_at = None;
        slot.restart_at = Some(Instant::now() + Duration::from_millis(restart_after_ms));
        cluster.recorder().world(WorldEvent::MemberStopped { member });
    }

    /// SIGSTOP member `i` for `duration_ms`.
    pub fn pause(&mut self, i: usize, duration_ms: Millis, cluster: &Cluster) {
        let member = format!("m{i}");
        let slot = &mut self.slots[i];
        let applied =
            slot.adapter.is_some() && slot.resume_at.is_none() && slot.closing_until.is_none();
        let fault = Fault::MemberPause { member, duration_ms };
        cluster.recorder().world(WorldEvent::FaultInjected { fault, applied });
        if let (true, Some(a)) = (applied, slot.adapter.as_mut()) {
            a.pause();
            slot.resume_at = Some(Instant::now() + Duration::from_millis(duration_ms));
        }
    }

    /// SIGTERM member `i` (it leaves the group); restart it after `restart_after_ms`.
    pub fn close(&mut self, i: usize, restart_after_ms: Millis, cluster: &Cluster) {
        let member = format!("m{i}");
        let slot = &mut self.slots[i];
        let applied = slot.adapter.is_some() && slot.closing_until.is_none();
        let fault = Fault::MemberLeave { member: member.clone(), restart_after_ms };
        cluster.recorder().world(WorldEvent::FaultInjected { fault, applied });
        if let (true, Some(a)) = (applied, slot.adapter.as_mut()) {
            a.resume();
            slot.resume_at = None;
            a.terminate();
            cluster.recorder().world(WorldEvent::MemberLeaveRequested { member });
            slot.closing_until = Some(Instant::now() + CLOSE);
            slot.restart_at = Some(Instant::now() + Duration::from_millis(restart_after_ms));
        }
    }

    /// Resumes, finishes closes and restarts whatever is due. An adapter that exited on its own
    /// is recorded ([`WorldEvent::MemberExited`], then `MemberStopped`) and not restarted: it
    /// gave up. With `heal`, everything is due now.
    pub fn tend(&mut self, cluster: &Cluster, heal: bool) -> Result<(), CheckError> {
        let now = Instant::now();
        for i in 0..self.slots.len() {
            let member = format!("m{i}");
            let slot = &mut self.slots[i];
            if slot.resume_at.is_some_and(|t| heal || t <= now) {
                slot.resume_at = None;
                if let Some(a) = slot.adapter.as_mut() {
                    a.resume();
                    let description = format!("{member} resumed (SIGCONT)");
                    cluster.recorder().world(WorldEvent::FaultHealed { description });
                }
            }
            if let Some(until) = slot.closing_until {
                let a = slot.adapter.as_mut().expect("a closing member has a process");
                let exited = a.exited().is_some();
                if exited || now >= until {
                    a.kill(); // no-op if it exited
                    if !exited {
                        let member = member.clone();
                        cluster.recorder().world(WorldEvent::CloseTimedOut { member });
                    }
                    slot.adapter = None;
                    slot.closing_until = None;
                    cluster.recorder().world(WorldEvent::MemberStopped { member: member.clone() });
                }
            }
            // A closing member exits by itself: only the closing step above may see that.
            let exited = slot.adapter.as_mut().filter(|_| slot.closing_until.is_none());
            if let Some(status) = exited.and_then(|a| a.exited()) {
                let mut a = slot.adapter.take().expect("checked above");
                a.drain_stderr(Duration::from_secs(1));
                slot.resume_at = None;
                slot.restart_at = None;
                let exit = AdapterExit {
                    member: member.clone(),
                    client_id: format!("{member}.{}", slot.incarnation - 1),
                    status: status.to_string(),
                    stderr_tail: a.stderr_tail(10),
                };
                cluster.recorder().world(WorldEvent::MemberExited {
                    member: member.clone(),
                    client_id: exit.client_id.clone(),
                    status: exit.status.clone(),
                    stderr_tail: exit.stderr_tail.clone(),
                });
                cluster.recorder().world(WorldEvent::MemberStopped { member: member.clone() });
                self.exits.push(exit);
            }
            let slot = &mut self.slots[i];
            if slot.adapter.is_none()
                && slot.closing_until.is_none()
                && slot.restart_at.is_some_and(|t| heal || t <= now)
            {
                slot.restart_at = None;
                let adapter = self.spawn(i, cluster)?;
                self.slots[i].adapter = Some(adapter);
            }
        }
        Ok(())
    }

    /// Closes every member (SIGTERM, then SIGKILL after [`CLOSE`]), all at once.
    pub fn close_all(&mut self, cluster: &Cluster) {
        for slot in &mut self.slots {
            if let Some(a) = slot.adapter.as_mut() {
                a.resume();
                a.terminate();
            }
        }
        let deadline = Instant::now() + CLOSE;
        for (i, slot) in self.slots.iter_mut().enumerate() {
            if let Some(mut a) = slot.adapter.take() {
                a.wait_until(deadline);
                a.kill();
                cluster.recorder().world(WorldEvent::MemberStopped { member: format!("m{i}") });
            }
        }
    }

    /// Every processed-record log written so far.
    pub fn logs(dir: &Path) -> Vec<PathBuf> {
        let mut logs: Vec<PathBuf> = std::fs::read_dir(dir)
            .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
            .unwrap_or_default();
        logs.retain(|p| p.extension().is_some_and(|e| e == "jsonl"));
        logs.sort();
        logs
    }
}
