//! Scenario tests live in tests/.
