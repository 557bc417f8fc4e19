//! ListGroups, DescribeGroups and ConsumerGroupDescribe over both group types, as Kafka 4.0
//! answers them: ListGroups lists consumer groups with protocol type `consumer`, their KIP-848
//! state and type `consumer`, filtered by state (v4+) and type (v5+); DescribeGroups describes
//! only classic groups (a consumer group is Dead below v6, GROUP_ID_NOT_FOUND from v6);
//! ConsumerGroupDescribe refuses a classic group and tells classic members from consumer ones
//! (member type, v1+).

mod consumer_harness;

use consumer_harness::*;
use kafka_protocol::messages::*;

/// Consumer group `g` (member `a` on `t`, plus classic member `c`) and classic group `k`
/// (one member, still in its first join phase).
fn setup() -> Harness {
    let mut h = Harness::default();
    h.joined("a", &["t"]);
    let r = h.join_classic(5, classic_join("c", &["t"], &[], &["range"]));
    assert_eq!(r.error_code, 0);
    h.send(3, classic_join("", &["t"], &[], &["range"]).with_group_id(GroupId(s("k"))));
    h
}

/// ListGroups at `v` with filters: (group id, protocol type, state, type) per group.
fn list(h: &mut Harness, v: i16, states: &[&str], types: &[&str]) -> Vec<[String; 4]> {
    let req = ListGroupsRequest::default()
        .with_states_filter(states.iter().map(|x| s(x)).collect())
        .with_types_filter(types.iter().map(|x| s(x)).collect());
    let id = h.send(v, req);
    match h.response(id) {
        Some(ResponseKind::ListGroups(r)) => r
            .groups
            .iter()
            .map(|g| {
                [
                    g.group_id.to_string(),
                    g.protocol_type.to_string(),
                    g.group_state.to_string(),
                    g.group_type.to_string(),
                ]
            })
            .collect(),
        other => panic!("{other:?}"),
    }
}

fn row(id: &str, pt: &str, state: &str, kind: &str) -> [String; 4] {
    [id.to_string(), pt.to_string(), state.to_string(), kind.to_string()]
}

#[test]
fn list_groups_lists_both_types_sorted_and_filters_them() {
    let mut h = setup();
    let state = h.group().state().kafka_name();
    let both = vec![
        row(GROUP, "consumer", state, "consumer"),
        row("k", "consumer", "PreparingRebalance", "classic"),
    ];
    assert_eq!(list(&mut h, 5, &[], &[]), both);
    type Case = (&'static str, Vec<&'static str>, &'static [&'static str], Vec<&'static str>);
    let cases: Vec<Case> = vec![
        ("type consumer", vec![], &["consumer"], vec![GROUP]),
        ("type classic, any case", vec![], &["Classic"], vec!["k"]),
        ("unknown type", vec![], &["share"], vec![]),
        ("the consumer group's state", vec![state], &[], vec![GROUP]),
        ("state preparingrebalance", vec!["preparingrebalance"], &[], vec!["k"]),
        ("state and type disagree", vec!["preparingrebalance"], &["consumer"], vec![]),
    ];
    for (name, states, types, expected) in cases {
        let got: Vec<String> =
            list(&mut h, 5, &states, types).into_iter().map(|r| r[0].clone()).collect();
        assert_eq!(got, expected, "{name}");
    }
    // Below v5 there is no type; below v4 no state.
    assert_eq!(list(&mut h, 4, &[], &[])[0], row(GROUP, "consumer", state, ""));
    assert_eq!(list(&mut h, 3, &[], &[])[0], row(GROUP, "consumer", "", ""));
}

fn describe(h: &mut Harness, v: i16, ids: &[&str]) -> Vec<(String, String, i16, Option<String>)> {
    let req =
        DescribeGroupsRequest::default().with_groups(ids.iter().map(|i| GroupId(s(i))).collect());
    let id = h.send(v, req);
    match h.response(id) {
        Some(ResponseKind::DescribeGroups(r)) => r
            .groups
            .iter()
            .map(|g| {
                (
                    g.group_id.to_string(),
                    g.group_state.to_string(),
                    g.error_code,
                    g.error_message.as_ref().map(|m| m.to_string()),
                )
            })
            .collect(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn describe_groups_describes_only_classic_groups() {
    let mut h = setup();
    let nf = E::GroupIdNotFound.code();
    let dead = |id: &str| (id.to_string(), "Dead".to_string(), 0, None);
    assert_eq!(describe(&mut h, 5, &[GROUP, "none"]), vec![dead(GROUP), dead("none")]);
    assert_eq!(
        describe(&mut h, 6, &[GROUP, "none", "k"]),
        vec![
            (
                GROUP.into(),
                "Dead".into(),
                nf,
                Some(format!("Group {GROUP} is not a classic group."))
            ),
            ("none".into(), "Dead".into(), nf, Some("Group none not found.".into())),
            ("k".into(), "PreparingRebalance".into(), 0, None),
        ]
    );
}

#[test]
fn consumer_group_describe_refuses_classic_groups_and_types_members() {
    let mut h = setup();
    let req = ConsumerGroupDescribeRequest::default()
        .with_group_ids(vec![GroupId(s(GROUP)), GroupId(s("k"))]);
    let id = h.send(1, req);
    let Some(ResponseKind::ConsumerGroupDescribe(r)) = h.response(id) else { panic!() };
    let mut types: Vec<(String, i8)> =
        r.groups[0].members.iter().map(|m| (m.member_id.to_string(), m.member_type)).collect();
    types.sort();
    assert_eq!(types, vec![("a".to_string(), 1), ("c".to_string(), 0)]);
    assert_eq!(r.groups[1].error_code, E::GroupIdNotFound.code());
    assert_eq!(r.groups[1].error_message.as_deref(), Some("Group k is not a consumer group."));
}
