//! Okapi BM25 over an in-memory corpus, for knowledge retrieval by topic.
//!
//! Parameters are Lucene's (k1 = 1.2, b = 0.75) with its non-negative idf,
//! `ln(1 + (N - df + 0.5) / (df + 0.5))`; tokens are the TF-IDF analyzer's,
//! so retrieval and the knowledge boundary see the same words.

use std::collections::HashMap;

use crate::agent::tfidf::tokenize;

const K1: f64 = 1.2;
const B: f64 = 0.75;

/// An inverted index with document lengths.
#[derive(Debug, Clone, Default)]
pub struct Bm25 {
    postings: HashMap<String, Vec<(usize, u32)>>,
    lengths: Vec<u32>,
    average: f64,
}

impl Bm25 {
    pub fn new(docs: impl IntoIterator<Item = String>) -> Bm25 {
        let mut postings: HashMap<String, Vec<(usize, u32)>> = HashMap::new();
        let mut lengths = Vec::new();
        for (d, doc) in docs.into_iter().enumerate() {
            let tokens = tokenize(&doc);
            lengths.push(tokens.len() as u32);
            let mut tf: HashMap<String, u32> = HashMap::new();
            tokens.into_iter().for_each(|t| *tf.entry(t).or_default() += 1);
            for (t, n) in tf {
                postings.entry(t).or_default().push((d, n));
            }
        }
        let average = if lengths.is_empty() { 0.0 } else { lengths.iter().map(|l| f64::from(*l)).sum::<f64>() / lengths.len() as f64 };
        Bm25 { postings, lengths, average }
    }

    /// The `k` best (document, score) pairs with a positive score, best
    /// first; ties go to the earlier document.
    pub fn search(&self, query: &str, k: usize) -> Vec<(usize, f64)> {
        let n = self.lengths.len() as f64;
        let mut terms = tokenize(query);
        terms.sort_unstable();
        terms.dedup();
        let mut scores: HashMap<usize, f64> = HashMap::new();
        for t in terms {
            let Some(list) = self.postings.get(&t) else { continue };
            let df = list.len() as f64;
            let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
            for (d, tf) in list {
                let tf = f64::from(*tf);
                let norm = K1 * (1.0 - B + B * f64::from(self.lengths[*d]) / self.average.max(f64::MIN_POSITIVE));
                *scores.entry(*d).or_default() += idf * tf * (K1 + 1.0) / (tf + norm);
            }
        }
        let mut ranked: Vec<(usize, f64)> = scores.into_iter().filter(|(_, s)| *s > 0.0).collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        ranked.truncate(k);
        ranked
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bm25_scores_match_the_formula() {
        let idx = Bm25::new(["cat sat mat".to_string(), "dog sat".to_string(), "bird".to_string()]);
        let got = idx.search("cat", 5);
        // N = 3, df = 1: idf = ln(1 + 2.5/1.5); |d| = 3, avg = 2.
        let idf = (1.0f64 + 2.5 / 1.5).ln();
        let want = idf * 2.2 / (1.0 + 1.2 * (0.25 + 0.75 * 1.5));
        assert_eq!(got.len(), 1);
        assert!((got[0].1 - want).abs() < 1e-12, "{got:?} vs {want}");
        assert_eq!(idx.search("sat", 5).iter().map(|x| x.0).collect::<Vec<_>>(), [1, 0], "the shorter document first");
        assert!(idx.search("fish", 5).is_empty());
    }
}
