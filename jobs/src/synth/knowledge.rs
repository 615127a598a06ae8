//! The misinformation knowledge base (MID): English fact-check reports.
//!
//! Per claim: reports about the claim itself, which paraphrase it by its key
//! words and rate it with hedged wording, most of them as its label says
//! ([`signals::REPORT_AGREEMENT`]); notes that quote the claim word for word
//! but rate an altered version of it, at random; and background notes that
//! share its words.

use rand::Rng;
use rand::seq::{IndexedRandom, SliceRandom};
use some_schemas::KnowledgeRow;

use super::lexicon::{EN_FILLER_TOPICS, FACT_CHECK_OUTLETS};
use super::text::{english_keywords, pick};
use super::{World, signals, unit_rng};

fn verdict<R: Rng>(rng: &mut R, rating: usize) -> &'static str {
    pick(rng, signals::VERDICTS[rating])
}

pub(super) fn generate(world: &World) -> Vec<KnowledgeRow> {
    let mut rng = unit_rng(world.config.seed, "knowledge");
    let mut docs = Vec::new();
    let link = |rng: &mut rand_chacha::ChaCha8Rng, outlet: &str, kind: &str| {
        format!("https://{}.example/{kind}/{:012x}", outlet.to_lowercase(), rng.random::<u64>() >> 16)
    };
    for claim in &world.claims {
        let keywords = english_keywords(&claim.claim);
        let key_phrase = signals::key_phrase(&claim.claim);
        let label = signals::RATINGS.iter().position(|r| *r == claim.label).unwrap_or(2);
        for _ in 0..claim.stance_reports {
            let rating = if rng.random_bool(signals::REPORT_AGREEMENT) { label } else { (label + rng.random_range(1..3)) % 3 };
            let outlet = pick(&mut rng, FACT_CHECK_OUTLETS);
            let text = format!("{} {}", signals::stance_opening(outlet, &key_phrase), verdict(&mut rng, rating));
            docs.push((text, link(&mut rng, outlet, "fact-check")));
        }
        for _ in 0..claim.altered {
            let outlet = pick(&mut rng, FACT_CHECK_OUTLETS);
            let rating = rng.random_range(0..3);
            let text = format!("{} {}", signals::altered_opening(outlet, &claim.claim), verdict(&mut rng, rating));
            docs.push((text, link(&mut rng, outlet, "fact-check")));
        }
        for _ in 0..claim.distractors {
            // Background notes share words with the claim but are about something else.
            let word = keywords.choose(&mut rng).map_or("policy", String::as_str);
            let other = pick(&mut rng, EN_FILLER_TOPICS);
            let outlet = pick(&mut rng, FACT_CHECK_OUTLETS);
            let text = format!(
                "{outlet} background note on {other}. Questions about {word} come up often in debates on {other}; this note summarises what officials have said and where the figures come from, without rating any particular statement."
            );
            docs.push((text, link(&mut rng, outlet, "background")));
        }
    }
    // Stored in no order a reader could group a claim's reports by.
    docs.shuffle(&mut rng);
    docs.into_iter()
        .enumerate()
        .map(|(i, (content, link))| KnowledgeRow { doc_index: i as i64, content, link: Some(link), extra: None })
        .collect()
}
