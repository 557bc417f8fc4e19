//! One consumer-group member of samsa (the pure-Rust Kafka client) per process, for
//! `groupsim check-client`: the application `clients/python/member.py` describes, written the
//! way samsa's own consumer-group example is. samsa's group member is a stream: it joins,
//! assigns (the leader, round-robin, over the partitions it was given), then yields batches,
//! heartbeating between them; its only commit is its auto-commit, which commits a batch's
//! offsets when the application asks for the next batch, i.e. after processing it.
//!
//! Commit modes:
//!   auto    samsa's auto-commit of each processed batch
//!   before  WRONG on purpose: the application holds each batch until it has asked for the
//!           next one (which commits the held batch), and only then processes it
//!
//! Arguments key=value: bootstrap topic group client_id commit out [work_ms]
//! [session_timeout_ms] [assignor]. `--capabilities` prints what it offers as one JSON line.
//! Stdout gets the adapter's JSON events (`ready`, `closed`); errors go to stderr. A stream
//! error ends the member (exit 3): samsa's stream does not survive one. SIGTERM ends it too
//! (samsa's stream has no leave), with `closed`.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use samsa::prelude::{
    BrokerAddress, ClusterMetadata, ConsumeMessage, ConsumerGroupBuilder, TcpConnection,
    TopicPartitionsBuilder,
};
use serde_json::json;
use tokio::signal::unix::{signal, SignalKind};
use tokio_stream::StreamExt;

/// The samsa release this binary was built with (set by check-client's build).
const VERSION: &str = match option_env!("GROUPSIM_CLIENT_VERSION") {
    Some(v) => v,
    None => "unknown",
};
/// The rebalance timeout every adapter uses.
const REBALANCE_TIMEOUT_MS: i32 = 10_000;

fn emit(event: serde_json::Value) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{event}");
    let _ = out.flush();
}

fn log(msg: &str) {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    eprintln!("[member {:.3}] {msg}", now.as_secs_f64());
}

/// The command line, `key=value` each.
struct Args {
    bootstrap: Vec<BrokerAddress>,
    topic: String,
    group: String,
    client_id: String,
    commit: String,
    out: String,
    work_ms: u64,
    session_timeout_ms: i32,
    assignor: String,
}

fn parse(argv: &[String]) -> Result<Args, String> {
    let mut kv = BTreeMap::new();
    for a in argv {
        let (k, v) = a.split_once('=').ok_or_else(|| format!("argument {a:?} is not key=value"))?;
        kv.insert(k.to_string(), v.to_string());
    }
    let mut take = |k: &str| kv.remove(k).ok_or_else(|| format!("missing argument {k}=..."));
    let bootstrap = take("bootstrap")?
        .split(',')
        .map(|hp| {
            let (host, port) = hp.rsplit_once(':').ok_or_else(|| format!("bootstrap {hp:?}"))?;
            let port = port.parse().map_err(|_| format!("bootstrap {hp:?}: port"))?;
            Ok(BrokerAddress { host: host.to_string(), port })
        })
        .collect::<Result<Vec<_>, String>>()?;
    let (topic, group, client_id) = (take("topic")?, take("group")?, take("client_id")?);
    let (commit, out) = (take("commit")?, take("out")?);
    if commit != "auto" && commit != "before" {
        return Err(format!("commit={commit}: the samsa adapter offers auto (and before)"));
    }
    let number = |v: Option<String>, default: u64| -> Result<u64, String> {
        v.map_or(Ok(default), |s| s.parse().map_err(|_| format!("{s:?} is not a number")))
    };
    let work_ms = number(kv.remove("work_ms"), 2)?;
    let session_timeout_ms = number(kv.remove("session_timeout_ms"), 6_000)? as i32;
    let assignor = kv.remove("assignor").unwrap_or_else(|| "roundrobin".into());
    if assignor != "roundrobin" {
        return Err(format!("assignor={assignor}: samsa offers roundrobin"));
    }
    Ok(Args {
        bootstrap,
        topic,
        group,
        client_id,
        commit,
        out,
        work_ms,
        session_timeout_ms,
        assignor,
    })
}

/// "Processes" a batch: a JSON line per record, written straight to the kernel.
async fn process(batch: &[ConsumeMessage], args: &Args, out: &mut File) -> Result<(), String> {
    let mut lines = String::new();
    for m in batch {
        if args.work_ms > 0 {
            tokio::time::sleep(Duration::from_millis(args.work_ms)).await;
        }
        let ts = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
        let line = json!({
            "client": args.client_id, "topic": m.topic_name, "partition": m.partition_index,
            "offset": m.offset, "ts": ts.as_secs_f64() * 1000.0,
        });
        lines.push_str(&format!("{line}\n"));
    }
    out.write_all(lines.as_bytes()).map_err(|e| format!("writing {}: {e}", args.out))
}

async fn run(args: Args) -> Result<(), String> {
    log(&format!("chose commit={} assignor={} group_protocol=classic", args.commit, args.assignor));
    let mut out = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&args.out)
        .map_err(|e| format!("opening {}: {e}", args.out))?;
    // samsa's leader assigns the partitions it is given: those the topic has now.
    let metadata = ClusterMetadata::<TcpConnection>::new(
        args.bootstrap.clone(),
        1,
        args.client_id.clone(),
        vec![args.topic.clone()],
    )
    .await
    .map_err(|e| format!("metadata: {e:?}"))?;
    let partitions: Vec<i32> = metadata
        .topics
        .iter()
        .filter(|t| t.name.as_ref() == args.topic.as_bytes())
        .flat_map(|t| t.partitions.iter().map(|p| p.partition_index))
        .collect();
    let assignment = TopicPartitionsBuilder::new().assign(args.topic.clone(), partitions).build();
    let member = ConsumerGroupBuilder::<TcpConnection>::new(
        args.bootstrap.clone(),
        args.group.clone(),
        assignment,
    )
    .await
    .map_err(|e| format!("consumer group: {e:?}"))?
    .client_id(args.client_id.clone())
    .session_timeout_ms(args.session_timeout_ms)
    .rebalance_timeout_ms(REBALANCE_TIMEOUT_MS)
    .max_wait_ms(200)
    .build()
    .await
    .map_err(|e| format!("joining the group: {e:?}"))?;
    emit(json!({
        "event": "ready", "client": "samsa", "version": VERSION, "assignor": args.assignor,
        "commit": args.commit, "group_protocol": "classic",
    }));
    let stream = member.into_stream();
    tokio::pin!(stream);
    let mut term = signal(SignalKind::terminate()).map_err(|e| format!("SIGTERM: {e}"))?;
    let mut watch = tokio::time::interval(Duration::from_millis(500));
    let parent = std::os::unix::process::parent_id();
    let mut held: Option<Vec<ConsumeMessage>> = None;
    loop {
        tokio::select! {
            _ = term.recv() => break,
            _ = watch.tick() => {
                if std::os::unix::process::parent_id() != parent {
                    log("the campaign that started this member is gone: exiting");
                    std::process::exit(4);
                }
            }
            next = stream.next() => {
                let batch: Vec<ConsumeMessage> = match next {
                    None => return Err("the consumer group stream ended".into()),
                    Some(Err(e)) => return Err(format!("consumer group stream: {e:?}")),
                    Some(Ok(batch)) => batch.collect(),
                };
                if args.commit == "before" {
                    // Asking for this batch committed the held one: process it now.
                    if let Some(previous) = held.replace(batch) {
                        process(&previous, &args, &mut out).await?;
                    }
                } else {
                    process(&batch, &args, &mut out).await?;
                }
            }
        }
    }
    log("SIGTERM: closing");
    emit(json!({"event": "closed"}));
    Ok(())
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    if argv == ["--capabilities"] {
        emit(json!({
            "event": "capabilities", "client": "samsa", "version": VERSION, "modes": ["auto"],
            "group_protocols": {"classic": ["roundrobin"]},
        }));
        return;
    }
    let args = match parse(&argv) {
        Ok(a) => a,
        Err(e) => {
            log(&e);
            std::process::exit(2);
        }
    };
    if let Err(e) = run(args).await {
        log(&format!("FAILED: {e}"));
        std::process::exit(3);
    }
}
