//! Parsing of the suite's output: the OSU-style `# header` + `SIZE VALUE` lines of the sized
//! benchmarks, and the `NAME VALUE` metric lines of `init --report-mem`.
//!
//! Parsing is strict: a line that is neither a comment nor a well-formed row is an error, so
//! that a run whose output was garbled never yields figures.

use std::fmt;

/// The parsed output of one sized benchmark run.
#[derive(Clone, Debug, PartialEq)]
pub struct OsuOutput {
    /// The benchmark name from an `# oxbench NAME ...` header, if the header names it.
    pub benchmark: Option<String>,
    /// The rank count from an `np=N` token in the header, if present.
    pub np: Option<u32>,
    /// The unit, from the last parenthesised group of the header (`us`, `MB/s`, ...).
    pub unit: String,
    /// `(size in bytes, value)` in output order; sizes strictly increasing.
    pub rows: Vec<(u64, f64)>,
}

/// Why output could not be parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// 1-based line number, or 0 for a problem with the output as a whole.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}", self.message)
        } else {
            write!(f, "line {}: {}", self.line, self.message)
        }
    }
}

impl std::error::Error for ParseError {}

fn err(line: usize, message: impl Into<String>) -> ParseError {
    ParseError {
        line,
        message: message.into(),
    }
}

/// Extracts the unit: the contents of the last `( ... )` group of a header line.
fn header_unit(header: &str) -> Option<String> {
    let close = header.rfind(')')?;
    let open = header[..close].rfind('(')?;
    let unit = header[open + 1..close].trim();
    (!unit.is_empty()).then(|| unit.to_string())
}

/// Parses OSU-style output: `#` lines (the first one that carries a unit is the header), then
/// one `SIZE VALUE` line per size. Blank lines are ignored.
pub fn parse_osu(text: &str) -> Result<OsuOutput, ParseError> {
    let mut header: Option<(String, Option<String>, Option<u32>)> = None;
    let mut rows: Vec<(u64, f64)> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let line = raw.trim();
        if line.is_empty() {
            continue;
        }
        if let Some(comment) = line.strip_prefix('#') {
            if header.is_none() {
                if let Some(unit) = header_unit(comment) {
                    let mut words = comment.split_whitespace();
                    let name = match (words.next(), words.next()) {
                        (Some("oxbench"), Some(name)) => Some(name.to_string()),
                        _ => None,
                    };
                    let np = comment
                        .split_whitespace()
                        .find_map(|w| w.trim_end_matches(':').strip_prefix("np="))
                        .and_then(|v| v.parse().ok());
                    header = Some((unit, name, np));
                }
            }
            continue;
        }
        if header.is_none() {
            return Err(err(n, format!("data before the '#' header: '{line}'")));
        }
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.len() != 2 {
            return Err(err(n, format!("expected 'SIZE VALUE', got '{line}'")));
        }
        let size: u64 = fields[0]
            .parse()
            .map_err(|_| err(n, format!("size '{}' is not a byte count", fields[0])))?;
        let value = parse_value(fields[1]).map_err(|m| err(n, m))?;
        if let Some(&(prev, _)) = rows.last() {
            if size <= prev {
                return Err(err(n, format!("size {size} does not follow {prev}")));
            }
        }
        rows.push((size, value));
    }
    let (unit, benchmark, np) = header.ok_or_else(|| err(0, "no '#' header line with a unit"))?;
    if rows.is_empty() {
        return Err(err(0, "header but no 'SIZE VALUE' lines"));
    }
    Ok(OsuOutput {
        benchmark,
        np,
        unit,
        rows,
    })
}

fn parse_value(text: &str) -> Result<f64, String> {
    let v: f64 = text
        .parse()
        .map_err(|_| format!("value '{text}' is not a number"))?;
    if !v.is_finite() || v < 0.0 {
        return Err(format!(
            "value '{text}' is not a finite non-negative number"
        ));
    }
    Ok(v)
}

/// Parses `NAME VALUE` metric lines (after optional `#` comments), as printed by
/// `init --report-mem`. Names must be unique.
pub fn parse_metrics(text: &str) -> Result<Vec<(String, f64)>, ParseError> {
    let mut out: Vec<(String, f64)> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.len() != 2 {
            return Err(err(n, format!("expected 'NAME VALUE', got '{line}'")));
        }
        let name = fields[0];
        if name.parse::<f64>().is_ok() {
            return Err(err(n, format!("metric name '{name}' is a number")));
        }
        if out.iter().any(|(k, _)| k == name) {
            return Err(err(n, format!("metric '{name}' appears twice")));
        }
        out.push((
            name.to_string(),
            parse_value(fields[1]).map_err(|m| err(n, m))?,
        ));
    }
    if out.is_empty() {
        return Err(err(0, "no 'NAME VALUE' lines"));
    }
    Ok(out)
}

/// Checks that a parsed run printed exactly the expected sizes, in order.
pub fn check_sizes(output: &OsuOutput, expected: &[u64]) -> Result<(), String> {
    let got: Vec<u64> = output.rows.iter().map(|&(s, _)| s).collect();
    if got == expected {
        return Ok(());
    }
    let missing: Vec<String> = expected
        .iter()
        .filter(|s| !got.contains(s))
        .map(u64::to_string)
        .collect();
    let extra: Vec<String> = got
        .iter()
        .filter(|s| !expected.contains(s))
        .map(u64::to_string)
        .collect();
    Err(format!(
        "printed sizes differ from those asked for (missing: [{}], unexpected: [{}])",
        missing.join(", "),
        extra.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const LATENCY: &str = "# oxbench latency np=2: one-way latency (us)\n\
                           0          0.190\n\
                           1          0.211\n\
                           2          0.215\n";

    #[test]
    fn parses_oxbench_output() {
        let out = parse_osu(LATENCY).unwrap();
        assert_eq!(out.benchmark.as_deref(), Some("latency"));
        assert_eq!(out.np, Some(2));
        assert_eq!(out.unit, "us");
        assert_eq!(out.rows, vec![(0, 0.19), (1, 0.211), (2, 0.215)]);
        check_sizes(&out, &[0, 1, 2]).unwrap();
    }

    #[test]
    fn parses_osu_micro_benchmark_style_headers() {
        let text = "# OSU MPI Bandwidth Test v7.4\n# Size      Bandwidth (MB/s)\n\
                    1                       2.51\n2 5.02\n\n";
        let out = parse_osu(text).unwrap();
        assert_eq!(out.benchmark, None);
        assert_eq!(out.np, None);
        assert_eq!(out.unit, "MB/s");
        assert_eq!(out.rows.len(), 2);
    }

    #[test]
    fn rejects_malformed_output() {
        let cases = [
            ("", "no '#' header"),
            ("# oxbench bw np=2: bandwidth (MB/s)\n", "no 'SIZE VALUE'"),
            ("1 2.0\n", "before the '#' header"),
            ("# h (us)\n1 2 3\n", "expected 'SIZE VALUE'"),
            ("# h (us)\n-1 2\n", "not a byte count"),
            ("# h (us)\n1 abc\n", "not a number"),
            ("# h (us)\n1 nan\n", "finite"),
            ("# h (us)\n1 -3\n", "finite"),
            ("# h (us)\n4 1\n2 1\n", "does not follow"),
            ("# h (us)\n4 1\n4 1\n", "does not follow"),
            ("# no unit here\n1 1\n", "before the '#' header"),
            ("# h (us)\nmpiexec: warning\n", "not a byte count"),
        ];
        for (text, want) in cases {
            let e = parse_osu(text).unwrap_err();
            assert!(e.to_string().contains(want), "{text:?}: {e}");
        }
        let e = parse_osu("# h (us)\n1 x\n").unwrap_err();
        assert_eq!(e.line, 2);
    }

    #[test]
    fn size_check_names_missing_and_extra() {
        let out = parse_osu(LATENCY).unwrap();
        let e = check_sizes(&out, &[0, 1, 4]).unwrap_err();
        assert!(
            e.contains("missing: [4]") && e.contains("unexpected: [2]"),
            "{e}"
        );
        assert!(check_sizes(&out, &[0, 1]).is_err());
    }

    #[test]
    fn parses_metrics() {
        let text = "# oxbench init np=2: memory per rank (kB)\nvmhwm-max-kB 13320\n\
                    shm-mapped-per-rank-kB 16510.5\n";
        let m = parse_metrics(text).unwrap();
        assert_eq!(
            m,
            vec![
                ("vmhwm-max-kB".to_string(), 13320.0),
                ("shm-mapped-per-rank-kB".to_string(), 16510.5)
            ]
        );
        assert!(parse_metrics("# only a header\n").is_err());
        assert!(parse_metrics("a 1\na 2\n")
            .unwrap_err()
            .to_string()
            .contains("twice"));
        assert!(parse_metrics("a 1 2\n").is_err());
        assert!(parse_metrics("12 1\n").is_err());
        assert!(parse_metrics("a inf\n").is_err());
    }
}
