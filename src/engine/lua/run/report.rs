//! The numbers of a Lua script's reports: the sysbench counters its states bump
//! (`sb_counter_inc`, the SQL layer) turned into the interim rates and `SQL statistics:`, and
//! the `stat` table of sysbench's report hooks (`sysbench.hooks.report_intermediate`,
//! `report_cumulative`).
//!
//! sysbench's rule for the report's shape: the SQL forms (`tps: … qps: …`, `SQL statistics:`)
//! only when the script used a database driver, else the plain `eps:` line and no SQL block.

use std::sync::Mutex;

use mlua::{Lua, Table};

use super::super::ctx::{CNT_ERROR, CNT_OTHER, CNT_READ, CNT_RECONNECT, CNT_TRX, Counters};
use super::super::{LuaError, LuaShared};
use crate::engine::session::retry::ErrorCodes;

/// The counters of the worker slots, summed.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(super) struct Tally {
    pub events: u64,
    pub reads: u64,
    pub writes: u64,
    pub other: u64,
    pub errors: u64,
    pub reconnects: u64,
}

impl Tally {
    pub fn of(c: &Counters) -> Tally {
        let s = c.sum();
        let at = |k: i32| {
            usize::try_from(k)
                .ok()
                .and_then(|k| s.get(k).copied())
                .unwrap_or(0)
        };
        Tally {
            events: at(CNT_TRX),
            reads: at(CNT_READ),
            writes: at(super::super::ctx::CNT_WRITE),
            other: at(CNT_OTHER),
            errors: at(CNT_ERROR),
            reconnects: at(CNT_RECONNECT),
        }
    }

    pub fn minus(&self, o: &Tally) -> Tally {
        Tally {
            events: self.events.saturating_sub(o.events),
            reads: self.reads.saturating_sub(o.reads),
            writes: self.writes.saturating_sub(o.writes),
            other: self.other.saturating_sub(o.other),
            errors: self.errors.saturating_sub(o.errors),
            reconnects: self.reconnects.saturating_sub(o.reconnects),
        }
    }
}

/// The collector's view between reports: the previous interim snapshot and the start of the
/// period (reset at warmup end and checkpoints).
#[derive(Default)]
struct Marks {
    prev: Tally,
    prev_time: f64,
    base: Tally,
    base_codes: ErrorCodes,
}

/// Interim and period deltas of the counters.
#[derive(Default)]
pub(super) struct Collector {
    marks: Mutex<Marks>,
}

impl Collector {
    fn marks(&self) -> std::sync::MutexGuard<'_, Marks> {
        self.marks.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The change since the previous interim report at `time_s`, and the interval's length.
    pub fn interval(&self, now: Tally, time_s: f64) -> (Tally, f64) {
        let mut m = self.marks();
        let dt = if time_s > m.prev_time {
            time_s - m.prev_time
        } else {
            time_s
        };
        let d = now.minus(&m.prev);
        m.prev = now;
        m.prev_time = time_s;
        (d, dt.max(1e-9))
    }

    /// The change since the start of the period.
    pub fn period(&self, now: &Tally) -> Tally {
        now.minus(&self.marks().base)
    }

    /// A new period starts now (warmup end, after a checkpoint).
    pub fn reset(&self, now: Tally) {
        let mut m = self.marks();
        m.base = now;
        m.prev = now;
    }

    /// The SQL errors by code of the period since the last [`Collector::reset_codes`].
    pub fn period_codes(&self, shared: &LuaShared) -> ErrorCodes {
        let now = shared
            .codes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        now.minus(&self.marks().base_codes)
    }

    /// A new period of error codes starts now (with [`Collector::reset`]).
    pub fn reset_codes(&self, shared: &LuaShared) {
        let now = shared
            .codes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        self.marks().base_codes = now;
    }
}

/// sysbench's `stat` table (numbers; times in seconds).
#[derive(Clone, Debug, Default)]
pub(super) struct Stat {
    pub threads_running: f64,
    pub time_interval: f64,
    pub time_total: f64,
    pub latency_pct: f64,
    pub counts: Tally,
    /// Interim reports only.
    pub queue: Option<(f64, f64)>,
    /// Cumulative reports only: min, max, avg, sum.
    pub latency: Option<[f64; 4]>,
}

impl Stat {
    fn table(&self, lua: &Lua) -> Result<Table, mlua::Error> {
        let t = lua.create_table()?;
        t.set("threads_running", self.threads_running)?;
        t.set("time_interval", self.time_interval)?;
        t.set("time_total", self.time_total)?;
        t.set("latency_pct", self.latency_pct)?;
        let c = &self.counts;
        for (k, v) in [
            ("events", c.events),
            ("reads", c.reads),
            ("writes", c.writes),
            ("other", c.other),
            ("errors", c.errors),
            ("reconnects", c.reconnects),
        ] {
            t.set(k, v as f64)?;
        }
        if let Some((queue_length, concurrency)) = self.queue {
            t.set("queue_length", queue_length)?;
            t.set("concurrency", concurrency)?;
        }
        if let Some([min, max, avg, sum]) = self.latency {
            t.set("latency_min", min)?;
            t.set("latency_max", max)?;
            t.set("latency_avg", avg)?;
            t.set("latency_sum", sum)?;
        }
        Ok(t)
    }
}

/// Which report hooks the script set at load (sysbench looks them up once, after the main
/// chunk: a hook assigned in `init()` is ignored).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Hooks {
    pub intermediate: bool,
    pub cumulative: bool,
}

fn hooks_table(lua: &Lua) -> Result<Option<Table>, mlua::Error> {
    let Some(sb) = lua.globals().get::<Option<Table>>("sysbench")? else {
        return Ok(None);
    };
    sb.get::<Option<Table>>("hooks")
}

impl Hooks {
    pub fn of(lua: &Lua) -> Hooks {
        let set = |name: &str| {
            hooks_table(lua)
                .ok()
                .flatten()
                .and_then(|h| h.get::<mlua::Value>(name).ok())
                .is_some_and(|v| v.is_function())
        };
        Hooks {
            intermediate: set("report_intermediate"),
            cumulative: set("report_cumulative"),
        }
    }
}

/// Calls `sysbench.hooks.NAME(stat)`.
pub(super) fn call_hook(lua: &Lua, name: &str, stat: &Stat) -> Result<(), LuaError> {
    let Some(hooks) = hooks_table(lua)? else {
        return Ok(());
    };
    if let Some(f) = hooks.get::<Option<mlua::Function>>(name)? {
        f.call::<()>(stat.table(lua)?)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_and_periods_are_deltas() {
        let c = Collector::default();
        let t = |reads| Tally {
            reads,
            ..Tally::default()
        };
        let (d, dt) = c.interval(t(10), 1.0);
        assert_eq!((d.reads, dt), (10, 1.0));
        let (d, dt) = c.interval(t(25), 2.0);
        assert_eq!((d.reads, dt), (15, 1.0));
        assert_eq!(c.period(&t(25)).reads, 25);
        c.reset(t(25));
        assert_eq!(c.period(&t(30)).reads, 5);
    }
}
