//! The values of the command line, parsed and checked: every parser names
//! the bad value and what is allowed, in one line. The studies' arguments
//! and the front's commands share them.

/// Most threads a study may start (oversubscription is the point, up to a limit).
pub const MAX_THREADS: u32 = 256;

/// Longest critical-section work or delay, ns (one second).
pub const MAX_NS: u64 = 1_000_000_000;

/// Longest measured time per repetition, seconds.
pub const MAX_SECS: f64 = 3600.0;

/// The names of a comma-separated list, each with the whitespace around
/// it trimmed (`' mcs, ticket'` is `mcs` and `ticket`): the one rule of
/// every option that takes names or numbers. `None` if an item is empty
/// (`a,,b`, a trailing comma, a blank value), which each option refuses
/// with its own list of what is allowed.
pub fn name_items(s: &str) -> Option<Vec<&str>> {
    let items: Vec<&str> = s.split(',').map(str::trim).collect();
    if items.iter().any(|i| i.is_empty()) {
        None
    } else {
        Some(items)
    }
}

/// A value parser that trims the whitespace around a value before `P`
/// parses it, as [`name_items`] does for lists: for the options whose
/// names clap checks itself (`--format`, `--delay-dist`, …). The help
/// still lists `P`'s possible values.
#[derive(Clone)]
pub struct Trimmed<P>(pub P);

impl<P: clap::builder::TypedValueParser> clap::builder::TypedValueParser for Trimmed<P> {
    type Value = P::Value;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<Self::Value, clap::Error> {
        let trimmed = value
            .to_str()
            .map_or(value, |v| std::ffi::OsStr::new(v.trim()));
        self.0.parse_ref(cmd, arg, trimmed)
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        self.0.possible_values()
    }
}

/// `E`'s names, trimmed ([`Trimmed`]): the value parser of an option
/// whose values are a [`clap::ValueEnum`].
pub fn trimmed_enum<E: clap::ValueEnum + Clone + Send + Sync + 'static>(
) -> Trimmed<clap::builder::EnumValueParser<E>> {
    Trimmed(clap::builder::EnumValueParser::new())
}

/// A validated list of durations in ns, ascending, without duplicates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NsList(pub Vec<u64>);

pub(crate) fn parse_ns_list(s: &str) -> Result<NsList, String> {
    sorted_list(s, |p| parse_ns(p.trim())).map(NsList)
}

/// A comma-separated list, each item parsed by `one`, ascending, without
/// duplicates.
fn sorted_list<T: Ord>(s: &str, one: impl Fn(&str) -> Result<T, String>) -> Result<Vec<T>, String> {
    let mut v = s.split(',').map(one).collect::<Result<Vec<T>, String>>()?;
    v.sort_unstable();
    v.dedup();
    Ok(v)
}

/// A validated list of core counts, ascending, without duplicates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CoreList(pub Vec<u32>);

pub(crate) fn parse_core_count(s: &str, max: u32) -> Result<u32, String> {
    let s = s.trim();
    match s.parse::<u64>() {
        Ok(n) if (1..=u64::from(max)).contains(&n) => Ok(n as u32),
        Ok(n) => Err(format!("{n} cores is out of range: allowed 1 to {max}")),
        Err(_) => Err(format!(
            "'{s}' is not a number of cores: allowed 1 to {max}, \
             in lists like 1,2,4 and ranges like 1-28"
        )),
    }
}

/// A list of core counts and ranges, each 1 to `max`, ascending, without
/// duplicates.
pub(crate) fn parse_core_list(s: &str, max: u32) -> Result<CoreList, String> {
    if s.trim().is_empty() {
        return Err(
            "an empty list of cores: give counts like 1,2,4 or ranges like 1-28".to_string(),
        );
    }
    let mut v = Vec::new();
    for part in s.split(',') {
        let part = part.trim();
        match part.split_once('-') {
            Some((lo, hi)) if !lo.trim().is_empty() => {
                let (lo, hi) = (parse_core_count(lo, max)?, parse_core_count(hi, max)?);
                if lo > hi {
                    return Err(format!(
                        "'{part}' is a range from high to low: allowed LOW-HIGH, e.g. {hi}-{lo}"
                    ));
                }
                v.extend(lo..=hi);
            }
            _ => v.push(parse_core_count(part, max)?),
        }
    }
    v.sort_unstable();
    v.dedup();
    Ok(CoreList(v))
}

/// A validated list of percentages, ascending, without duplicates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PctList(pub Vec<u32>);

pub(crate) fn parse_pcts(s: &str) -> Result<PctList, String> {
    sorted_list(s, parse_pct).map(PctList)
}

pub(crate) fn parse_count(s: &str, what: &str, max: u64) -> Result<u64, String> {
    match s.trim().parse::<u64>() {
        Ok(n) if (1..=max).contains(&n) => Ok(n),
        Ok(n) => Err(format!("{n} {what} is out of range: allowed 1 to {max}")),
        Err(_) => Err(format!(
            "'{}' is not a number of {what}: allowed 1 to {max}",
            s.trim()
        )),
    }
}

/// A run named on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunRef {
    /// A run id.
    Id(i64),
    /// The newest run.
    Last,
}

/// A validated list of thread counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadList(pub Vec<u32>);

pub(crate) fn parse_run(s: &str) -> Result<RunRef, String> {
    let s = s.trim();
    if s == "last" {
        return Ok(RunRef::Last);
    }
    match s.parse::<i64>() {
        Ok(n) if n >= 1 => Ok(RunRef::Id(n)),
        _ => Err(format!(
            "'{s}' is not a run: allowed a positive integer id or `last` (`locklab runs` lists them)"
        )),
    }
}

pub(crate) fn parse_thread_count(s: &str) -> Result<u32, String> {
    match s.trim().parse::<u64>() {
        Ok(n) if (1..=MAX_THREADS as u64).contains(&n) => Ok(n as u32),
        Ok(n) => Err(format!(
            "thread count {n} is out of range: allowed 1 to {MAX_THREADS}"
        )),
        Err(_) => Err(format!(
            "'{}' is not a thread count: allowed 1 to {MAX_THREADS}",
            s.trim()
        )),
    }
}

pub(crate) fn parse_threads(s: &str) -> Result<ThreadList, String> {
    let mut v = Vec::new();
    for part in s.split(',') {
        let n = parse_thread_count(part)?;
        if !v.contains(&n) {
            v.push(n);
        }
    }
    Ok(ThreadList(v))
}

pub(crate) fn parse_ns(s: &str) -> Result<u64, String> {
    let s = s.trim();
    if s.starts_with('-') {
        return Err(format!(
            "'{s}' is a negative duration: allowed 0 to {MAX_NS} ns (one second)"
        ));
    }
    match s.parse::<u64>() {
        Ok(n) if n <= MAX_NS => Ok(n),
        Ok(n) => Err(format!(
            "{n} ns is too long: allowed 0 to {MAX_NS} ns (one second)"
        )),
        Err(_) => Err(format!(
            "'{s}' is not a duration: allowed a whole number of nanoseconds from 0 to {MAX_NS}"
        )),
    }
}

pub(crate) fn parse_pct(s: &str) -> Result<u32, String> {
    match s.trim().parse::<u64>() {
        Ok(n) if n <= 100 => Ok(n as u32),
        Ok(n) => Err(format!("{n} % is out of range: allowed 0 to 100")),
        Err(_) => Err(format!(
            "'{}' is not a percentage: allowed 0 to 100",
            s.trim()
        )),
    }
}

pub(crate) fn parse_secs(s: &str) -> Result<f64, String> {
    let s = s.trim();
    match s.parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 && x <= MAX_SECS => Ok(x),
        Ok(_) => Err(format!(
            "'{s}' seconds is out of range: allowed more than 0 up to {MAX_SECS}"
        )),
        Err(_) => Err(format!(
            "'{s}' is not a number of seconds: allowed more than 0 up to {MAX_SECS} (e.g. 0.5)"
        )),
    }
}

pub(crate) fn parse_reps(s: &str) -> Result<u32, String> {
    let s = s.trim();
    match s.parse::<u32>() {
        Ok(n) if (1..=1000).contains(&n) => Ok(n),
        _ => Err(format!("'{s}' repetitions: allowed 1 to 1000")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_lists_parse_and_reject_zero_and_absurd() {
        assert_eq!(parse_threads("1,2,8,2").unwrap(), ThreadList(vec![1, 2, 8]));
        assert!(parse_threads("0").unwrap_err().contains("1 to 256"));
        assert!(parse_threads("100000").unwrap_err().contains("100000"));
        assert!(parse_threads("two").unwrap_err().contains("'two'"));
        assert!(parse_threads("1,,2").is_err());
    }

    #[test]
    fn durations_reject_negative_non_numeric_and_too_long() {
        assert_eq!(parse_ns("0").unwrap(), 0);
        assert!(parse_ns("-5").unwrap_err().contains("'-5'"));
        assert!(parse_ns("1e3").is_err());
        assert!(parse_ns("2000000000").is_err());
        assert!(parse_secs("0").is_err());
        assert!(parse_secs("-1").is_err());
        assert!(parse_secs("NaN").is_err());
        assert!(parse_secs("inf").is_err());
        assert_eq!(parse_secs("0.5").unwrap(), 0.5);
    }

    #[test]
    fn reps_and_runs() {
        assert!(parse_reps("0").is_err());
        assert_eq!(parse_reps("3").unwrap(), 3);
        assert_eq!(parse_run("last").unwrap(), RunRef::Last);
        assert_eq!(parse_run("12").unwrap(), RunRef::Id(12));
        assert!(parse_run("0").is_err() && parse_run("x").is_err());
    }
}
