//! SVG plots (plotters, SVG backend only: text is SVG `<text>`, no font
//! libraries needed): throughput against message size per transport, and
//! REQ/REP round-trip percentiles.

use std::path::Path;

use plotters::prelude::*;

use crate::results::{Results, ScenarioResult};
use crate::scenario::{Pattern, Slot, Transport};
use crate::stats::{spread, summarize, Metric};

const SERIES: [(Slot, &str, RGBColor); 4] = [
    (Slot::A, "libzmq", RGBColor(31, 119, 180)),
    (Slot::B, "fabriq", RGBColor(214, 39, 40)),
    (Slot::C, "omq", RGBColor(44, 160, 44)),
    (Slot::Floor, "raw floor", RGBColor(90, 90, 90)),
];

/// A named line: label, colour, points.
type Series<L> = (L, RGBColor, Vec<(f64, f64)>);

fn size_label(x: f64) -> String {
    let x = x.round() as u64;
    if x >= 1 << 20 && x % (1 << 20) == 0 {
        format!("{}M", x >> 20)
    } else if x >= 1024 && x % 1024 == 0 {
        format!("{}k", x >> 10)
    } else {
        x.to_string()
    }
}

fn de<E: std::fmt::Debug>(e: E) -> String {
    format!("plot: {e:?}")
}

/// Writes every plot the results allow into `dir`; returns the file names.
pub fn write_all(results: &Results, dir: &Path) -> Result<Vec<String>, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("create {}: {e}", dir.display()))?;
    let mut files = Vec::new();
    for transport in [Transport::Tcp, Transport::Ipc, Transport::Inproc] {
        for (pattern, subs) in [
            (Pattern::Pushpull, 1),
            (Pattern::Pubsub, 1),
            (Pattern::Pubsub, 4),
        ] {
            let rows: Vec<&ScenarioResult> = results
                .scenarios
                .iter()
                .filter(|s| {
                    s.scenario.pattern == pattern
                        && s.scenario.transport == transport
                        && s.scenario.subs == subs
                })
                .collect();
            if rows.len() < 2 {
                continue;
            }
            let name = match pattern {
                Pattern::Pubsub => format!("throughput-pubsub{subs}-{}.svg", transport.name()),
                _ => format!("throughput-{}-{}.svg", pattern.name(), transport.name()),
            };
            let title = match pattern {
                Pattern::Pubsub => format!(
                    "PUB/SUB, {subs} subscriber(s), {}: msg/s per subscriber (median)",
                    transport.name()
                ),
                _ => format!("PUSH/PULL over {}: msg/s (median)", transport.name()),
            };
            throughput(&rows, &dir.join(&name), &title)?;
            files.push(name);
        }
        let rows: Vec<&ScenarioResult> = results
            .scenarios
            .iter()
            .filter(|s| s.scenario.pattern == Pattern::Reqrep && s.scenario.transport == transport)
            .collect();
        if !rows.is_empty() {
            let name = format!("latency-reqrep-{}.svg", transport.name());
            latency(&rows, &dir.join(&name), transport)?;
            files.push(name);
        }
    }
    Ok(files)
}

fn throughput(rows: &[&ScenarioResult], path: &Path, title: &str) -> Result<(), String> {
    let mut series: Vec<Series<&str>> = Vec::new();
    for (slot, name, color) in SERIES {
        let points: Vec<(f64, f64)> = rows
            .iter()
            .filter_map(|sr| {
                let s = summarize(sr, Metric::MsgPerS);
                let v = match slot {
                    Slot::A => s.a,
                    Slot::B => s.b,
                    Slot::C => s.c,
                    _ => s.floor,
                }?;
                Some((sr.scenario.size as f64, v.median))
            })
            .collect();
        if !points.is_empty() {
            series.push((name, color, points));
        }
    }
    let all = series.iter().flat_map(|s| s.2.iter());
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for &(x, y) in all {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y0 = y0.min(y);
        y1 = y1.max(y);
    }
    if series.is_empty() || y0 <= 0.0 {
        return Ok(());
    }
    let root = SVGBackend::new(path, (820, 520)).into_drawing_area();
    root.fill(&WHITE).map_err(de)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(
            (x0 / 1.5..x1 * 1.5).log_scale(),
            (y0 / 2.0..y1 * 2.0).log_scale(),
        )
        .map_err(de)?;
    chart
        .configure_mesh()
        .x_desc("message size (bytes)")
        .y_desc("messages per second")
        .x_label_formatter(&|x| size_label(*x))
        .y_label_formatter(&|y| crate::table::num(*y))
        .draw()
        .map_err(de)?;
    for (name, color, points) in series {
        chart
            .draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))
            .map_err(de)?
            .label(name)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
        chart
            .draw_series(
                points
                    .into_iter()
                    .map(|p| Circle::new(p, 3, color.filled())),
            )
            .map_err(de)?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(de)?;
    root.present().map_err(de)
}

/// x position of a percentile: the number of nines, -log10(1 - p).
fn nines(p: f64) -> f64 {
    -(1.0 - p / 100.0).max(1e-5).log10()
}

fn latency(rows: &[&ScenarioResult], path: &Path, transport: Transport) -> Result<(), String> {
    let mut series: Vec<Series<String>> = Vec::new();
    for sr in rows {
        for (slot, name, color) in SERIES {
            // Element-wise median over repetitions of each percentile.
            let trials: Vec<&Vec<(f64, u64)>> = sr
                .trials
                .iter()
                .filter(|t| t.ok && t.slot == slot)
                .filter_map(|t| t.metrics.as_ref()?.latency.as_ref().map(|l| &l.points))
                .collect();
            let Some(first) = trials.first() else {
                continue;
            };
            let points: Vec<(f64, f64)> = first
                .iter()
                .enumerate()
                .filter(|(_, (p, _))| *p < 100.0)
                .filter_map(|(k, (p, _))| {
                    let vals: Vec<f64> = trials
                        .iter()
                        .filter_map(|t| t.get(k).map(|v| v.1 as f64 / 1000.0))
                        .collect();
                    Some((nines(*p), spread(&vals)?.median))
                })
                .collect();
            series.push((format!("{name} {} B", sr.scenario.size), color, points));
        }
    }
    let all = series.iter().flat_map(|s| s.2.iter());
    let (mut y0, mut y1) = (f64::MAX, f64::MIN);
    for &(_, y) in all {
        y0 = y0.min(y);
        y1 = y1.max(y);
    }
    if series.is_empty() || y0 <= 0.0 {
        return Ok(());
    }
    let root = SVGBackend::new(path, (820, 520)).into_drawing_area();
    root.fill(&WHITE).map_err(de)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!(
                "REQ/REP round trip over {}: percentiles (median over repetitions)",
                transport.name()
            ),
            ("sans-serif", 18),
        )
        .margin(12)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..4.0f64, (y0 / 1.5..y1 * 1.5).log_scale())
        .map_err(de)?;
    chart
        .configure_mesh()
        .x_desc("percentile")
        .y_desc("round trip (us)")
        .x_labels(5)
        .y_labels(12)
        .x_label_formatter(&|x| match x.round() as i32 {
            _ if (x - x.round()).abs() > 0.01 => String::new(),
            0 => "0".into(),
            1 => "90".into(),
            2 => "99".into(),
            3 => "99.9".into(),
            n => format!("99.{}", "9".repeat(n as usize - 2)),
        })
        .y_label_formatter(&|y| crate::table::num(*y))
        .draw()
        .map_err(de)?;
    let sizes: Vec<String> = rows
        .iter()
        .map(|r| format!("{} B", r.scenario.size))
        .collect();
    for (name, color, points) in series {
        // Larger messages: thinner lines, so the sizes stay apart.
        let idx = sizes
            .iter()
            .position(|s| name.ends_with(s.as_str()))
            .unwrap_or(0);
        let width = 3u32.saturating_sub(idx as u32).max(1);
        let style = color.stroke_width(width);
        chart
            .draw_series(LineSeries::new(points.clone(), style))
            .map_err(de)?
            .label(name)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
        chart
            .draw_series(
                points
                    .into_iter()
                    .map(|p| Circle::new(p, 2, color.filled())),
            )
            .map_err(de)?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(de)?;
    root.present().map_err(de)
}
