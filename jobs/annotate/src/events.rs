//! RED: the events of one location and day, as the paper made them.
//!
//! The day's posts are clustered with the tools' single-pass clustering
//! (through [`KernelService`], so compute workers and the GPU serve it);
//! the model looks at each cluster of at least `min_posts` and either
//! drops it (no event: chatter, questions, adverts) or summarises it into
//! title, content, time and place; each event is then linked to the
//! one-hour windows of the query template in which its posts were
//! discussed, and a window with no event makes no query.
//!
//! [`measure`] compares the result with events known to be true (the
//! synthetic world's): an annotated event matches a true one of the same
//! window when their texts share enough character pairs.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use serde_json::{Map, Value, json};
use some_jobs::chat::{ChatModel, ModelError, Usage};
use some_jobs::progress::Progress;
use some_jobs::prompts::fill;
use some_jobs::tools::{BackendError, KernelService};
use some_schemas::{QueryRow, Task, Timestamp};

use crate::review::Item;
use crate::{Call, one_line, prompt_id, reply_object};

const PROMPT: &str = include_str!("../prompts/red_event.txt");

/// A post of the location's stream.
#[derive(Debug, Clone, PartialEq)]
pub struct Post {
    pub id: String,
    pub at: Timestamp,
    pub text: String,
}

/// How clusters become events.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// The clustering threshold (the tools' θ for the embedder).
    pub theta: f32,
    /// Smaller clusters are not shown to the model.
    pub min_posts: usize,
    /// An event is linked to an hour in which at least this many of its
    /// posts appeared (or, if no hour has that many, to its busiest hour).
    pub min_posts_in_window: usize,
    /// Posts of a cluster shown to the model (its earliest ones).
    pub shown: usize,
    pub seed: u64,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings { theta: some_jobs::embed::REFERENCE_CLUSTER_THRESHOLD, min_posts: 3, min_posts_in_window: 2, shown: 8, seed: 0 }
    }
}

/// One event as the release writes it, and the windows it is linked to.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Event {
    pub title: String,
    pub content: String,
    pub time: String,
    pub place: String,
    /// Start of each one-hour window the event is linked to.
    pub windows: Vec<Timestamp>,
    /// The posts of its cluster: id and text.
    pub posts: Vec<(String, String)>,
}

/// What became of one location-day.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct DayEvents {
    pub location: String,
    pub day: String,
    pub posts: usize,
    pub clusters: usize,
    /// Clusters of at least `min_posts`, shown to the model.
    pub shown: usize,
    pub events: Vec<Event>,
    /// Clusters the model said describe no event.
    pub not_events: usize,
    /// Clusters whose replies could not be read even when asked again: the reply, cut.
    pub unreadable: Vec<String>,
    pub usage: Usage,
}

/// Why a day could not be annotated.
#[derive(Debug, thiserror::Error)]
pub enum EventsError {
    #[error(transparent)]
    Model(#[from] ModelError),
    #[error("clustering: {0}")]
    Kernels(String),
    #[error("{0}")]
    Input(String),
}

impl From<BackendError> for EventsError {
    fn from(e: BackendError) -> EventsError {
        EventsError::Kernels(e.0)
    }
}

/// The reply's shape, also sent as a JSON schema (a grammar for the built-in
/// model; `response_format` for an endpoint).
fn schema() -> Value {
    let text = |max: u32| json!({"type": "string", "maxLength": max});
    json!({
        "type": "object",
        "properties": {"event": {"type": "boolean"}, "title": text(40), "content": text(160), "time": text(20), "location": text(20)},
        "required": ["event", "title", "content", "time", "location"],
        "additionalProperties": false
    })
}

/// Clusters the day's posts (sorted by time; `vectors` row `i` is post `i`,
/// `dim` values a row) and asks the model about each cluster big enough.
#[allow(clippy::too_many_arguments)]
pub async fn detect(
    location: &str,
    day: &str,
    posts: &[Post],
    vectors: &[f32],
    dim: usize,
    kernels: &dyn KernelService,
    model: &dyn ChatModel,
    settings: Settings,
    progress: &dyn Progress,
) -> Result<DayEvents, EventsError> {
    if posts.len() * dim != vectors.len() {
        return Err(EventsError::Input(format!("{} posts but {} vector values of dimension {dim}", posts.len(), vectors.len())));
    }
    let mut out = DayEvents { location: location.into(), day: day.into(), posts: posts.len(), ..DayEvents::default() };
    if posts.is_empty() {
        return Ok(out);
    }
    let ids = kernels.single_pass_cluster(vectors, dim, settings.theta).await?;
    let mut clusters: Vec<Vec<usize>> = Vec::new();
    for (i, c) in ids.into_iter().enumerate() {
        let c = c as usize - 1;
        if clusters.len() <= c {
            clusters.resize_with(c + 1, Vec::new);
        }
        clusters[c].push(i);
    }
    out.clusters = clusters.len();
    clusters.retain(|m| m.len() >= settings.min_posts);
    progress.phase(&format!("{location} {day}: clusters read by {}", model.name()), Some(clusters.len() as u64));
    for members in clusters {
        out.shown += 1;
        let shown: Vec<String> = members
            .iter()
            .take(settings.shown)
            .enumerate()
            .map(|(n, &i)| format!("{}. [{}] {}", n + 1, posts[i].at.naive().format("%H:%M"), one_line(&posts[i].text, 200)))
            .collect();
        let prompt = fill(
            PROMPT,
            &[("{day}", day), ("{location}", location), ("{count}", &members.len().to_string()), ("{posts}", &shown.join("\n"))],
        );
        match ask(model, &prompt, settings.seed, &mut out.usage).await? {
            Reply::NotEvent => out.not_events += 1,
            Reply::Unreadable(text) => out.unreadable.push(text),
            Reply::Event { title, content, time, place } => out.events.push(Event {
                title,
                content,
                time: if time.is_empty() { day.replace('-', ".") } else { time },
                place: if place.is_empty() { location.to_string() } else { place },
                windows: windows(posts, &members, settings.min_posts_in_window),
                posts: members.iter().map(|&i| (posts[i].id.clone(), posts[i].text.clone())).collect(),
            }),
        }
        progress.advance(1);
    }
    progress.finish();
    Ok(out)
}

enum Reply {
    Event { title: String, content: String, time: String, place: String },
    NotEvent,
    Unreadable(String),
}

/// Asks about one cluster; a reply that cannot be read is asked once more
/// with another seed.
async fn ask(model: &dyn ChatModel, prompt: &str, seed: u64, usage: &mut Usage) -> Result<Reply, ModelError> {
    let mut last = String::new();
    for attempt in 0..2 {
        let call = Call { schema: Some(("red_event", schema())), temperature: 0.0, seed: seed + attempt, max_tokens: 400 };
        let text = call.ask(model, prompt.to_string(), usage).await?;
        if let Some(reply) = read_reply(&text) {
            return Ok(reply);
        }
        last = one_line(&text, 200);
    }
    Ok(Reply::Unreadable(last))
}

/// The reply's JSON object (the first `{` to the last `}`), if it says
/// whether there is an event and, if so, gives a title and a content.
fn read_reply(text: &str) -> Option<Reply> {
    let object = reply_object(text)?;
    let field = |name: &str| object.get(name).and_then(Value::as_str).map(|s| s.trim().to_string()).unwrap_or_default();
    match object.get("event")?.as_bool()? {
        false => Some(Reply::NotEvent),
        true => {
            let (title, content) = (field("title"), field("content"));
            (!title.is_empty() && !content.is_empty()).then(|| Reply::Event {
                title,
                content,
                time: field("time"),
                place: field("location"),
            })
        }
    }
}

/// The hours (window starts) in which at least `min` of the cluster's posts
/// appeared, or its busiest hour (the earliest of equals) if none did.
fn windows(posts: &[Post], members: &[usize], min: usize) -> Vec<Timestamp> {
    let mut per_hour: BTreeMap<i64, usize> = BTreeMap::new();
    for &i in members {
        *per_hour.entry(posts[i].at.0.div_euclid(3600) * 3600).or_default() += 1;
    }
    let busy: Vec<Timestamp> = per_hour.iter().filter(|(_, n)| **n >= min).map(|(h, _)| Timestamp(*h)).collect();
    if !busy.is_empty() {
        return busy;
    }
    let top = per_hour.values().copied().max().unwrap_or(0);
    per_hour.into_iter().find(|(_, n)| *n == top).map(|(h, _)| vec![Timestamp(h)]).unwrap_or_default()
}

/// A RED query key: `start_end_location`, one hour.
pub fn window_key(start: Timestamp, location: &str) -> String {
    format!("{}_{}_{location}", start, Timestamp(start.0 + 3600))
}

/// The days' events as review items, one per (window, event): the
/// annotations RED's ground truth is made of.
pub fn items(days: &[DayEvents], model: &str, settings: Settings) -> Vec<Item> {
    let mut out = Vec::new();
    for day in days {
        for (n, e) in day.events.iter().enumerate() {
            for w in &e.windows {
                let key = window_key(*w, &day.location);
                let mut provenance = Map::new();
                provenance.insert("pipeline".into(), json!("red-events"));
                provenance.insert("model".into(), json!(model));
                provenance.insert("prompt".into(), json!(prompt_id(PROMPT)));
                provenance.insert("cluster_posts".into(), json!(e.posts.len()));
                provenance.insert("theta".into(), json!(settings.theta));
                provenance.insert("seed".into(), json!(settings.seed));
                out.push(Item {
                    id: format!("red:{key}:{}:{n}", day.day),
                    key,
                    fields: BTreeMap::from([
                        ("标题".into(), e.title.clone()),
                        ("摘要".into(), e.content.clone()),
                        ("时间".into(), e.time.clone()),
                        ("地点".into(), e.place.clone()),
                    ]),
                    keep: true,
                    sources: e.posts.iter().map(|(id, text)| format!("{id}: {text}")).collect(),
                    provenance,
                });
            }
        }
    }
    out
}

/// The RED queries of `location` as truth: window key → each event's
/// title and summary.
pub fn truth(queries: &[QueryRow], location: &str) -> BTreeMap<String, Vec<String>> {
    queries
        .iter()
        .filter(|q| q.task == Task::Red && q.location.as_deref() == Some(location))
        .map(|q| {
            let events: Vec<Value> = q.reference.as_deref().and_then(|r| serde_json::from_str(r).ok()).unwrap_or_default();
            (q.source_key.clone(), events.iter().map(event_text).collect())
        })
        .collect()
}

/// An event's title and summary, as [`measure`] compares them.
fn event_text(e: &Value) -> String {
    format!("{}{}", e["标题"].as_str().unwrap_or_default(), e["摘要"].as_str().unwrap_or_default())
}

/// Recall and precision against true events, per (window, event) pair.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Measured {
    /// True (window, event) pairs, and those an annotated event of the window matches.
    pub truth: usize,
    pub recalled: usize,
    /// Annotated (window, event) pairs, and those matching a true event of the window.
    pub annotated: usize,
    pub correct: usize,
}

impl Measured {
    pub fn recall(&self) -> f64 {
        ratio(self.recalled, self.truth)
    }
    pub fn precision(&self) -> f64 {
        ratio(self.correct, self.annotated)
    }
}

fn ratio(a: usize, b: usize) -> f64 {
    if b == 0 { 0.0 } else { a as f64 / b as f64 }
}

/// How alike two event texts must be to be one event: the share of their
/// character pairs they have in common (Dice). Distinct events of one city
/// share its name and little else; a summary of a cluster shares most of
/// the words of the posts it summarises.
pub const MATCH_SIMILARITY: f64 = 0.3;

/// Compares annotated windows with true ones (both `window key → events`,
/// each event its title and content); only the windows of `keys_in_scope`
/// count (the location-days annotated).
pub fn measure(annotated: &Value, truth: &BTreeMap<String, Vec<String>>, keys_in_scope: &dyn Fn(&str) -> bool) -> Measured {
    let texts = |events: &Value| -> Vec<String> { events.as_array().into_iter().flatten().map(event_text).collect() };
    let empty = Value::Array(Vec::new());
    let keys: BTreeSet<&str> = truth
        .keys()
        .map(String::as_str)
        .filter(|k| keys_in_scope(k))
        .chain(annotated.as_object().into_iter().flat_map(|o| o.keys().map(String::as_str)))
        .collect();
    let mut m = Measured::default();
    for key in keys {
        let found = texts(annotated.get(key).unwrap_or(&empty));
        let real = truth.get(key).map(Vec::as_slice).unwrap_or_default();
        m.truth += real.len();
        m.annotated += found.len();
        m.recalled += real.iter().filter(|t| found.iter().any(|f| similarity(f, t) >= MATCH_SIMILARITY)).count();
        m.correct += found.iter().filter(|f| real.iter().any(|t| similarity(f, t) >= MATCH_SIMILARITY)).count();
    }
    m
}

/// Dice similarity of two texts' sets of adjacent character pairs.
pub fn similarity(a: &str, b: &str) -> f64 {
    let pairs = |s: &str| -> HashSet<(char, char)> {
        let chars: Vec<char> = s.chars().filter(|c| !c.is_whitespace()).collect();
        chars.windows(2).map(|w| (w[0], w[1])).collect()
    };
    let (x, y) = (pairs(a), pairs(b));
    if x.is_empty() || y.is_empty() {
        return 0.0;
    }
    2.0 * x.intersection(&y).count() as f64 / (x.len() + y.len()) as f64
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use some_jobs::kernels::CpuKernels;
    use some_jobs::progress::NoProgress;
    use some_jobs::testing::{ScriptedModel, reply};

    use super::*;

    #[test]
    fn clusters_become_events_linked_to_their_busy_hours_and_unreadable_replies_are_counted() {
        let post = |minute: i64, text: &str| Post { id: format!("p{minute}"), at: Timestamp(3600 + minute * 60), text: text.into() };
        // Two subjects of three posts each, interleaved in time, and one stray post.
        let posts = [post(0, "a"), post(10, "b"), post(20, "a"), post(30, "b"), post(60, "a"), post(70, "b"), post(120, "c")];
        let axis = |text: &str| match text {
            "a" => [1.0, 0.0, 0.0],
            "b" => [0.0, 1.0, 0.0],
            _ => [0.0, 0.0, 1.0],
        };
        let vectors: Vec<f32> = posts.iter().flat_map(|p| axis(&p.text)).collect();
        let event = r#"{"event": true, "title": "地铁开通", "content": "北京地铁新线开通。", "time": "", "location": ""}"#;
        let model = ScriptedModel::replies("scripted", vec![reply(event), reply("好的"), reply("{\"event\": tru")], |_| reply("{}"));
        let kernels: Arc<CpuKernels> = Arc::new(CpuKernels::default());
        let day = futures::executor::block_on(detect(
            "北京",
            "1970-01-01",
            &posts,
            &vectors,
            3,
            &kernels,
            &model,
            Settings::default(),
            &NoProgress,
        ))
        .unwrap();
        assert_eq!((day.posts, day.clusters, day.shown, day.not_events), (7, 3, 2, 0), "the stray post is not shown");
        assert_eq!(day.unreadable, ["{\"event\": tru"], "asked again once, then counted");
        assert_eq!(day.events.len(), 1);
        let e = &day.events[0];
        assert_eq!((e.time.as_str(), e.place.as_str()), ("1970.01.01", "北京"), "the day and the location where the model gave none");
        assert_eq!(e.windows, [Timestamp(3600)], "two of its posts in the first hour, one in the next");
        assert_eq!(e.posts.iter().map(|(id, _)| id.as_str()).collect::<Vec<_>>(), ["p0", "p20", "p60"]);
        let requests = model.requests();
        assert_eq!(requests.len(), 3);
        assert!(requests.iter().all(|r| r.response_format.is_some()));
        assert!(requests[0].messages[0].content.contains("3条") && requests[0].messages[0].content.contains("[01:20] a"));
        let items = items(&[day], "scripted", Settings::default());
        assert_eq!(items[0].sources, ["p0: a", "p20: a", "p60: a"]);
        assert_eq!(
            crate::review::ground_truth(some_schemas::Task::Red, &items),
            json!({"1970-01-01 01:00:00_1970-01-01 02:00:00_北京": [{"标题": "地铁开通", "摘要": "北京地铁新线开通。", "时间": "1970.01.01", "地点": "北京"}]})
        );
    }

    #[test]
    fn a_reply_is_read_from_its_json_object_or_not_at_all() {
        let event = read_reply(
            "好的：{\"event\": true, \"title\": \"地铁开通\", \"content\": \"5月1日地铁开通。\", \"time\": \"\", \"location\": \"北京\"}",
        );
        assert!(matches!(event, Some(Reply::Event { ref title, ref time, .. }) if title == "地铁开通" && time.is_empty()));
        assert!(matches!(read_reply("{\"event\": false}"), Some(Reply::NotEvent)));
        for unreadable in ["{\"event\": true, \"title\": \"\", \"content\": \"x\"}", "{\"event\": \"yes\"}", "no JSON", "{\"event\": tru"] {
            assert!(read_reply(unreadable).is_none(), "{unreadable}");
        }
    }

    #[test]
    fn an_event_is_linked_to_the_hours_it_was_discussed_in() {
        let at = |h: i64, m: i64| Post { id: format!("{h}:{m}"), at: Timestamp(h * 3600 + m * 60), text: String::new() };
        let posts = [at(1, 5), at(1, 50), at(2, 0), at(3, 1), at(3, 2), at(5, 0)];
        assert_eq!(windows(&posts, &[0, 1, 2, 3, 4, 5], 2), [Timestamp(3600), Timestamp(3 * 3600)]);
        assert_eq!(windows(&posts, &[2, 5], 2), [Timestamp(2 * 3600)], "no busy hour: the earliest of the busiest");
    }

    #[test]
    fn annotated_events_are_measured_per_window() {
        let truth = BTreeMap::from([
            ("w1".to_string(), vec!["北京地铁17号线全线开通运营".to_string(), "北京马拉松鸣枪开跑三万人参赛".to_string()]),
            ("w2".to_string(), vec!["北京迎来大规模杨柳飞絮".to_string()]),
        ]);
        let annotated = json!({
            "w1": [{"标题": "地铁17号线开通", "摘要": "北京地铁17号线全线开通运营了"}],
            "w3": [{"标题": "北京天气", "摘要": "今天北京很热"}]
        });
        let m = measure(&annotated, &truth, &|_| true);
        assert_eq!(m, Measured { truth: 3, recalled: 1, annotated: 2, correct: 1 });
        assert!(similarity("北京地铁17号线全线开通运营", "北京马拉松鸣枪开跑三万人参赛") < MATCH_SIMILARITY);
    }
}
