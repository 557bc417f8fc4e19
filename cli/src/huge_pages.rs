//! Transparent huge pages, off for `serve`. The allocator asks the kernel for huge pages on its
//! arenas (it helps the simulation's hot loops), so resident memory grows in 2 MiB steps
//! whenever a new stretch of an arena is first touched, however little of it is used. For a
//! long-running loopback server with a small heap that is noise worth more than the speed: its
//! resident memory should follow what it holds, so a soak sees a leak and not a page size.

/// Opts this process out of transparent huge pages from now on (Linux only; elsewhere, and if
/// the kernel refuses, nothing changes, and serve runs as before).
pub fn off_for_this_process() {
    #[cfg(target_os = "linux")]
    if let Err(e) = rustix::thread::disable_transparent_huge_pages(true) {
        tracing::debug!("the kernel kept transparent huge pages on for serve: {e}");
    }
}
