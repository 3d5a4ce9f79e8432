//! `jsonb`: a JSON value. Its text is RisingWave's: object keys in byte order (not PostgreSQL's shorter-key
//! first: RisingWave's `jsonb.slt.part` expects `{"one": 1, "three": true, "two": "two"}`; the last
//! duplicate wins), `": "` and `", "` separators. Equality, order and hash are by that text, as RisingWave
//! compares jsonb by its string form.

use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};

/// RisingWave's `JsonbVal`.
#[derive(Debug, Clone)]
pub struct JsonbVal(serde_json::Value);

impl JsonbVal {
    pub fn new(value: serde_json::Value) -> Self {
        Self(value)
    }

    pub fn value(&self) -> &serde_json::Value {
        &self.0
    }

    pub fn into_value(self) -> serde_json::Value {
        self.0
    }

    /// The canonical text, as RisingWave prints the value.
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        write_value(&self.0, &mut s).expect("writing to a String cannot fail");
        s
    }
}

fn write_value(v: &serde_json::Value, f: &mut impl fmt::Write) -> fmt::Result {
    use serde_json::Value;
    match v {
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => write!(f, "{v}"),
        Value::Array(items) => {
            f.write_char('[')?;
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write_value(item, f)?;
            }
            f.write_char(']')
        }
        Value::Object(map) => {
            // The map is ordered by key bytes already (serde_json without `preserve_order`).
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            f.write_char('{')?;
            for (i, (k, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write!(f, "{}: ", serde_json::Value::String(k.clone()))?;
                write_value(item, f)?;
            }
            f.write_char('}')
        }
    }
}

impl fmt::Display for JsonbVal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_value(&self.0, f)
    }
}

impl PartialEq for JsonbVal {
    fn eq(&self, other: &Self) -> bool {
        self.to_text() == other.to_text()
    }
}

impl Eq for JsonbVal {}

impl PartialOrd for JsonbVal {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for JsonbVal {
    fn cmp(&self, other: &Self) -> Ordering {
        self.to_text().cmp(&other.to_text())
    }
}

impl Hash for JsonbVal {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.to_text().hash(state);
    }
}

impl From<serde_json::Value> for JsonbVal {
    fn from(v: serde_json::Value) -> Self {
        Self(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_as_risingwave_prints_it() {
        // e2e_test/batch/types/jsonb.slt.part: `'{"a":[2, true, "", {}]}'::jsonb`.
        let v: serde_json::Value = serde_json::from_str(r#"{"a":[2, true, "", {}]}"#).unwrap();
        assert_eq!(JsonbVal::new(v).to_text(), r#"{"a": [2, true, "", {}]}"#);
        // jsonb.slt.part: keys in byte order, unlike PostgreSQL.
        let text = "{\n\"one\": 1,\n\"two\":\"two\",\n\"three\":\ntrue}";
        let v: serde_json::Value = serde_json::from_str(text).unwrap();
        assert_eq!(
            JsonbVal::new(v).to_text(),
            r#"{"one": 1, "three": true, "two": "two"}"#
        );
        let v: serde_json::Value = serde_json::from_str(r#"{"a":"x\"y","a":1}"#).unwrap();
        assert_eq!(JsonbVal::new(v).to_text(), r#"{"a": 1}"#);
    }
}
