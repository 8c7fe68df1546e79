//! Where the clients are and how `sbsuite agent` is started on each (issue #17).
//!
//! Three phases, each a function tested on its own, as the rest of sbsuite is shaped:
//! 1. [`ClientEntry::parse`] (with the rest of `[clients]`, in the suite): one entry as
//!    written (`local`, `local:3`, `ssh:bench@db-client-1`, `kubernetes:bench/app=sbsuite-agent`).
//! 2. [`resolve`]: the entries expanded into named [`Client`]s — `local:3` into `local-1` …
//!    `local-3`, a Kubernetes selector into its Running pods in natural order (`pod-10` after
//!    `pod-9`). The name is the client's directory under `shards/`, so it is sanitised and
//!    unique.
//! 3. [`agent_command`]: the exact process to spawn, whose stdin and stdout carry the protocol.
//!
//! Why the system's `ssh` and `kubectl` rather than libraries: the user's `~/.ssh/config`,
//! agents, jump hosts, kubeconfig contexts and cloud auth plugins all work unchanged, as they
//! do for ansible, and sbsuite holds no credential. Nothing secret is ever put on a command
//! line: ssh runs with `BatchMode=yes`, so a host that would ask for a password fails at once
//! instead of hanging on a prompt.
//!
//! The remote side of ssh is a shell command line, so the binary path is quoted for a POSIX
//! shell ([`shell_quote`]); `kubectl exec` passes argv as is and needs no quoting.

use std::cmp::Ordering;
use std::fmt;
use std::process::Command;

use crate::suite::clients::{ClientEntry, TransportOptions};

/// Whole seconds of `options.connect_timeout`, at least 1 (ssh and kubectl take seconds; 0
/// would mean "no timeout").
fn timeout_secs(options: &TransportOptions) -> u64 {
    options.connect_timeout.as_secs_f64().ceil().max(1.0) as u64
}

/// A resolved client: one agent process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Client {
    /// Unique among the clients of a run and safe as a directory name (`shards/<name>/`).
    pub name: String,
    pub kind: ClientKind,
}

/// Where one agent runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientKind {
    Local,
    Ssh { dest: String },
    Kubernetes { namespace: String, pod: String },
}

impl fmt::Display for ClientKind {
    /// Where the client is, for messages (`ssh:bench@db-1`, `kubernetes:bench/agent-0`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientKind::Local => write!(f, "local"),
            ClientKind::Ssh { dest } => write!(f, "ssh:{dest}"),
            ClientKind::Kubernetes { namespace, pod } => write!(f, "kubernetes:{namespace}/{pod}"),
        }
    }
}

/// Resolving the client list failed.
#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    #[error(
        "cannot run `{program}` to list the pods of client `{entry}`: {source}; install kubectl \
         or set the clients' `kubectl` to its path"
    )]
    KubectlMissing {
        program: String,
        entry: String,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "`kubectl get pods` for client `{entry}` failed ({status}): {stderr}; check the \
         namespace, the selector and the kubeconfig context"
    )]
    KubectlFailed {
        entry: String,
        status: String,
        stderr: String,
    },
    #[error(
        "client `{entry}` selects no Running pod{seen}; start the agent pods (see \
         examples/kubernetes/README.md) and wait until they are Running"
    )]
    NoRunningPods { entry: String, seen: String },
}

/// The entries expanded into named clients, Kubernetes selectors resolved by
/// `kubectl get pods` (see [`pod_list_command`]).
pub fn resolve(
    entries: &[ClientEntry],
    options: &TransportOptions,
) -> Result<Vec<Client>, TransportError> {
    resolve_with(entries, |entry, namespace, selector| {
        let out = pod_list_command(namespace, selector, options)
            .output()
            .map_err(|source| TransportError::KubectlMissing {
                program: options.kubectl.clone(),
                entry: entry.to_string(),
                source,
            })?;
        if !out.status.success() {
            return Err(TransportError::KubectlFailed {
                entry: entry.to_string(),
                status: out.status.to_string(),
                stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
            });
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    })
}

/// [`resolve`] with the pod listing supplied by `list_pods(entry, namespace, selector)`,
/// which returns the output of [`pod_list_command`].
pub fn resolve_with(
    entries: &[ClientEntry],
    mut list_pods: impl FnMut(&ClientEntry, &str, &str) -> Result<String, TransportError>,
) -> Result<Vec<Client>, TransportError> {
    let mut clients: Vec<Client> = Vec::new();
    let mut push = |name: String, kind: ClientKind| {
        let base = sanitize(&name);
        let mut name = base.clone();
        let mut n = 2;
        while clients.iter().any(|c| c.name == name) {
            name = format!("{base}-{n}");
            n += 1;
        }
        clients.push(Client { name, kind });
    };
    for entry in entries {
        match entry {
            ClientEntry::Local => push("local".into(), ClientKind::Local),
            ClientEntry::LocalN(n) => {
                for i in 1..=*n {
                    push(format!("local-{i}"), ClientKind::Local);
                }
            }
            ClientEntry::Ssh { dest } => push(dest.clone(), ClientKind::Ssh { dest: dest.clone() }),
            ClientEntry::Kubernetes {
                namespace,
                selector,
            } => {
                let listing = list_pods(entry, namespace, selector)?;
                let pods = running_pods(&listing);
                if pods.is_empty() {
                    let seen = seen_pods(&listing);
                    return Err(TransportError::NoRunningPods {
                        entry: entry.to_string(),
                        seen,
                    });
                }
                for pod in pods {
                    push(
                        pod.clone(),
                        ClientKind::Kubernetes {
                            namespace: namespace.clone(),
                            pod,
                        },
                    );
                }
            }
        }
    }
    Ok(clients)
}

/// The jsonpath that lists one pod a line: name, phase, deletion timestamp (set while a pod
/// terminates, when its phase still says Running).
const POD_JSONPATH: &str = "{range .items[*]}{.metadata.name}{\"\\t\"}{.status.phase}\
{\"\\t\"}{.metadata.deletionTimestamp}{\"\\n\"}{end}";

/// `kubectl [--context C] --request-timeout=Ns get pods -n NS -l SELECTOR -o jsonpath=…`.
pub fn pod_list_command(namespace: &str, selector: &str, options: &TransportOptions) -> Command {
    let mut cmd = Command::new(&options.kubectl);
    if let Some(ctx) = &options.kube_context {
        cmd.arg("--context").arg(ctx);
    }
    cmd.arg(format!("--request-timeout={}s", timeout_secs(options)))
        .args(["get", "pods", "-n", namespace, "-l", selector])
        .arg(format!("-o=jsonpath={POD_JSONPATH}"));
    cmd
}

/// One line of the pod listing: `(name, phase, terminating)`.
fn pod_lines(listing: &str) -> impl Iterator<Item = (&str, &str, bool)> {
    listing.lines().filter_map(|line| {
        let mut cols = line.split('\t');
        let name = cols.next()?.trim();
        let phase = cols.next().unwrap_or("").trim();
        let terminating = !cols.next().unwrap_or("").trim().is_empty();
        (!name.is_empty()).then_some((name, phase, terminating))
    })
}

/// The Running, not terminating pods of a listing, in natural order.
pub fn running_pods(listing: &str) -> Vec<String> {
    let mut pods: Vec<String> = pod_lines(listing)
        .filter(|(_, phase, terminating)| *phase == "Running" && !terminating)
        .map(|(name, _, _)| name.to_string())
        .collect();
    pods.sort_by(|a, b| natural_cmp(a, b));
    pods.dedup();
    pods
}

/// What a listing without a Running pod showed, for the error (` (seen: a Pending, …)`).
fn seen_pods(listing: &str) -> String {
    let seen: Vec<String> = pod_lines(listing)
        .map(|(name, phase, terminating)| {
            let phase = if terminating { "Terminating" } else { phase };
            format!("{name} {phase}")
        })
        .collect();
    if seen.is_empty() {
        String::new()
    } else {
        format!(" (seen: {})", seen.join(", "))
    }
}

/// Orders strings with their digit runs compared as numbers: `pod-9` < `pod-10`.
pub fn natural_cmp(a: &str, b: &str) -> Ordering {
    let (mut a, mut b) = (a.as_bytes(), b.as_bytes());
    loop {
        match (a.first(), b.first()) {
            (None, None) => return Ordering::Equal,
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(x), Some(y)) if x.is_ascii_digit() && y.is_ascii_digit() => {
                let da = a.iter().take_while(|c| c.is_ascii_digit()).count();
                let db = b.iter().take_while(|c| c.is_ascii_digit()).count();
                let (na, nb) = (strip_zeros(&a[..da]), strip_zeros(&b[..db]));
                let ord = na
                    .len()
                    .cmp(&nb.len())
                    .then_with(|| na.cmp(nb))
                    .then(da.cmp(&db));
                if ord != Ordering::Equal {
                    return ord;
                }
                (a, b) = (&a[da..], &b[db..]);
            }
            (Some(x), Some(y)) => {
                if x != y {
                    return x.cmp(y);
                }
                (a, b) = (&a[1..], &b[1..]);
            }
        }
    }
}

fn strip_zeros(digits: &[u8]) -> &[u8] {
    let z = digits.iter().take_while(|&&c| c == b'0').count();
    &digits[z..]
}

/// A client name as a directory name: letters, digits, `.`, `_` and `-` kept, anything else
/// (`@`, `:`, `/`) becomes `_`; never empty, never `.` or `..`, never hidden.
pub fn sanitize(name: &str) -> String {
    let mut out: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if out.starts_with('.') {
        out.replace_range(..1, "_");
    }
    if out.is_empty() {
        out.push('_');
    }
    out
}

/// The process that runs `sbsuite agent` for `client`; the caller pipes its stdin and stdout.
///
/// - local: `EXE agent`, EXE being the coordinator's own executable;
/// - ssh: `ssh -T -o BatchMode=yes -o ConnectTimeout=N [ssh_options] -- DEST 'BIN agent'`;
/// - kubernetes: `kubectl [--context C] exec -i -n NS POD [-c CONTAINER] -- BIN agent`.
pub fn agent_command(client: &Client, options: &TransportOptions) -> Command {
    match &client.kind {
        ClientKind::Local => {
            let exe = std::env::current_exe()
                .map(|p| p.into_os_string())
                .unwrap_or_else(|_| options.binary.clone().into());
            let mut cmd = Command::new(exe);
            cmd.arg("agent");
            cmd
        }
        ClientKind::Ssh { dest } => ssh_command(
            dest,
            options,
            &[],
            &format!("{} agent", shell_quote(&options.binary)),
        ),
        ClientKind::Kubernetes { namespace, pod } => kubectl_exec_command(
            namespace,
            pod,
            options.kube_container.as_deref(),
            options,
            true,
            &[&options.binary, "agent"],
        ),
    }
}

/// `ssh -T -o BatchMode=yes -o ConnectTimeout=N [extra] [ssh_options] -- DEST REMOTE`: the one
/// way sbsuite reaches a host over ssh (an agent, the server's /proc of `[target]
/// server_host`). `extra` (`-o` pairs of the caller's own) comes before the user's
/// `ssh_options`, and ssh keeps the first value of an option, so the caller's win; `remote` is
/// a command line for the remote shell (quote its words with [`shell_quote`]).
pub fn ssh_command(
    dest: &str,
    options: &TransportOptions,
    extra: &[String],
    remote: &str,
) -> Command {
    let mut cmd = Command::new("ssh");
    cmd.args(["-T", "-o", "BatchMode=yes", "-o"])
        .arg(format!("ConnectTimeout={}", timeout_secs(options)))
        .args(extra)
        .args(&options.ssh_options)
        .args(["--", dest])
        .arg(remote);
    cmd
}

/// `kubectl [--context C] exec [-i] -n NS POD [-c CONTAINER] -- ARGV…`: the one way sbsuite
/// runs a command in a pod (`-i` when the caller talks to it on stdin). kubectl passes argv as
/// is: nothing is quoted.
pub fn kubectl_exec_command(
    namespace: &str,
    pod: &str,
    container: Option<&str>,
    options: &TransportOptions,
    stdin: bool,
    argv: &[&str],
) -> Command {
    let mut cmd = Command::new(&options.kubectl);
    if let Some(ctx) = &options.kube_context {
        cmd.arg("--context").arg(ctx);
    }
    cmd.arg("exec");
    if stdin {
        cmd.arg("-i");
    }
    cmd.args(["-n", namespace, pod]);
    if let Some(c) = container {
        cmd.arg("-c").arg(c);
    }
    cmd.arg("--").args(argv);
    cmd
}

/// `word` as one word for a POSIX shell: unchanged when it has only safe characters, else in
/// single quotes; a leading `~/` stays outside the quotes so the remote shell expands it.
pub fn shell_quote(word: &str) -> String {
    let safe = |s: &str| {
        !s.is_empty()
            && s.bytes().all(|b| {
                b.is_ascii_alphanumeric()
                    || matches!(
                        b,
                        b'/' | b'.' | b'_' | b'-' | b'+' | b',' | b'=' | b':' | b'@' | b'%'
                    )
            })
    };
    let (home, rest) = match word.strip_prefix("~/") {
        Some(rest) => ("~/", rest),
        None => ("", word),
    };
    if safe(rest) || (rest.is_empty() && !home.is_empty()) {
        format!("{home}{rest}")
    } else {
        format!("{home}'{}'", rest.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn args(cmd: &Command) -> (String, Vec<String>) {
        (
            cmd.get_program().to_string_lossy().into_owned(),
            cmd.get_args()
                .map(|a| a.to_string_lossy().into_owned())
                .collect(),
        )
    }

    #[test]
    fn entries_expand_into_unique_directory_safe_names() {
        let entries: Vec<ClientEntry> = [
            "local",
            "local:3",
            "ssh:bench@db-1",
            "ssh:bench@db-1",
            "ssh:.hidden",
        ]
        .iter()
        .map(|e| ClientEntry::parse(e).unwrap())
        .collect();
        let clients = resolve_with(&entries, |_, _, _| unreachable!()).unwrap();
        let names: Vec<&str> = clients.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "local",
                "local-1",
                "local-2",
                "local-3",
                "bench_db-1",
                "bench_db-1-2",
                "_hidden"
            ]
        );
        assert_eq!(
            clients[4].kind,
            ClientKind::Ssh {
                dest: "bench@db-1".into()
            }
        );
        assert_eq!(clients[4].kind.to_string(), "ssh:bench@db-1");
        assert_eq!(sanitize(""), "_");
        assert_eq!(sanitize(".."), "_.");
        assert_eq!(sanitize("a/b:c"), "a_b_c");
    }

    #[test]
    fn kubernetes_entries_become_their_running_pods_in_natural_order() {
        let listing = "agent-10\tRunning\t\nagent-9\tRunning\t\nagent-2\tPending\t\n\
                       agent-1\tRunning\t2026-12-04T03:00:00Z\nagent-0\tRunning\t\n\n";
        assert_eq!(running_pods(listing), ["agent-0", "agent-9", "agent-10"]);
        let entry = ClientEntry::parse("kubernetes:bench/app=sbsuite-agent").unwrap();
        let mut asked = Vec::new();
        let clients = resolve_with(std::slice::from_ref(&entry), |_, ns, sel| {
            asked.push((ns.to_string(), sel.to_string()));
            Ok(listing.to_string())
        })
        .unwrap();
        assert_eq!(
            asked,
            [("bench".to_string(), "app=sbsuite-agent".to_string())]
        );
        let names: Vec<&str> = clients.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["agent-0", "agent-9", "agent-10"]);
        assert_eq!(
            clients[2].kind,
            ClientKind::Kubernetes {
                namespace: "bench".into(),
                pod: "agent-10".into()
            }
        );
        assert_eq!(clients[2].kind.to_string(), "kubernetes:bench/agent-10");

        let none = resolve_with(std::slice::from_ref(&entry), |_, _, _| {
            Ok("agent-0\tPending\t\nagent-1\tRunning\tx\n".into())
        })
        .unwrap_err()
        .to_string();
        assert!(
            none.contains("client `kubernetes:bench/app=sbsuite-agent` selects no Running pod"),
            "{none}"
        );
        assert!(
            none.contains("(seen: agent-0 Pending, agent-1 Terminating)"),
            "{none}"
        );
        let empty = resolve_with(std::slice::from_ref(&entry), |_, _, _| Ok(String::new()))
            .unwrap_err()
            .to_string();
        assert!(empty.contains("selects no Running pod; start"), "{empty}");
    }

    #[test]
    fn natural_order_compares_digit_runs_as_numbers() {
        let mut v = [
            "pod-10", "pod-9", "pod-1", "pod-01", "pod-a", "pod", "pod-100", "pod-2b", "pod-2a",
        ];
        v.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(
            v,
            [
                "pod", "pod-1", "pod-01", "pod-2a", "pod-2b", "pod-9", "pod-10", "pod-100", "pod-a"
            ]
        );
    }

    #[test]
    fn the_pod_listing_command_is_exact() {
        let mut o = TransportOptions::default();
        let (prog, a) = args(&pod_list_command("bench", "app=sbsuite-agent", &o));
        assert_eq!(prog, "kubectl");
        assert_eq!(
            a,
            [
                "--request-timeout=10s",
                "get",
                "pods",
                "-n",
                "bench",
                "-l",
                "app=sbsuite-agent",
                &format!("-o=jsonpath={POD_JSONPATH}"),
            ]
        );
        assert_eq!(
            POD_JSONPATH,
            r#"{range .items[*]}{.metadata.name}{"\t"}{.status.phase}{"\t"}{.metadata.deletionTimestamp}{"\n"}{end}"#
        );
        o.kubectl = "/opt/k8s/kubectl".into();
        o.kube_context = Some("lab".into());
        o.connect_timeout = Duration::from_millis(2500);
        let (prog, a) = args(&pod_list_command("bench", "app=x", &o));
        assert_eq!(prog, "/opt/k8s/kubectl");
        assert_eq!(a[..3], ["--context", "lab", "--request-timeout=3s"]);
    }

    #[test]
    fn the_local_agent_is_this_executable() {
        let client = Client {
            name: "local-1".into(),
            kind: ClientKind::Local,
        };
        let (prog, a) = args(&agent_command(&client, &TransportOptions::default()));
        assert_eq!(prog, std::env::current_exe().unwrap().to_string_lossy());
        assert_eq!(a, ["agent"]);
    }

    #[test]
    fn the_ssh_command_is_exact_and_never_prompts() {
        let client = Client {
            name: "bench_db-1".into(),
            kind: ClientKind::Ssh {
                dest: "bench@db-1".into(),
            },
        };
        let mut o = TransportOptions::default();
        let (prog, a) = args(&agent_command(&client, &o));
        assert_eq!(prog, "ssh");
        assert_eq!(
            a,
            [
                "-T",
                "-o",
                "BatchMode=yes",
                "-o",
                "ConnectTimeout=10",
                "--",
                "bench@db-1",
                "sbsuite agent"
            ]
        );
        o.binary = "/opt/sb suite/bin/sbsuite".into();
        o.ssh_options = vec!["-F".into(), "/tmp/sbsuite-netns-0/ssh_config".into()];
        o.connect_timeout = Duration::from_millis(100);
        let (_, a) = args(&agent_command(&client, &o));
        assert_eq!(
            a,
            [
                "-T",
                "-o",
                "BatchMode=yes",
                "-o",
                "ConnectTimeout=1",
                "-F",
                "/tmp/sbsuite-netns-0/ssh_config",
                "--",
                "bench@db-1",
                "'/opt/sb suite/bin/sbsuite' agent",
            ]
        );
    }

    #[test]
    fn other_commands_share_the_agents_ssh_and_kubectl_lines() {
        let mut o = TransportOptions {
            ssh_options: vec!["-F".into(), "cfg".into()],
            ..TransportOptions::default()
        };
        let extra = ["-o".to_string(), "ControlMaster=no".to_string()];
        let (prog, a) = args(&ssh_command("root@db1", &o, &extra, "cat /proc/stat; true"));
        assert_eq!(prog, "ssh");
        assert_eq!(
            a,
            [
                "-T",
                "-o",
                "BatchMode=yes",
                "-o",
                "ConnectTimeout=10",
                "-o",
                "ControlMaster=no",
                "-F",
                "cfg",
                "--",
                "root@db1",
                "cat /proc/stat; true"
            ]
        );
        o.kube_context = Some("lab".into());
        let (prog, a) = args(&kubectl_exec_command(
            "bench",
            "mariadb-0",
            Some("mariadb"),
            &o,
            false,
            &["sh", "-c", "cat /proc/stat"],
        ));
        assert_eq!(prog, "kubectl");
        assert_eq!(
            a,
            [
                "--context",
                "lab",
                "exec",
                "-n",
                "bench",
                "mariadb-0",
                "-c",
                "mariadb",
                "--",
                "sh",
                "-c",
                "cat /proc/stat"
            ]
        );
    }

    #[test]
    fn the_remote_binary_is_one_shell_word() {
        assert_eq!(shell_quote("sbsuite"), "sbsuite");
        assert_eq!(
            shell_quote("/usr/local/bin/sbsuite-0.1"),
            "/usr/local/bin/sbsuite-0.1"
        );
        assert_eq!(shell_quote("~/bin/sbsuite"), "~/bin/sbsuite");
        assert_eq!(shell_quote("~/my bin/sbsuite"), "~/'my bin/sbsuite'");
        assert_eq!(shell_quote("a;rm -rf /"), "'a;rm -rf /'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote("$(id)"), "'$(id)'");
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("~user/x"), "'~user/x'");
    }

    #[test]
    fn the_kubectl_command_is_exact() {
        let client = Client {
            name: "agent-0".into(),
            kind: ClientKind::Kubernetes {
                namespace: "bench".into(),
                pod: "agent-0".into(),
            },
        };
        let mut o = TransportOptions::default();
        let (prog, a) = args(&agent_command(&client, &o));
        assert_eq!(prog, "kubectl");
        assert_eq!(
            a,
            [
                "exec", "-i", "-n", "bench", "agent-0", "--", "sbsuite", "agent"
            ]
        );
        o.kube_context = Some("lab".into());
        o.kube_container = Some("agent".into());
        o.binary = "/usr/local/bin/sbsuite".into();
        let (_, a) = args(&agent_command(&client, &o));
        assert_eq!(
            a,
            [
                "--context",
                "lab",
                "exec",
                "-i",
                "-n",
                "bench",
                "agent-0",
                "-c",
                "agent",
                "--",
                "/usr/local/bin/sbsuite",
                "agent",
            ]
        );
    }
}
