//! How many calls at once each endpoint took during a run, and how long
//! calls waited for room: read from the transcripts' per-call records, so
//! the figures cover every worker of the run, not one process.

use std::collections::BTreeMap;

use some_jobs::agent::Transcript;

/// One endpoint's figures.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EndpointCapacity {
    pub calls: usize,
    /// The largest window a call was answered under.
    pub peak_window: u32,
    /// The window of the median call (what it settled at).
    pub median_window: u32,
    /// Time calls waited for room, summed.
    pub waited_ms: u64,
}

/// Per endpoint, and calls answered with no place recorded (in-process
/// models, replies from a cache, runs from before it was recorded).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Capacity {
    windows: BTreeMap<String, Vec<u32>>,
    waited: BTreeMap<String, u64>,
    pub unplaced: usize,
}

impl Capacity {
    pub fn add(&mut self, transcript: &Transcript) {
        for call in transcript.calls.iter().filter(|c| c.error.is_none()) {
            match &call.place {
                Some(p) => {
                    self.windows.entry(p.endpoint.clone()).or_default().push(p.window);
                    *self.waited.entry(p.endpoint.clone()).or_default() += p.waited_ms;
                }
                None => self.unplaced += 1,
            }
        }
    }

    pub fn endpoints(&self) -> BTreeMap<&str, EndpointCapacity> {
        self.windows
            .iter()
            .map(|(endpoint, windows)| {
                let mut sorted = windows.clone();
                sorted.sort_unstable();
                let figures = EndpointCapacity {
                    calls: sorted.len(),
                    peak_window: sorted.last().copied().unwrap_or(0),
                    median_window: sorted.get(sorted.len() / 2).copied().unwrap_or(0),
                    waited_ms: self.waited.get(endpoint).copied().unwrap_or(0),
                };
                (endpoint.as_str(), figures)
            })
            .collect()
    }

    /// One line per endpoint, for the report.
    pub fn lines(&self) -> Vec<String> {
        self.endpoints()
            .into_iter()
            .map(|(endpoint, c)| {
                format!(
                    "{endpoint}: {} calls, calls at once up to {} (median {}), {:.1} s waited for room ({:.0} ms per call)",
                    c.calls,
                    c.peak_window,
                    c.median_window,
                    c.waited_ms as f64 / 1000.0,
                    c.waited_ms as f64 / c.calls.max(1) as f64
                )
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use some_jobs::agent::CallRecord;
    use some_jobs::chat::Place;

    use super::*;

    fn call(place: Option<(&str, u32, u64)>) -> CallRecord {
        CallRecord {
            index: 0,
            latency_ms: 1,
            usage: Default::default(),
            temperature: None,
            seed: None,
            model: "m".into(),
            finish_reason: None,
            call_formats: Vec::new(),
            malformed: Vec::new(),
            error: None,
            place: place.map(|(endpoint, window, waited_ms)| Place { endpoint: endpoint.into(), window, waited_ms }),
        }
    }

    #[test]
    fn windows_and_waits_sum_per_endpoint() {
        let mut c = Capacity::default();
        let calls = vec![call(Some(("a", 2, 10))), call(Some(("a", 8, 0))), call(Some(("a", 4, 30))), call(Some(("b", 1, 5))), call(None)];
        c.add(&Transcript { calls, ..Default::default() });
        let e = c.endpoints();
        assert_eq!(e["a"], EndpointCapacity { calls: 3, peak_window: 8, median_window: 4, waited_ms: 40 });
        assert_eq!((e["b"].calls, c.unplaced), (1, 1));
        assert_eq!(c.lines()[0], "a: 3 calls, calls at once up to 8 (median 4), 0.0 s waited for room (13 ms per call)");
    }
}
