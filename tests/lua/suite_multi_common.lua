-- The module of tests/lua/suite_multi.lua: its options and its (empty) event.

sysbench.cmdline.options = {
   rows = {"Rows per table (unused)", 10, sysbench.cmdline.ARG_INT},
}

function event()
end
