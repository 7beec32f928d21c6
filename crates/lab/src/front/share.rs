//! The commands that gather the runs of several machines in one store:
//! `locklab push` and `locklab pull` copy runs between stores, each run at
//! most once (by its identity, [`crate::core::store::Copied`]), and
//! `locklab machines` lists the machines whose runs a store holds.

use std::collections::BTreeMap;

use serde_json::json;

use crate::core::error::{LabError, Result};
use crate::core::results::Machine;
use crate::core::store::{Copied, Location, RunSummary, Store};
use crate::core::table::{self, Column};
use crate::front::cli::{Cli, RunsArg};
use crate::{noteln, outln};

/// Which way runs go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// From `--db` to another store (`push --to`).
    Push,
    /// From another store to `--db` (`pull --from`).
    Pull,
}

/// `locklab push RUN… --to OTHER` and `locklab pull RUN… --from OTHER`:
/// copies the runs named (ids, `last`, or `all`; none: all) of the source
/// into the destination, which is created if absent.
pub fn command(cli: &Cli, dir: Direction, runs: &[RunsArg], other: &Location) -> Result<i32> {
    let (from, to) = match dir {
        Direction::Push => (&cli.db, other),
        Direction::Pull => (other, &cli.db),
    };
    if from.same_store(to) {
        let flag = if dir == Direction::Push {
            "--to"
        } else {
            "--from"
        };
        return Err(LabError::input(format!(
            "{flag} {other}: that is the store itself (--db); name another store"
        )));
    }
    let source = Store::open_read_only(from)?;
    let listed = source.runs()?;
    let ids = chosen(&listed, runs, from)?;
    let mut dest = Store::open(to)?;
    let mut rows = Vec::new();
    let (mut new, mut updated, mut already) = (0, 0, 0);
    for id in ids {
        let (meta, points) = source.load(id)?;
        let copied = dest.store_copy(&meta, &points).map_err(|e| {
            // What was copied before stays: each run is its own transaction.
            let done = new + updated;
            LabError {
                msg: format!(
                    "{} ({done} run{} copied before it stay)",
                    e.msg,
                    if done == 1 { "" } else { "s" }
                ),
                ..e
            }
        })?;
        match copied {
            Copied::New(_) => new += 1,
            Copied::Updated(_) => updated += 1,
            Copied::Already(_) => already += 1,
        }
        rows.push((id, meta.uuid.unwrap_or_default(), points.len(), copied));
    }
    if cli.json {
        let list: Vec<_> = rows
            .iter()
            .map(|(id, uuid, points, c)| {
                json!({ "from_id": id, "uuid": uuid, "points": points, "to": c })
            })
            .collect();
        outln!(
            "{}",
            serde_json::to_string_pretty(&json!({
                "from": from.to_string(),
                "to": to.to_string(),
                "runs": list,
            }))
            .expect("serialises")
        )?;
        return Ok(0);
    }
    let mut out = String::new();
    let mut cells = vec![vec![
        "run".to_string(),
        format!("in {to}"),
        "points".to_string(),
        String::new(),
    ]];
    for (id, _, points, c) in &rows {
        let what = match c {
            Copied::New(_) => "new",
            Copied::Updated(_) => "updated (it had fewer points, or was unfinished)",
            Copied::Already(_) => "already there",
        };
        cells.push(vec![
            format!("#{id}"),
            format!("#{}", c.id()),
            points.to_string(),
            what.to_string(),
        ]);
    }
    if !rows.is_empty() {
        table::layout(
            &mut out,
            &cells,
            &[Column::RIGHT, Column::RIGHT, Column::RIGHT, Column::LEFT],
            2,
        );
    }
    crate::core::out::print(&out)?;
    noteln!(
        "{} {} run{} from {} to {}: {new} new, {updated} updated, {already} already there",
        if dir == Direction::Push {
            "pushed"
        } else {
            "pulled"
        },
        rows.len(),
        if rows.len() == 1 { "" } else { "s" },
        from,
        to
    );
    Ok(0)
}

/// The ids of the runs named, oldest first, each once; none named is all.
fn chosen(listed: &[RunSummary], runs: &[RunsArg], db: &Location) -> Result<Vec<i64>> {
    let all: Vec<i64> = listed.iter().rev().filter_map(|r| r.meta.id).collect();
    if runs.is_empty() || runs.contains(&RunsArg::All) {
        return Ok(all);
    }
    let mut ids = Vec::new();
    for r in runs {
        let id = match *r {
            RunsArg::Id(id) => id,
            RunsArg::Last => *all
                .last()
                .ok_or_else(|| LabError::input(format!("{db}: no runs stored yet")))?,
            RunsArg::All => unreachable!("handled above"),
        };
        if !all.contains(&id) {
            return Err(LabError::input(format!(
                "no run {id} in {}; `locklab runs` lists them",
                db
            )));
        }
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    ids.sort_unstable();
    Ok(ids)
}

/// One machine of a store, as `locklab machines` lists it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct MachineRow {
    /// Its identity; `None` for runs stored before identities were
    /// recorded, which are grouped by host, CPU and cores.
    pub id: Option<String>,
    /// The facts of its newest run.
    pub machine: Machine,
    /// Runs it made.
    pub runs: usize,
    /// When its first and newest runs started.
    pub first: String,
    /// See `first`.
    pub last: String,
    /// Git revisions of the lab its runs were made with, oldest first.
    pub revisions: Vec<String>,
}

/// The machines whose runs `runs` are, the one with the newest run first.
pub fn machines(runs: &[RunSummary]) -> Vec<MachineRow> {
    let mut groups: BTreeMap<String, MachineRow> = BTreeMap::new();
    // Oldest first, so that each group ends with its newest run's facts.
    for r in runs.iter().rev().filter(|r| r.problem.is_none()) {
        let m = &r.meta.machine;
        let row = groups.entry(m.key()).or_insert_with(|| MachineRow {
            id: m.id.clone(),
            machine: m.clone(),
            runs: 0,
            first: r.meta.started.clone(),
            last: r.meta.started.clone(),
            revisions: Vec::new(),
        });
        row.runs += 1;
        row.machine = m.clone();
        row.first = row.first.clone().min(r.meta.started.clone());
        row.last = row.last.clone().max(r.meta.started.clone());
        if !row.revisions.contains(&m.git_rev) {
            row.revisions.push(m.git_rev.clone());
        }
    }
    let mut rows: Vec<MachineRow> = groups.into_values().collect();
    rows.sort_by(|a, b| b.last.cmp(&a.last).then_with(|| a.id.cmp(&b.id)));
    rows
}

/// `locklab machines`: the machines whose runs the store holds.
pub fn machines_command(cli: &Cli) -> Result<i32> {
    let runs = match Store::open_existing(&cli.db)? {
        Some(store) => store.runs()?,
        None => Vec::new(),
    };
    let rows = machines(&runs);
    if cli.json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&json!({ "machines": rows })).expect("serialises")
        )?;
        return Ok(0);
    }
    crate::core::out::print(&machines_text(&rows))?;
    Ok(0)
}

/// The machines as a table: identity, host, CPU, cores, RTM, kernel, runs
/// and when.
pub fn machines_text(rows: &[MachineRow]) -> String {
    if rows.is_empty() {
        return "no runs stored yet\n".to_string();
    }
    let mut cells = vec![[
        "machine", "host", "cpu", "cores", "rtm", "kernel", "runs", "first", "last",
    ]
    .map(str::to_string)
    .to_vec()];
    for r in rows {
        let m = &r.machine;
        cells.push(vec![
            m.name().to_string(),
            m.hostname.clone(),
            m.cpu_model.clone(),
            m.cores.to_string(),
            m.rtm_word("?").to_string(),
            kernel_release(&m.kernel),
            r.runs.to_string(),
            r.first.clone(),
            r.last.clone(),
        ]);
    }
    let mut out = String::new();
    let right = [false, false, false, true, false, false, true, false, false];
    let align: Vec<Column> = right.iter().map(|&r| Column::fit(r)).collect();
    table::layout(&mut out, &cells, &align, 2);
    out
}

/// The release of a kernel as `uname` gives it (`Linux 6.1.0-18-amd64 #1
/// SMP …` is `6.1.0-18-amd64`).
fn kernel_release(kernel: &str) -> String {
    let mut words = kernel.split_whitespace();
    match (words.next(), words.next()) {
        (Some("Linux"), Some(release)) => release.to_string(),
        _ => kernel.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::results::RunMeta;

    fn run(id: i64, machine: Option<&str>, host: &str, started: &str, rev: &str) -> RunSummary {
        RunSummary {
            meta: RunMeta {
                id: Some(id),
                uuid: Some(format!("u{id}")),
                kind: "bench demo".into(),
                command: "locklab bench demo".into(),
                params: json!({}),
                machine: Machine {
                    id: machine.map(str::to_string),
                    hostname: host.into(),
                    cpu_model: format!("CPU of {host}"),
                    cores: 2,
                    git_rev: rev.into(),
                    kernel: "Linux 6.1.0-18-amd64 #1 SMP".into(),
                    ..Machine::default()
                },
                started: started.into(),
                finished: None,
                complete: true,
            },
            points: 1,
            problem: None,
        }
    }

    #[test]
    fn machines_are_told_apart_by_identity_and_old_runs_by_host() {
        // Newest first, as the store lists them.
        let runs = [
            run(5, Some("ci-amd"), "runner-2", "2026-01-05T00:00:00Z", "bbb"),
            run(
                4,
                Some("0b5e7c1a-0000-5000-8000-000000000000"),
                "box",
                "2026-01-04T00:00:00Z",
                "aaa",
            ),
            run(3, Some("ci-amd"), "runner-1", "2026-01-03T00:00:00Z", "aaa"),
            run(2, None, "box", "2026-01-02T00:00:00Z", "aaa"),
            run(1, None, "box", "2026-01-01T00:00:00Z", "000"),
        ];
        let rows = machines(&runs);
        let ids: Vec<_> = rows.iter().map(|r| (r.id.clone(), r.runs)).collect();
        assert_eq!(
            ids,
            vec![
                (Some("ci-amd".to_string()), 2),
                (Some("0b5e7c1a-0000-5000-8000-000000000000".to_string()), 1),
                (None, 2),
            ]
        );
        // A machine shows its newest run's facts, and every revision.
        assert_eq!(rows[0].machine.hostname, "runner-2");
        assert_eq!(rows[0].revisions, ["aaa", "bbb"]);
        assert_eq!(
            (rows[2].first.as_str(), rows[2].last.as_str()),
            ("2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z")
        );
        let text = machines_text(&rows);
        assert!(
            text.contains("0b5e7c1a ") && !text.contains("0b5e7c1a-"),
            "{text}"
        );
        assert!(
            text.contains("ci-amd") && text.contains("(not recorded)"),
            "{text}"
        );
        assert!(
            text.contains("6.1.0-18-amd64") && !text.contains("SMP"),
            "{text}"
        );
    }

    #[test]
    fn named_runs_are_checked_and_taken_once_oldest_first() {
        let runs = [
            run(3, None, "box", "c", "r"),
            run(2, None, "box", "b", "r"),
            run(1, None, "box", "a", "r"),
        ];
        let db = &Location::from(std::path::Path::new("x.db"));
        assert_eq!(chosen(&runs, &[], db).unwrap(), [1, 2, 3]);
        assert_eq!(
            chosen(&runs, &[RunsArg::Id(2), RunsArg::All], db).unwrap(),
            [1, 2, 3]
        );
        assert_eq!(
            chosen(&runs, &[RunsArg::Last, RunsArg::Id(1), RunsArg::Id(3)], db).unwrap(),
            [1, 3]
        );
        let e = chosen(&runs, &[RunsArg::Id(9)], db).unwrap_err();
        assert!(e.msg.contains("no run 9 in x.db"), "{}", e.msg);
        let e = chosen(&[], &[RunsArg::Last], db).unwrap_err();
        assert!(e.msg.contains("no runs stored yet"), "{}", e.msg);
    }
}
