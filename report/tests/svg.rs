//! The SVG chart behind the `get_timeline_chart` MCP tool: well-formed XML of
//! the requested size, spans and chains drawn, windows respected.

mod common;

use ingero_report::svg::{timeline_svg, ChartWindow, MIN_WIDTH};

fn parse(svg: &str) -> roxmltree::Document<'_> {
    roxmltree::Document::parse(svg).expect("well-formed SVG")
}

fn count(doc: &roxmltree::Document<'_>, class: &str) -> usize {
    doc.descendants()
        .filter(|n| n.attribute("class") == Some(class))
        .count()
}

#[test]
fn whole_window_chart_draws_calls_off_cpu_and_chains() {
    let (ds, chains) = common::seed_dataset();
    let svg = timeline_svg(&ds, None, 1200, 700);
    let doc = parse(&svg);
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "svg");
    assert_eq!(root.attribute("width"), Some("1200"));
    assert_eq!(root.attribute("height"), Some("700"));
    assert!(count(&doc, "span") > 0, "CUDA calls drawn");
    assert!(count(&doc, "offcpu") > 0, "off-CPU intervals drawn");
    assert_eq!(count(&doc, "chain"), chains.chains.len());
    assert!(svg.contains("python3 [2233]"));
    assert!(svg.contains("CPU % (system)"));
}

#[test]
fn a_window_narrows_what_is_drawn() {
    let (ds, chains) = common::seed_dataset();
    let whole = timeline_svg(&ds, None, 1200, 700);
    let window = ChartWindow {
        start_offset_s: 62.0,
        end_offset_s: 64.0,
    };
    let part = timeline_svg(&ds, Some(window), 1200, 700);
    let doc = parse(&part);
    assert!(part.contains("+62.000 s to +64.000 s"));
    let in_window = chains
        .chains
        .iter()
        .filter(|c| c.end_offset_s >= 62.0 && c.start_offset_s <= 64.0)
        .count();
    assert_eq!(count(&doc, "chain"), in_window);
    assert!(count(&doc, "span") < count(&parse(&whole), "span") + 1);
    // A reversed window falls back to the whole one.
    let reversed = ChartWindow {
        start_offset_s: 5.0,
        end_offset_s: 1.0,
    };
    assert_eq!(timeline_svg(&ds, Some(reversed), 1200, 700), whole);
}

#[test]
fn sizes_are_clamped_and_small_charts_say_what_they_hide() {
    let (ds, _) = common::seed_dataset();
    let svg = timeline_svg(&ds, None, 10, 10);
    let doc = parse(&svg);
    assert_eq!(
        doc.root_element().attribute("width"),
        Some(MIN_WIDTH.to_string().as_str())
    );
    assert!(svg.contains("more lanes"), "hidden lanes are announced");
}
