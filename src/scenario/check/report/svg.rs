//! The overview chart: one stacked horizontal bar per preparation, on one common token scale.
//!
//! Each bar stacks the request's [`Segment`]s, then the room left under the input limit, then
//! the safety margin and the output reserve. A dashed line marks the input limit; an estimate
//! over the limit is outlined in red from the limit to the estimate. When the provider rejected
//! the request and its error states its own limit, a solid red line marks that limit on the same
//! scale, so the figures the error names are the ones the bar draws. Positions are integer tenths
//! of a pixel, so the bytes never depend on floating-point formatting.

use std::fmt::Write as _;

use super::{Breakdown, ModelOutcome, Preparation, ReportedSizes, Segment, escape, preparations};
use crate::scenario::format::file::Scenario;
use crate::scenario::run::record::Trace;

/// Width of the whole chart, in pixels.
const WIDTH: u64 = 1300;
/// Where the bars start, after the label column.
const BAR_X: u64 = 290;
/// The width of the longest bar.
const BAR_WIDTH: u64 = 700;
/// Where the figures column starts.
const FIGURES_X: u64 = BAR_X + BAR_WIDTH + 12;
const LEGEND_HEIGHT: u64 = 56;
/// Where the legend's scale note starts, after the marker entries.
const BAR_X_LEGEND: u64 = 340;
const ROW_HEIGHT: u64 = 34;
const BAR_HEIGHT: u64 = 20;
/// Every non-empty segment is at least this wide (tenths of a pixel), so a small one still shows;
/// the room under the limit absorbs the difference.
const SEGMENT_WIDTH_MIN_TENTHS: u64 = 20;
/// Row labels longer than this are cut (the whole label is the tooltip).
const ROW_LABEL_CHARS_MAX: usize = 44;
/// Segments narrower than this carry no token label.
const LABEL_WIDTH_MIN_TENTHS: u64 = 480;

/// The room under the input limit that the request does not use.
const FREE_COLOR: &str = "#f1f1f1";
const MARGIN_COLOR: &str = "#c9c0bb";
const RESERVE_COLOR: &str = "#7fb8b3";
const OVER_COLOR: &str = "#d62728";
const TEXT_COLOR: &str = "#222222";

/// The fill colour of a segment (shared with the HTML tables).
pub(super) fn color(segment: Segment) -> &'static str {
    match segment {
        Segment::System => "#4e79a7",
        Segment::ToolSchemas => "#f28e2b",
        Segment::Conversation => "#59a14f",
        Segment::Transient => "#e6c12f",
        Segment::References => "#b07aa1",
        Segment::Overhead => "#9c755f",
    }
}

/// The overview chart of every preparation in the run, as a standalone SVG document.
pub fn svg(trace: &Trace, scenario: &Scenario) -> String {
    chart(&preparations(trace, scenario))
}

/// The chart for already analysed preparations.
pub(super) fn chart(preparations: &[Preparation<'_>]) -> String {
    let scale = preparations.iter().map(extent).max().unwrap_or(1).max(1);
    let rows = u64::try_from(preparations.len()).unwrap_or(u64::MAX);
    let height = LEGEND_HEIGHT + rows.saturating_mul(ROW_HEIGHT) + 8;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{height}\" \
         viewBox=\"0 0 {WIDTH} {height}\" font-family=\"sans-serif\" font-size=\"12\" \
         role=\"img\" aria-label=\"Token budget of each model request\">"
    );
    out.push_str(&defs("chart"));
    out.push_str(&legend(scale));
    for (index, preparation) in preparations.iter().enumerate() {
        let y = LEGEND_HEIGHT + u64::try_from(index).unwrap_or(0) * ROW_HEIGHT;
        out.push_str(&row(preparation, y, scale, "chart", &preparation.label()));
    }
    out.push_str("</svg>\n");
    out
}

/// One preparation's own chart: its budget bar on its own scale, and below it the estimate
/// alone, zoomed to the full width, so small segments are readable.
pub(super) fn single(preparation: &Preparation<'_>) -> String {
    let scale = extent(preparation).max(1);
    let height = 2 * ROW_HEIGHT + 4;
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{height}\" \
         viewBox=\"0 0 {WIDTH} {height}\" font-family=\"sans-serif\" font-size=\"12\" \
         role=\"img\" aria-label=\"Token budget of request {}\">\n",
        preparation.number
    );
    let prefix = format!("request-{}", preparation.number);
    out.push_str(&defs(&prefix));
    out.push_str(&row(preparation, 2, scale, &prefix, "budget in the window"));
    out.push_str(&composition(preparation, 2 + ROW_HEIGHT));
    out.push_str("</svg>\n");
    out
}

/// The estimate's segments alone, stretched to the full bar width, each labelled with its
/// tokens and share when there is room.
fn composition(preparation: &Preparation<'_>, y: u64) -> String {
    let Some(breakdown) = preparation.breakdown else {
        return String::new();
    };
    let total = breakdown.total();
    let pieces: Vec<(&str, &str, u64)> = Segment::ALL
        .iter()
        .map(|segment| (segment.label(), color(*segment), breakdown.get(*segment)))
        .collect();
    let (rects, labels) = stack(&pieces, total, y + 1);
    format!(
        "<g class=\"composition\"><text x=\"8\" y=\"{}\" fill=\"{TEXT_COLOR}\">the {total} \
         estimated tokens, zoomed</text>\n{rects}{labels}</g>\n",
        y + 15
    )
}

/// The tokens a preparation's bar spans: the larger of estimate and limit, plus margin and
/// reserve.
fn extent(preparation: &Preparation<'_>) -> u64 {
    let manifest = preparation.manifest();
    let estimated = u64::try_from(manifest.estimated_input_tokens).unwrap_or(0);
    let limit = u64::try_from(manifest.input_limit).unwrap_or(0);
    let (margin, reserve) = preparation
        .budget
        .map_or((0, 0), |b| (b.safety_margin, b.output_reserve));
    let reported = reported(preparation);
    let provider = reported
        .limit
        .unwrap_or(0)
        .max(reported.tokens.unwrap_or(0));
    (estimated.max(limit) + margin + reserve).max(provider)
}

/// The sizes the provider's error stated, if the request failed with one.
fn reported(preparation: &Preparation<'_>) -> ReportedSizes {
    match &preparation.outcome {
        ModelOutcome::Failed { reported, .. } => *reported,
        _ => ReportedSizes::default(),
    }
}

/// The hatch pattern for "over the limit"; `prefix` keeps ids unique within one page.
fn defs(prefix: &str) -> String {
    format!(
        "<defs><pattern id=\"{prefix}-over\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" \
         patternTransform=\"rotate(45)\"><rect width=\"3\" height=\"6\" fill=\"{OVER_COLOR}\" \
         fill-opacity=\"0.45\"/></pattern></defs>\n"
    )
}

fn legend(scale: u64) -> String {
    let mut entries: Vec<(String, String)> = Segment::ALL
        .iter()
        .map(|segment| (segment.label().to_string(), color(*segment).to_string()))
        .collect();
    entries.push(("unused under the limit".to_string(), FREE_COLOR.to_string()));
    entries.push(("safety margin".to_string(), MARGIN_COLOR.to_string()));
    entries.push(("output reserve".to_string(), RESERVE_COLOR.to_string()));
    let mut out = String::from("<g class=\"legend\">\n");
    let mut x = 8;
    for (label, fill) in &entries {
        let _ = writeln!(
            out,
            "<rect x=\"{x}\" y=\"8\" width=\"12\" height=\"12\" fill=\"{fill}\" stroke=\"#888888\" \
             stroke-width=\"0.5\"/><text x=\"{}\" y=\"18\" fill=\"{TEXT_COLOR}\">{}</text>",
            x + 16,
            escape(label)
        );
        x += 16 + text_width(label) + 14;
    }
    let _ = writeln!(
        out,
        "<line x1=\"8\" y1=\"38\" x2=\"20\" y2=\"38\" stroke=\"{TEXT_COLOR}\" stroke-width=\"2\" \
         stroke-dasharray=\"3 2\"/><text x=\"24\" y=\"42\" fill=\"{TEXT_COLOR}\">input limit</text>\
         <rect x=\"104\" y=\"32\" width=\"12\" height=\"12\" fill=\"url(#chart-over)\" \
         stroke=\"{OVER_COLOR}\"/><text x=\"120\" y=\"42\" fill=\"{TEXT_COLOR}\">over the limit</text>\
         <line x1=\"214\" y1=\"32\" x2=\"214\" y2=\"44\" stroke=\"{OVER_COLOR}\" stroke-width=\"2\"/>\
         <text x=\"220\" y=\"42\" fill=\"{TEXT_COLOR}\">provider's limit</text>\
         <text x=\"{BAR_X_LEGEND}\" y=\"42\" fill=\"#666666\">one scale for every bar: full width = {scale} tokens</text>"
    );
    out.push_str("</g>\n");
    out
}

/// A rough width of legend text in 12 px sans-serif, enough to space the entries.
fn text_width(text: &str) -> u64 {
    u64::try_from(text.chars().count()).unwrap_or(0) * 6
}

/// One preparation's budget bar at height `y`, labelled `label`.
fn row(preparation: &Preparation<'_>, y: u64, scale: u64, prefix: &str, label: &str) -> String {
    let manifest = preparation.manifest();
    let failed = preparation.build.status != "passed";
    let label_color = if failed { OVER_COLOR } else { TEXT_COLOR };
    let mut out = format!(
        "<g class=\"request\"><a href=\"#request-{}\">\
         <text x=\"8\" y=\"{}\" fill=\"{label_color}\"><title>{}</title>{}</text></a>\n",
        preparation.number,
        y + 15,
        escape(label),
        escape(&ctxbed_harness::format::snippet(label, ROW_LABEL_CHARS_MAX))
    );
    let bar_y = y + 1;
    let Some(breakdown) = preparation.breakdown else {
        let _ = writeln!(
            out,
            "<text x=\"{BAR_X}\" y=\"{}\" fill=\"{OVER_COLOR}\">no figures: the preparation \
             failed before counting ({})</text></g>",
            y + 15,
            escape(manifest.validation.as_str())
        );
        return out;
    };
    let estimated = u64::try_from(manifest.estimated_input_tokens).unwrap_or(0);
    let limit = u64::try_from(manifest.input_limit).unwrap_or(0);
    let pieces = bar_pieces(preparation, &breakdown, estimated, limit);
    let (rects, labels) = stack(&pieces, scale, bar_y);
    out.push_str(&rects);
    if estimated > limit {
        let _ = writeln!(
            out,
            "<rect x=\"{}\" y=\"{bar_y}\" width=\"{}\" height=\"{BAR_HEIGHT}\" \
             fill=\"url(#{prefix}-over)\" stroke=\"{OVER_COLOR}\" stroke-width=\"2\"><title>{} \
             tokens over the input limit</title></rect>",
            px(x_tenths(limit, scale)),
            px(x_tenths(estimated, scale) - x_tenths(limit, scale)),
            estimated - limit
        );
    }
    out.push_str(&labels);
    limit_lines(&mut out, preparation, limit, scale, bar_y);
    out.push_str(&figures_text(preparation, y + 15, label_color));
    out.push_str("</g>\n");
    out
}

/// The pieces of a bar (label, fill, tokens): each segment of the estimate, what is left under
/// the limit, then the safety margin and output reserve when the budget is known.
fn bar_pieces(
    preparation: &Preparation<'_>,
    breakdown: &Breakdown,
    estimated: u64,
    limit: u64,
) -> Vec<(&'static str, &'static str, u64)> {
    let mut pieces: Vec<(&str, &str, u64)> = Segment::ALL
        .iter()
        .map(|segment| (segment.label(), color(*segment), breakdown.get(*segment)))
        .collect();
    pieces.push((
        "unused under the limit",
        FREE_COLOR,
        limit.saturating_sub(estimated),
    ));
    if let Some(budget) = preparation.budget {
        pieces.push(("safety margin", MARGIN_COLOR, budget.safety_margin));
        pieces.push(("output reserve", RESERVE_COLOR, budget.output_reserve));
    }
    pieces
}

/// The input limit's dashed line across a bar at `bar_y`, and the provider's own limit when
/// its error stated one.
fn limit_lines(
    out: &mut String,
    preparation: &Preparation<'_>,
    limit: u64,
    scale: u64,
    bar_y: u64,
) {
    let limit_x = px(x_tenths(limit, scale));
    let _ = writeln!(
        out,
        "<line x1=\"{limit_x}\" y1=\"{}\" x2=\"{limit_x}\" y2=\"{}\" stroke=\"{TEXT_COLOR}\" \
         stroke-width=\"2\" stroke-dasharray=\"3 2\"><title>input limit {limit} tokens</title></line>",
        bar_y.saturating_sub(3),
        bar_y + BAR_HEIGHT + 3
    );
    if let Some(provider_limit) = reported(preparation).limit {
        let x = px(x_tenths(provider_limit, scale));
        let _ = writeln!(
            out,
            "<line x1=\"{x}\" y1=\"{}\" x2=\"{x}\" y2=\"{}\" stroke=\"{OVER_COLOR}\" \
             stroke-width=\"2\"><title>the provider's own limit: {provider_limit} tokens, as its \
             error states</title></line>",
            bar_y.saturating_sub(5),
            bar_y + BAR_HEIGHT + 5
        );
    }
}

/// Stacks pieces (label, fill, tokens) from the bar's start: the rectangles, and the token labels
/// to draw on top of everything else. Empty pieces are skipped; the others are at least
/// [`SEGMENT_WIDTH_MIN_TENTHS`] wide.
fn stack(pieces: &[(&str, &str, u64)], scale: u64, y: u64) -> (String, String) {
    let (mut rects, mut labels) = (String::new(), String::new());
    let mut end_tokens = 0u64;
    let mut cursor = x_tenths(0, scale);
    for (label, fill, tokens) in pieces.iter().filter(|(_, _, tokens)| *tokens > 0) {
        end_tokens += tokens;
        let end = x_tenths(end_tokens, scale).max(cursor + SEGMENT_WIDTH_MIN_TENTHS);
        let (rect, text) = piece(label, fill, *tokens, (cursor, end), y);
        rects.push_str(&rect);
        labels.push_str(&text);
        cursor = end;
    }
    (rects, labels)
}

/// `estimate / limit · validation`, and below it the model's failure when it had one, with the
/// provider's own count and limit when its error states them.
fn figures_text(preparation: &Preparation<'_>, baseline: u64, fill: &str) -> String {
    let manifest = preparation.manifest();
    let model_failure = match &preparation.outcome {
        ModelOutcome::Failed { kind, reported, .. } => {
            let sizes = match (reported.tokens, reported.limit) {
                (Some(tokens), Some(limit)) => format!(": {tokens} / {limit} (provider)"),
                (None, Some(limit)) => format!(": provider limit {limit}"),
                (Some(tokens), None) => format!(": provider counted {tokens}"),
                (None, None) => String::new(),
            };
            format!(
                "\n<text x=\"{FIGURES_X}\" y=\"{}\" fill=\"{OVER_COLOR}\" font-size=\"11\">\
                 model {}{sizes}</text>",
                baseline + 13,
                escape(kind)
            )
        }
        _ => String::new(),
    };
    format!(
        "<text x=\"{FIGURES_X}\" y=\"{}\" fill=\"{fill}\" font-size=\"11\">estimate {} / limit {} · \
         {}</text>{model_failure}",
        if model_failure.is_empty() {
            baseline
        } else {
            baseline - 4
        },
        manifest.estimated_input_tokens,
        manifest.input_limit,
        escape(manifest.validation.as_str())
    )
}

/// One segment's rectangle, and its token label when the segment is wide enough (labels are
/// drawn after every rectangle and the over-limit hatch, so nothing covers them).
fn piece(label: &str, fill: &str, tokens: u64, span: (u64, u64), y: u64) -> (String, String) {
    let (x, end) = span;
    let width = end - x;
    let rect = format!(
        "<rect x=\"{}\" y=\"{y}\" width=\"{}\" height=\"{BAR_HEIGHT}\" fill=\"{fill}\" \
         stroke=\"#ffffff\" stroke-width=\"0.5\"><title>{}: {tokens} tokens</title></rect>\n",
        px(x),
        px(width),
        escape(label)
    );
    if width < LABEL_WIDTH_MIN_TENTHS {
        return (rect, String::new());
    }
    let light = fill == FREE_COLOR || fill == MARGIN_COLOR || fill == color(Segment::Transient);
    let ink = if light { TEXT_COLOR } else { "#ffffff" };
    let text = format!(
        "<text x=\"{}\" y=\"{}\" fill=\"{ink}\" font-size=\"11\" text-anchor=\"middle\" \
         pointer-events=\"none\">{tokens}</text>\n",
        px(x + width / 2),
        y + 14
    );
    (rect, text)
}

/// The x position of a token count, in tenths of a pixel.
fn x_tenths(tokens: u64, scale: u64) -> u64 {
    let tenths = u128::from(tokens) * u128::from(BAR_WIDTH * 10) / u128::from(scale.max(1));
    u64::try_from(tenths).unwrap_or(u64::MAX) + BAR_X * 10
}

/// Tenths of a pixel as an SVG number.
fn px(tenths: u64) -> String {
    if tenths.is_multiple_of(10) {
        format!("{}", tenths / 10)
    } else {
        format!("{}.{}", tenths / 10, tenths % 10)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_are_integer_tenths() {
        assert_eq!(px(0), "0");
        assert_eq!(px(3_005), "300.5");
        assert_eq!(px(3_010), "301");
        assert_eq!(x_tenths(0, 100), BAR_X * 10);
        assert_eq!(x_tenths(100, 100), (BAR_X + BAR_WIDTH) * 10);
        assert_eq!(x_tenths(1, 3), BAR_X * 10 + BAR_WIDTH * 10 / 3);
        assert_eq!(
            x_tenths(5, 0),
            x_tenths(5, 1),
            "a zero scale is treated as 1"
        );
    }

    #[test]
    fn a_narrow_segment_has_no_label_and_a_wide_one_does() {
        let (rect, label) = piece("conversation", "#59a14f", 7, (3_000, 3_020), 10);
        assert!(rect.contains("width=\"2\""), "{rect}");
        assert!(
            rect.contains("<title>conversation: 7 tokens</title>"),
            "{rect}"
        );
        assert!(label.is_empty());
        let (_, label) = piece("conversation", "#59a14f", 900, (3_000, 4_000), 10);
        assert!(label.contains(">900</text>"), "{label}");
    }
}
