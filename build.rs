//! Links every executable with `-rdynamic`, so that the C functions sysbench Lua scripts declare
//! with `ffi.cdef` and call through `ffi.C` (`sb_counter_inc`, `sb_rand_uniform`, `db_query`…,
//! exported by `src/engine/lua`) are in the dynamic symbol table where LuaJIT looks them up.

fn main() {
    println!("cargo:rustc-link-arg=-rdynamic");
    println!("cargo:rerun-if-changed=build.rs");
}
