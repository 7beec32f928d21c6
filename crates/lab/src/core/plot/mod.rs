//! The lab's one chart engine (plotters, drawing SVG): the helpers every
//! study's plot draws with, the throughput-versus-threads chart
//! ([`threads`]) and the per-lock bar chart ([`bars`]). `locklab plot`
//! writes a study's chart to a file; `locklab report` inlines the same
//! charts in its page. The front chooses which study's plot to draw.
//!
//! Every line is a median with min–max whiskers over the repetitions, so
//! the spread stays visible. The SVG backend writes text as `<text>`
//! elements and sizes labels with an estimate, so plotting needs no
//! system fonts.
//!
//! A run can hold several parameter sets of a study (critical-section
//! lengths, delays, …); a plot shows one, so that lines compare like with
//! like. It is the first set stored, and the plot's second title line says
//! so and how many sets there are ([`param_sets`] lists them).

pub mod bars;
pub mod steps;
pub mod threads;

#[cfg(test)]
mod tests;

use std::path::Path;

use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use serde_json::Value;

use crate::core::error::{LabError, Result};
use crate::core::report;
use crate::core::results::{Point, RunMeta};

/// Refuses an output path that is the database `db` (or one of SQLite's
/// files beside it) however it is spelled: relative or absolute, through
/// `..`, a symbolic link or a hard link, and one where something other
/// than a regular file is (a FIFO, a device, a directory). Writing the
/// `kind` of output there ("plot", "report") would destroy every stored
/// run; `example` is a file name to suggest instead. A store on a server
/// has no file to protect.
pub fn check_out(
    out: &Path,
    db: &crate::core::store::Location,
    kind: &str,
    example: &str,
) -> Result<()> {
    crate::core::files::check_regular_or_absent(
        "--out",
        out,
        &format!("a regular file (replaced whole) or a new file's name, e.g. {example}"),
    )?;
    let refuse = |what: &str| {
        Err(LabError::input(format!(
            "--out {}: that is {what}; writing the {kind} there would destroy the stored runs; \
             give another file, e.g. {example}",
            out.display()
        )))
    };
    let Some(db) = db.file() else {
        return Ok(());
    };
    let (Some(out_abs), Some(db_abs)) = (resolved(out), resolved(db)) else {
        return Ok(());
    };
    let db_name = db_abs.as_os_str();
    for suffix in ["", "-journal", "-wal", "-shm"] {
        let mut name = db_name.to_owned();
        name.push(suffix);
        if out_abs.as_os_str() == name {
            return refuse(if suffix.is_empty() {
                "the database (--db)"
            } else {
                "a file of the database (--db)"
            });
        }
    }
    // A hard link (or a bind mount) is the same file under another name.
    if crate::core::files::same_file(out, db) {
        return refuse("the database (--db) under another name");
    }
    Ok(())
}

/// `p` absolute, with every symbolic link and `..` resolved; for a file
/// that does not exist yet, its directory resolved and its name kept.
fn resolved(p: &Path) -> Option<std::path::PathBuf> {
    if let Ok(c) = std::fs::canonicalize(p) {
        return Some(c);
    }
    let name = p.file_name()?;
    let dir = match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    Some(std::fs::canonicalize(dir).ok()?.join(name))
}

/// A chart ready to draw: scaled lines, the y range, the y description.
pub(crate) struct Chart {
    pub(crate) series: Vec<Series>,
    pub(crate) y_lo: f64,
    pub(crate) y_hi: f64,
    pub(crate) y_desc: String,
}

impl Chart {
    /// The x values of its points, ascending, each once.
    pub(crate) fn xs(&self) -> Vec<i32> {
        let mut xs: Vec<i32> = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.0))
            .collect();
        xs.sort_unstable();
        xs.dedup();
        xs
    }
}

/// The points of the run's first parameter set of `bench`, that set, and
/// what the plot's title says of it ("" or "   [parameter set 1 of 3]");
/// an input error naming the run if it has no `bench` points.
pub(crate) fn first_param_set<'a>(
    meta: &RunMeta,
    points: &'a [Point],
    bench: &str,
) -> Result<(Vec<&'a Point>, &'a Value, String)> {
    let sets = param_sets(points, bench);
    let Some(&params) = sets.first() else {
        return Err(LabError::input(format!(
            "run {} has no {bench} points to plot",
            meta.id_text()
        )));
    };
    let chosen = points
        .iter()
        .filter(|p| p.bench == bench && p.params == *params)
        .collect();
    let note = if sets.len() > 1 {
        format!("   [parameter set 1 of {}]", sets.len())
    } else {
        String::new()
    };
    Ok((chosen, params, note))
}

/// Scales a chart's values to the unit of its largest one: the y axis
/// spans lo/1.6 .. hi·1.6 on a log scale (half a decade of room keeps
/// whisker caps inside), 0 .. hi·1.08 on a linear one (1 when all is 0);
/// values a log axis cannot show sit on its floor. `None` if there
/// is nothing the axis can show (a log axis shows nothing at or below 0).
pub(crate) fn chart(series: &[Series], log_y: bool, what: &str) -> Option<Chart> {
    let all = || series.iter().flat_map(|s| s.points.iter());
    let shown = |y: f64| y.is_finite() && (!log_y || y > 0.0);
    let lo = all()
        .flat_map(|p| [p.1, p.2])
        .filter(|&y| shown(y))
        .reduce(f64::min)?;
    let hi = all()
        .flat_map(|p| [p.1, p.3])
        .filter(|&y| shown(y))
        .reduce(f64::max)?;
    let (scale, unit) = report::throughput_unit(hi);
    let (y_lo, y_hi) = if log_y {
        (lo / scale / 1.6, hi / scale * 1.6)
    } else {
        (0.0, if hi > 0.0 { hi / scale * 1.08 } else { 1.0 })
    };
    let fit = |y: f64| {
        if y.is_finite() {
            (y / scale).max(y_lo)
        } else {
            y_lo
        }
    };
    Some(Chart {
        series: series
            .iter()
            .map(|s| Series {
                lock: s.lock.clone(),
                points: s
                    .points
                    .iter()
                    .map(|&(x, med, min, max)| (x, fit(med), fit(min), fit(max)))
                    .collect(),
            })
            .collect(),
        y_lo,
        y_hi,
        y_desc: format!("{what} ({unit}{})", if log_y { ", log scale" } else { "" }),
    })
}

pub(crate) const SIZE: (u32, u32) = (1100, 680);
pub(crate) const FONT: &str = "sans-serif";

/// Distinct on white and for most colour vision (the Tableau 10 set).
pub(crate) const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

/// The distinct parameter sets of a run's points of `bench`, in stored order.
pub fn param_sets<'a>(points: &'a [Point], bench: &str) -> Vec<&'a Value> {
    let mut sets: Vec<&Value> = Vec::new();
    for p in points.iter().filter(|p| p.bench == bench) {
        if !sets.contains(&&p.params) {
            sets.push(&p.params);
        }
    }
    sets
}

/// One lock's line: (threads, median, min, max) throughput, by threads.
pub(crate) struct Series {
    pub(crate) lock: String,
    pub(crate) points: Vec<(i32, f64, f64, f64)>,
}

/// One chart's lines: per lock or strategy, the median, minimum and maximum of
/// `metric` over the points `pick` keeps, at x = `x(point)`.
pub(crate) fn series(
    points: &[&Point],
    pick: impl Fn(&Point) -> bool,
    x: impl Fn(&Point) -> i32,
    metric: fn(&crate::core::results::Rep) -> f64,
) -> Vec<Series> {
    let mut out: Vec<Series> = Vec::new();
    for p in points.iter().filter(|p| pick(p) && !p.reps.is_empty()) {
        let (med, min, max) = p.stat(metric);
        if !med.is_finite() {
            continue;
        }
        let at = (x(p), med, min, max);
        match out.iter_mut().find(|s| s.lock == p.lock) {
            Some(s) => s.points.push(at),
            None => out.push(Series {
                lock: p.lock.clone(),
                points: vec![at],
            }),
        }
    }
    for s in &mut out {
        s.points.sort_by_key(|p| p.0);
    }
    out
}

pub(crate) type DrawResult<T> = std::result::Result<T, DrawingAreaErrorKind<std::io::Error>>;
pub(crate) type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

/// Draws an SVG of `size` (a white page, the `titles` of
/// [`draw_titles`], then `body` in the area below them) and writes it to
/// `out`; an error names run `run`.
pub(crate) fn write_svg(
    out: &Path,
    run: &str,
    size: (u32, u32),
    titles: &[String],
    body: impl FnOnce(&Area<'_>) -> DrawResult<()>,
) -> Result<()> {
    let svg = render_svg(run, size, titles, body)?;
    crate::core::files::write_whole("--out", out, "plot", svg.as_bytes())
}

/// The SVG document [`write_svg`] writes, as a string.
pub(crate) fn render_svg(
    run: &str,
    size: (u32, u32),
    titles: &[String],
    body: impl FnOnce(&Area<'_>) -> DrawResult<()>,
) -> Result<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        let drawn = (|| {
            root.fill(&WHITE)?;
            body(&draw_titles(&root, titles)?)?;
            root.present()
        })();
        drawn.map_err(|e| LabError::input(format!("cannot draw the plot of run {run}: {e}")))?;
    }
    Ok(svg)
}

/// A chart builder on `area` with the margins and label areas every
/// chart here has.
pub(crate) fn chart_builder<'a, 'b, 'c>(
    area: &'a Area<'c>,
) -> ChartBuilder<'a, 'b, SVGBackend<'c>> {
    let mut b = ChartBuilder::on(area);
    b.margin_left(10)
        .margin_right(20)
        .margin_bottom(10)
        .x_label_area_size(50)
        .y_label_area_size(80);
    b
}

/// The mesh of a chart of counts (cores, threads) against rates: light
/// grid lines, the axis descriptions, the counts as they are on x and
/// [`tick`] labels on y.
pub(crate) fn draw_mesh<X, Y>(
    chart: &mut ChartContext<'_, SVGBackend<'_>, Cartesian2d<X, Y>>,
    x_desc: &str,
    y_desc: &str,
) -> DrawResult<()>
where
    X: Ranged<ValueType = i32> + ValueFormatter<i32>,
    Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    draw_labelled_mesh(chart, x_desc, y_desc, None, &|t| format!("{t}"))
}

/// [`draw_mesh`] with `x_label` naming the ticks on x (at most
/// `x_ticks` of them, when given).
pub(crate) fn draw_labelled_mesh<X, Y>(
    chart: &mut ChartContext<'_, SVGBackend<'_>, Cartesian2d<X, Y>>,
    x_desc: &str,
    y_desc: &str,
    x_ticks: Option<usize>,
    x_label: &dyn Fn(&i32) -> String,
) -> DrawResult<()>
where
    X: Ranged<ValueType = i32> + ValueFormatter<i32>,
    Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    let mut mesh = chart.configure_mesh();
    if let Some(n) = x_ticks {
        mesh.x_labels(n);
    }
    mesh.x_desc(x_desc)
        .y_desc(y_desc)
        .axis_desc_style((FONT, 18))
        .label_style((FONT, 15))
        .x_label_formatter(x_label)
        .y_label_formatter(&|v| tick(*v))
        .y_max_light_lines(1)
        .light_line_style(RGBColor(240, 240, 240))
        .bold_line_style(RGBColor(215, 215, 215))
        .draw()
}

/// CPU, cores, revision and start time, leaving out what is not known.
pub(crate) fn machine_line(meta: &RunMeta) -> String {
    let m = &meta.machine;
    let mut parts = Vec::new();
    if !m.cpu_model.is_empty() {
        parts.push(m.cpu_model.clone());
    }
    if m.cores > 0 {
        parts.push(format!("{} cores", m.cores));
    }
    if !m.git_rev.is_empty() {
        parts.push(format!("git {}", m.git_rev));
    }
    parts.push(format!("started {}", meta.started));
    parts.join(", ")
}

pub(crate) fn param_text(params: &Value) -> String {
    match params {
        Value::Object(map) if !map.is_empty() => map
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => format!("{k}={s}"),
                other => format!("{k}={other}"),
            })
            .collect::<Vec<_>>()
            .join("  "),
        Value::Object(_) | Value::Null => "no parameters".to_string(),
        other => other.to_string(),
    }
}

/// Draws the title lines and returns the area below them.
pub(crate) fn draw_titles<'a>(root: &Area<'a>, lines: &[String]) -> DrawResult<Area<'a>> {
    let sizes = [22, 16, 14];
    let mut y = 12;
    for (i, line) in lines.iter().enumerate() {
        let size = sizes[i.min(sizes.len() - 1)];
        let color = if i == 0 { BLACK } else { RGBColor(70, 70, 70) };
        root.draw_text(line, &(FONT, size).into_font().color(&color), (20, y))?;
        y += size + 8;
    }
    Ok(root.margin(y + 4, 0, 0, 0))
}

/// What a chart draws besides its series: vertical marks and a reference
/// line.
#[derive(Default)]
pub(crate) struct Decor {
    /// Dashed vertical lines, each labelled at its top.
    pub(crate) marks: Vec<Mark>,
    /// A dotted grey line without whiskers or markers (an envelope of the
    /// series, say); its `lock` names it in the legend.
    pub(crate) reference: Option<Series>,
}

/// A dashed vertical line at `x`, in the x axis's units: between two whole
/// values it sits where it falls between them.
pub(crate) struct Mark {
    pub(crate) x: f64,
    pub(crate) label: String,
    pub(crate) color: RGBColor,
}

/// The colour of a mark of the machine (its core count).
pub(crate) const MACHINE_MARK: RGBColor = RGBColor(178, 34, 34);
/// The colour of a reference line and of the marks drawn on it.
pub(crate) const REFERENCE: RGBColor = RGBColor(85, 85, 85);

/// Draws the mesh, `decor` and the series (whiskers, median lines,
/// markers) of one chart on `area`.
pub(crate) fn draw_chart<Y>(
    area: &Area<'_>,
    x: impl AsRangedCoord<Value = i32, CoordDescType: ValueFormatter<i32>>,
    y: Y,
    series: &[Series],
    x_desc: &str,
    y_desc: &str,
    decor: &Decor,
) -> DrawResult<()>
where
    Y: AsRangedCoord<Value = f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    let mut chart = chart_builder(area).build_cartesian_2d(x, y)?;
    draw_mesh(&mut chart, x_desc, y_desc)?;
    draw_marks(&mut chart, &decor.marks)?;
    if let Some(r) = &decor.reference {
        chart.draw_series(DashedLineSeries::new(
            r.points.iter().map(|&(x, med, _, _)| (x, med)),
            3,
            5,
            REFERENCE.stroke_width(3),
        ))?;
    }

    let n = series.len() as i32;
    for (i, s) in series.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let line = color.stroke_width(2);
        let whisker = color.mix(0.85).stroke_width(2);
        // Whiskers first, so lines and markers draw over them, each lock's
        // set a few pixels aside so that overlapping ranges stay readable.
        let step = if n > 1 { (24 / (n - 1)).clamp(1, 4) } else { 0 };
        let dx = (2 * i as i32 - (n - 1)) * step / 2;
        for &(t, _, min, max) in &s.points {
            let (_, y_min) = chart.backend_coord(&(t, min));
            let (_, y_max) = chart.backend_coord(&(t, max));
            let h = y_max - y_min;
            if h.abs() < 2 {
                continue; // no visible spread: a bare cap would look like a tick
            }
            chart.draw_series(std::iter::once(
                EmptyElement::at((t, min))
                    + PathElement::new(vec![(dx, 0), (dx, h)], whisker)
                    + PathElement::new(vec![(dx - 4, 0), (dx + 4, 0)], whisker)
                    + PathElement::new(vec![(dx - 4, h), (dx + 4, h)], whisker),
            ))?;
        }
        chart.draw_series(LineSeries::new(
            s.points.iter().map(|&(t, med, _, _)| (t, med)),
            line,
        ))?;
        let shape = marker_shape(i);
        chart.draw_series(s.points.iter().map(|&(t, med, _, _)| {
            EmptyElement::at((t, med)) + Polygon::new(shape.clone(), color.filled())
        }))?;
    }
    Ok(())
}

/// Draws chart `c` on `area` with its legend (titled `legend_title`,
/// `legend_width` pixels) to the right: x an integer axis ticked at the
/// values measured with `pad` of room each side, y logarithmic if `log_y`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn draw_chart_and_legend(
    area: &Area<'_>,
    c: &Chart,
    pad: i32,
    x_desc: &str,
    legend_title: &str,
    legend_width: u32,
    log_y: bool,
    decor: &Decor,
) -> DrawResult<()> {
    let xs = c.xs();
    let (Some(&x0), Some(&x1)) = (xs.first(), xs.last()) else {
        return Ok(());
    };
    let x = ((x0 - pad)..(x1 + pad)).with_key_points(xs);
    let (width, _) = area.dim_in_pixel();
    let (chart_area, legend) = area.split_horizontally(width.saturating_sub(legend_width));
    if log_y {
        let y = (c.y_lo..c.y_hi).log_scale();
        draw_chart(&chart_area, x, y, &c.series, x_desc, &c.y_desc, decor)?;
    } else {
        let y = c.y_lo..c.y_hi;
        draw_chart(&chart_area, x, y, &c.series, x_desc, &c.y_desc, decor)?;
    }
    draw_legend(&legend, legend_title, &c.series, decor)
}

/// Draws `marks` on `chart`, over its whole height; labels stack
/// downwards from the top, to the right of their line, or to its left in
/// the right third of the chart.
fn draw_marks<Y>(
    chart: &mut ChartContext<'_, SVGBackend<'_>, Cartesian2d<impl Ranged<ValueType = i32>, Y>>,
    marks: &[Mark],
) -> DrawResult<()>
where
    Y: Ranged<ValueType = f64>,
{
    let (y_lo, y_hi) = {
        let r = chart.y_range();
        (r.start, r.end)
    };
    let x_range = chart.x_range();
    let (width, _) = chart.plotting_area().dim_in_pixel();
    let (left, _) = chart.backend_coord(&(x_range.start, y_lo));
    for (k, m) in marks.iter().enumerate() {
        let x0 = m.x.floor() as i32;
        if !(f64::from(x_range.start)..=f64::from(x_range.end)).contains(&m.x) {
            continue;
        }
        let (px0, bottom) = chart.backend_coord(&(x0, y_lo));
        let (px1, top) = chart.backend_coord(&(x0.saturating_add(1), y_hi));
        let dx = (f64::from(px1 - px0) * (m.x - f64::from(x0))).round() as i32;
        let height = bottom - top;
        let style = m.color.stroke_width(2);
        chart.draw_series((0..height / 10 + 1).map(|j| {
            let y0 = -10 * j;
            let y1 = (y0 - 6).max(-height);
            EmptyElement::at((x0, y_lo)) + PathElement::new(vec![(dx, y0), (dx, y1)], style)
        }))?;
        let right_third = (px0 + dx - left) as u32 > width * 2 / 3;
        let (pos, off) = if right_third {
            (Pos::new(HPos::Right, VPos::Top), -5)
        } else {
            (Pos::new(HPos::Left, VPos::Top), 5)
        };
        let font = (FONT, 14).into_font().color(&m.color).pos(pos);
        chart.draw_series(std::iter::once(
            EmptyElement::at((x0, y_lo))
                + Text::new(
                    m.label.clone(),
                    (dx + off, 4 - height + 16 * k as i32),
                    font,
                ),
        ))?;
    }
    Ok(())
}

/// The legend beside the chart, where it cannot cover data: the series,
/// then the reference line of `decor` if there is one.
pub(crate) fn draw_legend(
    area: &Area<'_>,
    title: &str,
    series: &[Series],
    decor: &Decor,
) -> DrawResult<()> {
    let style = (FONT, 16).into_font().color(&BLACK);
    area.draw_text(
        title,
        &(FONT, 16).into_font().color(&RGBColor(70, 70, 70)),
        (14, 12),
    )?;
    let row = |i: usize| 42 + 26 * i as i32;
    for (i, s) in series.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let y = row(i);
        area.draw(&PathElement::new(
            vec![(10, y), (44, y)],
            color.stroke_width(2),
        ))?;
        area.draw(&(EmptyElement::at((27, y)) + Polygon::new(marker_shape(i), color.filled())))?;
        area.draw_text(&s.lock, &style, (54, y - 8))?;
    }
    if let Some(r) = &decor.reference {
        let y = row(series.len());
        for x in (10..44).step_by(8) {
            area.draw(&PathElement::new(
                vec![(x, y), (x + 3, y)],
                REFERENCE.stroke_width(3),
            ))?;
        }
        area.draw_text(&r.lock, &style, (54, y - 8))?;
    }
    Ok(())
}

/// A marker shape per lock (cycled separately from the colours, so lines
/// stay apart in greyscale too): circle, triangle, square, diamond,
/// downward triangle. All are polygons in pixel offsets, one element type.
pub(crate) fn marker_shape(i: usize) -> Vec<(i32, i32)> {
    match (i + i / PALETTE.len()) % 5 {
        0 => (0..16)
            .map(|k| {
                let a = f64::from(k) * std::f64::consts::TAU / 16.0;
                (
                    (5.5 * a.cos()).round() as i32,
                    (5.5 * a.sin()).round() as i32,
                )
            })
            .collect(),
        1 => vec![(0, -7), (6, 5), (-6, 5)],
        2 => vec![(-5, -5), (5, -5), (5, 5), (-5, 5)],
        3 => vec![(0, -7), (7, 0), (0, 7), (-7, 0)],
        _ => vec![(0, 7), (6, -5), (-6, -5)],
    }
}

/// An axis tick label without float noise: 0.5, 10, 1.25, 2.5k.
pub(crate) fn tick(v: f64) -> String {
    if v == 0.0 {
        return "0".to_string();
    }
    let s = format!("{v:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "0" || s == "-0" {
        format!("{v:.1e}")
    } else {
        s.to_string()
    }
}
