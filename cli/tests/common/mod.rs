//! Helpers shared by the integration tests. Each test binary compiles this module and uses only
//! part of it, hence the `dead_code` allowance.
#![allow(dead_code)]

pub mod real_clients;
