//! The results store: one SQLite file (`locklab.db` by default), or a
//! database on a PostgreSQL server that a team shares (`--db
//! postgres://…`), that keeps every run, point and repetition.
//!
//! A run is written as it goes: `begin_run` stores it incomplete, each
//! `add_point` commits one point with all its repetitions in one transaction,
//! and `finish_run` marks it complete. An interrupted sweep therefore keeps
//! every point it finished.
//!
//! The file is marked as locklab's by SQLite's `application_id` and carries
//! its schema version in `user_version`. Opening never changes a file that is
//! not a locklab database (not SQLite, another program's SQLite file, or a
//! locklab schema newer than this build): that is refused with an input
//! error. An older schema is brought up to date by the ordered steps in
//! [`MIGRATIONS`], all in one transaction.
//!
//! Integers the data model holds as `u64` (operation counts, latencies, the
//! TSC rate) are stored bit for bit in SQLite's signed 64-bit integers, so
//! every value round-trips; only values above 2⁶³, which no measurement
//! reaches, would read as negative in plain SQL. A NaN `f64` is stored as
//! NULL (SQLite has no NaN) and reads back as NaN.
//!
//! Every run has an identity kept in every store it is copied to (a UUID,
//! schema 9), and records the identity of the machine it ran on, so that
//! the runs of many machines can be gathered in one store (`copy.rs`:
//! each run at most once).
//!
//! Both engines keep the same tables and columns, made by one list of
//! migrations; the statements that read and write them are written once
//! (`engine.rs`). What the file says here of its header, its checks and
//! its transactions, `server.rs` says of a server's database.
//!
//! By concern: `location.rs` (what `--db` names: a file or a server's
//! URL, shown without its password), `engine.rs` (the two engines behind
//! one set of statements), `schema.rs` (the schema, its versions and the
//! steps between them), `open.rs` (opening a file, the checks that keep a
//! file that is not ours unchanged, creation under a temporary name),
//! `server.rs` (connecting to a server, its header and migrations),
//! `runs.rs` (runs, points and repetitions), `copy.rs` (runs from another
//! store), `baselines.rs`, and `errors.rs`.

mod baselines;
mod copy;
mod engine;
mod errors;
#[cfg(test)]
mod fixtures;
mod handle;
mod location;
mod open;
mod runs;
mod schema;
mod server;
#[doc(hidden)]
pub mod testing;

pub use baselines::Baseline;
pub use copy::Copied;
pub use handle::Store;
pub use location::{redact_urls, Location, Server};
pub use runs::RunSummary;
pub use schema::{Migration, APPLICATION_ID, MIGRATIONS, REP_COLUMNS, SCHEMA_VERSION};
