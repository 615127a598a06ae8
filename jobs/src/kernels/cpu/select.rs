//! Keeping the best `k` hits per query without allocating per candidate.
//!
//! Each thread owns one [`Selector`]: per query a run of at most `k` slots
//! in one flat buffer. A candidate is first compared with the run's worst,
//! which rejects almost all of them in one comparison. The few that get in
//! are placed by insertion into a sorted run while `k` is small, as in
//! search (a few moves, no branches to mispredict); for a larger `k` the
//! run is a heap with the worst at the root, so that even a corpus offered
//! worst-first costs `log k` per candidate, not `k`.
//!
//! The order is total: a higher score first, equal scores by lower index,
//! and a NaN score (only possible from NaN or infinite input) ranks as
//! negative infinity, so the answer never depends on the order in which
//! threads or tiles offered the candidates.

use std::cmp::Ordering;

use super::dot::Sink;
use crate::kernels::Hit;

/// The largest `k` kept as a sorted run rather than a heap.
const SORTED_UP_TO: usize = 32;

/// The score a hit is ranked by.
#[inline]
fn rank(score: f32) -> f32 {
    if score.is_nan() { f32::NEG_INFINITY } else { score }
}

/// Whether hit `a` ranks before hit `b`.
#[inline]
fn ahead(a: Hit, b: Hit) -> bool {
    let (x, y) = (rank(a.score), rank(b.score));
    x > y || (x == y && a.index < b.index)
}

fn order(a: &Hit, b: &Hit) -> Ordering {
    if ahead(*a, *b) {
        Ordering::Less
    } else if ahead(*b, *a) {
        Ordering::Greater
    } else {
        Ordering::Equal
    }
}

/// The best `k` hits so far of each of `queries` queries.
#[derive(Debug)]
pub(crate) struct Selector {
    k: usize,
    lens: Vec<usize>,
    /// Per query, the rank of its worst kept hit once it holds `k`, and
    /// negative infinity before: any candidate ranked below is rejected.
    floors: Vec<f32>,
    slots: Vec<Hit>,
}

impl Selector {
    pub(crate) fn new(queries: usize, k: usize) -> Selector {
        Selector {
            k,
            lens: vec![0; queries],
            floors: vec![f32::NEG_INFINITY; queries],
            slots: vec![Hit { index: 0, score: 0.0 }; queries * k],
        }
    }

    /// Keeps the hit if it ranks among the best `k` of its query so far.
    fn insert(&mut self, query: usize, hit: Hit) {
        let (k, len) = (self.k, self.lens[query]);
        if k == 0 {
            return;
        }
        let run = &mut self.slots[query * k..(query + 1) * k];
        let sorted = k <= SORTED_UP_TO;
        let kept = if sorted { insert_sorted(run, len, hit) } else { insert_heap(run, len, hit) };
        if !kept {
            return;
        }
        let len = (len + 1).min(k);
        self.lens[query] = len;
        if len == k {
            self.floors[query] = rank(if sorted { run[k - 1] } else { run[0] }.score);
        }
    }

    fn hits(&self, query: usize) -> &[Hit] {
        &self.slots[query * self.k..query * self.k + self.lens[query]]
    }
}

/// Inserts into the sorted run `run[..len]`, dropping the last if full;
/// false if the hit does not get in.
fn insert_sorted(run: &mut [Hit], len: usize, hit: Hit) -> bool {
    if len == run.len() && !ahead(hit, run[len - 1]) {
        return false;
    }
    let mut slot = len.min(run.len() - 1);
    while slot > 0 && ahead(hit, run[slot - 1]) {
        run[slot] = run[slot - 1];
        slot -= 1;
    }
    run[slot] = hit;
    true
}

/// Inserts into the heap `run[..len]` (every slot ranks after or with its
/// children), replacing the root if full; false if the hit does not get in.
fn insert_heap(run: &mut [Hit], len: usize, hit: Hit) -> bool {
    if len < run.len() {
        run[len] = hit;
        let mut i = len;
        while i > 0 && ahead(run[(i - 1) / 2], run[i]) {
            run.swap((i - 1) / 2, i);
            i = (i - 1) / 2;
        }
        return true;
    }
    if !ahead(hit, run[0]) {
        return false;
    }
    run[0] = hit;
    let mut i = 0;
    loop {
        let (left, right) = (2 * i + 1, 2 * i + 2);
        if left >= len {
            return true;
        }
        let worse = if right < len && ahead(run[left], run[right]) { right } else { left };
        if !ahead(run[i], run[worse]) {
            return true;
        }
        run.swap(i, worse);
        i = worse;
    }
}

/// Turns dots into cosine scores, `(dot * inv_norm(query)) * inv_norm(row)`,
/// and offers them to a selector.
pub(crate) struct Scores<'a> {
    pub(crate) selector: Selector,
    pub(crate) query_inv: &'a [f32],
    pub(crate) row_inv: &'a [f32],
}

impl Sink for Scores<'_> {
    #[inline]
    fn take<const R: usize, const Q: usize>(&mut self, first_row: usize, first_query: usize, dots: &[[f32; Q]; R]) {
        let row_inv = &self.row_inv[first_row..first_row + R];
        for q in 0..Q {
            let query = first_query + q;
            let (inv, mut floor) = (self.query_inv[query], self.selector.floors[query]);
            for (r, dots) in dots.iter().enumerate() {
                let score = dots[q] * inv * row_inv[r];
                if score >= floor || score.is_nan() {
                    let index = (first_row + r) as u32;
                    self.selector.insert(query, Hit { index, score });
                    floor = self.selector.floors[query];
                }
            }
        }
    }
}

/// Each query's best `k` hits over all the selectors, best first.
pub(crate) fn merge(parts: &[Selector], queries: usize, k: usize) -> Vec<Vec<Hit>> {
    (0..queries)
        .map(|q| {
            let mut hits: Vec<Hit> = parts.iter().flat_map(|p| p.hits(q)).copied().collect();
            hits.sort_unstable_by(order);
            hits.truncate(k);
            hits
        })
        .collect()
}
