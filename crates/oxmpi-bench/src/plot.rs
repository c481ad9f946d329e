//! Plots of a benchmark against message size on log–log axes, one line per implementation
//! (median, with min–max bars), written as SVG and PNG.
//!
//! Text is drawn with an embedded font (DejaVu Sans, from the `dejavu` crate; Bitstream Vera
//! license, free to embed and redistribute), so no system font library is needed.

use std::path::Path;
use std::sync::OnceLock;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::{register_font, FontStyle};

use crate::stats::Summary;
use crate::suite::format_size;

/// One implementation's curve.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// Legend label.
    pub name: String,
    /// `(size in bytes, summary over repeats)`; sizes of 0 and values ≤ 0 are left out (log
    /// axes cannot show them).
    pub points: Vec<(u64, Summary)>,
}

/// Labels of one chart.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Labels {
    /// Chart title.
    pub title: String,
    /// Y axis description with its unit.
    pub y: String,
}

const WIDTH: u32 = 960;
const HEIGHT: u32 = 600;
const COLORS: [RGBColor; 6] = [
    RGBColor(200, 30, 30),
    RGBColor(30, 90, 200),
    RGBColor(20, 150, 60),
    RGBColor(200, 130, 0),
    RGBColor(130, 40, 170),
    RGBColor(90, 90, 90),
];

fn fonts() -> Result<(), String> {
    static REGISTERED: OnceLock<Result<(), String>> = OnceLock::new();
    REGISTERED
        .get_or_init(|| {
            register_font("sans-serif", FontStyle::Normal, dejavu::sans::regular())
                .map_err(|_| "the embedded DejaVu Sans font could not be loaded".to_string())
        })
        .clone()
}

/// A compact axis label: `0.1`, `2.5`, `100`, `15000`, `200k`, `10M`.
pub fn tick(v: f64) -> String {
    if v.abs() >= 1e5 {
        let (scaled, suffix) = if v.abs() >= 1e9 {
            (v / 1e9, "G")
        } else if v.abs() >= 1e6 {
            (v / 1e6, "M")
        } else {
            (v / 1e3, "k")
        };
        return format!("{}{suffix}", tick(scaled));
    }
    if v.abs() >= 1000.0 {
        return format!("{v:.0}");
    }
    let s = format!("{v:.4}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s.is_empty() || s == "-" {
        "0".to_string()
    } else {
        s.to_string()
    }
}

/// The points of a series that a log–log chart can show.
fn drawable(s: &Series) -> Vec<(f64, Summary)> {
    s.points
        .iter()
        .filter(|(size, v)| *size > 0 && v.min > 0.0)
        .map(|&(size, v)| (size as f64, v))
        .collect()
}

/// True when the first drawable series ends higher than it starts (latency, bandwidth).
pub fn rising(series: &[Series]) -> bool {
    series
        .iter()
        .map(drawable)
        .find(|p| !p.is_empty())
        .map_or(true, |p| p[p.len() - 1].1.median >= p[0].1.median)
}

/// Axis ranges `(x, y)` covering every drawable point with a margin; `None` if nothing to draw.
pub fn ranges(series: &[Series]) -> Option<((f64, f64), (f64, f64))> {
    let pts: Vec<(f64, Summary)> = series.iter().flat_map(drawable).collect();
    if pts.is_empty() {
        return None;
    }
    let xmin = pts.iter().map(|p| p.0).fold(f64::INFINITY, f64::min);
    let xmax = pts.iter().map(|p| p.0).fold(0.0, f64::max);
    let ymin = pts.iter().map(|p| p.1.min).fold(f64::INFINITY, f64::min);
    let ymax = pts.iter().map(|p| p.1.max).fold(0.0, f64::max);
    // Whole decades on the y axis, so that both ends carry a labelled tick.
    let y0 = 10f64.powf((ymin / 1.2).log10().floor());
    let y1 = 10f64.powf((ymax * 1.2).log10().ceil());
    Some(((xmin / 1.5, xmax * 1.5), (y0, y1)))
}

fn draw<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    labels: &Labels,
    series: &[Series],
) -> Result<(), String> {
    let e = |err: DrawingAreaErrorKind<DB::ErrorType>| format!("drawing failed: {err}");
    let ((x0, x1), (y0, y1)) = ranges(series).ok_or("no positive values to plot")?;
    root.fill(&WHITE).map_err(e)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(&labels.title, ("sans-serif", 26))
        .margin(16)
        .x_label_area_size(56)
        .y_label_area_size(84)
        .build_cartesian_2d((x0..x1).log_scale().base(2.0), (y0..y1).log_scale())
        .map_err(e)?;
    chart
        .configure_mesh()
        .x_desc("message size (bytes)")
        .y_desc(&labels.y)
        .x_labels(12)
        .y_labels(10)
        .x_label_formatter(&|x| format_size(x.round() as u64))
        .y_label_formatter(&|y| tick(*y))
        .label_style(("sans-serif", 16))
        .axis_desc_style(("sans-serif", 18))
        .light_line_style(RGBColor(235, 235, 235))
        .bold_line_style(RGBColor(200, 200, 200))
        .draw()
        .map_err(e)?;
    for (i, s) in series.iter().enumerate() {
        let pts = drawable(s);
        if pts.is_empty() {
            continue;
        }
        let color = COLORS[i % COLORS.len()];
        let line = ShapeStyle::from(&color).stroke_width(2);
        chart
            .draw_series(LineSeries::new(
                pts.iter().map(|(x, v)| (*x, v.median)),
                line,
            ))
            .map_err(e)?
            .label(&s.name)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 24, y)], color.stroke_width(3))
            });
        chart
            .draw_series(
                pts.iter()
                    .map(|(x, v)| Circle::new((*x, v.median), 3, color.filled())),
            )
            .map_err(e)?;
        chart
            .draw_series(pts.iter().filter(|(_, v)| v.max > v.min).map(|(x, v)| {
                ErrorBar::new_vertical(*x, v.min, v.median, v.max, color.stroke_width(1), 6)
            }))
            .map_err(e)?;
    }
    // The legend goes in the empty corner: upper left for rising curves, lower left otherwise.
    let position = if rising(series) {
        SeriesLabelPosition::UpperLeft
    } else {
        SeriesLabelPosition::LowerLeft
    };
    chart
        .configure_series_labels()
        .position(position)
        .label_font(("sans-serif", 18))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(e)?;
    root.present().map_err(e)?;
    Ok(())
}

/// Writes `<base>.svg` and `<base>.png`.
pub fn plot(base: &Path, labels: &Labels, series: &[Series]) -> Result<(), String> {
    fonts()?;
    if let Some(dir) = base.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    let svg = base.with_extension("svg");
    let png = base.with_extension("png");
    draw(
        SVGBackend::new(&svg, (WIDTH, HEIGHT)).into_drawing_area(),
        labels,
        series,
    )
    .map_err(|m| format!("{}: {m}", svg.display()))?;
    draw(
        BitMapBackend::new(&png, (WIDTH, HEIGHT)).into_drawing_area(),
        labels,
        series,
    )
    .map_err(|m| format!("{}: {m}", png.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: f64) -> Summary {
        Summary::of(&[v * 0.9, v, v * 1.2]).unwrap()
    }

    fn series() -> Vec<Series> {
        vec![
            Series {
                name: "openmpi".into(),
                points: (0..12)
                    .map(|i| (1u64 << i >> 1, s(0.2 + i as f64)))
                    .collect(),
            },
            Series {
                name: "mpich".into(),
                points: (0..12)
                    .map(|i| (1u64 << i >> 1, s(1.5 + i as f64)))
                    .collect(),
            },
        ]
    }

    #[test]
    fn legend_corner_follows_the_curve() {
        assert!(rising(&series()));
        let mut falling = series();
        for s in &mut falling {
            s.points.reverse();
            for (i, p) in s.points.iter_mut().enumerate() {
                p.0 = 1 << i;
            }
        }
        assert!(!rising(&falling));
        assert!(rising(&[]));
    }

    #[test]
    fn ranges_skip_zero_sizes_and_cover_the_spread() {
        let ((x0, x1), (y0, y1)) = ranges(&series()).unwrap();
        assert!(x0 > 0.0 && x0 < 1.0 && x1 > 1024.0);
        assert_eq!((y0, y1), (0.1, 100.0), "whole decades around 0.18..13.2");
        assert_eq!(ranges(&[]), None);
        let zeros = Series {
            name: "z".into(),
            points: vec![(0, s(1.0))],
        };
        assert_eq!(ranges(&[zeros]), None);
    }

    #[test]
    fn tick_labels() {
        assert_eq!(tick(100.0), "100");
        assert_eq!(tick(0.1), "0.1");
        assert_eq!(tick(2.5), "2.5");
        assert_eq!(tick(15000.4), "15000");
        assert_eq!(tick(200_000.0), "200k");
        assert_eq!(tick(10_000_000.0), "10M");
        assert_eq!(tick(2.5e9), "2.5G");
        assert_eq!(tick(0.0), "0");
        assert_eq!(tick(0.00012), "0.0001");
    }

    #[test]
    fn writes_svg_and_png() {
        let dir = std::env::temp_dir().join(format!("oxmpi-bench-plot-{}", std::process::id()));
        let base = dir.join("latency-np2");
        let labels = Labels {
            title: "latency, np=2".into(),
            y: "one-way latency (us)".into(),
        };
        plot(&base, &labels, &series()).unwrap();
        let svg = std::fs::read_to_string(base.with_extension("svg")).unwrap();
        assert!(svg.contains("<svg") && svg.contains("openmpi") && svg.contains("latency, np=2"));
        let png = std::fs::read(base.with_extension("png")).unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        assert!(plot(&dir.join("empty"), &labels, &[]).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
