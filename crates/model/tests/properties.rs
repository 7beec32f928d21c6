//! The identities the queueing models must satisfy for any parameters in
//! range, checked with proptest; and the one behaviour that tells the two
//! lock models apart (the ticket lock collapses, the big lock plateaus).

use locklab_model::queueing::{ModelError, Repairman, Solution, Ticket};
use proptest::prelude::*;

/// |a − b| ≤ tol·max(|a|, |b|), with an absolute floor for values near 0.
fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * a.abs().max(b.abs()).max(f64::MIN_POSITIVE)
}

/// S from 10⁻³ to 10³ and S/Z from 10⁻⁶ to 10⁶ (Z = S/ratio).
fn service_and_delay() -> impl Strategy<Value = (f64, f64)> {
    (-3.0f64..3.0, -6.0f64..6.0).prop_map(|(s, r)| {
        let s = 10f64.powf(s);
        (s, s / 10f64.powf(r))
    })
}

/// The checks every solution of the chain must pass, whatever S_k is:
/// a probability distribution, and Little's law for the finite source
/// (N = X·(Z + R), i.e. L + X·Z = N since R = L/X).
fn check_chain(sol: &Solution, delay: f64) -> Result<(), TestCaseError> {
    let n = f64::from(sol.cores);
    prop_assert_eq!(sol.probabilities.len(), sol.cores as usize + 1);
    prop_assert!(sol.probabilities.iter().all(|p| p.is_finite() && *p >= 0.0));
    let total: f64 = sol.probabilities.iter().sum();
    prop_assert!(close(total, 1.0, 1e-12), "Σ P_k = {}", total);
    prop_assert!(
        close(sol.queue_length + sol.throughput * delay, n, 1e-9),
        "L + X·Z = {} + {} ≠ N = {}",
        sol.queue_length,
        sol.throughput * delay,
        n
    );
    prop_assert!(close(
        sol.response * sol.throughput,
        sol.queue_length,
        1e-12
    ));
    // U = 1 − P_0 (absolutely: both lie in [0, 1]).
    prop_assert!((sol.utilization - (1.0 - sol.probabilities[0])).abs() <= 1e-12);
    Ok(())
}

proptest! {
    #[test]
    fn repairman_identities((s, z) in service_and_delay(), n in 1u32..2000) {
        let m = Repairman::new(s, z).unwrap();
        let sol = m.solve(n).unwrap();
        check_chain(&sol, z)?;
        // U = X·S: the lock is busy S per acquisition.
        prop_assert!(close(sol.utilization, sol.throughput * s, 1e-12));
        // The asymptotic bounds, and R ≥ S.
        prop_assert!(sol.throughput <= m.throughput_bound(n) * (1.0 + 1e-12));
        prop_assert!(sol.response >= s * (1.0 - 1e-12));
        // The full solution agrees with Erlang's loss formula.
        prop_assert!(close(sol.throughput, m.throughput(n).unwrap(), 1e-9),
            "{} vs {}", sol.throughput, m.throughput(n).unwrap());
    }

    #[test]
    fn repairman_one_core_never_waits((s, z) in service_and_delay()) {
        let m = Repairman::new(s, z).unwrap();
        let sol = m.solve(1).unwrap();
        prop_assert!(close(sol.throughput, 1.0 / (s + z), 1e-12));
        prop_assert!(close(sol.response, s, 1e-12));
    }

    #[test]
    fn repairman_throughput_never_falls((s, z) in service_and_delay(), n in 1u32..500) {
        let m = Repairman::new(s, z).unwrap();
        let here = m.solve(n).unwrap().throughput;
        let next = m.solve(n + 1).unwrap().throughput;
        prop_assert!(next >= here * (1.0 - 1e-12), "X({}) = {} > X({}) = {}", n, here, n + 1, next);
        let curve = m.throughput_curve(n + 1).unwrap();
        prop_assert!(curve.windows(2).all(|w| w[1] >= w[0]));
        prop_assert!(close(curve[n as usize - 1], here, 1e-9));
    }

    #[test]
    fn repairman_cores_95_is_the_first_to_reach_95_percent((s, z) in service_and_delay()) {
        prop_assume!(z / s <= 1e4); // keep the check's O(N) solves cheap
        let m = Repairman::new(s, z).unwrap();
        let n = m.cores_95().unwrap();
        prop_assert!(m.throughput(n).unwrap() * s >= 0.95);
        if n > 1 {
            prop_assert!(m.throughput(n - 1).unwrap() * s < 0.95);
        }
        // At or past the knee: below it, X ≤ N/(S+Z) < 1/S.
        prop_assert!(f64::from(n) >= 0.95 * m.knee());
    }

    #[test]
    fn ticket_identities((s, z) in service_and_delay(), c in 0.0f64..2.0, n in 1u32..2000) {
        let c = c * s;
        let t = Ticket::new(s, z, c).unwrap();
        let sol = t.solve(n).unwrap();
        check_chain(&sol, z)?;
        // Every acquisition keeps the lock busy at least S + C, and a core
        // goes round no faster than S + C + Z.
        prop_assert!(sol.throughput <= (1.0 / (s + c)).min(f64::from(n) / (s + c + z)) * (1.0 + 1e-12));
        // C = 0 is the repairman.
        let plain = Ticket::new(s, z, 0.0).unwrap().solve(n).unwrap();
        let rep = Repairman::new(s, z).unwrap().solve(n).unwrap();
        prop_assert!(close(plain.throughput, rep.throughput, 1e-12));
        prop_assert!(close(plain.queue_length, rep.queue_length, 1e-12));
    }
}

/// Any finite double from the smallest subnormal to the largest: 10^e,
/// or 0 where `zero` allows it.
fn any_magnitude(zero: bool) -> impl Strategy<Value = f64> {
    let pow = (-323.5f64..308.25).prop_map(|e| 10f64.powf(e));
    if zero {
        prop_oneof![1 => Just(0.0), 9 => pow].boxed()
    } else {
        pow.boxed()
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Over the whole range of doubles, a model is refused up front (by
    /// its construction or the core count, with the reason), or every
    /// number it gives is finite: the domain checks are complete, so the
    /// guard against non-finite results never fires.
    #[test]
    fn any_parameters_are_refused_up_front_or_give_finite_results(
        s in any_magnitude(false),
        z in any_magnitude(true),
        c in any_magnitude(true),
        n in prop_oneof![1u32..40, Just(10_000u32)],
    ) {
        let solved = [
            Repairman::new(s, z).and_then(|m| {
                let sol = m.solve(n)?;
                prop_assert_finite(&[m.knee(), m.throughput_bound(n), 1.0 / m.service()]);
                Ok(sol)
            }),
            Ticket::new(s, z, c).and_then(|t| t.solve(n)),
        ];
        for r in solved {
            match r {
                Ok(sol) => {
                    let all = [sol.throughput, sol.queue_length, sol.utilization, sol.response];
                    prop_assert!(all.iter().chain(&sol.probabilities).all(|x| x.is_finite()),
                        "S={} Z={} C={} N={}: {:?}", s, z, c, n, all);
                    prop_assert!(sol.throughput > 0.0 && sol.throughput * s <= 1.0 + 1e-9);
                    prop_assert!((0.0..=1.0 + 1e-12).contains(&sol.utilization));
                }
                Err(ModelError::Unrepresentable { .. }) => {
                    prop_assert!(false, "S={} Z={} C={} N={}: passed the checks, results not finite", s, z, c, n);
                }
                Err(_) => {}
            }
        }
    }
}

/// Panics (inside a proptest case: fails it) unless every value is finite.
fn prop_assert_finite(xs: &[f64]) {
    assert!(xs.iter().all(|x| x.is_finite()), "{xs:?}");
}

#[test]
fn repairman_is_stable_at_ten_thousand_cores_across_the_ratio_range() {
    for ratio in [1e-6, 1e-3, 1.0, 1e3, 1e6] {
        let m = Repairman::new(1.0, 1.0 / ratio).unwrap();
        let sol = m.solve(10_000).unwrap();
        let total: f64 = sol.probabilities.iter().sum();
        assert!(close(total, 1.0, 1e-12), "S/Z = {ratio}: Σ = {total}");
        assert!(close(
            sol.queue_length + sol.throughput / ratio,
            10_000.0,
            1e-9
        ));
        assert!(close(sol.throughput, m.throughput(10_000).unwrap(), 1e-9));
    }
}

#[test]
fn zero_delay_is_exact() {
    let m = Repairman::new(4.0, 0.0).unwrap();
    for n in [1, 2, 100] {
        let sol = m.solve(n).unwrap();
        assert_eq!(sol.probabilities[n as usize], 1.0);
        assert_eq!(sol.queue_length, f64::from(n));
        assert_eq!(sol.throughput, 0.25);
        assert_eq!(m.throughput(n).unwrap(), 0.25);
    }
    assert_eq!(m.cores_95(), Some(1));
    assert_eq!(m.knee(), 1.0);
}

/// Boyd-Wickizer et al.'s point: with a hand-off cost per waiter the
/// throughput peaks and then falls as cores are added, where the
/// repairman's only levels off.
#[test]
fn ticket_collapses_where_the_repairman_plateaus() {
    for (s, z, c) in [
        (358.0, 2000.0, 50.0),
        (100.0, 5000.0, 10.0),
        (1.0, 10.0, 0.05),
    ] {
        let rep = Repairman::new(s, z).unwrap();
        let tix = Ticket::new(s, z, c).unwrap();
        let max = 200;
        let (peak_n, peak_x) = tix.peak(max).unwrap();
        assert!(peak_n > 1 && peak_n < max, "peak at {peak_n} of {max}");
        let last = tix.throughput(max).unwrap();
        assert!(
            last < 0.5 * peak_x,
            "S={s} Z={z} C={c}: X({max}) = {last} is not well below the peak {peak_x} at {peak_n}"
        );
        // Past the peak it only falls.
        let tail: Vec<f64> = (peak_n..=max).map(|n| tix.throughput(n).unwrap()).collect();
        assert!(tail.windows(2).all(|w| w[1] <= w[0]));
        // The repairman with the same S and Z never falls, and ends near 1/S.
        let curve = rep.throughput_curve(max).unwrap();
        assert!(curve.windows(2).all(|w| w[1] >= w[0]));
        assert!(curve[max as usize - 1] * s > 0.99);
    }
}
