//! Settings of the process itself that the `some` binary and the
//! throughput benchmarks share.

/// Turns transparent huge pages off for this process. mimalloc asks the
/// kernel for huge pages on its arenas where the machine allows them; then
/// every page it touches first is zeroed 2 MiB at a time and resident
/// memory holds whole huge pages that are mostly empty. On a simulated
/// week of 10,000 agents (the `sim_week` benchmark) that was 9% of the CPU
/// time, and turning them off made the week 7% faster at about half the peak
/// resident memory. Call it first thing in `main`: it applies to the pages
/// touched after it. Elsewhere than on Linux it does nothing.
pub fn without_huge_pages() {
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_THP_DISABLE takes plain integers and touches no memory of ours.
    let refused = unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) } != 0;
    #[cfg(not(target_os = "linux"))]
    let refused = false;
    if refused {
        // An old kernel lacks the call: the process runs as before.
        tracing::debug!(error = %std::io::Error::last_os_error(), "transparent huge pages stay on");
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    #[test]
    fn huge_pages_are_off_after_the_call() {
        super::without_huge_pages();
        // SAFETY: PR_GET_THP_DISABLE reads the flag and touches no memory of ours.
        assert_eq!(unsafe { libc::prctl(libc::PR_GET_THP_DISABLE, 0, 0, 0, 0) }, 1, "the process still takes huge pages");
    }
}
