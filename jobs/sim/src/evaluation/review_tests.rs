//! A hand-made run of one initial and three regular agents over a seeding
//! turn and two two-turn stages: which of its rows are review items, the
//! seeded sample, and the context each item carries.

use some_schemas::sim::{ActionStatus, sim_reviews};

use super::*;
use crate::agent::memory::Entry;
use crate::agent::persona::Profile;
use crate::agent::test_model;
use crate::platform::ids::{AgentId, PostId};

const RUN: &str = "r";

pub(crate) fn preset() -> Preset {
    Preset { initial_agents: 1, regular_agents: 3, seed_posts: 1, ..Preset::demo() }
}

pub(crate) fn agent(id: u32, kind: AgentKind) -> SimAgentRow {
    let mut p = test_model::persona(id, &format!("persona of {id}"));
    if id == 1 {
        p.profile = Some(Box::new(Profile {
            name: "Ana".into(),
            age: 30,
            gender: "Female".into(),
            nationality: "Irish".into(),
            personality: "Curious".into(),
            hobbies: "Baking".into(),
            history: "Runs a bakery.".into(),
            preferences: "Bread recipes.".into(),
            knowledge: "Knows sourdough starters.".into(),
        }));
    }
    SimAgentRow {
        agent_id: i64::from(id),
        username: p.username.clone(),
        kind: kind.as_str().into(),
        persona_source: p.source.as_str().into(),
        persona: serde_json::to_string(&p).unwrap(),
        activity: 1.0,
        plan: None,
        error: None,
        run_id: RUN.into(),
    }
}

fn post(id: i64, author: i64, turn: i64, content: &str, parent: Option<i64>) -> SimPostRow {
    SimPostRow {
        post_id: id,
        author_id: author,
        turn,
        content: content.into(),
        parent_post_id: parent,
        topic: parent.is_none().then(|| format!("topic {id}")),
        knowledge: (id == 1).then(|| "[0]".into()),
        run_id: RUN.into(),
    }
}

fn action(turn: i64, agent: i64, seq: i32, kind: ActionKind, post: Option<i64>, target: Option<i64>, applied: bool) -> SimActionRow {
    let status = if applied { ActionStatus::Applied } else { ActionStatus::Failed };
    SimActionRow {
        turn,
        agent_id: agent,
        seq,
        item: 0,
        action: kind.as_str().into(),
        post_id: post,
        target_agent_id: target,
        text: (kind == ActionKind::Comment).then(|| "Lovely crumb!".into()),
        status: status.as_str().into(),
        error: None,
        run_id: RUN.into(),
    }
}

pub(crate) struct Rows {
    pub agents: Vec<SimAgentRow>,
    pub posts: Vec<SimPostRow>,
    pub actions: Vec<SimActionRow>,
    pub preset: Preset,
}

impl Rows {
    pub fn rows(&self) -> ReviewRows<'_> {
        ReviewRows { agents: &self.agents, posts: &self.posts, actions: &self.actions, preset: &self.preset }
    }
}

pub(crate) fn rows() -> Rows {
    use ActionKind::*;
    Rows {
        agents: vec![
            agent(0, AgentKind::Initial),
            agent(1, AgentKind::Regular),
            agent(2, AgentKind::Regular),
            agent(3, AgentKind::Regular),
        ],
        posts: vec![
            post(0, 0, 0, "Seed: a sourdough loaf", None),
            post(1, 1, 1, "My starter doubled overnight", None),
            post(2, 2, 1, "Looks great", Some(0)),
            post(3, 3, 3, "Chess club tonight", None),
            post(4, 1, 4, "Good luck!", Some(3)),
        ],
        actions: vec![
            action(0, 0, 0, Post, Some(0), None, true),
            action(1, 1, 0, Browse, Some(0), None, true),
            action(1, 1, 1, Like, Some(0), None, true),
            action(1, 2, 1, Reblog, Some(0), None, true),
            action(1, 2, 2, Comment, Some(0), None, true),
            // Refused: not an action the agent took.
            action(1, 3, 1, Like, Some(9), None, false),
            action(3, 1, 1, Like, Some(3), None, true),
            action(4, 1, 2, Follow, None, Some(3), true),
        ],
        preset: preset(),
    }
}

#[test]
fn the_index_holds_regular_agents_applied_actions_and_texts_of_the_interaction_stages() {
    let r = rows();
    let index = ReviewIndex::build(r.rows()).unwrap();
    let ids: Vec<&str> = index.items().map(|i| i.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "comment:t1:a2:s2",
            "comment_text:p2",
            "comment_text:p4",
            "follow:t4:a1:s2",
            "like:t1:a1:s1",
            "like:t3:a1:s1",
            "post_text:p1",
            "post_text:p3",
            "reblog:t1:a2:s1",
        ]
    );
    let follow = index.get("follow:t4:a1:s2").unwrap();
    assert_eq!((follow.kind, follow.stage, follow.followee, follow.post), (ReviewKind::Follow, 2, Some(3), None));
    assert_eq!(index.get("like:t3:a1:s1").unwrap().stage, 2);

    let mut bad = rows();
    bad.actions[2].turn = 9;
    let err = ReviewIndex::build(bad.rows()).unwrap_err();
    assert_eq!(err.to_string(), "sim_actions: turn 9 agent 1 seq 1: turn 9 is outside the preset's 5 turns");
}

#[test]
fn the_sample_is_seeded_split_over_stages_and_capped_per_kind() {
    let r = rows();
    let index = ReviewIndex::build(r.rows()).unwrap();
    let ids = |s: SampleSettings| sample(&index, &s).into_iter().map(|i| i.id.clone()).collect::<Vec<_>>();
    let everything = ids(SampleSettings { seed: 0, agents: 30, per_kind: 60 });
    assert_eq!(everything.len(), index.len(), "small runs give every item");
    assert_eq!(everything[..3], ["like:t1:a1:s1", "like:t3:a1:s1", "reblog:t1:a2:s1"], "kind, then stage order");

    // One like per stage at most: stage 1 has one, stage 2 one.
    let capped = ids(SampleSettings { seed: 0, agents: 30, per_kind: 2 });
    assert_eq!(capped.iter().filter(|i| i.starts_with("like:")).count(), 2);
    // per_kind 1 over two stages: stage 1 takes the one.
    let one = ids(SampleSettings { seed: 0, agents: 30, per_kind: 1 });
    assert_eq!(one, ["like:t1:a1:s1", "reblog:t1:a2:s1", "comment:t1:a2:s2", "post_text:p1", "comment_text:p2"]);

    // One agent's actions: either agent 1's likes or agent 2's reblog and comment, never both.
    for seed in 0..8 {
        let got = ids(SampleSettings { seed, agents: 1, per_kind: 60 });
        let actions: Vec<&String> = got.iter().filter(|i| !i.contains("_text") && !i.starts_with("follow")).collect();
        let agents: BTreeSet<&str> = actions.iter().map(|i| i.split(':').nth(2).unwrap()).collect();
        assert_eq!(agents.len(), 1, "seed {seed}: {got:?}");
        assert_eq!(got, ids(SampleSettings { seed, agents: 1, per_kind: 60 }), "the same seed draws the same");
    }
    let drawn: BTreeSet<Vec<String>> = (0..8).map(|seed| ids(SampleSettings { seed, agents: 1, per_kind: 60 })).collect();
    assert_eq!(drawn.len(), 2, "both agents are drawn by some seed");
}

#[test]
fn each_item_carries_what_an_annotator_needs_to_judge_it() {
    let r = rows();
    let index = ReviewIndex::build(r.rows()).unwrap();
    let entry = |turn: u32, post: u64, actions: Vec<ActionKind>| Entry {
        turn: Turn(turn),
        post: PostId(post),
        author: AgentId(3),
        text: "Chess club tonight".into(),
        summarised: false,
        actions,
        comment: None,
    };
    let mut memory = Memory::default();
    memory.remember(entry(3, 3, vec![ActionKind::Like]));
    memory.remember(entry(3, 5, vec![]));
    memory.remember_summary("Day 0: looked back at 1 posts and chose to follow user 3.".into());
    let memories = HashMap::from([((1, 4), memory)]);
    let store = PassageStore::new(vec![("Sourdough".into(), "A starter is flour and water.".into())]);
    let src = ItemSources { agents: &r.agents, posts: &r.posts, actions: &r.actions, memories: &memories, passages: Some(&store) };
    let keys: Vec<&ItemKey> =
        ["comment:t1:a2:s2", "follow:t4:a1:s2", "post_text:p1", "comment_text:p4"].iter().map(|id| index.get(id).unwrap()).collect();
    let items = items(&keys, &src, RUN).unwrap();

    let comment = &items[0];
    assert_eq!((comment.target_post_id, comment.target_author.as_str()), (Some(0), "user 0 (@user0)"));
    assert_eq!((comment.target_text.as_str(), comment.text.as_str()), ("Seed: a sourdough loaf", "Lovely crumb!"));
    assert!(comment.question.contains("this agent commented on the post shown"), "{}", comment.question);

    let follow = &items[1];
    assert_eq!((follow.followee.as_str(), follow.followee_persona.as_str()), ("user 3 (@user3)", "persona of 3"));
    assert_eq!(follow.history, "1. A post by user 3 says: Chess club tonight What you did: you liked it.");
    assert_eq!(follow.reflection_note, "Day 0: looked back at 1 posts and chose to follow user 3.");
    assert_eq!(follow.persona, "Personality: Curious\nHobbies: Baking\nContent preferences: Bread recipes.");

    let post = &items[2];
    assert_eq!((post.topic.as_str(), post.passages.as_str()), ("topic 1", "[0] Sourdough: A starter is flour and water."));
    assert_eq!((post.text.as_str(), post.persona_knowledge.as_str()), ("My starter doubled overnight", "Knows sourdough starters."));
    assert_eq!((post.kind.as_str(), post.stage, post.turn, post.agent_id), ("post_text", 1, 1, 1));

    let text = &items[3];
    assert_eq!((text.post_id, text.target_post_id, text.target_text.as_str()), (Some(4), Some(3), "Chess club tonight"));

    let none = HashMap::new();
    let src = ItemSources { memories: &none, ..src };
    let err = super::items(&keys[1..2], &src, RUN).unwrap_err();
    assert_eq!(err.to_string(), "sim_steps: item follow:t4:a1:s2: no step of agent 1 in turn 4");
}

#[test]
fn the_identity_columns_are_spelled_as_sim_reviews_spells_them() {
    let json = serde_json::to_value(ReviewItem::default()).unwrap();
    for column in [sim_reviews::item_id, sim_reviews::run_id, sim_reviews::kind, sim_reviews::annotator] {
        assert!(json.get(column).is_some(), "{column}");
    }
}
