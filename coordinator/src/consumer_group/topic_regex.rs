//! A member's `SubscribedTopicRegex` (KIP-848, ConsumerGroupHeartbeat v1): the coordinator, not
//! the client, matches the pattern against the cluster's topics, and the matching topics join
//! the member's subscription.
//!
//! Kafka compiles the pattern with RE2/J (`com.google.re2j.Pattern`) when a member brings a
//! regex the group does not have yet, answering INVALID_REGULAR_EXPRESSION if it does not
//! compile, and a topic is subscribed when the whole name matches (`matcher(topic).matches()`).
//! We compile with regex-automata, another RE2-family engine with the same syntax for what
//! topic names can hold (no backreferences or lookaround in either); Unicode classes are off, so
//! `\w`, `\d`, `\s` and `\b` are ASCII as in RE2/J.
//!
//! Kafka resolves a group's regexes asynchronously (at most every 10 s, and when a member
//! brings a new one) and bumps the group epoch when a resolution changes the subscribed topics;
//! we resolve at every heartbeat, so a member's subscription follows its regex at once. An empty
//! regex means none (librdkafka sends `""` when it subscribes by name only).

use std::collections::BTreeSet;

use regex_automata::meta::Regex;
use regex_automata::util::syntax;

use crate::topics::TopicsImage;

/// A compiled `SubscribedTopicRegex`.
#[derive(Clone, Debug)]
pub struct TopicRegex {
    anchored: Regex,
}

impl TopicRegex {
    /// Compiles `pattern`, or Kafka's message for INVALID_REGULAR_EXPRESSION.
    pub fn compile(pattern: &str) -> Result<Self, String> {
        // Compiled alone first, so a pattern that would only parse inside the anchoring group
        // (e.g. an unbalanced ")(") is refused as RE2/J refuses it.
        let build = |p: &str| {
            Regex::builder()
                .syntax(syntax::Config::new().unicode(false).utf8(false))
                .build(p)
                .map_err(|e| {
                    format!(
                        "SubscribedTopicRegex `{pattern}` is not a valid regular expression: {e}."
                    )
                })
        };
        build(pattern)?;
        Ok(Self { anchored: build(&format!("^(?:{pattern})$"))? })
    }

    /// Whether the whole of `topic` matches.
    pub fn matches(&self, topic: &str) -> bool {
        self.anchored.is_match(topic.as_bytes())
    }
}

/// The topics of `topics` whose whole name matches `pattern` (none if it does not compile:
/// a stored pattern was checked when the member brought it).
pub fn matching_topics(pattern: &str, topics: &TopicsImage) -> BTreeSet<String> {
    let Ok(regex) = TopicRegex::compile(pattern) else { return BTreeSet::new() };
    topics.names().filter(|t| regex.matches(t)).map(str::to_string).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_topic_is_subscribed_only_when_its_whole_name_matches() {
        let image = TopicsImage::new([("orders", 3), ("orders-eu", 2), ("audit", 1)]);
        let cases = [
            ("orders.*", vec!["orders", "orders-eu"]),
            ("orders", vec!["orders"]),
            ("rders", vec![]),
            ("^audit$", vec!["audit"]),
            ("a.*|orders", vec!["audit", "orders"]),
            (r"\w+-\w+", vec!["orders-eu"]),
        ];
        for (pattern, expected) in cases {
            let got: Vec<String> = matching_topics(pattern, &image).into_iter().collect();
            assert_eq!(got, expected, "{pattern}");
        }
    }

    #[test]
    fn a_pattern_that_does_not_compile_gets_kafkas_message() {
        for bad in ["(", "orders[", ")(", "a{2,1}"] {
            let e = TopicRegex::compile(bad).unwrap_err();
            assert!(
                e.starts_with(&format!("SubscribedTopicRegex `{bad}` is not a valid regular")),
                "{e}"
            );
        }
    }
}
