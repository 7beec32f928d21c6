//! `locklab history --out FILE.html`: the history of one figure as a
//! self-contained page in the report's style: per machine and parameter
//! set, its revisions with their figure and the change from the revision
//! before, a change beyond the noise marked.

use std::fmt::Write as _;

use super::markup::esc;
use crate::core::report;
use crate::core::stats::sig3;
use crate::front::history::{Query, Series};
use crate::front::share::short_id;

/// The page.
pub fn page(q: &Query, series: &[Series]) -> String {
    let title = format!(
        "{}, lock {}, {} thread{}",
        q.bench,
        q.lock,
        q.threads,
        if q.threads == 1 { "" } else { "s" }
    );
    let mut s = String::new();
    let _ = write!(
        s,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>locklab history: {t}</title><style>{}</style></head><body>\
         <h1>locklab history</h1><p class=\"note\">{t}: throughput, the geometric mean of every \
         repetition of a revision's runs; each revision against the one before it (B/A with a \
         95 % bootstrap interval, unpaired), * where the interval excludes 1 and the change \
         exceeds {} %. Written by locklab {}.</p>",
        super::STYLE,
        (q.noise * 100.0).round(),
        esc(env!("CARGO_PKG_VERSION")),
        t = esc(&title),
    );
    for ser in series {
        let m = &ser.machine;
        let id =
            m.id.as_deref()
                .map_or_else(|| "(not recorded)".to_string(), short_id);
        let _ = write!(
            s,
            "<h2>machine {}</h2><p class=\"note\">{}, {} cores, host {}; {}</p>",
            esc(&id),
            esc(&m.cpu_model),
            m.cores,
            esc(&m.hostname),
            esc(&crate::core::plot::param_text(&ser.params))
        );
        let unit = ser.unit();
        let _ = write!(
            s,
            "<table class=\"data\"><thead><tr><th>revision</th><th>runs</th><th>reps</th>\
             <th>first run</th><th>{}</th><th>vs previous</th><th>95 % interval</th>\
             <th>change</th></tr></thead><tbody>",
            esc(unit.1)
        );
        for r in &ser.revisions {
            let runs: Vec<String> = r.runs.iter().map(|i| format!("#{i}")).collect();
            let (ratio, interval, change, marked) = match &r.vs_previous {
                Some((x, c)) => (
                    format!("{}×", sig3(x.ratio)),
                    if x.spread_known() {
                        format!("{}–{}", sig3(x.lo), sig3(x.hi))
                    } else {
                        "–".into()
                    },
                    format!("{}{}", if c.significant() { "* " } else { "" }, c.word()),
                    c.significant(),
                ),
                None => Default::default(),
            };
            let _ = write!(
                s,
                "<tr><td>{}</td><td>{}</td><td class=\"n\">{}</td><td>{}</td>\
                 <td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>\
                 <td{}>{}</td></tr>",
                esc(&r.rev),
                esc(&runs.join(" ")),
                r.throughputs.len(),
                esc(&r.first),
                esc(&report::sig(r.value / unit.0)),
                esc(&ratio),
                esc(&interval),
                if marked { " class=\"warn\"" } else { "" },
                esc(&change)
            );
        }
        s.push_str("</tbody></table>");
    }
    s.push_str("</body></html>\n");
    s
}
