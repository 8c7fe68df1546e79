-- A small sysbench 1.0 script for tests/all/lua_suite.rs (#16): options of every type a suite
-- axis can carry, data made by `prepare`, and custom commands `check` and `prewarm` that a
-- suite runs as plan steps. Written for these tests; runs under sysbench 1.0.20 as well
-- (`sysbench tests/lua/suite_demo.lua help`).

-- As sysbench's oltp_common.lua and sysbench-tpcc do: the top level needs a command, so a
-- suite must load the script with one.
if sysbench.cmdline.command == nil then
   error("Command is required. Supported commands: prepare, run, cleanup, check, prewarm, help")
end

sysbench.cmdline.options = {
   tables = {"Number of tables", 1, sysbench.cmdline.ARG_INT},
   rows = {"Rows per table", 10, sysbench.cmdline.ARG_INT},
   pad = {"Bytes of padding per row", "64", sysbench.cmdline.ARG_SIZE},
   read_share = {"Share of events that read (the rest update)", 0.5, sysbench.cmdline.ARG_DOUBLE},
   label = {"Text written into each row", "demo", sysbench.cmdline.ARG_STRING},
   loud = {"Print each table's row count in check", false, sysbench.cmdline.ARG_BOOL},
   kinds = {"Statement kinds to use", {"point", "update"}},
}

local function table_name(i)
   return "suite_demo" .. i
end

local function connect()
   local drv = sysbench.sql.driver()
   return drv:connect()
end

function prepare()
   local con = connect()
   for t = 1, sysbench.opt.tables do
      con:query("CREATE TABLE " .. table_name(t) ..
                   " (id INTEGER PRIMARY KEY, k INTEGER NOT NULL, pad VARCHAR(255) NOT NULL)")
      for id = 1, sysbench.opt.rows do
         con:query(string.format("INSERT INTO %s (id, k, pad) VALUES (%d, 0, '%s')",
                                 table_name(t), id,
                                 string.rep("x", math.min(sysbench.opt.pad, 200))))
      end
   end
end

function cleanup()
   local con = connect()
   for t = 1, sysbench.opt.tables do
      con:query("DROP TABLE IF EXISTS " .. table_name(t))
   end
end

-- Every table holds `rows` rows: fails (returns false) when one does not.
local function cmd_check()
   local con = connect()
   for t = 1, sysbench.opt.tables do
      local n = tonumber(con:query_row("SELECT COUNT(*) FROM " .. table_name(t)))
      if sysbench.opt.loud then
         print(string.format("%s: %d rows", table_name(t), n))
      end
      if n ~= sysbench.opt.rows then
         error(string.format("%s has %d rows, expected %d", table_name(t), n,
                             sysbench.opt.rows))
      end
   end
   print("check: " .. sysbench.opt.tables .. " table(s) ok")
end

local function cmd_prewarm()
   local con = connect()
   for t = 1, sysbench.opt.tables do
      con:query_row("SELECT SUM(k) FROM " .. table_name(t))
   end
   print("prewarm: done")
end

sysbench.cmdline.commands = {
   check = {cmd_check},
   prewarm = {cmd_prewarm},
}

function thread_init()
   con = connect()
   -- Without "update" among the kinds, every event reads.
   updates = false
   for _, k in ipairs(sysbench.opt.kinds) do
      if k == "update" then
         updates = true
      end
   end
end

function thread_done()
   con:disconnect()
end

function event()
   local t = sysbench.rand.uniform(1, sysbench.opt.tables)
   local id = sysbench.rand.uniform(1, sysbench.opt.rows)
   if not updates or sysbench.rand.uniform_double() < sysbench.opt.read_share then
      con:query_row(string.format("SELECT pad FROM %s WHERE id = %d", table_name(t), id))
   else
      con:query(string.format("UPDATE %s SET k = k + 1 WHERE id = %d", table_name(t), id))
   end
end
