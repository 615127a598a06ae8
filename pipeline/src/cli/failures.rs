//! What a command prints when parts of its work failed for good. The
//! waiting itself is `some_workers::executor::until_settled`.

/// Prints dead-lettered or failed work and what to do about it.
pub fn report_failures(failures: &[String], again: &str) -> std::process::ExitCode {
    if failures.is_empty() {
        return std::process::ExitCode::SUCCESS;
    }
    for reason in failures {
        eprintln!("failed: {reason}");
    }
    eprintln!("{again}");
    std::process::ExitCode::FAILURE
}
