//! Inline SVG for the HTML report, written as strings: a panel with a
//! log₂ or linear x axis and a log₁₀ or linear y axis, lines through
//! medians with min–max whiskers, a distinct colour and marker per series,
//! and dashed reference lines. No fonts or scripts: text is `<text>` in the
//! page's own sans-serif.

use std::fmt::Write as _;

/// `s` with the characters HTML gives meaning to escaped: safe as text
/// and inside a quoted attribute.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// Distinct on white and for most colour vision (the Tableau 10 set).
const COLOURS: [&str; 10] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf",
];

/// How many marker shapes there are; with ten colours, series 0..70 of
/// one panel each get a different (colour, shape) pair.
const SHAPES: usize = 7;

/// The colour of series `i`.
pub fn colour(i: usize) -> &'static str {
    COLOURS[i % COLOURS.len()]
}

/// The marker of series `i` centred at (`x`, `y`), `r` its half size.
pub fn marker(i: usize, x: f64, y: f64, r: f64) -> String {
    let c = colour(i);
    let filled = format!("fill=\"{c}\" stroke=\"#fff\" stroke-width=\"0.8\"");
    match i % SHAPES {
        0 => format!("<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"{r:.1}\" {filled}/>"),
        1 => format!(
            "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" {filled}/>",
            x - r * 0.9,
            y - r * 0.9,
            r * 1.8,
            r * 1.8
        ),
        2 => polygon(&[(x, y - r * 1.2), (x + r * 1.1, y + r * 0.8), (x - r * 1.1, y + r * 0.8)], &filled),
        3 => polygon(&[(x, y - r * 1.3), (x + r * 1.1, y), (x, y + r * 1.3), (x - r * 1.1, y)], &filled),
        4 => polygon(&[(x, y + r * 1.2), (x + r * 1.1, y - r * 0.8), (x - r * 1.1, y - r * 0.8)], &filled),
        5 => format!(
            "<path d=\"M{:.1} {y:.1}H{:.1}M{x:.1} {:.1}V{:.1}\" stroke=\"{c}\" stroke-width=\"2.4\"/>",
            x - r * 1.2,
            x + r * 1.2,
            y - r * 1.2,
            y + r * 1.2
        ),
        _ => format!(
            "<path d=\"M{:.1} {:.1}L{:.1} {:.1}M{:.1} {:.1}L{:.1} {:.1}\" stroke=\"{c}\" stroke-width=\"2.4\"/>",
            x - r,
            y - r,
            x + r,
            y + r,
            x - r,
            y + r,
            x + r,
            y - r
        ),
    }
}

fn polygon(pts: &[(f64, f64)], attrs: &str) -> String {
    let list: Vec<String> = pts.iter().map(|(x, y)| format!("{x:.1},{y:.1}")).collect();
    format!("<polygon points=\"{}\" {attrs}/>", list.join(" "))
}

/// A small standalone SVG of series `i`'s marker and line, for a legend.
pub fn swatch(i: usize) -> String {
    format!(
        "<svg class=\"sw\" width=\"26\" height=\"14\" viewBox=\"0 0 26 14\" aria-hidden=\"true\">\
         <line x1=\"1\" y1=\"7\" x2=\"25\" y2=\"7\" stroke=\"{}\" stroke-width=\"1.6\"/>{}</svg>",
        colour(i),
        marker(i, 13.0, 7.0, 4.0)
    )
}

/// One axis: its range in data units and whether it is logarithmic
/// (base 2 for threads, base 10 for rates).
#[derive(Clone, Copy, Debug)]
pub struct Axis {
    /// The least value shown.
    pub lo: f64,
    /// The greatest value shown.
    pub hi: f64,
    /// Logarithmic (the values must be above 0).
    pub log: bool,
}

impl Axis {
    /// Where `v` falls in 0..1 along the axis.
    fn frac(&self, v: f64) -> f64 {
        let (v, lo, hi) = if self.log {
            (v.max(self.lo).ln(), self.lo.ln(), self.hi.ln())
        } else {
            (v, self.lo, self.hi)
        };
        if hi > lo {
            (v - lo) / (hi - lo)
        } else {
            0.5
        }
    }

    /// A log₁₀ (or linear from 0) axis holding every value of `vals`
    /// with some room; `None` if there is nothing it can show.
    pub fn fit_y(vals: impl Iterator<Item = f64>, log: bool) -> Option<Axis> {
        let vals: Vec<f64> = vals
            .filter(|v| v.is_finite() && (!log || *v > 0.0))
            .collect();
        let lo = vals.iter().copied().reduce(f64::min)?;
        let hi = vals.iter().copied().reduce(f64::max)?;
        Some(if log {
            Axis {
                lo: lo / 1.5,
                hi: hi * 1.5,
                log: true,
            }
        } else {
            Axis {
                lo: 0.0,
                hi: if hi > 0.0 { hi * 1.08 } else { 1.0 },
                log: false,
            }
        })
    }

    /// Tick values: powers (of 2 on a log₂ x axis, of 10 with 2 and 5 in
    /// between when the range is short on a log₁₀ axis), or round steps.
    fn ticks(&self, base2: bool) -> Vec<f64> {
        let mut out = Vec::new();
        if self.log && base2 {
            let mut t = 1.0;
            while t <= self.hi * 1.0001 {
                if t >= self.lo * 0.9999 {
                    out.push(t);
                }
                t *= 2.0;
            }
        } else if self.log {
            let decades = (self.hi / self.lo).log10();
            let steps: &[f64] = if decades < 1.5 {
                &[1.0, 2.0, 5.0]
            } else if decades > 6.0 {
                &[1.0]
            } else {
                &[1.0, 3.0]
            };
            let mut e = self.lo.log10().floor() as i32;
            while 10f64.powi(e) <= self.hi {
                for s in steps {
                    let t = s * 10f64.powi(e);
                    if t >= self.lo && t <= self.hi {
                        out.push(t);
                    }
                }
                e += 1;
            }
            // Every other decade when there are many.
            while out.len() > 8 {
                out = out.into_iter().step_by(2).collect();
            }
        } else {
            let raw = (self.hi - self.lo) / 5.0;
            let mag = 10f64.powf(raw.log10().floor());
            let step = [1.0, 2.0, 2.5, 5.0, 10.0]
                .iter()
                .map(|m| m * mag)
                .find(|s| *s >= raw)
                .unwrap_or(raw);
            let mut t = (self.lo / step).ceil() * step;
            while t <= self.hi + step * 1e-9 {
                out.push(t);
                t += step;
            }
        }
        out
    }
}

/// A number short: 950, 12.3k, 4.5M, 1.2G.
pub fn short(v: f64) -> String {
    let a = v.abs();
    let (d, s) = if a >= 1e9 {
        (1e9, "G")
    } else if a >= 1e6 {
        (1e6, "M")
    } else if a >= 1e3 {
        (1e3, "k")
    } else {
        (1.0, "")
    };
    let x = v / d;
    let txt = if x.abs() >= 100.0 || x == x.trunc() {
        format!("{x:.0}")
    } else if x.abs() >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    };
    let txt = if txt.contains('.') {
        txt.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        txt
    };
    format!("{txt}{s}")
}

/// One series: a name (legend only) and its points
/// (x, median, min, max), sorted by x.
pub struct Line {
    /// Its index, for colour and marker.
    pub style: usize,
    /// Points: x, median, min, max.
    pub points: Vec<(f64, f64, f64, f64)>,
    /// Drawn dashed and grey, without markers (a reference such as an
    /// envelope).
    pub reference: bool,
}

/// A vertical dashed line at `x` with a label.
pub struct Mark {
    /// Where, in x units.
    pub x: f64,
    /// The label, drawn beside the line's top.
    pub label: String,
    /// Stroke colour.
    pub colour: &'static str,
}

/// One panel to draw.
pub struct Panel<'a> {
    /// The title above the plot area.
    pub title: &'a str,
    /// The x axis; log means log₂.
    pub x: Axis,
    /// The y axis; log means log₁₀.
    pub y: Axis,
    /// What x is.
    pub x_label: &'a str,
    /// What y is.
    pub y_label: &'a str,
    /// The series.
    pub lines: &'a [Line],
    /// Vertical marks (the core count, crossovers).
    pub marks: &'a [Mark],
    /// Width and height in pixels.
    pub size: (f64, f64),
}

/// The panel as an `<svg>` element.
pub fn panel(p: &Panel<'_>) -> String {
    let (w, h) = p.size;
    let (left, right, top, bottom) = (58.0, 14.0, 30.0, 44.0);
    let (pw, ph) = (w - left - right, h - top - bottom);
    let sx = |v: f64| left + p.x.frac(v) * pw;
    let sy = |v: f64| top + (1.0 - p.y.frac(v)) * ph;
    let mut s = String::new();
    let _ = write!(
        s,
        "<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" \
         viewBox=\"0 0 {w} {h}\" role=\"img\" aria-label=\"{}\">",
        esc(p.title)
    );
    let _ = write!(
        s,
        "<rect x=\"0\" y=\"0\" width=\"{w}\" height=\"{h}\" fill=\"#fff\"/>\
         <text x=\"{:.1}\" y=\"18\" class=\"pt\" text-anchor=\"middle\">{}</text>",
        w / 2.0,
        esc(p.title)
    );
    // Grid and tick labels.
    for t in p.y.ticks(false) {
        let y = sy(t);
        let _ = write!(
            s,
            "<line x1=\"{left}\" x2=\"{:.1}\" y1=\"{y:.1}\" y2=\"{y:.1}\" class=\"grid\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" class=\"tk\" text-anchor=\"end\">{}</text>",
            left + pw,
            left - 5.0,
            y + 4.0,
            short(t)
        );
    }
    for t in p.x.ticks(true) {
        let x = sx(t);
        let _ = write!(
            s,
            "<line x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{top}\" y2=\"{:.1}\" class=\"grid\"/>\
             <text x=\"{x:.1}\" y=\"{:.1}\" class=\"tk\" text-anchor=\"middle\">{}</text>",
            top + ph,
            top + ph + 15.0,
            short(t)
        );
    }
    let _ = write!(
        s,
        "<rect x=\"{left}\" y=\"{top}\" width=\"{pw:.1}\" height=\"{ph:.1}\" class=\"frame\"/>\
         <text x=\"{:.1}\" y=\"{:.1}\" class=\"al\" text-anchor=\"middle\">{}</text>\
         <text transform=\"translate(13 {:.1}) rotate(-90)\" class=\"al\" text-anchor=\"middle\">{}</text>",
        left + pw / 2.0,
        h - 8.0,
        esc(p.x_label),
        top + ph / 2.0,
        esc(p.y_label)
    );
    for (k, m) in p.marks.iter().enumerate() {
        if m.x < p.x.lo || m.x > p.x.hi {
            continue;
        }
        let x = sx(m.x);
        let anchor = if x > left + pw * 0.7 { "end" } else { "start" };
        let dx = if anchor == "end" { -4.0 } else { 4.0 };
        let _ = write!(
            s,
            "<line x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{top}\" y2=\"{:.1}\" stroke=\"{}\" \
             stroke-width=\"1.4\" stroke-dasharray=\"6 4\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" class=\"mk\" fill=\"{}\" text-anchor=\"{anchor}\">{}</text>",
            top + ph,
            m.colour,
            x + dx,
            top + ph - 6.0 - 13.0 * k as f64,
            m.colour,
            esc(&m.label)
        );
    }
    // Series: whiskers, then the median line, then the markers; nudged
    // apart a little along x so whiskers at one x do not hide each other.
    let drawn: Vec<&Line> = p.lines.iter().filter(|l| !l.points.is_empty()).collect();
    let n = drawn.iter().filter(|l| !l.reference).count() as f64;
    let spread = (pw / 40.0).min(2.5 * n);
    let mut k = 0.0;
    for l in &drawn {
        let nudge = if l.reference || n <= 1.0 {
            0.0
        } else {
            let v = -spread / 2.0 + spread * k / (n - 1.0);
            k += 1.0;
            v
        };
        let c = if l.reference { "#555" } else { colour(l.style) };
        let path: Vec<String> = l
            .points
            .iter()
            .map(|&(x, med, _, _)| format!("{:.1},{:.1}", sx(x) + nudge, sy(med)))
            .collect();
        if l.reference {
            let _ = write!(
                s,
                "<polyline points=\"{}\" fill=\"none\" stroke=\"{c}\" stroke-width=\"3\" \
                 stroke-dasharray=\"2 4\" opacity=\"0.8\"/>",
                path.join(" ")
            );
            continue;
        }
        for &(x, _, lo, hi) in &l.points {
            if lo.is_finite() && hi.is_finite() && hi > lo {
                let (xx, y1, y2) = (sx(x) + nudge, sy(lo), sy(hi));
                let _ = write!(
                    s,
                    "<path d=\"M{xx:.1} {y1:.1}V{y2:.1}M{:.1} {y1:.1}h6M{:.1} {y2:.1}h6\" \
                     stroke=\"{c}\" stroke-width=\"1\" opacity=\"0.75\"/>",
                    xx - 3.0,
                    xx - 3.0
                );
            }
        }
        let _ = write!(
            s,
            "<polyline points=\"{}\" fill=\"none\" stroke=\"{c}\" stroke-width=\"1.6\"/>",
            path.join(" ")
        );
        for &(x, med, _, _) in &l.points {
            s.push_str(&marker(l.style, sx(x) + nudge, sy(med), 4.0));
        }
    }
    s.push_str("</svg>");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_numbers_keep_three_figures_and_a_prefix() {
        assert_eq!(short(950.0), "950");
        assert_eq!(short(12_345.0), "12.3k");
        assert_eq!(short(4_500_000.0), "4.5M");
        assert_eq!(short(2e9), "2G");
    }

    #[test]
    fn log2_ticks_are_the_powers_of_two_in_range() {
        let a = Axis {
            lo: 0.8,
            hi: 10.0,
            log: true,
        };
        assert_eq!(a.ticks(true), vec![1.0, 2.0, 4.0, 8.0]);
    }

    #[test]
    fn markers_differ_for_the_first_seventy_series() {
        let mut seen = std::collections::HashSet::new();
        for i in 0..70 {
            assert!(
                seen.insert((colour(i), i % SHAPES)),
                "series {i} repeats a style"
            );
        }
    }
}
