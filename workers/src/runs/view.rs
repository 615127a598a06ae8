//! `some view`: a run's episodes as pages a person reads, from the lake
//! alone, so any machine that reaches the lake can look at any run.
//!
//! An index lists every episode (attempts included) with filters by task,
//! outcome, score and tool errors, kept in the page's address
//! (`#task=UEA&outcome=answered&min=50&errors=with`) so a filtered view can
//! be shared. Each episode has a page: its messages in order, the tool calls
//! it made, and how it was scored. Long texts (system prompts, tool results)
//! are cut with the rest one click away. The same pages are written as
//! static files (`--html DIR`) or served on loopback.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::Path;

use some_jobs::agent::Transcript;
use some_jobs::chat::Role;
use some_jobs::render::{STYLE, cut, escape};
use some_schemas::{EpisodeRow, QueryId, RunId, ScoreRow};

use super::record::load_run;
use super::results::read_run;
use crate::error::{Error, Result};
use crate::lake::Lake;

/// Characters of a message shown before the rest is folded away.
const SHOWN: usize = 600;

/// A run's pages by path relative to the site's root (`index.html`,
/// `episodes/<id>.html`).
#[derive(Debug, Clone, Default)]
pub struct Pages(BTreeMap<String, String>);

impl Pages {
    pub fn get(&self, path: &str) -> Option<&str> {
        self.0.get(path).map(String::as_str)
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Writes every page under `dir` (created if missing).
    pub fn write(&self, dir: &Path) -> std::io::Result<()> {
        for (path, html) in &self.0 {
            let file = dir.join(path);
            if let Some(parent) = file.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(file, html)?;
        }
        Ok(())
    }

    /// Serves the pages on 127.0.0.1:`port` (0: any free port) until
    /// `shutdown` resolves; `bound` learns the address. Loopback only: the
    /// transcripts are the run's data and the server checks no token.
    pub async fn serve(
        self,
        port: u16,
        bound: impl FnOnce(SocketAddr),
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> Result<()> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .map_err(|source| Error::Io { what: format!("listening on 127.0.0.1:{port}"), source })?;
        bound(listener.local_addr().map_err(|source| Error::Io { what: "the listening address".into(), source })?);
        let pages = std::sync::Arc::new(self);
        let router = axum::Router::new().fallback(move |uri: axum::http::Uri| {
            let pages = pages.clone();
            async move {
                let path = uri.path().trim_start_matches('/');
                let path = if path.is_empty() { "index.html" } else { path };
                match pages.get(path) {
                    Some(html) => (axum::http::StatusCode::OK, [("content-type", "text/html; charset=utf-8")], html.to_string()),
                    None => (axum::http::StatusCode::NOT_FOUND, [("content-type", "text/plain; charset=utf-8")], format!("no page {path}")),
                }
            }
        });
        axum::serve(listener, router)
            .with_graceful_shutdown(shutdown)
            .await
            .map_err(|source| Error::Io { what: "serving the pages".into(), source })
    }
}

/// The pages of `run_id` with the scores of `judging`.
pub async fn build(lake: &Lake, run_id: &RunId, judging: &str) -> Result<Pages> {
    let record = load_run(lake, run_id).await?;
    record.judging(judging)?;
    let rows = read_run(lake, run_id).await?;
    let queries = crate::world::read_queries(lake).await?;
    let expected: HashMap<&QueryId, String> =
        queries.iter().map(|q| (&q.query_id, q.label.clone().or_else(|| q.reference.clone()).unwrap_or_default())).collect();
    let mut scores: HashMap<&str, &ScoreRow> = HashMap::new();
    for s in rows.scores.iter().filter(|s| s.judging == judging) {
        // A judge job delivered twice: the later score wins, as in the report.
        let slot = scores.entry(s.episode_id.as_str()).or_insert(s);
        if s.finished_at > slot.finished_at {
            *slot = s;
        }
    }
    let mut episodes: Vec<&EpisodeRow> = rows.episodes.iter().collect();
    episodes.sort_by(|a, b| {
        (a.task, &a.query_id, a.epoch, a.attempt, &a.episode_id).cmp(&(b.task, &b.query_id, b.epoch, b.attempt, &b.episode_id))
    });
    let mut pages = Pages::default();
    let title = format!("run {run_id}: {} ({} episodes), scores of judging {judging}", record.spec.model, episodes.len());
    pages.0.insert("index.html".into(), index(&title, &episodes, &scores, &expected));
    for e in episodes {
        let reference = expected.get(&e.query_id).map_or("", String::as_str);
        pages.0.insert(episode_path(e), episode_page(run_id, e, scores.get(e.episode_id.as_str()).copied(), reference));
    }
    Ok(pages)
}

fn episode_path(e: &EpisodeRow) -> String {
    format!("episodes/{}.html", file_name(e.episode_id.as_str()))
}

/// An id as a file name: anything but letters, digits, `-` and `_` becomes `_`.
fn file_name(id: &str) -> String {
    id.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect()
}

fn page(title: &str, body: &str) -> String {
    format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>{t}</title><style>{STYLE}{VIEW_STYLE}</style></head>\
         <body><h1>{t}</h1>{body}</body></html>",
        t = escape(title)
    )
}

const VIEW_STYLE: &str = ".msg{border-left:4px solid #cbd5e0;margin:.8em 0;padding:.2em .8em}.msg pre{white-space:pre-wrap;margin:.3em 0}\
.system{border-color:#a0aec0}.user{border-color:#4299e1}.assistant{border-color:#48bb78}.tool{border-color:#ed8936}\
.role{font-weight:bold;font-size:90%}.filters label{margin-right:1em}tr.hidden{display:none}";

/// The outcome a filter offers: the episode's status, `retried` for an
/// attempt a later one replaced.
fn outcome(e: &EpisodeRow) -> String {
    if e.is_final { e.status.clone() } else { format!("{} (retried)", e.status) }
}

fn index(title: &str, episodes: &[&EpisodeRow], scores: &HashMap<&str, &ScoreRow>, expected: &HashMap<&QueryId, String>) -> String {
    let options = |values: Vec<String>| {
        let mut values = values;
        values.sort();
        values.dedup();
        values.iter().map(|v| format!("<option value=\"{0}\">{0}</option>", escape(v))).collect::<String>()
    };
    let mut body = String::new();
    let _ = write!(
        body,
        "<p class=\"filters\"><label>task <select id=\"task\"><option value=\"\">all</option>{}</select></label>\
         <label>outcome <select id=\"outcome\"><option value=\"\">all</option>{}</select></label>\
         <label>score at least <input id=\"min\" type=\"number\" min=\"0\" max=\"100\" size=\"4\"></label>\
         <label>tool errors <select id=\"errors\"><option value=\"\">any</option><option value=\"with\">with</option>\
         <option value=\"without\">without</option></select></label></p><p id=\"shown\">{n} of {n} episodes shown</p>",
        options(episodes.iter().map(|e| e.task.code().to_string()).collect()),
        options(episodes.iter().map(|e| outcome(e)).collect()),
        n = episodes.len()
    );
    body.push_str(
        "<table id=\"episodes\"><tr><th class=\"w\">task</th><th class=\"w\">query</th><th>epoch</th><th>attempt</th><th class=\"w\">outcome</th>\
         <th>tool calls</th><th>tool errors</th><th class=\"w\">label or ratings</th><th class=\"w\">reference</th><th>score</th>\
         <th class=\"w\">answer</th></tr>",
    );
    for e in episodes {
        let score = scores.get(e.episode_id.as_str());
        let _ = write!(
            body,
            "<tr data-task=\"{task}\" data-outcome=\"{outcome}\" data-score=\"{score_value}\" data-errors=\"{errors}\">\
             <td class=\"w\">{task}</td><td class=\"w\"><a href=\"{href}\">{query}</a></td><td>{epoch}</td><td>{attempt}</td><td class=\"w\">{outcome}</td>\
             <td>{calls}</td><td>{errors}</td><td class=\"w\">{rated}</td><td class=\"w\">{reference}</td><td>{score_text}</td><td class=\"w\">{answer}</td></tr>",
            task = e.task.code(),
            outcome = escape(&outcome(e)),
            score_value = score.map_or(String::new(), |s| s.score.to_string()),
            errors = e.tool_errors,
            href = escape(&episode_path(e)),
            query = escape(e.query_id.as_str()),
            epoch = e.epoch.0,
            attempt = e.attempt.0,
            calls = e.tool_calls,
            rated = escape(&score.map_or(String::new(), |s| rated(s))),
            reference = escape(&cut(expected.get(&e.query_id).map_or("", String::as_str), 40)),
            score_text = score.map_or("unscored".into(), |s| format!("{:.0}", s.score)),
            answer = escape(&cut(e.answer.as_deref().unwrap_or(""), 80)),
        );
    }
    body.push_str("</table>");
    body.push_str(FILTER_SCRIPT);
    page(title, &body)
}

/// Filters the rows by the controls and keeps the controls in the address.
const FILTER_SCRIPT: &str = r##"<script>
const ids = ["task", "outcome", "min", "errors"];
function fromHash() {
  const params = new URLSearchParams(location.hash.slice(1));
  for (const id of ids) document.getElementById(id).value = params.get(id) || "";
}
function apply() {
  const v = Object.fromEntries(ids.map(id => [id, document.getElementById(id).value]));
  const rows = document.querySelectorAll("#episodes tr[data-task]");
  let shown = 0;
  for (const r of rows) {
    const d = r.dataset;
    const ok = (!v.task || d.task === v.task) && (!v.outcome || d.outcome === v.outcome)
      && (!v.min || (d.score !== "" && Number(d.score) >= Number(v.min)))
      && (!v.errors || (v.errors === "with") === (Number(d.errors) > 0));
    r.classList.toggle("hidden", !ok);
    if (ok) shown++;
  }
  document.getElementById("shown").textContent = shown + " of " + rows.length + " episodes shown";
  const params = new URLSearchParams(ids.filter(id => v[id]).map(id => [id, v[id]]));
  history.replaceState(null, "", "#" + params.toString());
}
for (const id of ids) document.getElementById(id).addEventListener("input", apply);
window.addEventListener("hashchange", () => { fromHash(); apply(); });
fromHash();
apply();
</script>"##;

/// The label read or the judge's ratings.
fn rated(s: &ScoreRow) -> String {
    match (&s.extracted, &s.dimensions) {
        (Some(label), _) => label.clone(),
        (None, Some(dimensions)) => dimensions.clone(),
        (None, None) => String::new(),
    }
}

/// A text shown whole when short, else its start with the rest folded.
fn folded(text: &str) -> String {
    let shown = cut(text, SHOWN);
    if shown.len() == text.len() {
        return format!("<pre>{}</pre>", escape(text));
    }
    format!(
        "<pre>{}</pre><details><summary>all {} characters</summary><pre>{}</pre></details>",
        escape(&shown),
        text.chars().count(),
        escape(text)
    )
}

fn episode_page(run_id: &RunId, e: &EpisodeRow, score: Option<&ScoreRow>, reference: &str) -> String {
    let mut body = String::new();
    let _ = write!(
        body,
        "<p><a href=\"../index.html\">all episodes</a></p><p>task {} · query {} · epoch {} · attempt {} · {} · {} model calls, {} tool calls \
         ({} failed) · {} prompt + {} completion tokens · {:.1} s · worker {}</p>",
        e.task.code(),
        escape(e.query_id.as_str()),
        e.epoch.0,
        e.attempt.0,
        escape(&outcome(e)),
        e.llm_calls,
        e.tool_calls,
        e.tool_errors,
        e.prompt_tokens,
        e.completion_tokens,
        e.latency_ms as f64 / 1000.0,
        escape(&e.worker)
    );
    if let Some(error) = &e.error {
        let _ = write!(body, "<p><b>error:</b> {}</p>", escape(error));
    }
    body.push_str("<h2>Score</h2>");
    match score {
        None => body.push_str("<p>not scored under this judging</p>"),
        Some(s) => {
            let _ = write!(
                body,
                "<p>score <b>{:.1}</b> · {} · {} {} by {} in {} call(s){}</p>",
                s.score,
                if s.completed { "completed" } else { "not completed" },
                if s.extracted.is_some() { "label" } else { "ratings" },
                escape(&rated(s)),
                escape(s.judge_model.as_deref().unwrap_or("no judge")),
                s.judge_calls,
                s.error.as_deref().map_or(String::new(), |err| format!(" · error: {}", escape(err)))
            );
            if let Some(reply) = &s.judge_reply {
                let what = if s.extracted.is_some() { "The extractor's reply" } else { "The judge's reply" };
                let _ = write!(body, "<h3>{what}</h3>{}", folded(reply));
            }
        }
    }
    let _ = write!(body, "<h2>Reference</h2>{}", folded(reference));
    match serde_json::from_str::<Transcript>(&e.transcript) {
        Err(err) => {
            let _ = write!(body, "<p>the transcript could not be read ({}):</p>{}", escape(&err.to_string()), folded(&e.transcript));
        }
        Ok(t) => {
            body.push_str("<h2>Messages</h2>");
            for m in &t.messages {
                let role = match m.role {
                    Role::System => "system",
                    Role::User => "user",
                    Role::Assistant => "assistant",
                    Role::Tool => "tool",
                };
                let _ = write!(body, "<div class=\"msg {role}\"><div class=\"role\">{role}</div>{}", folded(&m.content));
                for call in &m.tool_calls {
                    let _ = write!(body, "<pre>→ {}</pre>", escape(&serde_json::to_string(call).unwrap_or_default()));
                }
                body.push_str("</div>");
            }
            body.push_str(
                "<h2>Tool calls</h2><table><tr><th>model call</th><th class=\"w\">tool</th><th class=\"w\">arguments</th>\
                 <th class=\"w\">format</th><th class=\"w\">failed</th><th>characters read back</th></tr>",
            );
            if t.tool_results.is_empty() {
                body.push_str("<tr><td class=\"w\" colspan=\"6\">none</td></tr>");
            }
            for r in &t.tool_results {
                let _ = write!(
                    body,
                    "<tr><td>{}</td><td class=\"w\">{}</td><td class=\"w\"><code>{}</code></td><td class=\"w\">{}</td><td class=\"w\">{}</td><td>{}</td></tr>",
                    r.call_index,
                    escape(&r.name),
                    escape(&r.arguments.to_string()),
                    escape(&r.format),
                    if r.error { "yes" } else { "no" },
                    r.chars
                );
            }
            body.push_str("</table>");
        }
    }
    page(&format!("run {run_id}: episode {}", e.episode_id.as_str()), &body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_texts_fold_and_every_text_is_escaped() {
        let short = folded("<b>hi</b>");
        assert_eq!(short, "<pre>&lt;b&gt;hi&lt;/b&gt;</pre>");
        let long = "字".repeat(SHOWN + 5);
        let html = folded(&long);
        assert!(html.contains(&format!("all {} characters", SHOWN + 5)), "{html}");
        assert!(html.starts_with(&format!("<pre>{}…</pre>", "字".repeat(SHOWN - 1))), "{html}");
        assert_eq!(file_name("run/1:q 2"), "run_1_q_2");
    }
}
