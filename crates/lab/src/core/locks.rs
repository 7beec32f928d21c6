//! The `--locks` value of the studies that measure mutexes (and of the
//! interposer's lock choice): names of the registry's mutexes, or `all`.

use crate::core::error::{LabError, Result};
use crate::core::registry::{self, Entry};

/// The names of every lock, comma-separated (for error messages).
pub fn names() -> String {
    registry::all()
        .iter()
        .map(|e| e.info.name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Looks a mutex up by name (the benchmarks measure mutexes).
pub fn find(name: &str) -> Result<&'static Entry> {
    if let Some(e) = registry::all().iter().find(|e| e.info.name == name) {
        return Ok(e);
    }
    if registry::rw_all().iter().any(|e| e.info.name == name) {
        return Err(LabError::input(format!(
            "'{name}' is a reader-writer lock: this option takes mutexes \
             (`locklab locks` says which is which); valid locks: all, {}",
            names()
        )));
    }
    Err(LabError::input(format!(
        "unknown lock '{name}'; valid locks: all, {}",
        names()
    )))
}

/// Parses a `--locks` value: `all`, or a comma-separated list of names
/// (duplicates removed, order kept).
pub fn parse_list(list: &str) -> Result<Vec<&'static Entry>> {
    let every: Vec<&'static Entry> = registry::all().iter().collect();
    registry::pick(list, &every, |e| e.info.name, &names(), find)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_all_is_everything() {
        let mut names: Vec<_> = registry::all().iter().map(|e| e.info.name).collect();
        let n = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), n, "duplicate lock name");
        assert_eq!(parse_list("all").unwrap().len(), n);
    }

    #[test]
    fn lists_keep_order_and_drop_duplicates() {
        let l = parse_list("pthread, tas,pthread").unwrap();
        let got: Vec<_> = l.iter().map(|e| e.info.name).collect();
        assert_eq!(got, ["pthread", "tas"]);
    }

    #[test]
    fn unknown_names_are_input_errors_listing_the_valid_ones() {
        let e = parse_list("tas,nosuch").expect_err("must fail");
        assert_eq!(e.code, 2);
        assert!(
            e.msg.contains("'nosuch'") && e.msg.contains("parking_lot"),
            "{}",
            e.msg
        );
        assert_eq!(parse_list("tas,,std").err().unwrap().code, 2);
    }

    #[test]
    fn a_benchmark_given_an_rwlock_says_what_it_is() {
        let e = parse_list("tas,rwsem").expect_err("must fail");
        assert_eq!(e.code, 2);
        assert!(e.msg.contains("reader-writer"), "{}", e.msg);
    }
}
