//! Matrix expansion (cells) and plan building (steps).
//!
//! Pure functions of a validated [`Suite`], unit- and property-tested on their own.
//!
//! Linear in the number of cells: a suite sweeping threads 1..10000 over a few workloads has
//! 100,000 cells, so every "is there an earlier equal one?" question (a repeated run, the
//! dataset a run joins, an `include` cell already there) is answered through [`Seen`], a hash
//! index whose hash agrees with the values' `==`, never by comparing against every earlier
//! entry. Equality itself stays the one the plan always used (`==` of [`Value`]s and maps), so
//! the plan is the same step for step.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};

use indexmap::IndexMap;

use super::{Plan, Step, StepKind};
use crate::engine::Catalog;
use crate::engine::option::Kind;
use crate::engine::phases::Phase;
use crate::engine::spec::WorkloadSpec;
use crate::source::{ConfigError, ConfigErrors, Seg};
use crate::suite::raw::{DatasetSource, VariantOrder};
use crate::suite::{Matrix, Suite};
use crate::value::{Options, Value};

/// One matrix cell: a value for each axis (include cells may name fewer).
pub type Cell = IndexMap<String, Value>;

/// Expands a matrix into its cells: the cross product in axis order (the first axis is the
/// outermost loop; zipped axes advance together at the position of their first member), minus
/// `exclude` matches, plus `include` cells that are not already there.
pub fn cells(m: &Matrix) -> Vec<Cell> {
    // Each group is one loop: a lone axis, or a zip of axes with equal lengths.
    let mut groups: Vec<Vec<&crate::suite::Axis>> = Vec::new();
    for axis in &m.axes {
        match m.zip.iter().find(|z| z.contains(&axis.name)) {
            Some(z) if z[0] != axis.name && m.axes.iter().any(|a| a.name == z[0]) => {}
            Some(z) => groups.push(
                z.iter()
                    .filter_map(|n| m.axes.iter().find(|a| &a.name == n))
                    .collect(),
            ),
            None => groups.push(vec![axis]),
        }
    }
    let mut out: Vec<Cell> = vec![Cell::new()];
    for group in &groups {
        let len = group.iter().map(|a| a.values.len()).min().unwrap_or(0);
        let mut next = Vec::with_capacity(out.len() * len);
        for cell in &out {
            for i in 0..len {
                let mut c = cell.clone();
                for axis in group {
                    c.insert(axis.name.clone(), axis.values[i].clone());
                }
                next.push(c);
            }
        }
        out = next;
    }
    // Keep the axis order in every cell whatever the zip grouping did.
    for cell in &mut out {
        cell.sort_by_cached_key(|k, _| m.axes.iter().position(|a| &a.name == k));
    }
    out.retain(|cell| !m.exclude.iter().any(|ex| matches(cell, ex)));
    if !m.include.is_empty() {
        let mut seen = Seen::default();
        for (i, c) in out.iter().enumerate() {
            seen.insert(hash_map(c), i);
        }
        for inc in &m.include {
            let hash = hash_map(inc);
            if seen.find(hash, |i| &out[i] == inc).is_none() {
                seen.insert(hash, out.len());
                out.push(inc.clone());
            }
        }
    }
    out
}

/// An exclude entry matches when every key equals the cell's value (a list: any of its items).
fn matches(cell: &Cell, entry: &Cell) -> bool {
    entry.iter().all(|(k, want)| match (cell.get(k), want) {
        (Some(have), Value::List(any)) => any.contains(have),
        (Some(have), want) => same(have, want),
        (None, _) => false,
    })
}

/// Numbers compare as numbers (`64` equals `64.0`).
fn same(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

/// Positions of earlier entries by a hash that agrees with their `==` (equal entries hash
/// alike): finding an earlier equal entry compares only against those with the same hash.
#[derive(Default)]
struct Seen(HashMap<u64, Vec<usize>>);

impl Seen {
    /// The first position (in insertion order) with `hash` that `equal` accepts.
    fn find(&self, hash: u64, equal: impl Fn(usize) -> bool) -> Option<usize> {
        self.0.get(&hash)?.iter().copied().find(|&i| equal(i))
    }

    fn insert(&mut self, hash: u64, position: usize) {
        self.0.entry(hash).or_default().push(position);
    }
}

/// Feeds `v` to `h` so that values equal by `==` hash alike (`Int(1)` and `Float(1.0)` are not
/// equal and need not; `0.0 == -0.0` must, and NaN equals nothing, so any hash does).
fn hash_value(v: &Value, h: &mut impl Hasher) {
    match v {
        Value::Bool(b) => (0u8, b).hash(h),
        Value::Int(i) => (1u8, i).hash(h),
        Value::Float(f) => (2u8, if *f == 0.0 { 0 } else { f.to_bits() }).hash(h),
        Value::Str(s) => (3u8, s).hash(h),
        Value::List(items) => {
            (4u8, items.len()).hash(h);
            for item in items {
                hash_value(item, h);
            }
        }
    }
}

/// A hash of a map that agrees with its `==`, which ignores the order of the entries (an
/// [`IndexMap`] compares as a map): the entries' hashes are summed.
fn hash_map(m: &IndexMap<String, Value>) -> u64 {
    m.iter().fold(m.len() as u64, |sum, (k, v)| {
        let mut h = DefaultHasher::new();
        k.hash(&mut h);
        hash_value(v, &mut h);
        sum.wrapping_add(h.finish())
    })
}

/// A run before numbering: its cell, workload and resolved options.
struct Run {
    cell: Cell,
    spec: &'static WorkloadSpec,
    options: Options,
    /// Its worker groups (`[[groups]]`, #31), resolved.
    groups: Vec<super::StepGroup>,
}

/// Builds the ordered plan: variant → dataset → prepare → runs (sweep × repeat) → check →
/// cleanup, or with interleaved variants dataset → prepare → runs (sweep × repeat × variants)
/// → check → cleanup (the check only when a run asks for it).
pub fn build(suite: &Suite) -> Result<Plan, ConfigErrors> {
    let mut errors = Vec::new();
    let mut runs: Vec<Run> = Vec::new();
    let mut seen_runs = Seen::default();
    let mut defaults = SpecDefaults::default();
    // The custom workloads' option values already checked (`custom_errors`), by workload.
    let mut custom_checked: std::collections::HashSet<(&str, String)> = Default::default();
    for mut cell in cells(&suite.matrix) {
        let resolved = resolve(suite, &cell, &mut defaults).and_then(|(spec, options)| {
            let (groups, options) = step_groups(suite, &cell, spec, options, &mut defaults)?;
            Ok((spec, options, groups))
        });
        match resolved {
            Ok((spec, mut options, groups)) => {
                for e in phase_weight_errors(suite, spec) {
                    if !errors.contains(&e) {
                        errors.push(e);
                    }
                }
                if let Some(def) = crate::engine::custom::def(spec) {
                    let values: Vec<String> = std::iter::once("check")
                        .chain(def.options.iter().map(|o| o.name.as_str()))
                        .map(|o| format!("{:?}", options.get(o)))
                        .collect();
                    if custom_checked.insert((spec.name, values.join("\u{1f}"))) {
                        for e in custom_errors(suite, &cell, def, &options) {
                            if !errors.contains(&e) {
                                errors.push(e);
                            }
                        }
                    }
                }
                // An axis that does not apply to this workload (memory_oper for cpu) must not
                // multiply its runs: drop it from the cell, and the cell if it is then a repeat.
                // `clients` (how many of `[clients]` run the step) is an axis of every run.
                cell.retain(|k, _| {
                    k == "workload" || k == "clients" || k == "groups" || spec.option(k).is_some()
                });
                let clients = cell.get("clients").cloned();
                let mut h = DefaultHasher::new();
                (spec.name, hash_map(&options.0)).hash(&mut h);
                clients.as_ref().map(|c| c.to_string()).hash(&mut h);
                let hash = h.finish();
                let equal = |i: usize| {
                    runs[i].spec.name == spec.name
                        && runs[i].options == options
                        && runs[i].cell.get("clients") == clients.as_ref()
                };
                if seen_runs.find(hash, equal).is_none() {
                    seen_runs.insert(hash, runs.len());
                    // Held until its last step is built: no growth slack.
                    options.0.shrink_to_fit();
                    runs.push(Run {
                        cell,
                        spec,
                        options,
                        groups,
                    });
                }
            }
            Err(e) => {
                if !errors.contains(&e) {
                    errors.push(e);
                }
            }
        }
    }
    if !errors.is_empty() {
        return Err(ConfigErrors(errors));
    }
    if runs.is_empty() {
        return Err(suite
            .error(
                &[Seg::key("matrix")],
                "the matrix has no cells: `exclude` removed every combination",
            )
            .with_help("loosen `exclude` or add `include` cells")
            .into());
    }

    // Without [target], database workloads use a SQLite file in the working directory.
    let target = match suite.target.as_ref().map(crate::db::Target::from_raw) {
        None => Some(crate::db::Target::sqlite_default()),
        Some(Ok(t)) => Some(t),
        Some(Err(e)) => {
            // The messages start with `[target] <key>` (or `[target] hosts[1].port`): point
            // at that key's value.
            let text = e.to_string();
            let mut path = vec![Seg::key("target")];
            if let Some(key) = text
                .strip_prefix("[target] ")
                .and_then(|r| r.split([' ', ':']).next())
                .filter(|k| !k.is_empty())
            {
                path.extend(target_key_path(key));
            }
            return Err(suite.error(&path, text).into());
        }
    };

    // Group runs by dataset, keeping first-appearance order.
    let mut datasets: Vec<(Option<Vec<Value>>, Vec<usize>)> = Vec::new();
    // The datasets other runs may join, by key.
    let mut joinable = Seen::default();
    for (i, run) in runs.iter().enumerate() {
        let key = dataset_key(run);
        let fresh = run.spec.data.fresh_per_run && key.is_some();
        let mut h = DefaultHasher::new();
        if let Some(values) = &key {
            values.len().hash(&mut h);
            for v in values {
                hash_value(v, &mut h);
            }
        }
        let hash = h.finish();
        // A fresh-per-run dataset is prepared by its own workload (oltp_insert with
        // auto_inc off prepares empty tables), so other runs never join one.
        let found = if fresh {
            None
        } else {
            joinable.find(hash, |d| datasets[d].0 == key)
        };
        match found {
            Some(d) => datasets[d].1.push(i),
            None => {
                if !run.spec.data.fresh_per_run {
                    joinable.insert(hash, datasets.len());
                }
                datasets.push((key, vec![i]));
            }
        }
    }

    let axes: Vec<String> = suite.matrix.axes.iter().map(|a| a.name.clone()).collect();
    let variants: Vec<String> = if suite.variants.is_empty() {
        vec!["default".to_string()]
    } else {
        suite.variants.iter().map(|v| v.name.clone()).collect()
    };
    let template = suite
        .step_name
        .clone()
        .unwrap_or_else(|| default_step_name(&suite.catalog, &axes, suite.repeat));
    let mut env = minijinja::Environment::new();
    env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
    // `{{ file_block_size | size }}` writes 16384 as 16K.
    env.add_filter("size", |v: minijinja::Value| match v.as_i64() {
        Some(bytes) if bytes >= 0 => crate::value::format_size(bytes as u64),
        _ => v.to_string(),
    });
    let name_error = |e: minijinja::Error| {
        ConfigErrors::from(
            suite
                .error(&[Seg::key("suite"), Seg::key("step_name")], format!("cannot render step_name: {e}"))
                .with_help("use option names, `variant` and `repetition`, e.g. \"{{ workload }}-t{{ threads }}\""),
        )
    };
    env.add_template("step", &template).map_err(name_error)?;
    let tmpl = env.get_template("step").map_err(name_error)?;

    // Every pass of a dataset (one prepare, its runs, one cleanup), each run as (run,
    // repetition, variant) in execution order.
    let passes = passes(suite, &runs, &datasets, variants.len());
    // How many steps still use each run's options: the last one takes them instead of
    // copying, so a plan of 100,000 steps holds one copy, not two.
    let mut uses = vec![suite.repeat as usize * variants.len(); runs.len()];

    let mut steps: Vec<Step> = Vec::new();
    let mut dataset_id = 0;
    for (d, pass) in passes {
        let (key, members) = &datasets[d];
        let has_data = key.is_some();
        if has_data {
            dataset_id += 1;
        }
        let ds = if has_data { dataset_id } else { 0 };
        let first = &runs[members[0]];
        // The prepare runs under the first run's variant and the cleanup under the last
        // one's: no switch of settings just for them.
        let data_step = |kind: StepKind, v: usize| Step {
            index: 0,
            kind,
            name: data_step_name(first, &axes),
            variant: variants[v].clone(),
            workload: first.spec.name.to_string(),
            spec: Some(first.spec),
            dataset: ds,
            repetition: 0,
            params: first.cell.clone(),
            options: first.options.clone(),
            command: None,
            estimated_seconds: None,
            phases: Vec::new(),
            groups: Vec::new(),
            target: first.spec.needs_target.then(|| target.clone()).flatten(),
        };
        // Both made before the runs, which may move their options (see `uses`). Data that is
        // already there (`dataset = "existing"`) is neither prepared nor cleaned up.
        let prepares = has_data && suite.dataset == DatasetSource::Prepare;
        let (prepare, cleanup) = match (prepares, pass.first(), pass.last()) {
            (true, Some(f), Some(l)) => (
                Some(data_step(StepKind::Prepare, f.2)),
                Some(data_step(StepKind::Cleanup, l.2)),
            ),
            _ => (None, None),
        };
        // The datasets of the runs' worker groups (#31) other than this one: each prepared
        // once after it, cleaned up before its cleanup.
        let group_data: Vec<(&super::StepGroup, usize, usize)> = match (pass.first(), pass.last()) {
            (Some(f), Some(l)) if prepares => {
                let mut seen: Vec<Vec<Value>> = key.iter().cloned().collect();
                let mut out = Vec::new();
                for (m, _, _) in &pass {
                    for g in &runs[*m].groups {
                        if let Some(k) = g.spec.and_then(|s| data_key(s, &g.options))
                            && !seen.contains(&k)
                        {
                            seen.push(k);
                            out.push((g, f.2, l.2));
                        }
                    }
                }
                out
            }
            _ => Vec::new(),
        };
        let group_step = |g: &super::StepGroup, kind: StepKind, v: usize| Step {
            name: g
                .spec
                .and_then(|s| s.data.family)
                .unwrap_or(&g.workload)
                .to_string(),
            workload: g.workload.clone(),
            spec: g.spec,
            options: g.options.clone(),
            ..data_step(kind, v)
        };
        let group_prepares: Vec<Step> = group_data
            .iter()
            .map(|&(g, f, _)| group_step(g, StepKind::Prepare, f))
            .collect();
        let group_cleanups: Vec<Step> = group_data
            .iter()
            .rev()
            .map(|&(g, _, l)| group_step(g, StepKind::Cleanup, l))
            .collect();
        steps.extend(prepare);
        steps.extend(group_prepares);
        let commands = Commands {
            suite,
            axes: &axes,
            variants: &variants,
            target: &target,
            dataset: ds,
        };
        steps.extend(commands.steps(&runs, &pass, false));
        let after_runs = commands.steps(&runs, &pass, true);
        // The check step: after the runs, before the cleanup, when a run of the pass asks for
        // it (`check = true`, an option of every custom workload), with the last such run's
        // options and variant.
        let check = if has_data {
            pass.iter()
                .rev()
                .find(|(m, _, _)| runs[*m].options.get("check") == Some(&Value::Bool(true)))
                .map(|&(m, _, v)| Step {
                    index: 0,
                    kind: StepKind::Check,
                    name: data_step_name(&runs[m], &axes),
                    variant: variants[v].clone(),
                    workload: runs[m].spec.name.to_string(),
                    spec: Some(runs[m].spec),
                    dataset: ds,
                    repetition: 0,
                    params: runs[m].cell.clone(),
                    options: runs[m].options.clone(),
                    command: None,
                    estimated_seconds: None,
                    phases: Vec::new(),
                    groups: Vec::new(),
                    target: runs[m].spec.needs_target.then(|| target.clone()).flatten(),
                })
        } else {
            None
        };
        for (m, rep, v) in pass {
            let variant = &variants[v];
            let run = &runs[m];
            let mut params = run.cell.clone();
            for a in &axes {
                if !params.contains_key(a) {
                    // Empty for an axis that does not apply to the workload.
                    let v = run
                        .options
                        .get(a)
                        .cloned()
                        .unwrap_or(Value::Str(String::new()));
                    params.insert(a.clone(), v);
                }
            }
            params.sort_by_cached_key(|k, _| axes.iter().position(|a| a == k));
            let vars = NameVars {
                params: &params,
                options: &run.options,
                step: [
                    ("workload", Value::Str(run.spec.name.into())),
                    ("variant", Value::Str(variant.clone())),
                    ("repetition", Value::Int(rep as i64)),
                    ("dataset", Value::Int(ds as i64)),
                ],
            };
            let name = tmpl
                .render(minijinja::Value::from(minijinja::value::Serde(&vars)))
                .map_err(name_error)?;
            let workload = run.spec.name.to_string();
            let spec = Some(run.spec);
            let timeline = phases(&suite.phases, &run.options);
            let groups = run.groups.clone();
            let estimated_seconds = if timeline.is_empty() {
                estimate(&run.options)
            } else {
                Some(timeline.iter().map(|p| p.duration.as_secs_f64()).sum())
            };
            let step_target = run.spec.needs_target.then(|| target.clone()).flatten();
            uses[m] -= 1;
            let options = if uses[m] == 0 {
                std::mem::take(&mut runs[m].options)
            } else {
                run.options.clone()
            };
            steps.push(Step {
                index: 0,
                kind: StepKind::Run,
                name,
                variant: variant.clone(),
                workload,
                spec,
                dataset: ds,
                repetition: rep,
                params,
                options,
                command: None,
                estimated_seconds,
                phases: timeline,
                groups,
                target: step_target,
            });
        }
        steps.extend(after_runs);
        steps.extend(check);
        steps.extend(group_cleanups);
        steps.extend(cleanup);
    }
    for (i, s) in steps.iter_mut().enumerate() {
        s.index = i + 1;
    }
    let target = steps
        .iter()
        .find_map(|s| s.target.as_ref())
        .map(|t| t.driver.dialect().describe(t, suite.target.is_none()));
    Ok(Plan {
        suite: suite.name.clone(),
        axes,
        steps,
        target,
        variant_order: suite.variant_order,
        order_seed: (suite.variant_order == VariantOrder::Randomized).then_some(suite.order_seed),
        dataset: suite.dataset,
    })
}

/// What the command steps of one pass share: the suite (its scripts), the plan's axes and
/// variants, the target, the dataset.
struct Commands<'a> {
    suite: &'a Suite,
    axes: &'a [String],
    variants: &'a [String],
    target: &'a Option<crate::db::Target>,
    dataset: usize,
}

impl Commands<'_> {
    /// The command steps of the sysbench Lua scripts among a pass's runs: each script's
    /// `before_runs` (with its first run's options and variant) or `after_runs` (its last
    /// run's), the scripts in the order they first run.
    fn steps(&self, runs: &[Run], pass: &[(usize, u32, usize)], after: bool) -> Vec<Step> {
        let mut scripts: Vec<&str> = Vec::new();
        for &(m, _, _) in pass {
            let name = runs[m].spec.name;
            if self.suite.scripts.get(name).is_some() && !scripts.contains(&name) {
                scripts.push(name);
            }
        }
        let mut out = Vec::new();
        for name in scripts {
            let Some(u) = self.suite.scripts.get(name) else {
                continue;
            };
            let commands = if after { &u.after_runs } else { &u.before_runs };
            let mut of_script = pass.iter().filter(|(m, _, _)| runs[*m].spec.name == name);
            let found = if after {
                of_script.next_back()
            } else {
                of_script.next()
            };
            let Some(&(m, _, v)) = found else {
                continue;
            };
            for command in commands {
                out.push(Step {
                    index: 0,
                    kind: StepKind::Command,
                    name: format!("{command} {}", data_step_name(&runs[m], self.axes)),
                    variant: self.variants[v].clone(),
                    workload: name.to_string(),
                    spec: Some(runs[m].spec),
                    dataset: self.dataset,
                    repetition: 0,
                    params: runs[m].cell.clone(),
                    options: runs[m].options.clone(),
                    command: Some(command.clone()),
                    estimated_seconds: None,
                    phases: Vec::new(),
                    groups: Vec::new(),
                    target: runs[m]
                        .spec
                        .needs_target
                        .then(|| self.target.clone())
                        .flatten(),
                });
            }
        }
        out
    }
}

/// A pass over a dataset: the dataset's index, and its runs as (run, repetition, variant).
type Pass = (usize, Vec<(usize, u32, usize)>);

/// The passes of the plan in execution order.
///
/// `blocked`: variant → dataset → pass, a pass holding the whole sweep once per repetition
/// (a fresh-per-run workload: one pass per run and repetition). `interleaved` and
/// `randomized`: dataset → pass, every variant inside the pass, as one block per matrix point
/// and repetition ([`VariantBlocks`]); a fresh-per-run workload gets one pass per block member,
/// in the block's order. Variants never shape data (they hold server settings only), so one
/// prepare serves them all.
fn passes(
    suite: &Suite,
    runs: &[Run],
    datasets: &[(Option<Vec<Value>>, Vec<usize>)],
    variants: usize,
) -> Vec<Pass> {
    let mut out: Vec<Pass> = Vec::new();
    let mut blocks = VariantBlocks::new(suite.variant_order, suite.order_seed, variants);
    let fresh = |d: usize| {
        let (key, members) = &datasets[d];
        key.is_some() && runs[members[0]].spec.data.fresh_per_run
    };
    if suite.variant_order == VariantOrder::Blocked {
        for v in 0..variants {
            for (d, (_, members)) in datasets.iter().enumerate() {
                let all = (1..=suite.repeat).flat_map(|r| members.iter().map(move |&m| (m, r, v)));
                if fresh(d) {
                    out.extend(all.map(|run| (d, vec![run])));
                } else {
                    out.push((d, all.collect()));
                }
            }
        }
        return out;
    }
    for (d, (_, members)) in datasets.iter().enumerate() {
        let mut pass = Vec::new();
        for r in 1..=suite.repeat {
            for (point, &m) in members.iter().enumerate() {
                for v in blocks.next(point, r) {
                    if fresh(d) {
                        out.push((d, vec![(m, r, v)]));
                    } else {
                        pass.push((m, r, v));
                    }
                }
            }
        }
        if !pass.is_empty() {
            out.push((d, pass));
        }
    }
    out
}

/// The order of the variants inside each block (one matrix point, one repetition) of an
/// interleaved or randomized plan.
///
/// `interleaved` alternates forward and reversed order (A B, B A, A B, ...) with the
/// repetition, so each point sees every variant first as often as the others (a linear drift
/// cancels out of the pairs' mean); it also alternates with the point, so neighbouring blocks
/// meet on the same variant (A B | B A) and half the switches of settings are saved.
/// `randomized` shuffles each block (Fisher-Yates) with a generator seeded by `order_seed`,
/// drawn in plan order, so the same seed and suite give the same plan.
struct VariantBlocks {
    order: VariantOrder,
    variants: usize,
    rng: crate::engine::random::Rng,
}

impl VariantBlocks {
    fn new(order: VariantOrder, seed: u64, variants: usize) -> VariantBlocks {
        VariantBlocks {
            order,
            variants,
            // The top bit keeps the seed non-zero: the generator reads 0 as "from the clock".
            rng: crate::engine::random::Rng::for_thread(seed | 1 << 63, 0),
        }
    }

    /// The variants of the block of the `point`-th run of a dataset (0-based) in repetition
    /// `rep` (1-based), in the order they run.
    fn next(&mut self, point: usize, rep: u32) -> Vec<usize> {
        let mut block: Vec<usize> = (0..self.variants).collect();
        match self.order {
            VariantOrder::Blocked => {}
            VariantOrder::Interleaved => {
                if (point + rep as usize - 1) % 2 == 1 {
                    block.reverse();
                }
            }
            VariantOrder::Randomized => {
                for i in (1..block.len()).rev() {
                    let j = (self.rng.next_u64() % (i as u64 + 1)) as usize;
                    block.swap(i, j);
                }
            }
        }
        block
    }
}

/// Each workload's spec defaults, made once per plan instead of once per cell: making a
/// default parses its text, which was most of the time of planning a big matrix.
#[derive(Default)]
struct SpecDefaults(HashMap<&'static str, Options>);

impl SpecDefaults {
    fn of(&mut self, spec: &'static WorkloadSpec) -> &Options {
        self.0
            .entry(spec.name)
            .or_insert_with(|| spec.resolve_options(|_| None))
    }
}

/// The workload and every option of a cell, resolved: spec default < [defaults] < cell.
fn resolve(
    suite: &Suite,
    cell: &Cell,
    defaults: &mut SpecDefaults,
) -> Result<(&'static WorkloadSpec, Options), ConfigError> {
    let (workload, path) = match (cell.get("workload"), suite.defaults.get("workload")) {
        (Some(w), _) => (w, vec![Seg::key("matrix"), Seg::key("workload")]),
        (None, Some(w)) => (w, vec![Seg::key("defaults"), Seg::key("workload")]),
        (None, None) => {
            return Err(suite
                .error(&[Seg::key("defaults")], "no workload: every step needs one")
                .with_help("set `workload = \"cpu\"` in [defaults], or an axis `workload = [...]` in [matrix]"));
        }
    };
    let name = workload.as_str().unwrap_or_default();
    let spec = suite
        .catalog
        .workload(name)
        .ok_or_else(|| suite.error(&path, format!("unknown workload `{name}`")))?;
    let defaults = defaults.of(spec);
    let options = spec.resolve_options(|name| {
        (cell.get(name).or_else(|| suite.defaults.get(name)))
            .or_else(|| defaults.get(name))
            .cloned()
    });
    let mut options = options;
    if !cell.contains_key("forced_shutdown")
        && !suite.defaults.contains_key("forced_shutdown")
        && let Some(delay) = suite_forced_shutdown(options.uint("time"))
        && let Some(v) = options.0.get_mut("forced_shutdown")
    {
        *v = Value::Str(delay.to_string());
    }
    if options.int("time") == 0 && options.int("events") == 0 && !(spec.ends_by_itself)(&options) {
        let which = if cell.contains_key("time") {
            "matrix"
        } else {
            "defaults"
        };
        return Err(suite
            .error(
                &[Seg::key(which), Seg::key("time")],
                format!("`{name}` with time = 0 and events = 0 would never end"),
            )
            .with_help("set `time` (seconds) or `events` (a count) above 0"));
    }
    Ok((spec, options))
}

/// What a run of custom workload `def` with `options` cannot do, found before anything runs:
/// `check = true` on a workload with nothing to check (its checks would silently not run),
/// and what its expressions over options fail with for these values (#26).
fn custom_errors(
    suite: &Suite,
    cell: &Cell,
    def: &crate::engine::custom::model::Def,
    options: &Options,
) -> Vec<ConfigError> {
    let mut errors = suite.check_custom_run(def, options);
    if options.get("check") == Some(&Value::Bool(true)) {
        let name = &def.name;
        let why = if def.schema.is_empty() && def.load.is_empty() {
            Some((
                format!(
                    "check = true, but workload `{name}` has no `schema` or `load`: the check step follows the runs of a dataset, and `{name}` prepares none, so its checks would never run"
                ),
                format!(
                    "remove check = true for `{name}`, or give it the `schema`/`load` its checks read"
                ),
            ))
        } else if def.checks.is_empty() {
            Some((
                format!(
                    "check = true, but workload `{name}` declares no checks: the check step would check nothing"
                ),
                format!(
                    "add [[workloads.{name}.checks]] with name, sql and expect, or remove check = true for `{name}`"
                ),
            ))
        } else {
            None
        };
        if let Some((message, help)) = why {
            let table = if cell.contains_key("check") {
                "matrix"
            } else {
                "defaults"
            };
            errors.push(
                suite
                    .error(&[Seg::key(table), Seg::key("check")], message)
                    .with_help(help),
            );
        }
    }
    errors
}

/// The smallest `forced_shutdown` a suite run gets by default, in seconds.
pub const SUITE_FORCED_SHUTDOWN_FLOOR: u64 = 10;

/// The share of `time` a suite run's default `forced_shutdown` waits, in percent.
pub const SUITE_FORCED_SHUTDOWN_PCT: u64 = 5;

/// The `forced_shutdown` of a suite run whose suite does not set it: 5 % of `time` (sysbench's
/// own value for `--forced-shutdown` without a number), at least 10 s, in whole seconds;
/// `None` without a time limit (nothing to force).
///
/// Why a suite differs from `sbsuite sysbench` (which keeps sysbench's `off`): a suite runs
/// unattended for hours, and one worker stuck on a server that stopped answering would hold
/// the whole night's suite at that step; forced, the step ends as `interrupted` with the
/// reason in its row and the suite goes on per `on_error`. 5 % bounds what a stuck step costs
/// relative to the step; the floor keeps a short step (10 s: 0.5 s) from cutting a slow but
/// healthy last transaction of a loaded server. The value is resolved here, in the plan, so the
/// stored plan and every row's options say what applied.
pub fn suite_forced_shutdown(time_s: u64) -> Option<u64> {
    (time_s > 0).then(|| {
        time_s
            .saturating_mul(SUITE_FORCED_SHUTDOWN_PCT)
            .div_ceil(100)
            .max(SUITE_FORCED_SHUTDOWN_FLOOR)
    })
}

/// The values that identify a dataset, or `None` for workloads without data.
/// The path of a key as a `[target]` message names it: `ssl`, or `hosts[1].port`.
fn target_key_path(key: &str) -> Vec<Seg> {
    let mut path = Vec::new();
    for part in key.split('.') {
        match part.split_once('[') {
            Some((name, rest)) => {
                path.push(Seg::key(name));
                match rest.trim_end_matches(']').parse() {
                    Ok(i) => path.push(Seg::Index(i)),
                    Err(_) => break,
                }
            }
            None => path.push(Seg::key(part)),
        }
    }
    path
}

fn dataset_key(run: &Run) -> Option<Vec<Value>> {
    data_key(run.spec, &run.options)
}

/// The data `spec` with `options` works on: its family and the values of the options that
/// shape it (`None`: it has none).
fn data_key(spec: &WorkloadSpec, options: &Options) -> Option<Vec<Value>> {
    let family = spec.data.family?;
    let mut key = vec![Value::Str(family.to_string())];
    key.extend(
        spec.data
            .keys
            .iter()
            .map(|k| options.get(k).cloned().unwrap_or(Value::Str(String::new()))),
    );
    Some(key)
}

fn data_step_name(run: &Run, axes: &[String]) -> String {
    // A Lua script's family holds its absolute path (its identity); people read the path as
    // the suite typed it.
    let family = match run.spec.data.family {
        Some(_) if crate::engine::lua::run::script(run.spec).is_some() => run.spec.name,
        family => family.unwrap_or(run.spec.name),
    };
    let shaped: Vec<String> = run
        .spec
        .data
        .keys
        .iter()
        .filter(|k| axes.iter().any(|a| a == *k))
        .map(|k| {
            format!(
                "{k}={}",
                run.options.get(k).map(Value::to_string).unwrap_or_default()
            )
        })
        .collect();
    if shaped.is_empty() {
        family.to_string()
    } else {
        format!("{family} ({})", shaped.join(", "))
    }
}

/// The variables of the `step_name` template: the step's matrix values, every option, then
/// `workload`, `variant`, `repetition` and `dataset`, a later one winning (as in a map built in
/// that order). Serialised straight into the template's context: no map copied per step.
struct NameVars<'a> {
    params: &'a Cell,
    options: &'a Options,
    step: [(&'static str, Value); 4],
}

impl serde::Serialize for NameVars<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(None)?;
        let params = self.params.iter().map(|(k, v)| (k.as_str(), v));
        let options = self.options.0.iter().map(|(k, v)| (k.as_str(), v));
        let step = self.step.iter().map(|(k, v)| (*k, v));
        for (k, v) in params.chain(options).chain(step) {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

/// `{{ workload }}-t{{ threads }}` plus every other axis, and the repetition when repeating.
fn default_step_name(catalog: &Catalog, axes: &[String], repeat: u32) -> String {
    let mut t = String::from("{{ workload }}");
    for a in axes {
        match a.as_str() {
            "workload" => {}
            "threads" => t.push_str("-t{{ threads }}"),
            // The `[[groups]]` a step runs, already joined by `+`.
            "groups" => t.push_str("-{{ groups }}"),
            // Axes that do not apply to the step's workload are empty and left out.
            other => {
                let filter = if catalog
                    .any_option(other)
                    .is_some_and(|o| matches!(o.kind, Kind::Size))
                {
                    " | size"
                } else {
                    ""
                };
                t.push_str(&format!(
                    "{{% if {other} != \"\" %}}-{other}{{{{ {other}{filter} }}}}{{% endif %}}"
                ));
            }
        }
    }
    if repeat > 1 {
        t.push_str("-r{{ repetition }}");
    }
    t
}

/// A run step's worker groups (`[[groups]]`, #31) for matrix cell `cell`: those its `groups`
/// axis names (every group without one), each with its own workload's options resolved as a
/// step's are (spec default < [defaults] < cell) under the group's `options`, `threads` and
/// `rate`. The step's own `options` get the groups' total `threads` (results.csv's `threads`
/// of the step's row) and `rate` 0.
fn step_groups(
    suite: &Suite,
    cell: &Cell,
    step_spec: &'static WorkloadSpec,
    mut options: Options,
    defaults: &mut SpecDefaults,
) -> Result<(Vec<super::StepGroup>, Options), ConfigError> {
    if suite.groups.is_empty() {
        return Ok((Vec::new(), options));
    }
    let picked: Option<Vec<&str>> = cell
        .get("groups")
        .and_then(Value::as_str)
        .map(|s| s.split('+').collect());
    let mut out = Vec::new();
    for (i, g) in suite.groups.iter().enumerate() {
        if picked
            .as_ref()
            .is_some_and(|p| !p.contains(&g.name.as_str()))
        {
            continue;
        }
        let spec = match &g.workload {
            None => step_spec,
            Some(w) => suite.catalog.workload(w).ok_or_else(|| {
                suite.error(
                    &[Seg::key("groups"), Seg::Index(i), Seg::key("workload")],
                    format!("unknown workload `{w}`"),
                )
            })?,
        };
        if !spec.needs_target {
            let path = match &g.workload {
                Some(_) => vec![Seg::key("groups"), Seg::Index(i), Seg::key("workload")],
                None => vec![Seg::key("defaults"), Seg::key("workload")],
            };
            return Err(suite
                .error(
                    &path,
                    format!(
                        "group `{}` runs `{}`, a system workload, which cannot share a step with \
                         other groups",
                        g.name, spec.name
                    ),
                )
                .with_help(
                    "give the group a database workload (`workload = \"oltp_read_only\"`, a \
                     [workloads.NAME]); run system workloads as steps of their own",
                ));
        }
        let spec_defaults = defaults.of(spec);
        let mut group = spec.resolve_options(|name| match name {
            "threads" => Some(Value::Int(g.threads as i64)),
            "rate" => Some(Value::Int(g.rate.unwrap_or(0) as i64)),
            _ => g
                .options
                .get(name)
                .or_else(|| cell.get(name))
                .or_else(|| suite.defaults.get(name))
                .or_else(|| spec_defaults.get(name))
                .cloned(),
        });
        // The step's own forced shutdown (its `time`'s), so that every group stops alike.
        if let (Some(v), Some(step)) = (
            group.0.get_mut("forced_shutdown"),
            options.get("forced_shutdown"),
        ) {
            *v = step.clone();
        }
        // Groups on the step's data share it; a group on data of its own gets its own prepare
        // (`build`), which needs the step's data to be prepared at all.
        let step_data = data_key(step_spec, &options);
        if let Some(k) = data_key(spec, &group)
            && step_data.as_ref() != Some(&k)
        {
            let same_family = step_spec.data.family == spec.data.family;
            if same_family || step_data.is_none() || spec.data.fresh_per_run {
                let why = if same_family {
                    format!(
                        "group `{}` shapes the data of `{}` otherwise than its step (options {}): \
                         both would prepare the same tables",
                        g.name,
                        spec.name,
                        spec.data.keys.join(", ")
                    )
                } else if spec.data.fresh_per_run {
                    format!(
                        "group `{}` runs `{}`, whose data is prepared afresh for every run",
                        g.name, spec.name
                    )
                } else {
                    format!(
                        "group `{}` runs `{}`, whose data the step's workload `{}` does not \
                         prepare",
                        g.name, spec.name, step_spec.name
                    )
                };
                return Err(suite
                    .error(&[Seg::key("groups"), Seg::Index(i)], why)
                    .with_help(
                        "groups on one dataset share its prepare: leave the data options to \
                         [defaults], and set `workload` in [defaults] to a workload whose data \
                         the groups read (e.g. tpcc for a group of ch)",
                    ));
            }
        }
        group.0.shrink_to_fit();
        out.push(super::StepGroup {
            name: g.name.clone(),
            workload: spec.name.to_string(),
            spec: Some(spec),
            options: group,
        });
    }
    let total: u64 = out.iter().map(super::StepGroup::threads).sum();
    for (key, v) in [("threads", total as i64), ("rate", 0)] {
        if let Some(slot) = options.0.get_mut(key) {
            *slot = Value::Int(v);
        }
    }
    Ok((out, options))
}

/// Expected seconds of a run step: `time` when set (an `events` cap may end it sooner).
/// A run step's timeline from the suite's `[[phases]]`: each phase's threads and rate, where
/// it has none, are the step's own (so a matrix over `threads` or `rate` still varies them).
fn phases(raw: &[crate::suite::raw::RawPhase], options: &Options) -> Vec<Phase> {
    raw.iter()
        .enumerate()
        .map(|(i, p)| {
            let (rate_from, rate_to) = p.rate.map_or_else(
                || (options.float("rate"), options.float("rate")),
                |r| r.bounds(),
            );
            Phase {
                name: p.name.clone().unwrap_or_else(|| format!("phase{}", i + 1)),
                duration: std::time::Duration::from_secs(p.time),
                threads: usize::try_from(p.threads.unwrap_or(options.uint("threads")))
                    .unwrap_or(usize::MAX),
                rate_from,
                rate_to,
                warmup: p.warmup,
                weights: p.weights.iter().map(|(k, &v)| (k.clone(), v)).collect(),
            }
        })
        .collect()
}

/// A phase's `weights` name transactions of the step's workload, which must be a custom one,
/// and leave it a transaction to run.
fn phase_weight_errors(suite: &Suite, spec: &'static WorkloadSpec) -> Vec<ConfigError> {
    let mut out = Vec::new();
    for (i, p) in suite.phases.iter().enumerate() {
        if p.weights.is_empty() {
            continue;
        }
        let at = [Seg::key("phases"), Seg::Index(i), Seg::key("weights")];
        let Some(def) = crate::engine::custom::def(spec) else {
            out.push(
                suite
                    .error(
                        &at,
                        format!(
                            "phase {} sets `weights`, but workload `{}` has no transactions to \
                             weigh",
                            i + 1,
                            spec.name
                        ),
                    )
                    .with_help("`weights` applies to custom workloads ([workloads.NAME])"),
            );
            continue;
        };
        let mut total = 0u64;
        for t in &def.transactions {
            total += u64::from(p.weights.get(&t.name).copied().unwrap_or(t.weight));
        }
        for name in p.weights.keys() {
            if !def.transactions.iter().any(|t| &t.name == name) {
                let names: Vec<&str> = def.transactions.iter().map(|t| t.name.as_str()).collect();
                out.push(
                    suite
                        .error(
                            &at,
                            format!(
                                "phase {} weighs `{name}`, which workload `{}` does not have",
                                i + 1,
                                def.name
                            ),
                        )
                        .with_help(format!("its transactions: {}", names.join(", "))),
                );
            }
        }
        if total == 0 {
            out.push(
                suite
                    .error(&at, format!("phase {} weighs every transaction 0", i + 1))
                    .with_help("give at least one transaction a weight above 0"),
            );
        }
    }
    out
}

fn estimate(options: &Options) -> Option<f64> {
    let time = options.int("time");
    (time > 0).then_some(time as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(entries: &[(&str, Value)]) -> IndexMap<String, Value> {
        entries
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect()
    }

    #[test]
    fn the_index_hash_agrees_with_equality() {
        let a = map(&[("threads", Value::Int(4)), ("rate", Value::Float(0.0))]);
        // Another order and the other zero: equal as maps, so they must hash alike.
        let b = map(&[("rate", Value::Float(-0.0)), ("threads", Value::Int(4))]);
        assert_eq!(a, b);
        assert_eq!(hash_map(&a), hash_map(&b));
        let c = map(&[("threads", Value::Int(5)), ("rate", Value::Float(0.0))]);
        assert_ne!(hash_map(&a), hash_map(&c));

        let mut seen = Seen::default();
        let items = [a, c, b];
        for (i, m) in items.iter().enumerate() {
            let h = hash_map(m);
            if seen.find(h, |j| &items[j] == m).is_none() {
                seen.insert(h, i);
            }
        }
        assert_eq!(
            seen.find(hash_map(&items[2]), |j| items[j] == items[2]),
            Some(0)
        );
    }
}
