//! Invalid model parameters, as values rather than panics: each variant
//! carries the bad value and its message says what is allowed.

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
}
