//! The Kafka wire layer. (Helper C fills in.)
