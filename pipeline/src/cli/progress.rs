//! Progress on standard error: a bar on a terminal; where standard error is
//! a log (a pipe, a file, CI), lines, so a log never sits silent for long.

use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};
use some_jobs::progress::Progress;

/// The longest a log goes without a line while work advances.
const LOG_EVERY: Duration = Duration::from_secs(10);

pub struct Bars {
    bar: Mutex<Option<ProgressBar>>,
    /// Set where standard error is not a terminal.
    log: Option<Mutex<LogLines>>,
}

/// The phase a log is following.
struct LogLines {
    name: String,
    total: Option<u64>,
    done: u64,
    started: Instant,
    last_line: Instant,
}

impl LogLines {
    fn count(&self) -> String {
        match self.total {
            Some(total) => format!("{}/{total}", self.done),
            None => self.done.to_string(),
        }
    }

    /// The count, the time so far, and once something is done the rate and
    /// (with a total) the time left at that rate.
    fn print(&mut self, what: &str) {
        let secs = self.started.elapsed().as_secs_f64();
        let mut pace = String::new();
        if self.done > 0 && secs > 0.0 {
            let rate = self.done as f64 / secs;
            pace = format!(", {rate:.2}/s");
            if let Some(left) = self.total.map(|t| t.saturating_sub(self.done)).filter(|l| *l > 0) {
                pace.push_str(&format!(", eta {:.0} s", left as f64 / rate));
            }
        }
        eprintln!("{} {} ({secs:.0} s{pace}){what}", self.name, self.count());
        self.last_line = Instant::now();
    }
}

impl Bars {
    pub fn new() -> Bars {
        let log = (!std::io::stderr().is_terminal()).then(|| {
            let now = Instant::now();
            // A worker's jobs come with no phase: they count as "done".
            Mutex::new(LogLines { name: "done".into(), total: None, done: 0, started: now, last_line: now })
        });
        Bars { bar: Mutex::new(None), log }
    }

    fn log(&self, update: impl FnOnce(&mut LogLines)) {
        if let Some(mut lines) = self.log.as_ref().and_then(|l| l.lock().ok()) {
            update(&mut lines);
        }
    }
}

impl Progress for Bars {
    fn phase(&self, name: &str, total: Option<u64>) {
        self.log(|l| {
            let now = Instant::now();
            *l = LogLines { name: name.to_string(), total, done: 0, started: now, last_line: now };
            l.print(": started");
        });
        let bar = match total {
            Some(n) => ProgressBar::new(n).with_style(
                ProgressStyle::with_template("{msg:>12} [{bar:40}] {human_pos}/{human_len} {per_sec} eta {eta}")
                    .expect("static template")
                    .progress_chars("=> "),
            ),
            None => ProgressBar::new_spinner(),
        };
        bar.set_message(name.to_string());
        if let Some(old) = self.bar.lock().ok().and_then(|mut slot| slot.replace(bar)) {
            old.finish_and_clear();
        }
    }

    fn advance(&self, n: u64) {
        self.log(|l| {
            l.done += n;
            if l.last_line.elapsed() >= LOG_EVERY || Some(l.done) == l.total {
                l.print("");
            }
        });
        if let Some(bar) = self.bar.lock().ok().as_ref().and_then(|slot| slot.as_ref()) {
            bar.inc(n);
        }
    }

    fn item(&self, line: &str) {
        self.log(|l| {
            l.done += 1;
            l.print(&format!(": {line}"));
        });
        if let Some(bar) = self.bar.lock().ok().as_ref().and_then(|slot| slot.as_ref()) {
            bar.inc(1);
        }
    }

    fn finish(&self) {
        if let Some(bar) = self.bar.lock().ok().and_then(|mut slot| slot.take()) {
            bar.finish_and_clear();
        }
    }
}
