//! The verdict: the answer a run gives, as short lines a person reads at
//! the end of the output ("fastest at 2 threads: mcs, 1.12× ticket
//! (1.08–1.15)") and as `verdict` in the JSON.
//!
//! Each study says what its points answer ([`crate::core::study::Study::verdict`])
//! in [`Section`]s of [`Line`]s; this module holds what they share: the
//! sections' shape and rendering, choosing a winner among contenders
//! measured side by side ([`pick`]) with how sure that is
//! ([`crate::core::stats::paired_ratio`]: a tie when the repetitions do not
//! separate the winner from the runner-up), and the thread-count classes
//! (one thread, up to the cores, beyond the cores).

use crate::core::stats::{paired_ratio, sig3, Ratio};
use serde_json::{json, Value};
use std::fmt::Write as _;

/// One study's answer for one workload.
#[derive(Debug, Clone, PartialEq)]
pub struct Section {
    /// The study's name (`Point::bench`).
    pub study: String,
    /// What was measured, in a few words (the workload).
    pub title: String,
    /// The answers.
    pub lines: Vec<Line>,
}

/// One answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    /// What the question is asked of, shown once for consecutive lines
    /// ("2 threads (≤ 2 cores)", "10 % updates"); may be empty.
    pub group: String,
    /// The question, short: "fastest".
    pub question: String,
    /// The answer: a lock, a strategy, a variant, or "tie: a, b".
    pub answer: String,
    /// Why: the ratio to the runner-up and its interval, a factor, a
    /// crossover.
    pub evidence: String,
    /// The same as data.
    pub json: Value,
}

/// A winner must be ahead of another by more than this fraction to be
/// told apart from it: a gain of a fraction of a percent, however
/// consistent, is no reason to choose a lock.
pub const NEGLIGIBLE: f64 = 0.01;

/// Whether an oriented margin (> 1: the winner better) tells the two
/// apart: separated by the repetitions, and by more than [`NEGLIGIBLE`].
pub fn decisive(m: &Ratio) -> bool {
    m.separated().is_some() && m.ratio > 1.0 + NEGLIGIBLE
}

/// Thread-count classes, as the verdict groups points.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Class {
    /// One thread: no contention.
    One,
    /// Two threads up to the cores.
    UpToCores,
    /// More threads than cores: waiters and holders get preempted.
    BeyondCores,
}

impl Class {
    /// The class of `threads` on a machine with `cores` cores.
    pub fn of(threads: u32, cores: usize) -> Class {
        if threads <= 1 {
            Class::One
        } else if threads as usize <= cores.max(1) {
            Class::UpToCores
        } else {
            Class::BeyondCores
        }
    }

    /// "1 thread", "2 (≤ 2 cores)", "4–16 (> 2 cores)": the thread counts
    /// measured in the class.
    pub fn label(&self, threads: &[u32], cores: usize) -> String {
        let span = match (threads.iter().min(), threads.iter().max()) {
            (Some(a), Some(b)) if a == b => format!("{a}"),
            (Some(a), Some(b)) => format!("{a}–{b}"),
            _ => "–".into(),
        };
        match self {
            Class::One => "1 thread".into(),
            Class::UpToCores => format!("{span} (≤ {cores} cores)"),
            Class::BeyondCores => format!("{span} (> {cores} cores)"),
        }
    }

    /// Its name in JSON.
    pub fn key(&self) -> &'static str {
        match self {
            Class::One => "one_thread",
            Class::UpToCores => "up_to_cores",
            Class::BeyondCores => "beyond_cores",
        }
    }
}

/// A contender for [`pick`]: its name and one value per repetition (the
/// repetitions of all contenders interleaved, so that value `i` of each
/// was measured side by side).
#[derive(Debug, Clone)]
pub struct Entrant {
    /// Lock, strategy or variant.
    pub name: String,
    /// One value per repetition, in repetition order.
    pub values: Vec<f64>,
}

/// Who won and how sure that is.
#[derive(Debug, Clone, PartialEq)]
pub struct Pick {
    /// The best by the geometric mean of its repetitions.
    pub winner: String,
    /// The next best, if there was another; in a tie, the best of those
    /// the repetitions do not separate from the winner (it may be behind
    /// one that they do separate, whose spread is narrower).
    pub runner_up: Option<String>,
    /// The winner's advantage over the runner-up, oriented so that > 1
    /// means better (for lower-is-better values, runner-up / winner).
    /// Told apart when [`decisive`].
    pub margin: Option<Ratio>,
    /// Every contender not told apart from the winner ([`decisive`]; the
    /// winner first); one name when it is a clear win.
    pub tied: Vec<String>,
}

impl Pick {
    /// The answer as a line's `answer`: the winner, or "tie: a, b, c".
    pub fn answer(&self) -> String {
        if self.tied.len() <= 1 {
            return self.winner.clone();
        }
        if self.margin.is_some_and(|m| !m.spread_known()) {
            // One repetition: nothing is separated, but "tie" would claim
            // more than is known.
            return format!("{} (unsure)", self.winner);
        }
        // The winner, and as many more as fit a column of about 32
        // characters.
        let mut shown = String::from("tie: ");
        for (i, name) in self.tied.iter().enumerate() {
            let rest = self.tied.len() - i;
            let piece = if i == 0 {
                name.clone()
            } else {
                format!(", {name}")
            };
            if i >= 1 && shown.chars().count() + piece.len() + if rest > 1 { 4 } else { 0 } > 24 {
                return format!("{shown} +{rest}");
            }
            shown.push_str(&piece);
        }
        shown
    }

    /// The evidence: `1.12× over tas (1.08–1.15)`: the winner's margin
    /// over the runner-up (`what` says how it is read) and its interval.
    pub fn evidence(&self, what: &str) -> String {
        match (&self.runner_up, &self.margin) {
            // A tie is said by the answer; the interval shows why.
            (Some(r), Some(m)) if m.spread_known() => {
                format!("{}× {what} {r} ({:.2}–{:.2})", sig3(m.ratio), m.lo, m.hi)
            }
            (Some(r), Some(m)) => format!("{}× {what} {r} (1 repetition)", sig3(m.ratio)),
            _ => "the only one measured".into(),
        }
    }

    /// As JSON.
    pub fn json(&self) -> Value {
        json!({
            "winner": self.winner,
            "runner_up": self.runner_up,
            "margin": self.margin.map(|m| m.json()),
            "tie": self.tied.len() > 1,
            "tied": self.tied,
        })
    }
}

/// The best of `entrants` (higher values better unless `lower_better`),
/// the runner-up, the winner's paired margin over it, and everyone the
/// repetitions do not separate from the winner. `None` with no entrant
/// that has a usable value.
pub fn pick(entrants: &[Entrant], lower_better: bool) -> Option<Pick> {
    let mut scored: Vec<(&Entrant, f64)> = entrants
        .iter()
        .map(|e| (e, crate::core::stats::geomean(&positive(&e.values))))
        .filter(|(_, g)| g.is_finite())
        .collect();
    scored.sort_by(|a, b| {
        let o = a.1.total_cmp(&b.1);
        if lower_better {
            o
        } else {
            o.reverse()
        }
    });
    let (best, _) = *scored.first()?;
    // Oriented so that > 1 means "the winner is better".
    let margin_over = |other: &Entrant| {
        let r = paired_ratio(&other.values, &best.values);
        if lower_better {
            r.inverse()
        } else {
            r
        }
    };
    let mut tied = vec![best.name.clone()];
    let mut first_tied: Option<&Entrant> = None;
    for (e, _) in scored.iter().skip(1) {
        if !decisive(&margin_over(e)) {
            tied.push(e.name.clone());
            first_tied.get_or_insert(e);
        }
    }
    // The runner-up is the next best, unless the next best is told apart
    // and one further down is not (a wider spread): then that one, so that
    // a tie's evidence shows the interval that makes it a tie.
    let runner_up = first_tied.or_else(|| scored.get(1).map(|(e, _)| *e));
    let margin = runner_up.map(margin_over);
    Some(Pick {
        winner: best.name.clone(),
        runner_up: runner_up.map(|e| e.name.clone()),
        margin,
        tied,
    })
}

fn positive(xs: &[f64]) -> Vec<f64> {
    xs.iter()
        .copied()
        .filter(|x| x.is_finite() && *x > 0.0)
        .collect()
}

/// The sections as text: a heading, then per section its title and lines
/// in aligned columns (a line's group shown only where it changes), and a
/// closing note on how sure the ratios are.
pub fn text(out: &mut String, sections: &[Section]) {
    if sections.iter().all(|s| s.lines.is_empty()) {
        return;
    }
    let _ = writeln!(out, "\n{}", crate::core::out::bold("VERDICT"));
    let mut paired = false;
    for s in sections.iter().filter(|s| !s.lines.is_empty()) {
        let _ = writeln!(out, "{}: {}", crate::core::out::bold(&s.study), s.title);
        // Columns sized to this section's own words.
        let width = |f: fn(&Line) -> &str, cap: usize| {
            s.lines
                .iter()
                .map(|l| f(l).chars().count())
                .max()
                .unwrap_or(0)
                .min(cap)
        };
        let (gw, qw, aw) = (
            width(|l| &l.group, 24),
            width(|l| &l.question, 24),
            width(|l| &l.answer, 24),
        );
        let lead = 2 + if gw > 0 { gw + 2 } else { 0 } + qw + 2 + aw + 2;
        // Evidence wraps under itself; where that leaves too little room,
        // it goes on lines of its own below the answer.
        let (indent, room) = if WIDTH.saturating_sub(lead) >= 30 {
            (lead, WIDTH - lead)
        } else {
            (6, WIDTH - 6)
        };
        let mut last_group = None;
        for l in &s.lines {
            paired |= l.evidence.contains('×');
            let group = if last_group == Some(&l.group) {
                ""
            } else {
                &l.group
            };
            last_group = Some(&l.group);
            let group = if gw == 0 {
                String::new()
            } else {
                format!("{}  ", pad(group, gw))
            };
            let head = format!(
                "  {group}{}  {}  ",
                pad(&l.question, qw),
                pad(&l.answer, aw)
            );
            // The evidence starts on the answer's line where it fits
            // there (an answer wider than its column pushes it right).
            let here = WIDTH.saturating_sub(head.chars().count());
            let rest = if indent == lead && here >= 20 {
                let first = wrap(&l.evidence, here);
                let _ = writeln!(out, "{}", format!("{head}{}", first[0]).trim_end());
                first[1..].join(" ")
            } else {
                let _ = writeln!(out, "{}", head.trim_end());
                l.evidence.clone()
            };
            if !rest.is_empty() {
                for p in wrap(&rest, room) {
                    let _ = writeln!(out, "{}{p}", " ".repeat(indent));
                }
            }
        }
    }
    if paired {
        let _ = writeln!(
            out,
            "N× over X: the winner's margin over the runner-up X, the geometric mean of the per-\n\
             repetition ratios (repetitions are interleaved, so paired), with its {:.0} % bootstrap\n\
             interval; a tie where the interval holds 1 or the margin is under {:.0} %",
            crate::core::stats::LEVEL * 100.0,
            NEGLIGIBLE * 100.0
        );
    }
}

/// Width the verdict is laid out for.
const WIDTH: usize = crate::core::report::WIDTH;

/// `text` broken at spaces into lines of at most `room` characters (a
/// longer word stays whole).
fn wrap(text: &str, room: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split(' ') {
        let need = line.chars().count() + usize::from(!line.is_empty()) + word.chars().count();
        if !line.is_empty() && need > room {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() || lines.is_empty() {
        lines.push(line);
    }
    lines
}

/// `s` padded with spaces to `w` characters (longer strings kept whole).
pub fn pad(s: &str, w: usize) -> String {
    let n = s.chars().count();
    if n >= w {
        s.to_string()
    } else {
        format!("{s}{}", " ".repeat(w - n))
    }
}

/// The sections as the `verdict` of a run's JSON.
pub fn json(sections: &[Section]) -> Value {
    Value::Array(
        sections
            .iter()
            .map(|s| {
                json!({
                    "study": s.study,
                    "title": s.title,
                    "lines": s.lines.iter().map(|l| json!({
                        "question": l.question,
                        "answer": l.answer,
                        "evidence": l.evidence,
                        "data": l.json,
                    })).collect::<Vec<_>>(),
                })
            })
            .collect(),
    )
}

/// A factor as text: `3.2×`.
pub fn times(x: f64) -> String {
    format!("{}×", sig3(x))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(name: &str, values: &[f64]) -> Entrant {
        Entrant {
            name: name.into(),
            values: values.to_vec(),
        }
    }

    #[test]
    fn a_clear_winner_is_named_with_its_margin() {
        let p = pick(
            &[
                e("slow", &[10.0, 11.0, 9.5]),
                e("fast", &[20.0, 21.0, 19.0]),
                e("mid", &[15.0, 15.5, 14.0]),
            ],
            false,
        )
        .unwrap();
        assert_eq!(p.winner, "fast");
        assert_eq!(p.runner_up.as_deref(), Some("mid"));
        assert_eq!(p.tied, vec!["fast"]);
        assert_eq!(p.answer(), "fast");
        assert!(p.margin.unwrap().ratio > 1.3);
        assert!(p.evidence("over").contains("over mid"));
    }

    #[test]
    fn noise_is_a_tie() {
        let p = pick(
            &[
                e("a", &[100.0, 96.0, 103.0, 99.0]),
                e("b", &[98.0, 101.0, 100.0, 102.0]),
                e("c", &[50.0, 51.0, 49.0, 50.0]),
            ],
            false,
        )
        .unwrap();
        assert_eq!(p.tied.len(), 2);
        assert!(p.answer().starts_with("tie: "));
        assert!(!p.tied.contains(&"c".to_string()));
        assert!(p.evidence("over").contains("over "));
    }

    /// The next best is steadily behind, a third is behind on average but
    /// too noisy to tell apart: the tie's evidence cites the third, whose
    /// interval holds 1, not the second, whose does not.
    #[test]
    fn a_tie_cites_the_contender_it_cannot_separate() {
        let p = pick(
            &[
                e("a", &[100.0, 101.0, 100.0, 102.0]),
                e("b", &[95.0, 96.0, 95.0, 97.0]),
                e("c", &[60.0, 130.0, 70.0, 120.0]),
            ],
            false,
        )
        .unwrap();
        assert_eq!(p.tied, vec!["a".to_string(), "c".to_string()]);
        assert_eq!(p.runner_up.as_deref(), Some("c"));
        let m = p.margin.unwrap();
        assert!(m.lo <= 1.0 && m.hi >= 1.0, "{m:?}");
        // A clear win still cites the next best.
        let p = pick(
            &[
                e("a", &[100.0, 101.0]),
                e("b", &[50.0, 51.0]),
                e("c", &[10.0, 11.0]),
            ],
            false,
        )
        .unwrap();
        assert_eq!(p.runner_up.as_deref(), Some("b"));
    }

    #[test]
    fn lower_is_better_picks_the_smallest() {
        let p = pick(&[e("a", &[5.0, 5.1]), e("b", &[9.0, 9.2])], true).unwrap();
        assert_eq!(p.winner, "a");
        let m = p.margin.unwrap();
        assert!(m.ratio > 1.7, "{m:?}");
    }

    #[test]
    fn classes_split_at_one_and_the_cores() {
        assert_eq!(Class::of(1, 2), Class::One);
        assert_eq!(Class::of(2, 2), Class::UpToCores);
        assert_eq!(Class::of(3, 2), Class::BeyondCores);
        assert_eq!(Class::of(2, 1), Class::BeyondCores);
    }
}
