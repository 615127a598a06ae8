//! Users, their timelines, and the posts the user-task queries show.

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde_json::json;
use some_schemas::{PostRow, PostSource, RefPostRow, Timestamp, UserRow};

use super::lexicon::{CATEGORIES, CLIENTS, EMOTICONS, EMOTION_WORDS, PROVINCES, VERIFIED};
use super::plan::{Engagement, UserKind, UserPlan, per_item};
use super::text::{chatter, fill_blank, nickname, pick, remark};
use super::{World, signals, unit_rng};

/// A Pareto-like count: mostly small, sometimes large.
fn heavy_count(rng: &mut ChaCha8Rng, scale: f64) -> i64 {
    (scale * (rng.random_range(0.001f64..1.0).powf(-0.8) - 1.0)) as i64
}

/// The profile of a user. Deterministic per user, so posts that name their
/// author agree with the `users` table.
pub(super) fn profile(world: &World, u: usize) -> UserRow {
    let user = &world.users[u];
    let mut rng = unit_rng(world.config.seed, &format!("profile/{}", user.uid));
    let drawn = pick(&mut rng, PROVINCES).to_string();
    let province = user.facts.regions.first().cloned().unwrap_or(drawn);
    let interests: Vec<&str> = user.interests.iter().map(|c| CATEGORIES[*c].name).collect();
    let (name, verified, description) = match user.kind {
        UserKind::Media => (
            format!("{}{}资讯", province, CATEGORIES[user.interests[0]].name),
            Some("媒体账号".to_string()),
            format!("关注{}，每天为你带来最新消息", interests.join("、")),
        ),
        _ => {
            let verified = rng.random_bool(0.1).then(|| pick(&mut rng, VERIFIED).to_string());
            (nickname(&mut rng), verified, format!("喜欢{}，记录生活", interests.join("和")))
        }
    };
    let followers = heavy_count(&mut rng, if user.kind == UserKind::Media { 20_000.0 } else { 150.0 });
    let friends = heavy_count(&mut rng, 80.0);
    let facts = &user.facts;
    UserRow {
        uid: user.uid.clone(),
        name: Some(name),
        followers_count: Some(facts.followers.unwrap_or(followers)),
        friends_count: Some(facts.friends.unwrap_or(friends)),
        total_rcl_count: Some(heavy_count(&mut rng, 300.0)),
        verified_reason: facts.verified.clone().or(verified),
        description: Some(description),
        location: Some(province),
        extra: None,
    }
}

pub(super) fn profiles(world: &World) -> Vec<UserRow> {
    (0..world.users.len()).map(|u| profile(world, u)).collect()
}

/// A referenced post: its text and counts, shared by the author's timeline
/// and the query-facing `ref_posts` entry.
struct RefContent {
    content: String,
    reposts: i64,
    comments: i64,
    likes: i64,
}

fn ref_content(world: &World, p: usize) -> RefContent {
    let post = &world.ref_posts[p];
    let mut rng = unit_rng(world.config.seed, &format!("ref/{}", post.id));
    let category = &CATEGORIES[post.category];
    let subject = category.subjects[post.subject];
    let content = format!("【{subject}】{}", remark(&mut rng, category, subject, EMOTICONS));
    RefContent { content, reposts: heavy_count(&mut rng, 50.0), comments: heavy_count(&mut rng, 50.0), likes: heavy_count(&mut rng, 200.0) }
}

pub(super) fn ref_posts(world: &World) -> Vec<RefPostRow> {
    world
        .ref_posts
        .iter()
        .enumerate()
        .map(|(p, post)| {
            let c = ref_content(world, p);
            let author = profile(world, post.author);
            let entry = json!({
                "内容": c.content,
                "发布时间": post.published_at.naive().format("%Y-%m-%d %H:%M").to_string(),
                "发布者": author.name,
                "发布地点": format!("发布于 {}", author.location.unwrap_or_default()),
                "转发量": c.reposts,
                "评论量": c.comments,
                "点赞量": c.likes,
            });
            RefPostRow { post_id: post.id.clone(), json: entry.to_string() }
        })
        .collect()
}

struct Timeline<'w> {
    world: &'w World,
    user: &'w UserPlan,
    province: String,
    /// The emotion the user's everyday posts lean to.
    temperament: usize,
    rng: ChaCha8Rng,
    posts: Vec<PostRow>,
}

impl Timeline<'_> {
    fn push(&mut self, id: Option<String>, at: Option<Timestamp>, content: String) {
        let rng = &mut self.rng;
        let id = id.unwrap_or_else(|| format!("5{:015}", rng.random_range(0..1_000_000_000_000_000u64)));
        let base = Timestamp::parse("2024-06-01 00:00:00").expect("literal");
        let at = at.unwrap_or_else(|| Timestamp(base.0 + rng.random_range(0..365 * 86_400)));
        let facts = &self.user.facts;
        // Device and regions an SMQ answer names show on every post.
        let client = facts.device.clone().unwrap_or_else(|| pick(rng, CLIENTS).to_string());
        let region = match facts.regions.len() {
            0 => self.province.clone(),
            n => facts.regions[self.posts.len() % n].clone(),
        };
        self.posts.push(PostRow {
            post_id: id,
            published_at: Some(at),
            area: None,
            topic: None,
            uid: Some(self.user.uid.clone()),
            nickname: None,
            platform: None,
            title: None,
            content,
            description: None,
            ocr: None,
            location: Some(format!("发布于 {region}")),
            client: Some(client),
            reposts: Some(heavy_count(rng, 3.0)),
            comments: Some(heavy_count(rng, 3.0)),
            likes: Some(heavy_count(rng, 10.0)),
            pic_num: Some(0),
            pictures: Some("[]".to_string()),
            video: None,
            rca_list: None,
            extra: None,
            ordinal: 0,
            source: PostSource::Weibo.as_str().to_string(),
            bucket: some_schemas::buckets::weibo(&self.user.uid),
        });
    }

    /// An everyday post: a remark about one of the user's interests (never
    /// a subject their queries show), or chatter; some carry the words of
    /// the user's temperament.
    fn filler(&mut self) -> String {
        let mut line = self.everyday();
        if self.rng.random_bool(signals::TEMPERED_SHARE) {
            line.push('，');
            line.push_str(pick(&mut self.rng, EMOTION_WORDS[self.temperament].1));
        }
        line
    }

    fn everyday(&mut self) -> String {
        if self.rng.random_bool(0.3) {
            return chatter(&mut self.rng, None, EMOTICONS);
        }
        let c = self.user.interests[self.rng.random_range(0..self.user.interests.len())];
        let category = &CATEGORIES[c];
        let start = self.rng.random_range(0..category.subjects.len());
        let free =
            (0..category.subjects.len()).map(|k| (start + k) % category.subjects.len()).find(|s| !self.user.avoid.contains(&(c, *s)));
        match free {
            Some(s) => remark(&mut self.rng, category, category.subjects[s], EMOTICONS),
            None => chatter(&mut self.rng, None, EMOTICONS),
        }
    }

    fn subject(&self, post: usize) -> &'static str {
        let p = &self.world.ref_posts[post];
        CATEGORIES[p.category].subjects[p.subject]
    }

    /// The evidence of one engagement (see [`signals`]).
    fn evidence(&mut self, e: &Engagement) -> Vec<String> {
        let n = signals::mentions(&mut self.rng);
        let subject = self.subject(e.post());
        let rng = &mut self.rng;
        (0..n)
            .map(|_| match e {
                Engagement::Interest { positive, .. } => {
                    let templates = if *positive { signals::ENGAGED } else { signals::DISENGAGED };
                    fill_blank(pick(rng, templates), &signals::subject_form(rng, subject))
                }
                Engagement::Emotion { emotion, .. } => {
                    fill_blank(pick(rng, signals::REACTIONS[*emotion]), &signals::subject_form(rng, subject))
                }
                Engagement::Comment { text, .. } => {
                    let fragment = signals::fragment(rng, text);
                    signals::own_comment(rng, &fragment)
                }
                Engagement::Quote { text, .. } => {
                    let (who, fragment) = (nickname(rng), signals::fragment(rng, text));
                    signals::quoted_repost(rng, &who, &fragment)
                }
            })
            .collect()
    }
}

/// The timelines of the given users (one `posts` partition).
pub(super) fn generate_timelines(world: &World, users: &[usize]) -> Vec<PostRow> {
    let k = per_item(world.config.scale);
    let mut out = Vec::new();
    for &u in users {
        let user = &world.users[u];
        let province = profile(world, u).location.unwrap_or_default();
        let mut rng = unit_rng(world.config.seed, &format!("timeline/{}", user.uid));
        let temperament = signals::temperament(&mut rng);
        let mut t = Timeline { world, user, province, temperament, rng, posts: Vec::with_capacity(user.total as usize) };
        for &p in &user.authored {
            let c = ref_content(world, p);
            let post = &world.ref_posts[p];
            t.push(Some(post.id.clone()), Some(post.published_at), c.content);
            let last = t.posts.last_mut().expect("just pushed");
            (last.reposts, last.comments, last.likes) = (Some(c.reposts), Some(c.comments), Some(c.likes));
        }
        for e in &user.engagements {
            for line in t.evidence(e) {
                t.push(None, None, line);
            }
        }
        for answer in &user.answers {
            for i in 0..k {
                let line = match i % 3 {
                    0 => answer.clone(),
                    1 => format!("今天又想起：{answer}"),
                    _ => format!("{answer}{}", pick(&mut t.rng, EMOTICONS)),
                };
                t.push(None, None, line);
            }
        }
        while (t.posts.len() as u64) < user.total {
            let line = t.filler();
            t.push(None, None, line);
        }
        out.extend(t.posts);
    }
    out
}
