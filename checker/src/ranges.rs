//! Sets of record offsets, for what was processed and what commits covered.

/// Half-open offset ranges `[start, end)`, kept sorted and disjoint.
#[derive(Clone, Debug, Default)]
pub(super) struct RangeSet {
    ranges: Vec<(i64, i64)>,
}

impl RangeSet {
    /// Number of offsets of `[start, end)` already in the set.
    pub(super) fn overlap(&self, start: i64, end: i64) -> i64 {
        self.ranges.iter().map(|&(s, e)| (e.min(end) - s.max(start)).max(0)).sum()
    }

    /// The first sub-range of `[start, end)` not in the set.
    pub(super) fn first_gap(&self, start: i64, end: i64) -> Option<(i64, i64)> {
        let mut cursor = start;
        for &(s, e) in &self.ranges {
            if e <= cursor {
                continue;
            }
            if s > cursor {
                return Some((cursor, s.min(end)));
            }
            cursor = e;
            if cursor >= end {
                return None;
            }
        }
        (cursor < end).then_some((cursor, end))
    }

    /// Adds `[start, end)`.
    pub(super) fn insert(&mut self, start: i64, end: i64) {
        if start >= end {
            return;
        }
        self.ranges.push((start, end));
        self.ranges.sort_unstable();
        let mut merged: Vec<(i64, i64)> = Vec::with_capacity(self.ranges.len());
        for &(s, e) in &self.ranges {
            match merged.last_mut() {
                Some(last) if s <= last.1 => last.1 = last.1.max(e),
                _ => merged.push((s, e)),
            }
        }
        self.ranges = merged;
    }
}
