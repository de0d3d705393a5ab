//! `ingero report --db NEW --base BASE`: the page opens with the comparison
//! section, and what it shows is the comparison itself. Without a browser:
//! the section's verdict is `ingero compare --json`'s sentence, each
//! finding's row says both/gone/new with the idle time it explains in each
//! run, and the figures of the GPU idle, ops and rates tables carry the
//! comparison's values (raw in `data-value`, readable in the cell), with
//! the op rates equal to SQL on the two files.

use ingero_tools::format::{ns, pct};
use rusqlite::{params, Connection};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn ingero() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ingero"))
}

fn ok(out: Output, what: &str) -> Output {
    assert!(
        out.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Writes demo `scenario` (seed 42) into `dir`.
fn demo(dir: &Path, scenario: &str) -> PathBuf {
    let path = dir.join(format!("{scenario}.db"));
    let out = ingero()
        .args(["demo", scenario, "--seed", "42", "--db"])
        .arg(&path)
        .output()
        .expect("run ingero demo");
    ok(out, "demo");
    path
}

/// The page's comparison section, written by `ingero report`.
fn section(dir: &Path, base: &Path, new: &Path) -> String {
    let page = dir.join("page.html");
    let out = ingero()
        .arg("report")
        .arg("--db")
        .arg(new)
        .arg("--base")
        .arg(base)
        .arg("--out")
        .arg(&page)
        .output()
        .expect("run ingero report");
    let out = ok(out, "report --base");
    let said = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(said.contains("compared with"), "{said}");
    let html = std::fs::read_to_string(&page).expect("page written");
    let start = html
        .find("<section id=\"comparison\"")
        .expect("a comparison section");
    let end = start + html[start..].find("</section>").expect("section end");
    // Before the script's app, so it reads without the script.
    assert!(start < html.find("<div id=\"app\">").expect("app"));
    html[start..end].to_string()
}

fn compare_json(base: &Path, new: &Path) -> Value {
    let out = ingero()
        .arg("compare")
        .arg(base)
        .arg(new)
        .arg("--json")
        .output()
        .expect("run ingero compare");
    let out = ok(out, "compare --json");
    serde_json::from_slice(&out.stdout).expect("JSON")
}

/// One table cell: its raw value (`data-value`) and its text.
#[derive(Debug)]
struct Cell {
    value: Option<f64>,
    text: String,
}

/// The cells of the row `key` of table `table`, or `None` without one.
fn row(section: &str, table: &str, key: &str) -> Option<Vec<Cell>> {
    let t = section.find(&format!("id=\"{table}\""))?;
    let t_end = t + section[t..].find("</table>")?;
    let body = &section[t..t_end];
    let key = html_escaped(key);
    let r = body.find(&format!("<tr data-key=\"{key}\""))?;
    let r_end = r + body[r..].find("</tr>")?;
    let cells = body[r..r_end]
        .split("<td")
        .skip(1)
        .map(|c| {
            let value = c.split_once("data-value=\"").and_then(|(_, rest)| {
                rest.split_once('"')
                    .and_then(|(v, _)| v.parse::<f64>().ok())
            });
            let text = c
                .split_once('>')
                .map(|(_, rest)| rest.trim_end_matches("</td>").to_string())
                .unwrap_or_default();
            Cell { value, text }
        })
        .collect();
    Some(cells)
}

fn num(v: &Value) -> Option<f64> {
    v.as_f64()
}

/// The first text in `section` between `open` and the next `<`.
fn text_after<'a>(section: &'a str, open: &str) -> &'a str {
    let at = section
        .find(open)
        .unwrap_or_else(|| panic!("{open} in page"))
        + open.len();
    let end = at + section[at..].find('<').expect("end of text");
    &section[at..end]
}

fn html_escaped(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

/// Calls per second of the steady window of `path`, per op, from SQL.
fn op_rates(path: &Path) -> Vec<(String, f64)> {
    let db = Connection::open(path).expect("open");
    let (lo, hi): (i64, i64) = db
        .query_row(
            "SELECT MIN(ts_ns), MAX(ts_ns + dur_ns) FROM cuda_calls",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("window");
    let window_s = (hi - lo) as f64 / 1e9;
    let mut stmt = db
        .prepare(
            "SELECT o.name, COUNT(*) FROM cuda_calls c JOIN cuda_ops o ON o.id = c.op_id \
             WHERE c.ts_ns BETWEEN ?1 AND ?2 GROUP BY o.name",
        )
        .expect("prepare");
    let rows = stmt
        .query_map(params![lo, hi], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?))
        })
        .expect("query")
        .collect::<Result<Vec<_>, _>>()
        .expect("rows");
    rows.into_iter()
        .map(|(op, n)| (op, n as f64 / window_s))
        .collect()
}

fn close(a: f64, b: f64, what: &str) {
    let tol = 1e-9 * a.abs().max(b.abs()).max(1.0);
    assert!((a - b).abs() <= tol, "{what}: page {a}, expected {b}");
}

#[test]
fn the_report_given_a_baseline_shows_the_comparison_and_its_figures_match() {
    let dir = tempfile::tempdir().expect("tempdir");
    let base = demo(dir.path(), "dataloader-starvation");
    let new = demo(dir.path(), "periodic-malloc-spike");
    let s = section(dir.path(), &base, &new);
    let c = compare_json(&base, &new);

    // The verdict: the comparison's sentence, outcome and confidence.
    let sentence = c["verdict"]["sentence"].as_str().expect("sentence");
    assert!(sentence.contains("dataloader_worker_contention is gone"));
    assert_eq!(
        text_after(&s, "id=\"compare-verdict\">"),
        html_escaped(sentence)
    );
    assert!(s.contains("data-outcome=\"better\" data-confidence=\"high\""));

    // GPU idle side by side, readable and raw.
    let idle = row(&s, "compare-idle", "loop_idle_share").expect("idle row");
    for (i, side) in ["base", "new"].iter().enumerate() {
        let want = num(&c["idle"]["loop_idle_share"][side]).expect("share");
        assert_eq!(idle[i + 1].value, Some(want), "{side} idle share");
        assert_eq!(idle[i + 1].text, pct(want), "{side} idle share text");
        let per_step = row(&s, "compare-idle", "loop_idle_per_step_ns").expect("per step");
        let want = num(&c["idle"]["loop_idle_per_step_ns"][side]).expect("per step");
        assert_eq!(per_step[i + 1].value, Some(want));
        assert_eq!(per_step[i + 1].text, ns(want.round() as i64));
    }
    let change = num(&c["idle"]["loop_idle_share"]["change"]).expect("change");
    assert_eq!(idle[3].value, Some(change));
    assert_eq!(idle[3].text, format!("{:.1} pts", change * 100.0));

    // Every finding: both / gone / new, with the idle time it explains in each run.
    let findings = c["findings"].as_array().expect("findings");
    assert!(findings.len() >= 3);
    for f in findings {
        let key = f["key"].as_str().expect("key");
        let presence = f["presence"].as_str().expect("presence");
        let t = s.find("id=\"compare-findings\"").expect("findings table");
        assert!(
            s[t..].contains(&format!(
                "data-key=\"{}\" data-presence=\"{presence}\"",
                html_escaped(key)
            )),
            "finding {key} {presence}"
        );
        let cells = row(&s, "compare-findings", key).expect("finding row");
        assert_eq!(cells[1].text, presence);
        for (i, (field, side)) in [
            ("explained_ns", "base"),
            ("explained_ns", "new"),
            ("per_loop_s", "base"),
            ("per_loop_s", "new"),
        ]
        .iter()
        .enumerate()
        {
            assert_eq!(
                cells[2 + i].value,
                num(&f[field][side]),
                "{key} {field} {side}"
            );
        }
    }
    let gone = row(&s, "compare-findings", "dataloader_worker_contention").expect("gone");
    assert_eq!(gone[1].text, "gone");
    assert_eq!(gone[3].value, Some(0.0), "explains nothing in the new run");
    assert!(
        gone[2].value.is_some_and(|v| v > 1e9),
        "seconds in the base"
    );

    // Ops: calls per second of each run's steady window, equal to SQL.
    for (side, path, col) in [("base", &base, 2), ("new", &new, 3)] {
        for (op, per_s) in op_rates(path) {
            let Some(cells) = row(&s, "compare-ops", &op) else {
                continue; // beyond the ops listed
            };
            close(
                cells[col].value.expect("rate"),
                per_s,
                &format!("{op} calls/s {side}"),
            );
            assert!(cells[col].text.ends_with("/s"), "{op}: {}", cells[col].text);
        }
    }
    let listed = s.matches("<tr data-key=").count();
    assert!(listed > findings.len(), "ops and rates listed too");

    // Rates: every one the comparison has, with its values.
    for r in c["rates"].as_array().expect("rates") {
        let name = r["name"].as_str().expect("name");
        let cells = row(&s, "compare-rates", name).expect("rate row");
        assert_eq!(cells[1].value, num(&r["value"]["base"]), "{name} base");
        assert_eq!(cells[2].value, num(&r["value"]["new"]), "{name} new");
        if r["unit"] == "ratio" {
            if let Some(v) = cells[1].value {
                assert_eq!(cells[1].text, pct(v));
            }
        }
    }
}

/// Unpacks a recording of the H200 workload zoo into `dir`.
fn zoo(dir: &Path, name: &str) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../investigations/zoo-h200")
        .join(format!("zoo-{name}.db.xz"));
    let dest = dir.join(format!("{name}.db"));
    let file = std::fs::File::open(&src).expect("packed recording");
    let mut out = std::fs::File::create(&dest).expect("unpacked copy");
    lzma_rs::xz_decompress(&mut std::io::BufReader::new(file), &mut out).expect("xz");
    dest
}

#[test]
fn a_recorded_fix_shows_the_finding_gone_and_the_code_paths_that_moved() {
    let dir = tempfile::tempdir().expect("tempdir");
    let base = zoo(dir.path(), "pageable_copies-s50");
    let new = zoo(dir.path(), "pinned_copies_overlap-s50");
    let s = section(dir.path(), &base, &new);
    let c = compare_json(&base, &new);
    assert!(
        s.contains("data-outcome=\"better\""),
        "pinning the source helped"
    );
    let gone = row(&s, "compare-findings", "pageable_memcpy").expect("pageable row");
    assert_eq!(gone[1].text, "gone");
    let code = c["code"].as_array().expect("code");
    assert!(!code.is_empty(), "the recordings have stacks");
    for k in code {
        let key = format!(
            "{}:{}",
            k["part"].as_str().expect("part"),
            k["code"].as_str().expect("code")
        );
        let cells = row(&s, "compare-code", &key).expect("code row");
        assert_eq!(cells[2].value, num(&k["per_loop_s"]["base"]), "{key}");
        assert_eq!(cells[3].value, num(&k["per_loop_s"]["new"]), "{key}");
    }
}

#[test]
fn a_report_compared_with_its_own_file_says_no_change() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = demo(dir.path(), "pageable-memcpy");
    let s = section(dir.path(), &db, &db);
    assert!(s.contains("data-outcome=\"no_change\""), "{s}");
    assert!(text_after(&s, "id=\"compare-verdict\">").starts_with("No change:"));
}

#[test]
fn whole_needs_a_baseline_and_a_bad_baseline_exits_2() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = demo(dir.path(), "cold-start");
    let page = dir.path().join("p.html");
    let out = ingero()
        .arg("report")
        .arg("--db")
        .arg(&db)
        .arg("--whole")
        .arg("--out")
        .arg(&page)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2), "--whole without --base");
    let out = ingero()
        .arg("report")
        .arg("--db")
        .arg(&db)
        .arg("--base")
        .arg(dir.path().join("missing.db"))
        .arg("--out")
        .arg(&page)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2), "missing baseline");
    assert!(!page.exists(), "no page for a bad baseline");
}
