//! `groupsim check-broker`: the simulation's members, faults and a broker-side checker against a
//! real Kafka-compatible broker's group coordinator.
//!
//! Each seed draws a plan ([`plan`]): members with client profiles, the topic's partitions, the
//! producer's pace and a schedule of client-side faults. The members are the simulation's own
//! process shells and sans-IO member cores, run in real time over real sockets ([`host`]), each
//! behind local proxies the harness owns ([`proxy`]) so faults need nothing from the broker. The
//! harness's own client ([`admin`]) asks ApiVersions which group protocols the broker offers,
//! finds or creates the topic, and feeds it records; an [`observer`] reads the committed offsets
//! throughout. Every request and answer is kept in an answer log ([`tap`]) that the checker's
//! broker-side rules (`groupsim_checker::broker`) judge once the group has converged after the
//! heal, or the heal bound has passed ([`run`]).
//!
//! Leaves first: [`error`], [`plan`], [`tap`], [`proxy`], [`admin`], [`host`], [`observer`],
//! [`run`].

pub mod admin;
pub mod error;
pub mod host;
pub mod observer;
pub mod plan;
pub mod proxy;
pub mod run;
pub mod tap;

use std::path::Path;

use groupsim_member::GroupProtocol;

pub use self::error::CheckBrokerError;
pub use self::run::{group_id, offered, run_seed, RunConfig, SeedReport};

/// Which group protocols to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Protocols {
    /// JoinGroup / SyncGroup / Heartbeat.
    Classic,
    /// KIP-848 ConsumerGroupHeartbeat.
    Consumer,
    /// Each the broker offers.
    Both,
}

/// `groupsim check-broker`: command-line arguments.
#[derive(clap::Args, Debug, Clone)]
pub struct CheckBrokerArgs {
    /// The broker to bootstrap from, as HOST:PORT.
    #[arg(long, value_name = "HOST:PORT")]
    pub bootstrap: String,
    /// The (first) seed: it draws the members, their profiles, the workload and the faults.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// How many seeds to run, from --seed on.
    #[arg(long, default_value_t = 1)]
    pub seeds: u64,
    /// Consume this topic: used if it exists, else created. Default: `groupsim-<seed>`, created.
    #[arg(long)]
    pub topic: Option<String>,
    /// The group protocols to run (`both`: each the broker offers, by ApiVersions).
    #[arg(long, value_enum, default_value_t = Protocols::Both)]
    pub protocol: Protocols,
    /// Seconds of client-side faults per seed.
    #[arg(long, default_value_t = 20)]
    pub duration: u64,
    /// The most seconds the group may take to converge after the heal.
    #[arg(long, default_value_t = 40)]
    pub heal_secs: u64,
    /// A shell command (`sh -c`) that restarts the broker, e.g. `docker restart kafka`: each
    /// seed then runs it once or twice during the faults, at instants the seed draws, and waits
    /// for it (at most 120 s) before the heal. Without it, no broker restart is drawn.
    #[arg(long, value_name = "COMMAND")]
    pub restart_cmd: Option<String>,
}

impl CheckBrokerArgs {
    /// The command that reruns `seed` with `protocol`.
    pub fn replay(&self, seed: u64, protocol: GroupProtocol) -> String {
        let mut s = format!(
            "groupsim check-broker --bootstrap {} --seed {seed} --protocol {} --duration {} \
             --heal-secs {}",
            self.bootstrap,
            name(protocol),
            self.duration,
            self.heal_secs
        );
        if let Some(t) = &self.topic {
            s.push_str(&format!(" --topic {t}"));
        }
        if let Some(c) = &self.restart_cmd {
            s.push_str(&format!(" --restart-cmd '{}'", c.replace('\'', "'\\''")));
        }
        s
    }
}

fn name(p: GroupProtocol) -> &'static str {
    match p {
        GroupProtocol::Classic => "classic",
        GroupProtocol::Consumer => "consumer",
    }
}

/// The protocols `args` asks for that the broker offers; an error when it asked for one by
/// name that the broker does not offer.
pub fn protocols(args: &CheckBrokerArgs) -> Result<Vec<GroupProtocol>, CheckBrokerError> {
    let offered = offered(&args.bootstrap)?;
    let refuse = |protocol: &str, missing: &str| CheckBrokerError::ProtocolNotOffered {
        addr: args.bootstrap.clone(),
        protocol: protocol.into(),
        missing: missing.into(),
    };
    Ok(match args.protocol {
        Protocols::Classic if !offered.classic => {
            return Err(refuse("classic", "JoinGroup/SyncGroup/Heartbeat"))
        }
        Protocols::Consumer if !offered.consumer => {
            return Err(refuse("consumer", "ConsumerGroupHeartbeat"))
        }
        Protocols::Classic => vec![GroupProtocol::Classic],
        Protocols::Consumer => vec![GroupProtocol::Consumer],
        Protocols::Both => {
            [(offered.classic, GroupProtocol::Classic), (offered.consumer, GroupProtocol::Consumer)]
                .into_iter()
                .filter_map(|(on, p)| on.then_some(p))
                .collect()
        }
    })
}

/// Runs every seed of `args` for every protocol asked for and offered, printing each plan and
/// verdict through `out`, writing each answer log under `dir`; the reports.
pub fn campaign(
    args: &CheckBrokerArgs,
    dir: &Path,
    mut out: impl FnMut(String),
) -> Result<Vec<SeedReport>, CheckBrokerError> {
    if args.seeds == 0 {
        return Err(CheckBrokerError::BadArgument("--seeds must be at least 1".into()));
    }
    let protocols = protocols(args)?;
    out(format!(
        "groupsim check-broker: {} offers {}",
        args.bootstrap,
        protocols.iter().map(|p| name(*p)).collect::<Vec<_>>().join(" and ")
    ));
    let mut reports = Vec::new();
    for seed in args.seed..args.seed + args.seeds {
        for &protocol in &protocols {
            let config = RunConfig {
                bootstrap: args.bootstrap.clone(),
                seed,
                protocol,
                topic: args.topic.clone(),
                fault_ms: args.duration * 1000,
                heal_ms: args.heal_secs * 1000,
                restart_cmd: args.restart_cmd.clone(),
            };
            let report = run_seed(&config)?;
            out(format!("{}", report.plan).trim_end().to_string());
            out(format!("  topic {}, group {}", report.topic, report.group));
            out(format!("  replay: {}", args.replay(seed, protocol)));
            let exchanges = report.log.exchanges().count();
            let converged = match report.converged_after_ms {
                Some(ms) => format!("converged {ms} ms after the heal"),
                None => "did not converge within the heal bound".into(),
            };
            let path = dir.join(format!("check-broker-{seed}-{}", name(protocol)));
            let written = write_log(&path, &report);
            if report.anomalies.is_empty() {
                out(format!("  ok: {exchanges} answers checked, {converged}"));
            } else {
                out(format!(
                    "  FAIL: {} anomal{} in {exchanges} answers, {converged}",
                    report.anomalies.len(),
                    if report.anomalies.len() == 1 { "y" } else { "ies" }
                ));
                for a in report.anomalies.iter().take(10) {
                    out(format!("  {}", a.explain(&report.log)));
                }
            }
            match written {
                Ok(()) => out(format!("  answer log: {}", path.join("answers.json").display())),
                Err(e) => out(format!("  answer log not written: {e}")),
            }
            reports.push(report);
        }
    }
    Ok(reports)
}

fn write_log(dir: &Path, report: &SeedReport) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let json = serde_json::to_string(&report.log).map_err(std::io::Error::other)?;
    std::fs::write(dir.join("answers.json"), json)
}
