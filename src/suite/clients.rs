//! `[clients]`: where a suite's run steps execute, as the suite file writes it (issue #17).
//!
//! The configuration belongs to the suite, which parses and checks it with the rest of the
//! file; `clients::transport` reads it to start the agents (resolving the entries into
//! clients, building the ssh and kubectl command lines). `--clients` is layered over the file
//! as `clients.list`, so its entries are parsed here too.

use std::fmt;
use std::time::Duration;

/// The forms an entry may take, for error messages.
pub const ACCEPTED_FORMS: &str = "`local`, `local:N` (N child processes, N >= 1), \
`ssh:DEST` (DEST is user@host, host or an ssh_config alias) or \
`kubernetes:NAMESPACE/SELECTOR` (a label selector, e.g. kubernetes:bench/app=sbsuite-agent)";

/// The most local child processes one entry may ask for: beyond this it is a typo.
const MAX_LOCAL: usize = 1024;

/// One entry of `[clients]` (or `--clients`), as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientEntry {
    /// One child process on this machine, named `local`.
    Local,
    /// `local:N`: N child processes on this machine, named `local-1` … `local-N`.
    LocalN(usize),
    /// `ssh:DEST`: `sbsuite agent` started by the system's OpenSSH client on DEST.
    Ssh { dest: String },
    /// `kubernetes:NS/SELECTOR`: one agent in each Running pod of namespace NS matching the
    /// label selector, through `kubectl exec -i`.
    Kubernetes { namespace: String, selector: String },
}

impl ClientEntry {
    /// Parses one entry; the error says what is wrong and which forms are accepted.
    pub fn parse(text: &str) -> Result<ClientEntry, String> {
        let text = text.trim();
        let bad = |why: String| {
            Err(format!(
                "invalid client `{text}`: {why}; expected {ACCEPTED_FORMS}"
            ))
        };
        let (kind, rest) = match text.split_once(':') {
            Some((k, r)) => (k, Some(r)),
            None => (text, None),
        };
        match (kind, rest) {
            ("local", None) => Ok(ClientEntry::Local),
            ("local", Some(n)) => match n.parse::<usize>() {
                Ok(n) if (1..=MAX_LOCAL).contains(&n) => Ok(ClientEntry::LocalN(n)),
                _ => bad(format!("`{n}` is not a count from 1 to {MAX_LOCAL}")),
            },
            ("ssh", Some(dest)) => match check_ssh_dest(dest) {
                Ok(()) => Ok(ClientEntry::Ssh { dest: dest.into() }),
                Err(why) => bad(why.into()),
            },
            ("kubernetes", Some(rest)) => {
                let Some((namespace, selector)) = rest.split_once('/') else {
                    return bad("the namespace and the label selector are separated by `/`".into());
                };
                let selector = selector.trim();
                if !is_dns_label(namespace) {
                    bad(format!(
                        "`{namespace}` is not a Kubernetes namespace (lower-case letters, digits \
                         and `-`, at most 63)"
                    ))
                } else if selector.is_empty() || selector.chars().any(char::is_control) {
                    bad("the label selector is empty".into())
                } else {
                    Ok(ClientEntry::Kubernetes {
                        namespace: namespace.into(),
                        selector: selector.into(),
                    })
                }
            }
            _ => bad(format!("`{kind}` is not a kind of client")),
        }
    }
}

impl std::str::FromStr for ClientEntry {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        ClientEntry::parse(s)
    }
}

impl fmt::Display for ClientEntry {
    /// The entry as it is written, so `parse(entry.to_string()) == entry`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientEntry::Local => write!(f, "local"),
            ClientEntry::LocalN(n) => write!(f, "local:{n}"),
            ClientEntry::Ssh { dest } => write!(f, "ssh:{dest}"),
            ClientEntry::Kubernetes {
                namespace,
                selector,
            } => write!(f, "kubernetes:{namespace}/{selector}"),
        }
    }
}

/// Why `dest` cannot be an ssh destination (it would be read as an option, or split).
fn check_ssh_dest(dest: &str) -> Result<(), &'static str> {
    if dest.is_empty() {
        Err("the ssh destination is empty")
    } else if dest.starts_with('-') {
        Err("an ssh destination cannot start with `-`")
    } else if dest.chars().any(|c| c.is_whitespace() || c.is_control()) {
        Err("an ssh destination cannot contain spaces")
    } else {
        Ok(())
    }
}

/// The forms `[target] server_host` may take, for error messages.
pub const SERVER_HOST_FORMS: &str = "`ssh:DEST` (DEST is user@host, host or an ssh_config \
alias, e.g. ssh:root@db1) or `kubernetes:NAMESPACE/POD` (optionally `/CONTAINER`, e.g. \
kubernetes:bench/mariadb-0/mariadb)";

/// `[target] server_host`: the machine the database server runs on when it is not this one,
/// where its process CPU and the host's CPU and disk I/O are read from /proc (#29).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerHost {
    /// Through the system's OpenSSH client, as `ssh:DEST` clients are reached.
    Ssh { dest: String },
    /// `kubectl exec` into the server's pod (and container, when it has several).
    Kubernetes {
        namespace: String,
        pod: String,
        container: Option<String>,
    },
}

impl ServerHost {
    /// Parses the value; the error says what is wrong and which forms are accepted.
    pub fn parse(text: &str) -> Result<ServerHost, String> {
        let text = text.trim();
        let bad = |why: &str| {
            Err(format!(
                "invalid server_host `{text}`: {why}; expected {SERVER_HOST_FORMS}"
            ))
        };
        match text.split_once(':') {
            Some(("ssh", dest)) => match check_ssh_dest(dest) {
                Ok(()) => Ok(ServerHost::Ssh { dest: dest.into() }),
                Err(why) => bad(why),
            },
            Some(("kubernetes", rest)) => {
                let mut parts = rest.split('/');
                let (namespace, pod, container) = (parts.next(), parts.next(), parts.next());
                let (Some(namespace), Some(pod), None) = (namespace, pod, parts.next()) else {
                    return bad(
                        "write the namespace, the pod and optionally the container, separated by `/`",
                    );
                };
                if !is_dns_label(namespace) {
                    return bad(
                        "the namespace is not a Kubernetes name (lower-case letters, digits and `-`, at most 63)",
                    );
                }
                // Pod names are DNS subdomains: labels joined by dots.
                if pod.len() > 253 || !pod.split('.').all(is_dns_label) {
                    return bad(
                        "the pod is not a Kubernetes pod name (lower-case letters, digits, `-` and `.`)",
                    );
                }
                if container.is_some_and(|c| !is_dns_label(c)) {
                    return bad(
                        "the container is not a Kubernetes name (lower-case letters, digits and `-`, at most 63)",
                    );
                }
                Ok(ServerHost::Kubernetes {
                    namespace: namespace.into(),
                    pod: pod.into(),
                    container: container.map(String::from),
                })
            }
            _ => bad("it names no kind of host"),
        }
    }
}

impl fmt::Display for ServerHost {
    /// The value as it is written, so `parse(host.to_string()) == host`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServerHost::Ssh { dest } => write!(f, "ssh:{dest}"),
            ServerHost::Kubernetes {
                namespace,
                pod,
                container,
            } => {
                write!(f, "kubernetes:{namespace}/{pod}")?;
                match container {
                    Some(c) => write!(f, "/{c}"),
                    None => Ok(()),
                }
            }
        }
    }
}

/// `[target] server_host` validated, with how to reach it: `[target] server_ssh_options`, else
/// `[clients]`' ssh options; `[clients]`' kubectl, context and connect timeout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerHostAccess {
    pub host: ServerHost,
    pub transport: TransportOptions,
}

/// A Kubernetes namespace name: an RFC 1123 label.
fn is_dns_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

/// How the transports start an agent: the parts of `[clients]` that are not the list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransportOptions {
    /// The `sbsuite` binary on the remote hosts and in the pods (a path, or a name looked up in
    /// the remote `PATH`; `~/` is expanded by the remote shell). Local clients always run the
    /// coordinator's own executable, so both sides are the same version.
    pub binary: String,
    /// Extra arguments for `ssh`, before the destination (e.g. `["-F", "ssh_config"]`).
    pub ssh_options: Vec<String>,
    /// The `kubectl` program.
    pub kubectl: String,
    /// `kubectl --context`: the kubeconfig context, when not the current one.
    pub kube_context: Option<String>,
    /// `kubectl exec -c`: the container of the pod that has the binary, when it has several.
    pub kube_container: Option<String>,
    /// How long connecting may take: ssh's `ConnectTimeout`, kubectl's `--request-timeout`.
    pub connect_timeout: Duration,
}

impl Default for TransportOptions {
    fn default() -> Self {
        TransportOptions {
            binary: "sbsuite".into(),
            ssh_options: Vec::new(),
            kubectl: "kubectl".into(),
            kube_context: None,
            kube_container: None,
            connect_timeout: Duration::from_secs(10),
        }
    }
}

/// `[clients]` validated: the entries parsed, the transport settings resolved.
#[derive(Clone, Debug)]
pub struct Clients {
    pub entries: Vec<ClientEntry>,
    pub transport: TransportOptions,
    /// `binary` as written (local clients run it instead of this executable).
    pub binary: Option<String>,
    pub timeout: Duration,
    pub connect_timeout: Duration,
    /// The suite's own workloads, each as the TOML an agent compiles (name → text).
    pub definitions: std::collections::BTreeMap<String, String>,
    /// The suite's sysbench Lua scripts, which agents receive with their modules
    /// ([`super::scripts::ScriptUse::bundle`]).
    pub scripts: super::scripts::Scripts,
}

impl Clients {
    /// How many clients the list names, when it can be known without asking Kubernetes.
    pub fn known_count(&self) -> Option<usize> {
        self.entries
            .iter()
            .map(|e| match e {
                ClientEntry::Local | ClientEntry::Ssh { .. } => Some(1),
                ClientEntry::LocalN(n) => Some(*n),
                ClientEntry::Kubernetes { .. } => None,
            })
            .sum()
    }

    /// Whether every client is a child process of this machine.
    pub fn all_local(&self) -> bool {
        self.entries
            .iter()
            .all(|e| matches!(e, ClientEntry::Local | ClientEntry::LocalN(_)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_parses_and_prints_back() {
        let cases = [
            ("local", ClientEntry::Local),
            ("local:3", ClientEntry::LocalN(3)),
            (
                "ssh:bench@db-client-1",
                ClientEntry::Ssh {
                    dest: "bench@db-client-1".into(),
                },
            ),
            (
                "ssh:client1",
                ClientEntry::Ssh {
                    dest: "client1".into(),
                },
            ),
            (
                "kubernetes:bench/app=sbsuite-agent",
                ClientEntry::Kubernetes {
                    namespace: "bench".into(),
                    selector: "app=sbsuite-agent".into(),
                },
            ),
            (
                "kubernetes:bench/app=sbsuite-agent,tier in (a, b)",
                ClientEntry::Kubernetes {
                    namespace: "bench".into(),
                    selector: "app=sbsuite-agent,tier in (a, b)".into(),
                },
            ),
        ];
        for (text, want) in cases {
            let got = ClientEntry::parse(text).unwrap();
            assert_eq!(got, want, "{text}");
            assert_eq!(got.to_string(), text);
            assert_eq!(text.parse::<ClientEntry>().unwrap(), want);
        }
        assert_eq!(
            ClientEntry::parse("  local:2 ").unwrap(),
            ClientEntry::LocalN(2)
        );
    }

    #[test]
    fn bad_entries_say_what_is_wrong_and_the_accepted_forms() {
        let cases = [
            ("", "is not a kind of client"),
            ("lokal", "`lokal` is not a kind of client"),
            ("ssh", "`ssh` is not a kind of client"),
            ("local:0", "`0` is not a count from 1 to 1024"),
            ("local:x", "`x` is not a count"),
            ("local:5000", "`5000` is not a count"),
            ("ssh:", "the ssh destination is empty"),
            ("ssh:-oProxyCommand=sh", "cannot start with `-`"),
            ("ssh:a b", "cannot contain spaces"),
            ("kubernetes:bench", "separated by `/`"),
            (
                "kubernetes:Bench/app=x",
                "`Bench` is not a Kubernetes namespace",
            ),
            ("kubernetes:/app=x", "`` is not a Kubernetes namespace"),
            ("kubernetes:bench/", "the label selector is empty"),
        ];
        for (text, want) in cases {
            let err = ClientEntry::parse(text).unwrap_err();
            assert!(err.contains(want), "{text}: {err}");
            assert!(err.contains(ACCEPTED_FORMS), "{text}: {err}");
            assert!(
                err.starts_with(&format!("invalid client `{}`", text.trim())),
                "{err}"
            );
        }
    }
    #[test]
    fn server_hosts_parse_print_back_and_say_what_is_wrong() {
        let cases = [
            (
                "ssh:root@db1",
                ServerHost::Ssh {
                    dest: "root@db1".into(),
                },
            ),
            (
                "kubernetes:bench/mariadb-0",
                ServerHost::Kubernetes {
                    namespace: "bench".into(),
                    pod: "mariadb-0".into(),
                    container: None,
                },
            ),
            (
                "kubernetes:bench/pg.primary-0/postgres",
                ServerHost::Kubernetes {
                    namespace: "bench".into(),
                    pod: "pg.primary-0".into(),
                    container: Some("postgres".into()),
                },
            ),
        ];
        for (text, want) in cases {
            let got = ServerHost::parse(text).unwrap();
            assert_eq!(got, want, "{text}");
            assert_eq!(got.to_string(), text);
        }
        for (text, want) in [
            ("db1", "names no kind of host"),
            ("local", "names no kind of host"),
            ("ssh:", "the ssh destination is empty"),
            ("ssh:-oProxyCommand=sh", "cannot start with `-`"),
            ("ssh:a b", "cannot contain spaces"),
            ("kubernetes:bench", "separated by `/`"),
            ("kubernetes:bench/a/b/c", "separated by `/`"),
            (
                "kubernetes:Bench/pod",
                "the namespace is not a Kubernetes name",
            ),
            (
                "kubernetes:bench/Pod_0",
                "the pod is not a Kubernetes pod name",
            ),
            (
                "kubernetes:bench/pod/C",
                "the container is not a Kubernetes name",
            ),
        ] {
            let err = ServerHost::parse(text).unwrap_err();
            assert!(err.contains(want), "{text}: {err}");
            assert!(err.contains(SERVER_HOST_FORMS), "{text}: {err}");
            assert!(
                err.starts_with(&format!("invalid server_host `{text}`")),
                "{err}"
            );
        }
    }
}
