//! `some annotate interactions|claims`: SoMe-style queries and their ground
//! truth made from social-media data, in the release's layout.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::bail;
use clap::Subcommand;
use some_annotate::claims::{self, Claim};
use some_annotate::interactions::{self, Index};
use some_annotate::sampling::{self, Annotated, check_rules};
use some_annotate::{DATASETS, KNOWLEDGE_PATH, ground_truth_path, write_json};
use some_jobs::queries::read_task_file;
use some_jobs::release::{Release, ReleaseFile};
use some_schemas::{RefPostRow, Task};
use some_workers::Lake;
use some_workers::world::read_queries;

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
        /// The folder to write `datasets/<task folder>/ground_truth.json` into.
        #[arg(long)]
        out: PathBuf,
        /// Overwrite ground-truth files that are there.
        #[arg(long)]
        replace: bool,
    },
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
        /// The folder to write into.
        #[arg(long)]
        out: PathBuf,
        /// Overwrite files that are there.
        #[arg(long)]
        replace: bool,
    },
}

impl Annotate {
    pub async fn run(self, lake: &Lake) -> anyhow::Result<ExitCode> {
        match self {
            Annotate::Interactions { interactions, posts, tasks, ubp_per_type, ucs, mcr, seed, out, replace } => {
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
            Annotate::Claims { liar_raw, rawfc, out, replace } => {
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
        let short = if drawn < wanted { format!(" (short by {}: too few users with an eligible pair)", wanted - drawn) } else { String::new() };
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
