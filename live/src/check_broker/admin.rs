//! The harness's own client: what it asks a broker before and beside the members — ApiVersions
//! (which group protocols are offered), Metadata (the brokers and the topic), CreateTopics, and
//! the producer's Produce requests. It speaks through the wire crate's client half.

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;
use groupsim_wire::client::{handshake_with_versions, RequestWriter, ResponseReader};
use groupsim_wire::records::{encode_batch, LogRecord};
use groupsim_wire::versions::served_apis;
use groupsim_wire::{error_name, WireError};
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    ApiKey, CreateTopicsRequest, MetadataRequest, ProduceRequest, RequestKind, ResponseKind,
    TopicName,
};
use kafka_protocol::protocol::{Message, StrBytes};
use tokio::io::{ReadHalf, WriteHalf};
use tokio::net::TcpStream;

use super::error::CheckBrokerError;

/// How long any one step of the harness's own may take.
pub const STEP: Duration = Duration::from_secs(10);

/// The group protocols a broker offers, from its ApiVersions answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Offered {
    /// JoinGroup, SyncGroup and Heartbeat.
    pub classic: bool,
    /// ConsumerGroupHeartbeat (KIP-848).
    pub consumer: bool,
}

/// One open connection of the harness's own.
pub struct Admin {
    addr: String,
    writer: RequestWriter<WriteHalf<TcpStream>>,
    reader: ResponseReader<ReadHalf<TcpStream>>,
}

/// The topic as Metadata describes it.
#[derive(Clone, Debug)]
pub struct TopicInfo {
    /// Its id (nil where the broker has none).
    pub id: uuid::Uuid,
    /// Partition -> leader node.
    pub leaders: BTreeMap<i32, i32>,
}

/// The cluster as Metadata describes it.
#[derive(Clone, Debug)]
pub struct ClusterInfo {
    /// Node id -> `host:port`.
    pub nodes: BTreeMap<i32, String>,
    /// The topic asked for, if it exists.
    pub topic: Option<TopicInfo>,
}

fn fail(addr: &str, what: &str, reason: impl ToString) -> CheckBrokerError {
    CheckBrokerError::Request { addr: addr.into(), what: what.into(), reason: reason.to_string() }
}

impl Admin {
    /// Connects to `addr` and runs the ApiVersions handshake, naming how it failed.
    pub async fn connect(addr: &str) -> Result<Admin, CheckBrokerError> {
        let unreachable =
            |reason: String| CheckBrokerError::Unreachable { addr: addr.into(), reason };
        let stream = match tokio::time::timeout(STEP, TcpStream::connect(addr)).await {
            Err(_) => return Err(unreachable("no connection within the step's deadline".into())),
            Ok(Err(e)) => return Err(unreachable(e.to_string())),
            Ok(Ok(s)) => s,
        };
        let _ = stream.set_nodelay(true);
        let mut ours = served_apis();
        ours.push((ApiKey::CreateTopics, CreateTopicsRequest::VERSIONS));
        let shaken =
            tokio::time::timeout(STEP, handshake_with_versions(stream, "groupsim-admin", &ours));
        match shaken.await {
            Err(_) => Err(CheckBrokerError::Handshake {
                addr: addr.into(),
                reason: "no ApiVersions answer within the step's deadline".into(),
            }),
            Ok(Err(WireError::ConnectionClosed)) => {
                Err(CheckBrokerError::ClosedAtOnce { addr: addr.into() })
            }
            Ok(Err(WireError::Io(e)))
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::ConnectionReset
                        | std::io::ErrorKind::UnexpectedEof
                        | std::io::ErrorKind::BrokenPipe
                        | std::io::ErrorKind::ConnectionAborted
                ) =>
            {
                Err(CheckBrokerError::ClosedAtOnce { addr: addr.into() })
            }
            Ok(Err(e)) => {
                Err(CheckBrokerError::Handshake { addr: addr.into(), reason: e.to_string() })
            }
            Ok(Ok((writer, reader))) => Ok(Admin { addr: addr.into(), writer, reader }),
        }
    }

    /// The address connected to.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// Which group protocols the broker offers; an error naming what is missing when it offers
    /// neither (the APIs every consumer group needs are FindCoordinator, OffsetCommit,
    /// OffsetFetch, Metadata and Fetch).
    pub fn offered(&self) -> Result<Offered, CheckBrokerError> {
        let has = |k: ApiKey| self.writer.version_for(k).is_some();
        let needed = [
            ApiKey::Metadata,
            ApiKey::FindCoordinator,
            ApiKey::OffsetCommit,
            ApiKey::OffsetFetch,
            ApiKey::Fetch,
        ];
        let classic_apis = [ApiKey::JoinGroup, ApiKey::SyncGroup, ApiKey::Heartbeat];
        let mut missing: Vec<String> =
            needed.iter().filter(|k| !has(**k)).map(|k| format!("{k:?}")).collect();
        let offered = Offered {
            classic: classic_apis.iter().all(|k| has(*k)),
            consumer: has(ApiKey::ConsumerGroupHeartbeat),
        };
        if !offered.classic && !offered.consumer {
            missing.push("JoinGroup/SyncGroup/Heartbeat or ConsumerGroupHeartbeat".into());
        }
        if missing.is_empty() {
            Ok(offered)
        } else {
            Err(CheckBrokerError::NoGroupApis {
                addr: self.addr.clone(),
                missing: missing.join(", "),
            })
        }
    }

    /// Sends `request` (built in its newest shape, fitted to the version negotiated) and reads
    /// its answer, within the step's deadline.
    pub async fn call(
        &mut self,
        what: &str,
        request: RequestKind,
    ) -> Result<ResponseKind, CheckBrokerError> {
        let addr = self.addr.clone();
        let key = groupsim_wire::codec::request_api_key(&request);
        let request = match key.and_then(|k| self.writer.version_for(k)) {
            Some(v) => groupsim_member::compat::fit_request_to_version(request, v),
            None => request,
        };
        let exchange = async {
            self.writer.send(&request).await?;
            self.reader.recv().await.map(|(_, r)| r)
        };
        match tokio::time::timeout(STEP, exchange).await {
            Err(_) => Err(fail(&addr, what, "no answer within the step's deadline")),
            Ok(Err(e)) => Err(fail(&addr, what, e)),
            Ok(Ok(r)) => Ok(r),
        }
    }

    /// The brokers, and `topic` if it exists.
    pub async fn metadata(&mut self, topic: &str) -> Result<ClusterInfo, CheckBrokerError> {
        let request = MetadataRequest::default()
            .with_topics(Some(vec![MetadataRequestTopic::default()
                .with_name(Some(TopicName(StrBytes::from_string(topic.into()))))]))
            .with_allow_auto_topic_creation(false);
        let ResponseKind::Metadata(answer) =
            self.call("Metadata", RequestKind::Metadata(request)).await?
        else {
            return Err(fail(&self.addr, "Metadata", "an answer of another kind"));
        };
        let nodes = answer
            .brokers
            .iter()
            .map(|b| (b.node_id.0, format!("{}:{}", b.host, b.port)))
            .collect();
        let topic = answer
            .topics
            .iter()
            .find(|t| t.error_code == 0 && t.name.as_ref().is_some_and(|n| n.0.as_str() == topic))
            .filter(|t| !t.partitions.is_empty())
            .map(|t| TopicInfo {
                id: t.topic_id,
                leaders: t.partitions.iter().map(|p| (p.partition_index, p.leader_id.0)).collect(),
            });
        Ok(ClusterInfo { nodes, topic })
    }

    /// Creates `topic` with `partitions` partitions (replication the broker's default).
    pub async fn create_topic(
        &mut self,
        topic: &str,
        partitions: i32,
    ) -> Result<(), CheckBrokerError> {
        let addr = self.addr.clone();
        let refuse = |reason: String| CheckBrokerError::TopicNotCreatable {
            addr: addr.clone(),
            topic: topic.into(),
            reason,
        };
        let Some(version) = self.writer.version_for(ApiKey::CreateTopics) else {
            return Err(refuse("the broker does not offer CreateTopics".into()));
        };
        let replication = if version >= 4 { -1 } else { 1 };
        let request = CreateTopicsRequest::default()
            .with_timeout_ms(STEP.as_millis() as i32)
            .with_topics(vec![CreatableTopic::default()
                .with_name(TopicName(StrBytes::from_string(topic.into())))
                .with_num_partitions(partitions)
                .with_replication_factor(replication)]);
        let answer = self.call("CreateTopics", RequestKind::CreateTopics(request)).await;
        let answer = answer.map_err(|e| refuse(e.to_string()))?;
        let ResponseKind::CreateTopics(answer) = answer else {
            return Err(refuse("an answer of another kind".into()));
        };
        match answer.topics.first().map(|t| (t.error_code, t.error_message.clone())) {
            Some((0, _)) | Some((36, _)) => Ok(()), // 36: TOPIC_ALREADY_EXISTS
            Some((code, message)) => Err(refuse(format!(
                "{}{}",
                error_name(code),
                message.map(|m| format!(": {m}")).unwrap_or_default()
            ))),
            None => Err(refuse("the answer names no topic".into())),
        }
    }

    /// Appends `count` records to `partition` of `topic` (acks=all); the first offset given.
    pub async fn produce(
        &mut self,
        topic: &str,
        partition: i32,
        count: usize,
        label: &str,
    ) -> Result<i64, CheckBrokerError> {
        let records: Vec<LogRecord> = (0..count)
            .map(|i| LogRecord {
                offset: i as i64,
                timestamp_ms: 0,
                key: None,
                value: Bytes::from(format!("{label}-{i}")),
            })
            .collect();
        let batch = encode_batch(&records).map_err(|e| fail(&self.addr, "Produce", e))?;
        let request = ProduceRequest::default()
            .with_acks(-1)
            .with_timeout_ms(5_000)
            .with_topic_data(vec![TopicProduceData::default()
                .with_name(TopicName(StrBytes::from_string(topic.into())))
                .with_partition_data(vec![PartitionProduceData::default()
                    .with_index(partition)
                    .with_records(Some(batch))])]);
        let ResponseKind::Produce(answer) =
            self.call("Produce", RequestKind::Produce(request)).await?
        else {
            return Err(fail(&self.addr, "Produce", "an answer of another kind"));
        };
        let p = answer.responses.first().and_then(|t| t.partition_responses.first());
        match p {
            Some(p) if p.error_code == 0 => Ok(p.base_offset),
            Some(p) => Err(fail(&self.addr, "Produce", error_name(p.error_code))),
            None => Err(fail(&self.addr, "Produce", "the answer names no partition")),
        }
    }
}
