//! Runs copied from one store to another (`locklab push`, `locklab pull`),
//! each at most once: a run is known in every store by its identity
//! (`runs.uuid`, schema 9), not by its id, which is each store's own.
//!
//! A copy is one transaction that takes the destination's write lock
//! first (engine.rs), looks the identity up and writes: the run whole with
//! every point and repetition, or nothing. Two processes pushing the same
//! run at once therefore store it once (the second finds it), and a
//! process that benchmarks into the destination meanwhile waits for the
//! lock, as it does for another benchmark's points.
//!
//! A run copied while it was still being written (or one interrupted) may
//! have gained points in its own store since: a later copy that brings more
//! points than the destination holds, or the run's finish, replaces the
//! destination's points with the source's, in the same one transaction.

use super::engine::{Cols, DbError, Sql};
use super::handle::Store;
use super::runs::{insert_point, insert_run};
use crate::core::error::{LabError, Result};
use crate::core::results::{Point, RunMeta};

/// What a copy did with a run in the destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case", tag = "outcome", content = "id")]
pub enum Copied {
    /// Stored as a new run, with this id.
    New(i64),
    /// Already there with as many points (or finished): unchanged.
    Already(i64),
    /// There with fewer points, or unfinished where the source is finished:
    /// its points replaced by the source's.
    Updated(i64),
}

impl Copied {
    /// The run's id in the destination.
    pub fn id(self) -> i64 {
        match self {
            Copied::New(id) | Copied::Already(id) | Copied::Updated(id) => id,
        }
    }
}

impl Store {
    /// Stores a copy of the run `meta` (of another store) with its
    /// `points`, unless this store has it already (see the module
    /// documentation). `meta.uuid` must be set: it is how the run is known.
    pub fn store_copy(&mut self, meta: &RunMeta, points: &[Point]) -> Result<Copied> {
        let shown = meta.id_text();
        let uuid = meta.uuid.as_deref().ok_or_else(|| {
            LabError::input(format!(
                "run {shown} has no identity (its row is damaged): it cannot be copied"
            ))
        })?;
        let at = self.at.clone();
        let fail = |e: DbError| {
            super::errors::write_err(&at, &format!("cannot store a copy of run {shown}"), e)
        };
        let tx = self.engine.write().map_err(fail)?;
        let there = tx
            .row(
                "SELECT id, complete, (SELECT count(*) FROM points p WHERE p.run_id = runs.id)
                 FROM runs WHERE uuid = ?1",
                &[uuid.into()],
            )
            .map_err(fail)?
            .map(|row| {
                let c = Cols(&row);
                Ok::<_, DbError>((c.int(0)?, c.bool(1)?, c.int(2)?))
            })
            .transpose()
            .map_err(fail)?;
        let copied = match there {
            None => {
                let id = insert_run(&tx, meta, uuid, meta.finished.as_deref(), meta.complete)
                    .map_err(fail)?;
                for p in points {
                    insert_point(&tx, id, p).map_err(fail)?;
                }
                Copied::New(id)
            }
            Some((id, complete, n)) => {
                let more = points.len() as i64 > n;
                let finishes = meta.complete && !complete;
                if complete || !(more || finishes) {
                    return Ok(Copied::Already(id));
                }
                // The repetitions go with their points (ON DELETE CASCADE).
                tx.exec("DELETE FROM points WHERE run_id = ?1", &[id.into()])
                    .map_err(fail)?;
                for p in points {
                    insert_point(&tx, id, p).map_err(fail)?;
                }
                tx.exec(
                    "UPDATE runs SET finished = ?2, complete = ?3 WHERE id = ?1",
                    &[
                        id.into(),
                        meta.finished.as_deref().into(),
                        meta.complete.into(),
                    ],
                )
                .map_err(fail)?;
                Copied::Updated(id)
            }
        };
        tx.commit().map_err(fail)?;
        Ok(copied)
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use super::*;

    fn stored_runs(s: &Store) -> Vec<(Option<String>, usize, bool)> {
        let mut v: Vec<_> = s
            .runs()
            .unwrap()
            .into_iter()
            .map(|r| (r.meta.uuid, r.points, r.meta.complete))
            .collect();
        v.sort();
        v
    }

    #[test]
    fn a_run_is_copied_whole_once_and_keeps_its_identity() {
        let dir = tempfile::tempdir().unwrap();
        for b in stores(&dir, "b", "a_run_is_copied_whole_once") {
            let a = Store::open(dir.path().join("a.db")).unwrap();
            a_run_is_copied_whole_once_into(a, b.open());
            std::fs::remove_file(dir.path().join("a.db")).unwrap();
        }
    }

    fn a_run_is_copied_whole_once_into(mut a: Store, mut b: Store) {
        // An unrelated run in b first, so that ids differ between stores.
        let other = b.begin_run(&meta()).unwrap();
        let run = a.begin_run(&meta()).unwrap();
        for threads in [1, 2] {
            a.add_point(run, &point("tas", threads)).unwrap();
        }
        a.finish_run(run).unwrap();
        let (meta, points) = a.load(run).unwrap();
        let uuid = meta.uuid.clone().expect("a stored run has an identity");

        let first = b.store_copy(&meta, &points).unwrap();
        assert!(matches!(first, Copied::New(id) if id != other), "{first:?}");
        assert_eq!(
            b.store_copy(&meta, &points).unwrap(),
            Copied::Already(first.id())
        );
        let (copy, copied_points) = b.load(first.id()).unwrap();
        assert_eq!(copy.uuid.as_deref(), Some(uuid.as_str()));
        assert_eq!(
            RunMeta {
                id: meta.id,
                ..copy
            },
            meta,
            "the copy is the run, but for its id"
        );
        assert_eq!(copied_points, points);
        assert_eq!(b.runs().unwrap().len(), 2);
    }

    #[test]
    fn a_copy_of_an_unfinished_run_is_brought_up_to_date_once() {
        let dir = tempfile::tempdir().unwrap();
        for b in stores(&dir, "b", "a_copy_of_an_unfinished_run") {
            let a = Store::open(dir.path().join("a.db")).unwrap();
            a_copy_of_an_unfinished_run_into(a, b.open());
            std::fs::remove_file(dir.path().join("a.db")).unwrap();
        }
    }

    fn a_copy_of_an_unfinished_run_into(mut a: Store, mut b: Store) {
        let run = a.begin_run(&meta()).unwrap();
        a.add_point(run, &point("tas", 1)).unwrap();
        let (meta, points) = a.load(run).unwrap();
        let id = b.store_copy(&meta, &points).unwrap().id();
        assert_eq!(stored_runs(&b), vec![(meta.uuid.clone(), 1, false)]);

        a.add_point(run, &point("tas", 2)).unwrap();
        let (meta, points) = a.load(run).unwrap();
        assert_eq!(b.store_copy(&meta, &points).unwrap(), Copied::Updated(id));
        assert_eq!(stored_runs(&b), vec![(meta.uuid.clone(), 2, false)]);

        a.finish_run(run).unwrap();
        let (meta, points) = a.load(run).unwrap();
        assert_eq!(b.store_copy(&meta, &points).unwrap(), Copied::Updated(id));
        assert_eq!(b.store_copy(&meta, &points).unwrap(), Copied::Already(id));
        assert_eq!(stored_runs(&b), vec![(meta.uuid.clone(), 2, true)]);
        assert_eq!(b.load(id).unwrap().1, points);
    }

    #[test]
    fn a_run_without_an_identity_is_refused_and_nothing_is_written() {
        let dir = tempfile::tempdir().unwrap();
        for b in stores(&dir, "b", "a_run_without_an_identity_is_refused") {
            let mut b = b.open();
            let e = b.store_copy(&meta(), &[point("tas", 1)]).unwrap_err();
            assert!(e.msg.contains("no identity"), "{}", e.msg);
            assert!(b.runs().unwrap().is_empty());
        }
    }
}
