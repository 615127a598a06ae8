//! Does the lake's world hold what every query needs?
//!
//! For each query, the data its answer depends on must be findable with the
//! tools: posts in a RED query's stream and window, the topic of an SES or
//! SMQ question, the users and posts a user-task query names, a report
//! about a MID claim in the knowledge base. `--answers` also checks that each SMQ reference answer is
//! stated in the user's or topic's posts, or, for an answer about a profile
//! field, is the value the profile and the posts show (true of synthetic
//! worlds; not a property the real release promises).

use std::collections::{BTreeMap, HashMap, HashSet};

use arrow::array::AsArray;
use arrow::datatypes::DataType;
use arrow::record_batch::RecordBatch;
use datafusion::prelude::{Expr, cast, col, lit};
use some_schemas::{PostSource, QueryId, QueryRow, Task, Timestamp, buckets, knowledge, posts, ref_posts, users};

use some_jobs::synth::profile_facts::{self, ProfileFacts};
use some_jobs::synth::text::english_keywords;
use some_jobs::tasks::{Grounding, task_def};

use crate::error::Result;
use crate::lake::Lake;

/// Coverage of one task.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TaskCoverage {
    pub queries: usize,
    pub covered: usize,
    /// (query id, what is missing), in query order.
    pub missing: Vec<(QueryId, String)>,
}

/// Coverage of every task present in the lake's queries.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Coverage {
    pub tasks: BTreeMap<Task, TaskCoverage>,
}

impl Coverage {
    pub fn is_complete(&self) -> bool {
        self.tasks.values().all(|t| t.missing.is_empty())
    }
}

fn strings(batches: &[RecordBatch], column: usize) -> Vec<Option<String>> {
    batches
        .iter()
        .flat_map(|b| {
            let col = arrow::compute::cast(b.column(column), &arrow::datatypes::DataType::Utf8).expect("castable to text");
            col.as_string::<i32>().iter().map(|v| v.map(str::to_string)).collect::<Vec<_>>()
        })
        .collect()
}

fn integers(batches: &[RecordBatch], column: usize) -> Vec<i64> {
    batches
        .iter()
        .flat_map(|b| {
            let col = arrow::compute::cast(b.column(column), &arrow::datatypes::DataType::Int64).expect("castable to int");
            let col = col.as_primitive::<arrow::datatypes::Int64Type>();
            (0..col.len()).map(|i| col.value(i)).collect::<Vec<_>>()
        })
        .collect()
}

/// Checks every query of the lake against its world.
pub async fn check_coverage(lake: &Lake, answers: bool) -> Result<Coverage> {
    let ctx = lake.session().await?;
    let queries: Vec<QueryRow> = lake.read(&ctx, None).await?;
    // One column (or two) of the posts of one source.
    let of_source = |source: PostSource, columns: Vec<Expr>| {
        let ctx = ctx.clone();
        async move {
            let df = ctx.table(posts::TABLE).await?.filter(col(posts::source).eq(lit(source.as_str())))?.select(columns)?;
            Ok::<_, crate::Error>(df.distinct()?.collect().await?)
        }
    };
    let column_of = |table: &'static str, column: &'static str| {
        let ctx = ctx.clone();
        async move { Ok::<_, crate::Error>(ctx.table(table).await?.select_columns(&[column])?.collect().await?) }
    };

    let raw = of_source(PostSource::Raw, vec![col(posts::bucket), cast(col(posts::published_at), DataType::Int64)]).await?;
    let mut stream_times: HashMap<String, Vec<i64>> = HashMap::new();
    for (bucket, t) in strings(&raw, 0).into_iter().zip(integers(&raw, 1)) {
        stream_times.entry(bucket.unwrap_or_default()).or_default().push(t);
    }
    let topics: HashSet<String> =
        strings(&of_source(PostSource::Topic, vec![col(posts::bucket)]).await?, 0).into_iter().flatten().collect();
    let profiles: HashSet<String> = strings(&column_of(users::TABLE, users::uid).await?, 0).into_iter().flatten().collect();
    let timelines: HashSet<String> =
        strings(&of_source(PostSource::Weibo, vec![col(posts::uid)]).await?, 0).into_iter().flatten().collect();
    let ref_posts: HashSet<String> = strings(&column_of(ref_posts::TABLE, ref_posts::post_id).await?, 0).into_iter().flatten().collect();
    let reports = Reports::new(strings(&column_of(knowledge::TABLE, knowledge::content).await?, 0).into_iter().flatten());

    let mut coverage = Coverage::default();
    for q in &queries {
        let task = q.task;
        let missing = match task_def(task).grounding {
            Grounding::Stream => red_missing(q, &stream_times),
            Grounding::Topic => topic_missing(q.topic.as_deref(), &topics),
            Grounding::KnowledgeBase => reports.missing(q.claim.as_deref()),
            Grounding::UserOrTopic => match (&q.uid, &q.topic) {
                (Some(uid), _) => user_missing(uid, &profiles, &timelines),
                (None, Some(topic)) => topic_missing(Some(topic), &topics),
                // Two release questions name no user or topic; nothing can ground them.
                (None, None) => None,
            },
            Grounding::UserAndPost => {
                let uid = q.uid.as_deref().unwrap_or_default();
                let post = q.post_id.as_deref().unwrap_or_default();
                user_missing(uid, &profiles, &timelines)
                    .or_else(|| (!ref_posts.contains(post)).then(|| format!("post {post} is not in ref_posts")))
            }
        };
        let missing = match (missing, answers && task == Task::Smq) {
            (None, true) => answer_missing(&ctx, q).await?,
            (m, _) => m,
        };
        let entry = coverage.tasks.entry(task).or_default();
        entry.queries += 1;
        match missing {
            None => entry.covered += 1,
            Some(what) => entry.missing.push((q.query_id.clone(), what)),
        }
    }
    Ok(coverage)
}

fn red_missing(q: &QueryRow, streams: &HashMap<String, Vec<i64>>) -> Option<String> {
    let (Some(location), Some(start), Some(end)) = (&q.location, q.window_start, q.window_end) else {
        return Some("the query has no window".into());
    };
    let mut days = vec![start.day()];
    if Timestamp(end.0 - 1).day() != start.day() {
        days.push(Timestamp(end.0 - 1).day());
    }
    let in_window =
        days.iter().filter_map(|d| streams.get(&buckets::raw(d, location))).flatten().filter(|t| **t >= start.0 && **t < end.0).count();
    (in_window == 0).then(|| format!("no posts in {location} from {start} to {end}"))
}

/// The knowledge base as the documents each word appears in, to find a
/// report about a claim: a document naming three of the claim's first four
/// key words (all, if it has fewer), as fact-check reports name what they
/// rate. A non-empty base is not enough: in a world made for a sample of a
/// release's claims every claim would count as grounded, and what reads the
/// knowledge base would score at chance on the rest. Two of four is not
/// enough either: on the demo's world, made for one claim, 25 of the 1,451
/// claims share two key words with its background notes.
struct Reports {
    docs: usize,
    by_word: HashMap<String, Vec<u32>>,
}

/// The key words of a claim a report is looked for by.
const CLAIM_KEY_WORDS: usize = 4;

impl Reports {
    fn new(contents: impl Iterator<Item = String>) -> Reports {
        let mut by_word: HashMap<String, Vec<u32>> = HashMap::new();
        let mut docs = 0;
        for (i, content) in contents.enumerate() {
            docs += 1;
            let mut words: Vec<String> = english_keywords(&content).iter().map(|w| w.to_lowercase()).collect();
            words.sort_unstable();
            words.dedup();
            for w in words {
                by_word.entry(w).or_default().push(i as u32);
            }
        }
        Reports { docs, by_word }
    }

    fn missing(&self, claim: Option<&str>) -> Option<String> {
        if self.docs == 0 {
            return Some("the knowledge base is empty".into());
        }
        let Some(claim) = claim else { return Some("the query has no claim".into()) };
        let keys: Vec<String> = english_keywords(claim).into_iter().take(CLAIM_KEY_WORDS).map(|w| w.to_lowercase()).collect();
        let need = keys.len().clamp(1, CLAIM_KEY_WORDS - 1);
        let mut hits: HashMap<u32, usize> = HashMap::new();
        for doc in keys.iter().filter_map(|k| self.by_word.get(k)).flatten() {
            *hits.entry(*doc).or_default() += 1;
        }
        (!hits.values().any(|n| *n >= need))
            .then(|| format!("no report in the knowledge base names {need} of the claim's key words {keys:?}"))
    }
}

fn topic_missing(topic: Option<&str>, topics: &HashSet<String>) -> Option<String> {
    let topic = topic?;
    (!topics.contains(&buckets::topic(topic))).then(|| format!("topic {topic:?} has no posts"))
}

fn user_missing(uid: &str, users: &HashSet<String>, timelines: &HashSet<String>) -> Option<String> {
    if !users.contains(uid) {
        return Some(format!("user {uid} has no profile"));
    }
    (!timelines.contains(uid)).then(|| format!("user {uid} has no posts"))
}

async fn answer_missing(ctx: &datafusion::prelude::SessionContext, q: &QueryRow) -> Result<Option<String>> {
    let answer = q.reference.clone().unwrap_or_default();
    if let Some(uid) = &q.uid {
        let facts = profile_facts::read(q.question.as_deref().unwrap_or_default(), &answer);
        if facts != ProfileFacts::default() {
            return profile_missing(ctx, uid, &facts).await;
        }
    }
    let filter = match (&q.uid, &q.topic) {
        (Some(uid), _) => col(posts::source)
            .eq(lit(PostSource::Weibo.as_str()))
            .and(col(posts::bucket).eq(lit(buckets::weibo(uid))))
            .and(col(posts::uid).eq(lit(uid.clone()))),
        (None, Some(topic)) => {
            col(posts::source).eq(lit(PostSource::Topic.as_str())).and(col(posts::bucket).eq(lit(buckets::topic(topic))))
        }
        (None, None) => return Ok(None),
    };
    let df = ctx
        .table(posts::TABLE)
        .await?
        .filter(filter.and(datafusion::functions::expr_fn::strpos(col(posts::content), lit(answer)).gt(lit(0))))?;
    let found = df.count().await?;
    Ok((found == 0).then(|| "the reference answer is not stated in any of its posts".to_string()))
}

/// A profile-field answer is what the profile and the posts show, not a
/// sentence in a post.
async fn profile_missing(ctx: &datafusion::prelude::SessionContext, uid: &str, facts: &ProfileFacts) -> Result<Option<String>> {
    let text =
        |batches: &[RecordBatch], i: usize| -> Vec<String> { strings(batches, i).into_iter().map(Option::unwrap_or_default).collect() };
    let profile = ctx
        .table(users::TABLE)
        .await?
        .filter(col(users::uid).eq(lit(uid)))?
        .select_columns(&[users::followers_count, users::friends_count, users::verified_reason])?
        .collect()
        .await?;
    let timeline = ctx
        .table(posts::TABLE)
        .await?
        .filter(
            col(posts::source)
                .eq(lit(PostSource::Weibo.as_str()))
                .and(col(posts::bucket).eq(lit(buckets::weibo(uid))))
                .and(col(posts::uid).eq(lit(uid))),
        )?
        .select_columns(&[posts::client, posts::location])?
        .collect()
        .await?;
    let (followers, friends, verified) = (text(&profile, 0), text(&profile, 1), text(&profile, 2));
    let (clients, locations) = (text(&timeline, 0), text(&timeline, 1));
    let wrong = |what: &str, want: &str| Some(format!("the answer's {what} {want:?} is not what the tools show"));
    Ok(if facts.followers.is_some_and(|n| followers.first() != Some(&n.to_string())) {
        wrong("follower count", &facts.followers.unwrap_or_default().to_string())
    } else if facts.friends.is_some_and(|n| friends.first() != Some(&n.to_string())) {
        wrong("following count", &facts.friends.unwrap_or_default().to_string())
    } else if let Some(v) = facts.verified.as_ref().filter(|v| verified.first() != Some(*v)) {
        wrong("verification", v)
    } else if let Some(d) = facts.device.as_ref().filter(|d| !clients.contains(*d)) {
        wrong("device", d)
    } else if let Some(r) = facts.regions.iter().find(|r| !locations.iter().any(|l| l.ends_with(r.as_str()))) {
        wrong("region", r)
    } else {
        None
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claim_is_grounded_by_a_report_naming_three_of_its_four_key_words() {
        let reports = Reports::new(
            [
                "PolitiFact examined a statement about Governor, budget, schools, teachers that has been shared widely.",
                "Background note on farming. Questions about budget come up often.",
            ]
            .into_iter()
            .map(String::from),
        );
        let claim = "The governor cut the budget for schools and teachers last year.";
        assert_eq!(reports.missing(Some(claim)), None);
        // Shared words are not enough: a background note names one, and a
        // report about another claim about schools' budget two.
        let other = "The budget of the navy doubled while schools closed.";
        let missing = reports.missing(Some(other)).expect("not grounded");
        assert!(missing.contains("3 of the claim's key words"), "{missing}");
        assert_eq!(reports.missing(None).as_deref(), Some("the query has no claim"));
        assert_eq!(Reports::new(std::iter::empty()).missing(Some(claim)).as_deref(), Some("the knowledge base is empty"));
    }
}
