-- The legacy sysbench 0.5 API for tests/all/lua_compat.rs: globals `thread_id`, `test`,
-- `db_driver`, `DB_ERROR_*`, `sb_rand*`, the implicit connection of `db_connect`/`db_query`,
-- `db_bulk_insert_*`, `db_prepare`/`db_bind_param`/`db_execute`, and undeclared options read
-- as string globals. Written for sbsuite's tests.
--
-- Lines starting with "@ " must be the same under sysbench 1.0.20 and sbsuite.
--
--   sysbench tests/lua/legacy.lua prepare|run|cleanup --threads=1 --events=5 \
--     --legacy-rows=20 --legacy-name=abc <db options>
--
-- Table: lua_t_legacy (created by prepare, dropped by cleanup).

local function say(fmt, ...)
  -- one write per line: a report thread printing meanwhile cannot split it
  io.write("@ " .. string.format(fmt, ...) .. "\n")
end

function prepare()
  db_connect()
  say("prepare: db_driver=%s test=%s thread_id=%s", tostring(db_driver), tostring(test), tostring(thread_id))
  db_query("CREATE TABLE lua_t_legacy (id INTEGER PRIMARY KEY, k INTEGER, c VARCHAR(32))")
  local rows = tonumber(legacy_rows)
  db_bulk_insert_init("INSERT INTO lua_t_legacy VALUES")
  for i = 1, rows do
    db_bulk_insert_next(string.format("(%d, %d, '%s')", i, i * 10, sb_rand_str("###-@@@")))
  end
  db_bulk_insert_done()
  say("prepare: inserted %d rows", rows)
end

function cleanup()
  db_connect()
  db_query("DROP TABLE IF EXISTS lua_t_legacy")
  say("cleanup done")
end

local stmt, params, n

function thread_init(tid)
  db_connect()
  say("thread_init tid=%d thread_id=%d", tid, thread_id)
  say("options: legacy_rows=%s (%s) legacy_name=%s (%s) legacy_flag=%s", tostring(legacy_rows),
      type(legacy_rows), tostring(legacy_name), type(legacy_name), tostring(legacy_flag))
  say("DB_ERROR NONE=%d RESTART_TRANSACTION=%d FAILED=%d", DB_ERROR_NONE, DB_ERROR_RESTART_TRANSACTION,
      DB_ERROR_FAILED)
  say("myisam_max_rows=%s types sb_rand=%s sb_rnd=%s sb_rand_uniq=%s sb_rand_uniform=%s sb_rand_gaussian=%s sb_rand_special=%s",
      tostring(myisam_max_rows), type(sb_rand), type(sb_rnd), type(sb_rand_uniq),
      type(sb_rand_uniform), type(sb_rand_gaussian), type(sb_rand_special))
  stmt = db_prepare("UPDATE lua_t_legacy SET k = k + ? WHERE id = ?")
  params = { 1, 1 }
  db_bind_param(stmt, params)
  n = 0
end

function event(thread_id)
  n = n + 1
  local rows = tonumber(legacy_rows)
  local id = sb_rand(1, rows)
  local r = sb_rand_uniform(1, rows)
  local g = sb_rand_gaussian(1, rows)
  -- unique() is redrawn until it falls in the range: keep the range wide, or it takes millions
  local u = sb_rand_uniq(1, 2147483648)
  say("event %d thread_id=%d ranges ok=%s", n, thread_id, tostring(id >= 1 and id <= rows and r >= 1
      and r <= rows and g >= 1 and g <= rows and u >= 1 and u <= 2147483648 and sb_rnd() >= 0))
  db_query("SELECT c FROM lua_t_legacy WHERE id = " .. id)
  -- the bound table is re-read at each execute
  params[1] = n
  params[2] = n
  db_execute(stmt)
  db_query("BEGIN")
  db_query("UPDATE lua_t_legacy SET c = '" .. sb_rand_str("@@@@") .. "' WHERE id = " .. rows)
  db_query("COMMIT")
end

function thread_done()
  -- no db_close(stmt): under sysbench 1.0.20 the next query on MySQL then crashes
  db_query("SELECT 1")
  say("thread_done after %d events", n)
  db_disconnect()
end
