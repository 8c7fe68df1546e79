-- The LuaJIT FFI surface that third-party scripts use, for tests/all/lua_compat.rs: `ffi.cdef` of
-- sysbench's exported `sb_counter_inc` (with the host's `sb_counter_type`) and of libc's
-- `usleep`, and counter bumps that must show in the SQL statistics exactly as under sysbench
-- 1.0.20. One real query per event as well. Written for sbsuite's tests.
--
--   sysbench tests/lua/ffi.lua run --threads=2 --events=20 <db options>

ffi.cdef[[
void sb_counter_inc(int, sb_counter_type);
typedef uint32_t useconds_t;
int usleep(useconds_t useconds);
]]

local function say(fmt, ...)
  -- one write per line: a report thread printing meanwhile cannot split it
  io.write("@ " .. string.format(fmt, ...) .. "\n")
end

local con

function thread_init()
  con = sysbench.sql.driver():connect()
end

function event()
  con:query("SELECT 1")                                    -- a real read
  ffi.C.sb_counter_inc(sysbench.tid, ffi.C.SB_CNT_READ)
  ffi.C.sb_counter_inc(sysbench.tid, ffi.C.SB_CNT_READ)
  ffi.C.sb_counter_inc(sysbench.tid, ffi.C.SB_CNT_WRITE)
  ffi.C.sb_counter_inc(sysbench.tid, ffi.C.SB_CNT_OTHER)
  ffi.C.sb_counter_inc(sysbench.tid, ffi.C.SB_CNT_ERROR)
  ffi.C.sb_counter_inc(sysbench.tid, ffi.C.SB_CNT_RECONNECT)
  ffi.C.usleep(100)
end

function thread_done()
  con:disconnect()
end

function done()
  say("enum OTHER=%d READ=%d WRITE=%d TRX=%d ERROR=%d RECONNECT=%d MAX=%d",
      ffi.C.SB_CNT_OTHER, ffi.C.SB_CNT_READ, ffi.C.SB_CNT_WRITE, ffi.C.SB_CNT_TRX,
      ffi.C.SB_CNT_ERROR, ffi.C.SB_CNT_RECONNECT, ffi.C.SB_CNT_MAX)
  say("usleep returns %d", ffi.C.usleep(1))
  local ok, err = pcall(ffi.cdef, "typedef enum { SB_CNT_OTHER } my_type;")
  say("redefine enum constant ok=%s", tostring(ok))
end
