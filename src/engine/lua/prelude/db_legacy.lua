-- sbsuite's `sysbench.db` and the `db_*` globals of sysbench 0.5 scripts (sysbench 1.0.20's
-- legacy API), written for sbsuite from its reference, on top of `sysbench.sql`'s C
-- functions. One implicit connection per state. Loaded as chunk `sysbench.db.lua` after
-- `sysbench.sql.lua`.

local ffi = require("ffi")
local C = ffi.C
local sql_type = sysbench.sql.type
local sql_error = sysbench.sql.error

sysbench.db = sysbench.db or {}
local db = sysbench.db

local driver = nil
local con = nil

local function need_connection()
  if con == nil then
    error("Uninitialized database connection", 0)
  end
end

function db.connect()
  if driver == nil then
    driver = sysbench.sql.driver()
  end
  db_driver = driver:name()
  if con == nil then
    con = driver:connect()
  end
end

function db.disconnect()
  if con ~= nil then
    con:disconnect()
    con = nil
  end
end

-- An ignorable error restarts the event (`{errcode = RESTART_EVENT}`); `fatal_msg` is raised
-- for the others, or nothing when it is nil (execute swallows them, as sysbench 0.5 did).
local function check(rs, fatal_msg)
  if rs ~= nil or con.error == sql_error.NONE then
    return
  end
  local hook = sysbench.hooks and sysbench.hooks.sql_error_ignorable
  local ignorable = con.error == sql_error.IGNORABLE
  if not ignorable and hook ~= nil and con.sql_state ~= nil and con.sql_errmsg ~= nil then
    ignorable = hook({
      connection = con,
      sql_errno = con.sql_errno,
      sql_state = ffi.string(con.sql_state),
      sql_errmsg = ffi.string(con.sql_errmsg),
    })
  end
  -- sysbench's C functions raise these: no script position.
  if ignorable then
    error({ errcode = sysbench.error.RESTART_EVENT }, 0)
  end
  if fatal_msg ~= nil then
    error(fatal_msg, 0)
  end
end

function db.query(query)
  if con == nil then
    db.connect()
  end
  local rs = C.db_query(con, query, #query)
  check(rs, "db_query() failed")
end

function db.bulk_insert_init(query)
  if con == nil then
    db.connect()
  end
  con:bulk_insert_init(query)
end

function db.bulk_insert_next(values)
  need_connection()
  con:bulk_insert_next(values)
end

function db.bulk_insert_done()
  need_connection()
  con:bulk_insert_done()
end

-- A legacy statement: the C statement, its parameter table (re-read at each execute) and
-- the buffers bound for it.
local legacy_stmt = {}
legacy_stmt.__index = legacy_stmt
legacy_stmt.__tostring = function() return "<sql_statement>" end

function db.prepare(query)
  if con == nil then
    db.connect()
  end
  local stmt = C.db_prepare(con, query, #query)
  if stmt == nil then
    error("db_prepare() failed", 0)
  end
  return setmetatable({ stmt = stmt, values = nil, params = nil }, legacy_stmt)
end

-- Binds buffers shaped after the values now in `values`: numbers as integers, anything else
-- as text of the current length (grown and bound again at execute when a value outgrows it).
local function bind_buffers(s)
  local params = {}
  for i = 1, #s.values do
    local v = s.values[i]
    if type(v) == "number" then
      params[i] = s.stmt:bind_create(sql_type.INT)
    else
      local len = type(v) == "string" and #v or 0
      params[i] = s.stmt:bind_create(sql_type.VARCHAR, math.max(len, 1))
    end
  end
  s.params = params
  if #params > 0 then
    s.stmt:bind_param(unpack(params))
  end
end

function db.bind_param(s, values)
  s.values = values
  bind_buffers(s)
end

function db.bind_result()
end

function db.execute(s)
  if s.params ~= nil then
    local values = s.values
    for i = 1, #s.params do
      local p, v = s.params[i], values[i]
      if p.type == sql_type.BIGINT then
        -- A C int, as sysbench 0.5 bound numbers.
        local n = tonumber(v)
        if n == nil then
          p:set(nil)
        else
          p:set(bit.tobit(n >= 0 and math.floor(n) or math.ceil(n)))
        end
      elseif v == nil then
        p:set(nil)
      else
        local text = tostring(v)
        if #text > p.max_len then
          bind_buffers(s)
          return db.execute(s)
        end
        p:set(text)
      end
    end
  end
  local rs = C.db_execute(s.stmt)
  check(rs, nil)
  return rs
end

function db.close(s)
  s.stmt:close()
  s.stmt = nil
end

function db.store_results()
end

function db.free_results(rs)
  if rs ~= nil then
    C.db_free_results(rs)
  end
end

db_connect = db.connect
db_disconnect = db.disconnect
db_query = db.query
db_bulk_insert_init = db.bulk_insert_init
db_bulk_insert_next = db.bulk_insert_next
db_bulk_insert_done = db.bulk_insert_done
db_prepare = db.prepare
db_bind_param = db.bind_param
db_bind_result = db.bind_result
db_execute = db.execute
db_close = db.close
db_store_results = db.store_results
db_free_results = db.free_results
