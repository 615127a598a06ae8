//! TF-IDF exactly as scikit-learn's default `TfidfVectorizer()`, which the
//! paper's knowledge boundary (T_k) and post de-duplication (T_p) use.
//!
//! The defaults, copied: lowercase; tokens are the matches of
//! `(?u)\b\w\w+\b` (runs of two or more word characters, no stop words);
//! raw counts; `idf(t) = ln((1 + n) / (1 + df(t))) + 1` (smooth idf); every
//! row L2-normalised, so a cosine is a dot product. The vectorizer is fit on
//! the documents being compared, as the authors' SimOAP code does, so a
//! term's weight depends on that small corpus.
//!
//! Python's `\w` is a Unicode letter (categories L*), a number (N*) or `_`;
//! `[\p{L}\p{N}_]` is the same class. One difference: scikit-learn raises
//! on a corpus with no tokens at all; here such documents get zero vectors
//! and similarity 0.

use std::collections::HashMap;
use std::sync::OnceLock;

use regex::Regex;

fn word_runs() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    // The class is a literal constant; it always compiles.
    RE.get_or_init(|| Regex::new(r"[\p{L}\p{N}_]+").unwrap_or_else(|e| panic!("word pattern: {e}")))
}

/// scikit-learn's default analyzer: lowercased runs of 2+ word characters.
pub fn tokenize(text: &str) -> Vec<String> {
    let lower = text.to_lowercase();
    word_runs().find_iter(&lower).filter(|m| m.as_str().chars().nth(1).is_some()).map(|m| m.as_str().to_string()).collect()
}

/// A sparse L2-normalised row: (term index, weight), sorted by index.
pub type SparseRow = Vec<(usize, f64)>;

/// A vectorizer fit on a corpus.
#[derive(Debug, Clone, Default)]
pub struct TfIdf {
    vocabulary: HashMap<String, usize>,
    idf: Vec<f64>,
}

impl TfIdf {
    /// Learns the vocabulary and the smoothed idf of `docs`.
    pub fn fit<S: AsRef<str>>(docs: &[S]) -> TfIdf {
        let mut vocabulary = HashMap::new();
        let mut df: Vec<u64> = Vec::new();
        for doc in docs {
            let mut terms = tokenize(doc.as_ref());
            terms.sort_unstable();
            terms.dedup();
            for t in terms {
                let next = vocabulary.len();
                let i = *vocabulary.entry(t).or_insert(next);
                if i == df.len() {
                    df.push(0);
                }
                df[i] += 1;
            }
        }
        let n = docs.len() as f64;
        let idf = df.iter().map(|d| ((1.0 + n) / (1.0 + *d as f64)).ln() + 1.0).collect();
        TfIdf { vocabulary, idf }
    }

    /// The normalised tf-idf row of a document (unknown terms are ignored).
    pub fn transform(&self, doc: &str) -> SparseRow {
        let mut counts: HashMap<usize, f64> = HashMap::new();
        for t in tokenize(doc) {
            if let Some(i) = self.vocabulary.get(&t) {
                *counts.entry(*i).or_default() += 1.0;
            }
        }
        let mut row: SparseRow = counts.into_iter().map(|(i, c)| (i, c * self.idf[i])).collect();
        row.sort_unstable_by_key(|(i, _)| *i);
        let norm = row.iter().map(|(_, w)| w * w).sum::<f64>().sqrt();
        if norm > 0.0 {
            row.iter_mut().for_each(|(_, w)| *w /= norm);
        }
        row
    }
}

/// The dot product of two normalised rows: their cosine.
pub fn dot(a: &SparseRow, b: &SparseRow) -> f64 {
    let (mut i, mut j, mut sum) = (0, 0, 0.0);
    while i < a.len() && j < b.len() {
        match a[i].0.cmp(&b[j].0) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                sum += a[i].1 * b[j].1;
                i += 1;
                j += 1;
            }
        }
    }
    sum
}

/// `cosine_similarity(TfidfVectorizer().fit_transform(docs))`: the pairwise
/// similarity matrix of documents fit together.
pub fn similarity_matrix<S: AsRef<str>>(docs: &[S]) -> Vec<Vec<f64>> {
    let v = TfIdf::fit(docs);
    let rows: Vec<SparseRow> = docs.iter().map(|d| v.transform(d.as_ref())).collect();
    rows.iter().map(|a| rows.iter().map(|b| dot(a, b)).collect()).collect()
}

/// The similarity of two texts, fit on just the two.
pub fn similarity(a: &str, b: &str) -> f64 {
    let v = TfIdf::fit(&[a, b]);
    dot(&v.transform(a), &v.transform(b))
}

/// The similarity of `query` to each of `docs`, fit on all of them together.
pub fn similarities_to<S: AsRef<str>>(query: &str, docs: &[S]) -> Vec<f64> {
    let mut corpus: Vec<&str> = vec![query];
    corpus.extend(docs.iter().map(|d| d.as_ref()));
    let v = TfIdf::fit(&corpus);
    let q = v.transform(query);
    docs.iter().map(|d| dot(&q, &v.transform(d.as_ref()))).collect()
}

/// A text's token counts, log-scaled (`1 + ln tf`), hashed (FNV-1a) into
/// `dim` dimensions and L2-normalised: a dense vector without a model, for
/// a ranker that needs one when a run uses no embedder. Its cosine is close
/// to a TF cosine without idf; collisions add noise that falls with `dim`.
pub fn hashed_vector(text: &str, dim: usize) -> Vec<f32> {
    // Ordered, so a bucket sums its tokens in the same order every time.
    let mut counts: std::collections::BTreeMap<String, u32> = std::collections::BTreeMap::new();
    for t in tokenize(text) {
        *counts.entry(t).or_default() += 1;
    }
    let mut v = vec![0f32; dim.max(1)];
    for (token, n) in counts {
        let h = token.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
        let bucket = (h % v.len() as u64) as usize;
        v[bucket] += 1.0 + (n as f32).ln();
    }
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round6(x: f64) -> f64 {
        (x * 1e6).round() / 1e6
    }

    /// The reference doc's golden values (scikit-learn 1.9.1). The doc elides
    /// the ends of two texts; these are the completions that reproduce its
    /// values (a third text that shares no term with the first two does not
    /// change their similarity).
    #[test]
    fn cosines_match_the_scikit_learn_golden_values() {
        let nurse = "I am a nurse who loves hiking and mountain photography.";
        let matterhorn = "The Matterhorn is a mountain of the Alps, straddling the border between Switzerland and Italy.";
        assert_eq!(round6(similarity(nurse, matterhorn)), 0.087687);
        let run = "Just finished a 10km run in the rain, feeling great!";
        let again = "Just finished a 10km run in the rain and feeling great today!";
        assert_eq!(round6(similarity(run, again)), 0.833634);
        let m = similarity_matrix(&[
            "Scott Derrickson is an American director, screenwriter and producer.",
            "I am a film director who writes horror screenplays.",
            "I like cooking pasta on weekends.",
        ]);
        assert_eq!(m[0].iter().map(|x| round6(*x)).collect::<Vec<_>>(), [1.0, 0.076995, 0.0]);
        assert_eq!(round6(similarities_to(run, &[again])[0]), 0.833634);
    }

    #[test]
    fn tokens_follow_the_default_pattern() {
        assert_eq!(
            tokenize("I am a 10km-runner, don't_stop! Ünïcode 東京 x"),
            ["am", "10km", "runner", "don", "t_stop", "ünïcode", "東京"]
        );
        assert_eq!(similarity("a b c", "d e"), 0.0);
        assert!((similarity("same words here", "same words here") - 1.0).abs() < 1e-12);
    }

    #[test]
    fn hashed_vectors_are_unit_length_deterministic_and_compare_words() {
        let a = hashed_vector("Bread and baking bread", 512);
        assert_eq!(a, hashed_vector("bread baking and BREAD", 512), "order and case do not matter");
        assert!((a.iter().map(|x| x * x).sum::<f32>() - 1.0).abs() < 1e-6);
        let cos = |x: &[f32], y: &[f32]| x.iter().zip(y).map(|(a, b)| a * b).sum::<f32>();
        let near = cos(&a, &hashed_vector("baking bread at home", 512));
        let far = cos(&a, &hashed_vector("chess openings for beginners", 512));
        assert!(near > 0.5 && far.abs() < 1e-6, "near {near}, far {far}");
        assert_eq!(hashed_vector("", 8), vec![0.0; 8], "no token, a zero vector");
    }
}
