//! The Prometheus text exposition format (0.0.4): families with HELP and
//! TYPE lines, labels escaped, numbers as Prometheus parses them. What the
//! metrics are is [`super::metrics`]'s business; this file only writes them.

use std::fmt::Write;

pub(crate) struct Out(pub(crate) String);

impl Out {
    pub(crate) fn family(&mut self, name: &str, help: &str, samples: &[(&[(&str, &str)], f64)]) {
        self.typed(name, "gauge", help, samples);
    }

    pub(crate) fn typed(&mut self, name: &str, kind: &str, help: &str, samples: &[(&[(&str, &str)], f64)]) {
        if samples.is_empty() {
            return;
        }
        let _ = writeln!(self.0, "# HELP {name} {}", escape_help(help));
        let _ = writeln!(self.0, "# TYPE {name} {kind}");
        for (labels, v) in samples {
            self.0.push_str(name);
            if !labels.is_empty() {
                self.0.push('{');
                for (i, (k, val)) in labels.iter().enumerate() {
                    if i > 0 {
                        self.0.push(',');
                    }
                    let _ = write!(self.0, "{k}=\"{}\"", escape_label(val));
                }
                self.0.push('}');
            }
            let _ = writeln!(self.0, " {}", number(*v));
        }
    }

    pub(crate) fn gauge(&mut self, name: &str, help: &str, v: Option<f64>) {
        if let Some(v) = v {
            self.family(name, help, &[(&[], v)]);
        }
    }
}

/// Rust's shortest round-trip decimal (`37475`, `0.5`), which Prometheus
/// parses exactly; the special values as the format spells them.
fn number(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf".into() } else { "-Inf".into() }
    } else {
        format!("{v}")
    }
}

/// Predictions to six significant digits: the fits are not more precise,
/// and the output stays the same across libm implementations.
pub(crate) fn sig6(v: f64) -> f64 {
    if v == 0.0 || !v.is_finite() { v } else { format!("{v:.5e}").parse().unwrap_or(v) }
}

fn escape_help(s: &str) -> String {
    s.replace('\\', "\\\\").replace('\n', "\\n")
}

fn escape_label(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_escapes() {
        assert_eq!(number(37475.0), "37475");
        assert_eq!(number(-12.0), "-12");
        assert_eq!(number(0.5), "0.5");
        assert_eq!(number(2.5e-7), "0.00000025");
        assert_eq!(number(f64::INFINITY), "+Inf");
        assert_eq!(number(sig6(7.560540772655412)), "7.56054");
        assert_eq!(number(sig6(2619600528.0).round()), "2619600000");
        assert_eq!(escape_label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
        assert_eq!(escape_help("x\\y\nz"), "x\\\\y\\nz");
    }

    #[test]
    fn unknown_values_leave_the_family_out() {
        let mut o = Out(String::new());
        o.gauge("dentrylab_x_seconds", "x", None);
        assert!(o.0.is_empty());
        o.gauge("dentrylab_x_seconds", "x", Some(1.5));
        assert_eq!(o.0, "# HELP dentrylab_x_seconds x\n# TYPE dentrylab_x_seconds gauge\ndentrylab_x_seconds 1.5\n");
    }
}
