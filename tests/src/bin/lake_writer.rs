//! A process that commits episodes to a run one transaction at a time, for
//! the test of concurrent writers: `lake_writer LAKE RUN FIRST COUNT`
//! commits episodes FIRST..FIRST+COUNT of run RUN, each on its own.

use some_jobs::testing::answered_episode;
use some_schemas::EpisodeRow;
use some_workers::{Lake, LakeLocation};

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, lake, run, first, count] = args.as_slice() else {
        eprintln!("usage: lake_writer LAKE RUN FIRST COUNT");
        std::process::exit(2);
    };
    let (first, count): (u32, u32) = (first.parse().expect("FIRST is a number"), count.parse().expect("COUNT is a number"));
    let location: LakeLocation = lake.parse().expect("a lake location");
    let lake = Lake::open(&location).await.unwrap_or_else(|e| panic!("open {location}: {e}"));
    for i in first..first + count {
        let mut txn = lake.txn();
        txn.write_rows(vec![episode(run, i)]).await.unwrap_or_else(|e| panic!("episode {i}: {e}"));
        txn.commit().await.unwrap_or_else(|e| panic!("commit of episode {i}: {e}"));
    }
}

fn episode(run: &str, i: u32) -> EpisodeRow {
    EpisodeRow { worker: format!("writer-{}", std::process::id()), ..answered_episode(run, &format!("q{i}"), &format!("e{i}")) }
}
