//! The oracle reader: the ceiling of the label tasks on a synthetic world.
//! It reads only what the tools show and inverts the generator's own
//! likelihood model ([`crate::synth::signals`]): which subject a post is about,
//! the stance or situation a history post expresses toward it, whose words
//! a comment is, which reports rate the claim as worded.

use some_schemas::{QueryRow, Task};

use super::{Guess, Solver, Sources, sole_winner, yes_no};
use crate::synth::lexicon::{CATEGORIES, EMOTION_WORDS};
use crate::synth::signals::{self, ALTERED_MARK, DISENGAGED, ENGAGED, OWN_LEADS, QUOTE, RATINGS, REACTIONS, VERDICTS};

pub struct Oracle;

impl Solver for Oracle {
    fn name(&self) -> &'static str {
        "oracle reader (generator's model)"
    }
    fn tasks(&self) -> &'static [Task] {
        &[Task::Ubp, Task::Mcr, Task::Uea, Task::Ucs, Task::Mid]
    }
    fn guess(&self, q: &QueryRow, s: &Sources) -> Guess {
        let answer = match q.task {
            Task::Ubp | Task::Mcr => s.post(q).and_then(subject_of).and_then(|subject| stance(subject, s.history(q))),
            Task::Uea => s.post(q).and_then(subject_of).and_then(|subject| emotion(subject, s.history(q))),
            Task::Ucs => q.comment.as_deref().and_then(|c| authorship(c, s.history(q))),
            Task::Mid => q.claim.as_deref().and_then(|c| rating(c, s)),
            // Free-text answers: nothing to read off the world's labels.
            Task::Red | Task::Ses | Task::Smq => None,
        };
        answer.map_or(Guess::Abstain, |a| Guess::Label(a.to_string()))
    }
}

/// The subject a post is about: the longest subject name it contains.
fn subject_of(post: &str) -> Option<&'static str> {
    CATEGORIES.iter().flat_map(|c| c.subjects.iter().copied()).filter(|s| post.contains(s)).max_by_key(|s| s.len())
}

/// Whether `line` is `template` said of the subject (in one of its `forms`).
fn says(line: &str, template: &str, forms: &[String]) -> bool {
    let Some((pre, suf)) = template.split_once("{}") else { return false };
    let Some(middle) = line.strip_prefix(pre).and_then(|l| l.strip_suffix(suf)) else { return false };
    forms.iter().any(|f| f == middle)
}

fn count(history: &[String], templates: &[&str], subject: &str) -> usize {
    let forms = signals::subject_forms(subject);
    history.iter().filter(|h| h.contains(subject) && templates.iter().any(|t| says(h, t, &forms))).count()
}

fn stance(subject: &str, history: &[String]) -> Option<&'static str> {
    let (engaged, disengaged) = (count(history, ENGAGED, subject), count(history, DISENGAGED, subject));
    yes_no(engaged, disengaged)
}

fn emotion(subject: &str, history: &[String]) -> Option<&'static str> {
    let counts: Vec<usize> = REACTIONS.iter().map(|ts| count(history, ts, subject)).collect();
    sole_winner(&counts).map(|i| EMOTION_WORDS[i].0)
}

/// "是" when the comment shows up in the user's own words, "否" when only
/// inside what they quoted from someone else.
fn authorship(comment: &str, history: &[String]) -> Option<&'static str> {
    let (mut own, mut quoted) = (0, 0);
    for h in history {
        if let Some((_, rest)) = h.split_once(QUOTE) {
            let q = rest.split_once(':').map_or(rest, |(_, q)| q);
            quoted += usize::from(!q.is_empty() && comment.contains(q));
        } else {
            let text = OWN_LEADS.iter().filter(|l| !l.is_empty()).find_map(|l| h.strip_prefix(l)).unwrap_or(h);
            own += usize::from(!text.is_empty() && comment.contains(text));
        }
    }
    yes_no(own, quoted)
}

/// The rating most reports about the claim as worded give.
fn rating(claim: &str, s: &Sources) -> Option<&'static str> {
    let about = signals::stance_opening("", &signals::key_phrase(claim));
    let mut votes = [0usize; 3];
    for doc in s.retrieve(claim, 10) {
        if doc.contains(ALTERED_MARK) || !doc.contains(about.trim()) {
            continue;
        }
        if let Some(r) = VERDICTS.iter().position(|vs| vs.iter().any(|v| doc.ends_with(v))) {
            votes[r] += 1;
        }
    }
    sole_winner(&votes).map(|i| RATINGS[i])
}
