//! Progress bars on standard error (hidden when it is not a terminal).

use indicatif::{ProgressBar, ProgressStyle};
use some_jobs::progress::Progress;
use std::sync::Mutex;

pub struct Bars {
    bar: Mutex<Option<ProgressBar>>,
}

impl Bars {
    pub fn new() -> Bars {
        Bars { bar: Mutex::new(None) }
    }
}

impl Progress for Bars {
    fn phase(&self, name: &str, total: Option<u64>) {
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
        if let Some(bar) = self.bar.lock().ok().as_ref().and_then(|slot| slot.as_ref()) {
            bar.inc(n);
        }
    }

    fn finish(&self) {
        if let Some(bar) = self.bar.lock().ok().and_then(|mut slot| slot.take()) {
            bar.finish_and_clear();
        }
    }
}
