//! The lock file that serialises the real clients' install across test processes
//! (`common::real_clients::FileLock`): a second taker waits for the holder, a holder keeps its
//! lock fresh however long it holds it, and a lock left by a dead process is taken over.

mod common;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant, SystemTime};

use common::real_clients::{FileLock, Lease};

/// A short lease, so the tests run in about a second.
const SHORT: Lease =
    Lease { heartbeat: Duration::from_millis(50), stale: Duration::from_millis(400) };

/// A fresh lock path of its own for each test.
fn lock_path(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("groupsim-lock-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("install.lock")
}

#[test]
fn a_second_taker_waits_until_the_holder_releases() {
    let path = lock_path("wait");
    let first = FileLock::acquire(&path, SHORT, || panic!("the first taker waited")).unwrap();
    let released = Arc::new(AtomicBool::new(false));
    let waited = Arc::new(AtomicBool::new(false));
    let second = {
        let (path, released, waited) = (path.clone(), released.clone(), waited.clone());
        thread::spawn(move || {
            let _lock =
                FileLock::acquire(&path, SHORT, || waited.store(true, Ordering::SeqCst)).unwrap();
            released.load(Ordering::SeqCst)
        })
    };
    thread::sleep(Duration::from_millis(300));
    assert!(!second.is_finished(), "the second taker did not wait");
    released.store(true, Ordering::SeqCst);
    drop(first);
    assert!(second.join().unwrap(), "the second taker got the lock before the release");
    assert!(waited.load(Ordering::SeqCst), "the second taker was not told it waits");
    assert!(!path.exists(), "the lock file outlived its last holder");
}

#[test]
fn a_holder_keeps_its_lock_fresh_past_the_stale_age() {
    let path = lock_path("fresh");
    let holder = FileLock::acquire(&path, SHORT, || {}).unwrap();
    let took = Arc::new(AtomicBool::new(false));
    let taker = {
        let (path, took) = (path.clone(), took.clone());
        thread::spawn(move || {
            let _lock = FileLock::acquire(&path, SHORT, || {}).unwrap();
            took.store(true, Ordering::SeqCst);
        })
    };
    // Three stale ages: without the heartbeat the taker would break the lock.
    thread::sleep(SHORT.stale * 3);
    assert!(!took.load(Ordering::SeqCst), "a held lock was taken over");
    drop(holder);
    taker.join().unwrap();
    assert!(took.load(Ordering::SeqCst));
}

#[test]
fn a_lock_left_by_a_dead_process_is_taken_over() {
    let path = lock_path("stale");
    // What a killed test run leaves: a lock file nobody refreshes.
    let file = std::fs::File::create(&path).unwrap();
    file.set_modified(SystemTime::now() - SHORT.stale * 2).unwrap();
    drop(file);
    let started = Instant::now();
    let lock = FileLock::acquire(&path, SHORT, || {}).unwrap();
    assert!(started.elapsed() < SHORT.stale, "took {:?} to break a stale lock", started.elapsed());
    assert!(path.exists(), "the new holder's lock file is in place");
    let leftovers: Vec<_> = std::fs::read_dir(path.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n != "install.lock")
        .collect();
    assert!(leftovers.is_empty(), "the stale lock was set aside but not removed: {leftovers:?}");
    drop(lock);
}
