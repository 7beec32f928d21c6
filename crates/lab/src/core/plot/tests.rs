//! Known answers of the chart engine: a bar twice as long is twice the
//! time, a mark between two measured values sits between them in
//! proportion, and charts of parts of one run share its axes.

use serde_json::json;

use super::bars::bars_svg;
use super::threads::threads_svg;
use super::*;
use crate::core::results::{Machine, Point, Rep, RunMeta};

fn meta(cores: usize) -> RunMeta {
    RunMeta {
        id: Some(7),
        uuid: None,
        kind: "bench demo".into(),
        command: "locklab bench demo".into(),
        params: json!({}),
        machine: Machine {
            cores,
            ..Machine::default()
        },
        started: "2026-01-01T00:00:00Z".into(),
        finished: None,
        complete: true,
    }
}

/// A point of `lock` at `threads` whose three repetitions all took `ns`
/// per operation.
fn point(lock: &str, threads: u32, ns: f64) -> Point {
    Point {
        bench: "demo".into(),
        lock: lock.into(),
        threads,
        params: json!({}),
        reps: (0..3)
            .map(|i| Rep {
                ns_per_op: ns,
                throughput_ops_s: 1e9 / ns,
                ..Rep::one_thread(i, 1.0, 1.0, 1)
            })
            .collect(),
    }
}

/// The value of attribute `name` in the SVG element `tag`.
fn attr(tag: &str, name: &str) -> f64 {
    let at = tag.find(&format!(" {name}=\"")).expect("the attribute") + name.len() + 3;
    let rest = &tag[at..];
    rest[..rest.find('"').unwrap()].parse().unwrap()
}

/// The elements of `kind` (`<rect`, `<polyline`) in `svg` that contain `has`.
fn elements<'a>(svg: &'a str, kind: &str, has: &str) -> Vec<&'a str> {
    svg.split(kind)
        .skip(1)
        .map(|e| &e[..e.find('>').unwrap()])
        .filter(|e| e.contains(has))
        .collect()
}

#[test]
fn a_bar_is_as_long_as_its_time() {
    // One family (tas, ttas, backoff are spin locks), stored out of order.
    let points = [
        point("ttas", 1, 20.0),
        point("backoff", 1, 40.0),
        point("tas", 1, 10.0),
    ];
    let refs: Vec<&Point> = points.iter().collect();
    let svg = bars_svg(&meta(2), &refs, &["bars".into()], false, 900)
        .unwrap()
        .expect("a chart");
    // The bars are the filled rectangles of the family's colour.
    let bars = elements(&svg, "<rect", "fill=\"#1F77B4\"");
    assert_eq!(bars.len(), 3, "{bars:?}");
    let widths: Vec<f64> = bars.iter().map(|b| attr(b, "width")).collect();
    let ys: Vec<f64> = bars.iter().map(|b| attr(b, "y")).collect();
    // Fastest first, top to bottom.
    assert!(ys[0] < ys[1] && ys[1] < ys[2], "{ys:?}");
    // Twice the time, twice the length (to a pixel of rounding).
    assert!((widths[1] - 2.0 * widths[0]).abs() <= 2.0, "{widths:?}");
    assert!((widths[2] - 4.0 * widths[0]).abs() <= 3.0, "{widths:?}");
    // No time to draw: no chart.
    assert!(bars_svg(&meta(2), &[], &[], false, 900).unwrap().is_none());
}

#[test]
fn a_mark_between_two_counts_sits_between_them_in_proportion() {
    let marks = |xs: &[f64]| Decor {
        marks: xs
            .iter()
            .zip([RGBColor(1, 0, 0), RGBColor(2, 0, 0), RGBColor(3, 0, 0)])
            .map(|(&x, color)| Mark {
                x,
                label: format!("at {x}"),
                color,
            })
            .collect(),
        reference: None,
    };
    let series = [Series {
        lock: "a".into(),
        points: vec![(1, 1.0, 1.0, 1.0), (8, 2.0, 2.0, 2.0)],
    }];
    let decor = marks(&[2.0, 3.5, 5.0]);
    let svg = render_svg("7", (800, 500), &[], |area| {
        draw_chart(
            area,
            (0..9).with_key_points(vec![1, 2, 4, 8]),
            0.0..3.0,
            &series,
            "x",
            "y",
            &decor,
        )
    })
    .unwrap();
    let x_of = |colour: &str| {
        let dashes = elements(&svg, "<polyline", &format!("stroke=\"{colour}\""));
        assert!(dashes.len() > 5, "the mark {colour} is dashed: {dashes:?}");
        let pts = dashes[0].split("points=\"").nth(1).unwrap();
        let x: f64 = pts.split(',').next().unwrap().parse().unwrap();
        x
    };
    let (a, b, c) = (x_of("#010000"), x_of("#020000"), x_of("#030000"));
    // 3.5 is half way from 2 to 5 on a linear axis.
    assert!(a < b && b < c, "{a} {b} {c}");
    assert!((b - (a + c) / 2.0).abs() <= 1.0, "{a} {b} {c}");
}

#[test]
fn charts_of_parts_of_a_run_share_its_axis() {
    // Two families: tas (spin) up to 100 Mops/s, mcs (queue) at 1 Mops/s.
    let points = [
        point("tas", 1, 10.0),
        point("tas", 2, 20.0),
        point("mcs", 1, 1000.0),
        point("mcs", 2, 1000.0),
    ];
    let all: Vec<&Point> = points.iter().collect();
    let tas: Vec<&Point> = all.iter().copied().filter(|p| p.lock == "tas").collect();
    let mcs: Vec<&Point> = all.iter().copied().filter(|p| p.lock == "mcs").collect();
    let draw = |of: &[&Point]| {
        threads_svg(&meta(2), of, &all, &[], true, (600, 400))
            .unwrap()
            .expect("a chart")
    };
    // Tick labels are the text of the axes: the same in both charts.
    let ticks = |svg: &str| -> Vec<String> {
        svg.lines()
            .map(str::trim)
            .filter(|l| l.parse::<f64>().is_ok())
            .map(str::to_string)
            .collect()
    };
    let (a, b) = (draw(&tas), draw(&mcs));
    assert_eq!(ticks(&a), ticks(&b));
    assert!(a.contains("\ntas\n") && !a.contains("\nmcs\n"));
    assert!(b.contains("\nmcs\n") && !b.contains("\ntas\n"));
    // Alone, mcs's axis would span its own values only.
    assert_ne!(ticks(&b), ticks(&draw_alone(&mcs)));
}

fn draw_alone(of: &[&Point]) -> String {
    threads_svg(&meta(2), of, of, &[], true, (600, 400))
        .unwrap()
        .expect("a chart")
}
