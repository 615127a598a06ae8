//! A synthetic SoMe world, grounded in the real queries.
//!
//! The real SoMe database cannot be obtained here, but its 17,869 queries
//! can. [`World::plan`] reads the queries and decides, for each one, the data
//! its answer depends on; generation then writes that data amid noise, so
//! every real query is answerable with the eight tools:
//!
//! | task | what the world holds for it |
//! |---|---|
//! | RED | posts in the query's location stream and hour describing each reference event, amid posts that only mention the place |
//! | SES | the reference summary's facts in posts' own words, each breaking early in the stream and retold over the month, amid reactions |
//! | MID | reports naming each claim by its key words and rating it (mostly as its label says), notes quoting it but rating an altered version, distractors |
//! | UBP, MCR | the user's history talks about each shown post's subject, with attachment or dismissively as the label says |
//! | UEA | the user's history describes situations conveying the labelled emotion toward the post's subject |
//! | UCS | the true comment in the user's own words, the distractor quoted from someone else |
//! | SMQ | profile-field answers in the profile and posts; the others stated in the user's or topic's posts |
//!
//! What a reader could count without reading appears equally under every
//! label ([`signals`] is the likelihood model; `solvers::oracle` inverts it).
//!
//! Generation is split into [`Unit`]s, one per `posts` partition, each with
//! its own random stream derived from the seed and the unit's key: any
//! thread may generate any unit and the world is the same for a seed.
//!
//! Scales: [`Scale::Small`] holds what the queries need and little more;
//! [`Scale::Paper`] pads every collection with noise to the paper's volumes.

mod apportion;
mod knowledge;
pub mod lexicon;
mod plan;
pub mod profile_facts;
mod raw;
pub mod signals;
pub mod text;
mod topics;
mod users;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use sha2::{Digest, Sha256};
use some_schemas::{KnowledgeRow, PostRow, PostSource, QueryRow, RefPostRow, UserRow};

pub use apportion::apportion;
pub use plan::World;

use crate::error::Result;

/// How big a world to make.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    /// What the queries need plus a little noise: tens of thousands of posts.
    Small,
    /// The paper's volumes (9,164,284 posts, 6,591 users, 25,686 reports).
    Paper,
}

impl std::str::FromStr for Scale {
    type Err = String;
    fn from_str(s: &str) -> Result<Scale, String> {
        match s {
            "small" => Ok(Scale::Small),
            "paper" => Ok(Scale::Paper),
            _ => Err(format!("unknown scale {s:?}: expected small or paper")),
        }
    }
}

/// The paper's volumes. The paper's per-task figures (Table 1) count posts
/// reachable by each task's tools and overlap: RED 476,611, SES 7,898,959,
/// the user tasks 840,200, in all 9,164,284 distinct posts. A synthetic post
/// belongs to one collection, so the topic collections get what remains:
/// 9,164,284 − 476,611 − 840,200 = 7,847,473.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Volumes {
    pub raw_posts: u64,
    pub topic_posts: u64,
    pub weibo_posts: u64,
    pub users: u64,
    pub knowledge: u64,
}

pub const PAPER_VOLUMES: Volumes =
    Volumes { raw_posts: 476_611, topic_posts: 7_847_473, weibo_posts: 840_200, users: 6_591, knowledge: 25_686 };

impl Volumes {
    pub fn posts(&self) -> u64 {
        self.raw_posts + self.topic_posts + self.weibo_posts
    }
}

/// What `some synth` was asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SynthConfig {
    pub scale: Scale,
    pub seed: u64,
}

/// One partition of `posts`, generated as a whole.
#[derive(Debug, Clone)]
pub struct Unit {
    pub source: PostSource,
    pub bucket: String,
    /// How many posts the unit will hold.
    pub posts: u64,
    part: UnitPart,
}

#[derive(Debug, Clone)]
enum UnitPart {
    Raw(usize),
    Topic(usize),
    Weibo(Vec<usize>),
}

/// The random stream of one unit of generation.
fn unit_rng(seed: u64, key: &str) -> ChaCha8Rng {
    let mut h = Sha256::new();
    h.update(seed.to_le_bytes());
    h.update(key.as_bytes());
    ChaCha8Rng::from_seed(h.finalize().into())
}

impl World {
    /// Generates the posts of one unit, sorted by time.
    pub fn generate(&self, unit: &Unit) -> Vec<PostRow> {
        let mut posts = match &unit.part {
            UnitPart::Raw(i) => raw::generate(self, *i),
            UnitPart::Topic(i) => topics::generate(self, *i),
            UnitPart::Weibo(users) => users::generate_timelines(self, users),
        };
        debug_assert_eq!(posts.len() as u64, unit.posts, "unit {} generated a different count than planned", unit.bucket);
        number_in_file_order(&mut posts);
        // Time order within a file lets a window read skip pages by statistics.
        posts.sort_by(|a, b| (&a.uid, a.published_at).cmp(&(&b.uid, b.published_at)));
        posts
    }

    pub fn users(&self) -> Vec<UserRow> {
        users::profiles(self)
    }

    pub fn ref_posts(&self) -> Vec<RefPostRow> {
        users::ref_posts(self)
    }

    pub fn knowledge(&self) -> Vec<KnowledgeRow> {
        knowledge::generate(self)
    }

    /// Every query the world was planned for.
    pub fn queries(&self) -> &[QueryRow] {
        &self.queries
    }
}

/// The world's own file order, written as each post's `ordinal` (and kept
/// by `--release-out`): a stream or topic in time order, a timeline newest
/// first, as real timelines are.
fn number_in_file_order(posts: &mut [PostRow]) {
    let file = |p: &PostRow| (p.area.clone(), p.topic.clone(), p.uid.clone());
    let mut order: Vec<usize> = (0..posts.len()).collect();
    order.sort_by(|&a, &b| {
        let (a, b) = (&posts[a], &posts[b]);
        let time =
            if a.source == PostSource::Weibo.as_str() { b.published_at.cmp(&a.published_at) } else { a.published_at.cmp(&b.published_at) };
        file(a).cmp(&file(b)).then(time).then_with(|| a.post_id.cmp(&b.post_id))
    });
    let mut previous = None;
    let mut next = 0;
    for i in order {
        let key = Some(file(&posts[i]));
        if key != previous {
            next = 0;
            previous = key;
        }
        posts[i].ordinal = next;
        next += 1;
    }
}

#[cfg(test)]
mod tests;
