//! Topic collections (SES, and SMQ's topic questions).

use rand::Rng;
use some_schemas::{PostRow, PostSource, Timestamp};

use super::World;
use super::lexicon::PLATFORMS;
use super::text::{nickname, paraphrase, pick, topic_noise};

/// How many posts, counted from a topic's start, its facts first appear in
/// at paper scale: fewer than the first pages an agent reads.
const OPENING_POSTS: u64 = 50;
use super::unit_rng;

pub(super) fn generate(world: &World, index: usize) -> Vec<PostRow> {
    let topic = &world.topics[index];
    let bucket = some_schemas::buckets::topic(&topic.name);
    let mut rng = unit_rng(world.config.seed, &format!("topic/{bucket}"));
    let k = super::plan::per_item(world.config.scale);
    let mut posts = Vec::with_capacity(topic.total as usize);
    let mut push = |rng: &mut rand_chacha::ChaCha8Rng, at: i64, title: Option<String>, content: String| {
        // The id is drawn first: the world's draws keep their order.
        let id = format!("{:016x}", rng.random::<u64>());
        posts.push(PostRow {
            published_at: Some(Timestamp(at)),
            topic: Some(topic.name.clone()),
            nickname: Some(nickname(rng)),
            platform: Some(pick(rng, PLATFORMS).to_string()),
            title,
            ..PostRow::new(id, content, PostSource::Topic, bucket.clone())
        });
    };
    // Facts arrive in the order the summary tells them, as a stream would.
    // Each fact's first post breaks in the opening stretch of the stream
    // (the pages an agent reads first), its other posts spread over the
    // month; every post says it in its own words.
    let n = topic.facts.len().max(1) as i64;
    let opening = topic.span_secs * OPENING_POSTS.min(topic.total) as i64 / topic.total.max(1) as i64;
    for (i, fact) in topic.facts.iter().enumerate() {
        for variant in 0..k {
            let slot = if variant == 0 { opening / n } else { topic.span_secs / n };
            let at = topic.start.0 + i as i64 * slot + rng.random_range(0..slot.max(1));
            let content = match variant % 3 {
                1 => format!("#{}# {}", topic.name, paraphrase(&mut rng, fact)),
                _ => paraphrase(&mut rng, fact),
            };
            let title = (variant == 0).then(|| topic.name.clone());
            push(&mut rng, at, title, content);
        }
    }
    for (question, answer) in &topic.answers {
        for variant in 0..k {
            let at = topic.start.0 + rng.random_range(0..topic.span_secs);
            let content = match variant % 3 {
                0 => format!("{question}{answer}"),
                1 => format!("关于{}：{answer}", topic.name),
                _ => format!("#{}# {answer}", topic.name),
            };
            push(&mut rng, at, None, content);
        }
    }
    let required = (topic.facts.len() + topic.answers.len()) * k as usize;
    for _ in required..topic.total as usize {
        let at = topic.start.0 + rng.random_range(0..topic.span_secs);
        let content = topic_noise(&mut rng, &topic.name);
        push(&mut rng, at, None, content);
    }
    posts
}
