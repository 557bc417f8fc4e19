//! A run whose code panics is a failing seed, not a crashed sweep.
//!
//! A core, a plug-in member or the checker that panics in the middle of a run would otherwise
//! unwind through the worker thread and stop the whole sweep (or search) with a message that
//! names no seed. [`catching`] runs one simulation and turns a panic inside it into its message
//! and source location, which the run reports as [`crate::world::WorldError::Panicked`]: the sweep
//! counts the seed as failed, prints its replay command and goes on. The replayed seed panics
//! the same way (the panic is part of the deterministic run).
//!
//! The process's panic hook is chained once: while a thread runs inside [`catching`], the hook
//! keeps the message, the location and (when `RUST_BACKTRACE` asks for one) the backtrace for
//! the report instead of printing them; on any other thread, or outside a run, the previous
//! hook runs as before. Nothing a run records depends on this, so no history changes.

use std::any::Any;
use std::backtrace::{Backtrace, BacktraceStatus};
use std::cell::{Cell, RefCell};
use std::panic::{self, AssertUnwindSafe, PanicHookInfo};
use std::sync::Once;

thread_local! {
    /// This thread is inside [`catching`].
    static CATCHING: Cell<bool> = const { Cell::new(false) };
    /// What the hook kept of the last panic caught on this thread.
    static CAUGHT: RefCell<Option<String>> = const { RefCell::new(None) };
}

static HOOK: Once = Once::new();

/// Runs `f`; a panic inside it comes back as `Err` with its message, where it happened and, if
/// `RUST_BACKTRACE` is set, the backtrace. Everything `f` built is dropped while unwinding (a
/// run's state is its own), so the thread is fit for the next run.
pub fn catching<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    HOOK.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if CATCHING.with(Cell::get) {
                CAUGHT.with(|c| *c.borrow_mut() = Some(describe(info)));
            } else {
                previous(info);
            }
        }));
    });
    let was = CATCHING.with(|c| c.replace(true));
    let outcome = panic::catch_unwind(AssertUnwindSafe(f));
    CATCHING.with(|c| c.set(was));
    outcome.map_err(|payload| {
        CAUGHT.with(|c| c.borrow_mut().take()).unwrap_or_else(|| message(&*payload).to_string())
    })
}

/// The panic's message, where it happened, and the backtrace when one was asked for.
fn describe(info: &PanicHookInfo<'_>) -> String {
    let mut s = message(info.payload()).to_string();
    if let Some(l) = info.location() {
        s.push_str(&format!(" (at {}:{}:{})", l.file(), l.line(), l.column()));
    }
    let backtrace = Backtrace::capture();
    if backtrace.status() == BacktraceStatus::Captured {
        s.push_str(&format!("\n{backtrace}"));
    }
    s
}

/// The text a panic was raised with (`panic!` with a literal or with formatting).
fn message(payload: &(dyn Any + Send)) -> &str {
    match (payload.downcast_ref::<&str>(), payload.downcast_ref::<String>()) {
        (Some(s), _) => s,
        (_, Some(s)) => s,
        _ => "a panic without a message",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A panic comes back as its message and place; a value as itself; and the thread catches
    /// again afterwards, nested or not.
    #[test]
    fn a_panic_inside_comes_back_with_its_message_and_place() {
        let caught = catching(|| -> u32 { panic!("core broke at {}", 7) });
        let err = caught.expect_err("caught");
        assert!(err.starts_with("core broke at 7 (at "), "{err}");
        assert!(err.contains("sim/src/panics.rs:"), "{err}");
        assert_eq!(catching(|| 5), Ok(5));
        let nested = catching(|| catching(|| -> () { panic!("inner") }));
        assert!(nested.expect("outer returned").expect_err("inner caught").starts_with("inner"));
        assert!(!CATCHING.with(Cell::get), "the flag is restored");
    }
}
