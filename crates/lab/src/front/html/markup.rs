//! What the report's page is written with: HTML escaping and SVG
//! documents made into inline elements.

/// `s` with the characters HTML gives meaning to escaped: safe as text
/// and inside a quoted attribute.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// An SVG document as an element to inline: from `<svg` on, with a
/// viewBox from its width and height when it has none.
pub fn inline_svg(doc: &str) -> String {
    let Some(start) = doc.find("<svg") else {
        return String::new();
    };
    let body = &doc[start..];
    let tag_end = body.find('>').unwrap_or(body.len());
    let tag = &body[..tag_end];
    if tag.contains("viewBox") {
        return body.to_string();
    }
    let attr = |name: &str| -> Option<String> {
        let at = tag.find(&format!(" {name}=\""))? + name.len() + 3;
        let rest = &tag[at..];
        Some(rest[..rest.find('"')?].to_string())
    };
    match (attr("width"), attr("height")) {
        (Some(w), Some(h)) => format!("<svg viewBox=\"0 0 {w} {h}\"{}", &body[4..]),
        _ => body.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_covers_markup_and_quotes() {
        assert_eq!(
            esc("<a href=\"x\">'&'</a>"),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
        );
    }

    #[test]
    fn inlined_svg_loses_the_prelude_and_gains_a_viewbox() {
        let doc = "<?xml version=\"1.0\"?>\n<svg width=\"10\" height=\"20\" xmlns=\"http://www.w3.org/2000/svg\"><g/></svg>";
        let s = inline_svg(doc);
        assert!(
            s.starts_with("<svg viewBox=\"0 0 10 20\" width=\"10\""),
            "{s}"
        );
        assert!(!s.contains("<?xml"));
    }
}
