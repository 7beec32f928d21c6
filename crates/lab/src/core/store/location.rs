//! Where a store is: an SQLite file (the embedded default), or a database
//! on a PostgreSQL server named by a URL, `postgres://user@host:port/db`
//! (`postgresql://` too).
//!
//! A server's password is never part of what the lab prints or stores: a
//! location shows as its URL without the password, and
//! [`redact_urls`] takes it out of the command line a run records. The
//! password comes, in this order, from the URL, from `PGPASSWORD`, or from
//! the password file (`PGPASSFILE`, else `~/.pgpass`), as PostgreSQL's own
//! clients read them.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// Where a store is.
#[derive(Clone)]
pub enum Location {
    /// An SQLite file.
    File(PathBuf),
    /// A database on a PostgreSQL server.
    Server(Box<Server>),
}

/// A PostgreSQL database, as its URL names it.
#[derive(Clone)]
pub struct Server {
    /// The URL as parsed (with the password, if it had one).
    pub(super) config: postgres::Config,
    /// The certificate authorities to check the server's certificate
    /// against (the URL's `sslrootcert`), PEM; none: the system's.
    pub(super) root_cert: Option<PathBuf>,
    /// The URL without its password, as it is shown.
    shown: String,
}

impl std::fmt::Debug for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Location::File(p) => f.debug_tuple("File").field(p).finish(),
            Location::Server(s) => f.debug_tuple("Server").field(&s.shown).finish(),
        }
    }
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Location::File(p) => write!(f, "{}", p.display()),
            Location::Server(s) => f.write_str(&s.shown),
        }
    }
}

impl PartialEq for Location {
    /// Two files by their names; two servers by their URLs without the
    /// password.
    fn eq(&self, other: &Location) -> bool {
        match (self, other) {
            (Location::File(a), Location::File(b)) => a == b,
            (Location::Server(a), Location::Server(b)) => a.shown == b.shown,
            _ => false,
        }
    }
}

impl From<&Path> for Location {
    fn from(p: &Path) -> Location {
        Location::File(p.to_path_buf())
    }
}

impl From<&PathBuf> for Location {
    fn from(p: &PathBuf) -> Location {
        Location::File(p.clone())
    }
}

impl From<PathBuf> for Location {
    fn from(p: PathBuf) -> Location {
        Location::File(p)
    }
}

impl From<&Location> for Location {
    fn from(l: &Location) -> Location {
        l.clone()
    }
}

/// The URL schemes of a server.
const SCHEMES: [&str; 2] = ["postgres://", "postgresql://"];

impl Location {
    /// What `--db` (or `LOCKLAB_DB`, `push --to`, `pull --from`) names: a
    /// URL of a PostgreSQL server, or else a file's path. A URL that does
    /// not parse is refused, saying why, in one line without its password.
    pub fn parse(arg: &OsStr) -> Result<Location, String> {
        let Some(text) = arg
            .to_str()
            .filter(|t| SCHEMES.iter().any(|s| t.starts_with(s)))
        else {
            return Ok(Location::File(PathBuf::from(arg)));
        };
        let shown = redact_urls(text);
        let (text, root_cert) = tls_options(text);
        let config = postgres::Config::from_str(&text).map_err(|e| {
            format!(
                "{shown}: not a PostgreSQL URL ({e}); allowed postgres://user@host:port/database \
                 (the password from PGPASSWORD or PGPASSFILE) or a file's path"
            )
        })?;
        let mut server = Server::new(config);
        server.root_cert = root_cert;
        Ok(Location::Server(Box::new(server)))
    }

    /// The file, if the store is one.
    pub fn file(&self) -> Option<&Path> {
        match self {
            Location::File(p) => Some(p),
            Location::Server(_) => None,
        }
    }

    /// Whether two locations are the same store: the same file however it
    /// is named, or the same server and database.
    pub fn same_store(&self, other: &Location) -> bool {
        match (self, other) {
            (Location::File(a), Location::File(b)) => crate::core::files::same_file(a, b),
            (a, b) => a == b,
        }
    }
}

impl Server {
    fn new(config: postgres::Config) -> Server {
        let shown = shown_url(&config);
        Server {
            config,
            root_cert: None,
            shown,
        }
    }

    /// The URL without its password.
    pub fn shown(&self) -> &str {
        &self.shown
    }
}

/// The URL without the TLS options that the client library does not
/// read, and what they say: `sslrootcert=FILE` (the certificate
/// authorities to check the server against), and `sslmode=verify-ca` or
/// `verify-full`, which are `require` here (locklab checks the server's
/// certificate and name whenever it uses TLS).
fn tls_options(url: &str) -> (String, Option<PathBuf>) {
    let Some((base, query)) = url.split_once('?') else {
        return (url.to_string(), None);
    };
    let mut root = None;
    let mut kept = Vec::new();
    for pair in query.split('&') {
        match pair.split_once('=') {
            Some(("sslrootcert", v)) => root = Some(PathBuf::from(percent_decoded(v))),
            Some(("sslmode", "verify-ca" | "verify-full")) => kept.push("sslmode=require"),
            _ => kept.push(pair),
        }
    }
    let url = if kept.is_empty() {
        base.to_string()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    (url, root)
}

/// `%XX` escapes decoded (a path in a URL's option).
fn percent_decoded(v: &str) -> String {
    let bytes = v.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (bytes[i], bytes.get(i + 1), bytes.get(i + 2)) {
            (b'%', Some(&h), Some(&l)) if hex(h).is_some() && hex(l).is_some() => {
                out.push((hex(h).unwrap_or(0) * 16 + hex(l).unwrap_or(0)) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A server's URL rebuilt from what it names, without the password:
/// `postgres://user@host:port/database`.
fn shown_url(c: &postgres::Config) -> String {
    use postgres::config::Host;
    let mut s = String::from("postgres://");
    if let Some(user) = c.get_user() {
        s.push_str(user);
        s.push('@');
    }
    let hosts: Vec<String> = c
        .get_hosts()
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let host = match h {
                Host::Tcp(name) if name.contains(':') => format!("[{name}]"),
                Host::Tcp(name) => name.clone(),
                Host::Unix(dir) => dir.display().to_string(),
            };
            match c.get_ports().get(i).or(c.get_ports().first()) {
                Some(port) => format!("{host}:{port}"),
                None => host,
            }
        })
        .collect();
    s.push_str(&hosts.join(","));
    s.push('/');
    if let Some(db) = c.get_dbname() {
        s.push_str(db);
    }
    s
}

/// `text` with the password of every PostgreSQL URL in it taken out (the
/// `:password` of its user, and a `password=` option): for the command
/// line a run records, and for messages about a URL that does not parse.
pub fn redact_urls(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some((at, scheme)) = SCHEMES
        .iter()
        .filter_map(|s| rest.find(s).map(|i| (i, *s)))
        .min()
    {
        out.push_str(&rest[..at]);
        let url_start = &rest[at..];
        // A URL ends at white space or a quote.
        let end = url_start
            .find(|c: char| c.is_whitespace() || c == '\'' || c == '"')
            .unwrap_or(url_start.len());
        out.push_str(&redact_one(&url_start[..end], scheme));
        rest = &url_start[end..];
    }
    out.push_str(rest);
    out
}

fn redact_one(url: &str, scheme: &str) -> String {
    let body = &url[scheme.len()..];
    // The authority ends at the first '/' or '?'; its user information at
    // the last '@' in it.
    let auth_end = body.find(['/', '?']).unwrap_or(body.len());
    let (auth, tail) = body.split_at(auth_end);
    let auth = match auth.rfind('@') {
        Some(at) => {
            let (user_info, hosts) = auth.split_at(at);
            let user = user_info.split(':').next().unwrap_or("");
            format!("{user}{hosts}")
        }
        None => auth.to_string(),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let kept: Vec<&str> = query
                .split('&')
                .filter(|pair| !pair.to_ascii_lowercase().starts_with("password="))
                .collect();
            if kept.is_empty() {
                path.to_string()
            } else {
                format!("{path}?{}", kept.join("&"))
            }
        }
        None => tail.to_string(),
    };
    format!("{scheme}{auth}{tail}")
}

/// The password for `user` at `host:port`, database `db`, from a password
/// file's text (`host:port:database:user:password` a line, `*` matching
/// anything, `\:` and `\\` escaped, `#` a comment): the first line that
/// matches, as PostgreSQL's clients read it.
pub(super) fn pgpass_lookup(
    text: &str,
    host: &str,
    port: u16,
    db: &str,
    user: &str,
) -> Option<String> {
    let port = port.to_string();
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .find_map(|line| {
            let fields = split_pgpass(line);
            if fields.len() < 5 {
                return None;
            }
            let want = [host, port.as_str(), db, user];
            let matches = fields[..4]
                .iter()
                .zip(want)
                .all(|(f, w)| f == "*" || f == w);
            matches.then(|| fields[4..].join(":"))
        })
}

fn split_pgpass(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(next) = chars.next() {
                    fields.last_mut().unwrap().push(next);
                }
            }
            ':' => fields.push(String::new()),
            c => fields.last_mut().unwrap().push(c),
        }
    }
    fields
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_names_a_server_and_anything_else_a_file() {
        let l = Location::parse(OsStr::new("postgres://ann:secret@db.lab:5433/results")).unwrap();
        assert_eq!(l.to_string(), "postgres://ann@db.lab:5433/results");
        assert!(l.file().is_none());
        assert!(!format!("{l:?}").contains("secret"));
        let l = Location::parse(OsStr::new("postgresql://ann@[::1]/r?sslmode=disable")).unwrap();
        assert_eq!(l.to_string(), "postgres://ann@[::1]:5432/r");
        for f in ["locklab.db", "dir/postgres:/x.db", "postgres.db"] {
            assert_eq!(
                Location::parse(OsStr::new(f)).unwrap().file(),
                Some(Path::new(f))
            );
        }
    }

    #[test]
    fn the_tls_options_the_client_does_not_read_are_taken_out() {
        let l = Location::parse(OsStr::new(
            "postgres://ann@h/d?sslmode=verify-full&sslrootcert=/etc/ca%20dir/root.pem",
        ))
        .unwrap();
        let Location::Server(s) = l else {
            panic!("a server")
        };
        assert_eq!(s.config.get_ssl_mode(), postgres::config::SslMode::Require);
        assert_eq!(
            s.root_cert.as_deref(),
            Some(Path::new("/etc/ca dir/root.pem"))
        );
    }

    #[test]
    fn a_url_that_does_not_parse_is_refused_without_its_password() {
        let e = Location::parse(OsStr::new("postgres://ann:secret@host:notaport/db")).unwrap_err();
        assert!(
            !e.contains("secret") && e.contains("postgres://ann@host:notaport/db"),
            "{e}"
        );
        assert!(e.contains("allowed postgres://"), "{e}");
    }

    #[test]
    fn passwords_are_taken_out_of_urls_in_a_command_line() {
        assert_eq!(
            redact_urls("locklab --db postgres://ann:s3cr:et@h:1/d runs --json"),
            "locklab --db postgres://ann@h:1/d runs --json"
        );
        assert_eq!(
            redact_urls("push --to='postgresql://h/d?sslmode=require&password=x&user=ann'"),
            "push --to='postgresql://h/d?sslmode=require&user=ann'"
        );
        assert_eq!(
            redact_urls("--db=postgres://h/d?password=x"),
            "--db=postgres://h/d"
        );
        assert_eq!(redact_urls("no url here"), "no url here");
    }

    #[test]
    fn the_password_file_is_read_as_postgresql_reads_it() {
        let text = "# comment\n\
                    other:5432:*:ann:wrong\n\
                    db.lab:5432:results:ann:p\\:w\\\\d\n\
                    *:*:*:ann:fallback\n";
        assert_eq!(
            pgpass_lookup(text, "db.lab", 5432, "results", "ann").as_deref(),
            Some("p:w\\d")
        );
        assert_eq!(
            pgpass_lookup(text, "db.lab", 5433, "results", "ann").as_deref(),
            Some("fallback")
        );
        assert_eq!(pgpass_lookup(text, "db.lab", 5432, "results", "bob"), None);
    }
}
