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
        // The common case first: offsets read on from the last range, or past it.
        match self.ranges.last_mut() {
            Some(last) if last.0 <= start && start <= last.1 => {
                last.1 = last.1.max(end);
                return;
            }
            Some(last) if start > last.1 => {
                self.ranges.push((start, end));
                return;
            }
            None => {
                self.ranges.push((start, end));
                return;
            }
            Some(_) => {}
        }
        self.ranges.push((start, end));
        self.ranges.sort_unstable();
        let mut kept = 0;
        for i in 0..self.ranges.len() {
            let (s, e) = self.ranges[i];
            if kept > 0 && s <= self.ranges[kept - 1].1 {
                self.ranges[kept - 1].1 = self.ranges[kept - 1].1.max(e);
            } else {
                self.ranges[kept] = (s, e);
                kept += 1;
            }
        }
        self.ranges.truncate(kept);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `insert` must keep: the sorted, disjoint, non-touching ranges covering the union.
    fn normalised(mut ranges: Vec<(i64, i64)>) -> Vec<(i64, i64)> {
        ranges.retain(|(s, e)| s < e);
        ranges.sort_unstable();
        let mut out: Vec<(i64, i64)> = Vec::new();
        for (s, e) in ranges {
            match out.last_mut() {
                Some(last) if s <= last.1 => last.1 = last.1.max(e),
                _ => out.push((s, e)),
            }
        }
        out
    }

    /// Inserting ranges in any order, adjacent, overlapping, inside, before or after the others,
    /// keeps exactly the normalised union of what was inserted.
    #[test]
    fn insert_keeps_the_normalised_union() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = |below: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % below) as i64
        };
        for _ in 0..500 {
            let mut set = RangeSet::default();
            let mut inserted = Vec::new();
            for _ in 0..next(12) + 1 {
                let start = next(60);
                let end = start + next(12) - 2;
                set.insert(start, end);
                inserted.push((start, end));
                assert_eq!(set.ranges, normalised(inserted.clone()), "after {inserted:?}");
            }
        }
    }
}
