-- sbsuite: sysbench.histogram (reference §5) over src/engine/lua/histogram.rs.

ffi = require("ffi")

ffi.cdef[[
typedef struct histogram sb_histogram_t;
sb_histogram_t *sb_histogram_new(size_t size, double range_min, double range_max);
void sb_histogram_delete(sb_histogram_t *h);
void sb_histogram_update(sb_histogram_t *h, double value);
void sb_histogram_print(sb_histogram_t *h);
]]

local C = ffi.C

sysbench.histogram = {}

function sysbench.histogram.new(size, range_min, range_max)
  local h = C.sb_histogram_new(size, range_min, range_max)
  if h == nil then
    return nil
  end
  return ffi.gc(h, C.sb_histogram_delete)
end

ffi.metatype("struct histogram", {
  __index = {
    update = C.sb_histogram_update,
    print = C.sb_histogram_print,
  },
  -- As in sysbench, a histogram has no text form: tostring(h) raises.
  __tostring = "sb_histogram",
})
