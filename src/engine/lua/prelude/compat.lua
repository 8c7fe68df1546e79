-- sbsuite: the sysbench 0.5 globals sysbench 1.0.20 still defines (reference §7); the
-- database ones (sysbench.db, db_*) come with the SQL layer.

thread_id = sysbench.tid
test = sysbench.cmdline.script_path

sb_rand = sysbench.rand.default
sb_rand_str = sysbench.rand.string
sb_rand_uniform = sysbench.rand.uniform
sb_rand_gaussian = sysbench.rand.gaussian
sb_rand_special = sysbench.rand.special

-- The low 32 bits of a raw 64-bit draw.
function sb_rnd()
  return tonumber(sysbench.rand.uniform_uint64() % 0x100000000ULL)
end

-- The next value of the shared unique sequence that falls in [a, b].
function sb_rand_uniq(a, b)
  a = a or 0
  b = b or 4294967295
  local v
  repeat
    v = sysbench.rand.unique()
  until v >= a and v <= b
  return v
end

DB_ERROR_NONE = 0
DB_ERROR_RESTART_TRANSACTION = 1
DB_ERROR_FAILED = 2

mysql_table_engine = "innodb"
myisam_max_rows = 1000000
