//! Baselines: runs saved under a name to compare with.

use super::engine::{Cols, DbError, Sql};
use super::errors::{no_run, write_err};
use super::handle::Store;
use crate::core::error::Result;
use crate::core::machine;

/// A run saved under a name (`locklab baseline save`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Baseline {
    /// The baseline's name.
    pub name: String,
    /// The run it names.
    pub run_id: i64,
    /// When it was saved, RFC 3339 UTC.
    pub saved: String,
}

impl Store {
    /// Saves run `run` under `name`, replacing a baseline of that name;
    /// returns the run the name named before, if any. The run itself is
    /// not changed. The name is not checked here (the CLI checks it).
    pub fn save_baseline(&mut self, name: &str, run: i64) -> Result<Option<i64>> {
        let at = self.at.clone();
        let fail = |e: DbError| write_err(&at, &format!("cannot save baseline '{name}'"), e);
        let tx = self.engine.write().map_err(fail)?;
        if tx
            .row("SELECT 1 FROM runs WHERE id = ?1", &[run.into()])
            .map_err(fail)?
            .is_none()
        {
            return Err(no_run(&at, run));
        }
        let before = tx
            .row(
                "SELECT run_id FROM baselines WHERE name = ?1",
                &[name.into()],
            )
            .map_err(fail)?
            .map(|row| Cols(&row).int(0))
            .transpose()
            .map_err(|e| fail(e.into()))?;
        tx.exec(
            "INSERT INTO baselines (name, run_id, saved) VALUES (?1, ?2, ?3)
             ON CONFLICT(name) DO UPDATE SET run_id = excluded.run_id, saved = excluded.saved",
            &[name.into(), run.into(), machine::now_rfc3339().into()],
        )
        .map_err(fail)?;
        tx.commit().map_err(fail)?;
        Ok(before)
    }

    /// Every baseline, by name.
    pub fn baselines(&self) -> Result<Vec<Baseline>> {
        let fail = |e: DbError| self.err("cannot read baselines", e);
        let rows = self
            .engine
            .rows(
                "SELECT name, run_id, saved FROM baselines ORDER BY name",
                &[],
            )
            .map_err(fail)?;
        rows.iter()
            .map(|row| {
                let c = Cols(row);
                Ok(Baseline {
                    name: c.text(0)?,
                    run_id: c.int(1)?,
                    saved: c.text(2)?,
                })
            })
            .collect::<std::result::Result<_, DbError>>()
            .map_err(fail)
    }

    /// The run saved under `name`, if there is such a baseline.
    pub fn baseline(&self, name: &str) -> Result<Option<i64>> {
        let fail = |e: DbError| self.err("cannot read baselines", e);
        self.engine
            .row(
                "SELECT run_id FROM baselines WHERE name = ?1",
                &[name.into()],
            )
            .map_err(fail)?
            .map(|row| Cols(&row).int(0))
            .transpose()
            .map_err(|e| fail(e.into()))
    }

    /// Deletes baseline `name` (the run stays); whether there was one.
    pub fn delete_baseline(&mut self, name: &str) -> Result<bool> {
        let n = self
            .engine
            .exec("DELETE FROM baselines WHERE name = ?1", &[name.into()])
            .map_err(|e| self.err(&format!("cannot delete baseline '{name}'"), e))?;
        Ok(n > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use super::*;

    /// A file of schema 7 (before baselines) with a stored run opens,
    /// migrates, keeps its run, and gains the baselines table: a baseline
    /// saved there reads back, replaces one of the same name, and deleting
    /// it leaves the run.
    #[test]
    fn a_schema_7_file_gains_baselines() {
        let dir = tempfile::tempdir().unwrap();
        let run = {
            let store = store_at(&dir, 7);
            // A finished run of schema 7's columns.
            store.conn().execute_batch(OLD_RUN).unwrap();
            store.conn().last_insert_rowid()
        };
        assert_eq!(header(&db(&dir)).1, 7);
        assert!(!header(&db(&dir)).2.contains(&"baselines".to_string()));
        let mut store = Store::open(db(&dir)).unwrap();
        let (_, version, objects) = header(&db(&dir));
        assert_eq!(version, SCHEMA_VERSION);
        assert!(objects.contains(&"baselines".to_string()), "{objects:?}");
        let before = store.load(run).unwrap();
        assert!(before.0.complete && before.0.kind == "k", "{:?}", before.0);

        baselines_round_trip_in(&mut store, run);
        // Saving and deleting baselines left the runs as they were.
        assert_eq!(store.load(run).unwrap(), before);
    }

    #[test]
    fn baselines_round_trip_on_both_engines() {
        let dir = tempfile::tempdir().unwrap();
        for at in stores(&dir, "t", "baselines_round_trip_on_both_engines") {
            let mut store = at.open();
            let run = store.begin_run(&meta()).unwrap();
            let before = store.load(run).unwrap();
            baselines_round_trip_in(&mut store, run);
            assert_eq!(store.load(run).unwrap(), before);
        }
    }

    /// Saves, lists, replaces and deletes baselines of `store`, which holds
    /// run `run`: a baseline reads back, replaces one of the same name, and
    /// deleting it leaves the run.
    fn baselines_round_trip_in(store: &mut Store, run: i64) {
        assert!(store.baselines().unwrap().is_empty());
        assert_eq!(store.save_baseline("main", run).unwrap(), None);
        let other = store.begin_run(&meta()).unwrap();
        assert_eq!(store.save_baseline("next", other).unwrap(), None);
        assert_eq!(store.save_baseline("main", other).unwrap(), Some(run));
        assert_eq!(store.baseline("main").unwrap(), Some(other));
        assert_eq!(store.baseline("none").unwrap(), None);
        let names: Vec<String> = store
            .baselines()
            .unwrap()
            .into_iter()
            .map(|b| b.name)
            .collect();
        assert_eq!(names, ["main", "next"]);
        expect_input_err(store.save_baseline("x", 999), "999");
        assert!(store.delete_baseline("main").unwrap());
        assert!(!store.delete_baseline("main").unwrap());
        assert!(store.has_run(other).unwrap());
    }
}
