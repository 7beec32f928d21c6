//! The repairman fit: it recovers the parameters that made a curve, copes
//! with noise, order, repeats and units, reproduces seed 002's one-socket
//! fit, and refuses what it cannot fit with a typed error.

use locklab_model::queueing::{
    fit, fit_family, FitError, FitOptions, ModelError, Repairman, MAX_CORES, MAX_MISS,
    MAX_THROUGHPUT, MIN_THROUGHPUT,
};

fn rel(a: f64, b: f64) -> f64 {
    (a - b).abs() / b.abs()
}

/// (cores, X(cores)) of the repairman with S and Z.
fn curve(s: f64, z: f64, cores: impl IntoIterator<Item = u32>) -> Vec<(f64, f64)> {
    let m = Repairman::new(s, z).unwrap();
    cores
        .into_iter()
        .map(|n| (f64::from(n), m.throughput(n).unwrap()))
        .collect()
}

/// Multiplies each throughput by 1 + e with e uniform in ±`amp`, from a
/// fixed 64-bit LCG (Knuth's MMIX constants), so the test is repeatable.
fn noisy(points: &[(f64, f64)], amp: f64, seed: u64) -> Vec<(f64, f64)> {
    let mut x = seed;
    points
        .iter()
        .map(|&(n, y)| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let u = (x >> 11) as f64 / (1u64 << 53) as f64;
            (n, y * (1.0 + amp * (2.0 * u - 1.0)))
        })
        .collect()
}

fn opts() -> FitOptions {
    FitOptions::default()
}

#[test]
fn noise_free_curves_give_back_their_parameters() {
    for (s, z) in [
        (358.0, 2000.0),
        (323.0, 500.0),
        (613.0, 32000.0),
        (1.0, 1.0),
        (1e-7, 5e-6),
        (50.0, 5.0),
    ] {
        for cores in [(1..=28).collect::<Vec<u32>>(), vec![1, 2, 4, 8, 16, 32, 64]] {
            let knee = (s + z) / s;
            if f64::from(*cores.last().unwrap()) < 1.5 * knee {
                continue; // no bend in the data: S is not identifiable
            }
            let f = fit(&curve(s, z, cores.clone()), &opts()).unwrap();
            assert!(
                rel(f.service(), s) < 1e-6 && rel(f.delay(), z) < 1e-6,
                "S={s} Z={z} cores={cores:?}: fitted S={} Z={}",
                f.service(),
                f.delay()
            );
            assert!(f.r2.unwrap() > 1.0 - 1e-12);
            assert_eq!(f.parameters, 2);
            assert_eq!(f.points.len(), cores.len());
        }
    }
}

#[test]
fn a_fixed_delay_fits_service_alone() {
    let pts = curve(358.0, 2000.0, 1..=28);
    let f = fit(
        &pts,
        &FitOptions {
            delay: Some(2000.0),
            ..opts()
        },
    )
    .unwrap();
    assert!(rel(f.service(), 358.0) < 1e-6, "S = {}", f.service());
    assert_eq!(f.delay(), 2000.0);
    assert!(f.delay_fixed);
    assert_eq!(f.parameters, 1);
    // A wrong fixed Z is a worse fit, and S moves to make up for it.
    let wrong = fit(
        &pts,
        &FitOptions {
            delay: Some(4000.0),
            ..opts()
        },
    )
    .unwrap();
    assert!(wrong.r2.unwrap() < f.r2.unwrap());
    assert!(rel(wrong.service(), 358.0) > 0.01);
}

#[test]
fn noisy_curves_land_within_a_few_per_cent() {
    for (s, z, seed) in [
        (358.0, 2000.0, 1),
        (358.0, 4000.0, 2),
        (100.0, 300.0, 3),
        (613.0, 8000.0, 4),
    ] {
        let pts = noisy(&curve(s, z, 1..=28), 0.02, seed);
        let f = fit(&pts, &opts()).unwrap();
        assert!(
            rel(f.service(), s) < 0.03 && rel(f.delay(), z) < 0.05,
            "S={s} Z={z}: fitted S={} Z={}",
            f.service(),
            f.delay()
        );
        let r2 = f.r2.unwrap();
        assert!(r2 > 0.98 && r2 < 1.0, "R² = {r2}");
        // The residuals are what the fit did not explain.
        for (((_, y), p), r) in f.points.iter().zip(&f.predicted).zip(&f.residuals) {
            assert_eq!(*r, y - p);
        }
        let ss: f64 = f.residuals.iter().map(|r| r * r).sum();
        assert!(rel(ss, f.ss_res) < 1e-12);
        assert!(rel(r2, 1.0 - f.ss_res / f.ss_tot) < 1e-12);
    }
}

/// Seed 002, section 5.1.2: a fit to the first 14 hardware threads (one
/// socket) at a 2000-cycle delay gave S = 358, Z = 1999. Past one socket
/// the lock's holding time rose towards 613 cycles, which a fit over all
/// 28 points would smear into one wrong S.
#[test]
fn seed_002_one_socket_fit() {
    let mut pts = curve(358.0, 2000.0, 1..=14);
    pts.extend(curve(613.0, 2000.0, 15..=28));
    let f = fit(
        &pts,
        &FitOptions {
            first: Some(14),
            ..opts()
        },
    )
    .unwrap();
    assert!(rel(f.service(), 358.0) < 1e-6, "S = {}", f.service());
    assert!(rel(f.delay(), 2000.0) < 1e-6, "Z = {}", f.delay());
    assert_eq!(f.points.len(), 14);
    assert_eq!(f.first, Some(14));
    let all = fit(&pts, &opts()).unwrap();
    assert!(
        rel(all.service(), 358.0) > 0.1,
        "all 28: S = {}",
        all.service()
    );
    assert!(all.r2.unwrap() < f.r2.unwrap());
}

#[test]
fn units_order_and_repeats_do_not_change_the_answer() {
    let base = curve(358.0, 2000.0, 1..=20);
    let f = fit(&base, &opts()).unwrap();
    // Per second at 2 GHz instead of per cycle: S and Z in seconds.
    let per_sec: Vec<(f64, f64)> = base.iter().map(|&(n, x)| (n, x * 2e9)).collect();
    let g = fit(&per_sec, &opts()).unwrap();
    assert!(rel(g.service() * 2e9, f.service()) < 1e-6);
    assert!(rel(g.delay() * 2e9, f.delay()) < 1e-6);
    // Reversed, with every point twice: same parameters, points sorted.
    let mut shuffled: Vec<(f64, f64)> = base.iter().rev().copied().collect();
    shuffled.extend(base.iter().copied());
    let h = fit(&shuffled, &opts()).unwrap();
    assert!(rel(h.service(), f.service()) < 1e-9);
    assert!(rel(h.delay(), f.delay()) < 1e-9);
    assert_eq!(h.points.len(), 40);
    assert!(h.points.windows(2).all(|w| w[0].0 <= w[1].0));
    // first counts distinct core counts, not points.
    let k = fit(
        &shuffled,
        &FitOptions {
            first: Some(5),
            ..opts()
        },
    )
    .unwrap();
    assert_eq!(k.points.len(), 10);
    assert_eq!(k.points.last().unwrap().0, 5);
}

#[test]
fn flat_data_have_no_r2_and_fit_the_plateau() {
    // Every core count at the lock's peak: Z = 0 is the exact answer.
    let pts: Vec<(f64, f64)> = (1..=8).map(|n| (f64::from(n), 0.25)).collect();
    let f = fit(&pts, &opts()).unwrap();
    assert_eq!(f.r2, None);
    assert!(rel(f.service(), 4.0) < 1e-6, "S = {}", f.service());
    assert!(f.delay() < 1e-6 * 4.0, "Z = {}", f.delay());
}

#[test]
fn bad_points_are_typed_errors_naming_the_point() {
    let good = curve(358.0, 2000.0, 1..=10);
    for (i, bad, want) in [
        (
            3,
            0.0,
            FitError::Throughput {
                index: 3,
                value: 0.0,
            },
        ),
        (
            0,
            -1.0,
            FitError::Throughput {
                index: 0,
                value: -1.0,
            },
        ),
        (
            9,
            f64::INFINITY,
            FitError::Throughput {
                index: 9,
                value: f64::INFINITY,
            },
        ),
    ] {
        let mut pts = good.clone();
        pts[i].1 = bad;
        assert_eq!(fit(&pts, &opts()), Err(want));
    }
    let mut pts = good.clone();
    pts[2].1 = f64::NAN;
    assert!(matches!(
        fit(&pts, &opts()),
        Err(FitError::Throughput { index: 2, .. })
    ));
    for bad in [0.0, -3.0, 2.5, f64::NAN, f64::from(MAX_CORES) + 1.0] {
        let mut pts = good.clone();
        pts[4].0 = bad;
        assert!(
            matches!(fit(&pts, &opts()), Err(FitError::Cores { index: 4, .. })),
            "{bad}"
        );
    }
    let e = fit(
        &good,
        &FitOptions {
            delay: Some(-5.0),
            ..opts()
        },
    );
    assert_eq!(e, Err(FitError::Model(ModelError::Delay(-5.0))));
    assert!(FitError::Throughput {
        index: 3,
        value: -2.0
    }
    .to_string()
    .starts_with("point 4: throughput -2"));
}

#[test]
fn too_few_points_and_bad_first_are_refused() {
    let two = FitError::TooFewPoints {
        core_counts: 1,
        parameters: 2,
    };
    assert_eq!(fit(&[(1.0, 0.001)], &opts()), Err(two));
    // Repeats at one core count are still one core count.
    assert_eq!(fit(&[(4.0, 0.001), (4.0, 0.0011)], &opts()), Err(two));
    assert_eq!(
        fit(&[], &opts()),
        Err(FitError::TooFewPoints {
            core_counts: 0,
            parameters: 2
        })
    );
    // With Z fixed one core count is enough.
    let one = fit(
        &[(1.0, 0.25)],
        &FitOptions {
            delay: Some(3.0),
            ..opts()
        },
    )
    .unwrap();
    assert!(rel(one.service(), 1.0) < 1e-9);
    let pts = curve(358.0, 2000.0, 1..=10);
    let first = |k| {
        fit(
            &pts,
            &FitOptions {
                first: Some(k),
                ..opts()
            },
        )
    };
    assert_eq!(first(0), Err(FitError::FirstZero));
    assert_eq!(
        first(11),
        Err(FitError::FirstTooLarge {
            first: 11,
            available: 10
        })
    );
    assert_eq!(
        first(1),
        Err(FitError::TooFewPoints {
            core_counts: 1,
            parameters: 2
        })
    );
    assert!(first(10).is_ok());
}

#[test]
fn an_iteration_limit_too_small_is_not_converged() {
    let pts = noisy(&curve(358.0, 2000.0, 1..=28), 0.02, 7);
    assert_eq!(
        fit(
            &pts,
            &FitOptions {
                max_iterations: 1,
                ..opts()
            }
        ),
        Err(FitError::NotConverged { iterations: 1 })
    );
}

/// Two-core curves at four delays, as `bench ipc` measures them on a
/// two-CPU machine: each curve alone is two points for two parameters, the
/// family is eight points for two.
fn two_core_family(s: f64, z: f64, extras: &[f64]) -> Vec<(f64, Vec<(f64, f64)>)> {
    extras
        .iter()
        .map(|&e| (e, curve(s, z + e, [1, 2])))
        .collect()
}

#[test]
fn a_family_of_curves_shares_one_service_time_and_delay() {
    let extras = [0.0, 125.0, 500.0, 2000.0];
    let fam = two_core_family(88.0, 25.0, &extras);
    let f = fit_family(&fam, &opts()).unwrap();
    assert!(rel(f.service(), 88.0) < 1e-6, "{}", f.service());
    assert!(rel(f.delay(), 25.0) < 1e-6, "{}", f.delay());
    assert_eq!((f.points.len(), f.parameters), (8, 2));
    // Each point keeps its curve's extra delay, curves in the order given.
    let want: Vec<f64> = extras.iter().flat_map(|&e| [e, e]).collect();
    assert_eq!(f.extra, want);
    // With ±2 % noise the shared S still lands close (a lone two-point
    // curve fits its noise exactly instead).
    let noisy_fam: Vec<(f64, Vec<(f64, f64)>)> = fam
        .iter()
        .enumerate()
        .map(|(i, (e, c))| (*e, noisy(c, 0.02, 11 + i as u64)))
        .collect();
    let f = fit_family(&noisy_fam, &opts()).unwrap();
    assert!(rel(f.service(), 88.0) < 0.08, "{}", f.service());
    assert!(f.r2.unwrap() > 0.99, "{:?}", f.r2);
    // One curve with no extra delay is the single-curve fit.
    let single = fit(&fam[0].1, &opts()).unwrap();
    let as_family = fit_family(&fam[..1], &opts()).unwrap();
    assert!(rel(single.service(), as_family.service()) < 1e-9);
    assert!(rel(single.delay(), as_family.delay()) < 1e-9);
}

#[test]
fn a_family_refuses_bad_extras_and_counts_points_across_curves() {
    let fam = vec![(0.0, vec![(1.0, 0.01)]), (-1.0, vec![(1.0, 0.005)])];
    assert!(matches!(fit_family(&fam, &opts()), Err(FitError::Model(_))));
    // The bad point is the second curve's first: index 1 overall.
    let fam = vec![(0.0, vec![(1.0, 0.01)]), (10.0, vec![(0.0, 0.005)])];
    assert!(matches!(
        fit_family(&fam, &opts()),
        Err(FitError::Cores { index: 1, .. })
    ));
    // One point per curve, two curves: two (curve, cores) pairs determine
    // S and Z.
    let fam = two_core_family(50.0, 10.0, &[0.0, 100.0]);
    let one_each: Vec<(f64, Vec<(f64, f64)>)> = fam.iter().map(|(e, c)| (*e, vec![c[1]])).collect();
    assert!(fit_family(&one_each, &opts()).is_ok());
    assert!(matches!(
        fit_family(&one_each[..1], &opts()),
        Err(FitError::TooFewPoints { .. })
    ));
}

/// Curves the repairman cannot follow — one that collapses, one that
/// zig-zags, one that rises faster than linearly, one that peaks and
/// falls — have no valid fit: the best one misses by more than
/// `MAX_MISS`, and is refused with how far it is, not returned as a model.
#[test]
fn data_the_model_cannot_follow_have_no_valid_fit() {
    for (what, pts) in [
        ("collapse", vec![(1.0, 10.0), (2.0, 5.0), (4.0, 1.0)]),
        (
            "zig-zag",
            vec![(1.0, 5.0), (2.0, 1.0), (3.0, 5.0), (4.0, 1.0)],
        ),
        ("superlinear", vec![(1.0, 1.0), (2.0, 10.0), (4.0, 100.0)]),
        ("hump", vec![(1.0, 1.0), (2.0, 1.9), (4.0, 1.2), (8.0, 0.5)]),
    ] {
        match fit(&pts, &opts()) {
            Err(FitError::FarFromData { miss, service, .. }) => {
                assert!(miss > MAX_MISS && miss.is_finite(), "{what}: {miss}");
                assert!(service.is_finite() && service > 0.0, "{what}");
                let text = fit(&pts, &opts()).unwrap_err().to_string();
                assert!(text.starts_with("no valid fit: "), "{text}");
                assert!(!text.contains("NaN") && !text.contains("inf"), "{text}");
            }
            other => panic!("{what}: {other:?}"),
        }
        // With a fixed delay too.
        assert!(
            matches!(
                fit(
                    &pts,
                    &FitOptions {
                        delay: Some(0.1),
                        ..opts()
                    }
                ),
                Err(FitError::FarFromData { .. })
            ),
            "{what} with Z fixed"
        );
    }
    // A noisy curve, and one that mixes two service times (a curve over two
    // sockets), are fits, however imperfect.
    assert!(fit(&noisy(&curve(358.0, 2000.0, 1..=28), 0.05, 3), &opts()).is_ok());
    let mut two = curve(358.0, 2000.0, 1..=14);
    two.extend(curve(613.0, 2000.0, 15..=28));
    let f = fit(&two, &opts()).unwrap();
    assert!(f.r2.unwrap() < 0.9);
}

/// The fit is indifferent to the unit: the same curve in a unit 10¹⁴⁰
/// times larger or smaller fits to the same S and Z scaled (its squares
/// once underflowed or overflowed and gave R² = NaN), and throughputs
/// beyond the allowed range are refused by name.
#[test]
fn any_unit_within_range_fits_the_same() {
    let base = fit(&curve(358.0, 2000.0, 1..=10), &opts()).unwrap();
    for c in [1e-140, 1e140] {
        let pts: Vec<(f64, f64)> = curve(358.0, 2000.0, 1..=10)
            .into_iter()
            .map(|(n, x)| (n, x * c))
            .collect();
        let f = fit(&pts, &opts()).unwrap();
        assert!(rel(f.service() * c, base.service()) < 1e-6, "{c}: {f:?}");
        assert!(rel(f.delay() * c, base.delay()) < 1e-6, "{c}: {f:?}");
        let r2 = f.r2.unwrap();
        assert!(r2.is_finite() && r2 > 1.0 - 1e-9, "{c}: R² = {r2}");
        assert!(f.ss_res.is_finite() && f.ss_tot.is_finite() && f.ss_tot > 0.0);
    }
    for bad in [1e-160, 1e160, MIN_THROUGHPUT / 2.0] {
        let mut pts = curve(358.0, 2000.0, 1..=10);
        pts[3].1 = bad;
        assert_eq!(
            fit(&pts, &opts()),
            Err(FitError::Throughput {
                index: 3,
                value: bad
            })
        );
    }
    assert!(FitError::Throughput {
        index: 0,
        value: 1e-160
    }
    .to_string()
    .contains("from 1e-150 to 1e150"));
    let mut edge = curve(358.0, 2000.0, 1..=10);
    edge[0].1 = MAX_THROUGHPUT;
    assert!(!matches!(
        fit(&edge, &opts()),
        Err(FitError::Throughput { .. })
    ));
    // A fixed delay no throughput measured can go with.
    let pts: Vec<(f64, f64)> = curve(1.0, 2.0, 1..=4)
        .into_iter()
        .map(|(n, x)| (n, x * 1e100))
        .collect();
    assert!(matches!(
        fit(
            &pts,
            &FitOptions {
                delay: Some(1e300),
                ..opts()
            }
        ),
        Err(FitError::DelayScale { .. })
    ));
}
