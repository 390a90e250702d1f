//! SVG pictures of an estimate: the simulated schedule as a timeline and
//! per-stage memory against the capacity. Plain strings, no MLIR; every
//! bar carries a class naming what it is and a `<title>` tooltip, so the
//! pictures are also machine-checkable.

pub mod memory;
pub mod timeline;
pub mod trace;

use std::fmt::Write;

/// Escapes text for SVG content and attribute values.
#[must_use]
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // XML 1.0 has no other control characters.
            c if c.is_control() && !matches!(c, '\t' | '\n' | '\r') => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

/// A tick step of 1, 2 or 5 × 10^k giving about `target` ticks over `span`.
#[must_use]
pub fn tick_step(span: f64, target: f64) -> f64 {
    if span <= 0.0 || !span.is_finite() {
        return 1.0;
    }
    let raw = span / target.max(1.0);
    let magnitude = 10f64.powf(raw.log10().floor());
    let normalized = raw / magnitude;
    let nice = if normalized <= 1.0 {
        1.0
    } else if normalized <= 2.0 {
        2.0
    } else if normalized <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * magnitude
}

/// A number with at most `digits` significant decimals, no trailing zeros.
#[must_use]
pub fn short(value: f64, digits: usize) -> String {
    let text = format!("{value:.digits$}");
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    }
}

/// The document head shared by the pictures.
/// SVG pictures (as [`open`] starts them) one above the other in one
/// picture titled `title`, each nested at its own size.
pub(crate) fn stack_vertically(parts: &[String], title: &str) -> String {
    let size = |svg: &str, attribute: &str| -> f64 {
        let key = format!(" {attribute}=\"");
        svg.find(&key).and_then(|at| svg[at + key.len()..].split('"').next()).and_then(|v| v.parse().ok()).unwrap_or(0.0)
    };
    let width = parts.iter().map(|p| size(p, "width")).fold(0.0, f64::max);
    let height: f64 = parts.iter().map(|p| size(p, "height")).sum();
    let mut out = String::new();
    open(&mut out, width, height, title);
    let mut y = 0.0;
    for part in parts {
        // A nested <svg> at its offset (the same element, placed).
        let placed = part.replacen("<svg ", &format!(r#"<svg x="0" y="{}" "#, short(y, 1)), 1);
        out.push_str(&placed);
        y += size(part, "height");
    }
    out.push_str("</svg>\n");
    out
}

pub(crate) fn open(out: &mut String, width: f64, height: f64, title: &str) {
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="12">"#,
        w = short(width, 1),
        h = short(height, 1)
    );
    let _ = writeln!(out, "<title>{}</title>", escape(title));
    let _ = writeln!(
        out,
        r##"<rect class="background" x="0" y="0" width="{}" height="{}" fill="#ffffff"/>"##,
        short(width, 1),
        short(height, 1)
    );
}

/// The width a legend entry takes, px.
pub(crate) fn legend_entry_width(label: &str) -> f64 {
    19.0 + 7.0 * label.chars().count() as f64 + 18.0
}

/// One legend entry per `(label, colour)`, in rows from `(x, y)` no wider
/// than `width`.
pub(crate) fn legend(out: &mut String, x: f64, y: f64, entries: &[(&str, &str)], width: f64) {
    let _ = writeln!(out, r#"<g class="legend">"#);
    let (mut at, mut row_y) = (x, y);
    for (label, colour) in entries {
        let w = legend_entry_width(label);
        if at > x && at - x + w > width {
            at = x;
            row_y += 24.0;
        }
        let _ = writeln!(
            out,
            r##"<rect x="{}" y="{}" width="14" height="14" fill="{colour}" stroke="#555" stroke-width="0.5"/><text x="{}" y="{}">{}</text>"##,
            short(at, 1),
            short(row_y, 1),
            short(at + 19.0, 1),
            short(row_y + 11.5, 1),
            escape(label)
        );
        at += w;
    }
    let _ = writeln!(out, "</g>");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_1_2_5() {
        assert_eq!(tick_step(100.0, 10.0), 10.0);
        assert_eq!(tick_step(33.0, 10.0), 5.0);
        assert_eq!(tick_step(0.017, 10.0), 0.002);
        assert_eq!(tick_step(0.0, 10.0), 1.0);
        assert_eq!(tick_step(f64::NAN, 10.0), 1.0);
    }

    #[test]
    fn text_is_escaped() {
        assert_eq!(escape("a<b & \"c\"\u{1}"), "a&lt;b &amp; &quot;c&quot;\u{fffd}");
        assert_eq!(short(1.50, 3), "1.5");
        assert_eq!(short(2.0, 3), "2");
    }
}
