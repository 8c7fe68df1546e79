//! examples/kubernetes/ (issue #17) was not run against a real cluster, so what can be checked
//! without one is checked here: the manifest parses, and the suite, the manifest and the
//! Dockerfile agree on the namespace, the label selector, the container, the binary path and
//! the user; the coordinator may list and exec into the pods; the agents only sleep (the
//! coordinator starts them); and the command the transport builds for one of the pods.

use std::collections::BTreeMap;
use std::path::Path;

use sbsuite::clients::transport::{Client, ClientKind, agent_command};
use sbsuite::suite::clients::{ClientEntry, TransportOptions};
use yaml_rust2::{Yaml, YamlLoader};

fn example(file: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples/kubernetes")
        .join(file);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn documents() -> Vec<Yaml> {
    YamlLoader::load_from_str(&example("agents.yaml")).expect("agents.yaml is YAML")
}

fn kind<'a>(docs: &'a [Yaml], kind: &str) -> &'a Yaml {
    let found: Vec<&Yaml> = docs
        .iter()
        .filter(|d| d["kind"].as_str() == Some(kind))
        .collect();
    assert_eq!(found.len(), 1, "agents.yaml has {} {kind}", found.len());
    found[0]
}

fn str_map(y: &Yaml) -> BTreeMap<String, String> {
    y.as_hash()
        .unwrap_or_else(|| panic!("not a map: {y:?}"))
        .iter()
        .map(|(k, v)| {
            let v = match v {
                Yaml::String(s) => s.clone(),
                other => panic!("label {k:?} is not a string: {other:?}"),
            };
            (k.as_str().unwrap().to_string(), v)
        })
        .collect()
}

fn strs(y: &Yaml) -> Vec<&str> {
    y.as_vec()
        .unwrap_or_else(|| panic!("not a list: {y:?}"))
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect()
}

/// The suite's `[clients]`: its one Kubernetes entry and the options the transport reads.
fn suite_clients() -> (String, String, TransportOptions) {
    let suite: toml::Table = example("suite.toml").parse().expect("suite.toml is TOML");
    let clients = suite["clients"].as_table().expect("[clients]");
    let entries = clients["list"].as_array().expect("clients.list");
    assert_eq!(entries.len(), 1, "{entries:?}");
    let entry = ClientEntry::parse(entries[0].as_str().unwrap()).unwrap();
    let ClientEntry::Kubernetes {
        namespace,
        selector,
    } = entry
    else {
        panic!("not a kubernetes entry: {entry:?}");
    };
    let options = TransportOptions {
        binary: clients["binary"].as_str().expect("clients.binary").into(),
        kube_container: clients
            .get("kube_container")
            .map(|c| c.as_str().unwrap().to_string()),
        ..TransportOptions::default()
    };
    (namespace, selector, options)
}

/// `app=x,tier=y` as a map (the equality-based selectors the example uses).
fn selector_labels(selector: &str) -> BTreeMap<String, String> {
    selector
        .split(',')
        .map(|term| {
            let (k, v) = term
                .split_once('=')
                .unwrap_or_else(|| panic!("not an equality selector: {term}"));
            (
                k.trim().to_string(),
                v.trim_start_matches('=').trim().to_string(),
            )
        })
        .collect()
}

#[test]
fn the_manifest_selects_what_the_suite_asks_for() {
    let docs = documents();
    let (namespace, selector, options) = suite_clients();
    assert_eq!(
        kind(&docs, "Namespace")["metadata"]["name"].as_str(),
        Some(namespace.as_str())
    );
    for doc in docs
        .iter()
        .filter(|d| d["kind"].as_str() != Some("Namespace"))
    {
        assert_eq!(
            doc["metadata"]["namespace"].as_str(),
            Some(namespace.as_str()),
            "{:?} {:?} is not in the suite's namespace",
            doc["kind"],
            doc["metadata"]["name"]
        );
    }

    let set = kind(&docs, "StatefulSet");
    let spec = &set["spec"];
    let want = selector_labels(&selector);
    let pod_labels = str_map(&spec["template"]["metadata"]["labels"]);
    for (k, v) in &want {
        assert_eq!(
            pod_labels.get(k),
            Some(v),
            "pod template labels {pod_labels:?}"
        );
    }
    // The suite's selector is the StatefulSet's own: it selects these pods and no others of it.
    assert_eq!(str_map(&spec["selector"]["matchLabels"]), want);
    let service = kind(&docs, "Service");
    assert_eq!(
        spec["serviceName"].as_str(),
        service["metadata"]["name"].as_str()
    );
    assert_eq!(service["spec"]["clusterIP"].as_str(), Some("None"));
    assert_eq!(str_map(&service["spec"]["selector"]), want);
    assert!(spec["replicas"].as_i64().unwrap() >= 2, "several clients");

    // The container the suite execs into idles; the coordinator starts the agent.
    let containers = spec["template"]["spec"]["containers"].as_vec().unwrap();
    let container = match &options.kube_container {
        Some(name) => containers
            .iter()
            .find(|c| c["name"].as_str() == Some(name))
            .unwrap_or_else(|| panic!("no container {name} in the pod template")),
        None => {
            assert_eq!(
                containers.len(),
                1,
                "several containers: set kube_container"
            );
            &containers[0]
        }
    };
    assert_eq!(strs(&container["command"]), ["sleep", "infinity"]);
    assert!(container["image"].as_str().unwrap().contains("sbsuite"));
}

#[test]
fn the_image_has_the_binary_where_the_suite_looks_and_runs_as_the_pods_user() {
    let (_, _, options) = suite_clients();
    let dockerfile = example("Dockerfile");
    let lines: Vec<&str> = dockerfile
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    // The final stage: after the last FROM.
    let last_from = lines.iter().rposition(|l| l.starts_with("FROM ")).unwrap();
    let stage = &lines[last_from..];
    assert!(
        stage
            .iter()
            .any(|l| l.starts_with("COPY --from=build ")
                && l.ends_with(&format!(" {}", options.binary))),
        "the final stage copies no binary to {}: {stage:?}",
        options.binary
    );
    assert!(stage.contains(&r#"CMD ["sleep", "infinity"]"#), "{stage:?}");
    let user = stage
        .iter()
        .find_map(|l| l.strip_prefix("USER "))
        .expect("the image runs as a user of its own");
    let (uid, gid) = user.split_once(':').unwrap();

    let docs = documents();
    let pod = &kind(&docs, "StatefulSet")["spec"]["template"]["spec"];
    let security = &pod["securityContext"];
    assert_eq!(security["runAsNonRoot"].as_bool(), Some(true));
    assert_eq!(security["runAsUser"].as_i64().unwrap().to_string(), uid);
    assert_eq!(security["runAsGroup"].as_i64().unwrap().to_string(), gid);
    // The password reaches the pods from a Secret, never from a command line.
    let env = pod["containers"][0]["env"].as_vec().unwrap();
    assert!(env.iter().any(|e| e["name"].as_str() == Some("DB_PASSWORD")
        && !e["valueFrom"]["secretKeyRef"].is_badvalue()));
    let ignore = example("Dockerfile.dockerignore");
    assert!(ignore.lines().any(|l| l.trim() == "target/"), "{ignore}");
}

#[test]
fn the_coordinator_may_list_the_pods_and_exec_into_them_and_nothing_more() {
    let docs = documents();
    let role = kind(&docs, "Role");
    let mut granted: Vec<(String, String)> = Vec::new();
    for rule in role["rules"].as_vec().unwrap() {
        assert_eq!(strs(&rule["apiGroups"]), [""]);
        for r in strs(&rule["resources"]) {
            for v in strs(&rule["verbs"]) {
                granted.push((r.to_string(), v.to_string()));
            }
        }
    }
    granted.sort();
    let want = [
        ("pods", "get"),
        ("pods", "list"),
        ("pods/exec", "create"),
        ("pods/exec", "get"),
    ];
    assert_eq!(
        granted,
        want.map(|(r, v)| (r.to_string(), v.to_string())).to_vec()
    );
    let binding = kind(&docs, "RoleBinding");
    assert_eq!(
        binding["roleRef"]["name"].as_str(),
        role["metadata"]["name"].as_str()
    );
    let account = kind(&docs, "ServiceAccount");
    assert_eq!(
        binding["subjects"][0]["name"].as_str(),
        account["metadata"]["name"].as_str()
    );
}

#[test]
fn the_transport_execs_the_agent_in_the_suites_container_and_binary() {
    let (namespace, _, options) = suite_clients();
    let set = kind(&documents(), "StatefulSet").clone();
    // A StatefulSet's pods are NAME-0, NAME-1, …
    let pod = format!("{}-0", set["metadata"]["name"].as_str().unwrap());
    let client = Client {
        name: pod.clone(),
        kind: ClientKind::Kubernetes {
            namespace: namespace.clone(),
            pod: pod.clone(),
        },
    };
    let cmd = agent_command(&client, &options);
    let args: Vec<String> = cmd
        .get_args()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    assert_eq!(cmd.get_program(), "kubectl");
    assert_eq!(
        args,
        [
            "exec",
            "-i",
            "-n",
            &namespace,
            &pod,
            "-c",
            "agent",
            "--",
            "/usr/local/bin/sbsuite",
            "agent"
        ]
    );
}

#[test]
fn the_suite_validates() {
    let suite = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/kubernetes/suite.toml");
    let out = assert_cmd::Command::cargo_bin("sbsuite")
        .unwrap()
        .env("DB_PASSWORD", "x")
        .arg("validate")
        .arg(&suite)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
