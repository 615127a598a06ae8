//! `some status`: a run's progress as the lake records it, once or live.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::process::ExitCode;

use clap::Args;
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use some_jobs::progress::NoProgress;
use some_schemas::RunId;
use some_workers::Lake;
use some_workers::executor::{Look, until_settled};
use some_workers::runs::progress::{RunProgress, progress};
use some_workers::runs::{JudgingSpec, RunSpec, load_run};

#[derive(Debug, Args)]
pub struct Status {
    pub run_id: RunId,
    /// Keep showing live progress bars until the run is done.
    #[arg(long)]
    pub watch: bool,
}

impl Status {
    pub async fn run(self, lake: &Lake) -> anyhow::Result<ExitCode> {
        if self.watch {
            watch(lake, &self.run_id).await?;
        }
        let record = load_run(lake, &self.run_id).await?;
        let p = progress(lake, &record.spec, record.cancelled, record.stopped.clone()).await?;
        print!("{}", describe(&self.run_id, &p, &record.judgings, &record.spec));
        Ok(ExitCode::SUCCESS)
    }
}

fn describe(run_id: &RunId, p: &RunProgress, judgings: &[JudgingSpec], spec: &RunSpec) -> String {
    let mut out = format!("run {run_id}{}\n", if p.cancelled { " (cancelled)" } else { "" });
    if spec.epochs > 1 {
        out.push_str(&format!(
            "{} queries × {} epochs (seeds {:?}); counts below are per query and epoch\n",
            spec.queries.len(),
            spec.epochs,
            spec.epoch_seeds
        ));
    }
    if let Some(budget) = spec.budget.describe() {
        out.push_str(&format!("budget: {budget}\n"));
    }
    if let Some(reason) = &p.stopped {
        out.push_str(&format!(
            "stopped: {reason}; `some rerun {run_id} --max-run-tokens N` (or --max-run-cost) goes on with a new budget\n"
        ));
    }
    out.push_str(&format!("{:<5} {:>8} {:>8} {:>8} {:>8}\n", "task", "planned", "final", "failed", "pending"));
    for (task, t) in &p.tasks {
        out.push_str(&format!("{task:<5} {:>8} {:>8} {:>8} {:>8}\n", t.planned, t.finished, t.failed, t.planned - t.finished - t.failed));
    }
    out.push_str(&format!(
        "throughput {:.2} results/s; eta {}; tokens {} prompt ({} of them from the prompt cache), {} completion\n",
        p.throughput(),
        p.eta().map_or("-".into(), |s| format!("{s:.0} s")),
        p.prompt_tokens,
        p.cached_prompt_tokens,
        p.completion_tokens
    ));
    for (cause, n) in &p.failures {
        out.push_str(&format!("failed attempts: {n} × {cause}\n"));
    }
    for j in judgings {
        let scored = p.scored.get(&j.judging).copied().unwrap_or(0);
        out.push_str(&format!("judging {} ({}): {scored} of {} final results scored\n", j.judging, j.judge_model, p.finished()));
    }
    out
}

/// Shows a bar per task until every query has a final result or a failed
/// latest attempt (or the run is cancelled); where standard error is not a
/// terminal, a line each time the counts change.
async fn watch(lake: &Lake, run_id: &RunId) -> anyhow::Result<()> {
    let spec = load_run(lake, run_id).await?.spec;
    let lines = (!std::io::stderr().is_terminal()).then(|| std::sync::Mutex::new(String::new()));
    let lines = &lines;
    let bars = MultiProgress::new();
    let style = ProgressStyle::with_template("{prefix:>4} [{bar:40}] {pos}/{len} {msg}").expect("static template").progress_chars("=> ");
    let per_task = std::sync::Mutex::new(BTreeMap::new());
    let (bars, style, per_task, spec) = (&bars, &style, &per_task, &spec);
    until_settled(&NoProgress, None, None, || async move {
        let record = load_run(lake, run_id).await?;
        let (cancelled, stopped) = (record.cancelled, record.stopped.is_some());
        let p = progress(lake, spec, cancelled, record.stopped).await?;
        let mut per_task = per_task.lock().map_err(|_| some_workers::Error::Invalid("progress bars poisoned".into()))?;
        for (task, t) in &p.tasks {
            let bar = per_task.entry(*task).or_insert_with(|| {
                let b = bars.add(ProgressBar::new(t.planned as u64).with_style(style.clone()));
                b.set_prefix(task.code());
                b
            });
            bar.set_position(t.finished as u64);
            bar.set_message(if t.failed > 0 { format!("{} failed", t.failed) } else { String::new() });
        }
        if let Some(mut last) = lines.as_ref().and_then(|l| l.lock().ok()) {
            let counts: Vec<String> =
                p.tasks.iter().map(|(task, t)| format!("{task} {}/{} final, {} failed", t.finished, t.planned, t.failed)).collect();
            let line = counts.join("; ");
            if *last != line {
                eprintln!("{line}");
                *last = line;
            }
        }
        let settled: usize = p.tasks.values().map(|t| t.finished + t.failed).sum();
        Ok(Look { done: settled, settled: cancelled || stopped || settled >= p.planned(), failures: Vec::new() })
    })
    .await?;
    bars.clear().ok();
    Ok(())
}
