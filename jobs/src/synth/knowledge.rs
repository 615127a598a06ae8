//! The misinformation knowledge base (MID): English fact-check reports.

use rand::seq::IndexedRandom;
use some_schemas::KnowledgeRow;

use super::lexicon::{EN_FILLER_TOPICS, FACT_CHECK_OUTLETS};
use super::text::{english_keywords, pick};
use super::{World, unit_rng};

/// What a stance report says about its claim, by the claim's label.
fn stance(label: &str, claim: &str, outlet: &str, keywords: &str) -> String {
    match label {
        "true" => format!(
            "{outlet} reviewed the statement \"{claim}\" Public records and independent experts confirm it: the figures on {keywords} match the official data, and nothing material is left out. The statement is accurate."
        ),
        "half" => format!(
            "{outlet} looked into the claim \"{claim}\" Part of it holds up: the record on {keywords} supports the general point. But the claim leaves out important context and overstates what the numbers show, so it is only partly accurate."
        ),
        _ => format!(
            "{outlet} checked the claim \"{claim}\" The record does not support it. Data on {keywords} show the opposite, and the sources cited for the claim do not say what it says. The claim is inaccurate."
        ),
    }
}

pub(super) fn generate(world: &World) -> Vec<KnowledgeRow> {
    let mut rng = unit_rng(world.config.seed, "knowledge");
    let mut docs = Vec::new();
    let all_keywords: Vec<Vec<String>> = world.claims.iter().map(|c| english_keywords(&c.claim)).collect();
    for (i, claim) in world.claims.iter().enumerate() {
        let keywords = &all_keywords[i];
        let key_phrase = keywords.iter().take(3).cloned().collect::<Vec<_>>().join(", ");
        let slug = claim.key.trim_end_matches(".json");
        for n in 0..claim.stance_reports {
            let outlet = pick(&mut rng, FACT_CHECK_OUTLETS);
            docs.push((
                stance(&claim.label, &claim.claim, outlet, &key_phrase),
                format!("https://{}.example/fact-check/{slug}-{n}", outlet.to_lowercase()),
            ));
        }
        for n in 0..claim.distractors {
            // Distractors share words with the claim but are about something else.
            let word = keywords.choose(&mut rng).map_or("policy", String::as_str);
            let other = pick(&mut rng, EN_FILLER_TOPICS);
            let outlet = pick(&mut rng, FACT_CHECK_OUTLETS);
            let text = format!(
                "{outlet} background note on {other}. Questions about {word} come up often in debates on {other}; this note summarises what officials have said and where the figures come from, without rating any particular statement."
            );
            docs.push((text, format!("https://{}.example/background/{slug}-{n}", outlet.to_lowercase())));
        }
    }
    docs.into_iter()
        .enumerate()
        .map(|(i, (content, link))| KnowledgeRow { doc_index: i as i64, content, link: Some(link), extra: None })
        .collect()
}
