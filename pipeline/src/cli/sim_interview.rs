//! `some sim interview`: ask a run's agents, as they were at a committed
//! turn, an open question or a survey, and store the answers in
//! `sim_interviews`; the run itself is only read.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use some_schemas::RunId;
use some_sim::Turn;
use some_sim::agent::interview::{InterviewQuestion, load_questions};
use some_sim::agent::select::Selector;
use some_sim::evaluation::interviews::{tables, tabulate};
use some_workers::Lake;
use some_workers::sim::interview::{InterviewSpec, interview};
use some_workers::sim::load_sim;

use super::flags::ExecFlags;

#[derive(Debug, Args)]
pub struct SimInterview {
    pub run_id: RunId,
    /// The committed turn the agents are asked as of (their persona, memory
    /// and reflections then).
    #[arg(long)]
    pub turn: u32,
    /// Whom to ask: all, initial, regular, ids and ranges (0-9,20),
    /// share:F (a seeded share) or FIELD=TEXT (a persona field containing
    /// TEXT, e.g. nationality=irish, age=30-39).
    #[arg(long, default_value = "all", value_parser = Selector::parse)]
    pub agents: Selector,
    /// One open question.
    #[arg(long, conflicts_with = "questions", required_unless_present = "questions")]
    pub question: Option<String>,
    /// A questions file: JSON lines of {"id", "question", "options"}; a
    /// question with options is a survey question.
    #[arg(long)]
    pub questions: Option<PathBuf>,
    /// The model asked (the run's, at the run's endpoints, if not given).
    #[arg(long)]
    pub model: Option<String>,
    #[arg(long = "endpoint")]
    pub endpoints: Vec<String>,
    /// Names the interview (default: a dated id).
    #[arg(long)]
    pub id: Option<String>,
    /// Asks per reply that cannot be read, at most.
    #[arg(long, default_value_t = 3)]
    pub attempts: u32,
    /// Print every agent's answer, not only the tables.
    #[arg(long)]
    pub answers: bool,
    #[command(flatten)]
    pub flags: ExecFlags,
}

impl SimInterview {
    pub async fn run(self, lake: &Lake) -> anyhow::Result<ExitCode> {
        let questions = match (&self.question, &self.questions) {
            (Some(q), _) => vec![InterviewQuestion::open("q1", q)],
            (None, Some(path)) => load_questions(path).map_err(anyhow::Error::msg)?,
            (None, None) => anyhow::bail!("give --question or --questions"),
        };
        if questions.iter().any(|q| q.question.trim().is_empty()) {
            anyhow::bail!("the question is empty");
        }
        let spec = load_sim(lake, &self.run_id).await?.spec;
        let model = self.model.clone().unwrap_or_else(|| spec.model.clone());
        let endpoints = if self.endpoints.is_empty() && model == spec.model { spec.endpoints.clone() } else { self.endpoints.clone() };
        let ask = InterviewSpec {
            interview_id: self.id.clone().unwrap_or_else(|| format!("interview-{}", RunId::new_dated())),
            turn: Turn(self.turn),
            agents: self.agents.clone(),
            questions,
            model,
            endpoints,
            concurrency: self.flags.calls.max(1),
            max_attempts: self.attempts.max(1),
        };
        let worker = self.flags.worker();
        let rows = interview(lake, &spec, &ask, &worker.client, worker.threads).await?;
        let unread = rows.iter().filter(|r| r.answer.is_none()).count();
        eprintln!(
            "interview {} of run {} at turn {}: {} answers from {} agents, {unread} replies could not be read",
            ask.interview_id,
            self.run_id,
            self.turn,
            rows.len() - unread,
            rows.iter().map(|r| r.agent_id).collect::<std::collections::BTreeSet<_>>().len()
        );
        if self.answers {
            for r in &rows {
                let said =
                    r.answer.as_deref().map_or_else(|| format!("(no answer: {})", r.error.as_deref().unwrap_or("-")), str::to_string);
                println!("agent {} {}: {said}", r.agent_id, r.question_id);
            }
        }
        let mut out = String::new();
        for t in tables(&tabulate(&rows).map_err(|(at, cause)| anyhow::anyhow!("{at}: {cause}"))?) {
            t.text(&mut out);
        }
        print!("{out}");
        Ok(if unread == rows.len() { ExitCode::FAILURE } else { ExitCode::SUCCESS })
    }
}
