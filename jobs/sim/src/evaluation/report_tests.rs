//! A hand-made run of three agents over a seeding turn and two two-turn
//! stages, whose figures are worked out here by hand.

use some_schemas::Timestamp;
use some_schemas::sim::Score;

use super::*;
use crate::agent::test_model;
use crate::evaluation::report_html::{render_html, render_text};
use some_jobs::testing::{ScriptedModel, reply, unreachable};

const RUN: &str = "r";

fn preset() -> Preset {
    Preset { initial_agents: 1, regular_agents: 2, seed_posts: 2, ..Preset::demo() }
}

fn agent(id: u32, kind: AgentKind, description: &str, following: &[u32]) -> SimAgentRow {
    let mut p = test_model::persona(id, description);
    p.following = following.iter().map(|f| AgentId(*f)).collect();
    SimAgentRow {
        agent_id: i64::from(id),
        username: p.username.clone(),
        kind: kind.as_str().into(),
        persona_source: p.source.as_str().into(),
        persona: serde_json::to_string(&p).unwrap(),
        activity: 0.5,
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
        topic: None,
        knowledge: None,
        run_id: RUN.into(),
    }
}

/// `(turn, agent, seq, kind, posts or target, error)`; a browse gets a row per post.
type ActionSpec<'a> = (i64, i64, i32, ActionKind, &'a [i64], Option<&'a str>);

fn actions(list: &[ActionSpec<'_>]) -> Vec<SimActionRow> {
    let mut out = Vec::new();
    for (turn, agent, seq, kind, ids, error) in list {
        let items: Vec<Option<i64>> = if ids.is_empty() { vec![None] } else { ids.iter().map(|i| Some(*i)).collect() };
        for (item, id) in items.into_iter().enumerate() {
            let status = if error.is_some() { ActionStatus::Failed } else { ActionStatus::Applied };
            out.push(SimActionRow {
                turn: *turn,
                agent_id: *agent,
                seq: *seq,
                item: item as i32,
                action: kind.as_str().into(),
                post_id: id.filter(|_| *kind != ActionKind::Follow),
                target_agent_id: id.filter(|_| *kind == ActionKind::Follow),
                text: None,
                status: status.as_str().into(),
                error: error.map(str::to_string),
                run_id: RUN.into(),
            });
        }
    }
    out
}

fn feed(turn: i64, agent: i64, posts: &[i64]) -> Vec<SimFeedRow> {
    posts
        .iter()
        .enumerate()
        .map(|(i, p)| SimFeedRow {
            turn,
            agent_id: agent,
            position: i as i32,
            post_id: *p,
            score: 1.0,
            ranker: "test".into(),
            run_id: RUN.into(),
        })
        .collect()
}

static NO_GROUPS: std::collections::BTreeMap<i64, String> = std::collections::BTreeMap::new();
static NO_CONTEXT: std::collections::BTreeSet<i64> = std::collections::BTreeSet::new();

struct Rows {
    agents: Vec<SimAgentRow>,
    posts: Vec<SimPostRow>,
    actions: Vec<SimActionRow>,
    feeds: Vec<SimFeedRow>,
    follows: Vec<SimFollowRow>,
    turns: Vec<SimTurnRow>,
    reviews: Vec<SimReviewRow>,
    skipped: Vec<(i64, StepFailure)>,
    preset: Preset,
}

impl Rows {
    fn input(&self) -> ReportInput<'_> {
        ReportInput {
            agents: &self.agents,
            posts: &self.posts,
            actions: &self.actions,
            feeds: &self.feeds,
            follows: &self.follows,
            turns: &self.turns,
            reviews: &self.reviews,
            skipped: &self.skipped,
            interviews: &[],
            context: &NO_CONTEXT,
            groups: &NO_GROUPS,
            preset: &self.preset,
        }
    }
}

fn rows() -> Rows {
    use ActionKind::*;
    let missing = Some("post 9 does not exist");
    Rows {
        agents: vec![
            agent(0, AgentKind::Initial, "I cook pasta and bake bread", &[]),
            agent(1, AgentKind::Regular, "I love hiking in the mountains", &[0]),
            // A self-follow and an agent outside the run are not follows.
            agent(2, AgentKind::Regular, "I play chess", &[0, 2, 7]),
        ],
        posts: vec![
            post(0, 0, 0, "Hiking in the mountains today", None),
            post(1, 0, 0, "Stock markets fell sharply", None),
            post(2, 1, 1, "the mountains the mountains", None),
            post(3, 2, 1, "nice hike", Some(0)),
            post(4, 2, 3, "chess openings are fun <script>alert(1)</script>", None),
            post(5, 1, 4, "nice chess", Some(4)),
        ],
        actions: actions(&[
            (0, 0, 0, Post, &[0], None),
            (0, 0, 1, Post, &[1], None),
            (1, 1, 0, Browse, &[0, 1], None),
            (1, 1, 1, Like, &[0], None),
            (1, 1, 2, Post, &[2], None),
            (1, 1, 3, Follow, &[2], None),
            (1, 2, 0, Browse, &[0, 1], None),
            (1, 2, 1, Comment, &[0], None),
            (1, 2, 2, Like, &[9], missing),
            (3, 2, 0, Browse, &[2], None),
            (3, 2, 1, Post, &[4], None),
            (3, 2, 2, Like, &[7], Some("post 7 does not exist")),
            (3, 2, 3, Follow, &[2], Some("an agent cannot follow itself")),
            (4, 1, 0, Browse, &[4, 1], None),
            (4, 1, 1, Like, &[4], None),
            (4, 1, 2, Reblog, &[4], None),
            (4, 1, 3, Comment, &[4], None),
        ]),
        feeds: [feed(1, 1, &[0, 1]), feed(1, 2, &[0, 1]), feed(3, 2, &[2]), feed(4, 1, &[4, 1])].concat(),
        follows: vec![SimFollowRow { follower_id: 1, followee_id: 2, turn: 1, run_id: RUN.into() }],
        turns: (0..5)
            .map(|t| SimTurnRow {
                turn: t,
                stage: 0,
                active_agents: 2,
                actions_applied: 0,
                actions_failed: 0,
                state_digest: format!("d{t}"),
                committed_at: Timestamp(0),
                run_id: RUN.into(),
            })
            .collect(),
        reviews: Vec::new(),
        // A stage-2 post its author kept repeating (turn 4).
        skipped: vec![(
            4,
            StepFailure {
                action: Post,
                post: None,
                cause: "the post on \"x\" repeats an earlier post twice (TF-IDF similarity 0.950)".into(),
            },
        )],
        preset: preset(),
    }
}

/// Vectors that say only whether a text is about mountains.
struct Mountains;

#[async_trait::async_trait]
impl Embedder for Mountains {
    fn model(&self) -> &str {
        "mountains"
    }
    fn dim(&self) -> usize {
        2
    }
    async fn embed(&self, texts: &[String], _: Purpose) -> Result<Vec<Vec<f32>>, EmbedError> {
        Ok(texts.iter().map(|t| if t.to_lowercase().contains("mountain") { vec![1.0, 0.0] } else { vec![0.0, 1.0] }).collect())
    }
}

fn close(a: Option<f64>, b: f64) -> bool {
    a.is_some_and(|a| (a - b).abs() < 1e-9)
}

/// The TF-IDF idf of a term in one of two documents: 1 + ln(3/2).
fn unique_idf() -> f64 {
    1.0 + 1.5f64.ln()
}

#[test]
fn engagement_is_compared_with_posts_shown_and_not_engaged() {
    let r = rows();
    let report = futures::executor::block_on(build(r.input(), Some(&Mountains), None)).unwrap();
    let u = unique_idf();
    // "I love hiking in the mountains" vs "Hiking in the mountains today":
    // four shared terms (idf 1) and one unique term each.
    let c = 4.0 / (4.0 + u * u);
    let find = |stage, action| report.engagement.iter().find(|e| e.stage == stage && e.action == action).unwrap();

    let like = find(1, ActionKind::Like);
    assert_eq!((like.engaged_count, like.not_engaged_count), (1, 3));
    assert!(close(like.tfidf.engaged, c) && close(like.tfidf.not_engaged, 0.0) && close(like.tfidf.delta, c), "{like:?}");
    let embedded = like.embedding.unwrap();
    assert!(close(embedded.engaged, 1.0) && close(embedded.not_engaged, 1.0 / 3.0) && close(embedded.delta, 2.0 / 3.0));

    let comment = find(1, ActionKind::Comment);
    assert!(close(comment.tfidf.engaged, 0.0) && close(comment.tfidf.delta, -c / 3.0), "{comment:?}");
    let reblog = find(1, ActionKind::Reblog);
    assert_eq!((reblog.engaged_count, reblog.tfidf.delta), (0, None));
    assert!(close(reblog.tfidf.not_engaged, c / 4.0));

    // Post 1, shown again in stage 2, stays with stage 1 where it was first seen.
    let like2 = find(2, ActionKind::Like);
    assert_eq!((like2.engaged_count, like2.not_engaged_count), (1, 1));
    assert!(close(like2.tfidf.delta, 0.0));
    assert_eq!(report.engagement.len(), 6);

    // Own posts: "I play chess" vs the chess post shares one term of idf 1.
    let own: Vec<_> = report.own_posts.iter().map(|o| (o.stage, o.posts)).collect();
    assert_eq!(own, [(0, 2), (1, 1), (2, 1)]);
    assert!(close(report.own_posts[0].tfidf, 0.0) && close(report.own_posts[0].embedding, 0.5));
    assert!(close(report.own_posts[2].tfidf, 1.0 / ((1.0 + 8.0 * u * u) * (1.0 + u * u)).sqrt()));
}

#[test]
fn diversity_followers_and_actions_are_counted_by_stage() {
    let r = rows();
    let report = futures::executor::block_on(build(r.input(), None, None)).unwrap();
    let d: Vec<_> = report.diversity.iter().map(|d| (d.stage, d.kind, d.texts, d.distinct_1, d.distinct_2)).collect();
    assert_eq!(
        d,
        [
            (0, TextKind::Post, 2, Some(100.0), Some(100.0)),
            // "the mountains the mountains": 2 of 4 words, 2 of 3 bigrams.
            (1, TextKind::Post, 1, Some(50.0), Some(2.0 / 3.0 * 100.0)),
            (1, TextKind::Comment, 1, Some(100.0), Some(100.0)),
            (2, TextKind::Post, 1, Some(100.0), Some(100.0)),
            (2, TextKind::Comment, 1, Some(100.0), Some(100.0)),
        ]
    );

    let f = &report.followers;
    assert_eq!((f.initial_edges, f.added_edges), (2, 1));
    let bins: Vec<_> = f.bins.iter().map(|b| (b.lo, b.hi, b.all, b.regular)).collect();
    assert_eq!(bins[..2], [(0, Some(0), 1, 1), (1, Some(5), 2, 1)]);
    assert_eq!(bins[6], (101, None, 0, 0));
    assert_eq!(f.top.iter().map(|t| (t.agent_id, t.followers)).collect::<Vec<_>>(), [(0, 2), (2, 1)]);

    let a = &report.actions;
    let stage = |s: usize| a.per_stage[s].applied.iter().filter(|(_, n)| **n > 0).map(|(k, n)| (*k, *n)).collect::<Vec<_>>();
    use ActionKind::*;
    assert_eq!(stage(0), [(Post, 2)]);
    // A browse of two posts is one action.
    assert_eq!(stage(1), [(Browse, 2), (Like, 1), (Comment, 1), (Post, 1), (Follow, 1)]);
    assert_eq!(stage(2), [(Browse, 2), (Like, 1), (Reblog, 1), (Comment, 1), (Post, 1)]);
    assert_eq!(a.per_stage.iter().map(|s| s.failed).collect::<Vec<_>>(), [0, 1, 2]);
    assert_eq!(a.per_turn.len(), 5);
    assert_eq!((a.per_turn[2].stage, a.per_turn[2].applied.values().sum::<u64>()), (Some(1), 0));
    assert_eq!(a.per_turn[4].applied[&Reblog], 1);
    assert_eq!(a.failed, 3);
    assert_eq!((a.skipped, a.per_stage.iter().map(|s| s.skipped).collect::<Vec<_>>()), (1, vec![0, 0, 1]));
    assert_eq!(
        a.top_errors,
        [
            ErrorCause { cause: "post N does not exist".into(), count: 2 },
            ErrorCause { cause: "an agent cannot follow itself".into(), count: 1 },
            ErrorCause { cause: "post skipped: the post on \"x\" repeats an earlier post twice (TF-IDF similarity N.N)".into(), count: 1 }
        ]
    );

    let top: Vec<_> = report.top_posts.iter().map(|p| (p.post_id, p.likes, p.reblogs, p.comments)).collect();
    assert_eq!(top, [(4, 1, 1, 1), (0, 1, 0, 1)]);
    let run = &report.run;
    assert_eq!((run.initial_agents, run.regular_agents, run.turns_planned, run.turns_committed), (1, 2, 5, 5));
    assert_eq!((run.last_turn, run.last_state_digest.as_deref(), run.posts, run.comments), (Some(4), Some("d4"), 4, 2));
    assert!(report.quality.is_none());
    assert!(report.caveats.iter().any(|c| c.contains("not judged")));
    assert!(report.caveats.iter().any(|c| c.contains("3 agents and 5 committed turns of 5")));
}

#[test]
fn the_judge_rates_a_sample_and_unreadable_replies_are_failures() {
    assert_eq!(spread(10, 4), [0, 2, 5, 7]);
    assert_eq!(spread(3, 5), [0, 1, 2]);
    let model = ScriptedModel::new("judge", |req| {
        let prompt = &req.messages[0].content;
        if prompt.contains("nice hike") {
            reply("I would rather not rate this.")
        } else if prompt.contains("nice chess") {
            unreachable()
        } else if prompt.contains("<script>") {
            reply("Informativeness: 1\nConsistency: 2\nHumanness: 3")
        } else {
            reply("Informativeness: 2\nConsistency: 3\nHumanness: 3")
        }
    });
    let r = rows();
    let report = futures::executor::block_on(build(r.input(), None, Some(Judge { model: &model, sample: 1 }))).unwrap();
    let q = report.quality.as_ref().unwrap();
    assert_eq!(model.requests().len(), 4, "seed posts are not judged");
    let g: Vec<_> = q.groups.iter().map(|g| (g.stage, g.kind, g.sampled, g.rated, g.informativeness, g.consistency)).collect();
    assert_eq!(
        g,
        [
            (1, TextKind::Post, 1, 1, Some(2.0), Some(3.0)),
            (1, TextKind::Comment, 1, 0, None, None),
            (2, TextKind::Post, 1, 1, Some(1.0), Some(2.0)),
            (2, TextKind::Comment, 1, 0, None, None),
        ]
    );
    assert_eq!(q.groups[1].failures[0].post_id, 3);
    assert!(q.groups[1].failures[0].cause.contains("informativeness"), "{:?}", q.groups[1].failures);
    assert!(q.groups[3].failures[0].cause.contains("connection refused"));

    let permanent = ScriptedModel::new("judge", |_| Err(ModelError::Permanent { endpoint: "e".into(), message: "bad key".into() }));
    let err = futures::executor::block_on(build(r.input(), None, Some(Judge { model: &permanent, sample: 1 }))).unwrap_err();
    assert_eq!(err.to_string(), "quality judge: model endpoint e: bad key");
}

#[test]
fn rows_that_contradict_each_other_are_errors() {
    let mut r = rows();
    r.feeds.extend(feed(2, 1, &[42]));
    let err = futures::executor::block_on(build(r.input(), None, None)).unwrap_err();
    assert_eq!(err.to_string(), "sim_feeds: agent 1 post 42: agent 1 and post 42 must both be in the run");
    let mut r = rows();
    r.actions[0].turn = 9;
    let err = futures::executor::block_on(build(r.input(), None, None)).unwrap_err();
    assert_eq!(err.to_string(), "sim_actions: turn 9: is outside the preset's 5 turns");
}

#[test]
fn the_report_future_can_move_between_threads() {
    fn send<T: Send>(_: &T) {}
    let r = rows();
    send(&build(r.input(), Some(&Mountains), None));
}

fn squeezed(text: &str) -> Vec<String> {
    text.lines().map(|l| l.split_whitespace().collect::<Vec<_>>().join(" ")).collect()
}

#[test]
fn the_text_puts_the_papers_figures_beside_ours() {
    let r = rows();
    let report = futures::executor::block_on(build(r.input(), Some(&Mountains), None)).unwrap();
    let text = render_text(&report);
    let lines = squeezed(&text);
    let has = |line: &str| lines.iter().any(|l| l == line);
    assert!(text.contains("(the paper's Table 1;"), "{text}");
    assert!(has("stage 1 like 1 0.669 +0.669 1.000 +0.667 0.440 +0.007 0.972 +0.038"), "{text}");
    assert!(has("stage 1 not like 3 0.000 0.333 0.433 0.934"), "{text}");
    assert!(has("stage 1 post 1 50.00 66.67 22.40 63.88"), "{text}");
    assert!(has("seeding post 2 100.00 100.00 - -"), "{text}");
    assert!(has("post N does not exist 2"), "{text}");
    assert!(has("1-5 2 1"), "{text}");
}

#[test]
fn the_html_page_has_both_plots_and_escapes_run_text() {
    let r = rows();
    let report = futures::executor::block_on(build(r.input(), None, None)).unwrap();
    let html = render_html(&report);
    assert_eq!(html.matches("<svg").count(), 2);
    assert!(html.contains("chess openings are fun &lt;script&gt;alert(1)&lt;/script&gt;"), "{html}");
    assert!(!html.contains("<script"), "{html}");
    assert!(html.contains("<polyline") && html.contains("<rect"));
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["actions"]["per_stage"][1]["applied"]["browse"], 2);
    assert_eq!(json["diversity"][2]["kind"], "comment");
}

fn review(item: &str, annotator: &str, at: i64, scores: &[(Score, i32)]) -> SimReviewRow {
    let kind = item.split(':').next().unwrap_or_default();
    let mut row = SimReviewRow {
        item_id: item.into(),
        kind: kind.into(),
        annotator: annotator.into(),
        rationality: None,
        reflection: None,
        informativeness: None,
        consistency: None,
        humanness: None,
        knowledge: None,
        source: "review.csv".into(),
        imported_at: Timestamp(at),
        run_id: RUN.into(),
    };
    scores.iter().for_each(|(s, v)| s.set(&mut row, Some(*v)));
    row
}

#[test]
fn human_scores_are_averaged_beside_the_papers_and_correlated_with_the_judge_on_the_reviewed_texts() {
    use Score::*;
    let text = |info| [(Informativeness, info), (Consistency, 2), (Humanness, 3)];
    let mut r = rows();
    r.reviews = vec![
        review("like:t1:a1:s1", "ann", 1, &[(Rationality, 0)]),
        // A later import of the same item by the same annotator wins.
        review("like:t1:a1:s1", "ann", 2, &[(Rationality, 1)]),
        review("like:t1:a1:s1", "bo", 1, &[(Rationality, 0)]),
        review("follow:t1:a1:s3", "ann", 1, &[(Reflection, 1)]),
        review("post_text:p2", "ann", 1, &[text(1).as_slice(), &[(Knowledge, 1)]].concat()),
        review("comment_text:p3", "ann", 1, &text(2)),
        review("post_text:p4", "ann", 1, &[text(2).as_slice(), &[(Knowledge, 0)]].concat()),
        review("comment_text:p5", "ann", 1, &text(3)),
    ];
    let model = ScriptedModel::new("judge", |req| {
        let prompt = &req.messages[0].content;
        let info = if prompt.contains("the mountains the") {
            1
        } else if prompt.contains("nice hike") {
            2
        } else {
            3
        };
        reply(&format!("Informativeness: {info}\nConsistency: 2\nHumanness: 3"))
    });
    // A sample of 0: the judge rates the four reviewed texts and no others.
    let report = futures::executor::block_on(build(r.input(), None, Some(Judge { model: &model, sample: 0 }))).unwrap();
    assert_eq!(model.requests().len(), 4);
    let h = report.human.as_ref().unwrap();
    assert_eq!((h.annotators.clone(), h.items), (vec!["ann".to_string(), "bo".to_string()], 6));
    let like = &h.groups[0];
    assert_eq!((like.stage, like.kind, like.items, like.scores[0].n, like.scores[0].mean), (1, ReviewKind::Like, 1, 2, Some(0.5)));
    let all_info = h.correlations.iter().find(|c| c.kind.is_none() && c.score == Informativeness).unwrap();
    // Human 1, 2, 2, 3 against judge 1, 2, 3, 3: r = 2 / sqrt(5.5).
    assert_eq!(all_info.pairs, 4);
    assert!(close(all_info.r, 2.0 / 5.5f64.sqrt()), "{all_info:?}");
    let text = render_text(&report);
    let lines = squeezed(&text);
    let has = |line: &str| lines.iter().any(|l| l == line);
    assert!(has("stage 1 like 1 2 0.500 0.678"), "{text}");
    assert!(has("stage 1 follow 1 1 1.000 0.644"), "{text}");
    assert!(has("stage 1 post 1 1 1.000 2.000 3.000 1.000 2.733 2.911 2.600 0.889"), "{text}");
    assert!(has("stage 2 comment 1 1 3.000 2.000 3.000 - 2.522 2.011 2.600 -"), "{text}");
    assert!(has("post+comment Info 4 0.853"), "{text}");
    assert!(has("post Info 2 - 2 pairs; needs at least 3"), "{text}");
    assert!(has("post+comment Hum 4 - the human scores do not vary (all 3)"), "{text}");

    r.reviews.push(review("like:t9:a1:s1", "ann", 1, &[(Rationality, 1)]));
    let err = futures::executor::block_on(build(r.input(), None, None)).unwrap_err();
    assert_eq!(err.to_string(), "sim_reviews: item like:t9:a1:s1 of run r: not an item of the run's committed turns");
}
