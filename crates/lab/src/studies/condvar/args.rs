//! The command line of `bench condvar`.

use super::queues::{Impl, Signal};
use super::runner::Pair;
use crate::core::args::{name_items, parse_ns, parse_reps, parse_secs, MAX_THREADS};
use clap::Args;

/// Parameters of `bench condvar`.
#[derive(Debug, Args)]
pub struct CondvarArgs {
    /// Implementations: `all`, or comma-separated names: locklab
    /// (locklab::Mutex and locklab::Condvar), std, parking_lot.
    #[arg(long, value_parser = parse_impls, default_value = "all")]
    pub impls: ImplList,
    /// Producers × consumers, comma-separated PxC (each 1 to 128).
    #[arg(long, value_parser = parse_pairs, default_value = "1x1,1x4,4x1,4x4")]
    pub pairs: PairList,
    /// Items the queue holds at most.
    #[arg(long, allow_negative_numbers = true, value_parser = parse_capacity, default_value = "16")]
    pub capacity: usize,
    /// Where a push or pop notifies the other side: under (holding the
    /// mutex), after (just after releasing it), or both, comma-separated.
    #[arg(long, value_parser = parse_signals, default_value = "under")]
    pub signal: SignalList,
    /// Each producer sleeps this long after each item, ns (0: never).
    #[arg(long, allow_negative_numbers = true, value_parser = parse_ns, default_value = "0")]
    pub producer_sleep_ns: u64,
    /// Measured seconds per repetition.
    #[arg(long, allow_negative_numbers = true, value_parser = parse_secs, default_value = "0.5")]
    pub secs: f64,
    /// Repetitions per point.
    #[arg(long, allow_negative_numbers = true, value_parser = parse_reps, default_value = "3")]
    pub reps: u32,
}

/// Most producers, or consumers, of a pairing (together at most the
/// lab's thread limit).
pub const MAX_SIDE: u32 = MAX_THREADS / 2;

/// Largest queue capacity.
pub const MAX_CAPACITY: usize = 1 << 20;

/// A validated `--impls`: names in the order given, without duplicates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImplList(pub Vec<Impl>);

/// A validated `--pairs`, in the order given, without duplicates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PairList(pub Vec<Pair>);

/// A validated `--signal`, in the order given, without duplicates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignalList(pub Vec<Signal>);

fn push_new<T: PartialEq>(v: &mut Vec<T>, x: T) {
    if !v.contains(&x) {
        v.push(x);
    }
}

fn impl_names() -> String {
    Impl::ALL.map(Impl::name).join(", ")
}

pub(crate) fn parse_impls(s: &str) -> Result<ImplList, String> {
    let items = name_items(s).ok_or_else(|| {
        format!(
            "'{s}': an empty name in the list; allowed all, {}",
            impl_names()
        )
    })?;
    let mut v = Vec::new();
    for item in items {
        if item == "all" {
            Impl::ALL.into_iter().for_each(|i| push_new(&mut v, i));
        } else {
            let i = Impl::from_name(item).ok_or_else(|| {
                format!(
                    "unknown implementation '{item}'; allowed all, {}",
                    impl_names()
                )
            })?;
            push_new(&mut v, i);
        }
    }
    Ok(ImplList(v))
}

fn parse_side(s: &str, pair: &str) -> Result<u32, String> {
    match s.trim().parse::<u64>() {
        Ok(n) if (1..=u64::from(MAX_SIDE)).contains(&n) => Ok(n as u32),
        _ => Err(format!(
            "'{pair}' is not a pairing: allowed PxC, P producers and C consumers, each 1 to \
             {MAX_SIDE} (e.g. 1x1,4x4)"
        )),
    }
}

pub(crate) fn parse_pairs(s: &str) -> Result<PairList, String> {
    let items = name_items(s).ok_or_else(|| {
        format!("'{s}': an empty pairing in the list; allowed PxC, e.g. 1x1,1x4,4x1,4x4")
    })?;
    let mut v = Vec::new();
    for item in items {
        let Some((p, c)) = item.split_once(['x', 'X']) else {
            return Err(parse_side("", item).unwrap_err());
        };
        push_new(
            &mut v,
            Pair {
                producers: parse_side(p, item)?,
                consumers: parse_side(c, item)?,
            },
        );
    }
    Ok(PairList(v))
}

pub(crate) fn parse_capacity(s: &str) -> Result<usize, String> {
    let s = s.trim();
    match s.parse::<u64>() {
        Ok(n) if (1..=MAX_CAPACITY as u64).contains(&n) => Ok(n as usize),
        _ => Err(format!(
            "'{s}' is not a queue capacity: allowed 1 to {MAX_CAPACITY} items"
        )),
    }
}

pub(crate) fn parse_signals(s: &str) -> Result<SignalList, String> {
    let allowed = "allowed under, after, or both as under,after";
    let items =
        name_items(s).ok_or_else(|| format!("'{s}': an empty name in the list; {allowed}"))?;
    let mut v = Vec::new();
    for item in items {
        let sig = Signal::ALL
            .into_iter()
            .find(|x| x.as_str() == item)
            .ok_or_else(|| format!("'{item}' is not where to signal: {allowed}"))?;
        push_new(&mut v, sig);
    }
    Ok(SignalList(v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairings_parse_and_bad_ones_are_named() {
        let p = parse_pairs(" 1x1, 4X2,1x1").unwrap();
        assert_eq!(
            p.0,
            vec![
                Pair {
                    producers: 1,
                    consumers: 1
                },
                Pair {
                    producers: 4,
                    consumers: 2
                }
            ]
        );
        for bad in ["0x1", "1x0", "1x", "x1", "4", "1x129", "ax2", "-1x2"] {
            let e = parse_pairs(bad).unwrap_err();
            assert!(
                e.contains(&format!("'{bad}'")) && e.contains("1 to 128"),
                "{bad}: {e}"
            );
        }
        assert!(parse_pairs("1x1,,2x2").unwrap_err().contains("empty"));
    }

    #[test]
    fn implementations_and_signals_parse() {
        assert_eq!(parse_impls("all").unwrap().0, Impl::ALL.to_vec());
        assert_eq!(
            parse_impls("std, locklab,std").unwrap().0,
            vec![Impl::Std, Impl::Locklab]
        );
        let e = parse_impls("locklab,pthread").unwrap_err();
        assert!(e.contains("'pthread'") && e.contains("parking_lot"), "{e}");
        assert_eq!(
            parse_signals("after,under").unwrap().0,
            vec![Signal::After, Signal::Under]
        );
        assert!(parse_signals("sometimes")
            .unwrap_err()
            .contains("'sometimes'"));
        assert_eq!(parse_capacity("16").unwrap(), 16);
        assert!(parse_capacity("0").unwrap_err().contains("'0'"));
        assert!(parse_capacity("-3").unwrap_err().contains("'-3'"));
    }
}
