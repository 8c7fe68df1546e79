-- sbsuite: the core of sysbench 1.0.20's Lua API (reference §1, §5): error codes, hooks, the
-- default event loop and the report formatters.

ffi = require("ffi")

ffi.cdef[[
void sb_event_start(int);
void sb_event_stop(int);
bool sb_more_events(int);
bool sbsuite_retries_exhausted(uint64_t);
]]

-- sysbench writes to an unbuffered stdout: lines appear as they are printed.
io.stdout:setvbuf("no")

sysbench.error = { NONE = 0, RESTART_EVENT = 1 }
sysbench.hooks = {}

local C = ffi.C

-- The default loop: one event() call per event; an error table carrying RESTART_EVENT runs
-- the before_restart_event hook and retries (the event keeps its start time and counts once);
-- any truthy return value ends this thread without counting the event.
function thread_run(thread_id)
  while C.sb_more_events(thread_id) do
    C.sb_event_start(thread_id)
    local ok, ret
    local restarts = 0
    repeat
      ok, ret = pcall(event, thread_id)
      if not ok then
        if type(ret) == "table" and ret.errcode == sysbench.error.RESTART_EVENT then
          -- sbsuite's max_retries (0: none, as sysbench): an ignored error that recurs on
          -- every re-run fails the run instead of spinning for ever.
          restarts = restarts + 1
          if C.sbsuite_retries_exhausted(restarts) then
            error(string.format("the event failed %d times in a row with ignored errors " ..
              "(max_retries; last: %s): an error that recurs on every re-run is not a " ..
              "transient one: take its code out of the ignored errors, fix the script, or " ..
              "raise max_retries (0: no limit)", restarts,
              tostring(ret.sql_errno or ret.sql_state or "?")), 2)
          end
          local hook = sysbench.hooks.before_restart_event
          if hook then hook(ret) end
        else
          error(ret, 2)
        end
      end
    until ok
    if ret then break end
    C.sb_event_stop(thread_id)
  end
end

-- Rates of a stat table: per second of its interval; latency in milliseconds.
local function rates(stat)
  local t = stat.time_interval
  return stat.events / t, (stat.reads + stat.writes + stat.other) / t,
    stat.reads / t, stat.writes / t, stat.other / t, stat.latency_pct * 1000,
    stat.errors / t, stat.reconnects / t
end

function sysbench.report_default(stat)
  local tps, qps, r, w, o, lat, err, reconn = rates(stat)
  io.write(string.format("[ %.0fs ] thds: %d tps: %4.2f qps: %4.2f " ..
    "(r/w/o: %4.2f/%4.2f/%4.2f) lat (ms,%d%%): %4.2f err/s %4.2f reconn/s: %4.2f\n",
    stat.time_total, stat.threads_running, tps, qps, r, w, o,
    sysbench.opt.percentile, lat, err, reconn))
end

function sysbench.report_csv(stat)
  local tps, qps, r, w, o, lat, err, reconn = rates(stat)
  io.write(string.format("%.0f,%d,%4.2f,%4.2f,%4.2f,%4.2f,%4.2f,%4.2f,%4.2f,%4.2f\n",
    stat.time_total, stat.threads_running, tps, qps, r, w, o, lat, err, reconn))
end

-- One JSON array per state: "[" before the first object, "," between objects, "]" when the
-- state closes (the finalizer of the global proxy gobj).
function sysbench.report_json(stat)
  if gobj == nil then
    io.write("[\n")
    gobj = newproxy(true)
    getmetatable(gobj).__gc = function() io.write("\n]\n") end
  else
    io.write(",\n")
  end
  local tps, qps, r, w, o, lat, err, reconn = rates(stat)
  io.write(string.format([[
  {
    "time": %4.0f,
    "threads": %d,
    "tps": %4.2f,
    "qps": {
      "total": %4.2f,
      "reads": %4.2f,
      "writes": %4.2f,
      "other": %4.2f
    },
    "latency": %4.2f,
    "errors": %4.2f,
    "reconnects": %4.2f
  }]], stat.time_total, stat.threads_running, tps, qps, r, w, o, lat, err, reconn))
end
