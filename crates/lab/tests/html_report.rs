//! `locklab report`: a small real `bench spin` and `bench hash` run made
//! into one HTML file, checked to be self-contained (nothing fetched, no
//! script), escaped, ordered (verdicts first) and charted (one chart per
//! lock family, the core count, the hash envelope); then, where Chromium
//! is installed, rendered headless to a PNG that is decoded and checked not blank
//! and coloured by the charts.
//!
//! Without Chromium the rendering is skipped with a note, unless
//! `LOCKLAB_REQUIRE_PROGRAMS=1` (as `.ci/run` sets), where it fails.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn lab(db: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_locklab"))
        .arg("--db")
        .arg(db)
        .arg("-q")
        .args(args)
        .output()
        .expect("locklab runs")
}

fn ok(o: &Output) {
    assert!(
        o.status.success(),
        "locklab failed: {}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Two small runs (spin: 4 locks of 4 families at 1, 2, 4 threads; hash:
/// a lock-based and an RCU strategy at 2 update fractions) in a database
/// whose name needs escaping in HTML; the report of both.
fn report(dir: &Path) -> (PathBuf, String) {
    let db = dir.join("a<b>&'x.db");
    ok(&lab(
        &db,
        &[
            "bench",
            "spin",
            "--locks",
            "tas,ticket,mcs,mutex",
            "--threads",
            "1,2,4",
            "--reps",
            "2",
            "--secs",
            "0.02",
        ],
    ));
    ok(&lab(
        &db,
        &[
            "bench",
            "hash",
            "--strategies",
            "bucket-rw,global-spin,rcu",
            "--threads",
            "2",
            "--update-pct",
            "0,50,100",
            "--reps",
            "2",
            "--secs",
            "0.02",
        ],
    ));
    let out = dir.join("report.html");
    let o = lab(&db, &["report", "1", "2", "--out", out.to_str().unwrap()]);
    ok(&o);
    let html = std::fs::read_to_string(&out).expect("the report was written");
    (out, html)
}

#[test]
fn report_is_self_contained_ordered_escaped_and_rendered() {
    let dir = tempfile::tempdir().unwrap();
    let (out, html) = report(dir.path());

    // Self-contained: nothing to fetch, no script.
    assert!(html.starts_with("<!DOCTYPE html>"));
    for bad in [
        "src=\"http",
        "href=\"http",
        "src='http",
        "href='http",
        "<script",
        "<link",
        "@import",
        "url(",
    ] {
        assert!(!html.contains(bad), "the report holds {bad}");
    }
    // Escaped: the database name, with markup characters, is in the
    // command only as text (shell-quoted: '…/a<b>&'\''x.db').
    assert!(
        html.contains("a&lt;b&gt;&amp;&#39;\\&#39;&#39;x.db&#39;"),
        "the command is escaped"
    );
    assert!(!html.contains("a<b>"), "raw markup from a value");

    // Verdicts first, then each run's facts, command and studies.
    let at = |s: &str| {
        html.find(s)
            .unwrap_or_else(|| panic!("the report has no {s}"))
    };
    assert!(at("id=\"verdicts\"") < at("Study: spin"));
    assert!(at("Study: spin") < at("Study: hash"));
    for fact in [
        "CPU",
        "cores",
        "TSC",
        "kernel",
        "rustc",
        "git revision",
        "host",
    ] {
        assert!(html.contains(&format!("<dt>{fact}</dt>")), "no {fact}");
    }
    assert!(html.contains("bench spin --locks tas,ticket,mcs,mutex"));

    // Spin: one chart per family of the four locks (drawn by the chart
    // engine `locklab plot` uses), each with its lock in a legend, and the
    // core count marked.
    let spin = &html[at("Study: spin")..at("Study: hash")];
    for family in [
        "spin (1 lock)",
        "ticket (1 lock)",
        "queue (1 lock)",
        "blocking (1 lock)",
    ] {
        assert!(spin.contains(family), "no panel {family}");
    }
    assert_eq!(spin.matches("class=\"panel\"").count(), 4);
    assert_eq!(spin.matches("<svg").count(), 4);
    // Its text is a line of its own in the engine's SVG.
    let text_line = |part: &str, t: &str| part.lines().any(|l| l.trim() == t);
    for lock in ["tas", "ticket", "mcs", "mutex"] {
        assert!(text_line(spin, lock), "{lock} has no legend entry");
    }
    // The axis spans 0 to 5 threads (one each side of 1 and 4).
    let cores = std::thread::available_parallelism().unwrap().get();
    let mark = format!("{cores} core{}", if cores == 1 { "" } else { "s" });
    assert_eq!(
        text_line(spin, &mark),
        cores <= 5,
        "the core count is marked"
    );
    // Hash: the study's own chart, throughput against the update fraction
    // with the best lock-based envelope.
    let hash = &html[at("Study: hash")..];
    assert!(text_line(hash, "updates (% of operations)"));
    assert!(text_line(hash, "best lock-based"));
    for s in ["bucket-rw", "global-spin", "rcu"] {
        assert!(
            hash.lines().any(|l| l.trim().starts_with(s)),
            "{s} has no legend entry"
        );
    }

    render(&out);
}

#[test]
fn report_refuses_the_database_as_out() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    ok(&lab(
        &db,
        &[
            "bench",
            "uncontended",
            "--locks",
            "tas",
            "--reps",
            "1",
            "--secs",
            "0.01",
        ],
    ));
    let o = lab(&db, &["report", "--out", db.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--out"));
    // No run named: the newest, written.
    let out = dir.path().join("r.html");
    ok(&lab(&db, &["report", "--out", out.to_str().unwrap()]));
    let html = std::fs::read_to_string(out).unwrap();
    assert!(html.contains("Study: uncontended") && html.contains("floor"));
}

/// Chromium's name on PATH, if any.
fn chromium() -> Option<String> {
    ["chromium", "chromium-browser"]
        .into_iter()
        .find(|n| {
            Command::new("sh")
                .args(["-c", &format!("command -v {n}")])
                .output()
                .is_ok_and(|o| o.status.success())
        })
        .map(str::to_string)
}

/// Renders `page` headless and checks the screenshot.
fn render(page: &Path) {
    let Some(browser) = chromium() else {
        assert!(
            std::env::var_os("LOCKLAB_REQUIRE_PROGRAMS").is_none(),
            "LOCKLAB_REQUIRE_PROGRAMS is set and chromium is not installed"
        );
        eprintln!("note: chromium is not installed; the report was not rendered (apt-get install chromium)");
        return;
    };
    let png = page.with_extension("png");
    let mut child = Command::new(&browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            &format!("--screenshot={}", png.display()),
            "--window-size=1200,3000",
        ])
        .arg(format!("file://{}", page.display()))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("chromium starts");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if child.try_wait().expect("chromium waited for").is_some() {
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish in 60 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let bytes = std::fs::read(&png).expect("chromium wrote the screenshot");
    let img = decode_png(&bytes);
    assert_eq!((img.width, img.height), (1200, 3000));
    let px = |i: usize| &img.rgb[3 * i..3 * i + 3];
    let n = img.width * img.height;
    let not_white = (0..n).filter(|&i| px(i).iter().any(|&c| c < 235)).count();
    // Coloured: the lines, markers and dashes of the charts (text is grey).
    let coloured = (0..n)
        .filter(|&i| {
            let p = px(i);
            let (lo, hi) = (p.iter().min().unwrap(), p.iter().max().unwrap());
            hi - lo > 80
        })
        .count();
    assert!(
        not_white * 50 > n,
        "the page looks blank: {not_white} of {n} pixels are not white"
    );
    assert!(
        coloured > 2000,
        "the page has no charts: {coloured} coloured pixels"
    );
    // The charts sit in the page's top part as well as lower down.
    let top_coloured = (0..n / 2)
        .filter(|&i| {
            let p = px(i);
            p.iter().max().unwrap() - p.iter().min().unwrap() > 80
        })
        .count();
    assert!(top_coloured > 500, "no chart in the upper half");
    eprintln!(
        "rendered {} ({not_white} of {n} pixels not white, {coloured} coloured)",
        png.display()
    );
}

/// A decoded image: 8-bit RGB.
struct Image {
    width: usize,
    height: usize,
    rgb: Vec<u8>,
}

/// Decodes an 8-bit RGB or RGBA PNG (what Chromium writes) into RGB.
fn decode_png(b: &[u8]) -> Image {
    let mut reader = png::Decoder::new(std::io::Cursor::new(b))
        .read_info()
        .expect("the screenshot is a PNG");
    let mut buf = vec![0; reader.output_buffer_size().expect("a PNG of sane size")];
    let info = reader.next_frame(&mut buf).expect("the PNG decodes");
    assert_eq!(info.bit_depth, png::BitDepth::Eight, "an 8-bit PNG");
    let channels = match info.color_type {
        png::ColorType::Rgb => 3,
        png::ColorType::Rgba => 4,
        other => panic!("an RGB or RGBA PNG, not {other:?}"),
    };
    let (width, height) = (info.width as usize, info.height as usize);
    let mut rgb = Vec::with_capacity(width * height * 3);
    for y in 0..height {
        let row = &buf[y * info.line_size..][..width * channels];
        for px in row.chunks(channels) {
            rgb.extend_from_slice(&px[..3]);
        }
    }
    Image { width, height, rgb }
}
