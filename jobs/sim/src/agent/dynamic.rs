//! The dynamic persona: only the persona items relevant to the current
//! action go into its prompt.
//!
//! The advanced attributes are split into sentence items
//! ([`Persona::items`]); the current action's text (the post being read, or
//! the topic being posted on) is the query; the best-scoring items of each
//! attribute are kept, as in the paper's Table 17 (one item per attribute
//! there, [`DynamicSettings::per_attribute`] here). The basic information
//! always goes in. Scores come from the caller: TF-IDF ([`tfidf_scores`])
//! or the built-in embedder's cosines ([`Relevance`]).

use serde::{Deserialize, Serialize};

use crate::agent::persona::{Attribute, Persona, PersonaItem};
use crate::agent::tfidf;
use crate::vector::cosine;
use some_jobs::embed::{EmbedError, Embedder, Purpose};

/// How the persona goes into action prompts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DynamicSettings {
    /// `false` is the paper's "w/o PD" ablation: every item, every time.
    pub enabled: bool,
    pub per_attribute: usize,
}

impl Default for DynamicSettings {
    fn default() -> Self {
        DynamicSettings { enabled: true, per_attribute: 1 }
    }
}

/// The indices of the `per_attribute` best items of each attribute, in the
/// persona's order. `scores` has one score per item; ties keep the earlier item.
pub fn select(items: &[PersonaItem], scores: &[f64], per_attribute: usize) -> Vec<usize> {
    let mut chosen = Vec::new();
    for attribute in Attribute::ALL {
        let mut of: Vec<usize> = (0..items.len()).filter(|i| items[*i].attribute == attribute).collect();
        of.sort_by(|a, b| scores.get(*b).unwrap_or(&0.0).total_cmp(scores.get(*a).unwrap_or(&0.0)).then(a.cmp(b)));
        chosen.extend(of.into_iter().take(per_attribute));
    }
    chosen.sort_unstable();
    chosen
}

/// The persona text of a prompt: basic information, then the chosen items
/// under their attribute labels. A persona that is not enriched is its description.
pub fn render(persona: &Persona, items: &[PersonaItem], chosen: &[usize]) -> String {
    if persona.profile.is_none() {
        return persona.description.clone();
    }
    let mut out = persona.basic_text();
    for attribute in Attribute::ALL {
        let texts: Vec<&str> =
            chosen.iter().filter_map(|i| items.get(*i)).filter(|it| it.attribute == attribute).map(|it| it.text.as_str()).collect();
        if !texts.is_empty() {
            out.push_str(&format!("\n{}: {}", attribute.label(), texts.join(" ")));
        }
    }
    out
}

/// TF-IDF similarity of the query to each item, fit on all of them.
pub fn tfidf_scores(query: &str, items: &[PersonaItem]) -> Vec<f64> {
    let texts: Vec<&str> = items.iter().map(|i| i.text.as_str()).collect();
    tfidf::similarities_to(query, &texts)
}

/// Where item relevance comes from.
#[derive(Clone, Copy)]
pub enum Relevance<'a> {
    TfIdf,
    Embedder(&'a dyn Embedder),
}

impl Relevance<'_> {
    pub async fn scores(&self, query: &str, items: &[PersonaItem]) -> Result<Vec<f64>, EmbedError> {
        match self {
            Relevance::TfIdf => Ok(tfidf_scores(query, items)),
            Relevance::Embedder(e) => {
                let q = e.embed(&[query.to_string()], Purpose::Query).await?;
                let texts: Vec<String> = items.iter().map(|i| i.text.clone()).collect();
                let v = e.embed(&texts, Purpose::Document).await?;
                let q = q.first().map(Vec::as_slice).unwrap_or(&[]);
                Ok(v.iter().map(|d| cosine(q, d)).collect())
            }
        }
    }
}

/// The persona text for an action whose text is `query`.
pub async fn persona_for(
    persona: &Persona,
    query: &str,
    settings: &DynamicSettings,
    relevance: Relevance<'_>,
) -> Result<String, EmbedError> {
    let items = persona.items();
    if !settings.enabled || items.is_empty() {
        return Ok(render(persona, &items, &(0..items.len()).collect::<Vec<_>>()));
    }
    let scores = relevance.scores(query, &items).await?;
    Ok(render(persona, &items, &select(&items, &scores, settings.per_attribute)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::test_model::sarah;

    #[test]
    fn the_most_relevant_item_of_each_attribute_is_chosen() {
        let p = sarah();
        let items = p.items();
        let scores = tfidf_scores("effective dog training techniques", &items);
        let chosen = select(&items, &scores, 1);
        let texts: Vec<&str> = chosen.iter().map(|i| items[*i].text.as_str()).collect();
        assert_eq!(
            texts,
            [
                "She reads about dog behavior and training.",
                "She is open to discussions about dog training and running techniques.",
                "Sarah knows dog behavior and clicker training."
            ]
        );
        let text = render(&p, &items, &chosen);
        assert!(text.starts_with("Name: Sarah, age: 24, gender: Female"));
        assert!(text.ends_with("\nKnowledge: Sarah knows dog behavior and clicker training."));
    }

    #[test]
    fn given_scores_decide_and_the_ablation_keeps_everything() {
        let p = sarah();
        let items = p.items();
        let mut scores = vec![0.0; items.len()];
        scores[1] = 0.9;
        scores[5] = 0.5;
        assert_eq!(select(&items, &scores, 1), [1, 3, 5]);
        let all =
            futures::executor::block_on(persona_for(&p, "x", &DynamicSettings { enabled: false, per_attribute: 1 }, Relevance::TfIdf))
                .unwrap();
        assert!(all.contains("She runs marathons for charity.") && all.contains("She knows proper running form."));
        let plain = crate::agent::test_model::persona(1, "plain");
        assert_eq!(futures::executor::block_on(persona_for(&plain, "x", &DynamicSettings::default(), Relevance::TfIdf)).unwrap(), "plain");
    }
}
