-- sysbench.rand and the state's globals, for tests/all/lua_compat.rs. Written for sbsuite's tests.
--
-- Lines starting with "@ " are properties that must be the same under sysbench 1.0.20 and
-- sbsuite (ranges, shapes, formats: the generators' streams differ). Lines starting with
-- "# " are raw draws of the worker's stream: equal between two runs of the same tool with the
-- same --rand-seed and one thread, never compared across tools.
--
--   sysbench tests/lua/rand.lua run --threads=1 --events=1 [--rand-seed=N] [--rand-type=T]

local N = 20000

local function say(fmt, ...)
  -- one write per line: a report thread printing meanwhile cannot split it
  io.write("@ " .. string.format(fmt, ...) .. "\n")
end

-- Draws `n` values of f(a, b); returns min, max, mean, the share of values in [cut, cut2]
-- (cut2 defaults to -inf..cut) and the number of distinct values.
local function draws(f, a, b, n, cut, cut2)
  local lo, hi, sum, low, seen, distinct = math.huge, -math.huge, 0, 0, {}, 0
  for _ = 1, n do
    local v = f(a, b)
    if v < lo then lo = v end
    if v > hi then hi = v end
    sum = sum + v
    if cut and ((cut2 == nil and v <= cut) or (cut2 ~= nil and v >= cut and v <= cut2)) then
      low = low + 1
    end
    if not seen[v] then seen[v] = true; distinct = distinct + 1 end
  end
  return lo, hi, sum / n, low / n, distinct
end

local function within(x, lo, hi)
  return x >= lo and x <= hi
end

function event()
  say("version %s %s", sysbench.version, tostring(sysbench.version_string:find("^sysbench 1%.0%.20") ~= nil))
  say("tid %d", sysbench.tid)
  say("globals ffi=%s bit=%s jit=%s unpack=%s newproxy=%s", type(ffi), type(bit), type(jit),
      type(unpack), type(newproxy))
  say("error NONE=%d RESTART_EVENT=%d", sysbench.error.NONE, sysbench.error.RESTART_EVENT)

  local lo, hi, mean, _, distinct = draws(sysbench.rand.uniform, 1, 10, N)
  say("uniform(1,10) min=%d max=%d distinct=%d mean_ok=%s", lo, hi, distinct,
      tostring(within(mean, 5.2, 5.8)))
  lo, hi = draws(sysbench.rand.uniform, 7, 7, 100)
  say("uniform(7,7) min=%d max=%d", lo, hi)
  lo, hi = draws(sysbench.rand.uniform, 0, 4294967295, 100)
  say("uniform(0,2^32-1) min=%d max=%d", lo, hi)
  say("uniform(2.9,3.9) in [2,3]=%s", tostring(within(sysbench.rand.uniform(2.9, 3.9), 2, 3)))
  local ok, err = pcall(sysbench.rand.uniform, "x", 5)
  say("uniform('x',5) ok=%s cannot_convert=%s", tostring(ok), tostring(tostring(err):find("cannot convert") ~= nil))

  lo, hi, mean = draws(sysbench.rand.gaussian, 1, 100, N)
  say("gaussian(1,100) in_range=%s mean_ok=%s", tostring(lo >= 1 and hi <= 100),
      tostring(within(mean, 49.5, 51.5)))
  local _, _, _, near = draws(sysbench.rand.gaussian, 1, 100, N, 25)
  say("gaussian(1,100) share<=25 small=%s", tostring(near < 0.01))

  local share
  lo, hi, _, share = draws(sysbench.rand.pareto, 1, 100, N, 20)
  say("pareto(1,100) in_range=%s share<=20 ok=%s", tostring(lo >= 1 and hi <= 100),
      tostring(within(share, 0.75, 0.85)))

  -- special: about 75 % of the draws in a window 1 % wide at the centre of the range
  lo, hi, _, share = draws(sysbench.rand.special, 1, 1000, N, 490, 510)
  say("special(1,1000) in_range=%s share[490,510] ok=%s", tostring(lo >= 1 and hi <= 1000),
      tostring(within(share, 0.72, 0.82)))

  -- default follows --rand-type (special unless given): classify its shape
  lo, hi, mean, share = draws(sysbench.rand.default, 1, 1000, N, 490, 510)
  local _, _, _, quarter = draws(sysbench.rand.default, 1, 1000, N, 250)
  say("default(1,1000) in_range=%s mean=%s centre=%s low_quarter=%s", tostring(lo >= 1 and hi <= 1000),
      mean < 300 and "low" or "mid", share > 0.5 and "hot" or "flat",
      quarter > 0.5 and "most" or (quarter > 0.1 and "some" or "few"))

  local u = sysbench.rand.uniform_uint64()
  say("uniform_uint64 type=%s ctype=%s ULL=%s", type(u), tostring(ffi.typeof(u) == ffi.typeof("uint64_t")),
      tostring(tostring(u):find("ULL$") ~= nil))

  lo, hi, mean = draws(function() return sysbench.rand.uniform_double() end, 0, 0, N)
  say("uniform_double in[0,1)=%s mean_ok=%s", tostring(lo >= 0 and hi < 1), tostring(within(mean, 0.47, 0.53)))

  local tpl = "###-@@@ x#y@z.."
  local s = sysbench.rand.string(tpl)
  local mask = s:gsub("[0-9]", "#")
  mask = mask:gsub("()([a-z])", function(pos, c)
    return tpl:sub(pos, pos) == "@" and "@" or c
  end)
  say("string(%q) len=%d mask=%q", tpl, #s, mask)
  say("string('') = %q", sysbench.rand.string(""))

  local seen, dup = {}, 0
  for _ = 1, 5000 do
    local v = sysbench.rand.unique()
    if seen[v] then dup = dup + 1 end
    seen[v] = true
  end
  say("unique 5000 draws duplicates=%d type=%s", dup, type(sysbench.rand.unique()))

  -- raw draws: reproducible with --rand-seed and one thread, per tool
  print(string.format("# %d %d %d %d %s %s", sysbench.rand.uniform(1, 1000000),
        sysbench.rand.gaussian(1, 1000000), sysbench.rand.pareto(1, 1000000),
        sysbench.rand.special(1, 1000000), tostring(sysbench.rand.uniform_uint64()),
        sysbench.rand.string("@@@@@@@@####")))
  say("done")
end
