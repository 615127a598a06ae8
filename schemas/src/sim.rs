//! The tables of the persona-driven social-media simulation.
//!
//! A simulation run commits one turn at a time as one transaction: the
//! turn's actions, the posts and follows they created, the feeds that were
//! shown and the `sim_turns` row that marks the turn committed (with the
//! platform's state digest, so a replay or a resumed run is checked against
//! it). Human reviews of a run's actions and texts are imported later into
//! `sim_reviews`. Every table is partitioned by run, like `episodes`, so reading one
//! run touches only its folder. Names of tables, columns and enumerated
//! values are spelled only here.

use crate::ids::RunId;
use crate::row::Timestamp;
use crate::table;
use crate::tables::RunEvent;

table! {
    /// A simulation run's lifecycle, as append-only events (`submitted`
    /// with the spec, `cancelled`).
    pub struct SimRunRow in sim_runs partitioned by [] {
        run_id: RunId,
        event: RunEvent,
        at: Timestamp,
        /// The run's spec as JSON.
        spec: String,
    }
}

table! {
    /// One agent of a run: its persona as loaded and enriched, and its plan.
    pub struct SimAgentRow in sim_agents partitioned by [run_id] {
        agent_id: i64,
        username: String,
        /// [`AgentKind`]: `initial` agents seed content, `regular` ones interact.
        kind: String,
        /// Where the persona came from (`oasis-reddit`, `oasis-twitter`, `recagent`, ...).
        persona_source: String,
        /// The persona as JSON (initial description and, once enriched, the paper's fields).
        persona: String,
        /// The Pareto activity level, 0-1.
        activity: f64,
        /// The agent's plan as JSON; null until planned.
        plan: Option<String>,
        /// Why enrichment or planning failed, if it did.
        error: Option<String>,
        run_id: String,
    }
}

table! {
    /// A post or a comment (a comment has a parent post).
    pub struct SimPostRow in sim_posts partitioned by [run_id] {
        post_id: i64,
        author_id: i64,
        turn: i64,
        content: String,
        parent_post_id: Option<i64>,
        /// The topic the author generated the post for.
        topic: Option<String>,
        /// The adopted knowledge passages' ids, as a JSON list.
        knowledge: Option<String>,
        run_id: String,
    }
}

table! {
    /// One action of one agent in one turn, applied or refused.
    pub struct SimActionRow in sim_actions partitioned by [run_id] {
        turn: i64,
        agent_id: i64,
        /// Order within the agent's turn; the platform applies by (agent_id, seq).
        seq: i32,
        /// A browse's rows are numbered in the order of the feed; 0 for
        /// every other action.
        item: i32,
        /// [`ActionKind`]. A browse is one row per post shown, all with the
        /// browse's `seq`.
        action: String,
        post_id: Option<i64>,
        target_agent_id: Option<i64>,
        text: Option<String>,
        /// [`ActionStatus`].
        status: String,
        /// Why a failed action was refused.
        error: Option<String>,
        run_id: String,
    }
}

table! {
    /// A follow, as the turn that created it.
    pub struct SimFollowRow in sim_follows partitioned by [run_id] {
        follower_id: i64,
        followee_id: i64,
        turn: i64,
        run_id: String,
    }
}

table! {
    /// One post of the feed an agent was shown in a turn, in rank order.
    pub struct SimFeedRow in sim_feeds partitioned by [run_id] {
        turn: i64,
        agent_id: i64,
        position: i32,
        post_id: i64,
        score: f64,
        ranker: String,
        run_id: String,
    }
}

table! {
    /// A committed turn: written last, in the same transaction as the turn's rows.
    pub struct SimTurnRow in sim_turns partitioned by [run_id] {
        turn: i64,
        stage: i32,
        active_agents: i64,
        actions_applied: i64,
        actions_failed: i64,
        /// The platform state digest after the turn (hex SHA-256).
        state_digest: String,
        committed_at: Timestamp,
        run_id: String,
    }
}

table! {
    /// What an agent decided in a turn, as the worker that ran its step
    /// wrote it: one file per shard, written once (put-if-absent), so a
    /// redelivered shard never adds a second answer. The turn's commit
    /// applies these; an agent's memory is its steps' `memory` changes
    /// applied in turn order, which is how a resumed run picks it up.
    pub struct SimStepRow in sim_steps partitioned by [run_id] {
        turn: i64,
        agent_id: i64,
        /// The step's actions in order, as JSON.
        actions: String,
        /// Topics and adopted knowledge of the posts written, as JSON.
        posts: String,
        /// The changes the step made to the agent's memory, as a JSON list
        /// (rows written before changes were recorded hold the whole
        /// memory after the step, as a JSON object).
        memory: String,
        /// Parts of the turn skipped because a reply could not be read, as JSON.
        failures: String,
        calls: i64,
        prompt_tokens: i64,
        completion_tokens: i64,
        run_id: String,
    }
}

table! {
    /// One annotator's scores of one review item, as `some sim review
    /// import` stored them (the paper's human evaluation). Append-only: a
    /// later import that changes an item's scores adds a row, and the row
    /// with the latest `imported_at` per (item_id, annotator) is the one
    /// that counts; an import that changes nothing adds nothing. A score
    /// column is null where the item's kind takes no such score
    /// ([`ReviewKind::scores`]).
    pub struct SimReviewRow in sim_reviews partitioned by [run_id] {
        /// The item's stable id, as the export wrote it.
        item_id: String,
        /// [`ReviewKind`].
        kind: String,
        annotator: String,
        /// Whether the like, reblog or comment is reasonable: 0 or 1.
        rationality: Option<i32>,
        /// Whether a follow chosen by reflection is reasonable (the paper's Ref): 0 or 1.
        reflection: Option<i32>,
        /// Text quality, 1-3 (the LLM judge's rubric).
        informativeness: Option<i32>,
        consistency: Option<i32>,
        humanness: Option<i32>,
        /// Whether a post uses knowledge appropriately (the paper's Know): 0 or 1.
        knowledge: Option<i32>,
        /// The file the scores came from, as given to the import.
        source: String,
        imported_at: Timestamp,
        run_id: String,
    }
}

table! {
    /// One answer of one agent to one question of an interview or survey
    /// (`some sim interview`), asked of the agent as it was at a committed
    /// turn. Interviews only read the run: they never change its state.
    pub struct SimInterviewRow in sim_interviews partitioned by [run_id] {
        /// Names one `some sim interview` call; its rows land together.
        interview_id: String,
        /// The committed turn the agent was asked as of.
        turn: i64,
        agent_id: i64,
        /// The question's id in its questions file (`q1`.. when not named).
        question_id: String,
        question: String,
        /// A survey question's answer options as a JSON list; null for an open question.
        options: Option<String>,
        /// The answer: the option chosen, or the open answer's text; null when no reply could be read.
        answer: Option<String>,
        /// Why no answer could be read.
        error: Option<String>,
        model: String,
        asked_at: Timestamp,
        run_id: String,
    }
}

table! {
    /// An intervention in a run (`some sim run --interventions`, `some sim
    /// intervene`). A request is written when it is submitted, with
    /// `applied_turn` null; the turn that applies it writes the same
    /// (batch, line) again in its own transaction with `applied_turn` and
    /// what came of it, which is what a replay applies.
    pub struct SimInterventionRow in sim_interventions partitioned by [run_id] {
        /// Names one submitted file.
        batch: String,
        /// The event's line in its file.
        line: i64,
        /// Taken at the first turn at or after this one that starts after it was submitted.
        requested_turn: i64,
        /// The event as JSON.
        event: String,
        submitted_at: Timestamp,
        /// The turn it was applied at; null for the request.
        applied_turn: Option<i64>,
        /// [`ActionStatus`] once applied.
        status: Option<String>,
        /// Why the platform refused it.
        error: Option<String>,
        /// The post an injected post created, or the post removed.
        post_id: Option<i64>,
        /// The account a news post created or used.
        account_id: Option<i64>,
        run_id: String,
    }
}

/// Whether an agent seeds content or interacts (the paper's two groups).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AgentKind {
    Initial,
    Regular,
}

impl AgentKind {
    pub fn as_str(self) -> &'static str {
        match self {
            AgentKind::Initial => "initial",
            AgentKind::Regular => "regular",
        }
    }
    pub fn parse(s: &str) -> Option<AgentKind> {
        [AgentKind::Initial, AgentKind::Regular].into_iter().find(|k| k.as_str() == s)
    }
}

/// The six actions of the paper.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ActionKind {
    Browse,
    Like,
    Reblog,
    Comment,
    Post,
    Follow,
}

impl ActionKind {
    pub const ALL: [ActionKind; 6] =
        [ActionKind::Browse, ActionKind::Like, ActionKind::Reblog, ActionKind::Comment, ActionKind::Post, ActionKind::Follow];

    pub fn as_str(self) -> &'static str {
        match self {
            ActionKind::Browse => "browse",
            ActionKind::Like => "like",
            ActionKind::Reblog => "reblog",
            ActionKind::Comment => "comment",
            ActionKind::Post => "post",
            ActionKind::Follow => "follow",
        }
    }
    pub fn parse(s: &str) -> Option<ActionKind> {
        ActionKind::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

/// Whether the platform applied an action.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ActionStatus {
    Applied,
    Failed,
}

impl ActionStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ActionStatus::Applied => "applied",
            ActionStatus::Failed => "failed",
        }
    }
    pub fn parse(s: &str) -> Option<ActionStatus> {
        [ActionStatus::Applied, ActionStatus::Failed].into_iter().find(|k| k.as_str() == s)
    }
}

/// What an annotator judges about a review item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReviewKind {
    /// The rationality of a like.
    Like,
    /// The rationality of a reblog.
    Reblog,
    /// The rationality of commenting (the comment's text is a
    /// [`ReviewKind::CommentText`] item of its own).
    Comment,
    /// A follow chosen by reflection (the paper's Ref).
    Follow,
    /// A post's text quality and knowledge.
    PostText,
    /// A comment's text quality.
    CommentText,
}

impl ReviewKind {
    pub const ALL: [ReviewKind; 6] =
        [ReviewKind::Like, ReviewKind::Reblog, ReviewKind::Comment, ReviewKind::Follow, ReviewKind::PostText, ReviewKind::CommentText];

    pub fn as_str(self) -> &'static str {
        match self {
            ReviewKind::Like => "like",
            ReviewKind::Reblog => "reblog",
            ReviewKind::Comment => "comment",
            ReviewKind::Follow => "follow",
            ReviewKind::PostText => "post_text",
            ReviewKind::CommentText => "comment_text",
        }
    }
    pub fn parse(s: &str) -> Option<ReviewKind> {
        ReviewKind::ALL.into_iter().find(|k| k.as_str() == s)
    }
    /// The scores an annotator gives an item of this kind, in column order.
    pub fn scores(self) -> &'static [Score] {
        match self {
            ReviewKind::Like | ReviewKind::Reblog | ReviewKind::Comment => &[Score::Rationality],
            ReviewKind::Follow => &[Score::Reflection],
            ReviewKind::PostText => &[Score::Informativeness, Score::Consistency, Score::Humanness, Score::Knowledge],
            ReviewKind::CommentText => &[Score::Informativeness, Score::Consistency, Score::Humanness],
        }
    }
}

/// One score of the paper's human evaluation, on the paper's scale.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Score {
    Rationality,
    Reflection,
    Informativeness,
    Consistency,
    Humanness,
    Knowledge,
}

impl Score {
    pub const ALL: [Score; 6] =
        [Score::Rationality, Score::Reflection, Score::Informativeness, Score::Consistency, Score::Humanness, Score::Knowledge];

    /// The `sim_reviews` column, which is also the review file's column.
    pub fn column(self) -> &'static str {
        match self {
            Score::Rationality => sim_reviews::rationality,
            Score::Reflection => sim_reviews::reflection,
            Score::Informativeness => sim_reviews::informativeness,
            Score::Consistency => sim_reviews::consistency,
            Score::Humanness => sim_reviews::humanness,
            Score::Knowledge => sim_reviews::knowledge,
        }
    }
    /// The lowest and highest score: 0/1 for the judgements of
    /// reasonableness, 1-3 for text quality (the paper's scales).
    pub fn range(self) -> (i32, i32) {
        match self {
            Score::Rationality | Score::Reflection | Score::Knowledge => (0, 1),
            Score::Informativeness | Score::Consistency | Score::Humanness => (1, 3),
        }
    }
    /// The paper's short name (Table 3's column heads, Ref).
    pub fn label(self) -> &'static str {
        match self {
            Score::Rationality => "Rationality",
            Score::Reflection => "Ref",
            Score::Informativeness => "Info",
            Score::Consistency => "Cons",
            Score::Humanness => "Hum",
            Score::Knowledge => "Know",
        }
    }
    pub fn of(self, row: &SimReviewRow) -> Option<i32> {
        match self {
            Score::Rationality => row.rationality,
            Score::Reflection => row.reflection,
            Score::Informativeness => row.informativeness,
            Score::Consistency => row.consistency,
            Score::Humanness => row.humanness,
            Score::Knowledge => row.knowledge,
        }
    }
    pub fn set(self, row: &mut SimReviewRow, value: Option<i32>) {
        let slot = match self {
            Score::Rationality => &mut row.rationality,
            Score::Reflection => &mut row.reflection,
            Score::Informativeness => &mut row.informativeness,
            Score::Consistency => &mut row.consistency,
            Score::Humanness => &mut row.humanness,
            Score::Knowledge => &mut row.knowledge,
        };
        *slot = value;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Row;

    #[test]
    fn sim_tables_round_trip_and_end_with_their_partition() {
        let rows = vec![SimActionRow {
            turn: 3,
            agent_id: 7,
            seq: 0,
            item: 0,
            action: ActionKind::Comment.as_str().into(),
            post_id: Some(12),
            target_agent_id: None,
            text: Some("nice".into()),
            status: ActionStatus::Failed.as_str().into(),
            error: Some("post 12 does not exist".into()),
            run_id: "r".into(),
        }];
        let batch = SimActionRow::to_batch(&rows).unwrap();
        assert_eq!(SimActionRow::from_batch(&batch).unwrap(), rows);
        let sim_tables: Vec<_> = crate::ALL_TABLES.iter().filter(|t| t.name.starts_with("sim_")).collect();
        for t in sim_tables.iter().filter(|t| t.name != "sim_runs") {
            let schema = (t.schema)();
            assert_eq!(schema.fields().last().unwrap().name(), "run_id", "{}", t.name);
        }
        let names: std::collections::HashSet<_> = crate::ALL_TABLES.iter().map(|t| t.name).collect();
        assert_eq!(names.len(), crate::ALL_TABLES.len(), "no two tables share a name");
        assert_eq!(
            sim_tables.iter().map(|t| t.name).collect::<Vec<_>>(),
            [
                "sim_runs",
                "sim_agents",
                "sim_posts",
                "sim_actions",
                "sim_follows",
                "sim_feeds",
                "sim_turns",
                "sim_steps",
                "sim_reviews",
                "sim_interviews",
                "sim_interventions"
            ]
        );
    }

    #[test]
    fn enumerations_read_back_what_they_write() {
        for k in ActionKind::ALL {
            assert_eq!(ActionKind::parse(k.as_str()), Some(k));
        }
        assert_eq!(ActionKind::parse("boost"), None);
        assert_eq!(AgentKind::parse("regular"), Some(AgentKind::Regular));
        assert_eq!(ActionStatus::parse("applied"), Some(ActionStatus::Applied));
        for k in ReviewKind::ALL {
            assert_eq!(ReviewKind::parse(k.as_str()), Some(k));
        }
        assert_eq!(ReviewKind::parse("post"), None, "a post's review kind is post_text");
    }

    #[test]
    fn every_score_has_its_column_and_the_papers_scale() {
        let mut row = SimReviewRow {
            item_id: "like:t1:a4:s2".into(),
            kind: ReviewKind::Like.as_str().into(),
            annotator: "ann".into(),
            rationality: None,
            reflection: None,
            informativeness: None,
            consistency: None,
            humanness: None,
            knowledge: None,
            source: "review.csv".into(),
            imported_at: Timestamp(0),
            run_id: "r".into(),
        };
        for (i, s) in Score::ALL.into_iter().enumerate() {
            s.set(&mut row, Some(i as i32));
            assert_eq!(s.of(&row), Some(i as i32));
        }
        let columns: Vec<&str> = Score::ALL.iter().map(|s| s.column()).collect();
        assert_eq!(columns, ["rationality", "reflection", "informativeness", "consistency", "humanness", "knowledge"]);
        let ranges: Vec<(i32, i32)> = Score::ALL.iter().map(|s| s.range()).collect();
        assert_eq!(ranges, [(0, 1), (0, 1), (1, 3), (1, 3), (1, 3), (0, 1)]);
        assert_eq!(ReviewKind::PostText.scores(), [Score::Informativeness, Score::Consistency, Score::Humanness, Score::Knowledge]);
        let batch = SimReviewRow::to_batch(std::slice::from_ref(&row)).unwrap();
        assert_eq!(SimReviewRow::from_batch(&batch).unwrap(), [row]);
    }
}
