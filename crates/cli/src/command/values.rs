//! The value parsers of the command line: each value's type and range, and a typed error that reads after the
//! flag's name (`--vnodes` + `must be in 1..=32768, not 0`); [`super::error`] puts the two together.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use epochlab_sim::{BugId, Mode};

/// An inclusive range of a numeric flag; its help states it (a test checks each).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Range {
    pub lo: u64,
    pub hi: u64,
}

pub const SEED: Range = Range {
    lo: 0,
    hi: u64::MAX,
};
pub const ROWS: Range = Range {
    lo: 1,
    hi: 10_000_000,
};
pub const VNODES: Range = Range { lo: 1, hi: 32_768 };
pub const PARALLELISM: Range = Range { lo: 1, hi: 256 };
pub const COMPUTE_NODES: Range = Range { lo: 1, hi: 64 };
/// Metas of a cluster (as a plan's `PlanCluster::meta_nodes`).
pub const META_NODES: Range = Range { lo: 1, hi: 16 };
pub const RATE_LIMIT: Range = Range {
    lo: 1,
    hi: 1_000_000,
};
pub const BARRIER_LATENCY_MS: Range = Range { lo: 0, hi: 60_000 };
pub const CHECKPOINT_FREQUENCY: Range = Range { lo: 1, hi: 10_000 };
pub const SERVE_FOR: Range = Range { lo: 0, hi: 86_400 };
pub const METRICS_INTERVAL_MS: Range = Range {
    lo: 10,
    hi: 3_600_000,
};
pub const JOBS: Range = Range { lo: 1, hi: 256 };
pub const DURATION: Range = Range {
    lo: 1,
    hi: 30 * 86_400,
};

/// A value its flag does not take; displayed after the flag's name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValueError {
    #[error("needs a value")]
    Empty,
    #[error("takes a whole number in {}..={}, not `{value}`", range.lo, range.hi)]
    NotANumber { range: Range, value: String },
    #[error("must be in {}..={}, not {value}", range.lo, range.hi)]
    OutOfRange { range: Range, value: u64 },
    #[error("takes HOST:PORT, such as {example}, not `{value}`")]
    NotAnAddress {
        example: &'static str,
        value: String,
    },
    #[error("takes a URL such as http://127.0.0.1:4317, not `{0}`")]
    NotAUrl(String),
    #[error(
        "takes a number from {lo} to {hi} (simulated seconds per wall-clock second; 1 is real time) or off, \
         not `{value}`",
        lo = epochlab_telemetry::MIN_PACE,
        hi = epochlab_telemetry::MAX_PACE
    )]
    NotAPace { value: String },
    #[error(
        "takes A..B, whole numbers in 0..=18446744073709551615 with A < B (seeds A, A+1, ..., B-1), not `{0}`"
    )]
    NotASeedRange(String),
    #[error("takes K/N with K < N, not `{0}`")]
    NotAShard(String),
    #[error("takes a probability from 0 to 1, such as 0.5, not `{0}`")]
    NotAProbability(String),
    #[error(
        "takes one of {points}, not `{0}`",
        points = epochlab_meta::CrashPoint::ALL.map(epochlab_meta::CrashPoint::as_str).join(", ")
    )]
    NotACrashPoint(String),
}

/// A whole number of `T` in `range`.
pub fn number<T: TryFrom<u64> + Clone + Send + Sync + 'static>(
    range: Range,
) -> impl Fn(&str) -> Result<T, ValueError> + Clone + Send + Sync + 'static {
    move |value: &str| {
        let n: u64 = value.parse().map_err(|_| ValueError::NotANumber {
            range,
            value: value.to_string(),
        })?;
        let out = ValueError::OutOfRange { range, value: n };
        if n < range.lo || n > range.hi {
            return Err(out);
        }
        T::try_from(n).map_err(|_| out)
    }
}

/// A path; empty is no path.
pub fn path(value: &str) -> Result<PathBuf, ValueError> {
    match value.is_empty() {
        true => Err(ValueError::Empty),
        false => Ok(PathBuf::from(value)),
    }
}

/// A non-empty text (a glob, a pattern).
pub fn text(value: &str) -> Result<String, ValueError> {
    match value.is_empty() {
        true => Err(ValueError::Empty),
        false => Ok(value.to_string()),
    }
}

/// `HOST:PORT` of a metrics endpoint.
pub fn metrics_addr(value: &str) -> Result<SocketAddr, ValueError> {
    address(value, "127.0.0.1:9464")
}

/// `HOST:PORT` of the embedded Jaeger's UI.
pub fn jaeger_addr(value: &str) -> Result<SocketAddr, ValueError> {
    address(value, "127.0.0.1:16686")
}

fn address(value: &str, example: &'static str) -> Result<SocketAddr, ValueError> {
    value.parse().map_err(|_| ValueError::NotAnAddress {
        example,
        value: value.to_string(),
    })
}

/// An OTLP/gRPC collector's URL.
pub fn url(value: &str) -> Result<String, ValueError> {
    let rest = value
        .strip_prefix("http://")
        .or_else(|| value.strip_prefix("https://"));
    match rest {
        Some(host) if !host.is_empty() => Ok(value.to_string()),
        _ => Err(ValueError::NotAUrl(value.to_string())),
    }
}

/// What `--pace` says.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum PaceFlag {
    /// Not given: paced at 1 with `--metrics-addr`, else not at all.
    #[default]
    Default,
    Off,
    /// Simulated seconds per wall-clock second.
    Times(f64),
}

pub fn pace(value: &str) -> Result<PaceFlag, ValueError> {
    use epochlab_telemetry::{MAX_PACE, MIN_PACE};
    if value == "off" {
        return Ok(PaceFlag::Off);
    }
    match value.parse::<f64>() {
        Ok(x) if (MIN_PACE..=MAX_PACE).contains(&x) => Ok(PaceFlag::Times(x)),
        _ => Err(ValueError::NotAPace {
            value: value.to_string(),
        }),
    }
}

/// `A..B`, half-open, with `A < B`.
pub fn seed_range(v: &str) -> Result<std::ops::Range<u64>, ValueError> {
    let bad = || ValueError::NotASeedRange(v.to_string());
    let (a, b) = v.split_once("..").ok_or_else(bad)?;
    let (a, b): (u64, u64) = (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?);
    if a >= b {
        return Err(bad());
    }
    Ok(a..b)
}

/// `K/N` with `K < N`.
pub fn shard(v: &str) -> Result<(u64, u64), ValueError> {
    let bad = || ValueError::NotAShard(v.to_string());
    let (k, n) = v.split_once('/').ok_or_else(bad)?;
    let (k, n): (u64, u64) = (k.parse().map_err(|_| bad())?, n.parse().map_err(|_| bad())?);
    if n == 0 || k >= n {
        return Err(bad());
    }
    Ok((k, n))
}

/// A crash point of meta's (`epochlab_meta::CrashPoint`), by its name.
pub fn crash_point(v: &str) -> Result<epochlab_meta::CrashPoint, ValueError> {
    v.parse()
        .map_err(|e: epochlab_meta::UnknownCrashPoint| ValueError::NotACrashPoint(e.0))
}

/// A probability in `0..=1`.
pub fn probability(v: &str) -> Result<f64, ValueError> {
    match v.parse::<f64>() {
        Ok(rate) if (0.0..=1.0).contains(&rate) => Ok(rate),
        _ => Err(ValueError::NotAProbability(v.to_string())),
    }
}

/// What `--bug` of `repro` selects: one bug of the catalogue, or every one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BugSel {
    One(BugId),
    All,
}

/// What `--mode` of `repro` selects: one mode, or every one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModeSel {
    One(Mode),
    All,
}

/// The bugs of the catalogue, each with its title as its help (`--bug`'s values and their completions).
fn bug_values() -> impl Iterator<Item = PossibleValue> {
    BugId::ALL
        .into_iter()
        .map(|b| PossibleValue::new(b.as_str()).help(b.title()))
}

/// The modes, each with the bugs that have it when not every bug does.
fn mode_values() -> impl Iterator<Item = PossibleValue> {
    Mode::ALL.into_iter().map(|m| {
        let bugs: Vec<&str> = BugId::ALL
            .into_iter()
            .filter(|b| b.modes().contains(&m))
            .map(BugId::as_str)
            .collect();
        let value = PossibleValue::new(m.as_str());
        match bugs.len() == BugId::ALL.len() {
            true => value,
            false => value.help(format!("only bug {}", bugs.join(", "))),
        }
    })
}

/// One bug of the catalogue.
pub fn bug() -> impl TypedValueParser<Value = BugId> {
    PossibleValuesParser::new(bug_values()).map(|s| s.parse().expect("a bug of the catalogue"))
}

/// One bug of the catalogue, or `all`.
pub fn bug_or_all() -> impl TypedValueParser<Value = BugSel> {
    let all = PossibleValue::new("all").help("every bug of the catalogue, one after the other");
    PossibleValuesParser::new(bug_values().chain([all])).map(|s| match s.as_str() {
        "all" => BugSel::All,
        one => BugSel::One(one.parse().expect("a bug of the catalogue")),
    })
}

/// One mode.
pub fn mode() -> impl TypedValueParser<Value = Mode> {
    PossibleValuesParser::new(mode_values()).map(|s| s.parse().expect("a mode"))
}

/// One mode, or `all`.
pub fn mode_or_all() -> impl TypedValueParser<Value = ModeSel> {
    let all = PossibleValue::new("all").help("each mode of each bug selected");
    PossibleValuesParser::new(mode_values().chain([all])).map(|s| match s.as_str() {
        "all" => ModeSel::All,
        one => ModeSel::One(one.parse().expect("a mode")),
    })
}

/// `on` or `off`.
pub fn on_off() -> impl TypedValueParser<Value = bool> {
    PossibleValuesParser::new(["on", "off"]).map(|s| s == "on")
}

/// `run` or `epoch`.
pub fn trace_per() -> impl TypedValueParser<Value = epochlab_sim::TracePer> {
    let values = epochlab_sim::TracePer::ALL.map(|t| t.as_str());
    PossibleValuesParser::new(values)
        .map(|s| epochlab_sim::TracePer::parse(&s).expect("a trace shape"))
}

/// `2024` or `latest`: RisingWave's sqllogictest runner of that era.
pub fn runner() -> impl TypedValueParser<Value = epochlab_simulation::RunnerEra> {
    use epochlab_simulation::RunnerEra;
    let values = [RunnerEra::R2024, RunnerEra::Latest].map(RunnerEra::as_str);
    PossibleValuesParser::new(values).map(|s| s.parse().expect("a runner era"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_keep_to_their_range() {
        let rows = number::<usize>(ROWS);
        assert_eq!(rows("1"), Ok(1));
        assert_eq!(rows("10000000"), Ok(10_000_000));
        assert_eq!(
            rows("0"),
            Err(ValueError::OutOfRange {
                range: ROWS,
                value: 0
            })
        );
        for junk in ["-1", "x", "1.5", "99999999999999999999999", ""] {
            assert!(
                matches!(rows(junk), Err(ValueError::NotANumber { .. })),
                "{junk}"
            );
        }
        assert_eq!(number::<u64>(SEED)(&u64::MAX.to_string()), Ok(u64::MAX));
    }

    #[test]
    fn ranges_shards_probabilities_and_paces() {
        assert_eq!(seed_range("5..9"), Ok(5..9));
        for bad in ["9..5", "5..5", "x", "1..", "..2"] {
            assert!(seed_range(bad).is_err(), "{bad}");
        }
        assert_eq!(shard("1/4"), Ok((1, 4)));
        for bad in ["4/4", "1/0", "1", "a/b"] {
            assert!(shard(bad).is_err(), "{bad}");
        }
        assert_eq!(probability("0.25"), Ok(0.25));
        assert!(probability("2").is_err() && probability("x").is_err());
        assert_eq!(pace("off"), Ok(PaceFlag::Off));
        assert_eq!(pace("0.01"), Ok(PaceFlag::Times(0.01)));
        for bad in ["0", "-1", "0.001", "100001", "x", "inf", "NaN", "", "1x"] {
            assert!(pace(bad).is_err(), "{bad}");
        }
        assert!(url("127.0.0.1:4317").is_err() && url("http://").is_err());
        assert!(url("http://x:4317").is_ok());
    }
}
