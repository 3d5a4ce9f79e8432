//! `epochlab completions SHELL`: the scripts, and bash's in a real bash.

use std::process::Command;

fn script(shell: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_epochlab"))
        .args(["completions", shell])
        .output()
        .expect("epochlab runs");
    assert_eq!(out.status.code(), Some(0), "{shell}");
    assert!(out.stderr.is_empty(), "{shell}");
    String::from_utf8(out.stdout).expect("UTF-8")
}

/// Sourced in bash, the script registers a completion spec for `epochlab`, and the completion of `--bug`'s
/// value is the catalogue's bugs.
#[test]
fn bash_sources_the_script_and_completes_the_catalogue() {
    let exe = env!("CARGO_BIN_EXE_epochlab");
    let program = format!(
        "set -e\n\
         source <('{exe}' completions bash)\n\
         complete -p epochlab\n\
         COMP_WORDS=(epochlab repro --bug '')\n\
         COMP_CWORD=3\n\
         COMP_LINE='epochlab repro --bug '\n\
         COMP_POINT=${{#COMP_LINE}}\n\
         _epochlab epochlab '' --bug\n\
         echo \"bugs: ${{COMPREPLY[*]}}\"\n"
    );
    let out = Command::new("bash")
        .args(["--norc", "--noprofile", "-c", &program])
        .output()
        .expect("bash runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    let mut lines = stdout.lines();
    let spec = lines.next().unwrap_or_default();
    assert!(spec.starts_with("complete "), "{spec}");
    assert!(spec.contains("-F _epochlab"), "{spec}");
    assert!(spec.ends_with(" epochlab"), "{spec}");
    let bugs = lines
        .find_map(|l| l.strip_prefix("bugs: "))
        .expect("the completions of --bug");
    let bugs: Vec<&str> = bugs.split_whitespace().collect();
    for id in [
        "14910",
        "22384",
        "16815",
        "19138",
        "15144",
        "reschedule-unpinned",
        "all",
    ] {
        assert!(bugs.contains(&id), "{id}: {bugs:?}");
    }
}

#[test]
fn zsh_and_fish_scripts_name_every_command() {
    for shell in ["zsh", "fish"] {
        let text = script(shell);
        for command in [
            "repro",
            "soak",
            "soak-report",
            "slt",
            "corpus",
            "bugs",
            "triage",
        ] {
            assert!(text.contains(command), "{shell}: {command}");
        }
    }
    let out = Command::new(env!("CARGO_BIN_EXE_epochlab"))
        .args(["completions", "tcsh"])
        .output()
        .expect("epochlab runs");
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(String::from_utf8_lossy(&out.stderr).lines().count(), 1);
}
