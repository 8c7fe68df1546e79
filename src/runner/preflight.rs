//! What `sbsuite run` asks the server before anything runs (#26): that the target's database
//! exists, and, with `[suite] dataset = "existing"`, that the data the runs read is there.
//!
//! Why before anything: both are facts about the server that no step can change, and each
//! used to surface late and many times over. A missing database failed the prepare, every run
//! and the cleanup, each with the server's error 1049 and no hint; a missing or short table of
//! an existing dataset would fail every run after hours of others. Now the run stops before
//! its run directory exists, with the database or the table named and the fix, and exits 2
//! (the suite does not match the server, as a `set_global` the server does not know).
//!
//! One connection attempt per host that prepares (the first, or each with
//! `prepare_on = "each"`). A server that cannot be reached at all is not this check's to
//! refuse: the steps' own policy applies (a dataset whose server is unreachable fails without
//! connecting again), and the first variant's capture takes this attempt's answer instead of
//! waiting out `connect_timeout` once more ([`Preflight::unreachable`]). Any other login
//! failure (a wrong password) is left to the steps, which report it as before.

use std::collections::HashSet;
use std::sync::atomic::AtomicBool;

use crate::db::{Connector, Target};
use crate::engine::{self, EngineError, StepRequest};
use crate::plan::{Plan, StepKind};
use crate::suite::raw::DatasetSource;

/// Why a run does not start.
#[derive(Debug, thiserror::Error)]
pub enum PreflightError {
    #[error(
        "[target] database `{database}` does not exist on {endpoint}: {error} logging in as \
         `{user}`. Create it first ({create}), or set [target] database to one that exists; \
         nothing has run"
    )]
    NoDatabase {
        database: String,
        endpoint: String,
        user: String,
        error: String,
        create: String,
    },
    /// The existing data of a dataset is not what its runs read.
    #[error("dataset {dataset} (workload `{workload}`): {message}; nothing has run")]
    Existing {
        dataset: usize,
        workload: String,
        message: String,
    },
}

/// What the checks found that the run goes on with.
#[derive(Debug, Default)]
pub struct Preflight {
    /// The server could not be reached at all: why (for the first variant's capture).
    pub unreachable: Option<String>,
}

/// The checks, in order: the database of each host that prepares, then (with
/// `dataset = "existing"`) each dataset's data, once per dataset, with the options of its
/// first step.
pub fn check(plan: &Plan) -> Result<Preflight, PreflightError> {
    let mut found = Preflight::default();
    let target = plan.steps.iter().find_map(|s| s.target.as_ref());
    if let Some(t) = target.filter(|t| t.has_server() && !t.dry_run) {
        for host in t.prepare_targets() {
            if let Some(why) = database_exists(&host)? {
                found.unreachable = Some(why);
                break;
            }
        }
    }
    if plan.dataset != DatasetSource::Existing || found.unreachable.is_some() {
        return Ok(found);
    }
    let mut seen = HashSet::new();
    for step in plan.steps.iter().filter(|s| s.kind == StepKind::Run) {
        if step.dataset == 0 || !seen.insert(step.dataset) {
            continue;
        }
        let checked = step
            .spec
            .ok_or_else(|| EngineError::NoEngine(step.workload.clone()))
            .and_then(|spec| {
                let kind = engine::StepKind::CheckExisting;
                let request = StepRequest::new(spec, &step.options, kind);
                let request = request.on(step.target.as_ref());
                engine::execute(
                    request,
                    &mut std::io::sink(),
                    &mut (),
                    &AtomicBool::new(false),
                )
            });
        checked.map_err(|e| PreflightError::Existing {
            dataset: step.dataset,
            workload: step.workload.clone(),
            message: match e {
                EngineError::Failed(m) | EngineError::Unreachable(m) => m,
                e => e.to_string(),
            },
        })?;
    }
    Ok(found)
}

/// Logs in to `t`'s first host: `Err` when its database does not exist, `Ok(Some(why))` when
/// the server cannot be reached, `Ok(None)` otherwise (other login failures included).
fn database_exists(t: &Target) -> Result<Option<String>, PreflightError> {
    let dialect = t.driver.dialect();
    match Connector::new(t.clone()).connect_at(0) {
        Ok(conn) => {
            conn.close();
            Ok(None)
        }
        Err(e) if dialect.missing_database(&e) => {
            let login = t.at(0);
            Err(PreflightError::NoDatabase {
                database: login.database.clone(),
                endpoint: t.endpoint(0),
                user: login.user.clone(),
                error: e.to_string(),
                create: format!("CREATE DATABASE {};", login.database),
            })
        }
        Err(e) if e.host_unreachable() => Ok(Some(dialect.connect_failed(t, &e))),
        Err(_) => Ok(None),
    }
}
