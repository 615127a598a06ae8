//! `some sim interview`: agents asked, as they were at a committed turn, and
//! their answers stored in `sim_interviews`. It reads the run and writes
//! only its own rows: the run's state and digest stay as they were.

use std::sync::Arc;

use futures::{StreamExt, TryStreamExt};
use some_jobs::chat::ChatModel;
use some_schemas::Timestamp;
use some_schemas::sim::SimInterviewRow;
use some_sim::Turn;
use some_sim::agent::interview::{InterviewQuestion, ask_agent};
use some_sim::agent::select::Selector;
use some_sim::error::AskError;

use super::spec::SimSpec;
use super::state::{SimState, memories_of};
use super::work::Agent;
use crate::error::{Error, Result};
use crate::lake::Lake;
use crate::llm::{ClientSettings, chat_model};

/// What to ask, of whom, as of when, and by which model.
#[derive(Debug, Clone)]
pub struct InterviewSpec {
    pub interview_id: String,
    pub turn: Turn,
    pub agents: Selector,
    pub questions: Vec<InterviewQuestion>,
    pub model: String,
    pub endpoints: Vec<String>,
    /// Questions asked at once.
    pub concurrency: usize,
    pub max_attempts: u32,
}

/// Up to this many chosen agents, their steps are read by an `IN` list of
/// their ids; more, and reading every step costs less than such a filter.
const FEW_AGENTS: usize = 1_000;

/// Asks every chosen agent every question and stores the answers in one
/// commit; a reply that cannot be read is stored as its error. Nothing is
/// stored if the model cannot be reached.
pub async fn interview(
    lake: &Lake,
    spec: &SimSpec,
    ask: &InterviewSpec,
    client: &ClientSettings,
    threads: usize,
) -> Result<Vec<SimInterviewRow>> {
    let run = spec.run_id.as_str();
    // The memories are rebuilt whole below, for the chosen agents only.
    let state = SimState::load_platform_until(lake, spec, Some(ask.turn)).await?;
    if state.next_turn().0 <= ask.turn.0 {
        return Err(Error::Invalid(match state.next_turn().0 {
            0 => format!("run {run} has no committed turn yet: turn {} cannot be asked about", ask.turn),
            n => format!("turn {} of run {run} is not committed: its turns 0 to {} are", ask.turn, n - 1),
        }));
    }
    let chosen: Vec<&Agent> = state
        .agents
        .iter()
        .filter(|a| a.setup_error.is_none() && ask.agents.matches(&a.persona, spec.preset.kind_of(a.persona.id), spec.seed))
        .collect();
    if chosen.is_empty() {
        return Err(Error::Invalid(format!("no agent of run {run} that was set up matches the selector {:?}", ask.agents)));
    }
    // An interview of a few agents replays just their steps' memories.
    let ids: Vec<i64> = chosen.iter().map(|a| i64::from(a.persona.id.0)).collect();
    let only = (ids.len() <= FEW_AGENTS).then_some(ids.as_slice());
    let memories = &memories_of(lake, spec, only, ask.turn, |_, _, _| {}).await?;
    let model: Arc<dyn ChatModel> = chat_model(&ask.model, &ask.endpoints, client, threads)?;
    let jobs = chosen.iter().flat_map(|a| ask.questions.iter().enumerate().map(move |(i, q)| (*a, i, q)));
    let rows: Vec<SimInterviewRow> = futures::stream::iter(jobs.map(|(agent, i, q)| {
        let model = model.clone();
        let memory = memories.get(&agent.persona.id).cloned().unwrap_or_default();
        // Each answer's sampling fixed by the run's seed, the agent and the
        // question, so asking again with a deterministic model gives the
        // same answers.
        let seed = some_sim::agent::activity::mix(spec.seed, agent.persona.id, Turn(ask.turn.0 ^ (i as u32).rotate_left(20)));
        async move {
            let asked = ask_agent(model.as_ref(), &agent.persona, &memory, q, ask.max_attempts, Some(seed)).await;
            let (answer, error) = match asked {
                Ok(a) => (Some(a.value), None),
                Err(AskError::Reply { attempts, last, reply }) => {
                    (None, Some(format!("no usable reply in {attempts} attempts: {last} (reply: {reply:?})")))
                }
                Err(AskError::Model(e)) => return Err(Error::Model(e)),
            };
            Ok::<_, Error>(SimInterviewRow {
                interview_id: ask.interview_id.clone(),
                turn: i64::from(ask.turn.0),
                agent_id: i64::from(agent.persona.id.0),
                question_id: q.id.clone(),
                question: q.question.clone(),
                options: q.options.as_ref().map(|o| serde_json::Value::from(o.clone()).to_string()),
                answer,
                error,
                model: ask.model.clone(),
                asked_at: Timestamp::now(),
                run_id: run.to_string(),
            })
        }
    }))
    .buffered(ask.concurrency.max(1))
    .try_collect()
    .await?;
    let mut txn = lake.txn();
    txn.write_rows(rows.clone()).await?;
    txn.commit().await?;
    Ok(rows)
}
