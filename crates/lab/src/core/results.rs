//! What a run produces: the machine it ran on, its parameters, and per point
//! every repetition. The store keeps exactly these; reports, JSON and plots
//! read them back.

use serde::{Deserialize, Serialize};

/// Facts about the machine a run measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Machine {
    /// CPU model name (from /proc/cpuinfo).
    pub cpu_model: String,
    /// Online logical CPUs.
    pub cores: usize,
    /// Time-stamp counter rate in Hz, if known.
    pub tsc_hz: Option<u64>,
    /// Kernel release and version.
    pub kernel: String,
    /// `rustc --version` of the toolchain that built the lab.
    pub rustc: String,
    /// Git revision of the lab's source (with `-dirty` if modified).
    pub git_rev: String,
    /// Host name.
    pub hostname: String,
    /// Round trip of one cache line between the first two CPUs the lab may
    /// run on, ns, measured as the run starts (`None` with one CPU, or when
    /// the threads could not be pinned; and for runs stored before it was
    /// recorded). Contended results move with it: on a VM it can change
    /// from one minute to the next.
    #[serde(default)]
    pub c2c_round_trip_ns: Option<f64>,
    /// The machine's identity, the same in every run it makes: a name the
    /// user gave it (`LOCKLAB_MACHINE_ID`), else a one-way name of its
    /// operating system's machine id ([`crate::core::machine::machine_id`]).
    /// `None` for runs stored before it was recorded, and where there is no
    /// machine id to read.
    #[serde(default)]
    pub id: Option<String>,
    /// Whether the run could use Intel RTM hardware transactions (what
    /// `locklab::rtm_available()` said, `LOCKLAB_RTM=off` counted); `None`
    /// for runs stored before it was recorded.
    #[serde(default)]
    pub rtm: Option<bool>,
}

impl Machine {
    /// What tells machines apart: the identity, or for runs stored before
    /// it was recorded, the host, CPU and cores.
    pub fn key(&self) -> String {
        match &self.id {
            Some(id) => format!("id\0{id}"),
            None => format!(
                "host\0{}\0{}\0{}",
                self.hostname, self.cpu_model, self.cores
            ),
        }
    }

    /// Its identity as the outputs show it: [`short_id`], or
    /// `(not recorded)`.
    pub fn name(&self) -> MachineName<'_> {
        MachineName(self)
    }

    /// Whether it could use RTM, as a word; `none` for runs stored before
    /// that was recorded.
    pub fn rtm_word(&self, none: &'static str) -> &'static str {
        match self.rtm {
            Some(true) => "yes",
            Some(false) => "no",
            None => none,
        }
    }
}

/// A machine's identity as the outputs show it ([`Machine::name`]).
pub struct MachineName<'a>(&'a Machine);

impl std::fmt::Display for MachineName<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0.id {
            Some(id) => f.write_str(&short_id(id)),
            None => f.write_str("(not recorded)"),
        }
    }
}

/// A derived identity (a UUID) in short, as git shows a revision; a name
/// the user gave in full.
pub fn short_id(id: &str) -> String {
    if uuid::Uuid::parse_str(id).is_ok() {
        id.chars().take(8).collect()
    } else {
        id.to_string()
    }
}

/// A run: one invocation of a benchmark command.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunMeta {
    /// Store id; `None` until stored. It is the store's own: the same run
    /// copied to another store (`locklab push`) gets another there.
    pub id: Option<i64>,
    /// The run's identity in every store, a UUID given when it is first
    /// stored and kept when it is copied, so that a run pushed twice is
    /// stored once; `None` until stored.
    #[serde(default)]
    pub uuid: Option<String>,
    /// What ran: the command's words, as `locklab runs` lists them.
    pub kind: String,
    /// The command line as typed.
    pub command: String,
    /// Every parameter, resolved (defaults filled in).
    pub params: serde_json::Value,
    /// The machine.
    pub machine: Machine,
    /// Start time, RFC 3339 UTC.
    pub started: String,
    /// End time, RFC 3339 UTC; `None` while running or if interrupted.
    pub finished: Option<String>,
    /// Whether every planned point finished.
    pub complete: bool,
}

impl RunMeta {
    /// The store id as text, `(unsaved)` until the run is stored.
    pub fn id_text(&self) -> String {
        self.id
            .map_or_else(|| "(unsaved)".to_string(), |id| id.to_string())
    }
}

/// One repetition of one point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rep {
    /// Repetition number, from 0.
    pub rep: u32,
    /// Measured wall-clock seconds.
    pub wall_s: f64,
    /// CPU seconds used by the measuring threads (user + system).
    pub cpu_s: f64,
    /// Acquisitions by all threads.
    pub total_ops: u64,
    /// `total_ops / wall_s`.
    pub throughput_ops_s: f64,
    /// Nanoseconds per operation (an acquire+release; per operation of one
    /// thread for a study with one); infinite (`null` in JSON) when nothing
    /// was done.
    #[serde(deserialize_with = "nan_if_null")]
    pub ns_per_op: f64,
    /// Acquisitions per thread.
    pub thread_ops: Vec<u64>,
    /// Jain's fairness index of `thread_ops` (1 = perfectly even); NaN
    /// (`null` in JSON and the store) when no thread acquired anything,
    /// see [`jain`].
    #[serde(deserialize_with = "nan_if_null")]
    pub jain: f64,
    /// Acquire latency percentiles and maximum in ns (0 when not sampled).
    pub p50_ns: u64,
    /// 99th percentile acquire latency, ns.
    pub p99_ns: u64,
    /// 99.9th percentile acquire latency, ns.
    pub p999_ns: u64,
    /// Longest acquire latency, ns.
    pub max_ns: u64,
    /// Waits still open when the window closed (censored: not in the
    /// percentiles above, whose samples all ended in the window); 0 for
    /// runs stored before schema 6.
    #[serde(default)]
    pub censored: u64,
    /// The longest censored wait had lasted at least this long at the
    /// closing, ns (a lower bound on the true longest wait; 0 if none).
    #[serde(default)]
    pub censored_ns: u64,
    /// What only its study measures, under the study's key (see
    /// [`StudyMetrics`]): empty for most studies. In JSON, each study's
    /// metrics are a field of the repetition named by that key; the store
    /// keeps them in one column.
    #[serde(flatten)]
    pub metrics: serde_json::Map<String, serde_json::Value>,
}

impl Rep {
    /// A repetition whose `total_ops` one thread did in `wall_s`: no
    /// latency sample and no benchmark-specific metrics (callers add theirs
    /// with struct update syntax).
    pub fn one_thread(rep: u32, wall_s: f64, cpu_s: f64, total_ops: u64) -> Rep {
        Rep {
            rep,
            ..Rep::counted(wall_s, cpu_s, vec![total_ops])
        }
    }

    /// A repetition whose threads (or whatever a study counts by) did
    /// `thread_ops` in `wall_s`: no latency sample and no study metrics
    /// (callers add theirs, or change a field with struct update syntax).
    pub fn counted(wall_s: f64, cpu_s: f64, thread_ops: Vec<u64>) -> Rep {
        let total_ops: u64 = thread_ops.iter().sum();
        Rep {
            rep: 0,
            wall_s,
            cpu_s,
            total_ops,
            throughput_ops_s: total_ops as f64 / wall_s,
            ns_per_op: if total_ops == 0 {
                f64::INFINITY
            } else {
                wall_s * 1e9 / total_ops as f64
            },
            jain: jain(&thread_ops),
            thread_ops,
            p50_ns: 0,
            p99_ns: 0,
            p999_ns: 0,
            max_ns: 0,
            censored: 0,
            censored_ns: 0,
            metrics: serde_json::Map::new(),
        }
    }

    /// The metrics of study type `M`, if the repetition has them (and they
    /// read back as `M`).
    pub fn metrics_of<M: StudyMetrics>(&self) -> Option<M> {
        let v = self.metrics.get(M::KEY)?;
        serde_json::from_value(v.clone()).ok()
    }

    /// Sets the metrics of study type `M`.
    pub fn set_metrics<M: StudyMetrics>(&mut self, m: &M) {
        let v = serde_json::to_value(m).expect("study metrics serialise");
        self.metrics.insert(M::KEY.to_string(), v);
    }

    /// The longest wait known: the longest that ended in the window, or
    /// the least a censored one had lasted, whichever is longer.
    pub fn longest_wait_ns(&self) -> u64 {
        self.max_ns.max(self.censored_ns)
    }
}

/// What only one study measures in a repetition, beyond the fields every
/// repetition has. A number that does not exist (NaN) is kept as `null`.
pub trait StudyMetrics: Serialize + serde::de::DeserializeOwned {
    /// The key they are kept under in [`Rep::metrics`]: the study's name
    /// for them, unique among the studies.
    const KEY: &'static str;
}

/// Reads a number that JSON wrote as `null` because it was NaN or infinite.
pub fn nan_if_null<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

/// One point: a lock at a thread count and parameter set, every repetition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// The study's name (`Study::name`).
    pub bench: String,
    /// Lock or peer name, or what else a study compares (a strategy, a
    /// kernel variant, a policy, a reference).
    pub lock: String,
    /// Measuring threads.
    pub threads: u32,
    /// The point's own parameters (cs_ns, cs_lines, delay_ns, delay_dist, secs, …).
    pub params: serde_json::Value,
    /// Every repetition, in order.
    pub reps: Vec<Rep>,
}

/// Median of a sample (mean of the middle two for even counts); NaN if empty.
pub fn median(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    let mut v = xs.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Jain's fairness index (Σx)² / (n·Σx²): 1 when all equal, 1/n when one
/// thread did everything. Undefined, NaN, for an empty or all-zero sample:
/// the index is then 0/0, and a run in which no thread acquired anything
/// says nothing about how a lock shares (reading it as 1, "perfectly
/// even", once named such a lock the fairest). NaN is how a repetition
/// says a number does not exist: the store keeps it as NULL, JSON as
/// `null`, the text as "–" or "n/a", and [`Point::stat`] and the
/// verdict's [`crate::core::verdict::pick`] leave it out.
pub fn jain(xs: &[u64]) -> f64 {
    let n = xs.len() as f64;
    let sum: f64 = xs.iter().map(|&x| x as f64).sum();
    let sq: f64 = xs.iter().map(|&x| (x as f64) * (x as f64)).sum();
    if n == 0.0 || sum == 0.0 {
        f64::NAN
    } else {
        sum * sum / (n * sq)
    }
}

impl Point {
    /// A point whose repetitions measured only a throughput each, ops/s:
    /// repetition `i` is one thread's `tputs[i]` operations in one second
    /// of wall and CPU time, nothing else. For known answers in tests
    /// (what a comparison or a table makes of given rates), where a real
    /// run's other metrics would only be noise.
    pub fn of_throughputs(
        bench: &str,
        lock: &str,
        threads: u32,
        params: serde_json::Value,
        tputs: &[f64],
    ) -> Point {
        Point {
            bench: bench.into(),
            lock: lock.into(),
            threads,
            params,
            reps: tputs
                .iter()
                .enumerate()
                .map(|(i, &t)| Rep {
                    throughput_ops_s: t,
                    ..Rep::one_thread(i as u32, 1.0, 1.0, t as u64)
                })
                .collect(),
        }
    }

    /// A metric's median, minimum and maximum over the repetitions in
    /// which it exists (is not NaN: a fairness of no acquisitions, a CPU
    /// time per acquisition of none); all three NaN when it exists in
    /// none. Leaving them out, rather than sorting NaN past every number,
    /// keeps a median from being a repetition that measured nothing.
    pub fn stat(&self, f: impl Fn(&Rep) -> f64) -> (f64, f64, f64) {
        let xs: Vec<f64> = self.reps.iter().map(f).filter(|x| !x.is_nan()).collect();
        if xs.is_empty() {
            return (f64::NAN, f64::NAN, f64::NAN);
        }
        let min = xs.iter().copied().fold(f64::INFINITY, f64::min);
        let max = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        (median(&xs), min, max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jain_is_one_when_even_and_one_over_n_when_one_thread_does_all() {
        assert!((jain(&[5, 5, 5, 5]) - 1.0).abs() < 1e-12);
        assert!((jain(&[8, 0, 0, 0]) - 0.25).abs() < 1e-12);
        let j = jain(&[10, 20]);
        assert!((j - 900.0 / (2.0 * 500.0)).abs() < 1e-12);
    }

    /// No acquisition at all is 0/0: undefined, never "perfectly even".
    #[test]
    fn jain_of_no_acquisitions_is_undefined() {
        assert!(jain(&[0, 0, 0, 0]).is_nan());
        assert!(jain(&[0]).is_nan());
        assert!(jain(&[]).is_nan());
        assert!(Rep::one_thread(0, 1.0, 0.5, 0).jain.is_nan());
        assert!(Rep::counted(1.0, 0.5, vec![0, 0]).jain.is_nan());
        // One thread that did something is even with itself.
        assert_eq!(jain(&[7]), 1.0);
    }

    /// An undefined fairness is `null` in JSON and reads back undefined.
    #[test]
    fn undefined_fairness_is_null_in_json_and_reads_back() {
        let r = Rep::counted(1.0, 0.5, vec![0, 0]);
        let v = serde_json::to_value(&r).unwrap();
        assert!(v["jain"].is_null(), "{v}");
        assert!(v["ns_per_op"].is_null(), "{v}");
        let back: Rep = serde_json::from_value(v).unwrap();
        assert!(back.jain.is_nan() && back.ns_per_op.is_nan());
    }

    /// A statistic leaves out the repetitions in which it does not exist,
    /// and is undefined where it exists in none.
    #[test]
    fn stat_leaves_out_undefined_repetitions() {
        let rep = |ops: Vec<u64>| Rep::counted(1.0, 0.5, ops);
        let p = Point {
            bench: "demo".into(),
            lock: "x".into(),
            threads: 2,
            params: serde_json::Value::Null,
            reps: vec![rep(vec![0, 0]), rep(vec![5, 5]), rep(vec![10, 0])],
        };
        let (m, lo, hi) = p.stat(|r| r.jain);
        assert_eq!((m, lo, hi), (0.75, 0.5, 1.0));
        let none = Point {
            reps: vec![rep(vec![0, 0]), rep(vec![0, 0])],
            ..p
        };
        let (m, lo, hi) = none.stat(|r| r.jain);
        assert!(m.is_nan() && lo.is_nan() && hi.is_nan());
    }

    #[test]
    fn median_odd_even_and_unsorted() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert!(median(&[]).is_nan());
    }
}
