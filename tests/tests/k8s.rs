//! The Kubernetes Job of `deploy/k8s/soak-job.yaml`: `kubernetes-validate --strict` accepts it against the API
//! schemas it bundles (the newest, and 1.29, the oldest with `backoffLimitPerIndex` on by default) and rejects
//! a copy with a misspelt field; read as YAML (by the PyYAML that kubernetes-validate brings), it is an Indexed
//! Job whose pod with completion index K runs `epochlab soak --shard K/N` with N its `completions`, and writes
//! its results to a file of its own on a persistent volume. Without kubernetes-validate the tests fail, naming
//! the set-up step that installs it (`cargo xtask setup`, which `cargo xtask test` runs first).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

const MANIFEST: &str = "deploy/k8s/soak-job.yaml";
const INDEX_VAR: &str = "JOB_COMPLETION_INDEX";
const INDEX_ANNOTATION: &str = "metadata.annotations['batch.kubernetes.io/job-completion-index']";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn which(tool: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| Path::new(d).join(tool))
        .find(|p| p.is_file())
}

/// kubernetes-validate: in the venv `cargo xtask setup` makes under the target directory, at the version it
/// pins (`target/tools/kubernetes-validate`; this test's `CARGO_TARGET_TMPDIR` is `target/tmp`), else on PATH. A failure when it
/// is in neither: a missing tool is a set-up failure.
fn kubernetes_validate() -> PathBuf {
    let venv = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("the target directory holds tmp/")
        .join("tools/kubernetes-validate/bin/kubernetes-validate");
    venv.is_file()
        .then(|| venv.clone())
        .or_else(|| which("kubernetes-validate"))
        .unwrap_or_else(|| {
            panic!(
                "kubernetes-validate is neither on PATH nor at {}: `cargo xtask setup` installs it (a venv \
                 from PyPI); `cargo xtask test` runs that step first",
                venv.display()
            )
        })
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn validate(tool: &Path, version: Option<&str>, file: &Path) -> Output {
    let mut cmd = Command::new(tool);
    cmd.arg("--strict");
    if let Some(v) = version {
        cmd.args(["--kubernetes-version", v]);
    }
    cmd.arg(file)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", tool.display()))
}

#[test]
fn the_soak_job_passes_kubernetes_validate_strict() {
    let tool = kubernetes_validate();
    let manifest = repo().join(MANIFEST);
    for version in [None, Some("1.29")] {
        let out = validate(&tool, version, &manifest);
        let said = text(&out);
        assert!(
            out.status.success(),
            "kubernetes-validate --strict {version:?}: {said}"
        );
        for resource in [
            "job/epochlab-soak",
            "persistentvolumeclaim/epochlab-soak-results",
        ] {
            assert!(
                said.contains(&format!("passed for resource {resource}")),
                "{said}"
            );
        }
    }
    // The validation is strict: a misspelt field fails it.
    let yaml = std::fs::read_to_string(&manifest).unwrap();
    assert!(yaml.contains("  completionMode: Indexed\n"));
    let dir = std::env::temp_dir().join(format!("epochlab-k8s-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("misspelt.yaml");
    let misspelt = yaml.replace("  completionMode: Indexed\n", "  completionMod: Indexed\n");
    std::fs::write(&bad, misspelt).unwrap();
    let out = validate(&tool, None, &bad);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(!out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("'completionMod' was unexpected"),
        "{}",
        text(&out)
    );
}

/// The interpreter kubernetes-validate runs with (its script's `#!` line), which has PyYAML.
fn python_of(tool: &Path) -> PathBuf {
    let script = std::fs::read_to_string(tool).unwrap_or_default();
    let shebang = script.lines().next().and_then(|l| l.strip_prefix("#!"));
    match shebang.map(str::trim) {
        Some(path) if !path.contains(' ') && Path::new(path).is_file() => PathBuf::from(path),
        _ => PathBuf::from("python3"),
    }
}

/// Every document of the manifest, read by PyYAML and handed over as JSON.
fn documents(tool: &Path) -> Vec<Value> {
    let python = python_of(tool);
    let out = Command::new(&python)
        .args([
            "-c",
            "import json, sys, yaml; json.dump(list(yaml.safe_load_all(open(sys.argv[1]))), sys.stdout)",
        ])
        .arg(repo().join(MANIFEST))
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", python.display()));
    assert!(
        out.status.success(),
        "{} could not read the manifest as YAML: {}",
        python.display(),
        text(&out)
    );
    let docs: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    docs.into_iter().filter(|d| !d.is_null()).collect()
}

fn only<'a>(docs: &'a [Value], kind: &str) -> &'a Value {
    let of_kind: Vec<&Value> = docs.iter().filter(|d| d["kind"] == kind).collect();
    assert_eq!(of_kind.len(), 1, "exactly one {kind} in {MANIFEST}");
    of_kind[0]
}

/// The value of `flag` in `args`, given as `--flag VALUE` or `--flag=VALUE`.
fn flag<'a>(args: &'a [&'a str], name: &str) -> &'a str {
    let inline = format!("{name}=");
    let found = args.iter().enumerate().find_map(|(i, a)| {
        if *a == name {
            args.get(i + 1).copied()
        } else {
            a.strip_prefix(inline.as_str())
        }
    });
    found.unwrap_or_else(|| panic!("the soak container's args have no {name}: {args:?}"))
}

/// The names of the `$(VAR)` references in `arg`, which Kubernetes replaces with the container's env vars.
fn references(arg: &str) -> Vec<&str> {
    arg.split("$(")
        .skip(1)
        .filter_map(|s| s.split_once(')').map(|(v, _)| v))
        .collect()
}

#[test]
fn the_soak_job_runs_shard_k_of_n_per_completion_index_into_a_volume() {
    let tool = kubernetes_validate();
    let docs = documents(&tool);
    let job = only(&docs, "Job");
    let claim = only(&docs, "PersistentVolumeClaim");
    assert_eq!(job["apiVersion"], "batch/v1");
    let spec = &job["spec"];
    assert_eq!(spec["completionMode"], "Indexed");
    let n = spec["completions"].as_u64().expect("spec.completions");
    let parallelism = spec["parallelism"].as_u64().expect("spec.parallelism");
    assert!(
        n >= 1 && (1..=n).contains(&parallelism),
        "{n} {parallelism}"
    );
    assert!(
        spec["backoffLimitPerIndex"].is_u64() || spec["backoffLimit"].is_u64(),
        "a retry limit"
    );
    let pod = &spec["template"]["spec"];
    assert_eq!(pod["restartPolicy"], "Never");

    // The one container that runs `epochlab soak`.
    let containers = pod["containers"].as_array().expect("containers");
    let soak: Vec<&Value> = containers
        .iter()
        .filter(|c| c["args"][0] == "soak")
        .collect();
    assert_eq!(soak.len(), 1, "one container runs `soak`");
    let c = soak[0];
    let name = c["name"].as_str().unwrap();
    let args: Vec<&str> = c["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().expect("every arg is a string"))
        .collect();
    let env: Vec<&Value> = c["env"]
        .as_array()
        .map_or(Vec::new(), |e| e.iter().collect());
    let env_var = |var: &str| env.iter().copied().find(|e| e["name"] == var);

    // Shard K/N: K the completion index, N the Job's completions.
    assert_eq!(flag(&args, "--shard"), format!("$({INDEX_VAR})/{n}"));
    if let Some(index) = env_var(INDEX_VAR) {
        assert_eq!(
            index["valueFrom"]["fieldRef"]["fieldPath"],
            INDEX_ANNOTATION
        );
    }
    // Every $(VAR) is defined (Kubernetes would pass an undefined one on as it is); Indexed Jobs define the
    // completion index themselves.
    for arg in &args {
        for var in references(arg) {
            assert!(
                var == INDEX_VAR || env_var(var).is_some(),
                "`{arg}` refers to $({var}), which the container does not define"
            );
        }
    }
    let seeds = flag(&args, "--seeds");
    let (a, b) = seeds.split_once("..").expect("--seeds A..B");
    let (a, b): (u64, u64) = (a.parse().unwrap(), b.parse().unwrap());
    assert!(a < b && b - a >= n, "every shard of {seeds} has a seed");

    // Worker threads: the CPU limit, whole.
    let limits = &c["resources"]["limits"];
    assert!(c["resources"]["requests"]["cpu"].is_string() && limits["memory"].is_string());
    let cpu = limits["cpu"].as_str().expect("a CPU limit");
    let jobs = flag(&args, "--jobs");
    match references(jobs).as_slice() {
        [var] => {
            assert_eq!(jobs, format!("$({var})"));
            let field = &env_var(var).expect("--jobs's variable")["valueFrom"]["resourceFieldRef"];
            assert_eq!(field["resource"], "limits.cpu");
            assert!(field["containerName"].is_null() || field["containerName"] == name);
        }
        _ => {
            let jobs: f64 = jobs.parse().expect("--jobs N");
            let cores: f64 = cpu.strip_suffix('m').map_or_else(
                || cpu.parse().unwrap(),
                |m| m.parse::<f64>().unwrap() / 1000.0,
            );
            assert!(
                jobs <= cores.ceil(),
                "--jobs {jobs} within the CPU limit {cpu}"
            );
        }
    }

    // Results: a file per shard, under a writable mount of the claim defined beside the Job.
    let results = flag(&args, "--results");
    assert!(
        results.contains(&format!("$({INDEX_VAR})")),
        "each shard has its own results file: {results}"
    );
    let mounts = c["volumeMounts"].as_array().expect("volumeMounts");
    let mount = mounts
        .iter()
        .find(|m| {
            let dir = m["mountPath"].as_str().unwrap().trim_end_matches('/');
            results.starts_with(&format!("{dir}/"))
        })
        .unwrap_or_else(|| panic!("{results} is on no mounted volume"));
    assert_ne!(mount["readOnly"], true);
    let volume = pod["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == mount["name"])
        .expect("the results mount's volume");
    assert_eq!(
        volume["persistentVolumeClaim"]["claimName"],
        claim["metadata"]["name"]
    );

    // Prometheus finds the metrics the pod serves.
    let annotations = &spec["template"]["metadata"]["annotations"];
    assert_eq!(annotations["prometheus.io/scrape"], "true");
    assert_eq!(annotations["prometheus.io/path"], "/metrics");
    let port = flag(&args, "--metrics-addr")
        .rsplit_once(':')
        .expect("--metrics-addr HOST:PORT")
        .1;
    assert_eq!(annotations["prometheus.io/port"], port);
    let ports = c["ports"].as_array().expect("ports");
    assert!(
        ports
            .iter()
            .any(|p| p["containerPort"].as_u64() == port.parse().ok()),
        "the container declares port {port}"
    );
    assert!(flag(&args, "--otlp-endpoint").starts_with("http"));

    // The failure policy names this container, and follows soak's exit status: 2 bad input fails the Job,
    // 1 (a seed failed; the shard's results are complete) fails the index without a retry.
    let rules = spec["podFailurePolicy"]["rules"].as_array().unwrap();
    let action_for = |code: u64| {
        rules.iter().find_map(|r| {
            let on = &r["onExitCodes"];
            let hit = on["operator"] == "In"
                && on["values"]
                    .as_array()?
                    .iter()
                    .any(|v| v.as_u64() == Some(code));
            hit.then(|| r["action"].as_str().unwrap())
        })
    };
    assert_eq!(action_for(2), Some("FailJob"));
    assert_eq!(action_for(1), Some("FailIndex"));
    for r in rules {
        let container = &r["onExitCodes"]["containerName"];
        assert!(container.is_null() || container == name, "{r}");
    }
}
