//! The hosts' tasks, spawned so that their failure ends the run.
//!
//! tokio catches a panic inside a spawned task and keeps it for the task's `JoinHandle`, which
//! the hosts never read: a core that panicked would just stop, and the run would go on to judge
//! the silence (a member that never joined, a broker that stopped answering). Every task a host
//! spawns goes through [`spawn`], which keeps the first panic for the world loop; the loop
//! resumes it after the step ([`Failure::take`]), so the run fails as a panic in the event world
//! does. A member whose timer stays due however often it fires ends the run the same way, with
//! the clock guard's error.

use std::any::Any;
use std::cell::RefCell;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

use tokio::task::JoinHandle;

use crate::world::error::WorldError;

/// How a task ended the run.
enum Failed {
    /// It panicked: the payload, to resume in the world loop.
    Panic(Box<dyn Any + Send>),
    /// The run failed otherwise (a process kept asking to run at an instant it had already
    /// handled).
    Error(WorldError),
}

/// The first failure of any host's task, for the world loop (all on turmoil's one thread).
#[derive(Clone, Default)]
pub(super) struct Failure(Rc<RefCell<Option<Failed>>>);

impl Failure {
    /// The run failed with `error` (the first failure is kept).
    pub(super) fn fail(&self, error: WorldError) {
        self.0.borrow_mut().get_or_insert(Failed::Error(error));
    }

    /// After a step: the run's error if a task failed (a panic is resumed, so the run reports
    /// it as the panic it was).
    pub(super) fn take(&self) -> Result<(), WorldError> {
        match self.0.borrow_mut().take() {
            None => Ok(()),
            Some(Failed::Panic(payload)) => std::panic::resume_unwind(payload),
            Some(Failed::Error(e)) => Err(e),
        }
    }
}

/// Spawns `task` on the host's local set; a panic inside it is kept in `failure` and ends the
/// task.
pub(super) fn spawn<F>(failure: &Failure, task: F) -> JoinHandle<()>
where
    F: Future<Output = ()> + 'static,
{
    tokio::task::spawn_local(Watched { task: Box::pin(task), failure: failure.clone() })
}

/// A task whose panic is kept rather than left to tokio.
struct Watched<F> {
    task: Pin<Box<F>>,
    failure: Failure,
}

impl<F: Future<Output = ()>> Future for Watched<F> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        match catch_unwind(AssertUnwindSafe(|| this.task.as_mut().poll(cx))) {
            Ok(poll) => poll,
            Err(payload) => {
                this.failure.0.borrow_mut().get_or_insert(Failed::Panic(payload));
                Poll::Ready(())
            }
        }
    }
}
