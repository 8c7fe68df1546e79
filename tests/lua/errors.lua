-- Runtime errors for tests/all/lua_compat.rs: an error raised where --where says, whose message
-- must name this file and the line under sysbench 1.0.20 and sbsuite alike (and the exit code
-- must match). errors_syntax.lua holds the syntax error. Written for sbsuite's tests.
--
--   sysbench tests/lua/errors.lua run --where=event --threads=1 --events=3
--   where: top, init, thread_init, event, done, prepare, cleanup, command, nil_call

sysbench.cmdline.options = {
  where = { "where to fail", "event" },
}

local function fail(where)
  if sysbench.opt.where == where then
    error("failing in " .. where)
  end
end

-- sysbench.opt is nil at the top level: read the raw argument list instead
for _, a in ipairs(sysbench.cmdline.argv) do
  if a == "--where=top" then
    error("failing at the top level")
  end
end

function prepare() fail("prepare") print("@ prepared") end
function cleanup() fail("cleanup") print("@ cleaned") end
function init() fail("init") end
function thread_init() fail("thread_init") end
function done() fail("done") print("@ done ran") end

function event()
  fail("event")
  if sysbench.opt.where == "nil_call" then
    local t = {}
    t.missing.field = 1
  end
end

sysbench.cmdline.commands = {
  explode = { function() fail("command") print("@ command ran") end },
}
