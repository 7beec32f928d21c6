//! One figure per step along x, in the steps' order (revisions, say),
//! joined by a line, each with a whisker over its spread, and the steps
//! that changed beyond the noise drawn in red: [`steps_svg`].

use plotters::prelude::*;

use super::{chart_builder, draw_labelled_mesh, render_svg};
use crate::core::error::Result;

/// One step of a [`steps_svg`] chart, in the unit of the y axis.
#[derive(Debug, Clone)]
pub struct Step {
    /// What x says under it.
    pub label: String,
    /// The figure.
    pub value: f64,
    /// The whisker's ends (the least and most repetition, say).
    pub lo: f64,
    pub hi: f64,
    /// Drawn in red: the step changed the figure beyond the noise.
    pub marked: bool,
}

/// Line and marks in the lab's first series colour; a change in red.
const LINE: RGBColor = RGBColor(31, 119, 180);
const CHANGED: RGBColor = RGBColor(214, 39, 40);

/// The SVG of `steps` under `titles`, `size` pixels, with `x_desc` and
/// `y_desc` on the axes; y starts at 0, so that a change reads as the share
/// of the level it is. `None` when no step has a finite figure.
pub fn steps_svg(
    name: &str,
    titles: &[String],
    x_desc: &str,
    y_desc: &str,
    steps: &[Step],
    size: (u32, u32),
) -> Result<Option<String>> {
    let finite = |y: f64| y.is_finite() && y >= 0.0;
    let Some(hi) = steps
        .iter()
        .flat_map(|s| [s.value, s.hi])
        .filter(|&y| finite(y))
        .reduce(f64::max)
    else {
        return Ok(None);
    };
    let y_hi = if hi > 0.0 { hi * 1.12 } else { 1.0 };
    let n = steps.len() as i32;
    render_svg(name, size, titles, |area| {
        let mut chart = chart_builder(area).build_cartesian_2d(-1..n, 0.0..y_hi)?;
        let label = |i: &i32| {
            usize::try_from(*i)
                .ok()
                .and_then(|i| steps.get(i))
                .map_or(String::new(), |s| s.label.clone())
        };
        draw_labelled_mesh(&mut chart, x_desc, y_desc, Some(steps.len() + 2), &label)?;
        let at = |i: usize| i as i32;
        let shown: Vec<(i32, f64)> = steps
            .iter()
            .enumerate()
            .filter(|(_, s)| finite(s.value))
            .map(|(i, s)| (at(i), s.value))
            .collect();
        chart.draw_series(LineSeries::new(shown.iter().copied(), LINE.stroke_width(2)))?;
        chart.draw_series(
            steps
                .iter()
                .enumerate()
                .filter(|(_, s)| finite(s.lo) && finite(s.hi))
                .map(|(i, s)| {
                    let c = if s.marked { CHANGED } else { LINE };
                    PathElement::new(vec![(at(i), s.lo), (at(i), s.hi)], c.stroke_width(2))
                }),
        )?;
        chart.draw_series(
            steps
                .iter()
                .enumerate()
                .filter(|(_, s)| finite(s.value))
                .map(|(i, s)| {
                    let c = if s.marked { CHANGED } else { LINE };
                    Circle::new((at(i), s.value), if s.marked { 6 } else { 4 }, c.filled())
                }),
        )?;
        Ok(())
    })
    .map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(label: &str, value: f64, marked: bool) -> Step {
        Step {
            label: label.into(),
            value,
            lo: value * 0.95,
            hi: value * 1.05,
            marked,
        }
    }

    #[test]
    fn every_step_is_labelled_and_only_the_marked_one_is_red() {
        let steps = [
            step("abc1234", 3.1, false),
            step("def5678", 3.2, false),
            step("0badc0d", 2.5, true),
        ];
        let titles = ["a title".to_string()];
        let svg = steps_svg("t", &titles, "revision", "Mops/s", &steps, (900, 500))
            .unwrap()
            .expect("a chart");
        for s in &steps {
            assert!(svg.contains(&s.label), "no label {}", s.label);
        }
        let red = svg.matches("#D62728").count();
        // The marked step's whisker and mark, nothing else.
        assert_eq!(red, 2, "{svg}");
        assert_eq!(
            steps_svg(
                "t",
                &titles,
                "x",
                "y",
                &[step("a", f64::NAN, false)],
                (900, 500)
            )
            .unwrap(),
            None
        );
    }
}
