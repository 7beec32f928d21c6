//! Baselines: runs saved under a name to compare with.

use rusqlite::{params, OptionalExtension};

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
        let path = self.path.clone();
        let fail = |e| write_err(&path, &format!("cannot save baseline '{name}'"), e);
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(fail)?;
        let known: Option<i64> = tx
            .query_row("SELECT 1 FROM runs WHERE id = ?1", [run], |r| r.get(0))
            .optional()
            .map_err(fail)?;
        if known.is_none() {
            return Err(no_run(&path, run));
        }
        let before: Option<i64> = tx
            .query_row(
                "SELECT run_id FROM baselines WHERE name = ?1",
                [name],
                |r| r.get(0),
            )
            .optional()
            .map_err(fail)?;
        tx.execute(
            "INSERT INTO baselines (name, run_id, saved) VALUES (?1, ?2, ?3)
             ON CONFLICT(name) DO UPDATE SET run_id = excluded.run_id, saved = excluded.saved",
            params![name, run, machine::now_rfc3339()],
        )
        .map_err(fail)?;
        tx.commit().map_err(fail)?;
        Ok(before)
    }

    /// Every baseline, by name.
    pub fn baselines(&self) -> Result<Vec<Baseline>> {
        let fail = |e| self.err("cannot read baselines", e);
        let mut stmt = self
            .conn
            .prepare("SELECT name, run_id, saved FROM baselines ORDER BY name")
            .map_err(fail)?;
        let rows = stmt
            .query_map([], |r| {
                Ok(Baseline {
                    name: r.get(0)?,
                    run_id: r.get(1)?,
                    saved: r.get(2)?,
                })
            })
            .map_err(fail)?;
        rows.collect::<rusqlite::Result<Vec<_>>>().map_err(fail)
    }

    /// The run saved under `name`, if there is such a baseline.
    pub fn baseline(&self, name: &str) -> Result<Option<i64>> {
        self.conn
            .query_row(
                "SELECT run_id FROM baselines WHERE name = ?1",
                [name],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.err("cannot read baselines", e))
    }

    /// Deletes baseline `name` (the run stays); whether there was one.
    pub fn delete_baseline(&mut self, name: &str) -> Result<bool> {
        let n = self
            .conn
            .execute("DELETE FROM baselines WHERE name = ?1", [name])
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
            store.conn.execute_batch(OLD_RUN).unwrap();
            store.conn.last_insert_rowid()
        };
        assert_eq!(header(&db(&dir)).1, 7);
        assert!(!header(&db(&dir)).2.contains(&"baselines".to_string()));
        let mut store = Store::open(&db(&dir)).unwrap();
        let (_, version, objects) = header(&db(&dir));
        assert_eq!(version, SCHEMA_VERSION);
        assert!(objects.contains(&"baselines".to_string()), "{objects:?}");
        let before = store.load(run).unwrap();
        assert!(before.0.complete && before.0.kind == "k", "{:?}", before.0);

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
        // Saving and deleting baselines left the runs as they were.
        assert_eq!(store.load(run).unwrap(), before);
        assert!(store.has_run(other).unwrap());
    }
}
