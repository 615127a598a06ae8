//! Cheats: what an evaluator tries first to see whether a world gives its
//! answers away. None uses an LLM; each reads only what the tools show.

use std::collections::HashSet;

use some_schemas::{QueryRow, Task};

use super::{Guess, Solver, Sources, sole_winner};
use crate::synth::lexicon::EMOTION_WORDS;
use crate::synth::signals::RATINGS;
use crate::synth::text::emoticons_in;

/// Every cheat, in the order a report lists them.
pub fn all() -> [&'static dyn Solver; 4] {
    [&LexicalOverlap, &EmoticonOpening, &EmotionLexicon, &TopRetrievalCopy]
}

fn bigrams(text: &str) -> HashSet<(char, char)> {
    let chars: Vec<char> = text.chars().filter(|c| !c.is_whitespace()).collect();
    chars.windows(2).map(|w| (w[0], w[1])).collect()
}

/// The share of the target's character bigrams that the history uses.
fn coverage(target: &str, history: &[String]) -> f64 {
    let wanted = bigrams(target);
    if wanted.is_empty() {
        return 0.0;
    }
    let mut found: HashSet<(char, char)> = HashSet::new();
    for h in history {
        let mut chars = h.chars().filter(|c| !c.is_whitespace());
        let Some(mut previous) = chars.next() else { continue };
        for c in chars {
            if wanted.contains(&(previous, c)) {
                found.insert((previous, c));
            }
            previous = c;
        }
    }
    found.len() as f64 / wanted.len() as f64
}

/// UBP, MCR, UCS: how much of the post (or the comment) the user's history
/// repeats.
pub struct LexicalOverlap;

impl Solver for LexicalOverlap {
    fn name(&self) -> &'static str {
        "cheat: lexical overlap"
    }
    fn tasks(&self) -> &'static [Task] {
        &[Task::Ubp, Task::Mcr, Task::Ucs]
    }
    fn guess(&self, q: &QueryRow, s: &Sources) -> Guess {
        let target = if q.task == Task::Ucs { q.comment.as_deref() } else { s.post(q) };
        target.map_or(Guess::Abstain, |t| Guess::Score(coverage(t, s.history(q))))
    }
}

/// UCS: the comment's emoticons and its opening found in the history.
pub struct EmoticonOpening;

impl Solver for EmoticonOpening {
    fn name(&self) -> &'static str {
        "cheat: emoticon and opening match"
    }
    fn tasks(&self) -> &'static [Task] {
        &[Task::Ucs]
    }
    fn guess(&self, q: &QueryRow, s: &Sources) -> Guess {
        let Some(comment) = q.comment.as_deref() else { return Guess::Abstain };
        let history = s.history(q);
        let emoticons = emoticons_in(comment).into_iter().filter(|e| history.iter().any(|h| h.contains(e.as_str()))).count();
        let opening: String = comment.chars().take(4).collect();
        let opens = history.iter().filter(|h| !opening.is_empty() && h.contains(&opening)).count();
        Guess::Score(emoticons as f64 + opens as f64)
    }
}

/// UEA: the emotion whose words the history uses most.
pub struct EmotionLexicon;

impl Solver for EmotionLexicon {
    fn name(&self) -> &'static str {
        "cheat: emotion-lexicon vote"
    }
    fn tasks(&self) -> &'static [Task] {
        &[Task::Uea]
    }
    fn guess(&self, q: &QueryRow, s: &Sources) -> Guess {
        let mut votes = [0usize; 6];
        for h in s.history(q) {
            for (i, (_, words)) in EMOTION_WORDS.iter().enumerate() {
                votes[i] += words.iter().filter(|w| h.contains(*w)).count();
            }
        }
        sole_winner(&votes).map_or(Guess::Abstain, |i| Guess::Label(EMOTION_WORDS[i].0.to_string()))
    }
}

/// MID: the rating of the best-matching document, read by its words.
pub struct TopRetrievalCopy;

/// Words a reader would take as each rating (in the order of `RATINGS`).
const RATING_WORDS: [&[&str]; 3] = [
    &["accurate", "true", "correct", "bears it out", "checks out", "stand", "confirm"],
    &["partly", "in part", "context", "mixed", "some of it", "half", "further than"],
    &["false", "inaccurate", "misleading", "contradict", "other way", "not support", "no evidence"],
];

/// The rating a document's words point to, if one stands out.
pub fn read_rating(doc: &str) -> Option<&'static str> {
    let doc = doc.to_lowercase();
    let votes: Vec<usize> = RATING_WORDS.iter().map(|ws| ws.iter().filter(|w| doc.contains(*w)).count()).collect();
    sole_winner(&votes).map(|i| RATINGS[i])
}

impl Solver for TopRetrievalCopy {
    fn name(&self) -> &'static str {
        "cheat: top-1 retrieval copy"
    }
    fn tasks(&self) -> &'static [Task] {
        &[Task::Mid]
    }
    fn guess(&self, q: &QueryRow, s: &Sources) -> Guess {
        let Some(claim) = q.claim.as_deref() else { return Guess::Abstain };
        let top = s.retrieve(claim, 1);
        match top.first().and_then(|d| read_rating(d)) {
            Some(r) => Guess::Label(r.to_string()),
            None => Guess::Abstain,
        }
    }
}
