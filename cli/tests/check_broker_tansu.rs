//! `check-broker` against tansu, CI-sized: the campaign in docs/check-broker.md found tansu 0.6.0
//! answering one classic generation with two different member lists in every seed of brod
//! members. This test starts tansu (in-memory storage, a free loopback port), runs those brod
//! seeds with a short fault phase, and checks that the rules still see it in at least one, and
//! that a tansu run reaches a verdict at all (its CreateTopics, Metadata and group answers read).
//!
//! tansu is a long build, kept out of the default CI path: the test runs when a `tansu` binary is
//! found (`GROUPSIM_TANSU=/path/to/tansu`, or `tansu` on the PATH) and otherwise skips, saying
//! so on stderr.

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use groupsim_checker::broker::BrokerRule;
use groupsim_live::check_broker::{run_seed, RunConfig};
use groupsim_member::GroupProtocol;

/// The tansu binary, if there is one.
fn tansu() -> Option<PathBuf> {
    if let Ok(path) = std::env::var("GROUPSIM_TANSU") {
        return Some(PathBuf::from(path));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join("tansu")).find(|p| p.is_file())
}

/// A running tansu broker; killed when dropped.
struct Tansu {
    child: Child,
    addr: String,
}

impl Drop for Tansu {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(binary: PathBuf) -> Tansu {
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("tcp://127.0.0.1:{port}");
    let child = Command::new(binary)
        .args(["broker", "--listener-url", &url, "--advertised-listener-url", &url])
        .args(["--storage-engine", "memory://tansu/"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("tansu starts");
    let addr = format!("127.0.0.1:{port}");
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect(&addr).is_err() {
        assert!(Instant::now() < deadline, "tansu did not listen on {addr}");
        std::thread::sleep(Duration::from_millis(100));
    }
    Tansu { child, addr }
}

#[test]
fn check_broker_sees_tansu_tell_one_generation_two_member_lists() {
    let Some(binary) = tansu() else {
        let _ = writeln!(
            std::io::stderr().lock(),
            "SKIPPED: check_broker_sees_tansu_tell_one_generation_two_member_lists: no tansu \
             binary (set GROUPSIM_TANSU or put tansu on the PATH)"
        );
        return;
    };
    let broker = start(binary);
    let mut seen = Vec::new();
    // The campaign's brod seeds.
    for seed in [4, 6, 9, 12] {
        let config = RunConfig {
            bootstrap: broker.addr.clone(),
            seed,
            protocol: GroupProtocol::Classic,
            topic: None,
            fault_ms: 10_000,
            heal_ms: 20_000,
            restart_cmd: None,
        };
        let report = run_seed(&config).expect("a tansu run reaches a verdict");
        assert!(report.plan.profiles.iter().all(|p| p.name() == "brod"), "seed {seed}");
        let rules: Vec<BrokerRule> = report.anomalies.iter().map(|a| a.rule).collect();
        if rules.contains(&BrokerRule::MembershipWithoutGeneration) {
            return;
        }
        seen.push((seed, rules));
    }
    panic!("no seed showed tansu's member lists inside one generation: {seen:?}");
}
