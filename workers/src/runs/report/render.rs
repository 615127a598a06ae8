//! The report as text (the terminal) and as one self-contained HTML page.

use std::fmt::Write as _;

use some_jobs::agent::analysis::ChainFailure;
use some_jobs::render::{Chart, STYLE, Table, escape};
use some_jobs::solvers::by_solver;
use some_schemas::Task;

use super::{PAPER_SCORES, PAPER_TCR, PaperRow, Report, TaskLine};

fn cell(v: Option<f64>) -> String {
    v.map_or_else(|| "-".to_string(), |v| format!("{v:.2}"))
}

fn pct(part: usize, whole: usize) -> String {
    if whole == 0 { "-".into() } else { format!("{:.1}%", 100.0 * part as f64 / whole as f64) }
}

/// A table's rows: this run, its baselines (scores only), then the paper's.
fn table_rows(
    report: &Report,
    value: fn(&TaskLine) -> Option<f64>,
    with_baselines: bool,
    paper: &[PaperRow],
) -> Vec<(String, String, Vec<String>)> {
    let per_task = |f: &dyn Fn(Task) -> Option<f64>| -> Vec<Option<f64>> { Task::ALL.iter().map(|t| f(*t)).collect() };
    let line = |t: Task| report.tasks.iter().find(|l| l.task == t);
    let with_avg = |values: Vec<Option<f64>>| {
        let present: Vec<f64> = values.iter().flatten().copied().collect();
        let avg = (!present.is_empty()).then(|| present.iter().sum::<f64>() / present.len() as f64);
        values.into_iter().chain([avg]).map(cell).collect::<Vec<_>>()
    };
    let mut rows = vec![("this run: ".to_string() + &report.spec.model, "".into(), with_avg(per_task(&|t| line(t).and_then(value))))];
    if with_baselines {
        rows.push((
            "this run, answers with no tool call".into(),
            "".into(),
            with_avg(per_task(&|t| line(t).and_then(|l| l.tool_free_score))),
        ));
        rows.push((
            "random baseline".into(),
            "".into(),
            with_avg(per_task(&|t| line(t).and_then(|l| l.baseline.as_ref()).map(|b| b.random))),
        ));
        rows.push((
            "majority-class baseline, this run's queries".into(),
            "".into(),
            with_avg(per_task(&|t| line(t).and_then(|l| l.baseline.as_ref()).map(|b| b.majority))),
        ));
        rows.push((
            "majority-class baseline, all labelled queries".into(),
            "".into(),
            with_avg(per_task(&|t| line(t).and_then(|l| l.lake_majority))),
        ));
        for (solver, scores) in by_solver(&report.solvers) {
            rows.push((solver.to_string(), "".into(), with_avg(per_task(&|t| scores.get(&t).copied()))));
        }
    }
    for p in paper {
        rows.push((format!("paper: {}", p.model), p.size.into(), p.values.iter().map(|v| format!("{v:.2}")).collect()));
    }
    rows
}

fn header() -> Vec<String> {
    Task::ALL.iter().map(|t| t.code().to_string()).chain(["Avg.".to_string()]).collect()
}

/// A table of the report: a row per model (this run first, drawn out),
/// a column per task and the average.
fn table(title: &str, rows: Vec<(String, String, Vec<String>)>) -> Table {
    Table {
        title: title.into(),
        header: ["Model".to_string(), "Size".to_string()].into_iter().chain(header()).collect(),
        rows: rows.into_iter().map(|(name, size, values)| [name, size].into_iter().chain(values).collect()).collect(),
        left: vec![0],
        highlight: Some(0),
    }
}

/// How many final answers used no tool at all, per task: their scores are
/// guesses from the prompt, however high.
fn tool_free_note(report: &Report) -> String {
    let counts: Vec<String> = report.tasks.iter().map(|l| format!("{} {} of {}", l.task.code(), l.tool_free, l.done)).collect();
    format!("final answers given with no tool call (scored above as guesses): {}", counts.join(", "))
}

/// What the solver rows are computed over, when there are any.
fn solvers_note(report: &Report) -> Option<String> {
    report.solvers.first()?;
    let counts: Vec<String> = Task::ALL
        .iter()
        .filter_map(|t| report.solvers.iter().find(|s| s.task == *t).map(|s| format!("{} {}", t.code(), s.queries)))
        .collect();
    let left_out = match report.solvers_ungrounded {
        0 => String::new(),
        n => format!("; {n} labelled queries whose data the lake does not hold are left out"),
    };
    Some(format!(
        "cheat and oracle rows use no LLM and read what the tools show, over the labelled queries whose data the lake holds ({}){left_out}; \
         a yes/no cheat is scored at its best threshold",
        counts.join(", ")
    ))
}

/// Over epochs, per task: the score with its 95% interval, each epoch's
/// mean, the spread within queries, and pass@k / pass^k with agreement for
/// the label tasks.
fn epochs_table(report: &Report) -> Option<Table> {
    let epochs = report.spec.epochs;
    if epochs < 2 {
        return None;
    }
    let ks: Vec<u32> = (1..=epochs).collect();
    let header = ["task", "queries", "score ± 95%"]
        .iter()
        .map(|h| h.to_string())
        .chain((1..=epochs).map(|e| format!("epoch {e}")))
        .chain(["spread".to_string()])
        .chain(ks.iter().map(|k| format!("pass@{k}")))
        .chain(ks.iter().map(|k| format!("pass^{k}")))
        .chain(["agree".to_string()])
        .collect();
    let rows = report
        .tasks
        .iter()
        .filter_map(|l| {
            let f = l.epochs.as_ref()?;
            let score = match (l.score, f.half_width) {
                (Some(s), Some(h)) => format!("{s:.2} ± {h:.2}"),
                (Some(s), None) => format!("{s:.2}"),
                _ => "-".into(),
            };
            let label = l.task.scoring() == some_schemas::Scoring::Label;
            let row = [l.task.code().to_string(), f.queries.to_string(), score]
                .into_iter()
                .chain(f.per_epoch.iter().map(|v| cell(*v)))
                .chain([cell(f.spread)])
                .chain(ks.iter().map(|k| if label { cell(f.pass_at[*k as usize - 1]) } else { "-".into() }))
                .chain(ks.iter().map(|k| if label { cell(f.pass_all[*k as usize - 1]) } else { "-".into() }))
                .chain([f.agreement.map_or("-".into(), |a| format!("{a:.1}%"))])
                .collect();
            Some(row)
        })
        .collect();
    Some(Table {
        title: format!("Over {epochs} epochs (seeds {:?})", report.spec.epoch_seeds),
        header,
        rows,
        left: vec![0],
        highlight: None,
    })
}

const EPOCHS_NOTE: &str = "\
score: the mean over queries of each query's mean over its epochs, ± half its 95% interval across queries (Student's t)
epoch N: that epoch's mean alone; spread: the mean over queries of the standard deviation of a query's scores across epochs
pass@k / pass^k: the chance that at least one / all of k epochs of a query are right (label tasks)
agree: queries whose epochs all read the same label";

/// Lines on what bounded the run: its budget, and the endpoints' capacity.
fn limits(report: &Report) -> Vec<String> {
    let mut lines = Vec::new();
    if let Some(budget) = report.spec.budget.describe() {
        lines.push(format!("budget: {budget}"));
    }
    if let Some(reason) = &report.stopped {
        lines.push(format!(
            "stopped: {reason}; the figures cover only what ran before (`some rerun {} --max-run-tokens N` goes on)",
            report.spec.run_id
        ));
    }
    lines.extend(report.capacity.lines().into_iter().map(|l| format!("endpoint {l}")));
    lines
}

/// The report for a terminal.
pub fn text(report: &Report) -> String {
    let spec = &report.spec;
    let mut out = String::new();
    let judging = &report.judging;
    let judge_how = format!(
        "temperature {}, seed {}",
        judging.settings.temperature.map_or("endpoint default".into(), |t| t.to_string()),
        judging.settings.seed.map_or("none".into(), |s| s.to_string())
    );
    let _ = writeln!(out, "run {}{}", spec.run_id, if report.cancelled { " (cancelled)" } else { "" });
    let _ = writeln!(out, "agent {} ({:?} protocol)", spec.model, spec.agent.protocol);
    let _ = writeln!(out, "judging {}: {} ({judge_how})", judging.judging, judging.judge_model);
    let planned: usize = report.tasks.iter().map(|t| t.planned).sum();
    let done: usize = report.tasks.iter().map(|t| t.done).sum();
    if spec.epochs > 1 {
        let samples = planned * spec.epochs as usize;
        let _ = writeln!(
            out,
            "samples: {done} of {samples} ({planned} queries × {} epochs) have a final result; {} attempts await a rerun",
            spec.epochs, report.unfinished_attempts
        );
    } else {
        let _ = writeln!(out, "queries: {done} of {planned} have a final result; {} attempts await a rerun", report.unfinished_attempts);
    }
    for line in limits(report) {
        let _ = writeln!(out, "{line}");
    }
    if report.unscored > 0 {
        let _ = writeln!(
            out,
            "{} final episodes await a score under judging {}: `some judge {} --judging {}` scores them",
            report.unscored, judging.judging, spec.run_id, judging.judging
        );
    }
    for caveat in report.caveats() {
        let _ = writeln!(out, "note: {caveat}");
    }
    let statuses: Vec<String> = report.statuses.iter().map(|(s, n)| format!("{s} {n}")).collect();
    let _ = writeln!(out, "episodes: {}", if statuses.is_empty() { "none".into() } else { statuses.join(", ") });
    let _ = writeln!(
        out,
        "tokens: {} prompt, {} completion; judge calls {}",
        report.prompt_tokens, report.completion_tokens, report.judge_calls
    );
    if spec.agent.failing_tools {
        let _ = writeln!(
            out,
            "This run answered every tool call with an error (the hallucination probe): its TCR is the tool-response hallucination rate."
        );
    }
    table("Scores (the paper's Table 3)", table_rows(report, |l| l.score, true, &PAPER_SCORES)).text(&mut out);
    let _ = writeln!(out, "\n{}", tool_free_note(report));
    if let Some(note) = solvers_note(report) {
        let _ = writeln!(out, "{note}");
    }
    table("Task completion rate, % (the paper's Table 4)", table_rows(report, |l| l.tcr, false, &PAPER_TCR)).text(&mut out);
    if let Some(epochs) = epochs_table(report) {
        epochs.text(&mut out);
        let _ = writeln!(out, "\n{EPOCHS_NOTE}");
    }
    out.push('\n');
    let u = &report.tool_use;
    let _ = writeln!(out, "Tool use (the paper's Figures 3 and 4), over {} episodes:", u.episodes);
    let _ = writeln!(out, "  one-attempt success rate      {}", pct(u.one_attempt, u.episodes));
    for cause in ChainFailure::ALL {
        let n = u.failures.get(&cause).copied().unwrap_or(0);
        let _ = writeln!(out, "  first failure: {:<14} {}", cause.as_str(), pct(n, u.episodes));
    }
    let _ = writeln!(out, "  tool-calling hallucination    {}", pct(u.calling_hallucinations, u.episodes));
    if spec.agent.failing_tools {
        let rate = report.average(|l| l.tcr);
        let _ = writeln!(out, "  tool-response hallucination   {}", rate.map_or("-".into(), |r| format!("{r:.1}%")));
    }
    out
}

/// Grouped bars per task on a 0-100 score axis: this run, the majority
/// baseline and the best published score, as inline SVG.
fn chart(report: &Report) -> String {
    let frame = Chart { width: 760.0, ..Chart::DEFAULT };
    let group = (frame.width - frame.left) / Task::ALL.len() as f64;
    let bar = group / 4.0;
    let mut svg = frame.open("scores per task");
    frame.axes(&mut svg, 100.0, "score", "task");
    for (i, task) in Task::ALL.iter().enumerate() {
        let x0 = frame.left + i as f64 * group + bar / 2.0;
        let line = report.tasks.iter().find(|l| l.task == *task);
        let best = PAPER_SCORES.iter().map(|p| p.values[i]).fold(0.0, f64::max);
        let bars = [
            (line.and_then(|l| l.score), "#2b6cb0", "this run"),
            (line.and_then(|l| l.baseline.as_ref()).map(|b| b.majority), "#a0aec0", "majority baseline"),
            (Some(best), "#dd6b20", "best published"),
        ];
        for (j, (v, color, what)) in bars.iter().enumerate() {
            if let Some(v) = v {
                let y = frame.y(*v, 100.0);
                let _ = write!(
                    svg,
                    "<rect x=\"{:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{color}\"><title>{} {what}: {v:.2}</title></rect>",
                    x0 + j as f64 * bar,
                    bar - 2.0,
                    frame.bottom_y() - y,
                    task.code()
                );
            }
        }
        let _ = write!(
            svg,
            "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"12\" text-anchor=\"middle\">{}</text>",
            x0 + 1.5 * bar,
            frame.bottom_y() + 16.0,
            task.code()
        );
    }
    svg.push_str("</svg><p class=\"legend\"><span style=\"color:#2b6cb0\">■</span> this run <span style=\"color:#a0aec0\">■</span> majority-class baseline <span style=\"color:#dd6b20\">■</span> best published (Table 3)</p>");
    svg
}

/// The report as one HTML page with no outside resources.
pub fn html(report: &Report) -> String {
    let mut out =
        format!("<!doctype html><html><head><meta charset=\"utf-8\"><title>some report</title><style>{STYLE}</style></head><body>");
    let _ = write!(out, "<h1>Run {}</h1>", escape(report.spec.run_id.as_str()));
    for caveat in report.caveats() {
        let _ = write!(out, "<p><strong>Note:</strong> {}</p>", escape(&caveat));
    }
    for line in limits(report) {
        let _ = write!(out, "<p>{}</p>", escape(&line));
    }
    out.push_str(&chart(report));
    table("Scores (the paper's Table 3)", table_rows(report, |l| l.score, true, &PAPER_SCORES)).html(&mut out);
    let _ = write!(out, "<p class=\"legend\">{}</p>", escape(&tool_free_note(report)));
    if let Some(note) = solvers_note(report) {
        let _ = write!(out, "<p class=\"legend\">{}</p>", escape(&note));
    }
    table("Task completion rate, % (the paper's Table 4)", table_rows(report, |l| l.tcr, false, &PAPER_TCR)).html(&mut out);
    if let Some(epochs) = epochs_table(report) {
        epochs.html(&mut out);
        let _ = write!(out, "<p class=\"legend\">{}</p>", escape(EPOCHS_NOTE));
    }
    let _ = write!(out, "<h2>Summary</h2><pre>{}</pre></body></html>", escape(&text(report)));
    out
}
