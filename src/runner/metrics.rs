//! `--metrics ADDR`: the suite as OpenMetrics text on `http://ADDR/metrics`, while it runs.
//!
//! Why it is shaped this way:
//! - **Published from the collector, never from the workers.** The driver hands the runner a
//!   [`LiveSample`] every second on its collector thread (the same lock-free slot snapshots the
//!   interim lines read); this module turns it into counter increments and gauge values. The
//!   workers' hot path is untouched: they never see a metric, a lock or the HTTP thread.
//! - **The official client** (`prometheus-client`) owns the registry and the text encoding.
//!   Its classic histogram is filled one `observe` call per event, so the latency histogram is
//!   our own small metric ([`LatencyHistogram`]): each live sample adds the interval's 1024
//!   log-bucket counts to fixed buckets chosen for database latencies (0.1 ms … 10 s), O(1024)
//!   per second whatever the event rate.
//! - **A tiny HTTP server on a std `TcpListener` thread** that never costs the measurement
//!   memory or time, whatever its clients do (#26): each connection is answered on a short-lived
//!   thread of its own, so one slow client never delays another scraper; at most
//!   [`MAX_CONNECTIONS`] are served at once (more are answered `503` by one thread, a quarter
//!   of a second each at most; the accept loop never waits on a client); a request head may take [`MAX_REQUEST`] bytes (`431`
//!   and closed beyond: a line without an end grows nothing) and must arrive within
//!   [`REQUEST_DEADLINE`] of the accept however slowly it trickles in, and the answer must be
//!   taken within [`RESPONSE_DEADLINE`]. `GET /metrics` or 404. A scrape encodes the registry
//!   under the families' read locks, which only the runner's once-a-second updates contend
//!   for.
//! - **Bound before anything runs**: [`MetricsServer::bind`] is called by the command before
//!   the first step, so an address in use is bad input (exit 2) with nothing done. A bare
//!   `:PORT` (or `PORT`) means loopback: nothing is exposed beyond the machine unless the user
//!   names another address.
//! - **Labels are the step's identity**: suite, run id, step number, kind, variant, workload,
//!   threads and every matrix key (a key that would clash with one of those, or is not a valid
//!   label name, is renamed as results.csv renames columns: `axis_` prefix, `_` for other
//!   characters). The interval percentiles come from the same log histogram as the interim
//!   lines' `lat (ms,95%)` (sysbench's 1024 buckets, ≈ 1.8 % wide): the exact HDR histograms
//!   stay with the workers until the step ends, which is what keeps the hot path lock-free.

use std::fmt::Write as _;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use prometheus_client::encoding::{EncodeMetric, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::{MetricType, TypedMetric};
use prometheus_client::registry::Registry;

use crate::engine::{LiveSample, SqlCounters, StepOutcome};
use crate::plan::{Plan, Step};
use crate::stats::log_histogram;

/// How often the runner asks the driver for a live sample.
pub const LIVE_EVERY: Duration = Duration::from_secs(1);

/// Upper bounds (seconds) of the latency histogram's buckets: 0.1 ms to 10 s, 1-2.5-5 steps,
/// which covers a point select on a local server up to a stalled commit.
pub const LATENCY_BUCKETS: &[f64] = &[
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0,
];

/// The most a request head (request line and headers) may take: a scraper's is a few hundred
/// bytes.
pub const MAX_REQUEST: usize = 8 << 10;

/// How long a client has, from its connection, to send its request head.
pub const REQUEST_DEADLINE: Duration = Duration::from_secs(5);

/// How long a client has, from its connection, to take the answer.
pub const RESPONSE_DEADLINE: Duration = Duration::from_secs(10);

/// Connections answered at once; more get `503` (as many again are queued for it, beyond
/// that they are closed at once).
pub const MAX_CONNECTIONS: usize = 16;

/// How long a connection beyond [`MAX_CONNECTIONS`] may take to send its request, and then to
/// take its `503`.
const BUSY_DEADLINE: Duration = Duration::from_millis(250);

/// The stack of a connection's thread: it parses a few hundred bytes and writes the text.
const CONNECTION_STACK: usize = 256 << 10;

/// The percentiles of the last interval published as gauges (`quantile` label).
const QUANTILES: &[(f64, &str)] = &[(50.0, "0.5"), (95.0, "0.95"), (99.0, "0.99")];

/// Labels that every step series has before its matrix keys.
const STEP_LABELS: &[&str] = &[
    "suite",
    "run_id",
    "step",
    "step_kind",
    "variant",
    "workload",
    "threads",
];

type Labels = Vec<(String, String)>;

#[derive(Debug, thiserror::Error)]
pub enum MetricsError {
    #[error(
        "{source_name} `{addr}`: not an address to listen on: {why}; give HOST:PORT, e.g. \
         `127.0.0.1:9464` (`:9464` listens on loopback)"
    )]
    BadAddress {
        source_name: String,
        addr: String,
        why: String,
    },
    #[error(
        "{source_name} `{addr}`: cannot listen on {bound}: {why}; choose another port (another \
         process, or another sbsuite run, is using it)"
    )]
    InUse {
        source_name: String,
        addr: String,
        bound: SocketAddr,
        why: std::io::Error,
    },
}

/// Parses `ADDR` as given to `--metrics` or `[suite] metrics`: `HOST:PORT`, `:PORT` or `PORT`
/// (both loopback), `[::1]:PORT`.
pub fn parse_addr(addr: &str, source_name: &str) -> Result<SocketAddr, MetricsError> {
    let bad = |why: &str| MetricsError::BadAddress {
        source_name: source_name.to_string(),
        addr: addr.to_string(),
        why: why.to_string(),
    };
    let text = addr.trim();
    let full = if let Some(port) = text.strip_prefix(':') {
        format!("127.0.0.1:{port}")
    } else if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        format!("127.0.0.1:{text}")
    } else {
        text.to_string()
    };
    let port_ok = full
        .rsplit_once(':')
        .is_some_and(|(_, p)| p.parse::<u16>().is_ok());
    if !port_ok {
        return Err(bad("no port (0-65535) after the last `:`"));
    }
    full.to_socket_addrs()
        .map_err(|e| bad(&e.to_string()))?
        .next()
        .ok_or_else(|| bad("the host name resolves to no address"))
}

/// The listening endpoint and the metrics it serves. Dropping it stops the server.
pub struct MetricsServer {
    addr: SocketAddr,
    metrics: Arc<Metrics>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for MetricsServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetricsServer")
            .field("addr", &self.addr)
            .finish()
    }
}

impl MetricsServer {
    /// Listens on `addr` (see [`parse_addr`]) and starts serving; `source_name` names where the
    /// address came from in errors (`--metrics`, `[suite] metrics`).
    pub fn bind(addr: &str, source_name: &str) -> Result<MetricsServer, MetricsError> {
        let bound = parse_addr(addr, source_name)?;
        let listener = TcpListener::bind(bound).map_err(|why| MetricsError::InUse {
            source_name: source_name.to_string(),
            addr: addr.to_string(),
            bound,
            why,
        })?;
        let local = listener.local_addr().unwrap_or(bound);
        let metrics = Arc::new(Metrics::new());
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (metrics, stop) = (metrics.clone(), stop.clone());
            std::thread::Builder::new()
                .name("sbsuite-metrics".into())
                .spawn(move || serve(&listener, &metrics, &stop))
                .ok()
        };
        Ok(MetricsServer {
            addr: local,
            metrics,
            stop,
            thread,
        })
    }

    /// The address actually listened on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn metrics(&self) -> Arc<Metrics> {
        self.metrics.clone()
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the blocking accept.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_millis(200));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn serve(listener: &TcpListener, metrics: &Arc<Metrics>, stop: &AtomicBool) {
    let open = Arc::new(AtomicUsize::new(0));
    // Connections beyond the slots go to one thread that answers 503, one at a time and
    // briefly each; beyond what it has queued they are closed at once.
    let (busy_tx, busy_rx) = std::sync::mpsc::sync_channel::<TcpStream>(MAX_CONNECTIONS);
    let _ = std::thread::Builder::new()
        .name("sbsuite-metrics-busy".into())
        .stack_size(CONNECTION_STACK)
        .spawn(move || {
            for stream in busy_rx {
                let _ = busy(stream);
            }
        });
    for conn in listener.incoming() {
        if stop.load(Ordering::SeqCst) {
            return;
        }
        let stream = match conn {
            Ok(stream) => stream,
            Err(_) => {
                // Out of descriptors, say: do not spin on the error.
                std::thread::sleep(Duration::from_millis(10));
                continue;
            }
        };
        if open.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
            open.fetch_sub(1, Ordering::SeqCst);
            let _ = busy_tx.try_send(stream);
            continue;
        }
        let slot = Slot(open.clone());
        let metrics = metrics.clone();
        // A failed spawn drops the closure, and with it the slot and the connection.
        let _ = std::thread::Builder::new()
            .name("sbsuite-metrics-conn".into())
            .stack_size(CONNECTION_STACK)
            .spawn(move || {
                let _slot = slot;
                let _ = answer(stream, &metrics, Instant::now());
            });
    }
}

/// One of [`MAX_CONNECTIONS`], given back when the connection's thread ends.
struct Slot(Arc<AtomicUsize>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Every slot is taken: `503`, within [`BUSY_DEADLINE`]. The request is read first (a socket
/// closed with unread bytes is reset, and the client would lose the answer).
fn busy(mut stream: TcpStream) -> std::io::Result<()> {
    let deadline = Instant::now() + BUSY_DEADLINE;
    let _ = read_head(&mut stream, deadline);
    write_within(
        &mut stream,
        b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Length: 0\r\n\
          Connection: close\r\n\r\n",
        deadline + BUSY_DEADLINE,
    )?;
    stream.shutdown(std::net::Shutdown::Write)
}

/// Why a request head was not read.
enum Head {
    TooLarge,
    Io(std::io::Error),
}

/// The request head (up to its blank line), read within `deadline` and [`MAX_REQUEST`] bytes,
/// in chunks: a client that trickles bytes or never ends its line gets neither more time nor
/// more memory.
fn read_head(stream: &mut TcpStream, deadline: Instant) -> Result<Vec<u8>, Head> {
    let mut head = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(Head::Io(std::io::ErrorKind::TimedOut.into()));
        }
        stream.set_read_timeout(Some(left)).map_err(Head::Io)?;
        let n = stream.read(&mut chunk).map_err(Head::Io)?;
        if n == 0 {
            // The client closed its side: what came is all there is.
            return Ok(head);
        }
        head.extend_from_slice(&chunk[..n]);
        let end = head
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .or_else(|| head.windows(2).position(|w| w == b"\n\n"));
        if let Some(end) = end {
            head.truncate(end);
            return Ok(head);
        }
        if head.len() > MAX_REQUEST {
            return Err(Head::TooLarge);
        }
    }
}

/// Writes `bytes` before `deadline`, however slowly the client reads.
fn write_within(
    stream: &mut TcpStream,
    mut bytes: &[u8],
    deadline: Instant,
) -> std::io::Result<()> {
    while !bytes.is_empty() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(std::io::ErrorKind::TimedOut.into());
        }
        stream.set_write_timeout(Some(left))?;
        match stream.write(bytes) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(n) => bytes = &bytes[n..],
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Answers one HTTP/1.x request accepted at `accepted` and closes the connection.
fn answer(mut stream: TcpStream, metrics: &Metrics, accepted: Instant) -> std::io::Result<()> {
    let (head, too_large) = match read_head(&mut stream, accepted + REQUEST_DEADLINE) {
        Ok(head) => (head, false),
        Err(Head::TooLarge) => (Vec::new(), true),
        Err(Head::Io(e)) => return Err(e),
    };
    let request = String::from_utf8_lossy(&head);
    let mut words = request.lines().next().unwrap_or("").split_whitespace();
    let (method, target) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let path = target.split('?').next().unwrap_or("");
    let (status, kind, body) = match (too_large, method, path) {
        (true, ..) => (
            "431 Request Header Fields Too Large",
            "text/plain; charset=utf-8",
            format!("sbsuite reads at most {MAX_REQUEST} bytes of a request\n"),
        ),
        (false, "GET" | "HEAD", "/metrics") => (
            "200 OK",
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
            metrics.encode(),
        ),
        _ => (
            "404 Not Found",
            "text/plain; charset=utf-8",
            "sbsuite serves only GET /metrics\n".to_string(),
        ),
    };
    let mut response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    if method != "HEAD" {
        response.push_str(&body);
    }
    write_within(
        &mut stream,
        response.as_bytes(),
        accepted + RESPONSE_DEADLINE,
    )?;
    stream.flush()?;
    stream.shutdown(std::net::Shutdown::Write)
}

/// A histogram filled with bucket counts rather than single observations.
#[derive(Debug, Default)]
struct LatencyHistogram {
    inner: Mutex<HistogramState>,
}

#[derive(Debug, Default)]
struct HistogramState {
    sum: f64,
    count: u64,
    /// Per bucket of [`LATENCY_BUCKETS`], then +Inf (not cumulative).
    buckets: Vec<u64>,
}

impl LatencyHistogram {
    fn add(&self, counts: &[u64], slot_of: &[usize]) {
        let mut s = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if s.buckets.is_empty() {
            s.buckets = vec![0; LATENCY_BUCKETS.len() + 1];
        }
        for (i, &c) in counts.iter().enumerate() {
            if c == 0 {
                continue;
            }
            s.buckets[slot_of[i]] += c;
            s.count += c;
            s.sum += c as f64 * log_histogram::bucket_value_ms(i) / 1e3;
        }
    }
}

impl TypedMetric for LatencyHistogram {
    const TYPE: MetricType = MetricType::Histogram;
}

impl EncodeMetric for LatencyHistogram {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        let s = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let bounds = LATENCY_BUCKETS.iter().copied().chain([f64::INFINITY]);
        let buckets: Vec<(f64, u64)> = bounds
            .zip(s.buckets.iter().copied().chain(std::iter::repeat(0)))
            .collect();
        encoder.encode_histogram::<NoLabelSet>(s.sum, s.count, &buckets, None)
    }

    fn metric_type(&self) -> MetricType {
        MetricType::Histogram
    }
}

type FloatGauge = Gauge<f64, AtomicU64>;

/// Every metric of a suite, shared by the runner (writer) and the HTTP thread (reader).
pub struct Metrics {
    registry: Registry,
    events: Family<Labels, Counter>,
    transactions: Family<Labels, Counter>,
    queries: Family<Labels, Counter>,
    errors: Family<Labels, Counter>,
    reconnects: Family<Labels, Counter>,
    rate: Family<Labels, FloatGauge>,
    threads: Family<Labels, Gauge>,
    latency: Family<Labels, LatencyHistogram>,
    quantiles: Family<Labels, FloatGauge>,
    state: Family<Labels, Gauge>,
    steps_total: Family<Labels, Gauge>,
    steps_done: Family<Labels, Gauge>,
    /// The server's rates over a run step's last interval (#29, with `report_interval`).
    server_fsyncs: Family<Labels, FloatGauge>,
    server_log_bytes: Family<Labels, FloatGauge>,
    server_cpu: Family<Labels, FloatGauge>,
    /// The suite's labels and each step's, by plan position, once the suite started.
    plan: Mutex<PlanLabels>,
    /// Which log bucket adds to which histogram bucket.
    slot_of: Vec<usize>,
}

#[derive(Default)]
struct PlanLabels {
    suite: Labels,
    steps: Vec<Labels>,
    /// Each step's current state, by position.
    states: Vec<&'static str>,
    /// Each run step's counts published so far: (events, sql).
    published: Vec<(u64, SqlCounters)>,
}

impl Metrics {
    /// Every family registered, no series yet (a server's, or a test's).
    pub(crate) fn new() -> Self {
        let mut registry = Registry::with_prefix("sbsuite");
        macro_rules! family {
            ($name:expr, $help:expr) => {{
                let f = Family::default();
                registry.register($name, $help, f.clone());
                f
            }};
        }
        let events = family!(
            "events",
            "Events (transactions of OLTP workloads) of a run step"
        );
        let transactions = family!("transactions", "Transactions of a run step that runs SQL");
        let queries = family!(
            "queries",
            "SQL statements of a run step, by kind (read, write, other)"
        );
        let errors = family!("errors", "Ignored SQL errors of a run step");
        let reconnects = family!("reconnects", "Reconnects of a run step");
        let rate = family!(
            "rate_events_per_second",
            "Events per second of a run step over the last second"
        );
        let threads = family!(
            "threads_running",
            "Worker threads of a run step still running"
        );
        let latency = family!(
            "latency_seconds",
            "Event latency of a run step (buckets from the interim log histogram)"
        );
        let quantiles = family!(
            "interval_latency_seconds",
            "Event latency percentile of a run step over the last second"
        );
        let state = family!(
            "step_state",
            "1 for a step's current state (pending, running, done, failed, interrupted, skipped)"
        );
        let steps_total = family!("steps", "Steps in the suite's plan");
        let steps_done = family!(
            "steps_done",
            "Steps of the plan that are over (any outcome)"
        );
        let server_fsyncs = family!(
            "server_fsyncs_per_second",
            "The server's fsyncs per second over a run step's last interval (report_interval)"
        );
        let server_log_bytes = family!(
            "server_log_bytes_per_second",
            "The server's redo/WAL bytes written per second over a run step's last interval"
        );
        let server_cpu = family!(
            "server_cpu_seconds_per_second",
            "The server process's CPU seconds per second over a run step's last interval, when \
             it runs on this host"
        );
        let slot_of = (0..log_histogram::BUCKETS)
            .map(|i| {
                let s = log_histogram::bucket_value_ms(i) / 1e3;
                LATENCY_BUCKETS
                    .iter()
                    .position(|&le| s <= le)
                    .unwrap_or(LATENCY_BUCKETS.len())
            })
            .collect();
        Metrics {
            registry,
            events,
            transactions,
            queries,
            errors,
            reconnects,
            rate,
            threads,
            latency,
            quantiles,
            state,
            steps_total,
            steps_done,
            server_fsyncs,
            server_log_bytes,
            server_cpu,
            plan: Mutex::new(PlanLabels::default()),
            slot_of,
        }
    }

    fn plan(&self) -> std::sync::MutexGuard<'_, PlanLabels> {
        self.plan.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The OpenMetrics text of everything (ends with `# EOF`).
    pub fn encode(&self) -> String {
        let mut text = String::new();
        if prometheus_client::encoding::text::encode(&mut text, &self.registry).is_err() {
            text.clear();
            let _ = writeln!(text, "# EOF");
        }
        text
    }

    /// A suite started: every step pending, the plan's size.
    pub fn suite_started(&self, plan: &Plan, run_id: &str) {
        let suite: Labels = vec![
            ("suite".into(), plan.suite.clone()),
            ("run_id".into(), run_id.to_string()),
        ];
        let steps: Vec<Labels> = plan.steps.iter().map(|s| step_labels(&suite, s)).collect();
        self.steps_total
            .get_or_create(&suite)
            .set(plan.steps.len() as i64);
        self.steps_done.get_or_create(&suite).set(0);
        for l in &steps {
            self.state
                .get_or_create(&with(l, "state", "pending"))
                .set(1);
        }
        let mut p = self.plan();
        p.states = vec!["pending"; steps.len()];
        p.published = vec![(0, SqlCounters::default()); steps.len()];
        p.steps = steps;
        p.suite = suite;
    }

    /// The step at `position` is now in `state`; `over` counts it done for the progress.
    pub fn step_state(&self, position: usize, state: &'static str, over: bool) {
        let mut p = self.plan();
        let (Some(labels), Some(&old)) = (p.steps.get(position), p.states.get(position)) else {
            return;
        };
        if old != state {
            self.state.remove(&with(labels, "state", old));
            self.state
                .get_or_create(&with(labels, "state", state))
                .set(1);
        }
        p.states[position] = state;
        if over {
            let done = p
                .states
                .iter()
                .filter(|s| !matches!(**s, "pending" | "running"));
            self.steps_done
                .get_or_create(&p.suite)
                .set(done.count() as i64);
        }
        if state != "running" {
            let labels = p.steps[position].clone();
            drop(p);
            if self.threads.get(&labels).is_some() {
                self.threads.get_or_create(&labels).set(0);
            }
            if self.rate.get(&labels).is_some() {
                self.rate.get_or_create(&labels).set(0.0);
            }
            // A rate of the server is not the step's once the step is over.
            for f in self.server_families() {
                f.remove(&labels);
            }
        }
    }

    fn server_families(&self) -> [&Family<Labels, FloatGauge>; 3] {
        [
            &self.server_fsyncs,
            &self.server_log_bytes,
            &self.server_cpu,
        ]
    }

    /// The server's rates over the last interval of the run step at `position`, from the
    /// interval's measurements (those it lacks are left as they were).
    pub fn server(&self, position: usize, metrics: &crate::engine::Metrics) {
        let Some(labels) = self.plan().steps.get(position).cloned() else {
            return;
        };
        let pct = crate::runner::cost::SERVER_CPU_PCT;
        for (family, name, scale) in [
            (&self.server_fsyncs, crate::db::counters::FSYNCS_PS, 1.0),
            (
                &self.server_log_bytes,
                crate::db::counters::LOG_BYTES_PS,
                1.0,
            ),
            (&self.server_cpu, pct, 0.01),
        ] {
            if let Some(v) = crate::engine::metric(metrics, name) {
                family.get_or_create(&labels).set(v * scale);
            }
        }
    }

    /// A live sample of the run step at `position`.
    pub fn live(&self, position: usize, sample: &LiveSample<'_>) {
        let Some(labels) = self.plan().steps.get(position).cloned() else {
            return;
        };
        self.publish_counts(position, &labels, sample.events, sample.sql);
        self.rate.get_or_create(&labels).set(sample.eps);
        self.threads
            .get_or_create(&labels)
            .set(sample.threads as i64);
        self.latency
            .get_or_create(&labels)
            .add(sample.latency_buckets, &self.slot_of);
        let total: u64 = sample.latency_buckets.iter().sum();
        if total > 0 {
            for &(p, q) in QUANTILES {
                let ms = log_histogram::percentile_ms(sample.latency_buckets, p);
                self.quantiles
                    .get_or_create(&with(&labels, "quantile", q))
                    .set(ms / 1e3);
            }
        }
    }

    /// A run step ended: its counters reach the outcome's exact totals (what the last live
    /// sample missed of the last second).
    pub fn run_ended(&self, position: usize, outcome: &StepOutcome) {
        let Some(labels) = self.plan().steps.get(position).cloned() else {
            return;
        };
        self.publish_counts(position, &labels, outcome.events, outcome.sql);
    }

    /// Raises the step's counters to these totals (counters never go back: after a
    /// checkpoint the outcome covers less than the live totals did).
    fn publish_counts(
        &self,
        position: usize,
        labels: &Labels,
        events: u64,
        sql: Option<SqlCounters>,
    ) {
        let mut p = self.plan();
        let Some((prev_events, prev_sql)) = p.published.get_mut(position) else {
            return;
        };
        let grow = |c: &Counter, prev: &mut u64, now: u64| {
            if now > *prev {
                c.inc_by(now - *prev);
                *prev = now;
            }
        };
        grow(&self.events.get_or_create(labels), prev_events, events);
        if let Some(s) = sql {
            grow(
                &self.transactions.get_or_create(labels),
                &mut prev_sql.transactions,
                s.transactions.max(events),
            );
            for (kind, prev, now) in [
                ("read", &mut prev_sql.reads, s.reads),
                ("write", &mut prev_sql.writes, s.writes),
                ("other", &mut prev_sql.other, s.other),
            ] {
                grow(
                    &self.queries.get_or_create(&with(labels, "kind", kind)),
                    prev,
                    now,
                );
            }
            grow(
                &self.errors.get_or_create(labels),
                &mut prev_sql.errors,
                s.errors,
            );
            grow(
                &self.reconnects.get_or_create(labels),
                &mut prev_sql.reconnects,
                s.reconnects,
            );
        }
    }
}

/// `labels` plus one more.
fn with(labels: &Labels, key: &str, value: &str) -> Labels {
    let mut l = labels.clone();
    l.push((key.to_string(), value.to_string()));
    l
}

/// The labels of a step: [`STEP_LABELS`], then every matrix key of the step.
fn step_labels(suite: &Labels, step: &Step) -> Labels {
    let mut l = suite.clone();
    let threads = step
        .options
        .get("threads")
        .map(|v| v.to_string())
        .unwrap_or_default();
    for (k, v) in [
        ("step", step.index.to_string()),
        ("step_kind", step.kind.as_str().to_string()),
        ("variant", step.variant.clone()),
        ("workload", step.workload.clone()),
        ("threads", threads),
    ] {
        l.push((k.into(), v));
    }
    for (key, value) in &step.params {
        if matches!(key.as_str(), "workload" | "threads" | "variant") {
            continue;
        }
        let mut name = label_name(key);
        if STEP_LABELS.contains(&name.as_str())
            || matches!(name.as_str(), "state" | "quantile" | "le" | "kind")
        {
            name = format!("{}{name}", crate::results::csv::AXIS_COLLISION_PREFIX);
        }
        l.push((name, value.to_string()));
    }
    l
}

/// A Prometheus label name for a matrix key: `[a-zA-Z_][a-zA-Z0-9_]*`.
fn label_name(key: &str) -> String {
    let mut name: String = key
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) || name.starts_with("__") {
        name.insert_str(0, "axis_");
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_port_is_loopback_and_a_bad_address_names_its_source() {
        assert_eq!(
            parse_addr(":9464", "--metrics").unwrap(),
            "127.0.0.1:9464".parse().unwrap()
        );
        assert_eq!(
            parse_addr("9464", "--metrics").unwrap(),
            "127.0.0.1:9464".parse().unwrap()
        );
        assert_eq!(
            parse_addr("0.0.0.0:1", "--metrics").unwrap(),
            "0.0.0.0:1".parse().unwrap()
        );
        let e = parse_addr("localhost", "[suite] metrics")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("[suite] metrics `localhost`: not an address"),
            "{e}"
        );
    }

    #[test]
    fn histogram_buckets_cover_each_log_bucket_once() {
        let m = Metrics::new();
        let mut counts = vec![0u64; log_histogram::BUCKETS];
        counts[log_histogram::bucket_of_ns(300_000)] = 4; // 0.3 ms
        counts[log_histogram::bucket_of_ns(20_000_000_000)] = 1; // 20 s
        let h = LatencyHistogram::default();
        h.add(&counts, &m.slot_of);
        let s = h.inner.lock().unwrap();
        assert_eq!(s.count, 5);
        assert_eq!(s.buckets[2], 4, "0.3 ms is in le=0.0005");
        assert_eq!(s.buckets[LATENCY_BUCKETS.len()], 1, "20 s is in +Inf");
    }

    #[test]
    fn label_names_are_valid() {
        assert_eq!(label_name("table_size"), "table_size");
        assert_eq!(label_name("a-b"), "a_b");
        assert_eq!(label_name("1x"), "axis_1x");
    }
}
