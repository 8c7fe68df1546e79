//! Running one suite's run steps from several client machines at once (issue #17).
//!
//! A distributed database outgrows one client: its CPU or NIC saturates before the cluster
//! does. Instead of a daemon of our own, sbsuite reaches its clients through what users already
//! run — the system's OpenSSH client, `kubectl exec`, or plain child processes — and starts
//! `sbsuite agent` there, which speaks a line-delimited protocol over its stdin and stdout.
//!
//! [`transport`] says where the clients are and how an agent is started on each: resolving the
//! `[clients]` entries (parsed with the suite, [`crate::suite::clients`]) into named clients
//! (a Kubernetes selector into its pods), and building the exact command line. It knows
//! nothing about the protocol spoken once the agent runs, so the transports are tested on
//! their own.
//!
//! The coordinator (the `sbsuite run` process) keeps everything but the measured run: it
//! prepares, applies variants, runs hooks, checks and cleanups. For each run step it starts
//! one agent per client, sends each its shard of the step ([`protocol`]), releases them
//! together and merges what they measured exactly ([`merge`]). What an agent may send, and
//! how long it is waited for, is bounded by the step ([`bounds`]): a broken or hostile agent
//! fails its step, it never costs the coordinator unbounded memory or time.

pub mod agent;
pub mod bounds;
pub mod coordinator;
pub mod merge;
pub mod protocol;
pub mod transport;
