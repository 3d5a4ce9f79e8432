//! A task that panics during a file's run ends the run at once: `failed`, kind `panic`, with the message and
//! the location (never `stuck`, a hang or a lost task).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use epochlab_sim::{Cluster, ClusterHook, Outcome, ReproHooks};
use epochlab_simulation::{SltParams, run_file};

#[test]
fn a_task_panic_fails_a_file_run_with_kind_panic() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/slt/basic.slt");
    let hook: ClusterHook = Box::new(|_cluster: Arc<Cluster>| {
        tokio::spawn(async {
            tokio::time::sleep(Duration::from_millis(300)).await;
            panic!("injected into an slt run");
        });
    });
    let hooks = ReproHooks {
        on_cluster: Some(hook),
        ..ReproHooks::default()
    };
    let out = run_file(&file, &SltParams::default(), hooks).unwrap_or_else(|e| panic!("{e}"));
    let r = out.value;
    assert_eq!(r.outcome, Outcome::Failed, "{:?}", r.error);
    assert_eq!(r.kind, Some("panic"));
    let p = r.panic.clone().expect("the report carries the panic");
    assert_eq!(p.message, "injected into an slt run");
    assert!(p.location.contains("slt_panic.rs:"), "{p:?}");
    assert!(out.virtual_elapsed < p.at + Duration::from_secs(1));
    assert!(
        r.signature()
            .is_some_and(|s| s.starts_with("panic: task panicked at ")),
        "{:?}",
        r.signature()
    );
}
