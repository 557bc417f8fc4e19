//! What the soak measures of the serve process, from /proc: its resident memory and its open
//! file descriptors.

use std::path::Path;

/// One reading of the serve process and of the load at a moment of the soak.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    /// Seconds since the soak started.
    pub at_s: f64,
    /// Resident set size (VmRSS), KiB.
    pub rss_kib: u64,
    /// Open file descriptors of the serve process.
    pub fds: u64,
    /// Connections the loopback clients held open at the reading (each is one of serve's fds).
    pub load_connections: u64,
    /// Valid requests answered since the previous sample.
    pub answered: usize,
    /// Their answer latencies, ms: median, 99th percentile and largest (0 when none).
    pub p50_ms: f64,
    /// See `p50_ms`.
    pub p99_ms: f64,
    /// See `p50_ms`.
    pub max_ms: f64,
}

impl Sample {
    /// Serve's descriptors beyond the loopback clients' connections of the moment: what must
    /// stay flat (the clients' own come and go by design).
    pub fn held_fds(&self) -> u64 {
        self.fds.saturating_sub(self.load_connections)
    }
}

/// VmRSS in KiB from the text of /proc/PID/status.
pub fn parse_vm_rss(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let mut words = line["VmRSS:".len()..].split_whitespace();
    let value: u64 = words.next()?.parse().ok()?;
    match words.next() {
        Some("kB") | None => Some(value),
        Some(_) => None,
    }
}

/// RSS (KiB) and open descriptors of process `pid`, or an error naming what could not be read.
pub fn read_process(pid: u32) -> std::io::Result<(u64, u64)> {
    let dir = Path::new("/proc").join(pid.to_string());
    let status = std::fs::read_to_string(dir.join("status"))?;
    let rss = parse_vm_rss(&status).ok_or_else(|| {
        std::io::Error::new(std::io::ErrorKind::InvalidData, "no VmRSS line in /proc/PID/status")
    })?;
    let fds = std::fs::read_dir(dir.join("fd"))?.count() as u64;
    Ok((rss, fds))
}

/// The median, 99th percentile and largest of `values` (all 0 when there are none).
pub fn percentiles(values: &mut [f64]) -> (f64, f64, f64) {
    if values.is_empty() {
        return (0.0, 0.0, 0.0);
    }
    values.sort_by(f64::total_cmp);
    let at = |q: f64| values[((values.len() - 1) as f64 * q).round() as usize];
    (at(0.5), at(0.99), values[values.len() - 1])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vm_rss_is_read_from_the_status_text() {
        let status = "Name:\tgroupsim\nVmPeak:\t  900 kB\nVmRSS:\t   12345 kB\nThreads:\t3\n";
        assert_eq!(parse_vm_rss(status), Some(12_345));
        assert_eq!(parse_vm_rss("Name:\tx\n"), None);
        assert_eq!(parse_vm_rss("VmRSS:\t12 MB\n"), None, "only kB is understood");
    }

    #[test]
    fn this_process_can_be_read() {
        let (rss, fds) = read_process(std::process::id()).expect("our own /proc entry");
        assert!(rss > 0 && fds > 0);
    }

    #[test]
    fn percentiles_of_a_window() {
        let mut v: Vec<f64> = (1..=100).map(f64::from).collect();
        v.reverse();
        let (p50, p99, max) = percentiles(&mut v);
        assert_eq!((p50, p99, max), (51.0, 99.0, 100.0));
        assert_eq!(percentiles(&mut []), (0.0, 0.0, 0.0));
    }
}
