//! Location streams (RED): one partition per day and location.

use rand::Rng;
use some_schemas::{PostRow, PostSource, Timestamp};

use super::World;
use super::lexicon::{EMOTICONS, PLATFORMS};
use super::text::{chatter, nickname, pick};
use super::unit_rng;

/// A post of a location stream with the fields raw posts carry.
pub(super) fn raw_post(id: String, at: Timestamp, area: &str, bucket: &str, content: String) -> PostRow {
    PostRow { published_at: Some(at), area: Some(area.to_string()), ..PostRow::new(id, content, PostSource::Raw, bucket) }
}

pub(super) fn generate(world: &World, index: usize) -> Vec<PostRow> {
    let unit = &world.raw_units[index];
    let day = unit.day.format("%Y-%m-%d").to_string();
    let bucket = some_schemas::buckets::raw(&day, &unit.location);
    let mut rng = unit_rng(world.config.seed, &format!("raw/{bucket}"));
    let midnight = Timestamp::from_naive(unit.day.and_hms_opt(0, 0, 0).expect("midnight"));
    let per_event = if world.config.scale == super::Scale::Paper { 4 } else { super::plan::per_item(world.config.scale) };
    let mut posts = Vec::with_capacity(unit.hours.iter().sum::<u64>() as usize);
    for hour in 0..24 {
        let hour_start = midnight.0 + hour as i64 * 3600;
        let mut left = unit.hours[hour];
        for &w in &unit.windows[hour] {
            let window = &world.red_windows[w];
            let span = (window.end.0 - window.start.0).clamp(1, 3600);
            for event in &window.events {
                for variant in 0..per_event {
                    let at = Timestamp(window.start.0 + rng.random_range(0..span));
                    let place = if event.place.is_empty() { unit.location.as_str() } else { event.place.as_str() };
                    let content = match variant % 4 {
                        0 => event.summary.clone(),
                        1 => format!("{place}：{}。{}", event.title, first_clause(&event.summary)),
                        2 => format!("刚刚看到，{}{}", event.title, pick(&mut rng, EMOTICONS)),
                        _ => format!("#{}# {}", unit.location, event.summary.chars().take(80).collect::<String>()),
                    };
                    let mut post = raw_post(format!("{:016x}", rng.random::<u64>()), at, &unit.location, &bucket, content);
                    if variant % 4 == 0 {
                        post.title = Some(event.title.clone());
                    }
                    post.location = Some(place.to_string());
                    fill_common(&mut rng, &mut post);
                    posts.push(post);
                    left = left.saturating_sub(1);
                }
            }
        }
        for _ in 0..left {
            let at = Timestamp(hour_start + rng.random_range(0..3600));
            // Most noise names the place, as a location search returns it.
            let place = rng.random_bool(0.8).then_some(unit.location.as_str());
            let content = chatter(&mut rng, place, EMOTICONS);
            let mut post = raw_post(format!("{:016x}", rng.random::<u64>()), at, &unit.location, &bucket, content);
            post.location = Some(unit.location.clone());
            fill_common(&mut rng, &mut post);
            posts.push(post);
        }
    }
    posts
}

fn fill_common<R: Rng>(rng: &mut R, post: &mut PostRow) {
    post.nickname = Some(nickname(rng));
    post.platform = Some(pick(rng, PLATFORMS).to_string());
    post.ocr = Some(String::new());
}

fn first_clause(text: &str) -> &str {
    text.split(['。', '，']).next().unwrap_or(text)
}
