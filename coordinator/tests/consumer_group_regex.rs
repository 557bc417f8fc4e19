//! Subscriptions by `SubscribedTopicRegex` (KIP-848, ConsumerGroupHeartbeat v1): the
//! coordinator matches the regex against the topics it knows and assigns the matching topics'
//! partitions; an empty regex is no regex (librdkafka sends `""` beside its topic names); a
//! changed regex bumps the group epoch; a regex that does not compile is refused with
//! INVALID_REGULAR_EXPRESSION and Kafka's message, and changes nothing.

mod consumer_harness;

use consumer_harness::*;
use kafka_protocol::messages::ConsumerGroupHeartbeatRequest;

/// A join subscribing by regex only (no topic names).
fn join_regex(member: &str, regex: &str) -> ConsumerGroupHeartbeatRequest {
    join(member, &[]).with_subscribed_topic_names(None).with_subscribed_topic_regex(Some(s(regex)))
}

fn all_of(topic: &str, n: i32) -> Vec<(&str, i32)> {
    (0..n).map(|p| (topic, p)).collect()
}

#[test]
fn a_regex_subscribes_the_topics_whose_whole_name_matches() {
    // (regex, expected assignment of a lone member) over topics t (6) and u (3).
    let cases: Vec<(&str, Vec<(&str, i32)>)> = vec![
        ("t|u", [all_of("t", 6), all_of("u", 3)].concat()),
        ("u.*", all_of("u", 3)),
        ("[tu]", [all_of("t", 6), all_of("u", 3)].concat()),
        ("tt", vec![]),
        ("", vec![]),
    ];
    for (regex, expected) in cases {
        let mut h = Harness::default();
        let r = h.hb(join_regex("a", regex));
        assert_eq!(r.error_code, 0, "{regex:?}: {r:?}");
        assert_eq!(h.assigned(&r), Some(set(&expected)), "{regex:?}");
    }
}

#[test]
fn an_empty_regex_beside_topic_names_is_no_regex() {
    let mut h = Harness::default();
    let r = h.hb(join("a", &["u"]).with_subscribed_topic_regex(Some(s(""))));
    assert_eq!(r.error_code, 0, "{r:?}");
    assert_eq!(h.assigned(&r), Some(set(&all_of("u", 3))));
    assert_eq!(h.group().member("a").unwrap().subscribed_topic_regex, None);
}

#[test]
fn names_and_regex_together_subscribe_both() {
    let mut h = Harness::default();
    let r = h.hb(join("a", &["u"]).with_subscribed_topic_regex(Some(s("t"))));
    assert_eq!(h.assigned(&r), Some(set(&[all_of("t", 6), all_of("u", 3)].concat())));
}

#[test]
fn a_changed_regex_bumps_the_group_epoch_and_moves_the_target() {
    let mut h = Harness::default();
    let r = h.hb(join_regex("a", "t"));
    let owned = h.assigned(&r).unwrap();
    let epoch = h.group().group_epoch();
    let r = h.hb(beat("a", r.member_epoch, &owned).with_subscribed_topic_regex(Some(s("u"))));
    assert_eq!(r.error_code, 0, "{r:?}");
    assert_eq!(h.group().group_epoch(), epoch + 1, "a new regex is a new subscription");
    assert_eq!(h.group().target_of("a"), set(&all_of("u", 3)));
    // The same regex again changes nothing.
    let epoch = h.group().group_epoch();
    let owned = h.group().member("a").unwrap().owned();
    h.hb(beat("a", h.group().member("a").unwrap().member_epoch, &owned)
        .with_subscribed_topic_regex(Some(s("u"))));
    assert_eq!(h.group().group_epoch(), epoch);
}

#[test]
fn a_regex_that_does_not_compile_is_refused_with_kafkas_message_and_changes_nothing() {
    let mut h = Harness::default();
    let (epoch, owned) = h.joined("a", &["t"]);
    let group_epoch = h.group().group_epoch();
    let r = h.hb(beat("a", epoch, &owned).with_subscribed_topic_regex(Some(s("t["))));
    assert_eq!(r.error_code, E::InvalidRegularExpression.code());
    let msg = r.error_message.as_deref().map(|m| m.to_string()).unwrap_or_default();
    assert!(
        msg.starts_with("SubscribedTopicRegex `t[` is not a valid regular expression"),
        "{msg}"
    );
    assert_eq!(h.group().group_epoch(), group_epoch);
    assert_eq!(h.group().member("a").unwrap().subscribed_topic_regex, None);
    // Before the regex is looked at, the member must be known (Kafka's order).
    let r = h.hb(beat("x", 1, &owned).with_subscribed_topic_regex(Some(s("t["))));
    assert_eq!(r.error_code, E::UnknownMemberId.code());
}

#[test]
fn a_join_with_neither_names_nor_regex_is_invalid() {
    let mut h = Harness::default();
    let r = h.hb(join("a", &[]).with_subscribed_topic_names(None));
    assert_eq!(r.error_code, E::InvalidRequest.code());
    let r = h.hb(join("a", &[]));
    assert_eq!(r.error_code, 0, "an empty list of names is a member subscribed to nothing");
}

#[test]
fn a_static_replacement_with_a_regex_that_does_not_compile_changes_nothing() {
    let mut h = Harness::default();
    let r = h.hb(join("s1", &["t"]).with_instance_id(Some(s("i"))));
    assert_eq!(r.error_code, 0);
    let r = h.hb(leave("s1", -2).with_instance_id(Some(s("i"))));
    assert_eq!(r.error_code, 0, "{r:?}");
    let bad =
        join("s2", &["t"]).with_instance_id(Some(s("i"))).with_subscribed_topic_regex(Some(s("(")));
    assert_eq!(h.hb(bad).error_code, E::InvalidRegularExpression.code());
    assert_eq!(h.group().static_member_id("i"), Some("s1"), "the member that left is not replaced");
    let good = join("s2", &["t"]).with_instance_id(Some(s("i")));
    assert_eq!(h.hb(good).error_code, 0);
    assert_eq!(h.group().static_member_id("i"), Some("s2"));
}
