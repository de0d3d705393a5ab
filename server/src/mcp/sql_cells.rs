//! `run_sql` cells as every JSON client reads them exactly, and the schema
//! that says what a cell may be.
//!
//! SQLite integers are 64-bit, but a JSON reader that parses numbers as
//! doubles keeps integers exactly only up to 2^53 - 1: an epoch-ns `ts_ns`
//! such as `1764953063412657601` would read back as `...657700`. Integers
//! beyond that bound are sent as decimal strings; all others stay numbers.

use ingero_tools::sql::SqlResult;
use rmcp::handler::server::tool::schema_for_output;
use rmcp::model::JsonObject;
use serde_json::{json, Value};
use std::sync::Arc;

/// Largest integer a double holds exactly (2^53 - 1).
pub const MAX_EXACT_INT: i64 = (1 << 53) - 1;

/// Turns every integer cell beyond ±[`MAX_EXACT_INT`] into a decimal string.
pub fn make_exact(result: &mut SqlResult) {
    for cell in result.rows.iter_mut().flatten() {
        let Some(i) = cell.as_i64() else {
            continue;
        };
        if i.unsigned_abs() > MAX_EXACT_INT.unsigned_abs() {
            *cell = Value::String(i.to_string());
        }
    }
}

/// What one cell may be: a safe integer, a real, text (also integers beyond
/// 2^53 - 1 as digits, and blobs as `x'hex'`), or NULL.
pub fn cell_schema() -> Value {
    json!({
        "description": "One value: INTEGER within ±(2^53 - 1) and REAL as numbers; TEXT, \
            INTEGER beyond ±(2^53 - 1) (as decimal digits, exact) and BLOB (as x'hex') as \
            strings; NULL as null.",
        "anyOf": [
            { "type": "integer", "minimum": -MAX_EXACT_INT, "maximum": MAX_EXACT_INT },
            { "type": "number" },
            { "type": "string" },
            { "type": "null" },
        ]
    })
}

/// The output schema of `run_sql`: [`SqlResult`]'s, with the cells described
/// by [`cell_schema`] instead of "any value".
pub fn output_schema() -> Arc<JsonObject> {
    let mut schema = schema_for_output::<SqlResult>().as_ref().clone();
    let rows = schema
        .get_mut("properties")
        .and_then(|p| p.get_mut("rows"))
        .and_then(|r| r.get_mut("items"))
        .and_then(Value::as_object_mut);
    if let Some(row) = rows {
        row.insert("items".to_string(), cell_schema());
    }
    Arc::new(schema)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(rows: Vec<Vec<Value>>) -> SqlResult {
        SqlResult {
            columns: vec!["v".to_string()],
            row_count: rows.len(),
            rows,
            truncated: None,
            elapsed_ms: 0.0,
        }
    }

    #[test]
    fn integers_beyond_2_pow_53_become_exact_strings() {
        let ts: i64 = 1_764_953_063_412_657_601;
        let mut r = result(vec![
            vec![json!(ts)],
            vec![json!(-ts)],
            vec![json!(MAX_EXACT_INT)],
            vec![json!(MAX_EXACT_INT + 1)],
            vec![json!(1.5)],
            vec![json!("text")],
            vec![Value::Null],
        ]);
        make_exact(&mut r);
        let cells: Vec<&Value> = r.rows.iter().flatten().collect();
        assert_eq!(cells[0], &json!("1764953063412657601"));
        assert_eq!(cells[1], &json!("-1764953063412657601"));
        assert_eq!(cells[2], &json!(MAX_EXACT_INT));
        assert_eq!(cells[3], &json!((MAX_EXACT_INT + 1).to_string()));
        assert_eq!(cells[4], &json!(1.5));
        assert_eq!(cells[5], &json!("text"));
        assert_eq!(cells[6], &Value::Null);
        // What a double-based reader makes of the text form.
        let text = serde_json::to_string(&r.rows).unwrap_or_default();
        let back: Vec<Vec<Value>> = serde_json::from_str(&text).unwrap_or_default();
        let as_double = back[0][0].as_f64();
        assert_eq!(as_double, None, "a string, so no double rounding");
        assert_eq!(
            back[0][0].as_str().and_then(|s| s.parse::<i64>().ok()),
            Some(ts)
        );
    }

    #[test]
    fn the_schema_describes_cells_not_any_value() {
        let schema = output_schema();
        let cells = &schema["properties"]["rows"]["items"]["items"];
        assert_eq!(cells, &cell_schema());
    }
}
