#!/usr/bin/env sysbench
-- A key-value workload written as a sysbench 1.0 script: runs unchanged under sysbench and
-- under sbsuite (`sbsuite sysbench examples/lua/kv.lua … prepare|run|check|cleanup`, or the
-- suite examples/lua-kv.toml). Bulk-loaded data, prepared statements, a read/write mix set by
-- an option, a `check` command, and an FFI counter for the misses.

local ffi = require("ffi")
ffi.cdef [[void sb_counter_inc(int, sb_counter_type);]]

sysbench.cmdline.options = {
   keys = {"Number of keys loaded by prepare", 10000, sysbench.cmdline.ARG_INT},
   value_size = {"Bytes per value", 100, sysbench.cmdline.ARG_INT},
   get_share = {"Share of events that are gets (the rest are puts)", 0.9,
                sysbench.cmdline.ARG_DOUBLE},
   miss_share = {"Share of gets for keys that were never loaded", 0,
                 sysbench.cmdline.ARG_DOUBLE},
}

local function value()
   return sysbench.rand.string(string.rep("@", sysbench.opt.value_size))
end

function prepare()
   local con = sysbench.sql.driver():connect()
   con:query("CREATE TABLE kv (k INTEGER NOT NULL PRIMARY KEY, v VARCHAR(255) NOT NULL)")
   con:bulk_insert_init("INSERT INTO kv (k, v) VALUES")
   for k = 1, sysbench.opt.keys do
      con:bulk_insert_next(string.format("(%d, '%s')", k, value()))
   end
   con:bulk_insert_done()
   print(string.format("Inserted %d keys into 'kv'", sysbench.opt.keys))
end

function cleanup()
   sysbench.sql.driver():connect():query("DROP TABLE IF EXISTS kv")
end

-- Every key loaded by prepare is there exactly once.
local function check()
   local con = sysbench.sql.driver():connect()
   local n, lo, hi = con:query_row("SELECT COUNT(*), MIN(k), MAX(k) FROM kv")
   if tonumber(n) ~= sysbench.opt.keys or tonumber(lo) ~= 1
      or tonumber(hi) ~= sysbench.opt.keys then
      error(string.format("kv holds %s keys from %s to %s, expected 1..%d", n, lo, hi,
                          sysbench.opt.keys))
   end
   print(string.format("check: %d keys ok", sysbench.opt.keys))
end

sysbench.cmdline.commands = {check = {check}}

function thread_init()
   con = sysbench.sql.driver():connect()
   get = con:prepare("SELECT v FROM kv WHERE k = ?")
   put = con:prepare("UPDATE kv SET v = ? WHERE k = ?")
   get_key = get:bind_create(sysbench.sql.type.INT)
   get:bind_param(get_key)
   put_value = put:bind_create(sysbench.sql.type.VARCHAR, 255)
   put_key = put:bind_create(sysbench.sql.type.INT)
   put:bind_param(put_value, put_key)
end

function thread_done()
   get:close()
   put:close()
   con:disconnect()
end

function event()
   if sysbench.rand.uniform_double() < sysbench.opt.get_share then
      local k = sysbench.rand.default(1, sysbench.opt.keys)
      local miss = sysbench.rand.uniform_double() < sysbench.opt.miss_share
      get_key:set(miss and -k or k)
      local rs = get:execute()
      -- A get that finds nothing counts as an error in the statistics, bumped through the
      -- FFI as scripts do (`ignored errors:` in the report, `errors` in the results).
      if rs.nrows == 0 then
         ffi.C.sb_counter_inc(sysbench.tid, ffi.C.SB_CNT_ERROR)
      end
   else
      put_value:set(value())
      put_key:set(sysbench.rand.default(1, sysbench.opt.keys))
      put:execute()
   end
end
