-- sysbench.sql for tests/all/lua_compat.rs: query, fetch_row with NULL, query_row, a prepared
-- statement with every bind type, bulk insert, error objects, an ignorable error that restarts
-- the event, and a restart raised by the script itself. Written for sbsuite's tests.
--
-- Lines starting with "@ " must be the same under sysbench 1.0.20 and sbsuite.
--
--   sysbench tests/lua/sql.lua prepare|run|cleanup --threads=1 --events=3 <db options>
--
-- Tables: lua_t_sql_types, lua_t_sql_kv (created by prepare, dropped by cleanup).

local function say(fmt, ...)
  -- one write per line: a report thread printing meanwhile cannot split it
  io.write("@ " .. string.format(fmt, ...) .. "\n")
end

local function show(v)
  if v == nil then return "NULL" end
  return tostring(v)
end

-- Column types that differ between the drivers.
local function types(drv)
  if drv:name() == "pgsql" then
    return { tiny = "SMALLINT", float = "REAL", double = "DOUBLE PRECISION" }
  end
  return { tiny = "TINYINT", float = "FLOAT", double = "DOUBLE" }
end

function prepare()
  local drv = sysbench.sql.driver()
  local con = drv:connect()
  local t = types(drv)
  say("driver %s", drv:name())
  local rs = con:query(string.format([[CREATE TABLE lua_t_sql_types (
      id INT PRIMARY KEY, ti %s, si SMALLINT, i INT, bi BIGINT, f %s, d %s,
      c CHAR(10), v VARCHAR(20))]], t.tiny, t.float, t.double))
  say("create: result == nil %s", tostring(rs == nil))
  con:query("CREATE TABLE lua_t_sql_kv (id INT PRIMARY KEY, v VARCHAR(20))")
  con:disconnect()
end

function cleanup()
  local con = sysbench.sql.driver():connect()
  con:query("DROP TABLE IF EXISTS lua_t_sql_types")
  con:query("DROP TABLE IF EXISTS lua_t_sql_kv")
  say("cleanup done")
end

local drv, con
local events, attempts = 0, 0

function thread_init()
  drv = sysbench.sql.driver()
  con = drv:connect()
  say("thread_init %d driver %s", sysbench.tid, drv:name())
end

function thread_done()
  say("disconnect %s", tostring(con:disconnect()))
  say("disconnect again %s", tostring(con:disconnect()))
end

-- Ignorable on MySQL only through this hook (1062 is not in --mysql-ignore-errors' default);
-- PostgreSQL's driver calls 23505 ignorable itself and never asks.
sysbench.hooks.sql_error_ignorable = function(err)
  say("sql_error_ignorable errno=%d state=%s", err.sql_errno, err.sql_state)
  return err.sql_errno == 1062
end

sysbench.hooks.before_restart_event = function(err)
  say("before_restart_event errcode=%s errno=%s state=%s query=%s", show(err.errcode),
      show(err.sql_errno), show(err.sql_state), show(err.query))
end

local function basics()
  con:bulk_insert_init("INSERT INTO lua_t_sql_kv VALUES")
  for i = 1, 100 do
    if i % 10 == 0 then
      con:bulk_insert_next(string.format("(%d, NULL)", i))
    else
      con:bulk_insert_next(string.format("(%d, 'v%d')", i, i))
    end
  end
  con:bulk_insert_done()
  say("bulk count %s", show(con:query_row("SELECT COUNT(*) FROM lua_t_sql_kv")))
  say("query_row two values: %s %s", con:query_row("SELECT id, v FROM lua_t_sql_kv WHERE id = 7"))
  say("query_row NULL: %s", show(con:query_row("SELECT v FROM lua_t_sql_kv WHERE id = 20")))
  say("query_row no row: %s", show(con:query_row("SELECT v FROM lua_t_sql_kv WHERE id = -1")))

  local rs = con:query("SELECT id, v FROM lua_t_sql_kv WHERE id <= 3 OR id = 10 ORDER BY id")
  say("select nrows=%d nfields=%d counter=%d", rs.nrows, rs.nfields, tonumber(rs.counter))
  for _ = 1, rs.nrows do
    local row = rs:fetch_row()
    say("row %s %s (#fields %d)", show(row[1]), show(row[2]), select("#", unpack(row, 1, rs.nfields)))
  end
  say("fetch after last: %s", show(rs:fetch_row()))
  local ok = rs:free()
  say("free: %s", tostring(ok))

  rs = con:query("UPDATE lua_t_sql_kv SET v = 'u' WHERE id = 1")
  say("update: result == nil %s", tostring(rs == nil))
  con:query("UPDATE lua_t_sql_kv SET v = 'u' WHERE id = -5")
  con:query("DELETE FROM lua_t_sql_kv WHERE id = 100")
  say("after delete %s", con:query_row("SELECT COUNT(*) FROM lua_t_sql_kv"))
end

local function binds()
  local T = sysbench.sql.type
  local stmt = con:prepare("INSERT INTO lua_t_sql_types VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)")
  local p = {
    stmt:bind_create(T.INT), stmt:bind_create(T.TINYINT), stmt:bind_create(T.SMALLINT),
    stmt:bind_create(T.INT), stmt:bind_create(T.BIGINT), stmt:bind_create(T.FLOAT),
    stmt:bind_create(T.DOUBLE), stmt:bind_create(T.CHAR, 10), stmt:bind_create(T.VARCHAR, 20),
  }
  say("bind_param -> %s", show(stmt:bind_param(unpack(p))))
  -- FLOAT and DOUBLE (columns 6, 7) are never set to a number: sysbench 1.0.20's set() writes
  -- a number past their one-element buffer (the bound value stays 0 and the heap is
  -- corrupted). Untouched they bind 0; set(nil) binds NULL; clearing is_null binds 0 again.
  local rows = {
    { 1, 7, -300, 70000, 1234567890123, false, false, "chr", "a varchar" },
    { 2, nil, nil, nil, nil, nil, nil, nil, nil },
    { 3, -8, 32000, -2000000000, -9876543210, 0, 0, "truncated!!!", "also cut at twenty chars" },
  }
  for _, r in ipairs(rows) do
    for i = 1, 9 do
      if r[i] == false then
        -- leave the parameter as bind_create made it
      elseif (i == 6 or i == 7) and r[i] ~= nil then
        p[i].is_null[0] = 0
      else
        p[i]:set(r[i])
      end
    end
    local rs = stmt:execute()
    say("execute: result == nil %s", tostring(rs == nil))
  end
  p[9]:set_rand_str("@@@@###")
  p[1]:set(4)
  stmt:execute()
  -- not closed: under sysbench 1.0.20 closing this statement crashes the next query on MySQL

  local rs = con:query("SELECT id, ti, si, i, bi, f, d, c, v FROM lua_t_sql_types WHERE id < 4 ORDER BY id")
  for _ = 1, rs.nrows do
    local row = rs:fetch_row()
    local out = {}
    for i = 1, rs.nfields do out[i] = show(row[i]) end
    say("types %s", table.concat(out, "|"))
  end
  local v = con:query_row("SELECT v FROM lua_t_sql_types WHERE id = 4")
  say("set_rand_str shape %s", (v:gsub("%d", "#"):gsub("[a-z]", "@")))

  local sel = con:prepare("SELECT id FROM lua_t_sql_kv WHERE id < ?")
  local lim = sel:bind_create(T.INT)
  sel:bind_param(lim)
  lim:set(6)
  rs = sel:execute()
  say("prepared select nrows=%d", rs.nrows)
  say("close -> %s", show(sel:close()))
end

local function errors()
  local E = sysbench.sql.error
  say("sql.error NONE=%d IGNORABLE=%d FATAL=%d", E.NONE, E.IGNORABLE, E.FATAL)
  local ok, err = pcall(con.query, con, "SELECT * FROM lua_t_sql_missing")
  say("missing table: ok=%s type=%s", tostring(ok), type(err))
  say("message: %s", tostring(err))
  say("con.error=%d sql_errno=%d sql_state=%s", tonumber(con.error), con.sql_errno,
      ffi.string(con.sql_state))
  ok, err = pcall(con.query, con, "SELEC 1")
  say("syntax: ok=%s message: %s", tostring(ok), tostring(err))
  ok, err = pcall(con.query_row, con, "SELECT * FROM lua_t_sql_missing")
  say("query_row missing table: ok=%s", tostring(ok))
end

function event()
  attempts = attempts + 1
  events = events + 1
  say("event %d attempt %d", events, attempts)
  if events == 1 then
    basics()
    binds()
    errors()
  elseif events == 2 then
    if attempts == 2 then
      -- a duplicate key: ignorable, so the event restarts (and counts once)
      events = events - 1
      con:query("INSERT INTO lua_t_sql_kv VALUES (1, 'dup')")
      say("not reached")
    end
    con:query("INSERT INTO lua_t_sql_kv VALUES (1000, 'after restart')")
    say("event 2 done")
  elseif events == 3 then
    if attempts == 4 then
      events = events - 1
      error({ errcode = sysbench.error.RESTART_EVENT, note = "raised by the script" })
    end
    say("count at the end %s", con:query_row("SELECT COUNT(*) FROM lua_t_sql_kv"))
  end
end
