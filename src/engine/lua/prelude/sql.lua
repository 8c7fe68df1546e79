-- sbsuite's `sysbench.sql` (sysbench 1.0.20's API), written for sbsuite from its reference.
-- The C side is sbsuite's own `db_*` functions (src/engine/lua/sql); this chunk declares
-- their structs, gives them methods through metatypes and turns driver errors into
-- sysbench's Lua errors. Loaded as chunk `sysbench.sql.lua` after the `sysbench` table.

ffi = require("ffi")

ffi.cdef[[
typedef enum {
  DB_ERROR_NONE,
  DB_ERROR_IGNORABLE,
  DB_ERROR_FATAL
} sql_error_t;

typedef enum {
  SB_CNT_OTHER,
  SB_CNT_READ,
  SB_CNT_WRITE,
  SB_CNT_TRX,
  SB_CNT_ERROR,
  SB_CNT_RECONNECT,
  SB_CNT_MAX
} sb_counter_type;

typedef enum {
  SQL_TYPE_NONE,
  SQL_TYPE_TINYINT,
  SQL_TYPE_SMALLINT,
  SQL_TYPE_INT,
  SQL_TYPE_BIGINT,
  SQL_TYPE_FLOAT,
  SQL_TYPE_DOUBLE,
  SQL_TYPE_TIME,
  SQL_TYPE_DATE,
  SQL_TYPE_DATETIME,
  SQL_TYPE_TIMESTAMP,
  SQL_TYPE_CHAR,
  SQL_TYPE_VARCHAR
} sql_bind_type_t;

typedef struct {
  const char *sname;
  const char *lname;
} sql_driver;

typedef struct {
  uint32_t len;
  const char *ptr;
} sql_value;

typedef struct {
  void *ptr;
  sql_value *values;
} sql_row;

typedef struct sql_connection sql_connection;
typedef struct sql_statement sql_statement;

struct sql_connection {
  sql_error_t error;
  int sql_errno;
  const char *sql_state;
  const char *sql_errmsg;
  sql_driver *driver;
};

struct sql_statement {
  sql_connection *connection;
};

typedef struct {
  sb_counter_type counter;
  uint32_t nrows;
  uint32_t nfields;
  sql_statement *statement;
  void *ptr;
  sql_row row;
} sql_result;

typedef struct {
  sql_bind_type_t type;
  void *buffer;
  unsigned long *data_len;
  unsigned long max_len;
  char *is_null;
} sql_bind;

sql_driver *db_create(const char *);
int db_destroy(sql_driver *);
sql_connection *db_connection_create(sql_driver *);
int db_connection_close(sql_connection *);
int db_connection_reconnect(sql_connection *);
void db_connection_free(sql_connection *);
int db_bulk_insert_init(sql_connection *, const char *, size_t);
int db_bulk_insert_next(sql_connection *, const char *, size_t);
int db_bulk_insert_done(sql_connection *);
sql_result *db_query(sql_connection *, const char *, size_t);
sql_row *db_fetch_row(sql_result *);
sql_statement *db_prepare(sql_connection *, const char *, size_t);
int db_bind_param(sql_statement *, sql_bind *, size_t);
int db_bind_result(sql_statement *, sql_bind *, size_t);
sql_result *db_execute(sql_statement *);
int db_close(sql_statement *);
int db_free_results(sql_result *);
]]

-- The random string filler may already be declared by the rand chunk.
pcall(ffi.cdef, "void sb_rand_str(const char *, char *);")

local C = ffi.C

sysbench.sql = sysbench.sql or {}

sysbench.sql.type = {
  NONE = 0, TINYINT = 1, SMALLINT = 2, INT = 3, BIGINT = 4, FLOAT = 5, DOUBLE = 6,
  TIME = 7, DATE = 8, DATETIME = 9, TIMESTAMP = 10, CHAR = 11, VARCHAR = 12,
}

sysbench.sql.error = { NONE = 0, IGNORABLE = 1, FATAL = 2 }

local sql_type = sysbench.sql.type
local sql_error = sysbench.sql.error

-- Bound parameters of a statement, kept alive (their buffers are read at execute) until
-- the statement is closed. Keyed by the statement's address.
local bound = {}
-- The connection of each open statement, kept from the garbage collector (whose
-- `db_connection_free` would close it under the statement) until the statement is closed.
local owner = {}

local function stmt_key(stmt)
  return tonumber(ffi.cast("intptr_t", stmt))
end

function sysbench.sql.driver(name)
  local drv = C.db_create(name)
  if drv == nil then
    error("failed to initialize the DB driver", 2)
  end
  return ffi.gc(drv, C.db_destroy)
end

-- Driver methods.
local driver_methods = {}

function driver_methods.connect(self)
  local con = C.db_connection_create(self)
  if con == nil then
    error("connection creation failed", 2)
  end
  return ffi.gc(con, C.db_connection_free)
end

function driver_methods.name(self)
  return ffi.string(self.sname)
end

ffi.metatype("sql_driver", {
  __index = driver_methods,
  __tostring = function() return "<sql_driver>" end,
})

-- Connection methods.
local connection_methods = {}

-- Raises sysbench's error for a failed call (`rs` NULL and `con.error` set): `SQL API error`
-- without a server answer, an `errdesc` table marked RESTART_EVENT for an ignorable error
-- (or one the `sql_error_ignorable` hook accepts), else the error text. `level` points the
-- error at the script line that made the call.
local function check_error(self, rs, query, level)
  if rs ~= nil or self.error == sql_error.NONE then
    return rs
  end
  if self.sql_state == nil or self.sql_errmsg == nil then
    error("SQL API error", level)
  end
  -- A global, as in sysbench.
  errdesc = {
    connection = self,
    query = query,
    sql_errno = self.sql_errno,
    sql_state = ffi.string(self.sql_state),
    sql_errmsg = ffi.string(self.sql_errmsg),
  }
  local hook = sysbench.hooks and sysbench.hooks.sql_error_ignorable
  if self.error == sql_error.IGNORABLE or (hook ~= nil and hook(errdesc)) then
    errdesc.errcode = sysbench.error.RESTART_EVENT
    error(errdesc, level)
  end
  error(string.format("SQL error, errno = %d, state = '%s': %s",
                      self.sql_errno, errdesc.sql_state, errdesc.sql_errmsg), level)
end

-- (No tail calls to `check_error`: its level counts the caller's frame.)
function connection_methods.check_error(self, rs, query)
  check_error(self, rs, query, 3)
  return rs
end

function connection_methods.query(self, query)
  local rs = C.db_query(self, query, #query)
  check_error(self, rs, query, 3)
  return rs
end

function connection_methods.query_row(self, query)
  local rs = C.db_query(self, query, #query)
  check_error(self, rs, query, 3)
  if rs == nil or rs.nrows == 0 then
    return nil
  end
  local row = rs:fetch_row()
  if row == nil then
    return nil
  end
  return unpack(row, 1, rs.nfields)
end

function connection_methods.prepare(self, query)
  local stmt = C.db_prepare(self, query, #query)
  if stmt == nil then
    check_error(self, nil, query, 3)
    error("SQL API error", 2)
  end
  owner[stmt_key(stmt)] = self
  return stmt
end

function connection_methods.bulk_insert_init(self, query)
  return assert(C.db_bulk_insert_init(self, query, #query) == 0,
                "db_bulk_insert_init() failed")
end

function connection_methods.bulk_insert_next(self, values)
  return assert(C.db_bulk_insert_next(self, values, #values) == 0,
                "db_bulk_insert_next() failed")
end

function connection_methods.bulk_insert_done(self)
  return assert(C.db_bulk_insert_done(self) == 0, "db_bulk_insert_done() failed")
end

function connection_methods.disconnect(self)
  C.db_connection_close(self)
  return true
end

function connection_methods.reconnect(self)
  return C.db_connection_reconnect(self) == 0
end

ffi.metatype("struct sql_connection", {
  __index = connection_methods,
  __tostring = function() return "<sql_connection>" end,
})

-- Result methods.
local result_methods = {}

function result_methods.fetch_row(self)
  local row = C.db_fetch_row(self)
  if row == nil then
    return nil
  end
  local values = row.values
  local res = {}
  for i = 0, self.nfields - 1 do
    local v = values[i]
    if v.ptr ~= nil then
      res[i + 1] = ffi.string(v.ptr, v.len)
    end
  end
  return res
end

function result_methods.free(self)
  return assert(C.db_free_results(self) == 0, "db_free_results() failed")
end

ffi.metatype("sql_result", {
  __index = result_methods,
  __tostring = function() return "<sql_result>" end,
})

-- Statement parameters (`stmt:bind_create()`).
local param_methods = {}
local param_mt = {
  __index = param_methods,
  __tostring = function() return "<sql_param>" end,
}

function param_methods.set(self, value)
  if value == nil then
    self.is_null[0] = 1
    return
  end
  self.is_null[0] = 0
  local t = self.type
  if t == sql_type.BIGINT then
    self.buffer[0] = value
  elseif t == sql_type.DOUBLE then
    -- sysbench 1.0.20 writes the second slot: the bound value stays 0 (fixed in 1.1).
    self.buffer[1] = value
  elseif t == sql_type.VARCHAR then
    local len = #value
    if len > self.max_len then
      len = self.max_len
    end
    ffi.copy(self.buffer, value, len)
    self.data_len[0] = len
  else
    error("Unsupported argument type: " .. tostring(t), 2)
  end
end

function param_methods.set_rand_str(self, template)
  if self.type ~= sql_type.VARCHAR then
    error("Unsupported argument type: " .. tostring(self.type), 2)
  end
  local len = #template
  if len > self.max_len then
    len = self.max_len
    template = template:sub(1, len)
  end
  -- sb_rand_str writes #template bytes and no terminator.
  C.sb_rand_str(template, self.buffer)
  self.data_len[0] = len
  self.is_null[0] = 0
end

-- Statement methods.
local statement_methods = {}

function statement_methods.bind_create(self, btype, max_len)
  local p = setmetatable({}, param_mt)
  if btype == sql_type.TINYINT or btype == sql_type.SMALLINT
     or btype == sql_type.INT or btype == sql_type.BIGINT then
    p.type = sql_type.BIGINT
    p.buffer = ffi.new("int64_t[1]")
    p.max_len = 8
  elseif btype == sql_type.FLOAT or btype == sql_type.DOUBLE then
    p.type = sql_type.DOUBLE
    -- Two slots: `set` writes the second (see above).
    p.buffer = ffi.new("double[2]")
    p.max_len = 8
  elseif btype == sql_type.CHAR or btype == sql_type.VARCHAR then
    if type(max_len) ~= "number" or max_len < 1 then
      error("bind_create: CHAR and VARCHAR parameters need their maximum length", 2)
    end
    p.type = sql_type.VARCHAR
    p.buffer = ffi.new("char[?]", max_len)
    p.max_len = max_len
  else
    error("Unsupported argument type: " .. tostring(btype), 2)
  end
  p.data_len = ffi.new("unsigned long[1]")
  p.is_null = ffi.new("char[1]")
  return p
end

function statement_methods.bind_param(self, ...)
  local n = select("#", ...)
  if n < 1 then
    return nil
  end
  local binds = ffi.new("sql_bind[?]", n)
  local params = { ... }
  for i = 1, n do
    local p = params[i]
    local b = binds[i - 1]
    b.type = p.type
    b.buffer = p.buffer
    b.data_len = p.data_len
    b.max_len = p.max_len
    b.is_null = p.is_null
  end
  bound[stmt_key(self)] = params
  return C.db_bind_param(self, binds, n)
end

function statement_methods.execute(self)
  local rs = C.db_execute(self)
  if rs == nil then
    -- Only then is the connection read (a result set is a success).
    local con = self.connection
    if con.error ~= sql_error.NONE then
      check_error(con, rs, "<prepared statement>", 3)
    end
  end
  return rs
end

function statement_methods.close(self)
  local key = stmt_key(self)
  bound[key] = nil
  owner[key] = nil
  return C.db_close(self)
end

ffi.metatype("struct sql_statement", {
  __index = statement_methods,
  __tostring = function() return "<sql_statement>" end,
})
