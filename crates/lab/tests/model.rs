//! `locklab model` as a user meets it: predictions and fits in text and
//! JSON, checked against closed forms computed here; bad input gets one
//! line and exit code 2; nothing touches the results database.

use serde_json::Value;
mod common;

use common::{assert_bad_input, erlang_x, rel, stderr, stdout};
use std::path::{Path, PathBuf};
use std::process::Output;

/// Runs `locklab --db <dir>/t.db ARGS`.
fn locklab(dir: &Path, args: &[&str]) -> Output {
    common::locklab(&dir.join("t.db"), args)
}

fn ok_json(o: &Output) -> Value {
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(o));
    serde_json::from_str(&stdout(o)).expect("JSON on stdout")
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// A CSV of seed 002's shape: S = 358 cycles on one socket (1–14 cores),
/// 613 beyond it (15–28), Z = 2000, as IPCs per second at 2 GHz.
fn seed_002_csv(dir: &Path) -> PathBuf {
    let mut text = String::from("cores,throughput\n");
    for n in 1..=28 {
        let s = if n <= 14 { 358.0 } else { 613.0 };
        text.push_str(&format!("{n},{:e}\n", erlang_x(s, 2000.0, n) * 2e9));
    }
    let path = dir.join("pingpong.csv");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn predict_prints_the_table_knee_and_cores_95() {
    let d = tempfile::tempdir().unwrap();
    let o = locklab(
        d.path(),
        &[
            "model",
            "predict",
            "--service",
            "358",
            "--delay",
            "2000",
            "--cores",
            "1-16",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    let out = stdout(&o);
    // knee = (358 + 2000)/358 = 6.587 to four digits; X(1) = 1/2358.
    assert!(out.contains("knee N* = (S+Z)/S = 6.587 cores"), "{out}");
    assert!(out.contains("0.0004241"), "{out}");
    // cores_95: the first N whose X reaches 95 % of 1/S.
    let c95 = (1..)
        .find(|&n| erlang_x(358.0, 2000.0, n) * 358.0 >= 0.95)
        .unwrap();
    assert!(
        out.contains(&format!("from {c95} cores (cores_95)")),
        "{out}"
    );
    let rows: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.contains("CORES"))
        .skip(1)
        .collect();
    assert_eq!(rows.len(), 16, "{out}");
    assert!(rows[15].trim_start().starts_with("16 "));
    assert!(
        !d.path().join("t.db").exists(),
        "model must not touch the db"
    );
}

/// `--model repairman-const`: one core goes round in S + Z; two cores'
/// throughput is the chain at releases solved by hand here; the curve lies
/// above the exponential repairman's and under the bounds; its own
/// cores_95; more cores than it solves, one line and exit 2.
#[test]
fn predict_with_a_constant_service_time() {
    let d = tempfile::tempdir().unwrap();
    let args = |model: &'static str, cores: &'static str| {
        vec![
            "--json",
            "model",
            "predict",
            "--service",
            "1",
            "--delay",
            "2",
            "--cores",
            cores,
            "--model",
            model,
        ]
    };
    let v = ok_json(&locklab(d.path(), &args("repairman-const", "1-8")));
    assert_eq!(v["model"], "repairman-const");
    let x = |v: &Value, i: usize| f(&v["points"][i]["throughput"]);
    assert!(rel(x(&v, 0), 1.0 / 3.0) < 1e-12, "{v}");
    // Two cores: from either state after a release the other core comes
    // during the next service with probability q = 1 − e^(−S/Z), so
    // π_1/π_0 = q/(1 − q), and X = 1/(S + π_0·Z/2).
    let q = 1.0 - (-0.5f64).exp();
    let pi0 = 1.0 - q;
    assert!(rel(x(&v, 1), 1.0 / (1.0 + pi0)) < 1e-12, "{v}");
    let exp = ok_json(&locklab(d.path(), &args("repairman", "1-8")));
    let mut first_95 = None;
    for i in 0..8 {
        let n = (i + 1) as f64;
        assert!(x(&v, i) >= x(&exp, i) * (1.0 - 1e-12), "{i}: {v} {exp}");
        assert!(x(&v, i) <= (n / 3.0).min(1.0) * (1.0 + 1e-12), "{i}: {v}");
        if first_95.is_none() && x(&v, i) >= 0.95 {
            first_95 = Some(i as u64 + 1);
        }
    }
    assert_eq!(v["cores_95"].as_u64(), first_95, "{v}");
    let o = locklab(d.path(), &args("repairman-const", "10001"));
    assert_bad_input(&o, "allowed 1 to 10000");
}

#[test]
fn predict_json_has_the_promised_fields_and_identities() {
    let d = tempfile::tempdir().unwrap();
    let (s, z) = (323.0, 1000.0);
    let v = ok_json(&locklab(
        d.path(),
        &[
            "--json",
            "model",
            "predict",
            "--service",
            "323",
            "--delay",
            "1000",
            "--cores",
            "1-4,8,2",
        ],
    ));
    assert_eq!(f(&v["service"]), s);
    assert_eq!(f(&v["delay"]), z);
    assert!(rel(f(&v["knee"]), (s + z) / s) < 1e-12);
    let c95 = v["cores_95"].as_u64().unwrap() as u32;
    assert!(erlang_x(s, z, c95) * s >= 0.95);
    assert!(erlang_x(s, z, c95 - 1) * s < 0.95);
    let points = v["points"].as_array().unwrap();
    let cores: Vec<u64> = points
        .iter()
        .map(|p| p["cores"].as_u64().unwrap())
        .collect();
    assert_eq!(cores, [1, 2, 3, 4, 8]);
    for p in points {
        let n = p["cores"].as_u64().unwrap() as u32;
        let x = f(&p["throughput"]);
        assert!(rel(x, erlang_x(s, z, n)) < 1e-9, "{p}");
        assert!(rel(f(&p["utilization"]), x * s) < 1e-9, "{p}");
        // Little's law for the finite source: L + X·Z = N.
        assert!(
            rel(f(&p["queue_length"]) + x * z, f64::from(n)) < 1e-9,
            "{p}"
        );
    }
    assert!(rel(f(&points[0]["throughput"]), 1.0 / (s + z)) < 1e-12);
}

#[test]
fn predict_with_the_ticket_model_peaks_then_falls() {
    let d = tempfile::tempdir().unwrap();
    let args = |c: &'static str| {
        [
            "--json",
            "model",
            "predict",
            "--service",
            "358",
            "--delay",
            "2000",
            "--cores",
            "1-40",
            "--model",
            "ticket",
            "--handoff",
            c,
        ]
    };
    let v = ok_json(&locklab(d.path(), &args("50")));
    assert_eq!(v["model"], "ticket");
    assert_eq!(f(&v["handoff"]), 50.0);
    let peak_n = v["peak"]["cores"].as_u64().unwrap();
    let peak_x = f(&v["peak"]["throughput"]);
    let xs: Vec<f64> = v["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| f(&p["throughput"]))
        .collect();
    assert!(peak_n > 1 && peak_n < 40);
    assert_eq!(xs[peak_n as usize - 1], peak_x);
    assert!(xs.iter().all(|&x| x <= peak_x));
    assert!(xs[39] < 0.8 * peak_x, "no collapse: {xs:?}");
    // C = 0 is the repairman.
    let v0 = ok_json(&locklab(d.path(), &args("0")));
    for p in v0["points"].as_array().unwrap() {
        let n = p["cores"].as_u64().unwrap() as u32;
        assert!(rel(f(&p["throughput"]), erlang_x(358.0, 2000.0, n)) < 1e-9);
    }
    let text = stdout(&locklab(d.path(), &args("50")[1..]));
    assert!(text.contains(&format!("at {peak_n} cores")), "{text}");
}

#[test]
fn fit_recovers_seed_002_from_the_first_socket() {
    let d = tempfile::tempdir().unwrap();
    let csv = seed_002_csv(d.path());
    let csv = csv.to_str().unwrap();
    let v = ok_json(&locklab(
        d.path(),
        &["--json", "model", "fit", "--csv", csv, "--first", "14"],
    ));
    // Per second at 2 GHz: S = 358 cycles = 179 ns.
    assert!(rel(f(&v["service"]), 358.0 / 2e9) < 1e-6, "{v}");
    assert!(rel(f(&v["delay"]), 2000.0 / 2e9) < 1e-6, "{v}");
    assert!(f(&v["r2"]) > 1.0 - 1e-9);
    assert_eq!(v["first"], 14);
    assert_eq!(v["parameters"], 2);
    assert_eq!(v["points"].as_array().unwrap().len(), 14);
    let residuals = v["residuals"].as_array().unwrap();
    assert_eq!(residuals.len(), 14);
    for (p, r) in v["points"].as_array().unwrap().iter().zip(residuals) {
        assert_eq!(f(&p["residual"]), f(r));
        // Measured minus model (JSON numbers may read back an ulp off).
        let y = f(&p["throughput"]);
        assert!((y - f(&p["model"]) - f(r)).abs() <= 1e-12 * y, "{p}");
    }
    // All 28 points mix two service times: a worse fit, a wrong S.
    let all = ok_json(&locklab(
        d.path(),
        &["--json", "model", "fit", "--csv", csv],
    ));
    assert!(f(&all["r2"]) < 0.9);
    assert!(rel(f(&all["service"]), 358.0 / 2e9) > 0.1);
    assert!(all["first"].is_null());
    // Text: the values and one row per point.
    let o = locklab(d.path(), &["model", "fit", "--csv", csv, "--first", "14"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("the first 14 of 28 core counts"), "{out}");
    assert!(out.contains("S = 1.79000e-7"), "{out}");
    assert!(out.contains("R² = 1.000000"), "{out}");
    let rows = out
        .lines()
        .skip_while(|l| !l.contains("MEASURED"))
        .skip(1)
        .count();
    assert_eq!(rows, 14, "{out}");
    assert!(!d.path().join("t.db").exists());
}

#[test]
fn fit_with_a_fixed_delay_fits_service_alone() {
    let d = tempfile::tempdir().unwrap();
    let csv = seed_002_csv(d.path());
    let v = ok_json(&locklab(
        d.path(),
        &[
            "--json",
            "model",
            "fit",
            "--csv",
            csv.to_str().unwrap(),
            "--first",
            "14",
            "--delay",
            "1e-6",
        ],
    ));
    assert_eq!(v["parameters"], 1);
    assert_eq!(v["delay_fixed"], true);
    assert_eq!(f(&v["delay"]), 1e-6);
    assert!(rel(f(&v["service"]), 358.0 / 2e9) < 1e-6, "{v}");
}

#[test]
fn csv_is_lenient_with_headers_comments_and_line_ends_strict_with_data() {
    let d = tempfile::tempdir().unwrap();
    let good = d.path().join("good.csv");
    let mut text = String::from("\u{feff}# ping-pong, S = 2, Z = 6\r\nN, X\r\n\r\n");
    for n in [4, 1, 2, 8, 3, 6] {
        text.push_str(&format!(" {n} , {:e} \r\n", erlang_x(2.0, 6.0, n)));
    }
    std::fs::write(&good, text).unwrap();
    let v = ok_json(&locklab(
        d.path(),
        &["--json", "model", "fit", "--csv", good.to_str().unwrap()],
    ));
    assert!(rel(f(&v["service"]), 2.0) < 1e-6, "{v}");
    assert!(rel(f(&v["delay"]), 6.0) < 1e-6, "{v}");
    let cores: Vec<u64> = v["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["cores"].as_u64().unwrap())
        .collect();
    assert_eq!(cores, [1, 2, 3, 4, 6, 8], "points come back sorted");
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    let write = |name: &str, text: &str| {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p.to_str().unwrap().to_string()
    };
    let good = seed_002_csv(dir).to_str().unwrap().to_string();
    let bad_field = write("field.csv", "cores,throughput\n1,0.5\n2,abc\n");
    let short = write("short.csv", "1,0.5\n2\n");
    let extra = write("extra.csv", "1,0.5,7\n");
    let empty = write("empty.csv", "");
    let header_only = write("header.csv", "cores,throughput\n\n");
    let zero_cores = write("zero.csv", "1,0.5\n0,0.7\n");
    let half_core = write("half.csv", "1,0.5\n1.5,0.7\n");
    let negative = write("neg.csv", "1,0.5\n2,-1\n");
    let zero_x = write("zerox.csv", "1,0.5\n2,0\n");
    let one_count = write("one.csv", "4,0.5\n4,0.6\n");
    let missing = dir.join("nosuch.csv").to_str().unwrap().to_string();
    let predict = |extra: &[&'static str]| {
        let mut v = vec!["model", "predict"];
        v.extend_from_slice(extra);
        v
    };
    let cases: Vec<(Vec<&str>, String)> = vec![
        (
            predict(&["--service", "0", "--delay", "1", "--cores", "1"]),
            "service time '0' is out of range: allowed a finite number greater than 0".into(),
        ),
        (
            predict(&["--service", "-358", "--delay", "1", "--cores", "1"]),
            "'-358'".into(),
        ),
        (
            predict(&["--service", "inf", "--delay", "1", "--cores", "1"]),
            "'inf'".into(),
        ),
        (
            predict(&["--service", "1", "--delay", "-5", "--cores", "1"]),
            "delay '-5' is out of range: allowed a finite number of 0 or more".into(),
        ),
        (
            predict(&["--service", "1", "--delay", "soon", "--cores", "1"]),
            "'soon' is not a delay".into(),
        ),
        (
            predict(&["--service", "1", "--delay", "1", "--cores", ""]),
            "an empty list of cores".into(),
        ),
        (
            predict(&["--service", "1", "--delay", "1", "--cores", "0"]),
            "0 cores is out of range: allowed 1 to 10000".into(),
        ),
        (
            predict(&["--service", "1", "--delay", "1", "--cores", "1,0,2"]),
            "0 cores is out of range".into(),
        ),
        (
            predict(&["--service", "1", "--delay", "1", "--cores", "16-1"]),
            "'16-1' is a range from high to low".into(),
        ),
        (
            predict(&["--service", "1", "--delay", "1", "--cores", "20000"]),
            "20000 cores is out of range".into(),
        ),
        (
            predict(&["--service", "1", "--delay", "1"]),
            "--cores <LIST>".into(),
        ),
        (
            predict(&[
                "--service",
                "1",
                "--delay",
                "1",
                "--cores",
                "1",
                "--model",
                "mcs",
            ]),
            "[possible values: repairman, repairman-const, ticket]".into(),
        ),
        (
            predict(&[
                "--service",
                "1",
                "--delay",
                "1",
                "--cores",
                "1",
                "--handoff",
                "3",
            ]),
            "--handoff 3 is for --model ticket".into(),
        ),
        (
            predict(&[
                "--service",
                "1",
                "--delay",
                "1",
                "--cores",
                "1",
                "--model",
                "ticket",
            ]),
            "--model ticket needs --handoff".into(),
        ),
        (
            predict(&[
                "--service",
                "1",
                "--delay",
                "1",
                "--cores",
                "1",
                "--model",
                "ticket",
                "--handoff",
                "-2",
            ]),
            "hand-off cost '-2' is out of range".into(),
        ),
        (vec!["model", "fit"], "--csv <FILE>".into()),
        (
            vec!["model", "fit", "--csv", &missing],
            format!("--csv {missing}: cannot read it"),
        ),
        (
            vec!["model", "fit", "--csv", &empty],
            "no data lines".into(),
        ),
        (
            vec!["model", "fit", "--csv", &header_only],
            "no data lines".into(),
        ),
        (
            vec!["model", "fit", "--csv", &bad_field],
            "field.csv line 3: 'abc' throughput: allowed a number from 1e-150 to 1e150".into(),
        ),
        (
            vec!["model", "fit", "--csv", &short],
            "short.csv line 2: expected two fields `cores,throughput`, found 1".into(),
        ),
        (
            vec!["model", "fit", "--csv", &extra],
            "extra.csv line 1: expected two fields".into(),
        ),
        (
            vec!["model", "fit", "--csv", &zero_cores],
            "zero.csv line 2: '0' cores: allowed a whole number from 1 to 10000".into(),
        ),
        (
            vec!["model", "fit", "--csv", &half_core],
            "half.csv line 2: '1.5' cores".into(),
        ),
        (
            vec!["model", "fit", "--csv", &negative],
            "neg.csv line 2: '-1' throughput".into(),
        ),
        (
            vec!["model", "fit", "--csv", &zero_x],
            "zerox.csv line 2: '0' throughput".into(),
        ),
        (
            vec!["model", "fit", "--csv", &one_count],
            "1 distinct core count(s) cannot determine 2 parameter(s) (S and Z)".into(),
        ),
        (
            vec!["model", "fit", "--csv", &good, "--first", "0"],
            "'0' core counts: allowed a whole number of 1 or more".into(),
        ),
        (
            vec!["model", "fit", "--csv", &good, "--first", "29"],
            "--first 29: ".into(),
        ),
        (
            vec!["model", "fit", "--csv", &good, "--first", "1"],
            "1 distinct core count(s) cannot determine 2".into(),
        ),
        (
            vec!["model", "fit", "--csv", &good, "--delay", "-1"],
            "delay '-1' is out of range".into(),
        ),
        // What only --run uses is refused with --csv, not ignored.
        (
            vec!["model", "fit", "--csv", &good, "--variant", "bkl(tas)"],
            "--variant is for --run".into(),
        ),
        (
            vec!["model", "fit", "--csv", &good, "--delay-ns", "250"],
            "--delay-ns is for --run".into(),
        ),
    ];
    for (args, needle) in &cases {
        assert_bad_input(&locklab(dir, args), needle);
    }
    let o = locklab(dir, &["model", "fit", "--csv", &good, "--first", "29"]);
    assert!(stderr(&o).contains("has only 28 distinct core counts"));
    assert!(!dir.join("t.db").exists());
}

#[test]
fn fit_run_on_a_database_that_does_not_exist_says_so_and_creates_nothing() {
    let d = tempfile::tempdir().unwrap();
    for run in ["1", "last"] {
        assert_bad_input(
            &locklab(d.path(), &["model", "fit", "--run", run]),
            "t.db: no such database (the file does not exist); nothing was created",
        );
    }
    assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0);
}

/// Every number in `v`, recursively, is a number: JSON writes NaN and the
/// infinities as `null`, so a `null` where a number belongs is one.
fn all_numbers(v: &Value, path: &str) {
    match v {
        Value::Null => panic!("{path} is null"),
        Value::Array(a) => a
            .iter()
            .enumerate()
            .for_each(|(i, x)| all_numbers(x, &format!("{path}[{i}]"))),
        Value::Object(o) => o
            .iter()
            .filter(|(k, _)| !matches!(k.as_str(), "cores_95" | "first" | "r2"))
            .for_each(|(k, x)| all_numbers(x, &format!("{path}.{k}"))),
        _ => {}
    }
}

/// Neither NaN nor an infinity, in any spelling the lab or Rust prints.
fn no_non_numbers(text: &str) {
    for bad in ["NaN", "nan", "inf", "∞"] {
        assert!(!text.contains(bad), "{bad:?} in: {text}");
    }
}

/// Parameters that are each finite but whose results are not (1/S, Z/S,
/// N·S or N·(S + C·N) overflow: they once printed NaN and inf rows with
/// exit 0) are refused, in text and JSON, with exit 2 and one line naming
/// the parameters and what is allowed; nothing on standard output.
#[test]
fn predict_refuses_parameters_whose_results_overflow() {
    let d = tempfile::tempdir().unwrap();
    let cases: &[(&[&str], &str)] = &[
        (
            &["--service", "1e-320", "--delay", "1", "--cores", "1-2"],
            "service time S = 1e-320 is too small: the peak throughput 1/S overflows; allowed S of at least 5.6e-309",
        ),
        (
            &["--service", "1e-310", "--delay", "0", "--cores", "1"],
            "S = 1e-310",
        ),
        (
            &["--service", "1e-300", "--delay", "1e300", "--cores", "10000"],
            "delay Z = 1e300 with service time S = 1e-300: Z/S overflows (the knee 1 + Z/S); allowed Z up to",
        ),
        (
            &["--service", "1e308", "--delay", "1e308", "--cores", "1-3"],
            "N = 2 cores with service time S = 1e308: N·S, the longest response time, overflows; allowed N·S up to 1.8e308: N up to 1",
        ),
        (
            &["--service", "1e305", "--delay", "1", "--cores", "1,2,4,10000"],
            "N = 10000 cores",
        ),
        (
            &[
                "--service", "1", "--delay", "1", "--cores", "1-3", "--model", "ticket", "--handoff",
                "1e308",
            ],
            "N = 2 cores with service time S = 1 and hand-off C = 1e308: N·(S + C·N)",
        ),
        (
            &[
                "--service", "1e308", "--delay", "1", "--cores", "1", "--model", "ticket",
                "--handoff", "1e308",
            ],
            "which no core count reaches",
        ),
        (
            &[
                "--service", "1", "--delay", "1", "--cores", "10000", "--model", "ticket",
                "--handoff", "1e301",
            ],
            "allowed N·(S + C·N) up to 1.8e308: N up to",
        ),
    ];
    for (args, needle) in cases {
        for json in [false, true] {
            let mut all = if json { vec!["--json"] } else { vec![] };
            all.extend(["model", "predict"]);
            all.extend_from_slice(args);
            let o = locklab(d.path(), &all);
            assert_bad_input(&o, needle);
            no_non_numbers(&stderr(&o));
            assert_eq!(stdout(&o), "", "{all:?}");
        }
    }
    assert!(!d.path().join("t.db").exists());
}

/// Parameters at the edges whose results are numbers are solved, and
/// exactly: every number in the JSON is one, and the text has no NaN or
/// infinity (nor 300 zeros).
#[test]
fn predict_solves_extremes_whose_results_are_numbers() {
    let d = tempfile::tempdir().unwrap();
    for args in [
        &["--service", "1e308", "--delay", "1e308", "--cores", "1"][..],
        &["--service", "1", "--delay", "1e308", "--cores", "1-2"],
        &[
            "--service",
            "1e-308",
            "--delay",
            "1",
            "--cores",
            "1-4,10000",
        ],
        &["--service", "5.6e-309", "--delay", "0", "--cores", "1"],
        &["--service", "1e300", "--delay", "1e-300", "--cores", "1-3"],
        &[
            "--service",
            "1",
            "--delay",
            "1",
            "--cores",
            "1-3",
            "--model",
            "ticket",
            "--handoff",
            "1e300",
        ],
    ] {
        let mut all = vec!["--json", "model", "predict"];
        all.extend_from_slice(args);
        let v = ok_json(&locklab(d.path(), &all));
        all_numbers(&v, "");
        let o = locklab(d.path(), &all[1..]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        no_non_numbers(&stdout(&o));
        assert!(!stdout(&o).contains("00000000000"), "{}", stdout(&o));
    }
    // S = Z = 1e308 at one core: X = 1/(S + Z), the knee 2.
    let v = ok_json(&locklab(
        d.path(),
        &[
            "--json",
            "model",
            "predict",
            "--service",
            "1e308",
            "--delay",
            "1e308",
            "--cores",
            "1",
        ],
    ));
    assert_eq!(f(&v["knee"]), 2.0);
    assert!(rel(f(&v["points"][0]["throughput"]), 5e-309) < 1e-12, "{v}");
}

/// Data the model cannot follow have no valid fit: exit 2 and one line
/// saying why (how far the best fit misses, and the limit), never a model
/// far from the data with exit 0; in text and JSON, from a CSV. And the
/// fit's inputs whose sums of squares or delay would overflow are refused
/// by name.
#[test]
fn fits_without_a_valid_solution_are_refused() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path();
    let write = |name: &str, text: &str| {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p.to_str().unwrap().to_string()
    };
    let cases = [
        (write("collapse.csv", "1,10\n2,5\n4,1\n"), vec![]),
        (write("zigzag.csv", "1,5\n2,1\n3,5\n4,1\n"), vec![]),
        (write("superlinear.csv", "1,1\n2,10\n4,100\n"), vec![]),
        (write("hump.csv", "1,1\n2,1.9\n4,1.2\n8,0.5\n"), vec![]),
        (
            write("collapse2.csv", "1,10\n2,5\n4,1\n"),
            vec!["--delay", "0.1"],
        ),
        (
            write("hump2.csv", "1,1\n2,1.9\n4,1.2\n8,0.5\n"),
            vec!["--first", "4"],
        ),
    ];
    for (csv, extra) in &cases {
        for json in [false, true] {
            let mut all = if json { vec!["--json"] } else { vec![] };
            all.extend(["model", "fit", "--csv", csv]);
            all.extend(extra.iter().copied());
            let o = locklab(dir, &all);
            let name = Path::new(csv).file_name().unwrap().to_str().unwrap();
            assert_bad_input(
                &o,
                &format!("{name}: no valid fit: the best repairman model (S = "),
            );
            assert!(
                stderr(&o).contains("(root mean square of residual/measured; allowed up to 50 %)")
            );
            no_non_numbers(&stderr(&o));
            assert_eq!(stdout(&o), "", "{all:?}");
        }
    }
    // Throughputs whose squares do not fit a double, and a fixed delay no
    // measured rate can go with.
    let tiny = write("tiny.csv", "1,1e-300\n2,2e-300\n4,3e-300\n");
    let huge = write("huge.csv", "1,1e300\n2,1.9e300\n4,3e300\n");
    let big = write("big.csv", "1,1e100\n2,1.9e100\n4,3e100\n");
    for (args, needle) in [
        (
            vec!["model", "fit", "--csv", &tiny],
            "tiny.csv line 1: '1e-300' throughput: allowed a number from 1e-150 to 1e150",
        ),
        (
            vec!["model", "fit", "--csv", &huge],
            "huge.csv line 1: '1e300' throughput: allowed a number from 1e-150 to 1e150",
        ),
        (
            vec!["model", "fit", "--csv", &big, "--delay", "1e300"],
            "--delay: delay Z = 1e300 with throughputs up to 3e100: Z × throughput overflows; allowed Z up to",
        ),
    ] {
        assert_bad_input(&locklab(dir, &args), needle);
    }
    // Within the range, a tiny unit fits as well as any (its squares once
    // underflowed: R² = NaN, a fit stopped at its start).
    let small = write(
        "small.csv",
        &(1..=10)
            .map(|n| format!("{n},{:e}\n", erlang_x(358.0, 2000.0, n) * 1e-140))
            .collect::<String>(),
    );
    let v = ok_json(&locklab(dir, &["--json", "model", "fit", "--csv", &small]));
    all_numbers(&v, "");
    assert!(rel(f(&v["service"]), 358.0 / 1e-140) < 1e-6, "{v}");
    assert!(f(&v["r2"]) > 1.0 - 1e-9, "{v}");
    let o = locklab(dir, &["model", "fit", "--csv", &small]);
    no_non_numbers(&stdout(&o));
    assert!(!dir.join("t.db").exists());
}
