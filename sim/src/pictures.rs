//! Pictures of a run: a Mermaid sequence diagram of a chosen rebalance and an SVG (or an HTML
//! page embedding it) timeline. (Being written; see `groupsim trace --help`.)

use crate::checker::Verdict;
use crate::history::History;

/// Output formats of `groupsim trace`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// The canonical text trace (what the snapshots hold).
    Text,
    /// A Mermaid sequence diagram of one rebalance.
    Mermaid,
    /// An SVG timeline.
    Svg,
    /// An HTML page embedding the SVG timeline.
    Html,
}

/// A rendering problem (e.g. asking for a generation the run never reached).
#[derive(Debug, thiserror::Error)]
pub enum PictureError {
    /// The format is not available yet.
    #[error("the {0:?} format is not implemented yet")]
    NotImplemented(Format),
}

/// Renders a run in `format`. `generation` picks the rebalance for Mermaid (default: the first
/// one with more than one member).
pub fn render(format: Format, history: &History, verdict: &Verdict, generation: Option<i32>) -> Result<String, PictureError> {
    let _ = (verdict, generation);
    match format {
        Format::Text => Ok(crate::trace::text(history)),
        other => Err(PictureError::NotImplemented(other)),
    }
}
