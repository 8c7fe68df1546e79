-- sbsuite: sysbench.cmdline (reference §1.3, §2.2): option types, custom commands and the
-- reading of sysbench.cmdline.options. The chunk returns the option reader, which the host
-- keeps out of the scripts' sight to learn what a script declares.

ffi = require("ffi")

ffi.cdef[[
typedef enum {
  SB_ARG_TYPE_NULL,
  SB_ARG_TYPE_BOOL,
  SB_ARG_TYPE_INT,
  SB_ARG_TYPE_SIZE,
  SB_ARG_TYPE_DOUBLE,
  SB_ARG_TYPE_STRING,
  SB_ARG_TYPE_LIST,
  SB_ARG_TYPE_FILE,
  SB_ARG_TYPE_MAX
} sb_arg_type_t;

typedef struct {
  const char *name;
  const char *desc;
  const char *value;
  sb_arg_type_t type;
  bool (*validate)(const char *, const char *);
} sb_arg_t;

int sb_lua_set_test_args(sb_arg_t *args, size_t len);
void sb_print_test_options(void);
]]

local cmdline = sysbench.cmdline

cmdline.ARG_NULL = 0
cmdline.ARG_BOOL = 1
cmdline.ARG_INT = 2
cmdline.ARG_SIZE = 3
cmdline.ARG_DOUBLE = 4
cmdline.ARG_STRING = 5
cmdline.ARG_LIST = 6
cmdline.ARG_FILE = 7
cmdline.ARG_MAX = 8

cmdline.PARALLEL_COMMAND = true

function cmdline.command_defined(name)
  local commands = cmdline.commands
  return type(commands) == "table" and commands[name] ~= nil and commands[name][1] ~= nil
end

function cmdline.command_parallel(name)
  return cmdline.command_defined(name) and
    cmdline.commands[name][2] == cmdline.PARALLEL_COMMAND
end

-- Runs a custom command; false when it is not defined or returned false, else true.
function cmdline.call_command(name)
  if not cmdline.command_defined(name) then
    return false
  end
  return cmdline.commands[name][1]() ~= false
end

-- The declared options, sorted by name: {name, desc, type, default text or nil}. A default's
-- text is on/off, tostring(n), the string, or a list joined by ",". Without a type, the
-- default decides: boolean -> BOOL, number -> DOUBLE, table -> LIST, else STRING.
local function declared()
  local options = cmdline.options
  local out = {}
  if options == nil then
    return out
  end
  if type(options) ~= "table" then
    error("wrong table structure in sysbench.cmdline.options")
  end
  for name, def in pairs(options) do
    if type(name) ~= "string" or type(def) ~= "table" then
      error("wrong table structure in sysbench.cmdline.options")
    end
    local desc, default, kind = def[1], def[2], def[3]
    if desc == nil then
      error("nil description for option " .. name)
    end
    local text
    if type(default) == "table" then
      if kind ~= nil then
        error("wrong type for list option " .. name)
      end
      kind = cmdline.ARG_LIST
      local items = {}
      for i, v in ipairs(default) do
        items[i] = tostring(v)
      end
      text = table.concat(items, ",")
    elseif type(default) == "boolean" then
      kind = kind or cmdline.ARG_BOOL
      text = default and "on" or "off"
    elseif type(default) == "number" then
      kind = kind or cmdline.ARG_DOUBLE
      text = tostring(default)
    elseif default ~= nil then
      kind = kind or cmdline.ARG_STRING
      text = tostring(default)
    else
      kind = kind or cmdline.ARG_STRING
    end
    out[#out + 1] = { name = name, desc = tostring(desc), type = kind, default = text }
  end
  table.sort(out, function(a, b) return a.name < b.name end)
  return out
end

function cmdline.read_cmdline_options()
  declared()
  return true
end

function cmdline.print_test_options()
  ffi.C.sb_print_test_options()
end

return declared
