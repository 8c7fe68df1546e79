-- A script in two files, as sysbench-tpcc is (tpcc.lua requires tpcc_common.lua from the
-- working directory): tests/all/lua_suite.rs checks that a run records the module's hash and that
-- a resume after the module changed is refused (#16).

if sysbench.cmdline.command == nil then
   error("Command is required. Supported commands: run, help")
end

require("suite_multi_common")
