//! `some prompts export DIR`: the built-in prompt set as files, to edit and
//! give back with `--prompts DIR`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;

#[derive(Debug, Subcommand)]
pub enum PromptsCmd {
    /// Write the built-in task, extraction and judge prompts under DIR.
    Export { dir: PathBuf },
}

impl PromptsCmd {
    pub fn run(self) -> anyhow::Result<ExitCode> {
        match self {
            PromptsCmd::Export { dir } => {
                let n = some_jobs::prompts::export(&dir)?;
                println!("wrote {n} prompt files under {}; edit any, then run with --prompts {0}", dir.display());
            }
        }
        Ok(ExitCode::SUCCESS)
    }
}
