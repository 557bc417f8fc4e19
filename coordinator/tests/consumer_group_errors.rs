//! Every ConsumerGroupHeartbeat error, one case each: malformed requests (INVALID_REQUEST),
//! UNSUPPORTED_ASSIGNOR, INVALID_REGULAR_EXPRESSION, GROUP_ID_NOT_FOUND, UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH,
//! GROUP_MAX_SIZE_REACHED, UNRELEASED_INSTANCE_ID, FENCED_INSTANCE_ID, and the load and
//! not-coordinator answers. Each case starts from a group where dynamic member `a` joined `t`
//! (epoch 1) and static member `s` (instance `i`) joined `u`.

mod consumer_harness;

use consumer_harness::*;
use groupsim_coordinator::offsets_log::OffsetsLog;
use groupsim_coordinator::GroupCoordinator;
use kafka_protocol::messages::{ConsumerGroupHeartbeatRequest, GroupId, TopicName};

fn setup() -> Harness {
    let mut h = Harness::default();
    h.joined("a", &["t"]);
    let r = h.hb(join("s", &["u"]).with_instance_id(Some(s("i"))));
    assert_eq!(r.error_code, 0);
    h
}

#[test]
fn each_rule_answers_its_error() {
    type Case = (&'static str, i16, ConsumerGroupHeartbeatRequest, E);
    let cases: Vec<Case> = vec![
        ("v1 join without member id", 1, join("", &["t"]), E::InvalidRequest),
        ("empty group id", 1, join("x", &["t"]).with_group_id(GroupId(s(""))), E::InvalidRequest),
        (
            "empty instance id",
            1,
            join("x", &["t"]).with_instance_id(Some(s(""))),
            E::InvalidRequest,
        ),
        ("empty rack id", 1, join("x", &["t"]).with_rack_id(Some(s(""))), E::InvalidRequest),
        (
            "join without rebalance timeout",
            1,
            join("x", &["t"]).with_rebalance_timeout_ms(-1),
            E::InvalidRequest,
        ),
        (
            "join owning partitions",
            1,
            join("x", &["t"])
                .with_topic_partitions(beat("x", 0, &set(&[("t", 0)])).topic_partitions),
            E::InvalidRequest,
        ),
        (
            "join without owned list",
            1,
            join("x", &["t"]).with_topic_partitions(None),
            E::InvalidRequest,
        ),
        (
            "join without subscription",
            1,
            join("x", &["t"]).with_subscribed_topic_names(None),
            E::InvalidRequest,
        ),
        ("temporary leave without instance id", 1, leave("a", -2), E::InvalidRequest),
        ("epoch below -2", 1, leave("a", -3), E::InvalidRequest),
        ("heartbeat without member id", 0, beat("", 1, &set(&[])), E::InvalidRequest),
        (
            "a topic regex that does not compile",
            1,
            join("x", &["t"]).with_subscribed_topic_regex(Some(s("t("))),
            E::InvalidRegularExpression,
        ),
        (
            "unknown assignor",
            1,
            join("x", &["t"]).with_server_assignor(Some(s("sticky"))),
            E::UnsupportedAssignor,
        ),
        (
            "heartbeat to a group that does not exist",
            1,
            beat("a", 1, &set(&[])).with_group_id(GroupId(s("nope"))),
            E::GroupIdNotFound,
        ),
        (
            "leave from a group that does not exist",
            1,
            leave("a", -1).with_group_id(GroupId(s("nope"))),
            E::GroupIdNotFound,
        ),
        ("unknown member heartbeat", 1, beat("x", 1, &set(&[])), E::UnknownMemberId),
        ("unknown member leave", 1, leave("x", -1), E::UnknownMemberId),
        ("epoch ahead of the member's", 1, beat("a", 2, &set(&[])), E::FencedMemberEpoch),
        (
            "static join while the instance is held",
            1,
            join("s2", &["u"]).with_instance_id(Some(s("i"))),
            E::UnreleasedInstanceId,
        ),
        (
            "static heartbeat from another member id",
            1,
            beat("s2", 1, &set(&[])).with_instance_id(Some(s("i"))),
            E::FencedInstanceId,
        ),
        (
            "static leave from another member id",
            1,
            leave("s2", -2).with_instance_id(Some(s("i"))),
            E::FencedInstanceId,
        ),
        (
            "static heartbeat of an unknown instance",
            1,
            beat("s", 1, &set(&[])).with_instance_id(Some(s("j"))),
            E::UnknownMemberId,
        ),
    ];
    for (name, v, req, expected) in cases {
        let mut h = setup();
        let epochs = (h.group().group_epoch(), h.group().member("a").unwrap().member_epoch);
        let r = h.hb_v(v, req);
        assert_eq!(r.error_code, expected.code(), "{name}: {r:?}");
        assert!(r.error_message.is_some(), "{name}: Kafka explains the error");
        assert_eq!(
            (h.group().group_epoch(), h.group().member("a").unwrap().member_epoch),
            epochs,
            "{name}: an error changes nothing"
        );
    }
}

#[test]
fn epoch_behind_other_than_the_previous_one_is_fenced() {
    let mut h = Harness::default();
    let (_, all) = h.joined("a", &["t"]);
    h.joined("b", &["t"]);
    let a_target = h.group().target_of("a");
    h.hb(beat("a", 1, &all));
    h.hb(beat("a", 1, &a_target)); // epoch 2
    h.joined("c", &["t"]); // group epoch 3
    let a_target = h.group().target_of("a");
    h.hb(beat("a", 2, &h.group().member("a").unwrap().assigned.clone()));
    h.hb(beat("a", 2, &a_target)); // epoch 3, previous 2
    assert_eq!(h.group().member("a").unwrap().member_epoch, 3);
    let r = h.hb(beat("a", 1, &a_target));
    assert_eq!(r.error_code, E::FencedMemberEpoch.code(), "epoch 1 is two behind");
    // The previous epoch with a partition it no longer has is fenced too.
    let r = h.hb(beat("a", 2, &set(&[("t", 0), ("t", 1), ("t", 2), ("t", 3), ("t", 4), ("t", 5)])));
    assert_eq!(r.error_code, E::FencedMemberEpoch.code());
}

#[test]
fn group_max_size_refuses_new_members_only() {
    let mut c = GroupCoordinator::new(groupsim_coordinator::CoordinatorConfig {
        consumer_group_max_size: 1,
        ..config()
    });
    c.set_topics(topics());
    let mut h = Harness::with(c);
    let (_, owned) = h.joined("a", &["t"]);
    let r = h.hb(join("b", &["t"]));
    assert_eq!(r.error_code, E::GroupMaxSizeReached.code());
    assert_eq!(h.hb(beat("a", 1, &owned)).error_code, 0, "a member already in is served");
}

#[test]
fn v0_join_without_member_id_gets_a_generated_one() {
    let mut h = Harness::default();
    let r = h.hb_v(0, join("", &["t"]));
    assert_eq!(r.error_code, 0);
    assert_eq!(r.member_id.as_deref(), Some("client-1"));
    assert_eq!(r.member_epoch, 1);
}

#[test]
fn load_and_not_coordinator_answers() {
    let log = OffsetsLog::new(1).shared();
    let c = GroupCoordinator::with_offsets_log(config(), log);
    let mut h = Harness::with(c);
    let r = h.hb(join("a", &["t"]));
    assert_eq!(r.error_code, E::NotCoordinator.code(), "partition not owned here");
    h.c.load_partition(0, 0, 1, 100);
    let r = h.hb(join("a", &["t"]));
    assert_eq!(r.error_code, E::CoordinatorLoadInProgress.code());
    h.advance(100);
    assert_eq!(h.hb(join("a", &["t"])).error_code, 0);
}

#[test]
/// A classic group whose members' subscriptions do not decode cannot be upgraded
/// (GROUP_ID_NOT_FOUND, as Kafka refuses a malformed embedded protocol), and a JoinGroup offering
/// no protocol is refused by a consumer group (INCONSISTENT_GROUP_PROTOCOL). The upgrade itself
/// and classic members are `consumer_group_migration.rs` and `consumer_group_classic_members.rs`.
fn malformed_classic_groups_and_protocol_less_joins_are_refused() {
    let mut h = Harness::default();
    let join_classic = kafka_protocol::messages::JoinGroupRequest::default()
        .with_group_id(GroupId(s(GROUP)))
        .with_member_id(s(""))
        .with_session_timeout_ms(10_000)
        .with_rebalance_timeout_ms(10_000)
        .with_protocol_type(s("consumer"))
        .with_protocols(vec![
            kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol::default()
                .with_name(s("range")),
        ]);
    h.send(3, join_classic); // v3: added at once (no MEMBER_ID_REQUIRED); no metadata at all
    let r = h.hb(join("a", &["t"]));
    assert_eq!(r.error_code, E::GroupIdNotFound.code());
    // A classic JoinGroup without protocols to a consumer group with members is refused.
    let mut h = Harness::default();
    h.joined("a", &["t"]);
    let classic = kafka_protocol::messages::JoinGroupRequest::default()
        .with_group_id(GroupId(s(GROUP)))
        .with_session_timeout_ms(10_000)
        .with_protocol_type(s("consumer"));
    let id = h.send(5, classic);
    match h.response(id) {
        Some(kafka_protocol::messages::ResponseKind::JoinGroup(r)) => {
            assert_eq!(r.error_code, E::InconsistentGroupProtocol.code())
        }
        other => panic!("{other:?}"),
    }
    let _ = TopicName(s("t"));
}

/// A refused heartbeat leaves the group as it was: an empty consumer group (every member left,
/// its epoch past 0) stays after a stranger's heartbeat is refused, as Kafka keeps it until its
/// offsets expire or it is deleted; and a refused heartbeat to a group id nobody uses creates
/// nothing.
#[test]
fn a_refused_heartbeat_neither_drops_an_empty_group_nor_creates_one() {
    let mut h = Harness::default();
    h.joined("a", &["t"]);
    h.hb(leave("a", -1));
    let g = h.c.consumer_group(GROUP).expect("the group outlives its last member");
    assert!(g.is_empty() && g.group_epoch() > 0);
    assert_ne!(h.hb(beat("stranger", 3, &Default::default())).error_code, 0);
    assert!(h.c.consumer_group(GROUP).is_some_and(|g| g.is_empty()));

    let other = beat("stranger", 3, &Default::default()).with_group_id(GroupId(s("nobody")));
    assert_ne!(h.hb(other).error_code, 0);
    assert!(h.c.consumer_group("nobody").is_none());
}
