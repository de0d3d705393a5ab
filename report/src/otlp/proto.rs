//! OTLP/HTTP binary protobuf bodies (`application/x-protobuf`), the encoding
//! every OTLP receiver accepts (several, VictoriaMetrics and Arize Phoenix
//! among them, take no JSON). The request bodies are built once, in the
//! protobuf JSON mapping ([`super::traces`], [`super::metrics`]); this module
//! writes the same messages in the protobuf wire format from a table of the
//! OTLP fields they use. A field the table does not know is an error, so a
//! body can never lose data silently on the way to protobuf.

use serde_json::{Map, Value};

/// How a JSON field is written on the wire.
#[derive(Clone, Copy)]
enum Kind {
    /// `string`: length-delimited UTF-8.
    Str,
    /// `bytes` given as lower-case hex (trace and span ids).
    HexBytes,
    /// `fixed64` given as a decimal string (epoch nanoseconds).
    Fixed64,
    /// `sfixed64` given as a decimal string (`NumberDataPoint.as_int`).
    Sfixed64,
    /// `int64` given as a decimal string (`AnyValue.int_value`).
    Int64,
    /// `double`.
    Double,
    /// An enum or `uint32` given as a JSON number.
    Varint,
    /// `bool`.
    Bool,
    /// A nested message (repeated when the JSON value is an array).
    Msg(&'static [Field]),
}

/// One field of a message: its JSON name, number and wire kind.
#[derive(Clone, Copy)]
struct Field {
    json: &'static str,
    number: u32,
    kind: Kind,
}

const fn f(json: &'static str, number: u32, kind: Kind) -> Field {
    Field { json, number, kind }
}

// opentelemetry/proto/common/v1/common.proto
const ANY_VALUE: &[Field] = &[
    f("stringValue", 1, Kind::Str),
    f("boolValue", 2, Kind::Bool),
    f("intValue", 3, Kind::Int64),
    f("doubleValue", 4, Kind::Double),
];
const KEY_VALUE: &[Field] = &[f("key", 1, Kind::Str), f("value", 2, Kind::Msg(ANY_VALUE))];
const SCOPE: &[Field] = &[
    f("name", 1, Kind::Str),
    f("version", 2, Kind::Str),
    f("attributes", 3, Kind::Msg(KEY_VALUE)),
];
// opentelemetry/proto/resource/v1/resource.proto
const RESOURCE: &[Field] = &[f("attributes", 1, Kind::Msg(KEY_VALUE))];

// opentelemetry/proto/trace/v1/trace.proto
const EVENT: &[Field] = &[
    f("timeUnixNano", 1, Kind::Fixed64),
    f("name", 2, Kind::Str),
    f("attributes", 3, Kind::Msg(KEY_VALUE)),
];
const SPAN: &[Field] = &[
    f("traceId", 1, Kind::HexBytes),
    f("spanId", 2, Kind::HexBytes),
    f("parentSpanId", 4, Kind::HexBytes),
    f("name", 5, Kind::Str),
    f("kind", 6, Kind::Varint),
    f("startTimeUnixNano", 7, Kind::Fixed64),
    f("endTimeUnixNano", 8, Kind::Fixed64),
    f("attributes", 9, Kind::Msg(KEY_VALUE)),
    f("events", 11, Kind::Msg(EVENT)),
];
const SCOPE_SPANS: &[Field] = &[
    f("scope", 1, Kind::Msg(SCOPE)),
    f("spans", 2, Kind::Msg(SPAN)),
];
const RESOURCE_SPANS: &[Field] = &[
    f("resource", 1, Kind::Msg(RESOURCE)),
    f("scopeSpans", 2, Kind::Msg(SCOPE_SPANS)),
];
/// `ExportTraceServiceRequest` (collector/trace/v1/trace_service.proto).
const TRACES_REQUEST: &[Field] = &[f("resourceSpans", 1, Kind::Msg(RESOURCE_SPANS))];

// opentelemetry/proto/metrics/v1/metrics.proto
const NUMBER_POINT: &[Field] = &[
    f("startTimeUnixNano", 2, Kind::Fixed64),
    f("timeUnixNano", 3, Kind::Fixed64),
    f("asDouble", 4, Kind::Double),
    f("asInt", 6, Kind::Sfixed64),
    f("attributes", 7, Kind::Msg(KEY_VALUE)),
];
const GAUGE: &[Field] = &[f("dataPoints", 1, Kind::Msg(NUMBER_POINT))];
const SUM: &[Field] = &[
    f("dataPoints", 1, Kind::Msg(NUMBER_POINT)),
    f("aggregationTemporality", 2, Kind::Varint),
    f("isMonotonic", 3, Kind::Bool),
];
const METRIC: &[Field] = &[
    f("name", 1, Kind::Str),
    f("description", 2, Kind::Str),
    f("unit", 3, Kind::Str),
    f("gauge", 5, Kind::Msg(GAUGE)),
    f("sum", 7, Kind::Msg(SUM)),
];
const SCOPE_METRICS: &[Field] = &[
    f("scope", 1, Kind::Msg(SCOPE)),
    f("metrics", 2, Kind::Msg(METRIC)),
];
const RESOURCE_METRICS: &[Field] = &[
    f("resource", 1, Kind::Msg(RESOURCE)),
    f("scopeMetrics", 2, Kind::Msg(SCOPE_METRICS)),
];
/// `ExportMetricsServiceRequest` (collector/metrics/v1/metrics_service.proto).
const METRICS_REQUEST: &[Field] = &[f("resourceMetrics", 1, Kind::Msg(RESOURCE_METRICS))];

/// Which request a body is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Request {
    /// `ExportTraceServiceRequest`, for `/v1/traces`.
    Traces,
    /// `ExportMetricsServiceRequest`, for `/v1/metrics`.
    Metrics,
}

/// The protobuf encoding of a request body built in the JSON mapping.
/// Errors name the field that has no place in the OTLP message.
pub fn encode(request: Request, body: &Value) -> Result<Vec<u8>, String> {
    let schema = match request {
        Request::Traces => TRACES_REQUEST,
        Request::Metrics => METRICS_REQUEST,
    };
    let obj = body
        .as_object()
        .ok_or_else(|| "request body is not an object".to_string())?;
    let mut out = Vec::new();
    message(schema, obj, &mut out, "")?;
    Ok(out)
}

fn message(
    schema: &[Field],
    obj: &Map<String, Value>,
    out: &mut Vec<u8>,
    path: &str,
) -> Result<(), String> {
    for (name, value) in obj {
        let here = format!("{path}.{name}");
        let field = schema
            .iter()
            .find(|f| f.json == name)
            .ok_or_else(|| format!("{here}: not a field this encoder knows"))?;
        match value {
            Value::Null => {}
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    one(field, item, out, &format!("{here}[{i}]"))?;
                }
            }
            v => one(field, v, out, &here)?,
        }
    }
    Ok(())
}

/// Wire types of the protobuf encoding.
const VARINT: u32 = 0;
const I64: u32 = 1;
const LEN: u32 = 2;

fn one(field: &Field, v: &Value, out: &mut Vec<u8>, path: &str) -> Result<(), String> {
    let bad = |what: &str| format!("{path}: expected {what}, got {v}");
    let tag = |out: &mut Vec<u8>, wire: u32| varint(out, u64::from((field.number << 3) | wire));
    match field.kind {
        Kind::Str => {
            let s = v.as_str().ok_or_else(|| bad("a string"))?;
            tag(out, LEN);
            bytes(out, s.as_bytes());
        }
        Kind::HexBytes => {
            let s = v.as_str().ok_or_else(|| bad("a hex string"))?;
            let raw = hex(s).ok_or_else(|| bad("an even number of hex digits"))?;
            tag(out, LEN);
            bytes(out, &raw);
        }
        Kind::Fixed64 => {
            let n: u64 = decimal(v).ok_or_else(|| bad("a decimal u64"))?;
            tag(out, I64);
            out.extend_from_slice(&n.to_le_bytes());
        }
        Kind::Sfixed64 => {
            let n: i64 = decimal(v).ok_or_else(|| bad("a decimal i64"))?;
            tag(out, I64);
            out.extend_from_slice(&n.to_le_bytes());
        }
        Kind::Int64 => {
            let n: i64 = decimal(v).ok_or_else(|| bad("a decimal i64"))?;
            tag(out, VARINT);
            // Negative int64 values take ten bytes, as the encoding says.
            varint(out, n as u64);
        }
        Kind::Double => {
            let x = v.as_f64().ok_or_else(|| bad("a number"))?;
            tag(out, I64);
            out.extend_from_slice(&x.to_le_bytes());
        }
        Kind::Varint => {
            let n = v.as_u64().ok_or_else(|| bad("a non-negative integer"))?;
            tag(out, VARINT);
            varint(out, n);
        }
        Kind::Bool => {
            let b = v.as_bool().ok_or_else(|| bad("true or false"))?;
            tag(out, VARINT);
            varint(out, u64::from(b));
        }
        Kind::Msg(schema) => {
            let obj = v.as_object().ok_or_else(|| bad("an object"))?;
            let mut inner = Vec::new();
            message(schema, obj, &mut inner, path)?;
            tag(out, LEN);
            bytes(out, &inner);
        }
    }
    Ok(())
}

fn varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

fn bytes(out: &mut Vec<u8>, b: &[u8]) {
    varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

/// A 64-bit integer written as a decimal string (the JSON mapping's form)
/// or, leniently, as a JSON number.
fn decimal<T: std::str::FromStr + TryFrom<u64> + TryFrom<i64>>(v: &Value) -> Option<T> {
    match v {
        Value::String(s) => s.parse().ok(),
        Value::Number(n) => match (n.as_u64(), n.as_i64()) {
            (Some(u), _) => T::try_from(u).ok(),
            (None, Some(i)) => T::try_from(i).ok(),
            _ => None,
        },
        _ => None,
    }
}

fn hex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn varints_follow_the_encoding() {
        let mut out = Vec::new();
        varint(&mut out, 1);
        varint(&mut out, 300);
        varint(&mut out, u64::MAX);
        assert_eq!(
            out,
            [1, 0xac, 0x02, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]
        );
    }

    #[test]
    fn a_span_is_written_field_by_field() {
        let body = json!({ "resourceSpans": [{ "scopeSpans": [{ "spans": [{
            "traceId": "0102",
            "name": "a",
            "kind": 1,
            "startTimeUnixNano": "5",
            "attributes": [{ "key": "k", "value": { "intValue": "-1" } }],
        }]}]}]});
        let got = encode(Request::Traces, &body).expect("encodes");
        let mut kv = vec![0x0a, 1, b'k', 0x12, 11, 0x18];
        kv.extend_from_slice(&[0xff; 9]);
        kv.push(0x01);
        let mut span = vec![0x0a, 2, 1, 2, 0x2a, 1, b'a', 0x30, 1, 0x39];
        span.extend_from_slice(&5u64.to_le_bytes());
        span.push(0x4a);
        span.push(kv.len() as u8);
        span.extend_from_slice(&kv);
        let mut scope_spans = vec![0x12, span.len() as u8];
        scope_spans.extend_from_slice(&span);
        let mut resource_spans = vec![0x12, scope_spans.len() as u8];
        resource_spans.extend_from_slice(&scope_spans);
        let mut want = vec![0x0a, resource_spans.len() as u8];
        want.extend_from_slice(&resource_spans);
        assert_eq!(got, want);
    }

    #[test]
    fn metric_points_use_fixed_width_numbers() {
        let body = json!({ "resourceMetrics": [{ "scopeMetrics": [{ "metrics": [{
            "name": "m",
            "sum": { "aggregationTemporality": 2, "isMonotonic": true,
                     "dataPoints": [{ "timeUnixNano": "7", "asInt": "-2" }] },
        }]}]}]});
        let got = encode(Request::Metrics, &body).expect("encodes");
        let mut point = vec![0x19];
        point.extend_from_slice(&7u64.to_le_bytes());
        point.push(0x31);
        point.extend_from_slice(&(-2i64).to_le_bytes());
        // Fields go out in the order the body has them.
        let mut sum = vec![0x10, 2, 0x18, 1, 0x0a, point.len() as u8];
        sum.extend_from_slice(&point);
        let mut metric = vec![0x0a, 1, b'm', 0x3a, sum.len() as u8];
        metric.extend_from_slice(&sum);
        assert!(got.ends_with(&metric), "{got:?}");
    }

    #[test]
    fn unknown_fields_and_wrong_types_are_errors() {
        let err = encode(
            Request::Traces,
            &json!({ "resourceSpans": [{ "bogus": 1 }] }),
        )
        .expect_err("unknown field");
        assert!(err.contains("resourceSpans[0].bogus"), "{err}");
        let err = encode(
            Request::Traces,
            &json!({ "resourceSpans": [{ "scopeSpans": [{ "spans": [{ "spanId": "xyz" }] }] }] }),
        )
        .expect_err("bad hex");
        assert!(err.contains("spanId"), "{err}");
    }
}
