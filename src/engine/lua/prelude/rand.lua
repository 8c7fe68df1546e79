-- sbsuite: sysbench.rand (sysbench 1.0.20's API, reference §3) over the C functions
-- src/engine/lua/rand.rs exports. Arguments and results are uint32_t, as in sysbench.

ffi = require("ffi")

ffi.cdef[[
uint64_t sb_rand_uniform_uint64(void);
uint32_t sb_rand_default(uint32_t, uint32_t);
uint32_t sb_rand_uniform(uint32_t, uint32_t);
uint32_t sb_rand_gaussian(uint32_t, uint32_t);
uint32_t sb_rand_special(uint32_t, uint32_t);
uint32_t sb_rand_pareto(uint32_t, uint32_t);
uint32_t sb_rand_unique(void);
void sb_rand_str(const char *, char *);
double sb_rand_uniform_double(void);
]]

local C = ffi.C

sysbench.rand = {}

function sysbench.rand.uniform_uint64() return C.sb_rand_uniform_uint64() end
function sysbench.rand.default(a, b) return C.sb_rand_default(a, b) end
function sysbench.rand.uniform(a, b) return C.sb_rand_uniform(a, b) end
function sysbench.rand.gaussian(a, b) return C.sb_rand_gaussian(a, b) end
function sysbench.rand.special(a, b) return C.sb_rand_special(a, b) end
function sysbench.rand.pareto(a, b) return C.sb_rand_pareto(a, b) end
function sysbench.rand.unique() return C.sb_rand_unique() end
function sysbench.rand.uniform_double() return C.sb_rand_uniform_double() end

-- The result has the template's byte length; bytes after an embedded NUL stay blank.
function sysbench.rand.string(template)
  local n = #template
  local buf = ffi.new("char[?]", n + 1)
  ffi.fill(buf, n, 32)
  C.sb_rand_str(template, buf)
  return ffi.string(buf, n)
end
