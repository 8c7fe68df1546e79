-- sysbench.histogram for tests/all/lua_compat.rs: new, update and print with fixed values, so the
-- printed layout (buckets, stars, counts) must be byte for byte the same under sysbench 1.0.20
-- and sbsuite. Written for sbsuite's tests.
--
--   sysbench tests/lua/histogram.lua run --threads=1 --events=1

local function say(fmt, ...)
  -- one write per line: a report thread printing meanwhile cannot split it
  io.write("@ " .. string.format(fmt, ...) .. "\n")
end

function event()
  local h = sysbench.histogram.new(100, 1, 1000)
  say("new type=%s", type(h))
  print("@ empty histogram prints:")
  h:print()
  print("@ end")
  for i = 1, 50 do h:update(10) end
  for i = 1, 20 do h:update(100 + i) end
  for i = 1, 5 do h:update(0.5) end      -- below min: first bucket
  for i = 1, 3 do h:update(5000) end     -- above max: last bucket
  h:update(37.5)
  print("@ histogram:")
  h:print()
  print("@ end")
  local ok = pcall(tostring, h)
  say("tostring ok=%s", tostring(ok))

  local fine = sysbench.histogram.new(10, 0.001, 100)
  for v = 1, 100 do fine:update(v / 10) end
  print("@ fine:")
  fine:print()
  print("@ end")
end
