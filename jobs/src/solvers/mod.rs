//! Solvers that use no LLM: they read what the tools show (a user's posts,
//! the post a query embeds, the knowledge base) and answer the label tasks.
//!
//! The cheats ([`cheats`]) count surface features an evaluator would try
//! first; a world where they beat random and majority by much gives its
//! answers away. The synthetic world's oracle ([`oracle`]) reads the
//! same text with the generator's own likelihood model, showing the answer
//! is in the data. `some report` prints both beside random and majority.

pub mod cheats;
pub mod oracle;

use std::collections::{BTreeMap, HashMap};

use some_schemas::{QueryRow, Task};

use crate::scorers::baselines::baselines;

/// What the tools show, gathered once for all queries.
#[derive(Debug, Default)]
pub struct Sources {
    /// The text of each post a user-task query embeds, by post id.
    pub posts: HashMap<String, String>,
    /// Each user's posts' text, as `user_search` lists them.
    pub histories: HashMap<String, Vec<String>>,
    /// The knowledge base, in `doc_index` order.
    pub knowledge: Vec<String>,
    retriever: std::sync::OnceLock<Retriever>,
}

impl Sources {
    pub fn new(posts: HashMap<String, String>, histories: HashMap<String, Vec<String>>, knowledge: Vec<String>) -> Sources {
        Sources { posts, histories, knowledge, retriever: Default::default() }
    }

    /// The text of a referenced post from its `ref_posts` JSON (its 内容).
    pub fn post_text(json: &str) -> String {
        serde_json::from_str::<serde_json::Value>(json)
            .ok()
            .and_then(|v| v.get("内容").and_then(|c| c.as_str()).map(str::to_string))
            .unwrap_or_else(|| json.to_string())
    }

    pub fn post(&self, q: &QueryRow) -> Option<&str> {
        self.posts.get(q.post_id.as_deref()?).map(String::as_str)
    }

    pub fn history(&self, q: &QueryRow) -> &[String] {
        q.uid.as_deref().and_then(|u| self.histories.get(u)).map_or(&[], Vec::as_slice)
    }

    /// The `k` knowledge documents sharing the most (idf-weighted) words
    /// with `text`, best first: what a retrieval tool would return.
    pub fn retrieve(&self, text: &str, k: usize) -> Vec<&str> {
        let retriever = self.retriever.get_or_init(|| Retriever::new(&self.knowledge));
        retriever.top(text, k).into_iter().map(|i| self.knowledge[i].as_str()).collect()
    }
}

/// A solver's answer to one query.
#[derive(Debug, Clone, PartialEq)]
pub enum Guess {
    /// A label of the task.
    Label(String),
    /// A yes/no task's evidence for "是"; the evaluation picks the best
    /// threshold and direction over the task, so the figure is the most
    /// the score can give.
    Score(f64),
    /// Nothing to go on: counted as the task's majority label.
    Abstain,
}

pub trait Solver: Sync {
    fn name(&self) -> &'static str;
    fn tasks(&self) -> &'static [Task];
    fn guess(&self, query: &QueryRow, sources: &Sources) -> Guess;
}

/// One solver's accuracy on one task, in percent.
#[derive(Debug, Clone, PartialEq)]
pub struct SolverScore {
    pub solver: String,
    pub task: Task,
    pub queries: usize,
    pub score: f64,
}

/// Runs `solvers` over the labelled queries of their tasks.
pub fn evaluate(solvers: &[&dyn Solver], queries: &[QueryRow], sources: &Sources) -> Vec<SolverScore> {
    let mut out = Vec::new();
    for solver in solvers {
        for &task in solver.tasks() {
            let labelled: Vec<(&QueryRow, &str)> =
                queries.iter().filter(|q| q.task == task).filter_map(|q| Some((q, q.label.as_deref()?))).collect();
            let Some(baseline) = baselines(task, labelled.iter().map(|(_, l)| *l)) else { continue };
            let guesses: Vec<Guess> = labelled.iter().map(|(q, _)| solver.guess(q, sources)).collect();
            let labels: Vec<&str> = labelled.iter().map(|(_, l)| *l).collect();
            let correct = accuracy(&guesses, &labels, &baseline.majority_label);
            out.push(SolverScore {
                solver: solver.name().to_string(),
                task,
                queries: labels.len(),
                score: 100.0 * correct as f64 / labels.len() as f64,
            });
        }
    }
    out
}

/// Correct answers: labels as given, abstentions as the majority label,
/// scores under the best threshold and direction.
fn accuracy(guesses: &[Guess], labels: &[&str], majority: &str) -> usize {
    let mut fixed = 0;
    let mut scored: Vec<(f64, bool)> = Vec::new();
    for (g, label) in guesses.iter().zip(labels) {
        match g {
            Guess::Label(l) => fixed += usize::from(l == label),
            Guess::Abstain => fixed += usize::from(*label == majority),
            Guess::Score(s) => scored.push((*s, *label == "是")),
        }
    }
    fixed + best_split(&mut scored)
}

/// The most items a threshold on the score classifies right, either way round.
fn best_split(scored: &mut [(f64, bool)]) -> usize {
    if scored.is_empty() {
        return 0;
    }
    scored.sort_by(|a, b| a.0.total_cmp(&b.0));
    let positives = scored.iter().filter(|s| s.1).count();
    let n = scored.len();
    // Threshold after i items: "是" above. Only between distinct scores.
    let (mut below_pos, mut best) = (0, positives.max(n - positives));
    for i in 0..n {
        below_pos += usize::from(scored[i].1);
        if i + 1 < n && scored[i].0 == scored[i + 1].0 {
            continue;
        }
        let below = i + 1;
        let above_pos = positives - below_pos;
        let up = (below - below_pos) + above_pos;
        best = best.max(up).max(n - up);
    }
    best
}

/// The index of the one highest count, if it is above zero and not tied.
pub fn sole_winner(votes: &[usize]) -> Option<usize> {
    let best = *votes.iter().max()?;
    (best > 0 && votes.iter().filter(|v| **v == best).count() == 1).then(|| votes.iter().position(|v| *v == best))?
}

/// "是" or "否" by which side has more evidence; nothing on a tie.
pub fn yes_no(yes: usize, no: usize) -> Option<&'static str> {
    sole_winner(&[yes, no]).map(|i| ["是", "否"][i])
}

/// Scores by solver and task, for a report.
pub fn by_solver(scores: &[SolverScore]) -> BTreeMap<&str, BTreeMap<Task, f64>> {
    let mut out: BTreeMap<&str, BTreeMap<Task, f64>> = BTreeMap::new();
    for s in scores {
        out.entry(s.solver.as_str()).or_default().insert(s.task, s.score);
    }
    out
}

/// An idf-weighted word-overlap index of English documents.
#[derive(Debug)]
struct Retriever {
    postings: HashMap<String, Vec<usize>>,
    docs: usize,
}

fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric()).filter(|w| w.len() > 2).map(str::to_lowercase)
}

impl Retriever {
    fn new(docs: &[String]) -> Retriever {
        let mut postings: HashMap<String, Vec<usize>> = HashMap::new();
        for (i, d) in docs.iter().enumerate() {
            let mut seen: Vec<String> = words(d).collect();
            seen.sort();
            seen.dedup();
            for w in seen {
                postings.entry(w).or_default().push(i);
            }
        }
        Retriever { postings, docs: docs.len() }
    }

    fn top(&self, text: &str, k: usize) -> Vec<usize> {
        let mut query: Vec<String> = words(text).collect();
        query.sort();
        query.dedup();
        let mut scores: HashMap<usize, f64> = HashMap::new();
        for w in &query {
            let Some(docs) = self.postings.get(w) else { continue };
            // In a large base, words in more than one document in twenty say little and cost most.
            if self.docs >= 1000 && docs.len() * 20 > self.docs {
                continue;
            }
            let idf = (self.docs as f64 / docs.len() as f64).ln();
            for d in docs {
                *scores.entry(*d).or_default() += idf;
            }
        }
        let mut ranked: Vec<(usize, f64)> = scores.into_iter().collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        ranked.into_iter().take(k).map(|(d, _)| d).collect()
    }
}

#[cfg(test)]
mod world_tests;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_best_split_takes_either_direction() {
        let mut s = vec![(0.1, false), (0.2, false), (0.9, true), (0.8, true)];
        assert_eq!(best_split(&mut s), 4);
        let mut s = vec![(0.1, true), (0.2, true), (0.9, false), (0.8, false)];
        assert_eq!(best_split(&mut s), 4);
        // Tied scores cannot be split.
        let mut s = vec![(0.5, true), (0.5, false), (0.5, true), (0.5, false)];
        assert_eq!(best_split(&mut s), 2);
    }

    #[test]
    fn retrieval_ranks_by_shared_rare_words() {
        let docs = vec!["the wall on the border".to_string(), "the budget of the state".into(), "the border wall takes years".into()];
        let s = Sources::new(HashMap::new(), HashMap::new(), docs);
        assert_eq!(s.retrieve("border wall years", 2), vec!["the border wall takes years", "the wall on the border"]);
    }
}
