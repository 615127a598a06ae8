//! The built-in embedders measured for what clustering needs of them, on
//! real Chinese text: the reference events of the 568 RED windows (each
//! event's headline and its summary, two wordings of one event). Each
//! window's texts are clustered as `topic_clustering` clusters a folder
//! (single pass, stored order shuffled with a fixed seed) at each θ, and
//! scored against the events:
//! - clusters per event (1.0 is one cluster per event);
//! - pairwise precision (texts put together are of one event), recall
//!   (the two wordings of an event end up together) and their F1.
//!
//! Also prints each embedder's texts/s on this machine. Choosing the
//! built-in embedder and its θ rests on this table (README, "Fidelity").
//!
//! `cargo bench --workspace --bench embedders`; `SOME_BENCH_WINDOWS` for
//! fewer windows.

use std::time::Instant;

use rand::SeedableRng;
use rand::seq::SliceRandom;
use some_jobs::embed::Purpose;
use some_jobs::kernels::{CpuKernels, Kernels, Matrix};
use some_jobs::progress::NoProgress;
use some_jobs::queries::read_bundled;
use some_schemas::Task;
use some_workers::embed::BuiltinEmbedder;
use some_workers::models::{E5_SMALL, MINILM, fetch};

/// One window's texts and the event each belongs to.
struct Window {
    texts: Vec<String>,
    events: Vec<usize>,
    count: usize,
}

fn windows(limit: usize) -> Vec<Window> {
    let queries = read_bundled().expect("the bundled queries");
    let mut rng = rand::rngs::StdRng::seed_from_u64(0);
    let mut out = Vec::new();
    for q in queries.iter().filter(|q| q.task == Task::Red).take(limit) {
        let events: Vec<serde_json::Value> = serde_json::from_str(q.reference.as_deref().unwrap_or("[]")).unwrap_or_default();
        let mut items: Vec<(String, usize)> = Vec::new();
        for (i, e) in events.iter().enumerate() {
            for key in ["标题", "摘要"] {
                if let Some(t) = e.get(key).and_then(|v| v.as_str()).filter(|t| !t.is_empty()) {
                    items.push((t.to_string(), i));
                }
            }
        }
        if events.len() < 2 {
            continue;
        }
        items.shuffle(&mut rng);
        let (texts, events_of) = items.into_iter().unzip();
        out.push(Window { texts, events: events_of, count: events.len() });
    }
    out
}

#[derive(Default)]
struct Score {
    clusters: f64,
    events: f64,
    together_right: u64,
    together: u64,
    same_event: u64,
}

fn score(windows: &[Window], vectors: &[Vec<Vec<f32>>], theta: f32) -> Score {
    let mut s = Score::default();
    for (w, vs) in windows.iter().zip(vectors) {
        let dim = vs[0].len();
        let flat: Vec<f32> = vs.iter().flatten().copied().collect();
        let ids = CpuKernels::new(1).single_pass_cluster(Matrix::F32 { data: &flat, dim }, theta);
        s.clusters += *ids.iter().max().unwrap_or(&0) as f64;
        s.events += w.count as f64;
        for i in 0..ids.len() {
            for j in i + 1..ids.len() {
                let same_cluster = ids[i] == ids[j];
                let same_event = w.events[i] == w.events[j];
                s.together += same_cluster as u64;
                s.together_right += (same_cluster && same_event) as u64;
                s.same_event += same_event as u64;
            }
        }
    }
    s
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let limit = std::env::var("SOME_BENCH_WINDOWS").ok().and_then(|v| v.parse().ok()).unwrap_or(usize::MAX);
    let windows = windows(limit);
    let texts: usize = windows.iter().map(|w| w.texts.len()).sum();
    let events: usize = windows.iter().map(|w| w.count).sum();
    println!("{} RED windows, {events} reference events, {texts} texts (headline and summary of each event)", windows.len());
    for spec in [&E5_SMALL, &MINILM] {
        fetch(spec, &NoProgress).await?;
        let embedder = BuiltinEmbedder::load(spec.name)?;
        let all: Vec<String> = windows.iter().flat_map(|w| w.texts.iter().cloned()).collect();
        let started = Instant::now();
        let mut flat = Vec::with_capacity(all.len());
        for chunk in all.chunks(256) {
            flat.extend(some_jobs::embed::Embedder::embed(&embedder, chunk, Purpose::Document).await?);
        }
        let seconds = started.elapsed().as_secs_f64();
        let mut it = flat.into_iter();
        let vectors: Vec<Vec<Vec<f32>>> = windows.iter().map(|w| it.by_ref().take(w.texts.len()).collect()).collect();
        println!("\n{}: {} texts in {seconds:.1} s, {:.0} texts/s", spec.name, all.len(), all.len() as f64 / seconds);
        println!("{:>5} {:>18} {:>10} {:>8} {:>6}", "θ", "clusters per event", "precision", "recall", "F1");
        // Coarse below 0.8, fine above: some models' cosines all lie high.
        let grid = (6..16).map(|s| s as f32 * 0.05).chain((80..100).map(|s| s as f32 * 0.01));
        let mut best = (0.0f64, 0.0f32);
        for theta in grid {
            let s = score(&windows, &vectors, theta);
            let precision = s.together_right as f64 / s.together.max(1) as f64;
            let recall = s.together_right as f64 / s.same_event.max(1) as f64;
            let f1 = 2.0 * precision * recall / (precision + recall).max(1e-9);
            println!("{theta:>5.2} {:>18.2} {precision:>10.3} {recall:>8.3} {f1:>6.3}", s.clusters / s.events);
            if f1 > best.0 {
                best = (f1, theta);
            }
        }
        println!("best F1 {:.3} at θ = {:.2}", best.0, best.1);
    }
    Ok(())
}
