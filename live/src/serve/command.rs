//! `groupsim serve` on the command line: start the cluster, print it, apply the seed's
//! schedule while it runs, write the history on the way out.

use std::time::{Duration, Instant};

use groupsim_history::WorldEvent;

use super::cluster::Cluster;
use super::config::ServeArgs;
use super::error::ServeError;
use super::faults;
use super::nemesis::Nemesis;

/// Runs `groupsim serve` until Ctrl-C; with `--seed` or `--schedule`, its nemesis applies the
/// seed's schedule or the file's (printed first) for `--fault-secs`, then heals.
pub fn run(args: &ServeArgs) -> Result<(), ServeError> {
    let mut config = args.cluster_config()?;
    let file = args.schedule.as_deref().map(read_schedule_file).transpose()?;
    config.seed = args.seed.unwrap_or(0);
    let cluster = Cluster::start(config.clone())?;
    println!("groupsim serve: {} broker(s) on {}", config.brokers, cluster.bootstrap());
    if let Some(bug) = &args.bug {
        println!("  the coordinator runs with bug switch {bug} on: deliberately broken");
    }
    for t in &config.topics {
        println!(
            "  topic {} ({} partitions, {} records each)",
            t.name, t.partitions, config.preload
        );
    }
    let schedule = match (file, args.seed) {
        (Some(schedule), seed) => Some((schedule, seed.unwrap_or(0))),
        (None, Some(seed)) => Some((faults::draw(seed, args.schedule_shape(config.brokers)), seed)),
        (None, None) => None,
    };
    let mut nemesis = schedule.map(|(schedule, seed)| {
        println!(
            "seed {seed}: the nemesis applies this schedule to group {:?} (t+ from now; real \
             clients make a run repeatable, not bit-exact):",
            args.group.as_deref().unwrap_or("the first group that forms")
        );
        print!("{schedule}");
        Nemesis::new(&cluster, schedule, args.group.as_deref().unwrap_or(""), seed)
    });
    println!("bootstrap servers: {}   (Ctrl-C to stop)", cluster.bootstrap());
    if let Some(path) = &args.history {
        // The wire stream (every request answered) grows with the traffic; it waits on disk,
        // beside the history, rather than in memory (docs/serve.md, "Soak").
        let spill = spill_path(path);
        cluster
            .recorder()
            .spill_wire_to(&spill)
            .map_err(|e| ServeError::io(format!("creating {}", spill.display()), e))?;
        println!("history: {} (on exit; SIGUSR1 writes it now)", path.display());
    }
    let stop = cluster.stop_signal(args.history.as_deref());
    let fault_phase = Duration::from_secs(args.fault_secs);
    let started = Instant::now();
    loop {
        match stop.recv_timeout(Duration::from_millis(10)) {
            Ok(r) => {
                r.map_err(|e| ServeError::io("waiting for Ctrl-C", e))?;
                break;
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                return Err(ServeError::Stopped(std::sync::mpsc::RecvError));
            }
        }
        if let Some(n) = nemesis.as_mut() {
            n.step(&cluster); // serve alone has no client processes to pause or crash
            if started.elapsed() >= fault_phase {
                n.heal(&cluster);
                println!("fault phase over: healed");
                nemesis = None;
            }
        }
    }
    println!("stopping");
    cluster.recorder().world(WorldEvent::RunEnded);
    if let Some(path) = &args.history {
        cluster
            .recorder()
            .save(path)
            .map_err(|e| ServeError::io(format!("writing the history to {}", path.display()), e))?;
        println!("history written to {}", path.display());
        cluster.recorder().remove_spill();
    }
    cluster.shutdown();
    Ok(())
}

/// Where the wire stream of the history written to `history` waits until it is written:
/// beside it, with `.wire` added to its name.
fn spill_path(history: &std::path::Path) -> std::path::PathBuf {
    let mut name = history.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(".wire");
    history.with_file_name(name)
}

/// Reads a `--schedule` file, refusing what serve cannot apply.
fn read_schedule_file(path: &std::path::Path) -> Result<faults::ServeSchedule, ServeError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| ServeError::io(format!("reading schedule {}", path.display()), e))?;
    faults::read_schedule(&text, groupsim::faults::Mode::Serve)
        .map_err(|source| ServeError::Schedule { path: path.to_path_buf(), source })
}
