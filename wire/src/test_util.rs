//! Helpers shared by the test trees of every crate (feature `test-util`): populated sample
//! requests and responses of every served API, with every field the version has set to a
//! non-default value (so a round trip that drops or misplaces a field shows up), and record
//! batches made by hand.

use bytes::Bytes;
use kafka_protocol::messages::api_versions_response::{
    ApiVersion, FinalizedFeatureKey, SupportedFeatureKey,
};
use kafka_protocol::messages::describe_groups_response::{DescribedGroup, DescribedGroupMember};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic, ForgottenTopic};
use kafka_protocol::messages::fetch_response::{
    AbortedTransaction, EpochEndOffset, FetchableTopicResponse, LeaderIdAndEpoch, PartitionData,
    SnapshotId,
};
use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::join_group_response::JoinGroupResponseMember;
use kafka_protocol::messages::leave_group_request::MemberIdentity;
use kafka_protocol::messages::leave_group_response::MemberResponse;
use kafka_protocol::messages::list_groups_response::ListedGroup;
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_commit_response::{
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use kafka_protocol::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopic, OffsetFetchRequestTopics,
};
use kafka_protocol::messages::offset_fetch_response::{
    OffsetFetchResponseGroup, OffsetFetchResponsePartition, OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic, OffsetFetchResponseTopics,
};
use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;

pub fn s(v: &'static str) -> StrBytes {
    StrBytes::from_static_str(v)
}

pub fn topic(v: &'static str) -> TopicName {
    TopicName(s(v))
}

pub fn group(v: &'static str) -> GroupId {
    GroupId(s(v))
}

/// A request of `api_key` with every field of `version` populated.
pub fn sample_request(api_key: ApiKey, v: i16) -> RequestKind {
    match api_key {
        ApiKey::ApiVersions => {
            let mut r = ApiVersionsRequest::default();
            if v >= 3 {
                r = r
                    .with_client_software_name(s("groupsim"))
                    .with_client_software_version(s("1.0"));
            }
            r.into()
        }
        ApiKey::Metadata => {
            let t = MetadataRequestTopic::default().with_name(Some(topic("t1")));
            let mut r = MetadataRequest::default().with_topics(Some(vec![t]));
            if v >= 4 {
                r = r.with_allow_auto_topic_creation(false);
            }
            if (8..=10).contains(&v) {
                r = r.with_include_cluster_authorized_operations(true);
            }
            if v >= 8 {
                r = r.with_include_topic_authorized_operations(true);
            }
            r.into()
        }
        ApiKey::FindCoordinator => {
            let mut r = FindCoordinatorRequest::default();
            if v <= 3 {
                r = r.with_key(s("g1"));
            }
            if v >= 1 {
                r = r.with_key_type(1);
            }
            if v >= 4 {
                r = r.with_coordinator_keys(vec![s("g1"), s("g2")]);
            }
            r.into()
        }
        ApiKey::ListOffsets => {
            let mut p = ListOffsetsPartition::default().with_partition_index(2).with_timestamp(-2);
            if v >= 4 {
                p = p.with_current_leader_epoch(3);
            }
            let mut r =
                ListOffsetsRequest::default().with_replica_id(BrokerId(-1)).with_topics(vec![
                    ListOffsetsTopic::default().with_name(topic("t")).with_partitions(vec![p]),
                ]);
            if v >= 2 {
                r = r.with_isolation_level(1);
            }
            r.into()
        }
        ApiKey::Fetch => {
            let mut p = FetchPartition::default()
                .with_partition(1)
                .with_fetch_offset(5)
                .with_partition_max_bytes(1000);
            if v >= 5 {
                p = p.with_log_start_offset(2);
            }
            if v >= 9 {
                p = p.with_current_leader_epoch(4);
            }
            if v >= 12 {
                p = p.with_last_fetched_epoch(3);
            }
            let mut r = FetchRequest::default()
                .with_replica_id(BrokerId(-1))
                .with_max_wait_ms(500)
                .with_min_bytes(1)
                .with_max_bytes(100_000)
                .with_isolation_level(1)
                .with_topics(vec![FetchTopic::default()
                    .with_topic(topic("t"))
                    .with_partitions(vec![p])]);
            if v >= 7 {
                r = r.with_session_id(9).with_session_epoch(2).with_forgotten_topics_data(vec![
                    ForgottenTopic::default().with_topic(topic("old")).with_partitions(vec![1, 2]),
                ]);
            }
            if v >= 11 {
                r = r.with_rack_id(s("rack"));
            }
            if v >= 12 {
                r = r.with_cluster_id(Some(s("cluster")));
            }
            r.into()
        }
        ApiKey::JoinGroup => {
            let mut r = JoinGroupRequest::default()
                .with_group_id(group("g"))
                .with_session_timeout_ms(10_000)
                .with_member_id(s("m1"))
                .with_protocol_type(s("consumer"))
                .with_protocols(vec![JoinGroupRequestProtocol::default()
                    .with_name(s("range"))
                    .with_metadata(Bytes::from_static(b"\x00\x01meta"))]);
            if v >= 1 {
                r = r.with_rebalance_timeout_ms(30_000);
            }
            if v >= 5 {
                r = r.with_group_instance_id(Some(s("instance")));
            }
            if v >= 8 {
                r = r.with_reason(Some(s("why")));
            }
            r.into()
        }
        ApiKey::SyncGroup => {
            let mut r = SyncGroupRequest::default()
                .with_group_id(group("g"))
                .with_generation_id(3)
                .with_member_id(s("m1"))
                .with_assignments(vec![SyncGroupRequestAssignment::default()
                    .with_member_id(s("m1"))
                    .with_assignment(Bytes::from_static(b"assign"))]);
            if v >= 3 {
                r = r.with_group_instance_id(Some(s("instance")));
            }
            if v >= 5 {
                r = r.with_protocol_type(Some(s("consumer"))).with_protocol_name(Some(s("range")));
            }
            r.into()
        }
        ApiKey::Heartbeat => {
            let mut r = HeartbeatRequest::default()
                .with_group_id(group("g"))
                .with_generation_id(3)
                .with_member_id(s("m1"));
            if v >= 3 {
                r = r.with_group_instance_id(Some(s("instance")));
            }
            r.into()
        }
        ApiKey::LeaveGroup => {
            let mut r = LeaveGroupRequest::default().with_group_id(group("g"));
            if v <= 2 {
                r = r.with_member_id(s("m1"));
            } else {
                let mut m = MemberIdentity::default()
                    .with_member_id(s("m1"))
                    .with_group_instance_id(Some(s("i")));
                if v >= 5 {
                    m = m.with_reason(Some(s("bye")));
                }
                r = r.with_members(vec![m]);
            }
            r.into()
        }
        ApiKey::OffsetCommit => {
            let mut p = OffsetCommitRequestPartition::default()
                .with_partition_index(1)
                .with_committed_offset(42)
                .with_committed_metadata(Some(s("meta")));
            if v >= 6 {
                p = p.with_committed_leader_epoch(2);
            }
            let mut r = OffsetCommitRequest::default()
                .with_group_id(group("g"))
                .with_generation_id_or_member_epoch(3)
                .with_member_id(s("m1"))
                .with_topics(vec![OffsetCommitRequestTopic::default()
                    .with_name(topic("t"))
                    .with_partitions(vec![p])]);
            if v <= 4 {
                r = r.with_retention_time_ms(60_000);
            }
            if v >= 7 {
                r = r.with_group_instance_id(Some(s("instance")));
            }
            r.into()
        }
        ApiKey::OffsetFetch => {
            let mut r = OffsetFetchRequest::default();
            if v <= 7 {
                r = r.with_group_id(group("g")).with_topics(Some(vec![
                    OffsetFetchRequestTopic::default()
                        .with_name(topic("t"))
                        .with_partition_indexes(vec![0, 1]),
                ]));
            } else {
                let mut g = OffsetFetchRequestGroup::default()
                    .with_group_id(group("g"))
                    .with_topics(Some(vec![OffsetFetchRequestTopics::default()
                        .with_name(topic("t"))
                        .with_partition_indexes(vec![0, 1])]));
                if v >= 9 {
                    g = g.with_member_id(Some(s("m1"))).with_member_epoch(3);
                }
                r = r.with_groups(vec![
                    g,
                    OffsetFetchRequestGroup::default().with_group_id(group("h")).with_topics(None),
                ]);
            }
            if v >= 7 {
                r = r.with_require_stable(true);
            }
            r.into()
        }
        ApiKey::DescribeGroups => {
            let mut r = DescribeGroupsRequest::default().with_groups(vec![group("g"), group("h")]);
            if v >= 3 {
                r = r.with_include_authorized_operations(true);
            }
            r.into()
        }
        ApiKey::ListGroups => {
            let mut r = ListGroupsRequest::default();
            if v >= 4 {
                r = r.with_states_filter(vec![s("Stable")]);
            }
            r.into()
        }
        ApiKey::Produce => ProduceRequest::default()
            .with_transactional_id(None)
            .with_acks(-1)
            .with_timeout_ms(1500)
            .with_topic_data(vec![produce_request::TopicProduceData::default()
                .with_name(topic("t1"))
                .with_partition_data(vec![produce_request::PartitionProduceData::default()
                    .with_index(2)
                    .with_records(Some(Bytes::from_static(b"batch bytes")))])])
            .into(),
        ApiKey::InitProducerId => {
            let mut r = InitProducerIdRequest::default()
                .with_transactional_id(None)
                .with_transaction_timeout_ms(60_000);
            if v >= 3 {
                r = r.with_producer_id(ProducerId(42)).with_producer_epoch(3);
            }
            r.into()
        }
        ApiKey::ConsumerGroupHeartbeat => {
            let mut r = ConsumerGroupHeartbeatRequest::default()
                .with_group_id(GroupId(s("g")))
                .with_member_id(s("m-1"))
                .with_member_epoch(3)
                .with_instance_id(Some(s("i-1")))
                .with_rack_id(Some(s("rack-a")))
                .with_rebalance_timeout_ms(30_000)
                .with_subscribed_topic_names(Some(vec![topic("t1")]))
                .with_server_assignor(Some(s("uniform")))
                .with_topic_partitions(Some(vec![
                    consumer_group_heartbeat_request::TopicPartitions::default()
                        .with_topic_id(crate::topic_id("t1"))
                        .with_partitions(vec![0, 2]),
                ]));
            if v >= 1 {
                r = r.with_subscribed_topic_regex(Some(s("t.*")));
            }
            r.into()
        }
        ApiKey::ConsumerGroupDescribe => ConsumerGroupDescribeRequest::default()
            .with_group_ids(vec![GroupId(s("g")), GroupId(s("h"))])
            .with_include_authorized_operations(true)
            .into(),
        other => panic!("no sample for {other:?}"),
    }
}

/// A response of `api_key` with every field of `version` populated.
pub fn sample_response(api_key: ApiKey, v: i16) -> ResponseKind {
    match api_key {
        ApiKey::ApiVersions => {
            let mut r = ApiVersionsResponse::default().with_error_code(0).with_api_keys(vec![
                ApiVersion::default().with_api_key(1).with_min_version(4).with_max_version(12),
            ]);
            if v >= 1 {
                r = r.with_throttle_time_ms(5);
            }
            if v >= 3 {
                r = r
                    .with_supported_features(vec![SupportedFeatureKey::default()
                        .with_name(s("f"))
                        .with_min_version(1)
                        .with_max_version(2)])
                    .with_finalized_features_epoch(7)
                    .with_finalized_features(vec![FinalizedFeatureKey::default()
                        .with_name(s("f"))
                        .with_min_version_level(1)
                        .with_max_version_level(2)])
                    .with_zk_migration_ready(true);
            }
            r.into()
        }
        ApiKey::Metadata => {
            let mut b = MetadataResponseBroker::default()
                .with_node_id(BrokerId(1))
                .with_host(s("h"))
                .with_port(9092);
            if v >= 1 {
                b = b.with_rack(Some(s("rack")));
            }
            let mut p = MetadataResponsePartition::default()
                .with_partition_index(0)
                .with_leader_id(BrokerId(1))
                .with_replica_nodes(vec![BrokerId(1)])
                .with_isr_nodes(vec![BrokerId(1)]);
            if v >= 7 {
                p = p.with_leader_epoch(4);
            }
            if v >= 5 {
                p = p.with_offline_replicas(vec![BrokerId(2)]);
            }
            let mut t = MetadataResponseTopic::default()
                .with_name(Some(topic("t")))
                .with_partitions(vec![p]);
            if v >= 1 {
                t = t.with_is_internal(true);
            }
            if v >= 8 {
                t = t.with_topic_authorized_operations(7);
            }
            let mut r = MetadataResponse::default().with_brokers(vec![b]).with_topics(vec![t]);
            if v >= 1 {
                r = r.with_controller_id(BrokerId(1));
            }
            if v >= 2 {
                r = r.with_cluster_id(Some(s("c")));
            }
            if v >= 3 {
                r = r.with_throttle_time_ms(2);
            }
            if (8..=10).contains(&v) {
                r = r.with_cluster_authorized_operations(3);
            }
            r.into()
        }
        ApiKey::FindCoordinator => {
            let mut r = FindCoordinatorResponse::default();
            if v >= 1 {
                r = r.with_throttle_time_ms(1);
            }
            if v <= 3 {
                r = r
                    .with_error_code(15)
                    .with_node_id(BrokerId(2))
                    .with_host(s("h"))
                    .with_port(9093);
                if v >= 1 {
                    r = r.with_error_message(Some(s("msg")));
                }
            } else {
                r = r.with_coordinators(vec![Coordinator::default()
                    .with_key(s("g"))
                    .with_node_id(BrokerId(2))
                    .with_host(s("h"))
                    .with_port(9093)
                    .with_error_code(15)
                    .with_error_message(Some(s("msg")))]);
            }
            r.into()
        }
        ApiKey::ListOffsets => {
            let mut p = ListOffsetsPartitionResponse::default()
                .with_partition_index(1)
                .with_error_code(6)
                .with_timestamp(100)
                .with_offset(5);
            if v >= 4 {
                p = p.with_leader_epoch(2);
            }
            let mut r = ListOffsetsResponse::default().with_topics(vec![
                ListOffsetsTopicResponse::default().with_name(topic("t")).with_partitions(vec![p]),
            ]);
            if v >= 2 {
                r = r.with_throttle_time_ms(3);
            }
            r.into()
        }
        ApiKey::Fetch => {
            let mut p = PartitionData::default()
                .with_partition_index(1)
                .with_error_code(0)
                .with_high_watermark(10)
                .with_last_stable_offset(9)
                .with_aborted_transactions(Some(vec![AbortedTransaction::default()
                    .with_producer_id(ProducerId(1))
                    .with_first_offset(2)]))
                .with_records(Some(Bytes::from_static(b"not really records")));
            if v >= 5 {
                p = p.with_log_start_offset(1);
            }
            if v >= 11 {
                p = p.with_preferred_read_replica(BrokerId(0));
            }
            if v >= 12 {
                p = p
                    .with_diverging_epoch(
                        EpochEndOffset::default().with_epoch(1).with_end_offset(2),
                    )
                    .with_current_leader(
                        LeaderIdAndEpoch::default()
                            .with_leader_id(BrokerId(3))
                            .with_leader_epoch(4),
                    )
                    .with_snapshot_id(SnapshotId::default().with_end_offset(5).with_epoch(6));
            }
            let mut r = FetchResponse::default().with_throttle_time_ms(1).with_responses(vec![
                FetchableTopicResponse::default().with_topic(topic("t")).with_partitions(vec![p]),
            ]);
            if v >= 7 {
                r = r.with_error_code(0).with_session_id(77);
            }
            r.into()
        }
        ApiKey::JoinGroup => {
            let mut m = JoinGroupResponseMember::default()
                .with_member_id(s("m1"))
                .with_metadata(Bytes::from_static(b"md"));
            if v >= 5 {
                m = m.with_group_instance_id(Some(s("i")));
            }
            let mut r = JoinGroupResponse::default()
                .with_error_code(0)
                .with_generation_id(4)
                .with_protocol_name(Some(s("range")))
                .with_leader(s("m1"))
                .with_member_id(s("m1"))
                .with_members(vec![m]);
            if v >= 2 {
                r = r.with_throttle_time_ms(1);
            }
            if v >= 7 {
                r = r.with_protocol_type(Some(s("consumer")));
            }
            if v >= 9 {
                r = r.with_skip_assignment(true);
            }
            r.into()
        }
        ApiKey::SyncGroup => {
            let mut r = SyncGroupResponse::default()
                .with_error_code(27)
                .with_assignment(Bytes::from_static(b"a"));
            if v >= 1 {
                r = r.with_throttle_time_ms(1);
            }
            if v >= 5 {
                r = r.with_protocol_type(Some(s("consumer"))).with_protocol_name(Some(s("range")));
            }
            r.into()
        }
        ApiKey::Heartbeat => {
            let mut r = HeartbeatResponse::default().with_error_code(27);
            if v >= 1 {
                r = r.with_throttle_time_ms(1);
            }
            r.into()
        }
        ApiKey::LeaveGroup => {
            let mut r = LeaveGroupResponse::default().with_error_code(0);
            if v >= 1 {
                r = r.with_throttle_time_ms(1);
            }
            if v >= 3 {
                r = r.with_members(vec![MemberResponse::default()
                    .with_member_id(s("m1"))
                    .with_group_instance_id(Some(s("i")))
                    .with_error_code(25)]);
            }
            r.into()
        }
        ApiKey::OffsetCommit => {
            let mut r = OffsetCommitResponse::default().with_topics(vec![
                OffsetCommitResponseTopic::default().with_name(topic("t")).with_partitions(vec![
                    OffsetCommitResponsePartition::default()
                        .with_partition_index(1)
                        .with_error_code(22),
                ]),
            ]);
            if v >= 3 {
                r = r.with_throttle_time_ms(1);
            }
            r.into()
        }
        ApiKey::OffsetFetch => {
            let mut r = OffsetFetchResponse::default();
            if v >= 3 {
                r = r.with_throttle_time_ms(1);
            }
            if v <= 7 {
                let mut p = OffsetFetchResponsePartition::default()
                    .with_partition_index(1)
                    .with_committed_offset(42)
                    .with_metadata(Some(s("m")))
                    .with_error_code(0);
                if v >= 5 {
                    p = p.with_committed_leader_epoch(2);
                }
                r = r.with_topics(vec![OffsetFetchResponseTopic::default()
                    .with_name(topic("t"))
                    .with_partitions(vec![p])]);
                if v >= 2 {
                    r = r.with_error_code(16);
                }
            } else {
                r = r.with_groups(vec![OffsetFetchResponseGroup::default()
                    .with_group_id(group("g"))
                    .with_error_code(16)
                    .with_topics(vec![OffsetFetchResponseTopics::default()
                        .with_name(topic("t"))
                        .with_partitions(vec![OffsetFetchResponsePartitions::default()
                            .with_partition_index(1)
                            .with_committed_offset(42)
                            .with_committed_leader_epoch(2)
                            .with_metadata(Some(s("m")))
                            .with_error_code(0)])])]);
            }
            r.into()
        }
        ApiKey::DescribeGroups => {
            let mut m = DescribedGroupMember::default()
                .with_member_id(s("m1"))
                .with_client_id(s("c"))
                .with_client_host(s("/10.0.0.1"))
                .with_member_metadata(Bytes::from_static(b"md"))
                .with_member_assignment(Bytes::from_static(b"as"));
            if v >= 4 {
                m = m.with_group_instance_id(Some(s("i")));
            }
            let mut g = DescribedGroup::default()
                .with_group_id(group("g"))
                .with_group_state(s("Stable"))
                .with_protocol_type(s("consumer"))
                .with_protocol_data(s("range"))
                .with_members(vec![m]);
            if v >= 3 {
                g = g.with_authorized_operations(8);
            }
            let mut r = DescribeGroupsResponse::default().with_groups(vec![g]);
            if v >= 1 {
                r = r.with_throttle_time_ms(1);
            }
            r.into()
        }
        ApiKey::ListGroups => {
            let mut g =
                ListedGroup::default().with_group_id(group("g")).with_protocol_type(s("consumer"));
            if v >= 4 {
                g = g.with_group_state(s("Stable"));
            }
            let mut r = ListGroupsResponse::default().with_error_code(0).with_groups(vec![g]);
            if v >= 1 {
                r = r.with_throttle_time_ms(1);
            }
            r.into()
        }
        ApiKey::Produce => {
            let mut p = produce_response::PartitionProduceResponse::default()
                .with_index(2)
                .with_error_code(0)
                .with_base_offset(17)
                .with_log_append_time_ms(-1);
            if v >= 5 {
                p = p.with_log_start_offset(3);
            }
            if v >= 8 {
                p = p
                    .with_record_errors(vec![produce_response::BatchIndexAndErrorMessage::default(
                    )
                    .with_batch_index(1)
                    .with_batch_index_error_message(Some(s("bad")))])
                    .with_error_message(Some(s("partly")));
            }
            let t = produce_response::TopicProduceResponse::default()
                .with_name(topic("t1"))
                .with_partition_responses(vec![p]);
            ProduceResponse::default().with_responses(vec![t]).with_throttle_time_ms(1).into()
        }
        ApiKey::InitProducerId => InitProducerIdResponse::default()
            .with_throttle_time_ms(1)
            .with_error_code(0)
            .with_producer_id(ProducerId(4242))
            .with_producer_epoch(0)
            .into(),
        ApiKey::ConsumerGroupHeartbeat => ConsumerGroupHeartbeatResponse::default()
            .with_throttle_time_ms(1)
            .with_error_code(0)
            .with_error_message(Some(s("fine")))
            .with_member_id(Some(s("m-1")))
            .with_member_epoch(4)
            .with_heartbeat_interval_ms(5_000)
            .with_assignment(Some(
                consumer_group_heartbeat_response::Assignment::default().with_topic_partitions(
                    vec![consumer_group_heartbeat_response::TopicPartitions::default()
                        .with_topic_id(crate::topic_id("t1"))
                        .with_partitions(vec![1])],
                ),
            ))
            .into(),
        ApiKey::ConsumerGroupDescribe => {
            use consumer_group_describe_response as d;
            let assignment =
                d::Assignment::default().with_topic_partitions(vec![d::TopicPartitions::default()
                    .with_topic_id(crate::topic_id("t1"))
                    .with_topic_name(topic("t1"))
                    .with_partitions(vec![0, 1])]);
            let mut member = d::Member::default()
                .with_member_id(s("m-1"))
                .with_instance_id(Some(s("i-1")))
                .with_rack_id(Some(s("rack-a")))
                .with_member_epoch(4)
                .with_client_id(s("c"))
                .with_client_host(s("/10.0.0.1"))
                .with_subscribed_topic_names(vec![topic("t1")])
                .with_subscribed_topic_regex(Some(s("t.*")))
                .with_assignment(assignment.clone())
                .with_target_assignment(assignment);
            if v >= 1 {
                member = member.with_member_type(1);
            }
            let group = d::DescribedGroup::default()
                .with_error_code(0)
                .with_error_message(Some(s("fine")))
                .with_group_id(GroupId(s("g")))
                .with_group_state(s("Stable"))
                .with_group_epoch(4)
                .with_assignment_epoch(4)
                .with_assignor_name(s("uniform"))
                .with_members(vec![member])
                .with_authorized_operations(-2_147_483_648);
            ConsumerGroupDescribeResponse::default()
                .with_throttle_time_ms(1)
                .with_groups(vec![group])
                .into()
        }
        other => panic!("no sample for {other:?}"),
    }
}

/// An uncompressed v2 batch with one record per offset in `offsets` (value `v`, no key), as a
/// broker's Fetch answer carries it.
pub fn record_batch(offsets: std::ops::Range<i64>) -> Bytes {
    let records: Vec<crate::records::LogRecord> = offsets
        .map(|offset| crate::records::LogRecord {
            offset,
            timestamp_ms: 0,
            key: None,
            value: Bytes::from_static(b"v"),
        })
        .collect();
    crate::records::encode_batch(&records).expect("batch encodes")
}

/// A v2 batch as an idempotent producer writes it: `values` at offsets 0.., keys `k0`, `k1`, …,
/// timestamps 1000, 1001, …, producer id 7, epoch 0, in the given compression.
pub fn produced_batch(values: &[&str], compression: kafka_protocol::records::Compression) -> Bytes {
    use kafka_protocol::records::{Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType};
    let records: Vec<Record> = values
        .iter()
        .enumerate()
        .map(|(i, v)| Record {
            transactional: false,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: 0,
            producer_id: 7,
            producer_epoch: 0,
            timestamp_type: TimestampType::Creation,
            offset: i as i64,
            sequence: i as i32,
            timestamp: 1_000 + i as i64,
            key: Some(Bytes::from(format!("k{i}"))),
            value: Some(Bytes::from(v.to_string())),
            headers: Default::default(),
        })
        .collect();
    let mut buf = bytes::BytesMut::new();
    let options = RecordEncodeOptions { version: 2, compression };
    RecordBatchEncoder::encode(&mut buf, records.iter(), &options).expect("batch encodes");
    buf.freeze()
}
