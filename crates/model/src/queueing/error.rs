//! Invalid model parameters, as values rather than panics: each variant
//! carries the bad value and its message says what is allowed.
//!
//! Allowed means more than each number on its own being finite: a model
//! is only solved where every result it gives is a finite number too. The
//! results are rates and times in the unit of S, so the domain is checked
//! up front from the parameters (`check_scale`, `check_response`):
//! 1/S (the peak throughput) and Z/S (the knee 1 + Z/S) finite for any
//! model, and N·(S + C·N) (the longest response time) finite for N
//! cores. Within it the chain's logarithms keep every intermediate value
//! finite; a guard ([`ModelError::Unrepresentable`]) still refuses any
//! result that is not.

use std::fmt;

/// Most cores a model is solved for. The full state distribution of N
/// cores is N + 1 numbers, so this bounds memory (80 MB at the limit) and
/// time; seed 002's machine had 28 hardware threads.
pub const MAX_CORES: u32 = 10_000_000;

/// A parameter a model cannot be built or solved with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ModelError {
    /// The service time S is not a finite number greater than 0.
    Service(f64),
    /// The mean delay Z is not a finite number of at least 0.
    Delay(f64),
    /// The hand-off cost per waiter C is not a finite number of at least 0.
    Handoff(f64),
    /// N = 0 cores.
    NoCores,
    /// More cores than [`MAX_CORES`].
    TooManyCores(u64),
    /// More cores than the constant-service repairman solves
    /// ([`super::constant::MAX_CONSTANT_CORES`]).
    TooManyCoresConstant(u32),
    /// 1/S, the lock's peak throughput, is not a finite number: S is below
    /// about 5.6·10⁻³⁰⁹.
    PeakOverflow(f64),
    /// Z/S is not a finite number: the knee 1 + Z/S overflows, and with it
    /// the offered load a = Z/S the solutions rest on.
    RatioOverflow {
        /// S.
        service: f64,
        /// Z.
        delay: f64,
    },
    /// N·(S + C·N), the most a core's response time can be (every other
    /// core served ahead of it, each at the slowest hand-off), is not a
    /// finite number.
    ResponseOverflow {
        /// N.
        cores: u32,
        /// S.
        service: f64,
        /// C (0 for the repairman).
        handoff: f64,
    },
    /// A solution with a result that is not a finite number although the
    /// parameters passed every check above (a guard: no such parameters
    /// are known).
    Unrepresentable {
        /// N.
        cores: u32,
        /// S.
        service: f64,
        /// Z.
        delay: f64,
    },
}

/// The largest finite double, as the messages say it.
const MAX_TEXT: &str = "1.8e308";

/// A computed number to six significant digits, trailing zeros dropped:
/// `0.1875`, `1.54100e-308` as `1.541e-308`.
pub fn sig6(x: f64) -> String {
    let a = x.abs();
    if a == 0.0 || !a.is_finite() {
        return format!("{x}");
    }
    let trim = |t: String| -> String {
        match t.split_once('e') {
            Some((m, e)) if m.contains('.') => {
                format!("{}e{e}", m.trim_end_matches('0').trim_end_matches('.'))
            }
            None if t.contains('.') => t.trim_end_matches('0').trim_end_matches('.').to_string(),
            _ => t,
        }
    };
    if (1e-4..1e6).contains(&a) {
        let decimals = (5 - a.log10().floor() as i32).max(0) as usize;
        trim(format!("{x:.decimals$}"))
    } else {
        trim(format!("{x:.5e}"))
    }
}

/// A parameter as a person reads it: plain decimals for everyday
/// magnitudes, an exponent beyond them (`1e-320`, not 320 zeros).
pub fn num(x: f64) -> String {
    let a = x.abs();
    if a == 0.0 || (1e-4..1e16).contains(&a) || !a.is_finite() {
        format!("{x}")
    } else {
        format!("{x:e}")
    }
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Service(s) => write!(
                f,
                "service time S = {s} is not allowed: it must be a finite number greater than 0"
            ),
            Self::Delay(z) => write!(
                f,
                "delay Z = {z} is not allowed: it must be a finite number of at least 0"
            ),
            Self::Handoff(c) => write!(
                f,
                "hand-off cost C = {c} is not allowed: it must be a finite number of at least 0"
            ),
            Self::NoCores => write!(f, "N = 0 cores: the model needs at least 1 core"),
            Self::TooManyCores(n) => write!(
                f,
                "N = {n} cores is more than the models solve: allowed 1 to {MAX_CORES}"
            ),
            Self::TooManyCoresConstant(n) => write!(
                f,
                "N = {n} cores is more than the constant-service model solves: allowed 1 to {}",
                super::constant::MAX_CONSTANT_CORES
            ),
            Self::PeakOverflow(s) => write!(
                f,
                "service time S = {} is too small: the peak throughput 1/S overflows; \
                 allowed S of at least {:.1e}",
                num(*s),
                1.0 / f64::MAX
            ),
            Self::RatioOverflow { service, delay } => write!(
                f,
                "delay Z = {} with service time S = {}: Z/S overflows \
                 (the knee 1 + Z/S); allowed Z up to S × {MAX_TEXT} = {:.3e}",
                num(*delay),
                num(*service),
                service * f64::MAX
            ),
            Self::ResponseOverflow {
                cores,
                service,
                handoff,
            } => {
                let what = if *handoff == 0.0 {
                    format!(
                        "N = {cores} cores with service time S = {}: N·S",
                        num(*service)
                    )
                } else {
                    format!(
                        "N = {cores} cores with service time S = {} and hand-off C = {}: \
                         N·(S + C·N)",
                        num(*service),
                        num(*handoff)
                    )
                };
                let bound = if *handoff == 0.0 {
                    "N·S"
                } else {
                    "N·(S + C·N)"
                };
                match most_cores(*service, *handoff) {
                    0 => write!(
                        f,
                        "{what}, the longest response time, overflows; allowed {bound} up to \
                         {MAX_TEXT}, which no core count reaches with these S and C"
                    ),
                    k => write!(
                        f,
                        "{what}, the longest response time, overflows; allowed {bound} up to \
                         {MAX_TEXT}: N up to {k} with these parameters"
                    ),
                }
            }
            Self::Unrepresentable {
                cores,
                service,
                delay,
            } => write!(
                f,
                "N = {cores} cores with S = {} and Z = {}: the model's results are not \
                 finite numbers; allowed parameters whose results are",
                num(*service),
                num(*delay)
            ),
        }
    }
}

impl std::error::Error for ModelError {}

/// S: finite and > 0.
pub(crate) fn check_service(s: f64) -> Result<f64, ModelError> {
    if s.is_finite() && s > 0.0 {
        Ok(s)
    } else {
        Err(ModelError::Service(s))
    }
}

/// Z: finite and ≥ 0 (0 means the cores never leave the lock's queue).
pub(crate) fn check_delay(z: f64) -> Result<f64, ModelError> {
    if z.is_finite() && z >= 0.0 {
        Ok(z)
    } else {
        Err(ModelError::Delay(z))
    }
}

/// C: finite and ≥ 0.
pub(crate) fn check_handoff(c: f64) -> Result<f64, ModelError> {
    if c.is_finite() && c >= 0.0 {
        Ok(c)
    } else {
        Err(ModelError::Handoff(c))
    }
}

/// The scale of S and Z: 1/S (the peak throughput) and Z/S (the offered
/// load, and the knee 1 + Z/S) finite. S and Z may each be any finite
/// number; only their ratio and S's reciprocal must be representable, since
/// every result is a time or a rate measured in S (the chain itself works
/// in logarithms).
pub(crate) fn check_scale(s: f64, z: f64) -> Result<(), ModelError> {
    if !(1.0 / s).is_finite() {
        Err(ModelError::PeakOverflow(s))
    } else if !(z / s).is_finite() {
        Err(ModelError::RatioOverflow {
            service: s,
            delay: z,
        })
    } else {
        Ok(())
    }
}

/// N cores of a lock whose busy time with k cores at it is S + C·k: the
/// longest response time, N·(S + C·N), finite (so that R = L/X, which is
/// at most that, is).
pub(crate) fn check_response(cores: u32, s: f64, c: f64) -> Result<u32, ModelError> {
    if response_bound(cores, s, c).is_finite() {
        Ok(cores)
    } else {
        Err(ModelError::ResponseOverflow {
            cores,
            service: s,
            handoff: c,
        })
    }
}

fn response_bound(cores: u32, s: f64, c: f64) -> f64 {
    let n = f64::from(cores);
    n * (s + c * n)
}

/// The most cores, up to [`MAX_CORES`], whose longest response time
/// N·(S + C·N) is finite; 0 if not even one core's is. The bound grows
/// with N, so a bisection finds it.
pub fn most_cores(s: f64, c: f64) -> u32 {
    if !response_bound(1, s, c).is_finite() {
        return 0;
    }
    let (mut lo, mut hi) = (1u32, MAX_CORES);
    if response_bound(hi, s, c).is_finite() {
        return hi;
    }
    // response_bound(lo) finite, response_bound(hi) not.
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if response_bound(mid, s, c).is_finite() {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

/// N: 1 to [`MAX_CORES`].
pub(crate) fn check_cores(n: u32) -> Result<u32, ModelError> {
    match n {
        0 => Err(ModelError::NoCores),
        n if n > MAX_CORES => Err(ModelError::TooManyCores(n.into())),
        n => Ok(n),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks_accept_the_allowed_ranges_and_name_the_bad_value() {
        assert_eq!(check_service(1e-300), Ok(1e-300));
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(check_service(bad).is_err());
        }
        assert_eq!(check_delay(0.0), Ok(0.0));
        assert_eq!(check_handoff(0.0), Ok(0.0));
        for bad in [-1e-9, f64::NAN, f64::NEG_INFINITY, f64::INFINITY] {
            assert!(check_delay(bad).is_err());
            assert!(check_handoff(bad).is_err());
        }
        assert_eq!(check_cores(0), Err(ModelError::NoCores));
        assert_eq!(check_cores(MAX_CORES), Ok(MAX_CORES));
        assert!(check_cores(MAX_CORES + 1).is_err());
        assert!(ModelError::Service(-3.0).to_string().contains("S = -3"));
        assert!(ModelError::Delay(-2.5).to_string().contains("Z = -2.5"));
        assert!(ModelError::TooManyCores(20_000_000)
            .to_string()
            .contains("20000000"));
    }

    #[test]
    fn numbers_read_short() {
        assert_eq!(num(358.0), "358");
        assert_eq!(num(1e-320), "1e-320");
        assert_eq!(num(1e308), "1e308");
        assert_eq!(sig6(0.18750000000000006), "0.1875");
        assert_eq!(sig6(1.541004585976209e-308), "1.541e-308");
        assert_eq!(sig6(2000.0), "2000");
        assert_eq!(sig6(123456789.0), "1.23457e8");
    }

    /// The scale checks let through every S and Z whose reciprocal and
    /// ratio are numbers, and name both where the ratio is not.
    #[test]
    fn the_scale_of_s_and_z_must_be_representable() {
        assert_eq!(check_scale(1e-300, 1e5), Ok(()));
        assert_eq!(check_scale(1e308, 1e308), Ok(()));
        assert_eq!(check_scale(1e308, 0.0), Ok(()));
        assert_eq!(
            check_scale(1e-320, 1.0),
            Err(ModelError::PeakOverflow(1e-320))
        );
        let e = check_scale(1e-10, 1e300).unwrap_err();
        let text = e.to_string();
        assert!(
            text.contains("Z = 1e300") && text.contains("S = 1e-10"),
            "{text}"
        );
        assert!(text.contains("allowed Z up to"), "{text}");
        assert!(ModelError::PeakOverflow(1e-320)
            .to_string()
            .contains("allowed S of at least 5.6e-309"));
    }

    #[test]
    fn the_longest_response_must_be_representable() {
        assert_eq!(check_response(3, 1.0, 1.0), Ok(3));
        assert!(check_response(2, 1e308, 0.0).is_err());
        assert_eq!(most_cores(1e308, 0.0), 1);
        assert_eq!(most_cores(1.0, 0.0), MAX_CORES);
        assert_eq!(most_cores(1e308, 1e308), 0);
        // C·N² + S·N ≤ MAX: with C = 1e300, N up to about 1.34e4.
        let k = most_cores(1.0, 1e300);
        assert!(response_bound(k, 1.0, 1e300).is_finite());
        assert!(!response_bound(k + 1, 1.0, 1e300).is_finite());
        let text = check_response(20_000, 1.0, 1e300).unwrap_err().to_string();
        assert!(text.contains(&format!("N up to {k}")), "{text}");
        assert!(text.contains("N·(S + C·N)"), "{text}");
        let none = check_response(1, 1e308, 1e308).unwrap_err().to_string();
        assert!(none.contains("no core count"), "{none}");
    }
}
