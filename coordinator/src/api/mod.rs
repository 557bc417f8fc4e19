//! One module per Kafka API: the rules for answering it, with the reason for each rule.
