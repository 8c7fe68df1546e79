//! The Lua state of a sysbench script (issue #16), driven directly: build order, options and
//! `help`, `sysbench.rand`, histograms, report formatters, legacy globals, errors and FFI
//! counters. Where sysbench prints something, the same script runs under sysbench 1.0.20
//! (installed by CI) and the texts are compared byte for byte.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use mlua::{Lua, Table, Value};
use sbsuite::db::{RawTarget, Target};
use sbsuite::engine::lua::ctx::{self, CNT_ERROR, CNT_READ, Counters, LuaShared};
use sbsuite::engine::lua::histogram::Histogram;
use sbsuite::engine::lua::options::{help_text, values};
use sbsuite::engine::lua::script::stock_workload;
use sbsuite::engine::lua::state::{self, Role, StateSpec};
use sbsuite::engine::lua::stop::State;
use sbsuite::engine::lua::{OptVal, OptValues, Script};
use sbsuite::engine::random::{Distribution, RandOptions, Rng, UniqueSequence};
use sbsuite::value::{Options, Value as V};

fn shared(threads: usize) -> Arc<LuaShared> {
    let mut rng = Rng::for_thread(7, 99);
    Arc::new(LuaShared {
        counters: Counters::new(threads),
        default_dist: Distribution::Uniform,
        rand: RandOptions {
            rand_type: "uniform".into(),
            spec_iter: 12,
            spec_pct: 1,
            spec_res: 75,
            pareto_h: 0.2,
            zipfian_exp: 0.8,
        },
        unique: UniqueSequence::from_rng(&mut rng),
        db: None,
        limits: Default::default(),
        codes: Default::default(),
    })
}

/// Writes `source` as `dir/name` and loads it, typed as `name` (run from `dir`).
fn script(dir: &Path, name: &str, source: &str) -> Script {
    let path = dir.join(name);
    std::fs::write(&path, source).expect("write the script");
    Script::load(&path, name, None).expect("the script loads")
}

fn build(script: &Script, tid: usize, command: Option<&str>, opts: &OptValues) -> State {
    let argv = vec![
        "sysbench".to_string(),
        script.typed.clone(),
        "--threads=2".into(),
    ];
    state::new_state(&StateSpec {
        script,
        role: Role::Worker,
        tid,
        argv: &argv,
        command,
        opts,
    })
    .unwrap_or_else(|e| panic!("state of {}: {}", script.typed, e.message))
}

/// Calls global `name()` and returns its string result.
fn call_str(lua: &Lua, name: &str) -> String {
    match state::call_global(lua, name, ()) {
        Ok(Some(mut v)) => match v.pop_front() {
            Some(Value::String(s)) => s.to_string_lossy(),
            other => panic!("{name}() returned {other:?}"),
        },
        Ok(None) => panic!("{name} is not a function"),
        Err(e) => panic!("{name}() failed: {}", e.message),
    }
}

/// sysbench 1.0.20's standard output for `args`, run in `dir`, without its banner.
fn sysbench(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("sysbench")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("sysbench 1.0.20 is installed (apt-get install sysbench)");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let banner = "sysbench 1.0.20 (using system LuaJIT 2.1.0-beta3)\n\n";
    text.strip_prefix(banner)
        .unwrap_or_else(|| panic!("sysbench's output starts with its banner: {text}"))
        .to_string()
}

#[test]
fn build_order_sets_tid_and_cmdline_but_not_opt_at_top_level() {
    let dir = tempfile::tempdir().expect("tempdir");
    let _ctx = ctx::enter(3, shared(4), Rng::for_thread(1, 3));
    let s = script(
        dir.path(),
        "order.lua",
        r#"#!/usr/bin/env sysbench
top = {
  opt = sysbench.opt, tid = sysbench.tid, command = sysbench.cmdline.command,
  path = sysbench.cmdline.script_path, argv0 = sysbench.cmdline.argv[0],
  argv2 = sysbench.cmdline.argv[2], version = sysbench.version,
  version_string = sysbench.version_string, thread_id = thread_id,
  libs = type(ffi) .. type(bit) .. type(jit) .. type(unpack) .. type(newproxy),
  restart = sysbench.error.RESTART_EVENT, hooks = next(sysbench.hooks),
  path_has_pkgdata = package.path:find("/usr/share/sysbench/?.lua;", 1, true) ~= nil,
}
"#,
    );
    let mut opts = OptValues::new();
    opts.insert("threads".into(), OptVal::Number(4.0));
    let lua = build(&s, 3, Some("run"), &opts);
    let top: Table = lua.globals().get("top").expect("top");
    assert!(matches!(top.get::<Value>("opt").expect("opt"), Value::Nil));
    assert_eq!(top.get::<usize>("tid").expect("tid"), 3);
    assert_eq!(top.get::<usize>("thread_id").expect("thread_id"), 3);
    assert_eq!(top.get::<String>("command").expect("command"), "run");
    assert_eq!(top.get::<String>("path").expect("path"), "order.lua");
    assert_eq!(top.get::<String>("argv0").expect("argv0"), "sysbench");
    assert_eq!(top.get::<String>("argv2").expect("argv2"), "--threads=2");
    assert_eq!(top.get::<String>("version").expect("v"), "1.0.20");
    assert_eq!(
        top.get::<String>("version_string").expect("vs"),
        "sysbench 1.0.20"
    );
    assert_eq!(
        top.get::<String>("libs").expect("libs"),
        "tabletabletablefunctionfunction"
    );
    assert_eq!(top.get::<i64>("restart").expect("restart"), 1);
    assert!(matches!(
        top.get::<Value>("hooks").expect("hooks"),
        Value::Nil
    ));
    assert!(top.get::<bool>("path_has_pkgdata").expect("path"));
    // After the main chunk: sysbench.opt, and (no declared option) the legacy globals.
    let threads: f64 = lua
        .load("return sysbench.opt.threads + threads")
        .eval()
        .expect("exported");
    assert_eq!(threads, 8.0);
}

/// A script declaring options of every type, with and without explicit types.
const OPTS_LUA: &str = r#"
sysbench.cmdline.options = {
  ["table-size"] = {"Number of rows per table", 10000, sysbench.cmdline.ARG_INT},
  tables = {"Number of tables", 1},
  big = {"A big number", 1e15},
  flag = {"A flag", true},
  off_flag = {"Off flag", false},
  nodef = {"No default"},
  name = {"A string", "abc"},
  empty = {"Empty string", ""},
  sz = {"A size", "16K", sysbench.cmdline.ARG_SIZE},
  lst = {"A list", {"a", "b"}},
  file = {"A file", "x.txt", sysbench.cmdline.ARG_FILE},
  dbl = {"A double", 1.5, sysbench.cmdline.ARG_DOUBLE},
  str2 = {"typed string", 5, sysbench.cmdline.ARG_STRING},
  longer_option_name_here = {"long", 3, sysbench.cmdline.ARG_INT},
  bool2 = {"typed bool", "on", sysbench.cmdline.ARG_BOOL},
  bnil = {"bool nil", nil, sysbench.cmdline.ARG_BOOL},
  inil = {"int nil", nil, sysbench.cmdline.ARG_INT},
}
local keys = {"big", "bool2", "bnil", "dbl", "empty", "file", "flag", "inil", "lst",
  "longer_option_name_here", "name", "nodef", "off_flag", "str2", "sz", "table_size",
  "tables", "threads", "time", "events", "rand_type", "rand_pareto_h", "percentile",
  "report_checkpoints", "thread_stack_size", "histogram", "forced_shutdown", "num_threads",
  "db_driver", "db_ps_mode", "mysql_host", "mysql_port", "mysql_socket", "mysql_user",
  "mysql_db", "mysql_ssl", "mysql_ignore_errors", "mysql_dry_run", "pgsql_host",
  "pgsql_port", "pgsql_user", "pgsql_db"}
function dump()
  local out = {}
  for _, k in ipairs(keys) do
    local v = sysbench.opt[k]
    if type(v) == "table" then v = "{" .. table.concat(v, ",") .. "}" end
    out[#out + 1] = k .. "\t" .. type(sysbench.opt[k]) .. "\t" .. tostring(v) .. "\n"
  end
  out[#out + 1] = tostring(table_size) .. "\n"
  return table.concat(out)
end
function prepare() io.write(dump()) end
"#;

fn mysql_target() -> Target {
    let raw: RawTarget = toml::from_str(
        "driver = \"mysql\"\nhosts = [\"localhost:3306\"]\nuser = \"sbtest\"\ndatabase = \"sbtest\"\n",
    )
    .expect("a target");
    Target::from_raw(&raw).expect("valid")
}

#[test]
fn help_and_option_values_match_sysbench() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("x.txt"), "").expect("the FILE option's file");
    let _ctx = ctx::enter(0, shared(1), Rng::for_thread(1, 0));
    let s = script(dir.path(), "opts.lua", OPTS_LUA);
    assert_eq!(
        help_text(&s),
        sysbench(dir.path(), &["opts.lua", "help"]),
        "help layout"
    );

    let mut given = Options::default();
    for (k, v) in [
        ("sz", V::Int(2 << 20)),
        ("lst", V::List(vec![V::Str("x".into()), V::Str("y".into())])),
        ("flag", V::Bool(false)),
        ("table_size", V::Int(5)),
        ("threads", V::Int(3)),
        ("report_checkpoints", V::List(vec![V::Int(10), V::Int(20)])),
    ] {
        given.0.insert(k.into(), v);
    }
    let opts = values(&s, &given, &mysql_target());
    let lua = build(&s, 0, Some("prepare"), &opts);
    let ours = call_str(&lua, "dump");
    let theirs = sysbench(
        dir.path(),
        &[
            "opts.lua",
            "prepare",
            "--sz=2M",
            "--lst=x,,y",
            "--flag=off",
            "--table-size=5",
            "--threads=3",
            "--report-checkpoints=10,20",
        ],
    );
    assert_eq!(ours, theirs);
}

#[test]
fn reading_options_fails_as_sysbench_does() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (source, expected) in [
        (
            "sysbench.cmdline.options = { a = {nil, 1} }\n",
            "nil description for option a",
        ),
        (
            "sysbench.cmdline.options = { a = 5 }\n",
            "wrong table structure in sysbench.cmdline.options",
        ),
        (
            "sysbench.cmdline.options = { a = {\"x\", {\"q\"}, sysbench.cmdline.ARG_LIST} }\n",
            "wrong type for list option a",
        ),
    ] {
        let path = dir.path().join("bad.lua");
        std::fs::write(&path, source).expect("write");
        let e = Script::load(&path, "bad.lua", None).expect_err(source);
        assert!(
            e.message.starts_with(
                "`sysbench.cmdline.read_cmdline_options' function failed: [string \"sysbench.cmdline.lua\"]:"
            ) && e.message.contains(expected),
            "{}",
            e.message
        );
    }
}

#[test]
fn script_declarations_are_read() {
    let dir = tempfile::tempdir().expect("tempdir");
    let s = script(
        dir.path(),
        "cmd.lua",
        r#"
function a() end
function prepare() end
help = "not a function"
sysbench.cmdline.commands = { a = {a}, b = {a, sysbench.cmdline.PARALLEL_COMMAND}, c = {} }
assert(sysbench.cmdline.command_defined("a") and not sysbench.cmdline.command_defined("c"))
assert(sysbench.cmdline.command_parallel("b") and not sysbench.cmdline.command_parallel("a"))
assert(sysbench.cmdline.command_parallel("zz") == false)
assert(sysbench.cmdline.call_command("a") == true and sysbench.cmdline.call_command("zz") == false)
assert(sysbench.cmdline.read_cmdline_options() == true)
"#,
    );
    let names: Vec<(&str, bool)> = s
        .commands
        .iter()
        .map(|c| (c.name.as_str(), c.parallel))
        .collect();
    assert_eq!(names, [("a", false), ("b", true)]);
    assert!(s.has_prepare && !s.has_cleanup && !s.has_help);
    assert!(s.options.is_empty());
    assert_eq!(s.sname, "cmd.lua");
}

#[test]
fn rand_functions_keep_sysbench_semantics() {
    let dir = tempfile::tempdir().expect("tempdir");
    let _ctx = ctx::enter(0, shared(1), Rng::for_thread(5, 0));
    let s = script(
        dir.path(),
        "rand.lua",
        r#"
function check()
  local r = sysbench.rand
  for _ = 1, 2000 do
    local u = r.uniform(1, 10)
    assert(u >= 1 and u <= 10 and u == math.floor(u), u)
    for _, f in ipairs({r.gaussian, r.special, r.pareto, r.default}) do
      local v = f(100, 200)
      assert(v >= 100 and v <= 200, v)
    end
    assert(r.uniform(0, 4294967295) == 0)
    local w = r.uniform(-1, 3)
    assert(w == 4294967295 or w <= 3, w)
    local d = r.uniform_double()
    assert(d >= 0 and d < 1, d)
  end
  assert(tostring(r.uniform_uint64()):match("^%d+ULL$"))
  local ok, err = pcall(r.uniform, "1", 2)
  assert(not ok and err:find("cannot convert"), err)
  local s = r.string("ab#@x-##")
  assert(#s == 8 and s:match("^ab%d%lx%-%d%d$"), s)
  local z = r.string("ab#@\0x#")
  assert(#z == 7 and z:sub(5) == "   " and z:match("^ab%d%l"), z)
  local seen = {}
  for _ = 1, 20000 do
    local v = r.unique()
    assert(not seen[v], "repeat")
    seen[v] = true
  end
  for _ = 1, 100 do
    local q = sb_rand_uniq(10, 2147483647)
    assert(q >= 10 and q <= 2147483647)
    local n = sb_rnd()
    assert(n >= 0 and n < 4294967296 and n == math.floor(n))
  end
  return "ok"
end
"#,
    );
    let lua = build(&s, 0, None, &OptValues::new());
    assert_eq!(call_str(&lua, "check"), "ok");
}

#[test]
fn histogram_and_reports_print_as_sysbench() {
    let dir = tempfile::tempdir().expect("tempdir");
    let _ctx = ctx::enter(0, shared(1), Rng::for_thread(1, 0));
    let s = script(
        dir.path(),
        "rep.lua",
        r#"
local stat = {threads_running = 4, time_interval = 2, time_total = 10.6,
  latency_pct = 0.0123456, events = 1001, reads = 14000, writes = 4000, other = 2000,
  errors = 3, reconnects = 1}
-- The formatters' output, the closing "]" of the JSON array included.
function reports()
  local out, write = {}, io.write
  io.write = function(...) for _, x in ipairs({...}) do out[#out + 1] = x end end
  sysbench.report_default(stat)
  sysbench.report_csv(stat)
  sysbench.report_json(stat)
  stat.time_total = 3.2
  sysbench.report_json(stat)
  stat.time_total = 10.6
  gobj = nil
  collectgarbage()
  collectgarbage()
  io.write = write
  return table.concat(out)
end
function hist()
  local h = sysbench.histogram.new(10, 1, 1000)
  for i = 1, 100 do h:update(i * 7) end
  h:update(0.5)
  h:update(5000)
  assert(not pcall(tostring, h))
  return "ok"
end
function prepare()
  io.write(reports())
  local h = sysbench.histogram.new(10, 1, 1000)
  for i = 1, 100 do h:update(i * 7) end
  h:update(0.5)
  h:update(5000)
  h:print()
end
"#,
    );
    let mut opts = OptValues::new();
    opts.insert("percentile".into(), OptVal::Number(95.0));
    let lua = build(&s, 0, None, &opts);
    let mut ours = call_str(&lua, "reports");
    assert_eq!(call_str(&lua, "hist"), "ok");
    let mut h = Histogram::new(10, 1.0, 1000.0).expect("buckets");
    for i in 1..=100 {
        h.update(f64::from(i) * 7.0);
    }
    h.update(0.5);
    h.update(5000.0);
    ours.push_str(&h.render());
    assert_eq!(ours, sysbench(dir.path(), &["rep.lua", "prepare"]));
}

#[test]
fn legacy_globals_match_sysbench() {
    let dir = tempfile::tempdir().expect("tempdir");
    let _ctx = ctx::enter(0, shared(1), Rng::for_thread(1, 0));
    let s = script(
        dir.path(),
        "legacy.lua",
        r#"
local names = {"thread_id", "test", "sb_rand", "sb_rnd", "sb_rand_str", "sb_rand_uniform",
  "sb_rand_gaussian", "sb_rand_special", "sb_rand_uniq", "DB_ERROR_NONE",
  "DB_ERROR_RESTART_TRANSACTION", "DB_ERROR_FAILED", "mysql_table_engine", "myisam_max_rows",
  "ffi", "bit", "jit", "unpack", "newproxy", "thread_run"}
local top = {}
for _, n in ipairs(names) do
  local v = _G[n]
  top[#top + 1] = n .. "\t" .. type(v) .. "\t" ..
    ((type(v) == "string" or type(v) == "number") and tostring(v) or "") .. "\n"
end
function help() end
function dump()
  return table.concat(top) .. type(threads) .. tostring(threads) .. type(help) .. type(time) ..
    type(oltp_table_size) .. tostring(oltp_table_size) .. "\n"
end
function prepare() io.write(dump()) end
"#,
    );
    let mut given = Options::default();
    given.0.insert("threads".into(), V::Int(2));
    given.0.insert("oltp_table_size".into(), V::Int(500));
    let opts = values(&s, &given, &mysql_target());
    let lua = build(&s, 0, Some("prepare"), &opts);
    assert_eq!(
        call_str(&lua, "dump"),
        sysbench(
            dir.path(),
            &[
                "legacy.lua",
                "prepare",
                "--threads=2",
                "--oltp-table-size=500"
            ]
        )
    );
}

#[test]
fn errors_name_the_file_and_line_with_a_traceback() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fatal = |name: &str| {
        let out = sysbench(dir.path(), &[name]);
        out.strip_prefix("FATAL: ")
            .unwrap_or_else(|| panic!("sysbench fails: {out}"))
            .trim_end()
            .to_string()
    };
    std::fs::write(dir.path().join("syn.lua"), "local x = \nfunction\n").expect("write");
    let e = Script::load(&dir.path().join("syn.lua"), "syn.lua", None).expect_err("syntax");
    assert_eq!(e.message, fatal("syn.lua"));
    assert_eq!(e.message, "syn.lua:3: '(' expected near '<eof>'");

    std::fs::write(
        dir.path().join("rt.lua"),
        "local x = 1\nfunction f()\n  return nil + 1\nend\nf()\n",
    )
    .expect("write");
    let e = Script::load(&dir.path().join("rt.lua"), "rt.lua", None).expect_err("runtime");
    let (first, trace) = e.message.split_once('\n').expect("a traceback");
    assert_eq!(first, fatal("rt.lua"));
    assert_eq!(
        first,
        "rt.lua:3: attempt to perform arithmetic on a nil value"
    );
    assert!(
        trace.starts_with("stack traceback:") && trace.contains("rt.lua:5: in main chunk"),
        "{trace}"
    );

    // A shebang line (third-party scripts start with `#!/usr/bin/env sysbench`) is skipped
    // and still counts as a line.
    std::fs::write(
        dir.path().join("sh.lua"),
        "#!/usr/bin/env sysbench\nlocal x\nerror('boom')\n",
    )
    .expect("write");
    let e = Script::load(&dir.path().join("sh.lua"), "sh.lua", None).expect_err("raises");
    assert!(e.message.starts_with("sh.lua:3: boom\n"), "{}", e.message);
    assert_eq!(e.message.lines().next(), Some(fatal("sh.lua").as_str()));

    // At call time too, and a table raised outside the event loop reads "(not a string)".
    let _ctx = ctx::enter(0, shared(1), Rng::for_thread(1, 0));
    let s = script(
        dir.path(),
        "call.lua",
        "function init()\n  local t\n  t.x = 1\nend\nfunction done() error({errcode = 1}) end\n",
    );
    let lua = build(&s, 0, None, &OptValues::new());
    let e = state::call_global(&lua, "init", ()).expect_err("init fails");
    assert!(
        e.message
            .starts_with("call.lua:3: attempt to index local 't' (a nil value)\nstack traceback:"),
        "{}",
        e.message
    );
    let e = state::call_global(&lua, "done", ()).expect_err("done fails");
    assert!(e.message.starts_with("(not a string)"), "{}", e.message);
    assert!(matches!(state::call_global(&lua, "missing", ()), Ok(None)));
}

#[test]
fn ffi_counter_increments_reach_the_run_counters() {
    let dir = tempfile::tempdir().expect("tempdir");
    let sh = shared(2);
    let _ctx = ctx::enter(0, sh.clone(), Rng::for_thread(1, 0));
    let s = script(
        dir.path(),
        "ffi.lua",
        r#"
-- As third-party scripts do: the counter type is the host's enum when it has one.
if pcall(ffi.typeof, "sb_counter_type") then
  ffi.cdef[[void sb_counter_inc(int, sb_counter_type);]]
else
  ffi.cdef[[void sb_counter_inc(int, int);]]
end
ffi.cdef[[
uint64_t sb_counter_val(int, int);
uint32_t sb_rand_uniform(uint32_t, uint32_t);
typedef uint32_t useconds_t;
int usleep(useconds_t useconds);
]]
function bump()
  ffi.C.sb_counter_inc(sysbench.tid, 4)
  ffi.C.sb_counter_inc(1, 1)
  ffi.C.usleep(1)
  assert(ffi.C.sb_rand_uniform(3, 3) == 3)
  return tostring(ffi.C.sb_counter_val(sysbench.tid, 4))
end
"#,
    );
    let lua = build(&s, 0, None, &OptValues::new());
    assert_eq!(call_str(&lua, "bump"), "1ULL");
    assert_eq!(sh.counters.get(0, CNT_ERROR), 1);
    assert_eq!(sh.counters.get(1, CNT_READ), 1);
    // Without an event loop (not a worker's thread_run), the default loop ends at once.
    assert!(
        state::call_global(&lua, "thread_run", 0)
            .expect("no error")
            .is_some()
    );
}

#[test]
fn stock_scripts_are_recognised_byte_for_byte() {
    let stock = Path::new("/usr/share/sysbench");
    assert_eq!(
        stock_workload(&stock.join("oltp_read_write.lua")),
        Some("oltp_read_write")
    );
    assert_eq!(
        stock_workload(&stock.join("bulk_insert.lua")),
        Some("bulk_insert")
    );
    assert_eq!(stock_workload(&stock.join("oltp_common.lua")), None);
    let dir = tempfile::tempdir().expect("tempdir");
    let copy = dir.path().join("oltp_point_select.lua");
    std::fs::copy(stock.join("oltp_point_select.lua"), &copy).expect("copy");
    assert_eq!(stock_workload(&copy), None, "no oltp_common.lua beside it");
    let common = dir.path().join("oltp_common.lua");
    std::fs::copy(stock.join("oltp_common.lua"), &common).expect("copy");
    assert_eq!(stock_workload(&copy), Some("oltp_point_select"));
    let mut text = std::fs::read_to_string(&common).expect("read");
    text.push_str("\n-- tuned\n");
    std::fs::write(&common, text).expect("write");
    assert_eq!(stock_workload(&copy), None, "a modified oltp_common.lua");
}

#[test]
fn stock_script_options_and_help_match_sysbench() {
    let stock = Path::new("/usr/share/sysbench");
    let bulk = Script::load(
        &stock.join("bulk_insert.lua"),
        "bulk_insert.lua",
        Some("help"),
    )
    .expect("loads");
    assert!(bulk.options.is_empty() && bulk.has_prepare && !bulk.has_help);
    // oltp_common.lua reads sysbench.sql at its top level: the OLTP scripts load once the SQL
    // layer's Lua is in (helper `sql`, merged separately).
    let with_sql = !sbsuite::engine::lua::sql::SQL_LUA.is_empty();
    for name in ["oltp_read_write.lua", "oltp_point_select.lua"] {
        if !with_sql {
            break;
        }
        let path = stock.join(name);
        let typed = path.to_string_lossy();
        let s = Script::load(&path, &typed, Some("help"))
            .unwrap_or_else(|e| panic!("{name}: {}", e.message));
        assert_eq!(help_text(&s), sysbench(stock, &[&typed, "help"]), "{name}");
    }
    if !with_sql {
        return;
    }
    let s = Script::load(
        &stock.join("oltp_read_write.lua"),
        "oltp_read_write.lua",
        Some("run"),
    )
    .expect("loads");
    let commands: Vec<(&str, bool)> = s
        .commands
        .iter()
        .map(|c| (c.name.as_str(), c.parallel))
        .collect();
    assert_eq!(commands, [("prepare", true), ("prewarm", true)]);
    assert!(s.has_cleanup && !s.has_help);
}
