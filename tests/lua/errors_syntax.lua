-- A syntax error on line 6, for tests/all/lua_compat.rs: loading must fail naming this file and
-- the line, under sysbench 1.0.20 and sbsuite alike. Written for sbsuite's tests.

function event()
  local x = 1
  if x then = 2 end
end
