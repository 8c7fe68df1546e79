-- A `con:query()` result set larger than any bound of sbsuite's administrative queries
-- (100,000 rows), for tests/all/lua_compat.rs: `rs.nrows`, `rs.nfields` and every row fetched
-- must be what sysbench 1.0.20 gives. Written for sbsuite's tests.
--
-- Lines starting with "@ " must be the same under sysbench 1.0.20 and sbsuite.
--
--   sysbench tests/lua/big_result.lua prepare|run|cleanup --threads=1 --events=1 \
--     [--big-rows=150000] [--big-fetch=off] <db options>
--
-- Table: lua_t_big (created by prepare, dropped by cleanup).

sysbench.cmdline.options = {
  big_rows = {"Rows of lua_t_big", 150000},
  big_fetch = {"Read the rows (false: only SELECT 1, for the memory the rest takes)", true},
}

local function say(fmt, ...)
  io.write("@ " .. string.format(fmt, ...) .. "\n")
end

-- Row i's text: its length varies with i, and every 7th row is NULL.
local function text_of(i)
  if i % 7 == 0 then
    return nil
  end
  return string.rep(string.char(97 + i % 26), i % 40) .. "-" .. i
end

function prepare()
  local con = sysbench.sql.driver():connect()
  con:query("CREATE TABLE lua_t_big (id INTEGER PRIMARY KEY, c VARCHAR(64))")
  con:bulk_insert_init("INSERT INTO lua_t_big (id, c) VALUES")
  for i = 1, sysbench.opt.big_rows do
    local c = text_of(i)
    con:bulk_insert_next(string.format("(%d, %s)", i, c and ("'" .. c .. "'") or "NULL"))
  end
  con:bulk_insert_done()
  say("prepare: %d rows", sysbench.opt.big_rows)
end

function cleanup()
  local con = sysbench.sql.driver():connect()
  con:query("DROP TABLE IF EXISTS lua_t_big")
end

local con

function thread_init()
  con = sysbench.sql.driver():connect()
end

function event()
  if not sysbench.opt.big_fetch then
    say("select 1: %s", tostring(con:query_row("SELECT 1")))
    return
  end
  local rs = con:query("SELECT id, c FROM lua_t_big ORDER BY id")
  say("nrows=%d nfields=%d", rs.nrows, rs.nfields)
  local fetched, ids, bytes, nulls, wrong = 0, 0, 0, 0, 0
  for i = 1, rs.nrows do
    local row = rs:fetch_row()
    fetched = fetched + 1
    ids = ids + tonumber(row[1])
    if row[2] == nil then
      nulls = nulls + 1
    else
      bytes = bytes + #row[2]
    end
    if tonumber(row[1]) ~= i or row[2] ~= text_of(i) then
      wrong = wrong + 1
    end
  end
  say("fetched=%d id_sum=%d bytes=%d nulls=%d wrong=%d", fetched, ids, bytes, nulls, wrong)
  say("after the last row: %s", tostring(rs:fetch_row()))
  -- The same rows again, read to the end without `nrows`.
  rs = con:query("SELECT c FROM lua_t_big WHERE id > 1000 ORDER BY id")
  local n, row = 0, rs:fetch_row()
  while row do
    n = n + 1
    row = rs:fetch_row()
  end
  say("second query: nrows=%d fetched=%d", rs.nrows, n)
  say("query_row: %s", tostring(con:query_row("SELECT count(*) FROM lua_t_big")))
end
