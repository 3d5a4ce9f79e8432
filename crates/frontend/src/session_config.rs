//! A session's variables (`SET`, `SHOW`, `RESET`), with RisingWave's names and defaults
//! (`src/common/src/session_config/mod.rs` at f21fb9b7915).
//!
//! Every variable RisingWave has is accepted and kept as its canonical text. The ones that change what the
//! engine does are read through the typed getters below, each by the one piece of code it governs:
//! `rw_implicit_flush` (the DML path), `background_ddl`, `streaming_rate_limit` and `streaming_parallelism`
//! (a new job's options), `search_path` (name resolution), `streaming_enable_arrangement_backfill` (the scan
//! type the stream planner gives a new job: arrangement backfill when on, no-shuffle backfill when off, the
//! default at f21fb9b7915, as RisingWave's `gen_optimized_stream_plan` decides). The rest change
//! nothing here (`query_mode`, `timezone`, `rw_streaming_enable_delta_join`, ...): `SET` stores them and
//! `SHOW` prints them back.

use std::collections::BTreeMap;

use epochlab_common::plan::StreamScanType;

/// What a `SET` can fail with (RisingWave's `SessionConfigError`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SessionConfigError {
    #[error("Invalid value `{value}` for `{entry}`: {reason}")]
    InvalidValue {
        entry: &'static str,
        value: String,
        reason: &'static str,
    },
    #[error("Unrecognized config entry `{0}`")]
    UnrecognizedEntry(String),
}

/// How a variable's text is checked and canonicalized.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Bool,
    Int,
    /// `0` (or `default`) is unset (RisingWave's `ConfigNonZeroU64`).
    NonZero,
    Text,
    /// A zone of the IANA database, named in any case (RisingWave's check of `TimeZone`).
    TimeZone,
    /// One of the words, case-insensitively.
    OneOf(&'static [&'static str]),
    SearchPath,
}

struct Param {
    name: &'static str,
    kind: Kind,
    default: &'static str,
}

const fn p(name: &'static str, kind: Kind, default: &'static str) -> Param {
    Param {
        name,
        kind,
        default,
    }
}

/// Every variable, by its SQL name (RisingWave's `rename`s applied).
const PARAMS: &[Param] = &[
    p("rw_implicit_flush", Kind::Bool, "false"),
    p("create_compaction_group_for_mv", Kind::Bool, "false"),
    p(
        "query_mode",
        Kind::OneOf(&["auto", "local", "distributed"]),
        "auto",
    ),
    p("extra_float_digits", Kind::Int, "1"),
    p("application_name", Kind::Text, ""),
    p("datestyle", Kind::Text, ""),
    p("rw_batch_enable_lookup_join", Kind::Bool, "true"),
    p("rw_batch_enable_sort_agg", Kind::Bool, "true"),
    p("batch_enable_distributed_dml", Kind::Bool, "false"),
    p("max_split_range_gap", Kind::Int, "8"),
    p("search_path", Kind::SearchPath, "\"$user\", public"),
    p(
        "visibility_mode",
        Kind::OneOf(&["default", "all", "checkpoint"]),
        "default",
    ),
    p(
        "transaction_isolation",
        Kind::OneOf(&[
            "read committed",
            "read uncommitted",
            "repeatable read",
            "serializable",
        ]),
        "read committed",
    ),
    p("query_epoch", Kind::NonZero, "0"),
    p("timezone", Kind::TimeZone, "UTC"),
    p("streaming_parallelism", Kind::NonZero, "0"),
    p("rw_streaming_enable_delta_join", Kind::Bool, "false"),
    p("rw_streaming_enable_bushy_join", Kind::Bool, "true"),
    p("streaming_enable_arrangement_backfill", Kind::Bool, "false"),
    p(
        "rw_streaming_allow_jsonb_in_stream_key",
        Kind::Bool,
        "false",
    ),
    p("rw_enable_join_ordering", Kind::Bool, "true"),
    p("rw_enable_two_phase_agg", Kind::Bool, "true"),
    p("rw_force_two_phase_agg", Kind::Bool, "false"),
    p("rw_enable_share_plan", Kind::Bool, "true"),
    p("rw_force_split_distinct_agg", Kind::Bool, "false"),
    p("intervalstyle", Kind::Text, ""),
    p("batch_parallelism", Kind::NonZero, "0"),
    p("server_version", Kind::Text, "9.5.0"),
    p("server_version_num", Kind::Int, "90500"),
    p("client_min_messages", Kind::Text, "notice"),
    p("client_encoding", Kind::Text, "UTF8"),
    p(
        "sink_decouple",
        Kind::OneOf(&["default", "enable", "disable", "true", "false"]),
        "default",
    ),
    p("synchronize_seqscans", Kind::Bool, "false"),
    p("statement_timeout", Kind::Int, "0"),
    p("idle_in_transaction_session_timeout", Kind::Int, "60000"),
    p("lock_timeout", Kind::Int, "0"),
    p("row_security", Kind::Bool, "true"),
    p("standard_conforming_strings", Kind::Text, "on"),
    p("streaming_rate_limit", Kind::NonZero, "0"),
    p(
        "rw_streaming_over_window_cache_policy",
        Kind::OneOf(&["full", "recent", "recent_first_n", "recent_last_n"]),
        "full",
    ),
    p("background_ddl", Kind::Bool, "false"),
    p("server_encoding", Kind::Text, "UTF8"),
    p("bytea_output", Kind::Text, "hex"),
    // epochlab's own: the backfill's rate limit, taking precedence over `streaming_rate_limit` (RisingWave
    // added it after f21fb9b7915; the kill runner's files set it).
    p("backfill_rate_limit", Kind::NonZero, "0"),
];

/// Other names RisingWave's `SET` takes for a variable. `streaming_enable_arrangement_backfill` has none at
/// f21fb9b7915: the simulator's `SET enable_arrangement_backfill = true` would be refused (it never ran in an
/// slt session, see `epochlab_simulation::ci`).
fn canonical_name(name: &str) -> &str {
    match name {
        "implicit_flush" => "rw_implicit_flush",
        "streaming_enable_delta_join" => "rw_streaming_enable_delta_join",
        "time zone" => "timezone",
        other => other,
    }
}

fn param(name: &str) -> Result<&'static Param, SessionConfigError> {
    let name = canonical_name(name);
    PARAMS
        .iter()
        .find(|p| p.name == name)
        .ok_or_else(|| SessionConfigError::UnrecognizedEntry(name.to_string()))
}

fn parse_bool(v: &str) -> Option<bool> {
    match v.to_ascii_lowercase().as_str() {
        "true" | "on" | "t" | "1" | "yes" => Some(true),
        "false" | "off" | "f" | "0" | "no" => Some(false),
        _ => None,
    }
}

/// `value` checked and made canonical for `p`.
fn canonical(p: &'static Param, value: &[String]) -> Result<String, SessionConfigError> {
    let invalid = |reason| SessionConfigError::InvalidValue {
        entry: p.name,
        value: value.join(", "),
        reason,
    };
    if let Kind::SearchPath = p.kind {
        return Ok(value.join(", "));
    }
    let [v] = value else {
        return Err(invalid("expects one value"));
    };
    match p.kind {
        Kind::Bool => parse_bool(v)
            .map(|b| b.to_string())
            .ok_or_else(|| invalid("expects a boolean")),
        Kind::Int => v
            .trim()
            .parse::<i64>()
            .map(|n| n.to_string())
            .map_err(|_| invalid("expects an integer")),
        Kind::NonZero => {
            if v.eq_ignore_ascii_case("default") || v.eq_ignore_ascii_case("auto") {
                return Ok("0".into());
            }
            v.trim()
                .parse::<u64>()
                .map(|n| n.to_string())
                .map_err(|_| invalid("expects a non-negative integer"))
        }
        Kind::OneOf(words) => words
            .iter()
            .find(|w| w.eq_ignore_ascii_case(v))
            .map(|w| w.to_string())
            .ok_or_else(|| invalid("not one of the values it takes")),
        Kind::TimeZone => epochlab_expr::scalar::timestamptz::lookup_time_zone(v)
            .map(|_| v.clone())
            .map_err(|_| invalid("is not a time zone")),
        Kind::Text | Kind::SearchPath => Ok(v.clone()),
    }
}

/// A session's variables, each as its canonical text.
#[derive(Clone, Debug, Default)]
pub struct SessionConfig {
    /// Variables set in this session; the others are at their defaults.
    set: BTreeMap<&'static str, String>,
}

impl SessionConfig {
    pub fn new() -> Self {
        Self::default()
    }

    /// `SET name = values` (several for a list: `SET search_path TO a, b`); `DEFAULT` resets.
    pub fn set(&mut self, name: &str, values: &[String]) -> Result<(), SessionConfigError> {
        let p = param(name)?;
        if let [v] = values
            && v.eq_ignore_ascii_case("default")
            && !matches!(p.kind, Kind::NonZero)
        {
            self.set.remove(p.name);
            return Ok(());
        }
        let v = canonical(p, values)?;
        self.set.insert(p.name, v);
        self.apply_setter(p.name);
        Ok(())
    }

    /// RisingWave's setters that change another variable: forcing two-phase aggregation enables it.
    fn apply_setter(&mut self, name: &str) {
        if name == "rw_force_two_phase_agg" && self.text(param(name).expect("known")) == "true" {
            self.set
                .insert("rw_enable_two_phase_agg", "true".to_string());
        }
    }

    /// `RESET name`.
    pub fn reset(&mut self, name: &str) -> Result<(), SessionConfigError> {
        let p = param(name)?;
        self.set.remove(p.name);
        Ok(())
    }

    /// `SHOW name`: the text.
    pub fn get(&self, name: &str) -> Result<String, SessionConfigError> {
        let p = param(name)?;
        Ok(self.text(p))
    }

    fn text(&self, p: &'static Param) -> String {
        self.set
            .get(p.name)
            .cloned()
            .unwrap_or_else(|| p.default.to_string())
    }

    /// `SHOW ALL`: every variable's name and value.
    pub fn all(&self) -> Vec<(&'static str, String)> {
        PARAMS.iter().map(|p| (p.name, self.text(p))).collect()
    }

    fn value(&self, name: &'static str) -> String {
        let p = param(name).expect("a known parameter");
        self.text(p)
    }

    fn flag(&self, name: &'static str) -> bool {
        parse_bool(&self.value(name)).expect("stored canonical")
    }

    fn non_zero(&self, name: &'static str) -> Option<u64> {
        let n: u64 = self.value(name).parse().expect("stored canonical");
        (n > 0).then_some(n)
    }

    pub fn implicit_flush(&self) -> bool {
        self.flag("rw_implicit_flush")
    }

    /// `TimeZone`: the zone timestamptz values are read and shown in.
    pub fn timezone(&self) -> String {
        self.value("timezone")
    }

    pub fn background_ddl(&self) -> bool {
        self.flag("background_ddl")
    }

    /// The rate limit of a new job's backfill: `backfill_rate_limit`, else `streaming_rate_limit`.
    pub fn streaming_rate_limit(&self) -> Option<u32> {
        self.non_zero("backfill_rate_limit")
            .or_else(|| self.non_zero("streaming_rate_limit"))
            .map(|n| u32::try_from(n).unwrap_or(u32::MAX))
    }

    pub fn streaming_parallelism(&self) -> Option<usize> {
        self.non_zero("streaming_parallelism")
            .map(|n| usize::try_from(n).unwrap_or(usize::MAX))
    }

    pub fn streaming_enable_arrangement_backfill(&self) -> bool {
        self.flag("streaming_enable_arrangement_backfill")
    }

    /// How a new job's table scans backfill (RisingWave's `gen_optimized_stream_plan` at f21fb9b7915).
    pub fn stream_scan_type(&self) -> StreamScanType {
        if self.streaming_enable_arrangement_backfill() {
            StreamScanType::ArrangementBackfill
        } else {
            StreamScanType::Backfill
        }
    }

    pub fn streaming_enable_delta_join(&self) -> bool {
        self.flag("rw_streaming_enable_delta_join")
    }

    /// The schemas of `search_path`, in order (`"$user"` unquoted as `$user`).
    pub fn search_path(&self) -> Vec<String> {
        self.value("search_path")
            .split(',')
            .map(|s| s.trim().trim_matches('"').to_string())
            .filter(|s| !s.is_empty())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn defaults_set_reset_and_show() {
        let mut c = SessionConfig::new();
        assert_eq!(c.get("search_path").unwrap(), "\"$user\", public");
        assert_eq!(c.search_path(), ["$user", "public"]);
        c.set("search_path", &v(&["a", "b"])).unwrap();
        assert_eq!(c.get("search_path").unwrap(), "a, b");
        assert_eq!(c.search_path(), ["a", "b"]);
        c.set("RW_IMPLICIT_FLUSH".to_lowercase().as_str(), &v(&["true"]))
            .unwrap();
        assert!(c.implicit_flush());
        c.reset("rw_implicit_flush").unwrap();
        assert!(!c.implicit_flush());
        c.set("streaming_parallelism", &v(&["2"])).unwrap();
        assert_eq!(c.streaming_parallelism(), Some(2));
        c.set("streaming_parallelism", &v(&["default"])).unwrap();
        assert_eq!(c.streaming_parallelism(), None);
        c.set("query_mode", &v(&["LOCAL"])).unwrap();
        assert_eq!(c.get("query_mode").unwrap(), "local");
    }

    #[test]
    fn unknown_and_invalid_are_risingwave_errors() {
        let mut c = SessionConfig::new();
        assert_eq!(
            c.set("no_such", &v(&["1"])).unwrap_err().to_string(),
            "Unrecognized config entry `no_such`"
        );
        assert!(matches!(
            c.set("background_ddl", &v(&["maybe"])),
            Err(SessionConfigError::InvalidValue { .. })
        ));
        assert!(c.get("no_such").is_err());
    }
}
