//! The two engines behind one set of statements: the embedded SQLite file
//! and a PostgreSQL server.
//!
//! The store's statements (runs.rs, copy.rs, baselines.rs) are written
//! once, in the SQL both engines speak, with SQLite's numbered parameters
//! (`?1`, `?2`); for PostgreSQL they become `$1`, `$2`. Values cross in one
//! portable form, [`Value`]: the four kinds of SQLite's storage classes the
//! store uses (no blobs). PostgreSQL's columns are typed to match
//! (`BIGINT`, `DOUBLE PRECISION`, `TEXT`; schema.rs), so that a value reads
//! back the same from either engine: integers bit for bit in 64 bits, a
//! NaN as NULL (SQLite has no NaN; PostgreSQL's would read back as a
//! number), text as text.
//!
//! A write is one transaction that holds the store's write lock from its
//! start ([`Engine::write`]), so that two writers never both read a state
//! that the other is about to change: SQLite's `BEGIN IMMEDIATE`, and on
//! PostgreSQL a `SHARE ROW EXCLUSIVE` lock on `runs`, which writers take in
//! turn and readers never wait for.

use std::cell::RefCell;
use std::collections::HashMap;

use postgres::types::{FromSql, IsNull, ToSql, Type};

/// A value as the store keeps it.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Value {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
}

impl From<i64> for Value {
    fn from(n: i64) -> Value {
        Value::Int(n)
    }
}

impl From<u32> for Value {
    fn from(n: u32) -> Value {
        Value::Int(i64::from(n))
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Value {
        Value::Int(i64::from(b))
    }
}

impl From<f64> for Value {
    /// NaN is stored as NULL, in both engines.
    fn from(x: f64) -> Value {
        if x.is_nan() {
            Value::Null
        } else {
            Value::Real(x)
        }
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Value {
        Value::Text(s.to_string())
    }
}

impl From<String> for Value {
    fn from(s: String) -> Value {
        Value::Text(s)
    }
}

impl From<&String> for Value {
    fn from(s: &String) -> Value {
        Value::Text(s.clone())
    }
}

impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(v: Option<T>) -> Value {
        v.map_or(Value::Null, Into::into)
    }
}

/// The values of one row, in the order of the statement's columns.
pub(super) type Row = Vec<Value>;

/// Why a column of a row cannot be read as what the store expects.
#[derive(Debug)]
pub(super) enum ColumnError {
    /// The column holds a value of another kind (named).
    Kind(usize, &'static str),
    /// A JSON column whose text is not JSON.
    Json(usize, serde_json::Error),
}

impl ColumnError {
    pub(super) fn index(&self) -> usize {
        match self {
            ColumnError::Kind(i, _) | ColumnError::Json(i, _) => *i,
        }
    }
}

/// Typed reads of a row's columns.
pub(super) struct Cols<'a>(pub(super) &'a [Value]);

impl Cols<'_> {
    fn get(&self, i: usize) -> &Value {
        self.0.get(i).unwrap_or(&Value::Null)
    }

    fn kind(&self, i: usize) -> ColumnError {
        let name = match self.get(i) {
            Value::Null => "Null",
            Value::Int(_) => "Integer",
            Value::Real(_) => "Real",
            Value::Text(_) => "Text",
        };
        ColumnError::Kind(i, name)
    }

    pub(super) fn opt_int(&self, i: usize) -> Result<Option<i64>, ColumnError> {
        match self.get(i) {
            Value::Null => Ok(None),
            Value::Int(n) => Ok(Some(*n)),
            _ => Err(self.kind(i)),
        }
    }

    pub(super) fn int(&self, i: usize) -> Result<i64, ColumnError> {
        self.opt_int(i)?.ok_or_else(|| self.kind(i))
    }

    pub(super) fn opt_bool(&self, i: usize) -> Result<Option<bool>, ColumnError> {
        Ok(self.opt_int(i)?.map(|n| n != 0))
    }

    pub(super) fn bool(&self, i: usize) -> Result<bool, ColumnError> {
        Ok(self.int(i)? != 0)
    }

    /// A real (an integer reads as its value), NULL as NaN.
    pub(super) fn real(&self, i: usize) -> Result<f64, ColumnError> {
        Ok(self.opt_real(i)?.unwrap_or(f64::NAN))
    }

    pub(super) fn opt_real(&self, i: usize) -> Result<Option<f64>, ColumnError> {
        match self.get(i) {
            Value::Null => Ok(None),
            Value::Real(x) => Ok(Some(*x)),
            Value::Int(n) => Ok(Some(*n as f64)),
            Value::Text(_) => Err(self.kind(i)),
        }
    }

    pub(super) fn opt_text(&self, i: usize) -> Result<Option<String>, ColumnError> {
        match self.get(i) {
            Value::Null => Ok(None),
            Value::Text(s) => Ok(Some(s.clone())),
            _ => Err(self.kind(i)),
        }
    }

    pub(super) fn text(&self, i: usize) -> Result<String, ColumnError> {
        self.opt_text(i)?.ok_or_else(|| self.kind(i))
    }

    pub(super) fn json(&self, i: usize) -> Result<serde_json::Value, ColumnError> {
        serde_json::from_str(&self.text(i)?).map_err(|e| ColumnError::Json(i, e))
    }
}

/// An error of either engine.
#[derive(Debug)]
pub(super) enum DbError {
    Sqlite(rusqlite::Error),
    Postgres(postgres::Error),
    /// A row the store cannot read (a damaged column).
    Column(ColumnError),
}

impl From<rusqlite::Error> for DbError {
    fn from(e: rusqlite::Error) -> DbError {
        DbError::Sqlite(e)
    }
}

impl From<postgres::Error> for DbError {
    fn from(e: postgres::Error) -> DbError {
        DbError::Postgres(e)
    }
}

impl From<ColumnError> for DbError {
    fn from(e: ColumnError) -> DbError {
        DbError::Column(e)
    }
}

/// An open connection to one engine.
pub(super) enum Engine {
    Sqlite(rusqlite::Connection),
    /// The client needs `&mut` for every statement, and reads take `&Store`.
    Postgres(Box<RefCell<PgConn>>),
}

/// A connection to a server, and the statements prepared on it: each is
/// parsed once per connection (a round trip saved every time it runs
/// again; a point stores one row per repetition).
pub(super) struct PgConn {
    client: postgres::Client,
    statements: HashMap<String, postgres::Statement>,
}

impl PgConn {
    /// The client, for what the engine does not do (setting the store up).
    pub(super) fn client_mut(&mut self) -> &mut postgres::Client {
        &mut self.client
    }
}

/// A server's write transaction, and its connection's statements.
pub(super) struct PgTx<'a> {
    tx: postgres::Transaction<'a>,
    statements: &'a mut HashMap<String, postgres::Statement>,
}

/// A write transaction, holding the store's write lock (see the module
/// documentation). Dropped without [`Tx::commit`], it rolls back.
pub(super) enum Tx<'a> {
    Sqlite(rusqlite::Transaction<'a>),
    Postgres(RefCell<PgTx<'a>>),
}

impl Engine {
    /// The engine of a connection to a server.
    pub(super) fn postgres(client: postgres::Client) -> Engine {
        Engine::Postgres(Box::new(RefCell::new(PgConn {
            client,
            statements: HashMap::new(),
        })))
    }

    /// Begins a write transaction with the write lock taken.
    pub(super) fn write(&mut self) -> Result<Tx<'_>, DbError> {
        match self {
            Engine::Sqlite(conn) => {
                // IMMEDIATE: a transaction that reads first and then writes
                // cannot wait for another writer (SQLite answers "busy" at
                // once, to avoid a deadlock); one that takes the write lock
                // first waits its turn.
                Ok(Tx::Sqlite(conn.transaction_with_behavior(
                    rusqlite::TransactionBehavior::Immediate,
                )?))
            }
            Engine::Postgres(conn) => {
                let PgConn { client, statements } = conn.get_mut();
                let mut tx = client.transaction()?;
                // SHARE ROW EXCLUSIVE conflicts with itself and with the
                // row locks of writes, not with reads.
                tx.batch_execute("LOCK TABLE runs IN SHARE ROW EXCLUSIVE MODE")?;
                Ok(Tx::Postgres(RefCell::new(PgTx { tx, statements })))
            }
        }
    }
}

impl Tx<'_> {
    pub(super) fn commit(self) -> Result<(), DbError> {
        match self {
            Tx::Sqlite(tx) => tx.commit()?,
            Tx::Postgres(tx) => tx.into_inner().tx.commit()?,
        }
        Ok(())
    }
}

/// Statements on a connection or inside a transaction.
pub(super) trait Sql {
    /// Runs a statement; the number of rows it changed.
    fn exec(&self, sql: &str, params: &[Value]) -> Result<u64, DbError>;
    /// Runs a query; every row.
    fn rows(&self, sql: &str, params: &[Value]) -> Result<Vec<Row>, DbError>;

    /// The first row of a query, if any.
    fn row(&self, sql: &str, params: &[Value]) -> Result<Option<Row>, DbError> {
        Ok(self.rows(sql, params)?.into_iter().next())
    }

    /// The integer in the first column of the first row (an `INSERT …
    /// RETURNING id`).
    fn insert_id(&self, sql: &str, params: &[Value]) -> Result<i64, DbError> {
        let row = self.row(sql, params)?.unwrap_or_default();
        Ok(Cols(&row).int(0)?)
    }
}

impl Sql for Engine {
    fn exec(&self, sql: &str, params: &[Value]) -> Result<u64, DbError> {
        match self {
            Engine::Sqlite(conn) => sqlite_exec(conn, sql, params),
            Engine::Postgres(conn) => {
                let conn = &mut *conn.borrow_mut();
                let stmt = prepared(&mut conn.client, &mut conn.statements, sql)?;
                Ok(conn.client.execute(&stmt, &pg_params(params))?)
            }
        }
    }

    fn rows(&self, sql: &str, params: &[Value]) -> Result<Vec<Row>, DbError> {
        match self {
            Engine::Sqlite(conn) => sqlite_rows(conn, sql, params),
            Engine::Postgres(conn) => {
                let conn = &mut *conn.borrow_mut();
                let stmt = prepared(&mut conn.client, &mut conn.statements, sql)?;
                pg_rows(conn.client.query(&stmt, &pg_params(params))?)
            }
        }
    }
}

impl Sql for Tx<'_> {
    fn exec(&self, sql: &str, params: &[Value]) -> Result<u64, DbError> {
        match self {
            Tx::Sqlite(tx) => sqlite_exec(tx, sql, params),
            Tx::Postgres(tx) => {
                let tx = &mut *tx.borrow_mut();
                let stmt = prepared(&mut tx.tx, tx.statements, sql)?;
                Ok(tx.tx.execute(&stmt, &pg_params(params))?)
            }
        }
    }

    fn rows(&self, sql: &str, params: &[Value]) -> Result<Vec<Row>, DbError> {
        match self {
            Tx::Sqlite(tx) => sqlite_rows(tx, sql, params),
            Tx::Postgres(tx) => {
                let tx = &mut *tx.borrow_mut();
                let stmt = prepared(&mut tx.tx, tx.statements, sql)?;
                pg_rows(tx.tx.query(&stmt, &pg_params(params))?)
            }
        }
    }
}

impl rusqlite::ToSql for Value {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        use rusqlite::types::{ToSqlOutput, ValueRef};
        Ok(ToSqlOutput::Borrowed(match self {
            Value::Null => ValueRef::Null,
            Value::Int(n) => ValueRef::Integer(*n),
            Value::Real(x) => ValueRef::Real(*x),
            Value::Text(s) => ValueRef::Text(s.as_bytes()),
        }))
    }
}

fn sqlite_exec(conn: &rusqlite::Connection, sql: &str, params: &[Value]) -> Result<u64, DbError> {
    let mut stmt = conn.prepare_cached(sql)?;
    Ok(stmt.execute(rusqlite::params_from_iter(params))? as u64)
}

fn sqlite_rows(
    conn: &rusqlite::Connection,
    sql: &str,
    params: &[Value],
) -> Result<Vec<Row>, DbError> {
    use rusqlite::types::ValueRef;
    let mut stmt = conn.prepare_cached(sql)?;
    let n = stmt.column_count();
    let mut rows = stmt.query(rusqlite::params_from_iter(params))?;
    let mut out = Vec::new();
    while let Some(row) = rows.next()? {
        let mut values = Vec::with_capacity(n);
        for i in 0..n {
            values.push(match row.get_ref(i)? {
                ValueRef::Null => Value::Null,
                ValueRef::Integer(n) => Value::Int(n),
                ValueRef::Real(x) => Value::Real(x),
                // Text as SQLite holds it; bytes that are not UTF-8 (a
                // damaged file) read with replacement characters.
                ValueRef::Text(t) | ValueRef::Blob(t) => {
                    Value::Text(String::from_utf8_lossy(t).into_owned())
                }
            });
        }
        out.push(values);
    }
    Ok(out)
}

/// SQLite's numbered parameters (`?1`) as PostgreSQL's (`$1`). The store's
/// statements have no `?` inside a string literal.
pub(super) fn pg_sql(sql: &str) -> std::borrow::Cow<'_, str> {
    if !sql.contains('?') {
        return sql.into();
    }
    let mut out = String::with_capacity(sql.len());
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '?' && chars.peek().is_some_and(char::is_ascii_digit) {
            out.push('$');
        } else {
            out.push(c);
        }
    }
    out.into()
}

/// The statement `sql` prepared on the connection, once.
fn prepared(
    client: &mut impl postgres::GenericClient,
    statements: &mut HashMap<String, postgres::Statement>,
    sql: &str,
) -> Result<postgres::Statement, DbError> {
    if let Some(s) = statements.get(sql) {
        return Ok(s.clone());
    }
    let s = client.prepare(&pg_sql(sql))?;
    statements.insert(sql.to_string(), s.clone());
    Ok(s)
}

fn pg_params(params: &[Value]) -> Vec<&(dyn ToSql + Sync)> {
    params.iter().map(|v| v as &(dyn ToSql + Sync)).collect()
}

fn pg_rows(rows: Vec<postgres::Row>) -> Result<Vec<Row>, DbError> {
    rows.iter()
        .map(|row| {
            (0..row.len())
                .map(|i| Ok(row.try_get::<_, Value>(i)?))
                .collect()
        })
        .collect()
}

type BoxError = Box<dyn std::error::Error + Sync + Send>;

impl ToSql for Value {
    /// Each value in the type PostgreSQL expects of the parameter, where
    /// it is one of the store's: a column's type, or what an expression
    /// around it makes it.
    fn to_sql(&self, ty: &Type, out: &mut bytes::BytesMut) -> Result<IsNull, BoxError> {
        match (self, ty) {
            (Value::Null, _) => Ok(IsNull::Yes),
            (Value::Int(n), &Type::INT8) => n.to_sql(ty, out),
            (Value::Int(n), &Type::INT4) => i32::try_from(*n)?.to_sql(ty, out),
            (Value::Int(n), &Type::INT2) => i16::try_from(*n)?.to_sql(ty, out),
            (Value::Int(n), &Type::BOOL) => (*n != 0).to_sql(ty, out),
            (Value::Int(n), &Type::FLOAT8) => (*n as f64).to_sql(ty, out),
            (Value::Real(x), &Type::FLOAT8) => x.to_sql(ty, out),
            (Value::Real(x), &Type::FLOAT4) => (*x as f32).to_sql(ty, out),
            (Value::Text(s), _) => s.as_str().to_sql(ty, out),
            (v, ty) => Err(format!("cannot pass {v:?} as a value of type {ty}").into()),
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    postgres::types::to_sql_checked!();
}

impl<'a> FromSql<'a> for Value {
    fn from_sql(ty: &Type, raw: &'a [u8]) -> Result<Value, BoxError> {
        Ok(match *ty {
            Type::INT8 => Value::Int(i64::from_sql(ty, raw)?),
            Type::INT4 => Value::Int(i32::from_sql(ty, raw)?.into()),
            Type::INT2 => Value::Int(i16::from_sql(ty, raw)?.into()),
            Type::BOOL => Value::Int(bool::from_sql(ty, raw)?.into()),
            Type::FLOAT8 => Value::Real(f64::from_sql(ty, raw)?),
            Type::FLOAT4 => Value::Real(f32::from_sql(ty, raw)?.into()),
            _ => Value::Text(<&str>::from_sql(ty, raw)?.to_string()),
        })
    }

    fn from_sql_null(_: &Type) -> Result<Value, BoxError> {
        Ok(Value::Null)
    }

    fn accepts(ty: &Type) -> bool {
        <&str as FromSql>::accepts(ty)
            || matches!(
                *ty,
                Type::INT8 | Type::INT4 | Type::INT2 | Type::BOOL | Type::FLOAT8 | Type::FLOAT4
            )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbered_parameters_become_postgres_ones() {
        assert_eq!(
            pg_sql("UPDATE runs SET finished = ?2 WHERE id = ?1 AND complete = 0"),
            "UPDATE runs SET finished = $2 WHERE id = $1 AND complete = 0"
        );
        assert_eq!(pg_sql("SELECT ?12, ?"), "SELECT $12, ?");
    }

    #[test]
    fn a_nan_is_stored_as_null() {
        assert_eq!(Value::from(f64::NAN), Value::Null);
        assert_eq!(Value::from(f64::INFINITY), Value::Real(f64::INFINITY));
        assert_eq!(Value::from(None::<i64>), Value::Null);
    }

    #[test]
    fn columns_read_as_the_store_expects_or_say_why_not() {
        let row = vec![
            Value::Int(7),
            Value::Null,
            Value::Text("{\"a\": 1}".into()),
            Value::Text("not json".into()),
        ];
        let c = Cols(&row);
        assert_eq!(c.int(0).unwrap(), 7);
        assert_eq!(c.real(0).unwrap(), 7.0);
        assert!(c.real(1).unwrap().is_nan());
        assert_eq!(c.opt_int(1).unwrap(), None);
        assert!(matches!(c.int(1), Err(ColumnError::Kind(1, "Null"))));
        assert!(matches!(c.text(0), Err(ColumnError::Kind(0, "Integer"))));
        assert_eq!(c.json(2).unwrap(), serde_json::json!({"a": 1}));
        assert!(matches!(c.json(3), Err(ColumnError::Json(3, _))));
    }
}
