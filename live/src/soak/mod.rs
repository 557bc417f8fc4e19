//! `groupsim soak`: `groupsim serve` run for minutes under a real kafka-python group and a stream
//! of short-lived loopback clients (valid requests, malformed frames, half-frames), its memory,
//! descriptors and answer latency sampled as it goes, then judged: resources flat after warm-up,
//! the real group's served history clean by the checker, every valid request answered in time
//! and every malformed frame answered by a close. See docs/serve.md, "Soak".
//!
//! - `frames`: the valid requests and the bad input the clients write;
//! - `clients`: the loopback clients and their counts;
//! - `processes`: the serve process and the kafka-python consumers;
//! - `sample`: what is read of the serve process;
//! - `judge`: the goals; `render`: the table and the SVG plot;
//! - `plan`: the arguments and the plan they make; `run`: the soak from start to verdict.

mod clients;
mod error;
mod frames;
mod judge;
mod plan;
mod processes;
mod render;
mod run;
mod sample;

pub use self::error::SoakError;
pub use self::judge::Goal;
pub use self::plan::{SoakArgs, SoakPlan, MAX_CONCURRENCY, MAX_MINUTES};
pub use self::run::{run, SoakReport};
pub use self::sample::Sample;
