//! What every epochlab benchmark reports: each figure beside the baseline measured in the same run and their
//! ratio, printed and written as JSON to `target/bench/<bench>.json`. A run first reads the file an earlier run
//! wrote there and prints each figure's ratio's change against it, so a later run is compared with an earlier
//! one without a second tool. Speed targets live here, in ratios against a baseline of the same run, never in
//! timed tests.
//!
//! The file: `{"bench": NAME, "figures": [{"name", "unit", "value", "baseline", "baseline_value", "ratio",
//! "earlier_ratio"}]}`, where `earlier_ratio` is the ratio the run before wrote for the same figure (`null` when
//! it had none), so the file alone shows this run beside the previous one.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

/// One measured figure and the baseline it is judged against.
#[derive(Clone, Debug, PartialEq)]
pub struct Figure {
    /// What was measured (`arrangement backfill`).
    pub name: String,
    /// The unit of both values (`rows/s`, `ms`).
    pub unit: String,
    pub value: f64,
    /// What the baseline is (`scan + decode from a BTreeMap`).
    pub baseline: String,
    pub baseline_value: f64,
}

impl Figure {
    /// `value / baseline_value`: above 1 is faster for a rate, slower for a time.
    pub fn ratio(&self) -> f64 {
        self.value / self.baseline_value
    }

    fn to_json(&self) -> Value {
        json!({
            "name": self.name,
            "unit": self.unit,
            "value": self.value,
            "baseline": self.baseline,
            "baseline_value": self.baseline_value,
            "ratio": self.ratio(),
        })
    }
}

/// A benchmark's figures, in the order measured.
#[derive(Debug)]
pub struct Report {
    bench: String,
    figures: Vec<Figure>,
}

impl Report {
    /// The report of the benchmark `bench` (its file is `target/bench/<bench>.json`).
    pub fn new(bench: &str) -> Self {
        assert!(
            !bench.is_empty() && bench.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'),
            "a bench name is a file name: `{bench}`"
        );
        Self {
            bench: bench.to_string(),
            figures: Vec::new(),
        }
    }

    /// Adds a figure; returns its ratio to the baseline.
    pub fn add(&mut self, figure: Figure) -> f64 {
        assert!(figure.baseline_value > 0.0, "a baseline of 0: {figure:?}");
        let ratio = figure.ratio();
        self.figures.push(figure);
        ratio
    }

    pub fn figures(&self) -> &[Figure] {
        &self.figures
    }

    pub fn to_json(&self) -> Value {
        self.to_json_beside(None)
    }

    /// The report, each figure with `earlier_ratio` from `earlier` (an earlier run's file) when given.
    pub fn to_json_beside(&self, earlier: Option<&Value>) -> Value {
        let figures: Vec<Value> = self
            .figures
            .iter()
            .map(|f| {
                let mut v = f.to_json();
                if let Some(earlier) = earlier {
                    v["earlier_ratio"] = json!(earlier_ratio(earlier, &f.name));
                }
                v
            })
            .collect();
        json!({ "bench": self.bench, "figures": figures })
    }

    /// The lines comparing each figure's ratio with `earlier` (a file an earlier run wrote).
    pub fn compare(&self, earlier: &Value) -> Vec<String> {
        self.figures
            .iter()
            .map(|f| match earlier_ratio(earlier, &f.name) {
                Some(before) => format!(
                    "  {}: ratio {:.3}, earlier run {:.3} ({:+.1}%)",
                    f.name,
                    f.ratio(),
                    before,
                    (f.ratio() / before - 1.0) * 100.0
                ),
                None => format!(
                    "  {}: ratio {:.3}, not in the earlier run",
                    f.name,
                    f.ratio()
                ),
            })
            .collect()
    }

    /// Prints the comparison with the earlier run's file, if there is one, and writes this run's over it.
    /// A file that cannot be written is a warning on stderr: the figures were printed already.
    pub fn finish(self) {
        let path = bench_dir().join(format!("{}.json", self.bench));
        let earlier = read_json(&path);
        if let Some(earlier) = &earlier {
            println!("compared with the earlier run ({}):", path.display());
            for line in self.compare(earlier) {
                println!("{line}");
            }
        }
        let text = format!("{:#}\n", self.to_json_beside(earlier.as_ref()));
        let written =
            std::fs::create_dir_all(bench_dir()).and_then(|()| std::fs::write(&path, text));
        match written {
            Ok(()) => println!("written: {}", path.display()),
            Err(e) => eprintln!("bench: cannot write {}: {e}", path.display()),
        }
    }
}

/// The ratio of the figure `name` in an earlier run's file.
fn earlier_ratio(earlier: &Value, name: &str) -> Option<f64> {
    earlier["figures"]
        .as_array()?
        .iter()
        .find(|f| f["name"] == name)?["ratio"]
        .as_f64()
}

fn read_json(path: &Path) -> Option<Value> {
    let text = std::fs::read_to_string(path).ok()?;
    serde_json::from_str(&text).ok()
}

/// `$EPOCHLAB_BENCH_DIR`, else `bench/` in the target directory (`$CARGO_TARGET_DIR`, else the workspace's
/// `target/`).
pub fn bench_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("EPOCHLAB_BENCH_DIR") {
        return PathBuf::from(dir);
    }
    let target = std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from);
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).ancestors().nth(2);
    target
        .or_else(|| workspace.map(|w| w.join("target")))
        .unwrap_or_else(|| PathBuf::from("target"))
        .join("bench")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figure(name: &str, value: f64, base: f64) -> Figure {
        Figure {
            name: name.into(),
            unit: "rows/s".into(),
            value,
            baseline: "a BTreeMap".into(),
            baseline_value: base,
        }
    }

    #[test]
    fn a_report_keeps_each_figure_beside_its_baseline_and_compares_with_an_earlier_one() {
        let mut earlier = Report::new("backfill");
        earlier.add(figure("arrangement backfill", 100.0, 400.0));
        let mut now = Report::new("backfill");
        assert_eq!(now.add(figure("arrangement backfill", 150.0, 500.0)), 0.3);
        now.add(figure("new figure", 1.0, 2.0));
        let json = now.to_json();
        assert_eq!(json["figures"][0]["ratio"], 0.3);
        assert_eq!(json["figures"][0]["baseline_value"], 500.0);
        let beside = now.to_json_beside(Some(&earlier.to_json()));
        assert_eq!(beside["figures"][0]["earlier_ratio"], 0.25);
        assert_eq!(beside["figures"][1]["earlier_ratio"], Value::Null);
        let lines = now.compare(&earlier.to_json());
        assert_eq!(
            lines,
            [
                "  arrangement backfill: ratio 0.300, earlier run 0.250 (+20.0%)",
                "  new figure: ratio 0.500, not in the earlier run",
            ]
        );
    }

    #[test]
    fn finish_writes_the_file_a_later_run_reads() {
        let dir = std::env::temp_dir().join(format!("epochlab-bench-{}", std::process::id()));
        let path = dir.join("unit.json");
        let mut r = Report::new("unit");
        r.add(figure("x", 2.0, 4.0));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(&path, format!("{:#}\n", r.to_json())).unwrap();
        let back = read_json(&path).unwrap();
        assert_eq!(earlier_ratio(&back, "x"), Some(0.5));
        assert_eq!(earlier_ratio(&back, "y"), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    #[should_panic(expected = "a bench name is a file name")]
    fn a_bench_name_is_a_file_name() {
        Report::new("../x");
    }
}
