-- sysbench.hooks for tests/all/lua_compat.rs: report_intermediate through report_csv,
-- report_json or report_default (--format), report_cumulative, before_restart_event.
-- Written for sbsuite's tests.
--
-- Lines starting with "@ " must be the same under sysbench 1.0.20 and sbsuite; report lines
-- carry timings, so tests compare their shape (numbers replaced).
--
--   sysbench tests/lua/hooks.lua run --threads=1 --events=300 --report-interval=1 --format=csv

ffi.cdef[[
typedef uint32_t useconds_t;
int usleep(useconds_t useconds);
]]

sysbench.cmdline.options = {
  format = { "intermediate report format: csv, json, default or none", "csv" },
  sleep = { "microseconds slept per event", 5000, sysbench.cmdline.ARG_INT },
}

local function say(fmt, ...)
  -- one write per line: a report thread printing meanwhile cannot split it
  io.write("@ " .. string.format(fmt, ...) .. "\n")
end

local reporters = {
  csv = sysbench.report_csv,
  json = sysbench.report_json,
  default = sysbench.report_default,
}

sysbench.hooks.report_intermediate = function(stat)
  local f = reporters[sysbench.opt.format]
  if f then f(stat) end
end

sysbench.hooks.report_cumulative = function(stat)
  local keys = {}
  for k, v in pairs(stat) do keys[#keys + 1] = k .. ":" .. type(v) end
  table.sort(keys)
  say("cumulative tid=%d keys %s", sysbench.tid, table.concat(keys, " "))
  say("cumulative events=%d reads=%d writes=%d other=%d errors=%d reconnects=%d threads_running=%d",
      stat.events, stat.reads, stat.writes, stat.other, stat.errors, stat.reconnects,
      stat.threads_running)
  say("cumulative latency ordered=%s", tostring(stat.latency_min <= stat.latency_avg and
      stat.latency_avg <= stat.latency_max and stat.latency_pct > 0))
  local f = reporters[sysbench.opt.format]
  if f then f(stat) end
end

local restarts, n = 0, 0

sysbench.hooks.before_restart_event = function(err)
  restarts = restarts + 1
  say("before_restart_event %d errcode=%d why=%s", restarts, err.errcode, tostring(err.why))
end

function event()
  n = n + 1
  if n % 50 == 0 then
    error({ errcode = sysbench.error.RESTART_EVENT, why = "every 50th attempt" })
  end
  ffi.C.usleep(sysbench.opt.sleep)
end

function thread_done()
  say("thread_done attempts=%d restarts=%d", n, restarts)
end
