//! Progress of a long run on stderr: a bar with an ETA on a terminal;
//! elsewhere (a log file, a pipe, CI) a plain line every few seconds and
//! one when the last unit finishes, so a log is readable and not a flood.

use std::io::IsTerminal;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Seconds between two plain progress lines.
pub const PLAIN_EVERY: Duration = Duration::from_secs(5);

/// Progress on stderr. Cloning gives another handle on the same progress
/// (for worker threads).
#[derive(Clone)]
pub struct Progress(Draw);

#[derive(Clone)]
enum Draw {
    /// Quiet: nothing.
    Hidden,
    /// A terminal: indicatif's bar.
    Bar(ProgressBar),
    /// Not a terminal: plain lines.
    Lines(Arc<Lines>),
}

struct Lines {
    total: u64,
    unit: String,
    start: Instant,
    state: Mutex<LineState>,
}

struct LineState {
    done: u64,
    step: String,
    last: Instant,
    finished: bool,
}

impl Progress {
    /// Progress of `total` repetitions; nothing when `quiet`.
    pub fn new(total: u64, quiet: bool) -> Self {
        Self::counting(total, quiet, "reps")
    }

    /// Progress of `total` things called `unit` (`simulations`); nothing
    /// when `quiet`.
    pub fn counting(total: u64, quiet: bool, unit: &str) -> Self {
        if quiet {
            Progress(Draw::Hidden)
        } else if std::io::stderr().is_terminal() {
            Self::bar(total, unit)
        } else {
            Self::lines(total, unit)
        }
    }

    fn bar(total: u64, unit: &str) -> Self {
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template(&format!(
                "{{elapsed:>4}} [{{bar:30}}] {{pos}}/{{len}} {unit}, ETA {{eta}}  {{msg}}"
            ))
            .expect("the template is valid (units have no braces)")
            .progress_chars("=> "),
        );
        Progress(Draw::Bar(bar))
    }

    /// Plain lines whatever stderr is (what a pipe or a file gets).
    pub fn lines(total: u64, unit: &str) -> Self {
        let now = Instant::now();
        Progress(Draw::Lines(Arc::new(Lines {
            total,
            unit: unit.to_string(),
            start: now,
            state: Mutex::new(LineState {
                done: 0,
                step: String::new(),
                last: now,
                finished: false,
            }),
        })))
    }

    pub(crate) fn step(&self, msg: String) {
        match &self.0 {
            Draw::Hidden => {}
            Draw::Bar(b) => b.set_message(msg),
            Draw::Lines(l) => l.state.lock().unwrap_or_else(|p| p.into_inner()).step = msg,
        }
    }

    pub(crate) fn done_one(&self) {
        match &self.0 {
            Draw::Hidden => {}
            Draw::Bar(b) => b.inc(1),
            Draw::Lines(l) => {
                let line = {
                    let mut s = l.state.lock().unwrap_or_else(|p| p.into_inner());
                    s.done += 1;
                    let now = Instant::now();
                    let last = s.done >= l.total;
                    if s.finished || !(last || now.duration_since(s.last) >= PLAIN_EVERY) {
                        return;
                    }
                    s.last = now;
                    s.finished = last;
                    l.line(&s, now)
                };
                crate::core::out::note(&line);
            }
        }
    }

    /// Removes the bar (plain lines stay: they are a log).
    pub fn finish(&self) {
        if let Draw::Bar(b) = &self.0 {
            b.finish_and_clear();
        }
    }
}

impl Lines {
    /// `progress: 12/48 reps (25 %), 31 s, about 1 min 33 s left; tas × 2 threads`.
    fn line(&self, s: &LineState, now: Instant) -> String {
        let elapsed = now.duration_since(self.start).as_secs_f64();
        let pct = if self.total == 0 {
            100.0
        } else {
            100.0 * s.done as f64 / self.total as f64
        };
        let mut line = format!(
            "progress: {}/{} {} ({pct:.0} %), {}",
            s.done,
            self.total,
            self.unit,
            span(elapsed)
        );
        if s.done < self.total && s.done > 0 {
            let left = elapsed / s.done as f64 * (self.total - s.done) as f64;
            line.push_str(&format!(", about {} left", span(left)));
        }
        if !s.step.is_empty() && s.done < self.total {
            line.push_str("; ");
            line.push_str(&s.step);
        }
        line
    }
}

/// A duration for people: `0.4 s`, `31 s`, `2 min 5 s`, `1 h 3 min`.
fn span(secs: f64) -> String {
    let whole = secs.round() as u64;
    if secs < 10.0 {
        format!("{secs:.1} s")
    } else if whole < 60 {
        format!("{whole} s")
    } else if whole < 3600 {
        format!("{} min {} s", whole / 60, whole % 60)
    } else {
        format!("{} h {} min", whole / 3600, whole % 3600 / 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_lines_say_where_the_run_is() {
        let p = Progress::lines(4, "reps");
        let Draw::Lines(l) = &p.0 else { unreachable!() };
        let t0 = l.start;
        let s = LineState {
            done: 1,
            step: "tas × 2 threads".into(),
            last: t0,
            finished: false,
        };
        let line = l.line(&s, t0 + Duration::from_secs(2));
        assert_eq!(
            line,
            "progress: 1/4 reps (25 %), 2.0 s, about 6.0 s left; tas × 2 threads"
        );
        let done = LineState { done: 4, ..s };
        let line = l.line(&done, t0 + Duration::from_secs(75));
        assert_eq!(line, "progress: 4/4 reps (100 %), 1 min 15 s");
    }

    #[test]
    fn spans_read_as_people_write_them() {
        assert_eq!(span(0.44), "0.4 s");
        assert_eq!(span(31.2), "31 s");
        assert_eq!(span(125.0), "2 min 5 s");
        assert_eq!(span(3780.0), "1 h 3 min");
    }
}
