//! The report rendered: the tables in the layout of the paper's, with the
//! published figures beside ours, as plain text ([`render_text`]) and as
//! one self-contained HTML page ([`render_html`]) that adds two inline SVG
//! plots (followers, actions per turn). Both renderers print the same
//! tables, so the terminal and the page never disagree. The page has no
//! script and no outside resource, so it can be mailed or archived as one
//! file; every text from the run is escaped, since posts are model output.

use std::fmt::Write as _;

use some_schemas::sim::ActionKind;

use crate::evaluation::report::{Actions, FollowerBin, Followers, SimReport, Split, TextKind};
use crate::evaluation::report_table::{num, stage_label};
use some_jobs::render::{Chart, STYLE, Table, escape};

/// Table 1's published pairs: (stage, action, [not engaged, engaged] BERTScore, the same for C.score).
const PAPER_TABLE1: [(u32, ActionKind, [f64; 2], [f64; 2]); 6] = [
    (1, ActionKind::Like, [0.433, 0.440], [0.934, 0.972]),
    (1, ActionKind::Reblog, [0.432, 0.438], [0.928, 0.967]),
    (1, ActionKind::Comment, [0.433, 0.435], [0.946, 0.944]),
    (2, ActionKind::Like, [0.428, 0.435], [0.931, 0.953]),
    (2, ActionKind::Reblog, [0.428, 0.434], [0.937, 0.942]),
    (2, ActionKind::Comment, [0.428, 0.431], [0.962, 0.939]),
];
/// Table 1's "post" rows: (stage, BERTScore, C.score).
const PAPER_POSTS: [(u32, f64, f64); 2] = [(1, 0.465, 0.973), (2, 0.466, 0.983)];
/// Table 1's Distinct-1/2 (×100).
const PAPER_DISTINCT: [(u32, TextKind, f64, f64); 4] = [
    (1, TextKind::Comment, 3.38, 19.05),
    (1, TextKind::Post, 22.40, 63.88),
    (2, TextKind::Comment, 2.98, 17.17),
    (2, TextKind::Post, 22.24, 64.10),
];
/// Table 2 (gpt-4-1106-preview): informativeness, consistency, humanness.
const PAPER_TABLE2: [(u32, TextKind, [f64; 3]); 4] = [
    (1, TextKind::Comment, [1.767, 2.292, 2.950]),
    (2, TextKind::Comment, [1.983, 2.317, 2.983]),
    (1, TextKind::Post, [2.658, 2.967, 3.000]),
    (2, TextKind::Post, [2.533, 2.983, 3.000]),
];

fn signed(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v:+.3}"))
}

/// Column names written `a|b|c`.
fn header(names: &str) -> Vec<String> {
    names.split('|').map(str::to_string).collect()
}

fn bin_label(b: &FollowerBin) -> String {
    match b.hi {
        None => format!(">{}", b.lo.saturating_sub(1)),
        Some(hi) if hi == b.lo => hi.to_string(),
        Some(hi) => format!("{}-{hi}", b.lo),
    }
}

/// The report's tables, in the layout of the paper's.
fn tables(r: &SimReport) -> Vec<Table> {
    let mut out = Vec::new();
    let mut rows = Vec::new();
    for e in &r.engagement {
        let paper = PAPER_TABLE1.iter().find(|p| p.0 == e.stage && p.1 == e.action);
        let embed = |f: fn(&Split) -> Option<f64>| e.embedding.as_ref().map_or("-".into(), |s| num(f(s), 3));
        for (engaged, n) in [(false, e.not_engaged_count), (true, e.engaged_count)] {
            let name = format!("{}{}", if engaged { "" } else { "not " }, e.action.as_str());
            let i = usize::from(engaged);
            let pick = |s: &Split| if engaged { s.engaged } else { s.not_engaged };
            let delta = |v: String| if engaged { v } else { String::new() };
            rows.push(vec![
                stage_label(e.stage),
                name,
                n.to_string(),
                num(pick(&e.tfidf), 3),
                delta(signed(e.tfidf.delta)),
                if engaged { embed(|s| s.engaged) } else { embed(|s| s.not_engaged) },
                delta(e.embedding.as_ref().map_or("-".into(), |s| signed(s.delta))),
                paper.map_or("-".into(), |p| format!("{:.3}", p.2[i])),
                delta(paper.map_or("-".into(), |p| signed(Some(p.2[1] - p.2[0])))),
                paper.map_or("-".into(), |p| format!("{:.3}", p.3[i])),
                delta(paper.map_or("-".into(), |p| signed(Some(p.3[1] - p.3[0])))),
            ]);
        }
    }
    for o in &r.own_posts {
        let paper = PAPER_POSTS.iter().find(|p| p.0 == o.stage);
        rows.push(vec![
            stage_label(o.stage),
            "post".into(),
            o.posts.to_string(),
            num(o.tfidf, 3),
            String::new(),
            num(o.embedding, 3),
            String::new(),
            paper.map_or("-".into(), |p| format!("{:.3}", p.1)),
            String::new(),
            paper.map_or("-".into(), |p| format!("{:.3}", p.2)),
            String::new(),
        ]);
    }
    out.push(Table {
        title: "Persona similarity of engaged vs shown-only posts (the paper's Table 1; ours TF-IDF and embedder cosine, paper BERTScore and C.score)".into(),
        header: header("Stage|Action|n|TF-IDF|Δ|Embed|Δ|Paper BS|ΔBS|Paper C|ΔC"),
        rows,
        left: vec![0, 1],
        highlight: None,
    });
    out.push(Table {
        title: "Distinct-n ×100 (the paper's Table 1, Distinct columns)".into(),
        header: header("Stage|Kind|Texts|Distinct-1|Distinct-2|Paper D-1|Paper D-2"),
        left: vec![0, 1],
        highlight: None,
        rows: r
            .diversity
            .iter()
            .map(|d| {
                let paper = PAPER_DISTINCT.iter().find(|p| p.0 == d.stage && p.1 == d.kind);
                vec![
                    stage_label(d.stage),
                    d.kind.as_str().into(),
                    d.texts.to_string(),
                    num(d.distinct_1, 2),
                    num(d.distinct_2, 2),
                    paper.map_or("-".into(), |p| format!("{:.2}", p.2)),
                    paper.map_or("-".into(), |p| format!("{:.2}", p.3)),
                ]
            })
            .collect(),
    });
    if let Some(q) = &r.quality {
        out.push(Table {
            title: format!("Text quality, 1-3, judged by {} (the paper's Table 2, judged by gpt-4-1106-preview)", q.judge),
            header: header("Stage|Kind|Texts|Sampled|Rated|Failed|Info|Cons|Hum|Paper Info|Paper Cons|Paper Hum"),
            left: vec![0, 1],
            highlight: None,
            rows: q
                .groups
                .iter()
                .map(|g| {
                    let paper = PAPER_TABLE2.iter().find(|p| p.0 == g.stage && p.1 == g.kind).map(|p| p.2);
                    let p = |i: usize| paper.map_or("-".into(), |v| format!("{:.3}", v[i]));
                    vec![
                        stage_label(g.stage),
                        g.kind.as_str().into(),
                        g.available.to_string(),
                        g.sampled.to_string(),
                        g.rated.to_string(),
                        g.failures.len().to_string(),
                        num(g.informativeness, 3),
                        num(g.consistency, 3),
                        num(g.humanness, 3),
                        p(0),
                        p(1),
                        p(2),
                    ]
                })
                .collect(),
        });
    }
    out.extend(r.human.iter().flat_map(crate::evaluation::report_human::tables));
    out.extend(crate::evaluation::interviews::tables(&r.interviews));
    if !r.by_group.is_empty() {
        let kinds = [ActionKind::Like, ActionKind::Reblog, ActionKind::Comment, ActionKind::Post, ActionKind::Follow];
        out.push(Table {
            title: "By model group: what each group's agents did".into(),
            header: header("Group|Agents|Active agent-turns|Likes|Reblogs|Comments|Posts|Follows|Distinct-2 of posts"),
            left: vec![0],
            highlight: None,
            rows: r
                .by_group
                .iter()
                .map(|g| {
                    let mut row = vec![g.group.clone(), g.agents.to_string(), g.active.to_string()];
                    row.extend(kinds.iter().map(|k| g.applied.get(k).copied().unwrap_or(0).to_string()));
                    row.push(num(g.distinct_2, 2));
                    row
                })
                .collect(),
        });
    }
    out.push(Table {
        title: format!(
            "Followers (the paper's Figure 6); {} initial follows, {} made in the run",
            r.followers.initial_edges, r.followers.added_edges
        ),
        header: header("Followers|All agents|Regular agents"),
        left: vec![0],
        highlight: None,
        rows: r.followers.bins.iter().map(|b| vec![bin_label(b), b.all.to_string(), b.regular.to_string()]).collect(),
    });
    out.push(Table {
        title: "Most followed agents".into(),
        header: header("Agent|Username|Kind|Followers"),
        left: vec![1, 2],
        highlight: None,
        rows: r
            .followers
            .top
            .iter()
            .map(|f| vec![f.agent_id.to_string(), f.username.clone(), f.kind.as_str().into(), f.followers.to_string()])
            .collect(),
    });
    let kinds = ActionKind::ALL.map(ActionKind::as_str).join("|");
    out.push(Table {
        title: "Applied actions per stage".into(),
        header: header(&format!("Stage|{kinds}|failed|skipped")),
        left: vec![0],
        highlight: None,
        rows: r
            .actions
            .per_stage
            .iter()
            .map(|s| {
                std::iter::once(stage_label(s.stage))
                    .chain(s.applied.values().map(u64::to_string))
                    .chain([s.failed.to_string(), s.skipped.to_string()])
                    .collect()
            })
            .collect(),
    });
    out.push(Table {
        title: "Feeds and activity per stage".into(),
        header: header("Stage|Turns|Active agent-turns|Shown an empty feed|Turns with an empty feed|Interactions"),
        left: vec![0],
        highlight: None,
        rows: r
            .health
            .iter()
            .map(|h| {
                vec![
                    stage_label(h.stage),
                    h.turns.to_string(),
                    h.active.to_string(),
                    h.empty_feeds.to_string(),
                    h.turns_with_empty_feeds.to_string(),
                    h.interactions().to_string(),
                ]
            })
            .collect(),
    });
    out.push(Table {
        title: format!(
            "Most frequent causes of the {} actions the platform refused (failed) and the {} parts of steps skipped for an unusable reply (skipped)",
            r.actions.failed, r.actions.skipped
        ),
        header: header("Cause|Count"),
        left: vec![0],
        highlight: None,
        rows: r.actions.top_errors.iter().map(|e| vec![e.cause.clone(), e.count.to_string()]).collect(),
    });
    out.push(Table {
        title: "Most engaged posts".into(),
        header: header("Post|Author|Stage|Likes|Reblogs|Comments|Text"),
        left: vec![2, 6],
        highlight: None,
        rows: r
            .top_posts
            .iter()
            .map(|p| {
                vec![
                    p.post_id.to_string(),
                    p.author_id.to_string(),
                    stage_label(p.stage),
                    p.likes.to_string(),
                    p.reblogs.to_string(),
                    p.comments.to_string(),
                    p.excerpt.replace('\n', " "),
                ]
            })
            .collect(),
    });
    out
}

/// The run's facts in a few lines, for both renderers.
fn facts(r: &SimReport) -> Vec<String> {
    let f = &r.run;
    vec![
        format!(
            "agents: {} initial, {} regular ({} with an enrichment or planning error)",
            f.initial_agents, f.regular_agents, f.agents_with_errors
        ),
        format!(
            "turns committed: {} of {}; last turn {}, state digest {}",
            f.turns_committed,
            f.turns_planned,
            f.last_turn.map_or("-".into(), |t| t.to_string()),
            f.last_state_digest.as_deref().unwrap_or("-")
        ),
        format!("posts {}, comments {}, feed rows {}", f.posts, f.comments, f.feed_rows),
    ]
}

/// The report as plain-text tables.
pub fn render_text(r: &SimReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "Simulation report: run {}", r.run.run_id.as_deref().unwrap_or("-"));
    for line in facts(r) {
        let _ = writeln!(out, "{line}");
    }
    out.push_str("\nNotes:\n");
    for c in &r.caveats {
        let _ = writeln!(out, "- {c}");
    }
    for t in tables(r) {
        t.text(&mut out);
    }
    let failures: Vec<_> = r.quality.iter().flat_map(|q| &q.groups).flat_map(|g| g.failures.iter().map(move |f| (g, f))).collect();
    if !failures.is_empty() {
        out.push_str("\nTexts the judge gave no usable rating for\n");
    }
    for (g, f) in failures {
        let _ = writeln!(out, "{} {} (post {}): {}", stage_label(g.stage), g.kind.as_str(), f.post_id, f.cause);
    }
    out
}

/// A colour per action kind, in [`ActionKind::ALL`] order.
const COLOURS: [&str; 6] = ["#718096", "#e53e3e", "#38a169", "#d69e2e", "#3182ce", "#805ad5"];
/// Both charts' frame.
const FRAME: Chart = Chart::DEFAULT;
const WIDTH: f64 = FRAME.width;
const HEIGHT: f64 = FRAME.height;
const LEFT: f64 = FRAME.left;
const TOP: f64 = FRAME.top;
const BOTTOM: f64 = FRAME.bottom;

/// Agents per follower bin, all agents and regular agents side by side.
fn follower_chart(f: &Followers) -> String {
    let mut svg = FRAME.open("agents per number of followers");
    let max = f.bins.iter().map(|b| b.all.max(b.regular)).max().unwrap_or(0).max(1) as f64;
    FRAME.axes(&mut svg, max, "agents", "followers");
    let plot = HEIGHT - BOTTOM - TOP;
    let group = (WIDTH - LEFT) / f.bins.len().max(1) as f64;
    let bar = group * 0.35;
    for (i, b) in f.bins.iter().enumerate() {
        let x0 = LEFT + i as f64 * group + group * 0.15;
        for (j, (n, colour, who)) in [(b.all, "#3182ce", "all agents"), (b.regular, "#dd6b20", "regular agents")].into_iter().enumerate() {
            let h = plot * n as f64 / max;
            let _ = write!(
                svg,
                "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{bar:.1}\" height=\"{h:.1}\" fill=\"{colour}\"><title>{} followers, {who}: {n}</title></rect>",
                x0 + j as f64 * bar,
                TOP + plot - h,
                escape(&bin_label(b))
            );
        }
        let _ = write!(
            svg,
            "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"middle\">{}</text>",
            x0 + bar,
            HEIGHT - BOTTOM + 16.0,
            escape(&bin_label(b))
        );
    }
    svg.push_str("</svg>");
    svg.push_str(
        "<p class=\"legend\"><span style=\"color:#3182ce\">■</span> all agents <span style=\"color:#dd6b20\">■</span> regular agents</p>",
    );
    svg
}

/// Applied actions per turn, one line per kind, stage starts dashed.
fn actions_chart(a: &Actions) -> String {
    let mut svg = FRAME.open("applied actions per turn by kind");
    let max = a.per_turn.iter().flat_map(|t| t.applied.values().copied()).max().unwrap_or(0).max(1) as f64;
    FRAME.axes(&mut svg, max, "actions", "turn (simulated hour)");
    let plot = HEIGHT - BOTTOM - TOP;
    let last_turn = a.per_turn.last().map_or(0, |t| t.turn);
    let x = |turn: u32| LEFT + (WIDTH - LEFT - 8.0) * f64::from(turn) / f64::from(last_turn.max(1));
    for turn in [0, last_turn] {
        let _ = write!(
            svg,
            "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"middle\">{turn}</text>",
            x(turn),
            HEIGHT - BOTTOM + 14.0
        );
    }
    for pair in a.per_turn.windows(2) {
        if pair[0].stage != pair[1].stage {
            let at = x(pair[1].turn);
            let label = pair[1].stage.map_or("after the preset".into(), stage_label);
            let _ = write!(
                svg,
                "<line x1=\"{at:.1}\" y1=\"{TOP}\" x2=\"{at:.1}\" y2=\"{:.1}\" stroke=\"#a0aec0\" stroke-dasharray=\"4 3\"/>\
<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\">{}</text>",
                TOP + plot,
                at + 3.0,
                TOP + 10.0,
                escape(&label)
            );
        }
    }
    let mut legend = String::from("<p class=\"legend\">");
    for (kind, colour) in ActionKind::ALL.iter().zip(COLOURS) {
        let counts: Vec<(u32, u64)> = a.per_turn.iter().map(|t| (t.turn, t.applied.get(kind).copied().unwrap_or(0))).collect();
        if counts.iter().all(|(_, n)| *n == 0) {
            continue;
        }
        let points: Vec<String> = counts.iter().map(|(t, n)| format!("{:.1},{:.1}", x(*t), TOP + plot - plot * *n as f64 / max)).collect();
        let _ = write!(
            svg,
            "<polyline fill=\"none\" stroke=\"{colour}\" stroke-width=\"1.5\" points=\"{}\"><title>{}</title></polyline>",
            points.join(" "),
            kind.as_str()
        );
        let _ = write!(legend, "<span style=\"color:{colour}\">■</span> {} ", kind.as_str());
    }
    svg.push_str("</svg>");
    legend.push_str("</p>");
    svg + &legend
}

/// The report as one HTML page with no outside resources.
pub fn render_html(r: &SimReport) -> String {
    let run = escape(r.run.run_id.as_deref().unwrap_or("-"));
    let mut out = format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>simulation report {run}</title><style>{STYLE}</style></head><body><h1>Simulation report: run {run}</h1><ul>"
    );
    for line in facts(r) {
        let _ = write!(out, "<li>{}</li>", escape(&line));
    }
    out.push_str("</ul><h2>Notes</h2><ul>");
    for c in &r.caveats {
        let _ = write!(out, "<li>{}</li>", escape(c));
    }
    out.push_str("</ul><h2>Followers (the paper's Figure 6)</h2>");
    out.push_str(&follower_chart(&r.followers));
    out.push_str("<h2>Applied actions per turn</h2>");
    out.push_str(&actions_chart(&r.actions));
    for t in tables(r) {
        t.html(&mut out);
    }
    if let Some(q) = &r.quality {
        let failures: Vec<_> = q.groups.iter().flat_map(|g| g.failures.iter().map(move |f| (g, f))).collect();
        if !failures.is_empty() {
            out.push_str("<h2>Texts the judge gave no usable rating for</h2><table><tr><th class=\"w\">Stage</th><th>Post</th><th class=\"w\">Cause</th></tr>");
            for (g, f) in failures {
                let _ = write!(
                    out,
                    "<tr><td class=\"w\">{} {}</td><td>{}</td><td class=\"w\">{}</td></tr>",
                    escape(&stage_label(g.stage)),
                    g.kind.as_str(),
                    f.post_id,
                    escape(&f.cause)
                );
            }
            out.push_str("</table>");
        }
    }
    out.push_str("</body></html>\n");
    out
}
