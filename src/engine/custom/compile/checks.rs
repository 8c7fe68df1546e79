//! `[[workloads.NAME.checks]]`: queries run by a `check` step after a dataset's runs, each
//! with the value its first column must have (`expect`, an expression over the options) or
//! the number of rows it must return (`expect_rows`).

use std::collections::HashSet;

use super::compiler::{Compiler, Scope, index, key};
use super::generators::val_of;
use crate::engine::custom::expr::{Expr, is_identifier};
use crate::engine::custom::model::{Check, CheckExpect, Slot};
use crate::source::Seg;

const CHECK_KEYS: &[&str] = &["name", "sql", "expect", "expect_rows"];

impl Compiler<'_> {
    /// `options`: the option slots, all a check's `expect` may read.
    pub(super) fn checks(
        &mut self,
        path: &[Seg],
        v: &toml::Value,
        options: &HashSet<Slot>,
    ) -> Vec<Check> {
        let Some(items) = v.as_array() else {
            self.err(
                path,
                false,
                "`checks` must be a list of tables ([[workloads.NAME.checks]])",
                "e.g. [[workloads.orders.checks]] with name, sql and expect",
            );
            return Vec::new();
        };
        let mut out = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let cpath = index(path, i);
            let Some(t) = self.table(
                &cpath,
                item,
                "a check",
                "{ name = \"…\", sql = \"SELECT count(*) …\", expect = 0 }",
            ) else {
                continue;
            };
            self.keys(&cpath, t, CHECK_KEYS, "a check");
            let name = match t.get("name") {
                Some(v) => self
                    .string(&key(&cpath, "name"), v, "name = \"every order has lines\"")
                    .map(str::to_string),
                None => Some(format!("check {}", i + 1)),
            };
            let Some(sqlv) = t.get("sql") else {
                self.err(
                    &cpath,
                    false,
                    "a check needs `sql`",
                    "e.g. sql = \"SELECT count(*) FROM …\"",
                );
                continue;
            };
            // `:option` placeholders bind the run's option values (#31).
            let scope = Scope {
                set: options,
                place: "a check's `sql`",
                allowed: "options only (a check runs after the runs, outside any transaction)",
            };
            let bound = self.bound_sql(&key(&cpath, "sql"), sqlv, &scope);
            let expect = self.check_expect(&cpath, t, options);
            if let (Some(name), Some(bound), Some(expect)) = (name, bound, expect) {
                let sql = bound.map(|_, b| b.text.clone());
                let binds = bound
                    .iter()
                    .any(|(_, b)| b.is_some_and(|b| !b.binds.is_empty()));
                out.push(Check {
                    name,
                    sql,
                    bound: binds.then_some(bound),
                    expect,
                });
            }
        }
        out
    }

    /// What check `t` (at `cpath`) expects: `expect` or `expect_rows`.
    fn check_expect(
        &mut self,
        cpath: &[Seg],
        t: &toml::Table,
        options: &HashSet<Slot>,
    ) -> Option<CheckExpect> {
        match (t.get("expect"), t.get("expect_rows")) {
            // A string is an expression over the options, as everywhere else (#26).
            (Some(toml::Value::String(text)), None) => {
                let epath = key(cpath, "expect");
                let scope = Scope {
                    set: options,
                    place: "a check's `expect`",
                    allowed: "options only (a check runs after the runs, outside any transaction)",
                };
                let before = self.errors.len();
                let e = self.expr(&epath, text, &scope);
                let name = &self.name;
                for err in &mut self.errors[before..] {
                    if err.message.contains("not defined here") {
                        err.help = Some(if is_identifier(text.trim()) {
                            format!(
                                "`expect` is an expression over the options (\"accounts * 100\"): to expect the text {text}, quote it inside: expect = \"'{text}'\""
                            )
                        } else {
                            format!(
                                "`expect` is an expression over the options: declare what it reads in [workloads.{name}.options] or fix the spelling (text is quoted inside: expect = \"'open'\")"
                            )
                        });
                    }
                }
                e.map(CheckExpect::Value)
            }
            (Some(e), None) => match val_of(e) {
                Some(v) => Some(CheckExpect::Value(Expr::constant(&e.to_string(), v))),
                None => {
                    self.err(
                        &key(cpath, "expect"),
                        false,
                        "`expect` must be a number, a boolean or an expression (a string)",
                        "e.g. expect = 0, or expect = \"accounts * 100\"",
                    );
                    None
                }
            },
            (None, Some(r)) => self
                .integer(&key(cpath, "expect_rows"), r, 0)
                .map(|n| CheckExpect::Rows(n as u64)),
            (Some(_), Some(_)) => {
                self.err(
                    cpath,
                    false,
                    "a check has either `expect` or `expect_rows`, not both",
                    "keep one",
                );
                None
            }
            (None, None) => {
                self.err(
                    cpath,
                    false,
                    "a check needs `expect` (the first column of the first row) or `expect_rows`",
                    "e.g. expect = 0",
                );
                None
            }
        }
    }
}
