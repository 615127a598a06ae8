//! The knowledge boundary: a passage store, retrieval by topic, and the
//! TF-IDF filters of the paper.
//!
//! - [`PassageStore`] holds paragraphs: HotpotQA's `context` paragraphs
//!   ([`load_hotpotqa`]), a JSONL passage file or the built-in WordNet
//!   corpus ([`crate::agent::passages`]), or the lake's knowledge reports
//!   ([`PassageStore::from_knowledge`]: misinformation fact-checks, not the
//!   general knowledge the paper retrieves), searched with BM25 (the paper
//!   uses ColBERT; BM25 is the stand-in the reference doc suggests, and a
//!   dense retriever can replace it behind the same store).
//! - [`KnowledgeSettings::adopt`]: a retrieved passage is used only if its
//!   TF-IDF cosine with the persona's "knowledge" item is greater than
//!   T_k = 0.25 ("greater than", as the paper words it).
//! - [`KnowledgeSettings::duplicate_of`]: a new post whose TF-IDF cosine
//!   with one of the agent's earlier posts is greater than T_p = 0.80 is a
//!   duplicate.
//!
//! Fitting policy (the paper is silent): the boundary fits each comparison
//! on the passage and the knowledge item alone, as the authors' SimOAP code
//! fits per comparison; the de-duplication fits jointly on the new post and
//! all earlier posts (the reference doc's inference). Both are settings.

use std::collections::HashSet;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::bm25::Bm25;
use crate::agent::tfidf;
use some_jobs::error::InputError;

/// One paragraph of knowledge.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Passage {
    /// Position in the store.
    pub id: u32,
    pub title: String,
    pub text: String,
}

/// Passages with a BM25 index over title and text.
#[derive(Debug, Clone, Default)]
pub struct PassageStore {
    passages: Vec<Passage>,
    index: Bm25,
}

impl PassageStore {
    pub fn new(items: Vec<(String, String)>) -> PassageStore {
        let passages: Vec<Passage> =
            items.into_iter().enumerate().map(|(i, (title, text))| Passage { id: i as u32, title, text }).collect();
        let index = Bm25::new(passages.iter().map(|p| format!("{} {}", p.title, p.text)));
        PassageStore { passages, index }
    }

    /// The lake's knowledge reports, titled by link.
    pub fn from_knowledge(rows: &[some_schemas::KnowledgeRow]) -> PassageStore {
        PassageStore::new(
            rows.iter().map(|r| (r.link.clone().unwrap_or_else(|| format!("report {}", r.doc_index)), r.content.clone())).collect(),
        )
    }

    pub fn len(&self) -> usize {
        self.passages.len()
    }
    pub fn is_empty(&self) -> bool {
        self.passages.is_empty()
    }
    pub fn get(&self, id: u32) -> Option<&Passage> {
        self.passages.get(id as usize)
    }

    /// The `k` passages most relevant to `topic`, best first.
    pub fn search(&self, topic: &str, k: usize) -> Vec<&Passage> {
        self.index.search(topic, k).into_iter().filter_map(|(i, _)| self.passages.get(i)).collect()
    }
}

const HOTPOT_KEYS: [&str; 7] = ["_id", "question", "answer", "type", "level", "supporting_facts", "context"];

/// Reads a HotpotQA JSON file (a list of questions; distractor, fullwiki or
/// test format) into its distinct `context` paragraphs, first seen first.
/// A paragraph is its sentences joined by nothing, as HotpotQA's sentences
/// keep their leading spaces.
pub fn load_hotpotqa(path: &Path) -> Result<PassageStore, InputError> {
    let value = some_jobs::json::read_json(path)?;
    let list = value
        .as_array()
        .ok_or_else(|| InputError::new(path, "", format!("expected a list of questions, found {}", some_jobs::json::type_name(&value))))?;
    let mut seen: HashSet<String> = HashSet::new();
    let mut items = Vec::new();
    for (i, q) in list.iter().enumerate() {
        let obj = q.as_object().ok_or_else(|| InputError::new(path, format!("[{i}]"), "expected an object"))?;
        if let Some(k) = obj.keys().find(|k| !HOTPOT_KEYS.contains(&k.as_str())) {
            return Err(InputError::new(path, format!("[{i}]"), format!("unknown key {k:?}")));
        }
        let context = obj
            .get("context")
            .and_then(|c| c.as_array())
            .ok_or_else(|| InputError::new(path, format!("[{i}].context"), "missing or not a list"))?;
        for (j, para) in context.iter().enumerate() {
            let at = format!("[{i}].context[{j}]");
            let bad = || InputError::new(path, &at, "expected [title, [sentence, ...]]");
            let pair = para.as_array().filter(|p| p.len() == 2).ok_or_else(bad)?;
            let title = pair[0].as_str().ok_or_else(bad)?;
            let sentences = pair[1].as_array().ok_or_else(bad)?;
            let text: String = sentences.iter().map(|s| s.as_str().ok_or_else(bad)).collect::<Result<Vec<_>, _>>()?.concat();
            if seen.insert(title.to_string()) {
                items.push((title.to_string(), text.trim().to_string()));
            }
        }
    }
    Ok(PassageStore::new(items))
}

/// How a TF-IDF comparison of one text against several is fit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Fit {
    /// One vectorizer per pair.
    Pairwise,
    /// One vectorizer on the text and all the others together.
    Joint,
}

/// The knowledge boundary's thresholds and policies.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KnowledgeSettings {
    /// T_k: adopt a passage only above this similarity to the persona's knowledge.
    pub adoption_threshold: f64,
    pub adoption_fit: Fit,
    /// T_p: a post above this similarity to an earlier one is a duplicate.
    pub duplicate_threshold: f64,
    pub duplicate_fit: Fit,
    /// Passages retrieved per topic before the boundary filter.
    pub retrieve: usize,
    /// Adopted passages put into a post prompt, at most.
    pub max_adopted: usize,
}

impl Default for KnowledgeSettings {
    fn default() -> Self {
        KnowledgeSettings {
            adoption_threshold: 0.25,
            adoption_fit: Fit::Pairwise,
            duplicate_threshold: 0.80,
            duplicate_fit: Fit::Joint,
            retrieve: 5,
            max_adopted: 2,
        }
    }
}

fn scores(text: &str, others: &[&str], fit: Fit) -> Vec<f64> {
    match fit {
        Fit::Pairwise => others.iter().map(|o| tfidf::similarity(text, o)).collect(),
        Fit::Joint => tfidf::similarities_to(text, others),
    }
}

impl KnowledgeSettings {
    /// The passages the persona may use, with their similarity, in the
    /// order given, at most `max_adopted`.
    pub fn adopt<'p>(&self, passages: &[&'p Passage], persona_knowledge: &str) -> Vec<(&'p Passage, f64)> {
        passages
            .iter()
            .map(|p| (*p, tfidf::similarity(&format!("{} {}", p.title, p.text), persona_knowledge)))
            .filter(|(_, s)| *s > self.adoption_threshold)
            .take(self.max_adopted)
            .collect()
    }

    /// The index and similarity of the earlier post `post` duplicates, if any.
    pub fn duplicate_of(&self, post: &str, earlier: &[&str]) -> Option<(usize, f64)> {
        let s = scores(post, earlier, self.duplicate_fit);
        s.into_iter().enumerate().filter(|(_, s)| *s > self.duplicate_threshold).max_by(|a, b| a.1.total_cmp(&b.1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOTPOT: &str = r#"[{"_id": "a", "question": "q", "answer": "x", "type": "bridge", "level": "easy",
        "supporting_facts": [["Paul Owens (dog trainer)", 0]],
        "context": [["Paul Owens (dog trainer)", ["Paul Owens is the author of the dog training book The Dog Whisperer.", " He trains puppies."]],
                    ["Matterhorn", ["The Matterhorn is a mountain of the Alps, straddling the border between Switzerland and Italy."]]]},
        {"_id": "b", "question": "q2", "context": [["Matterhorn", ["The Matterhorn is a mountain of the Alps, straddling the border between Switzerland and Italy."]],
                    ["Pasta", ["Pasta is a staple food of Italian cuisine."]]]}]"#;

    #[test]
    fn hotpotqa_paragraphs_load_once_and_are_found_by_topic() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("h.json");
        std::fs::write(&f, HOTPOT).unwrap();
        let store = load_hotpotqa(&f).unwrap();
        assert_eq!(store.len(), 3);
        assert_eq!(store.get(0).unwrap().text, "Paul Owens is the author of the dog training book The Dog Whisperer. He trains puppies.");
        let found = store.search("dog training techniques", 2);
        assert_eq!(found.iter().map(|p| p.title.as_str()).collect::<Vec<_>>(), ["Paul Owens (dog trainer)"]);
        std::fs::write(&f, r#"[{"context": [["T", "not a list"]]}]"#).unwrap();
        let e = load_hotpotqa(&f).unwrap_err();
        assert_eq!((e.at.as_str(), e.message.as_str()), ("[0].context[0]", "expected [title, [sentence, ...]]"));
        std::fs::write(&f, r#"[{"contexts": []}]"#).unwrap();
        assert_eq!(load_hotpotqa(&f).unwrap_err().message, "unknown key \"contexts\"");
        std::fs::write(&f, "[{\"_id\": \"a\",\n  \"context\": [[\"T\", [\"s\"]]]\n}").unwrap();
        let e = load_hotpotqa(&f).unwrap_err();
        assert_eq!((e.at.as_str(), e.message.as_str()), ("line 3 column 1", "invalid JSON: the JSON ends early (truncated file?)"));
        std::fs::write(&f, "[{\"_id\": \"a\",\n  \"context\": [[\"T\" [\"s\"]]]}]").unwrap();
        let e = load_hotpotqa(&f).unwrap_err();
        assert_eq!((e.at.as_str(), e.message.as_str()), ("line 2 column 20", "invalid JSON: expected `,` or `]`"));
    }

    #[test]
    fn the_boundary_and_the_duplicate_check_use_the_paper_thresholds() {
        let s = KnowledgeSettings::default();
        assert_eq!((s.adoption_threshold, s.duplicate_threshold), (0.25, 0.80));
        let m = Passage {
            id: 0,
            title: String::new(),
            text: "The Matterhorn is a mountain of the Alps, straddling the border between Switzerland and Italy.".into(),
        };
        let d = Passage { id: 1, title: "Dogs".into(), text: "Dog training with positive reinforcement and clicker training.".into() };
        let adopted = s.adopt(&[&m, &d], "I am a nurse who loves hiking and mountain photography.");
        assert!(adopted.is_empty(), "0.087687 < T_k: {adopted:?}");
        let adopted = s.adopt(&[&m, &d], "Sarah knows dog behaviour, clicker training and positive reinforcement.");
        assert_eq!(adopted.iter().map(|(p, _)| p.id).collect::<Vec<_>>(), [1]);
        let run = "Just finished a 10km run in the rain, feeling great!";
        let pairwise = KnowledgeSettings { duplicate_fit: Fit::Pairwise, ..s.clone() };
        let (i, sim) = pairwise
            .duplicate_of("Just finished a 10km run in the rain and feeling great today!", &["Cooking pasta tonight.", run])
            .unwrap();
        assert_eq!((i, (sim * 1e6).round() / 1e6), (1, 0.833634));
        assert_eq!(s.duplicate_of("A new recipe for pasta.", &[run]), None);
        assert!(s.duplicate_of(run, &[run]).is_some());
    }
}
