//! Planning: from the queries to what every collection must contain.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use chrono::{Duration, NaiveDate, Timelike};
use rand::Rng;
use some_schemas::{PostSource, QueryRow, Task, Timestamp, buckets};

use super::lexicon::{CATEGORIES, EMOTION_WORDS};
use super::profile_facts::ProfileFacts;
use super::signals::{ALTERED_NOTES, MAX_MENTIONS, STANCE_REPORTS};
use super::text::{fact_sentences, first_date};
use super::{PAPER_VOLUMES, Scale, SynthConfig, Unit, UnitPart, apportion, unit_rng};
use crate::error::{Error, Result};

/// A planned world: everything generation needs, nothing generated yet.
pub struct World {
    pub(super) config: SynthConfig,
    pub(super) queries: Vec<QueryRow>,
    pub(super) red_windows: Vec<RedWindow>,
    pub(super) raw_units: Vec<RawUnit>,
    pub(super) topics: Vec<TopicPlan>,
    pub(super) users: Vec<UserPlan>,
    pub(super) ref_posts: Vec<RefPost>,
    pub(super) claims: Vec<ClaimPlan>,
    pub(super) units: Vec<Unit>,
}

pub(super) struct RedEvent {
    pub title: String,
    pub summary: String,
    pub place: String,
}

pub(super) struct RedWindow {
    pub location: String,
    pub start: Timestamp,
    pub end: Timestamp,
    pub events: Vec<RedEvent>,
}

pub(super) struct RawUnit {
    pub day: NaiveDate,
    pub location: String,
    /// Posts per hour of the day.
    pub hours: [u64; 24],
    /// RED windows starting in each hour.
    pub windows: [Vec<usize>; 24],
}

pub(super) struct TopicPlan {
    pub name: String,
    pub start: Timestamp,
    pub span_secs: i64,
    pub facts: Vec<String>,
    /// SMQ questions about the topic: (question without its topic prefix, answer).
    pub answers: Vec<(String, String)>,
    pub total: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum UserKind {
    /// Named by a query.
    Referenced,
    /// Authors the posts the user-task queries show.
    Media,
    /// Fills the world to the paper's user count.
    Filler,
}

pub(super) enum Engagement {
    /// MCR or UBP: the user engaged with the post (or turned it down).
    Interest { post: usize, positive: bool },
    /// UEA: the user reacts to the post with this emotion (index into EMOTION_WORDS).
    Emotion { post: usize, emotion: usize },
    /// UCS: the user wrote this comment on the post.
    Comment { post: usize, text: String },
    /// UCS: someone else wrote this comment on the post; the user saw it.
    Quote { post: usize, text: String },
}

impl Engagement {
    pub fn post(&self) -> usize {
        match self {
            Engagement::Interest { post, .. }
            | Engagement::Emotion { post, .. }
            | Engagement::Comment { post, .. }
            | Engagement::Quote { post, .. } => *post,
        }
    }
}

pub(super) struct UserPlan {
    pub uid: String,
    pub kind: UserKind,
    pub interests: Vec<usize>,
    pub engagements: Vec<Engagement>,
    /// SMQ answers the user's posts must state.
    pub answers: Vec<String>,
    /// SMQ answers about profile fields: the profile and posts carry them.
    pub facts: ProfileFacts,
    /// Subjects (category, subject) of the posts the user's queries show:
    /// everyday posts leave them to the engagements' evidence.
    pub avoid: HashSet<(usize, usize)>,
    /// Referenced posts this user authored.
    pub authored: Vec<usize>,
    pub total: u64,
}

pub(super) struct RefPost {
    pub id: String,
    pub category: usize,
    pub subject: usize,
    pub author: usize,
    pub published_at: Timestamp,
}

pub(super) struct ClaimPlan {
    pub claim: String,
    pub label: String,
    pub stance_reports: u64,
    /// Notes quoting the claim but rating an altered version of it.
    pub altered: u64,
    /// Background notes sharing the claim's words, about something else.
    pub distractors: u64,
}

/// Posts per fact, answer or engagement at each scale.
pub(super) fn per_item(scale: Scale) -> u64 {
    match scale {
        Scale::Small => 2,
        Scale::Paper => 3,
    }
}

fn invalid(query: &QueryRow, what: &str) -> Error {
    Error::Invalid(format!("query {} ({}): {what}", query.query_id, query.task))
}

impl World {
    /// Plans a world for `queries` (any subset of the release).
    pub fn plan(queries: &[QueryRow], config: SynthConfig) -> Result<World> {
        if queries.is_empty() {
            return Err(Error::Invalid("no queries to ground the world in: run `some ingest queries` first".into()));
        }
        let mut queries = queries.to_vec();
        queries.sort_by(|a, b| a.query_id.cmp(&b.query_id));
        let mut world = World {
            config,
            queries,
            red_windows: Vec::new(),
            raw_units: Vec::new(),
            topics: Vec::new(),
            users: Vec::new(),
            ref_posts: Vec::new(),
            claims: Vec::new(),
            units: Vec::new(),
        };
        world.plan_red()?;
        world.plan_topics()?;
        world.plan_users()?;
        world.plan_claims();
        world.plan_volumes()?;
        Ok(world)
    }

    pub fn config(&self) -> SynthConfig {
        self.config
    }

    pub fn units(&self) -> &[Unit] {
        &self.units
    }

    pub fn post_count(&self) -> u64 {
        self.units.iter().map(|u| u.posts).sum()
    }

    pub fn user_count(&self) -> usize {
        self.users.len()
    }

    pub fn knowledge_count(&self) -> u64 {
        self.claims.iter().map(|c| c.stance_reports + c.altered + c.distractors).sum()
    }

    fn tasks(&self, task: Task) -> impl Iterator<Item = &QueryRow> {
        self.queries.iter().filter(move |q| q.task == task)
    }

    fn plan_red(&mut self) -> Result<()> {
        let mut windows = Vec::new();
        for q in self.tasks(Task::Red) {
            let (Some(location), Some(start), Some(end), Some(reference)) = (&q.location, q.window_start, q.window_end, &q.reference)
            else {
                return Err(invalid(q, "a RED query needs a location, a window and reference events"));
            };
            let events: Vec<serde_json::Value> =
                serde_json::from_str(reference).map_err(|e| invalid(q, &format!("reference is not a list of events: {e}")))?;
            let text = |e: &serde_json::Value, k: &str| e.get(k).and_then(|v| v.as_str()).unwrap_or_default().to_string();
            let events =
                events.iter().map(|e| RedEvent { title: text(e, "标题"), summary: text(e, "摘要"), place: text(e, "地点") }).collect();
            windows.push(RedWindow { location: location.clone(), start, end, events });
        }
        let days: BTreeSet<NaiveDate> = windows.iter().map(|w| w.start.naive().date()).collect();
        let locations: BTreeSet<&str> = windows.iter().map(|w| w.location.as_str()).collect();
        let mut index: BTreeMap<(NaiveDate, &str), usize> = BTreeMap::new();
        for day in &days {
            for location in &locations {
                index.insert((*day, location), self.raw_units.len());
                self.raw_units.push(RawUnit { day: *day, location: location.to_string(), hours: [0; 24], windows: Default::default() });
            }
        }
        for (i, w) in windows.iter().enumerate() {
            let unit = index[&(w.start.naive().date(), w.location.as_str())];
            self.raw_units[unit].windows[w.start.naive().hour() as usize].push(i);
        }
        self.red_windows = windows;
        Ok(())
    }

    fn plan_topics(&mut self) -> Result<()> {
        let mut topics: BTreeMap<String, TopicPlan> = BTreeMap::new();
        let new_topic = |name: &str| TopicPlan {
            name: name.to_string(),
            start: Timestamp::parse("2025-01-01 00:00:00").expect("literal"),
            span_secs: 30 * 86_400,
            facts: Vec::new(),
            answers: Vec::new(),
            total: 0,
        };
        for q in self.tasks(Task::Ses) {
            let (Some(topic), Some(summary)) = (&q.topic, &q.reference) else {
                return Err(invalid(q, "an SES query needs a topic and a reference summary"));
            };
            let plan = topics.entry(topic.clone()).or_insert_with(|| new_topic(topic));
            plan.facts = fact_sentences(summary);
            if plan.facts.is_empty() {
                plan.facts.push(summary.chars().take(200).collect());
            }
            if let Some(date) = first_date(summary) {
                let start = date.and_hms_opt(0, 0, 0).expect("midnight") - Duration::days(1);
                plan.start = Timestamp::from_naive(start);
            }
        }
        for q in self.tasks(Task::Smq) {
            let (Some(topic), Some(question), Some(answer)) = (&q.topic, &q.question, &q.reference) else { continue };
            let plan = topics.entry(topic.clone()).or_insert_with(|| new_topic(topic));
            let core = question.split_once('，').map_or(question.as_str(), |(_, rest)| rest);
            plan.answers.push((core.to_string(), answer.clone()));
        }
        self.topics = topics.into_values().collect();
        Ok(())
    }

    fn plan_users(&mut self) -> Result<()> {
        let mut rng = unit_rng(self.config.seed, "users");
        let mut index: HashMap<String, usize> = HashMap::new();
        let mut ref_index: HashMap<String, usize> = HashMap::new();
        let mut users: Vec<UserPlan> = Vec::new();
        let mut ref_ids: Vec<String> = Vec::new();
        let new_user = |uid: &str, kind| UserPlan {
            uid: uid.to_string(),
            kind,
            interests: Vec::new(),
            engagements: Vec::new(),
            answers: Vec::new(),
            facts: ProfileFacts::default(),
            avoid: HashSet::new(),
            authored: Vec::new(),
            total: 0,
        };
        let mut user = |uid: &str, users: &mut Vec<UserPlan>| -> usize {
            *index.entry(uid.to_string()).or_insert_with(|| {
                users.push(new_user(uid, UserKind::Referenced));
                users.len() - 1
            })
        };
        for q in &self.queries {
            let task = q.task;
            if task == Task::Smq {
                if let (Some(uid), Some(question), Some(answer)) = (&q.uid, &q.question, &q.reference) {
                    let u = user(uid, &mut users);
                    if !users[u].facts.learn(question, answer) {
                        users[u].answers.push(answer.clone());
                    }
                }
                continue;
            }
            if !task.is_user_task() {
                continue;
            }
            let (Some(uid), Some(post_id), Some(label)) = (&q.uid, &q.post_id, &q.label) else {
                return Err(invalid(q, "a user-task query needs a uid, a post id and a label"));
            };
            let u = user(uid, &mut users);
            let post = *ref_index.entry(post_id.clone()).or_insert_with(|| {
                ref_ids.push(post_id.clone());
                ref_ids.len() - 1
            });
            let positive = label == "是";
            let text = || q.comment.clone().unwrap_or_default();
            let engagement = match task {
                Task::Uea => {
                    let emotion = EMOTION_WORDS.iter().position(|(e, _)| e == label).ok_or_else(|| invalid(q, "unknown emotion"))?;
                    Engagement::Emotion { post, emotion }
                }
                Task::Ucs if positive => Engagement::Comment { post, text: text() },
                Task::Ucs => Engagement::Quote { post, text: text() },
                Task::Ubp | Task::Mcr => Engagement::Interest { post, positive },
                Task::Red | Task::Ses | Task::Mid | Task::Smq => return Err(invalid(q, "not a user task")),
            };
            users[u].engagements.push(engagement);
        }

        // Authors of the referenced posts.
        let mut taken: HashSet<String> = users.iter().map(|u| u.uid.clone()).collect();
        let mut fresh_uid = |rng: &mut rand_chacha::ChaCha8Rng| loop {
            let uid = rng.random_range(1_000_000_000u64..8_000_000_000).to_string();
            if taken.insert(uid.clone()) {
                return uid;
            }
        };
        let media_count = ref_ids.len().div_ceil(100).max(if ref_ids.is_empty() { 0 } else { 5 });
        let first_media = users.len();
        for _ in 0..media_count {
            let uid = fresh_uid(&mut rng);
            users.push(new_user(&uid, UserKind::Media));
        }
        if self.config.scale == Scale::Paper {
            let target = PAPER_VOLUMES.users as usize;
            if users.len() > target {
                return Err(Error::Invalid(format!("the queries name {} users, more than the paper's {target}", users.len())));
            }
            while users.len() < target {
                let uid = fresh_uid(&mut rng);
                users.push(new_user(&uid, UserKind::Filler));
            }
        }

        self.ref_posts = ref_ids
            .into_iter()
            .map(|id| {
                let author = first_media + rng.random_range(0..media_count);
                let secs = rng.random_range(0..200 * 86_400);
                let base = Timestamp::parse("2024-11-01 00:00:00").expect("literal");
                RefPost { id, category: 0, subject: 0, author, published_at: Timestamp(base.0 + secs) }
            })
            .collect();
        for (i, p) in self.ref_posts.iter().enumerate() {
            users[p.author].authored.push(i);
        }
        self.users = users;
        self.assign_subjects(&mut rng);
        Ok(())
    }

    /// Gives each referenced post a subject, no two posts of one user's
    /// queries the same subject, so each engagement's evidence speaks to
    /// one post. A user's interests are the categories of all the posts
    /// their queries show, engaged or turned down alike: the category says
    /// nothing of the label (positives from weak interests, negatives from
    /// the user's own categories).
    fn assign_subjects(&mut self, rng: &mut rand_chacha::ChaCha8Rng) {
        let mut engaged: Vec<Vec<usize>> = vec![Vec::new(); self.ref_posts.len()];
        for (u, user) in self.users.iter().enumerate() {
            for e in &user.engagements {
                engaged[e.post()].push(u);
            }
        }
        let mut used: HashSet<(usize, usize)> = HashSet::new();
        for (p, users) in engaged.iter().enumerate() {
            let free = |c: usize, s: usize| users.iter().all(|u| !self.users[*u].avoid.contains(&(c, s)));
            let mut pick = (0, 0);
            for attempt in 0..256 {
                let c = rng.random_range(0..CATEGORIES.len());
                let s = rng.random_range(0..CATEGORIES[c].subjects.len());
                // Prefer a subject no other referenced post has; settle for one the users are free of.
                if free(c, s) && (attempt >= 128 || !used.contains(&(c, s))) {
                    pick = (c, s);
                    break;
                }
            }
            used.insert(pick);
            (self.ref_posts[p].category, self.ref_posts[p].subject) = pick;
            for &u in users {
                let user = &mut self.users[u];
                user.avoid.insert(pick);
                if !user.interests.contains(&pick.0) {
                    user.interests.push(pick.0);
                }
            }
        }
        for user in &mut self.users {
            while user.interests.len() < 2 {
                let c = rng.random_range(0..CATEGORIES.len());
                if !user.interests.contains(&c) {
                    user.interests.push(c);
                }
            }
        }
    }

    fn plan_claims(&mut self) {
        self.claims = self
            .tasks(Task::Mid)
            .filter_map(|q| {
                Some(ClaimPlan {
                    claim: q.claim.clone()?,
                    label: q.label.clone()?,
                    stance_reports: STANCE_REPORTS,
                    altered: ALTERED_NOTES,
                    distractors: 2,
                })
            })
            .collect();
    }

    /// Sizes every collection: the minimum each query needs, then, at paper
    /// scale, noise up to the paper's volumes.
    fn plan_volumes(&mut self) -> Result<()> {
        let scale = self.config.scale;
        let k = per_item(scale);
        let mut rng = unit_rng(self.config.seed, "volumes");

        // Location streams: events need k posts each (4 at paper scale),
        // every hour at least one post, every query window some noise.
        let per_event = if scale == Scale::Paper { 4 } else { k };
        let window_noise = if scale == Scale::Paper { 0 } else { 6 };
        let hour_minimums: Vec<[u64; 24]> = self
            .raw_units
            .iter()
            .map(|u| {
                std::array::from_fn(|h| {
                    let need: u64 = u.windows[h].iter().map(|w| self.red_windows[*w].events.len() as u64 * per_event + window_noise).sum();
                    need.max(1)
                })
            })
            .collect();
        const DIURNAL: [f64; 24] = [
            0.35, 0.2, 0.12, 0.08, 0.08, 0.15, 0.4, 0.8, 1.1, 1.25, 1.3, 1.3, 1.4, 1.3, 1.2, 1.2, 1.25, 1.3, 1.4, 1.5, 1.55, 1.4, 1.05,
            0.65,
        ];
        let unit_totals: Vec<u64> = match scale {
            Scale::Small => hour_minimums.iter().map(|h| h.iter().sum()).collect(),
            Scale::Paper => {
                let weights: Vec<f64> =
                    self.raw_units.iter().map(|u| if u.location == "北京" { 1.6 } else { 1.0 } * rng.random_range(0.85..1.15)).collect();
                let minimums: Vec<u64> = hour_minimums.iter().map(|h| h.iter().sum()).collect();
                apportion(PAPER_VOLUMES.raw_posts, &weights, &minimums).map_err(Error::Invalid)?
            }
        };
        for ((unit, minimums), total) in self.raw_units.iter_mut().zip(&hour_minimums).zip(unit_totals) {
            let hours = apportion(total, &DIURNAL, minimums).map_err(Error::Invalid)?;
            unit.hours.copy_from_slice(&hours);
        }

        // Topic collections: heavy-tailed sizes.
        let topic_noise = if scale == Scale::Paper { 50 } else { 10 };
        let minimums: Vec<u64> = self.topics.iter().map(|t| (t.facts.len() + t.answers.len()) as u64 * k + topic_noise).collect();
        let totals = match scale {
            Scale::Small => minimums,
            Scale::Paper => {
                let weights: Vec<f64> = self.topics.iter().map(|_| rng.random_range(0.05f64..1.0).powf(-0.6)).collect();
                apportion(PAPER_VOLUMES.topic_posts, &weights, &minimums).map_err(Error::Invalid)?
            }
        };
        for (t, total) in self.topics.iter_mut().zip(totals) {
            t.total = total;
        }

        // Timelines: Pareto-distributed activity.
        let base = if scale == Scale::Paper { 3 } else { 2 };
        let minimums: Vec<u64> = self
            .users
            .iter()
            .map(|u| {
                u.engagements.len() as u64 * MAX_MENTIONS + u.answers.len() as u64 * k + u.facts.posts() + u.authored.len() as u64 + base
            })
            .collect();
        let totals = match scale {
            Scale::Small => minimums,
            Scale::Paper => {
                let weights: Vec<f64> = self.users.iter().map(|_| rng.random_range(0.001f64..1.0).powf(-1.0 / 1.5)).collect();
                apportion(PAPER_VOLUMES.weibo_posts, &weights, &minimums).map_err(Error::Invalid)?
            }
        };
        for (u, total) in self.users.iter_mut().zip(totals) {
            u.total = total;
        }

        // Knowledge: the paper's report count, spread over the claims.
        if scale == Scale::Paper && !self.claims.is_empty() {
            let stance: u64 = self.claims.iter().map(|c| c.stance_reports + c.altered).sum();
            let weights = vec![1.0; self.claims.len()];
            let distractors = apportion(PAPER_VOLUMES.knowledge - stance, &weights, &vec![0; self.claims.len()]).map_err(Error::Invalid)?;
            for (c, d) in self.claims.iter_mut().zip(distractors) {
                c.distractors = d;
            }
        }

        self.units = self.build_units();
        Ok(())
    }

    fn build_units(&self) -> Vec<Unit> {
        let mut units: Vec<Unit> = self
            .raw_units
            .iter()
            .enumerate()
            .map(|(i, u)| Unit {
                source: PostSource::Raw,
                bucket: buckets::raw(&u.day.format("%Y-%m-%d").to_string(), &u.location),
                posts: u.hours.iter().sum(),
                part: UnitPart::Raw(i),
            })
            .collect();
        units.extend(self.topics.iter().enumerate().map(|(i, t)| Unit {
            source: PostSource::Topic,
            bucket: buckets::topic(&t.name),
            posts: t.total,
            part: UnitPart::Topic(i),
        }));
        let mut by_bucket: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        for (i, u) in self.users.iter().enumerate() {
            by_bucket.entry(buckets::weibo(&u.uid)).or_default().push(i);
        }
        units.extend(by_bucket.into_iter().map(|(bucket, users)| Unit {
            source: PostSource::Weibo,
            posts: users.iter().map(|u| self.users[*u].total).sum(),
            bucket,
            part: UnitPart::Weibo(users),
        }));
        units
    }
}
