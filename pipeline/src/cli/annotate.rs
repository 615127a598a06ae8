//! `some annotate interactions|events|summaries|emotions|questions|claims|review`:
//! SoMe-style queries and their ground truth made from social-media data,
//! in the release's layout.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::bail;
use clap::{Args, Subcommand};
use some_annotate::claims::{self, Claim};
use some_annotate::interactions::{self, Index};
use some_annotate::review::{self, Item};
use some_annotate::sampling::{self, Annotated, check_rules};
use some_annotate::{DATASETS, KNOWLEDGE_PATH, ground_truth_path, write_json, write_whole};
use some_annotate::{emotions, events, questions, summaries};
use some_jobs::chat::ChatModel;
use some_jobs::embed::{DEFAULT_EMBEDDING_MODEL, cluster_threshold as cluster_threshold_of};
use some_jobs::queries::read_task_file;
use some_jobs::release::{Release, ReleaseFile};
use some_schemas::{JobKind, RefPostRow, Task, Timestamp};
use some_workers::Lake;
use some_workers::annotate::{self, EventsSpec};
use some_workers::executor::{Executor, Look, Outcome, Work};
use some_workers::llm::{ClientSettings, chat_model, installed_embedder};
use some_workers::queue::Queue;
use some_workers::world::read_queries;

use super::flags::{ModelFlags, RunFlags};
use super::progress::Bars;

#[derive(Debug, Subcommand)]
pub enum Annotate {
    /// UBP, UCS and MCR drawn from who interacted with what (no model): each
    /// positive a real interaction, each negative drawn by the paper's rule
    /// for its task; every written query is checked against its rule.
    Interactions {
        /// Interactions as JSONL, one `{"uid", "post_id", "kind", "text"}` per
        /// line (kind: like, comment, repost or other). Without it, the
        /// interactions the lake's queries record: what its world was made to show.
        #[arg(long)]
        interactions: Option<PathBuf>,
        /// The posts a query may show: a release's `post_data/all_posts.json`.
        /// Without it, the lake's `ref_posts`.
        #[arg(long)]
        posts: Option<PathBuf>,
        /// Which of ubp, ucs, mcr to make.
        #[arg(long, value_delimiter = ',', default_value = "ubp,ucs,mcr")]
        tasks: Vec<Task>,
        /// UBP positives per interaction type (each with a negative).
        #[arg(long, default_value_t = sampling::Counts::default().ubp_per_type)]
        ubp_per_type: usize,
        /// UCS positives (each with a negative).
        #[arg(long, default_value_t = sampling::Counts::default().ucs)]
        ucs: usize,
        /// MCR positives (each with a negative).
        #[arg(long, default_value_t = sampling::Counts::default().mcr)]
        mcr: usize,
        /// The same seed and data give the same queries.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        #[command(flatten)]
        output: Output,
    },
    /// RED: each day's posts of a location clustered with the tools'
    /// clustering, each cluster of at least --min-posts kept or dropped
    /// and summarised by the model, each event linked to the one-hour
    /// windows its posts fall in. Where the lake's RED queries cover those
    /// days (a synthetic world's), prints recall and precision against them.
    Events {
        /// The location, as the location streams name it.
        #[arg(long)]
        location: String,
        /// The days, YYYY-MM-DD, comma-separated.
        #[arg(long, value_delimiter = ',', required = true)]
        days: Vec<String>,
        #[command(flatten)]
        model: ModelFlags,
        /// The built-in embedder whose vectors are clustered.
        #[arg(long, default_value = DEFAULT_EMBEDDING_MODEL)]
        embedding_model: String,
        /// θ; the embedder's measured clustering threshold if not given.
        #[arg(long)]
        cluster_threshold: Option<f32>,
        /// Smaller clusters are not shown to the model.
        #[arg(long, default_value_t = events::Settings::default().min_posts)]
        min_posts: usize,
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Where the location-days run (one job each), the model calls, the kernels.
        #[command(flatten)]
        run: RunFlags,
        #[command(flatten)]
        output: Output,
    },
    /// UEA: each comment's emotion by --rounds votes of the model and a
    /// majority (a comment without one is a tie, kept out of the queries);
    /// then the largest classes thinned as the paper did (--cap). Without
    /// --comments, a sample of the world's emotional timeline posts, whose
    /// emotions are known, and the agreement with them is printed.
    Emotions {
        /// Comments as JSONL interactions (its `comment` lines are labelled).
        #[arg(long)]
        comments: Option<PathBuf>,
        /// Without --comments: posts sampled from the world per emotion.
        #[arg(long, default_value_t = 10)]
        per_emotion: usize,
        #[command(flatten)]
        model: ModelFlags,
        /// Votes per comment.
        #[arg(long, default_value_t = 3)]
        rounds: usize,
        /// Sampling temperature of the votes (each round has its own seed).
        #[arg(long, default_value_t = 0.7)]
        temperature: f32,
        /// At most N comments of a label, LABEL=N, comma-separated.
        #[arg(long, value_delimiter = ',', default_value = "积极=800,无情绪=800")]
        cap: Vec<String>,
        #[arg(long, default_value_t = 0)]
        seed: u64,
        #[command(flatten)]
        output: Output,
    },
    /// SMQ: the model writes questions about sampled users' and topics'
    /// posts; those it calls vague (shown the posts) or answers alike with
    /// no posts are dropped, user and topic questions balanced; a judge
    /// (the same model) then checks each kept answer against the posts.
    Questions {
        /// Users sampled (among those with at least 5 timeline posts).
        #[arg(long, default_value_t = 4)]
        users: usize,
        /// Topics sampled.
        #[arg(long, default_value_t = 4)]
        topics: usize,
        /// Questions asked per subject.
        #[arg(long, default_value_t = 2)]
        per_subject: usize,
        /// At most N user and N topic questions (as many of each either way).
        #[arg(long)]
        per_kind: Option<usize>,
        #[command(flatten)]
        model: ModelFlags,
        #[arg(long, default_value_t = 0)]
        seed: u64,
        #[command(flatten)]
        output: Output,
    },
    /// SES: a summary of each sampled topic from its posts, refined over
    /// rounds (the model checks the draft against the posts, naming what
    /// is inaccurate and missing; the next draft fixes it); every round is
    /// recorded beside the ground truth (rounds.jsonl). Where the lake's
    /// SES queries cover a topic, the drafts are compared with their summary.
    Summaries {
        /// Topics sampled (among those with at least 5 posts).
        #[arg(long, default_value_t = 3)]
        topics: usize,
        /// Check rounds at most.
        #[arg(long, default_value_t = 3)]
        rounds: usize,
        #[command(flatten)]
        model: ModelFlags,
        #[arg(long, default_value_t = 0)]
        seed: u64,
        #[command(flatten)]
        output: Output,
    },
    /// Human review of the model-made annotations (RED, UEA) under OUT.
    #[command(subcommand)]
    Review(ReviewCmd),
    /// MID from LIAR-RAW and RAWFC: the claims as queries (with LIAR-RAW's
    /// six verdicts mapped to true, half, false) and their reports as the
    /// knowledge base (`database/knowledge_data/knowledge_base.json`, for
    /// `some ingest release`).
    Claims {
        /// A LIAR-RAW split file (a JSON list of claims); repeatable.
        #[arg(long)]
        liar_raw: Vec<PathBuf>,
        /// A RAWFC split folder (one JSON file per claim); repeatable.
        #[arg(long)]
        rawfc: Vec<PathBuf>,
        #[command(flatten)]
        output: Output,
    },
}

/// Where an annotation is written: `OUT/datasets/<task folder>/` (the
/// ground truth and, beside it, the annotation's own records) and
/// `OUT/database/` for world data.
#[derive(Debug, Args)]
pub struct Output {
    /// The output folder.
    #[arg(long)]
    out: PathBuf,
    /// Overwrite files that are there.
    #[arg(long)]
    replace: bool,
}

#[derive(Debug, Subcommand)]
pub enum ReviewCmd {
    /// Writes OUT/review/<task>.jsonl and .csv for annotators: each
    /// annotation's editable fields, keep (yes or no), the source posts it
    /// came from and its provenance.
    Export {
        out: PathBuf,
        /// red or uea.
        #[arg(long)]
        task: Task,
    },
    /// Applies an annotator's corrected file (.jsonl or .csv): checked
    /// whole first, then each change recorded in OUT/review/changes.jsonl
    /// (who, when, old and new value) and the ground truth made again.
    Import {
        out: PathBuf,
        file: PathBuf,
        /// red or uea.
        #[arg(long)]
        task: Task,
        /// Who reviewed, as recorded with each change.
        #[arg(long)]
        annotator: String,
    },
}

impl Annotate {
    pub async fn run(self, lake: &Lake) -> anyhow::Result<ExitCode> {
        match self {
            Annotate::Interactions { interactions, posts, tasks, ubp_per_type, ucs, mcr, seed, output: Output { out, replace } } => {
                if let Some(task) = tasks.iter().find(|t| ![Task::Ubp, Task::Ucs, Task::Mcr].contains(t)) {
                    bail!("{task} is not drawn from interactions: --tasks takes ubp, ucs and mcr");
                }
                let index = index(lake, interactions.as_deref(), posts.as_deref()).await?;
                if index.dropped > 0 {
                    eprintln!("left out {} interactions with posts no query could show (not among the posts)", index.dropped);
                }
                let mut breaches = 0;
                for task in tasks {
                    let annotated = match task {
                        Task::Ubp => sampling::ubp(&index, ubp_per_type, seed),
                        Task::Ucs => sampling::ucs(&index, ucs, seed),
                        _ => sampling::mcr(&index, mcr, seed),
                    };
                    breaches += write_and_check(&index, &annotated, &out, replace)?;
                }
                if breaches > 0 {
                    bail!("{breaches} written queries break their rule (listed above)");
                }
                println!("import them with `some ingest queries {}`", out.join(DATASETS).display());
            }
            Annotate::Events {
                location,
                days,
                model,
                embedding_model,
                cluster_threshold,
                min_posts,
                seed,
                run,
                output: Output { out, replace },
            } => {
                for (i, day) in days.iter().enumerate() {
                    if day.len() != 10 || Timestamp::parse(&format!("{day} 00:00:00")).is_none() {
                        bail!("--days: {day:?} is not a YYYY-MM-DD date");
                    }
                    if days[..i].contains(day) {
                        bail!("--days: {day} is given twice");
                    }
                }
                some_workers::llm::check_chat_model(&model.model, &model.endpoints)?;
                let spec = EventsSpec {
                    location,
                    days,
                    theta: cluster_threshold.unwrap_or_else(|| cluster_threshold_of(&embedding_model)),
                    model: model.model,
                    endpoints: model.endpoints,
                    embedding_model,
                    min_posts,
                    seed,
                };
                let executor = run.executor(lake, Arc::new(Bars::new())).await?;
                if executor.broker().is_none() && installed_embedder(&spec.embedding_model)?.is_none() {
                    bail!("{0} is not installed: run `some models fetch {0}`", spec.embedding_model);
                }
                return annotate_events(lake, &executor, &spec, &out, replace).await;
            }
            Annotate::Emotions { comments, per_emotion, model, rounds, temperature, cap, seed, output: Output { out, replace } } => {
                let caps = caps(&cap)?;
                if rounds == 0 {
                    bail!("--rounds must be at least 1");
                }
                let comments = match &comments {
                    Some(file) => interactions::read_jsonl(file)?
                        .into_iter()
                        .filter_map(|i| {
                            let text = i.text.filter(|_| i.kind == interactions::Kind::Comment)?;
                            Some(emotions::Comment { uid: i.uid, post_id: i.post_id, text, truth: None })
                        })
                        .collect(),
                    None => emotions::world_comments(&annotate::timeline_posts(lake).await?, per_emotion, seed),
                };
                if comments.is_empty() {
                    bail!("no comments to label (a --comments file needs `comment` lines; a world needs timelines: `some synth`)");
                }
                let chat = chat(&model)?;
                let started = std::time::Instant::now();
                let mut usage = some_jobs::chat::Usage::default();
                let labelled = emotions::label(chat.as_ref(), comments, rounds, temperature, seed, &mut usage).await?;
                let ties = labelled.iter().filter(|l| l.label.is_none()).count();
                println!(
                    "UEA: {} comments labelled by {} with {rounds} votes each: {} with a majority, {ties} ties ({} + {} tokens, {:.0} s)",
                    labelled.len(),
                    chat.name(),
                    labelled.len() - ties,
                    usage.prompt_tokens,
                    usage.completion_tokens,
                    started.elapsed().as_secs_f64()
                );
                print_agreement(&labelled);
                let kept = emotions::rebalance(labelled, &caps, seed);
                let per_label: Vec<String> = some_jobs::tasks::EMOTIONS
                    .iter()
                    .map(|e| format!("{e} {}", kept.iter().filter(|l| l.label == Some(*e)).count()))
                    .collect();
                if kept.iter().all(|l| l.label.is_none()) {
                    bail!("no comment got a majority, so no UEA query can be made (nothing written)");
                }
                let items = emotions::items(&kept, chat.name(), temperature, seed);
                let (path, _) = write_annotations(&out, Task::Uea, &items, replace)?;
                let rows = read_task_file(Task::Uea, &path)?;
                println!("UEA: {} queries ({}) → {}", rows.len(), per_label.join(", "), path.display());
                println!("import them with `some ingest queries {}`", out.join(DATASETS).display());
            }
            Annotate::Questions { users, topics, per_subject, per_kind, model, seed, output: Output { out, replace } } => {
                let sources = annotate::subjects(lake, users, topics, seed).await?;
                if sources.is_empty() {
                    bail!("the lake has no timelines or topics to ask about: make a world with `some synth` or ingest a release");
                }
                let chat = chat(&model)?;
                let settings = questions::Settings { per_subject, seed, ..questions::Settings::default() };
                let started = std::time::Instant::now();
                let mut usage = some_jobs::chat::Usage::default();
                let (mut pairs, unusable) = questions::generate(chat.as_ref(), &sources, settings, &Bars::new(), &mut usage).await?;
                let count =
                    |pairs: &[questions::Pair], f: &dyn Fn(&questions::Verdict) -> bool| pairs.iter().filter(|p| f(&p.verdict)).count();
                let (vague, blind) = (
                    count(&pairs, &|v| *v == questions::Verdict::Vague),
                    count(&pairs, &|v| matches!(v, questions::Verdict::NeedsNoData(_))),
                );
                questions::balance(&mut pairs, &sources, per_kind, seed);
                let kept = count(&pairs, &|v| *v == questions::Verdict::Kept);
                println!(
                    "SMQ: {} subjects ({} users, {} topics) asked by {}: {} questions, {vague} vague, {blind} answered alike without the posts, {} dropped to balance, {kept} kept; {} unreadable replies, {} pairs that were no question ({} + {} tokens, {:.0} s)",
                    sources.len(),
                    sources.iter().filter(|s| s.subject.is_user()).count(),
                    sources.iter().filter(|s| !s.subject.is_user()).count(),
                    chat.name(),
                    pairs.len(),
                    count(&pairs, &|v| *v == questions::Verdict::Unbalanced),
                    unusable.unreadable,
                    unusable.malformed,
                    usage.prompt_tokens,
                    usage.completion_tokens,
                    started.elapsed().as_secs_f64()
                );
                for example in &unusable.examples {
                    eprintln!("  unusable: {example}");
                }
                let supported = questions::check_supported(chat.as_ref(), &pairs, &sources, settings, &mut usage).await?;
                let per: Vec<String> = questions::supported_by_verdict(&pairs, &supported)
                    .into_iter()
                    .map(|(verdict, yes, of)| format!("{verdict} {yes} of {of}"))
                    .collect();
                println!("answers the subjects' posts support, by {}: {}", chat.name(), per.join(", "));
                if kept == 0 {
                    bail!("no question survived the filters and the balance, so no SMQ query can be made (nothing written)");
                }
                let path = write_json(&out, &ground_truth_path(Task::Smq), &questions::ground_truth(&pairs), replace)?;
                let rows = read_task_file(Task::Smq, &path)?;
                println!("SMQ: {} queries → {}", rows.len(), path.display());
                println!("import them with `some ingest queries {}`", out.join(DATASETS).display());
            }
            Annotate::Summaries { topics, rounds, model, seed, output: Output { out, replace } } => {
                let reference: BTreeMap<String, String> = read_queries(lake)
                    .await?
                    .into_iter()
                    .filter(|q| q.task == Task::Ses)
                    .filter_map(|q| Some((q.topic?, q.reference?)))
                    .collect();
                // Every topic in a random order, those with a known summary first.
                let mut all: Vec<summaries::Topic> = annotate::subjects(lake, 0, usize::MAX, seed)
                    .await?
                    .into_iter()
                    .filter_map(|s| match s.subject {
                        questions::Subject::Topic(name) => Some(summaries::Topic { name, posts: s.posts }),
                        questions::Subject::User(_) => None,
                    })
                    .collect();
                all.sort_by_key(|t| !reference.contains_key(&t.name));
                let topics: Vec<summaries::Topic> = all.into_iter().take(topics).collect();
                if topics.is_empty() {
                    bail!("the lake has no topics with posts to summarise: make a world with `some synth` or ingest a release");
                }
                let chat = chat(&model)?;
                let settings = summaries::Settings { rounds, seed, ..summaries::Settings::default() };
                let started = std::time::Instant::now();
                let mut usage = some_jobs::chat::Usage::default();
                let made = summaries::summarise(chat.as_ref(), &topics, settings, &Bars::new(), &mut usage).await?;
                for s in &made {
                    let checks: Vec<String> = s
                        .rounds
                        .iter()
                        .map(|r| match (&r.inaccuracies, &r.missing, &r.stopped) {
                            (Some(i), Some(m), None) => format!("{} inaccurate, {} missing", i.len(), m.len()),
                            (Some(i), Some(m), Some(why)) => format!("{} inaccurate, {} missing; stopped: {why}", i.len(), m.len()),
                            _ => "unreadable".to_string(),
                        })
                        .collect();
                    let compared = reference.get(&s.topic).map_or(String::new(), |r| {
                        let first = s.rounds.first().map_or(s.summary.as_str(), |f| f.draft.as_str());
                        format!(
                            "; similarity to the world's summary: first draft {:.2}, final {:.2}",
                            events::similarity(first, r),
                            events::similarity(&s.summary, r)
                        )
                    });
                    println!("SES {}: {} check rounds ({}){compared}", s.topic, s.rounds.len(), checks.join("; "));
                }
                println!(
                    "SES: {} topics summarised by {} ({} + {} tokens, {:.0} s)",
                    made.len(),
                    chat.name(),
                    usage.prompt_tokens,
                    usage.completion_tokens,
                    started.elapsed().as_secs_f64()
                );
                let path = write_json(&out, &ground_truth_path(Task::Ses), &summaries::ground_truth(&made), replace)?;
                let rounds_path = path.with_file_name("rounds.jsonl");
                let lines: String = made.iter().map(|s| format!("{}\n", serde_json::to_string(s).expect("summaries serialise"))).collect();
                write_whole(&rounds_path, lines.as_bytes())?;
                let rows = read_task_file(Task::Ses, &path)?;
                println!("SES: {} queries → {} (rounds in {})", rows.len(), path.display(), rounds_path.display());
                println!("import them with `some ingest queries {}`", out.join(DATASETS).display());
            }
            Annotate::Review(cmd) => review(cmd)?,
            Annotate::Claims { liar_raw, rawfc, output: Output { out, replace } } => {
                if liar_raw.is_empty() && rawfc.is_empty() {
                    bail!("name at least one source: --liar-raw FILE or --rawfc DIR");
                }
                let mut read: Vec<Claim> = Vec::new();
                for file in &liar_raw {
                    read.extend(claims::read_liar_raw(file)?);
                }
                for dir in &rawfc {
                    read.extend(claims::read_rawfc(dir)?);
                }
                let imported = claims::merge(read)?;
                let queries = write_json(&out, &ground_truth_path(Task::Mid), &imported.ground_truth, replace)?;
                let knowledge = write_json(&out, KNOWLEDGE_PATH, &claims::knowledge_json(&imported.knowledge), replace)?;
                let labels: Vec<String> = imported.per_label.iter().map(|(l, n)| format!("{l} {n}")).collect();
                println!("MID: {} claims ({}) → {}", imported.per_label.values().sum::<usize>(), labels.join(", "), queries.display());
                println!("knowledge base: {} reports → {}", imported.knowledge.len(), knowledge.display());
                println!(
                    "import them with `some ingest queries {}` and `some ingest release {}`, then `some embed knowledge`",
                    out.join(DATASETS).display(),
                    out.display()
                );
            }
        }
        Ok(ExitCode::SUCCESS)
    }
}

/// The interactions and the posts a query may show, from files or the lake.
async fn index(lake: &Lake, interactions: Option<&Path>, posts: Option<&Path>) -> anyhow::Result<Index> {
    let interactions = match interactions {
        Some(file) => interactions::read_jsonl(file)?,
        None => {
            let queries = read_queries(lake).await?;
            if queries.is_empty() {
                bail!("the lake has no queries to take interactions from: pass --interactions FILE, or run `some ingest queries`");
            }
            interactions::from_queries(&queries)
        }
    };
    let posts: Vec<RefPostRow> = match posts {
        Some(file) => Release::read(&ReleaseFile::AllPosts { path: file.to_path_buf() })?.ref_posts,
        None => {
            let ctx = lake.session().await?;
            lake.read::<RefPostRow>(&ctx, None).await?
        }
    };
    if posts.is_empty() {
        bail!("no posts for the queries to show: pass --posts all_posts.json, or make a world with `some synth`");
    }
    Ok(Index::new(&interactions, interactions::catalog(&posts)))
}

/// Writes one task's ground truth, reads it back as `some ingest queries`
/// will, checks every query against its rule; returns the breaches.
fn write_and_check(index: &Index, annotated: &Annotated, out: &Path, replace: bool) -> anyhow::Result<usize> {
    let task = annotated.task;
    for (part, drawn, wanted) in &annotated.drawn {
        let short =
            if drawn < wanted { format!(" (short by {}: too few users with an eligible pair)", wanted - drawn) } else { String::new() };
        println!("{task} {part}: {drawn} of {wanted} positives, each with a negative{short}");
    }
    if annotated.positives() == 0 {
        bail!("{task}: no query could be made from these interactions");
    }
    let path = write_json(out, &ground_truth_path(task), &annotated.ground_truth, replace)?;
    let rows = read_task_file(task, &path)?;
    let breaches = check_rules(index, &rows);
    for b in breaches.iter().take(10) {
        eprintln!("{task}: {b}");
    }
    println!("{task}: {} queries → {}; rules checked on every one: {} breaches", rows.len(), path.display(), breaches.len());
    Ok(breaches.len())
}

/// RED for each day of the spec, one job a day (here or on a broker's
/// workers); then the ground truth written and, where the lake's RED
/// queries cover the days, the truth's figures.
async fn annotate_events(lake: &Lake, executor: &Executor, spec: &EventsSpec, out: &Path, replace: bool) -> anyhow::Result<ExitCode> {
    let id = spec.id();
    let started = std::time::Instant::now();
    let work = Work { kind: JobKind::Annotate, phase: "location-days annotated", units: spec.days.len() };
    let publish = |queue: Arc<dyn Queue>| async move { annotate::publish(lake, queue.as_ref(), spec).await };
    let look = || async {
        let done = annotate::days_done(lake, spec).await?;
        Ok(Look { done, settled: done == spec.days.len(), failures: Vec::new() })
    };
    eprintln!("annotation {id}: {} {}", spec.location, spec.days.join(", "));
    if let Outcome::Settled(failures) = executor.submit(work, publish, Some(look)).await?
        && !failures.is_empty()
    {
        for f in &failures {
            eprintln!("failed: {f}");
        }
        bail!("annotation {id}: {} location-days failed; fix the cause and run the same command again to go on", failures.len());
    }
    let annotated = annotate::collect(lake, spec).await?;
    annotate::commit(lake, spec).await?;
    for found in &annotated {
        println!(
            "{} {}: {} posts, {} clusters, {} shown to {}: {} events, {} not events, {} unreadable replies ({} + {} tokens)",
            found.location,
            found.day,
            found.posts,
            found.clusters,
            found.shown,
            spec.model,
            found.events.len(),
            found.not_events,
            found.unreadable.len(),
            found.usage.prompt_tokens,
            found.usage.completion_tokens,
        );
        for reply in found.unreadable.iter().take(3) {
            eprintln!("  unreadable reply: {reply}");
        }
    }
    let items = events::items(&annotated, &spec.model, spec.settings());
    if items.is_empty() {
        bail!("no event was found, so no RED query can be made (nothing written)");
    }
    let (path, ground_truth) = write_annotations(out, Task::Red, &items, replace)?;
    let rows = read_task_file(Task::Red, &path)?;
    println!("RED: {} queries (one-hour windows with events) → {} ({:.0} s)", rows.len(), path.display(), started.elapsed().as_secs_f64());

    let truth = events::truth(&read_queries(lake).await?, &spec.location);
    let in_scope = |key: &str| spec.days.iter().any(|d| key.starts_with(d.as_str()));
    if truth.keys().any(|k| in_scope(k)) {
        let m = events::measure(&ground_truth, &truth, &in_scope);
        println!(
            "against the lake's RED queries of those days: recall {:.1}% ({} of {} window events), precision {:.1}% ({} of {} annotated window events match one), match = character-pair similarity ≥ {}",
            100.0 * m.recall(),
            m.recalled,
            m.truth,
            100.0 * m.precision(),
            m.correct,
            m.annotated,
            events::MATCH_SIMILARITY
        );
    }
    println!("import them with `some ingest queries {}`", out.join(DATASETS).display());
    Ok(ExitCode::SUCCESS)
}

/// `LABEL=N` caps, each label one of UEA's.
fn caps(given: &[String]) -> anyhow::Result<Vec<(&'static str, usize)>> {
    given
        .iter()
        .map(|c| {
            let (label, n) = c.split_once('=').ok_or_else(|| anyhow::anyhow!("--cap {c:?}: expected LABEL=N"))?;
            let label = some_jobs::tasks::EMOTIONS
                .iter()
                .copied()
                .find(|e| *e == label.trim())
                .ok_or_else(|| anyhow::anyhow!("--cap {c:?}: {label:?} is not one of {:?}", some_jobs::tasks::EMOTIONS))?;
            Ok((label, n.trim().parse().map_err(|_| anyhow::anyhow!("--cap {c:?}: {n:?} is not a count"))?))
        })
        .collect()
}

/// Agreement with the known emotions, overall and per true emotion.
fn print_agreement(labelled: &[emotions::Labelled]) {
    let (decided, agree, ties) = emotions::agreement(labelled);
    if decided + ties == 0 {
        return;
    }
    let per: Vec<String> = some_jobs::tasks::EMOTIONS
        .iter()
        .filter_map(|e| {
            let of: Vec<_> = labelled.iter().filter(|l| l.comment.truth == Some(*e)).collect();
            let right = of.iter().filter(|l| l.label == Some(*e)).count();
            (!of.is_empty()).then(|| format!("{e} {right}/{}", of.len()))
        })
        .collect();
    println!(
        "against the world's emotions: {agree} of {decided} majorities agree ({:.1}%), {ties} ties; per true emotion: {}",
        if decided == 0 { 0.0 } else { 100.0 * agree as f64 / decided as f64 },
        per.join(", ")
    );
}

/// The model of `--model` (and `--endpoint`), on all cores if built in.
fn chat(model: &ModelFlags) -> anyhow::Result<Arc<dyn ChatModel>> {
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    Ok(chat_model(&model.model, &model.endpoints, &ClientSettings::default(), threads)?)
}

/// The items of a task beside its ground truth under `out`.
fn items_path(out: &Path, task: Task) -> PathBuf {
    out.join(DATASETS).join(task.folder()).join(review::ITEMS_FILE)
}

/// Writes a model-made annotation: its items and the ground truth they make.
fn write_annotations(out: &Path, task: Task, items: &[Item], replace: bool) -> anyhow::Result<(PathBuf, serde_json::Value)> {
    let ground_truth = review::ground_truth(task, items);
    let path = write_json(out, &ground_truth_path(task), &ground_truth, replace)?;
    write_whole(&items_path(out, task), review::items_jsonl(items).as_bytes())?;
    Ok((path, ground_truth))
}

fn review(cmd: ReviewCmd) -> anyhow::Result<()> {
    let task = match &cmd {
        ReviewCmd::Export { task, .. } | ReviewCmd::Import { task, .. } => *task,
    };
    if review::editable(task).is_empty() {
        bail!("{task} is not annotated by a model: review takes red or uea");
    }
    match cmd {
        ReviewCmd::Export { out, task } => {
            let items = review::read_items(&items_path(&out, task))?;
            let folder = out.join("review");
            std::fs::create_dir_all(&folder)?;
            let name = task.code().to_ascii_lowercase();
            let (jsonl, csv) = (folder.join(format!("{name}.jsonl")), folder.join(format!("{name}.csv")));
            write_whole(&jsonl, review::export_jsonl(task, &items).as_bytes())?;
            write_whole(&csv, &review::export_csv(task, &items))?;
            println!("{} {task} annotations for review → {} and {}", items.len(), jsonl.display(), csv.display());
        }
        ReviewCmd::Import { out, file, task, annotator } => {
            let path = items_path(&out, task);
            let mut items = review::read_items(&path)?;
            let reviewed = review::read_review(task, &file, &items)?;
            let changes = review::apply(&mut items, &reviewed, &annotator);
            let at = Timestamp::now().to_string();
            let log: String = changes
                .iter()
                .map(|c| {
                    let line =
                        serde_json::json!({"at": at, "annotator": annotator, "item": c.item, "field": c.field, "old": c.old, "new": c.new});
                    format!("{line}\n")
                })
                .collect();
            let changes_path = out.join("review").join("changes.jsonl");
            std::fs::create_dir_all(out.join("review"))?;
            let mut all = std::fs::read_to_string(&changes_path).unwrap_or_default();
            all.push_str(&log);
            write_whole(&changes_path, all.as_bytes())?;
            let (gt, _) = write_annotations(&out, task, &items, true)?;
            let kept = items.iter().filter(|i| i.keep).count();
            println!(
                "{} lines reviewed by {annotator}: {} changes recorded in {}; {kept} of {} annotations kept → {}",
                reviewed.len(),
                changes.len(),
                changes_path.display(),
                items.len(),
                gt.display()
            );
        }
    }
    Ok(())
}
