-- sysbench.cmdline for tests/all/lua_compat.rs: declared options of every type and their
-- `sysbench.opt` values, the `help` listing, a serial custom command, a PARALLEL one and one
-- that fails. Written for sbsuite's tests.
--
-- Lines starting with "@ " must be the same under sysbench 1.0.20 and sbsuite (a PARALLEL
-- command's lines come in any order: compare them sorted).
--
--   sysbench tests/lua/cmdline.lua help
--   sysbench tests/lua/cmdline.lua show [--int-opt=5 --list-opt=a,b ...]
--   sysbench tests/lua/cmdline.lua par --threads=3
--   sysbench tests/lua/cmdline.lua fail

local function say(fmt, ...)
  -- one write per line: a report thread printing meanwhile cannot split it
  io.write("@ " .. string.format(fmt, ...) .. "\n")
end

local A = sysbench.cmdline
sysbench.cmdline.options = {
  ["bool-opt"] = { "a boolean", false, A.ARG_BOOL },
  ["bool-on"] = { "a boolean that is on", true },
  ["int-opt"] = { "an integer", 10, A.ARG_INT },
  ["size-opt"] = { "a size", "4K", A.ARG_SIZE },
  ["double-opt"] = { "a double", 0.5, A.ARG_DOUBLE },
  ["number-opt"] = { "a number without type (double)", 3 },
  ["big-number"] = { "a large number", 1e15 },
  ["string-opt"] = { "a string", "abc", A.ARG_STRING },
  ["string-untyped"] = { "a string without type", "xyz" },
  ["string-empty"] = { "a string without default", nil, A.ARG_STRING },
  ["list-opt"] = { "a list", "x,y", A.ARG_LIST },
  ["list-untyped"] = { "a list without type", { "p", "q", "r" } },
  ["nil-default"] = { "no default, no type" },
  really_long_option_name = { "long name", 1, A.ARG_INT },
}
-- added after the table, as scripts do after `require`
sysbench.cmdline.options["late-opt"] = { "declared later", "late" }

-- the top level runs in every state: what it sees before the options are exported
say("top: opt=%s command=%s script_path=%s tid=%d", type(sysbench.opt), tostring(A.command),
    tostring(A.script_path), sysbench.tid)
say("ARG NULL=%d BOOL=%d INT=%d SIZE=%d DOUBLE=%d STRING=%d LIST=%d FILE=%d", A.ARG_NULL,
    A.ARG_BOOL, A.ARG_INT, A.ARG_SIZE, A.ARG_DOUBLE, A.ARG_STRING, A.ARG_LIST, A.ARG_FILE)
say("PARALLEL_COMMAND=%s", tostring(A.PARALLEL_COMMAND))
do
  local args = {}
  for i = 1, #A.argv do args[#args + 1] = A.argv[i] end
  say("argv[1..] %s", table.concat(args, " "))
end

local function value(v)
  if type(v) == "table" then
    return "{" .. table.concat(v, ",") .. "}"
  end
  return tostring(v)
end

local function show()
  local names = {}
  for k in pairs(sysbench.opt) do names[#names + 1] = k end
  table.sort(names)
  local mine = {}
  for name in pairs(sysbench.cmdline.options) do mine[name:gsub("-", "_")] = true end
  for _, k in ipairs(names) do
    if mine[k] then
      say("opt %s = %s (%s)", k, value(sysbench.opt[k]), type(sysbench.opt[k]))
    end
  end
  -- a few general options
  for _, k in ipairs({ "threads", "events", "time", "rand_type", "db_driver", "percentile",
                       "mysql_host", "histogram", "report_interval" }) do
    say("general %s = %s (%s)", k, value(sysbench.opt[k]), type(sysbench.opt[k]))
  end
  say("command %s defined=%s parallel=%s", tostring(A.command),
      tostring(A.command_defined("par")), tostring(A.command_parallel("par")))
  say("show defined=%s parallel=%s, missing defined=%s", tostring(A.command_defined("show")),
      tostring(A.command_parallel("show")), tostring(A.command_defined("missing")))
  say("tid %d", sysbench.tid)
end

local function par()
  say("par tid=%d threads=%d", sysbench.tid, sysbench.opt.threads)
end

sysbench.cmdline.commands = {
  show = { show },
  par = { par, sysbench.cmdline.PARALLEL_COMMAND },
  fail = { function() say("fail runs") return false end },
  raise = { function() error("raised by a command") end },
}
