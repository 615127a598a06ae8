//! `some view` read in a real browser: the episode list filtered by the
//! page's own script, an episode's transcript, static files and the
//! loopback server alike.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use some_tests::scripted::{Reply, ScriptedEndpoint, assistant_turns, is_agent, messages};
use some_tests::{Background, http, lake_with_world, some, wait_until};

/// Chromium, installed by `infra/test.sh` (ensure_chromium).
fn chromium() -> String {
    let path = std::env::var("SOME_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    assert!(Path::new(&path).is_file(), "no browser at {path}: infra/test.sh installs Debian's chromium (ensure_chromium)");
    path
}

/// The page's DOM after its scripts ran, as headless Chromium sees it.
fn dom(url: &str) -> String {
    let profile = tempfile::tempdir().unwrap();
    let out = Command::new(chromium())
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--virtual-time-budget=2000", "--dump-dom"])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(url)
        .output()
        .expect("run chromium");
    assert!(out.status.success(), "chromium on {url}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// "N of M episodes shown", as the page's script counts it.
fn shown(dom: &str) -> &str {
    let at = dom.find("<p id=\"shown\">").unwrap_or_else(|| panic!("no count in {dom}")) + "<p id=\"shown\">".len();
    &dom[at..at + dom[at..].find('<').unwrap()]
}

#[test]
fn the_viewer_lists_filters_and_shows_transcripts_in_a_browser() {
    let (dir, lake) = lake_with_world();
    // UEA episodes look into a missing folder (a tool error), then answer;
    // UBP episodes answer at once with no tool call.
    let endpoint = ScriptedEndpoint::start(|_, body| {
        if !is_agent(body) {
            // Only UEA's sentence needs the extractor; "是" is a label already.
            return Reply::Text("积极".into());
        }
        let ubp = !messages(body)[1]["content"].as_str().unwrap_or("").contains("产生哪种情绪");
        Reply::Text(match (ubp, assistant_turns(body)) {
            (false, 0) => "<tool_call>\n{\"name\": \"data_folder\", \"arguments\": {\"folder_name\": \"nothing\", \"start_idx\": 0, \"end_idx\": 5}}\n</tool_call>".into(),
            (false, _) => "根据该用户的帖子，情绪是积极的。".into(),
            (true, _) => "是".into(),
        })
    });
    let run = some(
        &lake,
        &[],
        &["run", "--tasks", "UEA,UBP", "--sample", "3", "--model", "scripted", "--endpoint", &endpoint.url, "--calls", "2"],
    )
    .ok();
    let line = run.stderr.lines().find(|l| l.starts_with("run ")).unwrap_or_else(|| panic!("{}", run.stderr));
    let id = line["run ".len()..].split(':').next().unwrap().to_string();

    // Static pages: an index and one page per episode.
    let site = dir.path().join("site");
    let wrote = some(&lake, &[], &["view", &id, "--html", site.to_str().unwrap()]).ok().stdout;
    assert!(wrote.contains("wrote 7 pages"), "{wrote}");
    let index = format!("file://{}", site.join("index.html").display());
    assert_eq!(shown(&dom(&index)), "6 of 6 episodes shown");
    assert_eq!(shown(&dom(&format!("{index}#task=UEA"))), "3 of 6 episodes shown");
    assert_eq!(shown(&dom(&format!("{index}#errors=with"))), "3 of 6 episodes shown");
    assert_eq!(shown(&dom(&format!("{index}#task=UBP&errors=with"))), "0 of 6 episodes shown");
    let passed = some(
        &lake,
        &[],
        &["sql", "--format", "csv", &format!("SELECT count(*) AS n FROM scores WHERE run_id = '{id}' AND task = 'UBP' AND score >= 50")],
    )
    .ok()
    .stdout;
    let passed = passed.lines().nth(1).unwrap();
    assert_eq!(shown(&dom(&format!("{index}#min=50&task=UBP"))), format!("{passed} of 6 episodes shown"));
    // The filtered-out rows are hidden by the script, not removed.
    let filtered = dom(&format!("{index}#task=UBP"));
    assert_eq!(filtered.matches("<tr data-task=\"UEA\"").count(), 3);
    assert_eq!(filtered.matches("class=\"hidden\"").count(), 3, "{filtered}");

    // An episode's page: the messages, the tool call and its failure, the
    // score and the reference it was scored against.
    let uea = std::fs::read_dir(site.join("episodes"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| std::fs::read_to_string(p).unwrap().contains("task UEA"))
        .unwrap();
    let page = dom(&format!("file://{}", uea.display()));
    for expected in [
        "<div class=\"role\">system</div>",
        "<div class=\"role\">assistant</div>",
        "情绪是积极的",
        "data_folder",
        "<td class=\"w\">yes</td>",
        "score <b>",
        "label 积极",
        "<h2>Reference</h2>",
        "<h3>The extractor's reply</h3><pre>积极</pre>",
    ] {
        assert!(page.contains(expected), "no {expected:?} in {page}");
    }
    assert!(page.contains("<details><summary>all "), "the long system prompt is folded: {page}");

    // Served on loopback: the same pages, and a clear 404.
    let server = Background::start(&lake, &[], &["view", &id, "--port", "0"]);
    assert!(wait_until(Duration::from_secs(60), || server.log().contains("serving run")), "{}", server.log());
    let log = server.log();
    let url = log.split_whitespace().find(|w| w.starts_with("http://127.0.0.1:")).unwrap().to_string();
    assert_eq!(shown(&dom(&format!("{url}#task=UEA&errors=with"))), "3 of 6 episodes shown");
    let port: u16 = url.trim_end_matches('/').rsplit(':').next().unwrap().parse().unwrap();
    let (status, body) = http(port, "GET", "/episodes/nope.html", &[], "");
    assert!(status.contains("404") && body.contains("no page episodes/nope.html"), "{status} {body}");
}
