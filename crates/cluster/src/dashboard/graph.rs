//! A job's graph drawn as SVG: a box per vertex (name, task, parallelism,
//! how many subtasks run, records in per second), columns by depth from the
//! sources, an arrow per edge labelled with its ship strategy.

use maud::{Markup, html};

use super::format;
use crate::rest::answers::{JobDetails, vertex_index};

const BOX_W: f64 = 200.0;
const BOX_H: f64 = 64.0;
const GAP_X: f64 = 90.0;
const GAP_Y: f64 = 24.0;
const MARGIN: f64 = 10.0;

/// Where each vertex goes: its column (longest path from a source) and
/// row. Vertices are indexed as in `job.plan.nodes`; an edge naming an
/// unknown vertex is ignored, and a cycle (which a job graph cannot
/// have) cannot loop: depths stop growing after one pass per vertex.
pub(super) fn place(job: &JobDetails) -> Vec<(usize, usize)> {
    let n = job.plan.nodes.len();
    let mut depth = vec![0usize; n];
    for _ in 0..n {
        let mut changed = false;
        for (i, node) in job.plan.nodes.iter().enumerate() {
            for input in &node.inputs {
                let from = vertex_index(&input.id).map_or(usize::MAX, |v| v as usize);
                if from < n && from != i && depth[from] + 1 > depth[i] && depth[from] < n {
                    depth[i] = depth[from] + 1;
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    }
    let mut rows = vec![0usize; n.max(1)];
    depth
        .iter()
        .map(|&d| {
            let row = rows[d.min(n.saturating_sub(1))];
            rows[d.min(n.saturating_sub(1))] += 1;
            (d, row)
        })
        .collect()
}

fn at(column: usize, row: usize) -> (f64, f64) {
    (
        MARGIN + column as f64 * (BOX_W + GAP_X),
        MARGIN + row as f64 * (BOX_H + GAP_Y),
    )
}

/// The graph of `job`.
pub(super) fn render(job: &JobDetails) -> Markup {
    let places = place(job);
    let columns = places.iter().map(|p| p.0 + 1).max().unwrap_or(1);
    let rows = places.iter().map(|p| p.1 + 1).max().unwrap_or(1);
    let width = 2.0 * MARGIN + columns as f64 * BOX_W + (columns - 1) as f64 * GAP_X;
    let height = 2.0 * MARGIN + rows as f64 * BOX_H + (rows - 1) as f64 * GAP_Y;
    let rate = |i: usize| -> (usize, usize, f64) {
        job.vertices.get(i).map_or((0, 0, 0.0), |v| {
            let running = v.subtasks.iter().filter(|s| s.status == "RUNNING").count();
            let rate = v.subtasks.iter().map(|s| s.records_in_per_second).sum();
            (running, v.subtasks.len(), rate)
        })
    };
    html! {
        svg.graph xmlns="http://www.w3.org/2000/svg" width=(format!("{width:.0}")) height=(format!("{height:.0}"))
            viewBox=(format!("0 0 {width:.0} {height:.0}")) role="img" aria-label="the job graph" {
            defs { marker #arrow viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse" {
                path d="M 0 0 L 10 5 L 0 10 z" class="arrow-head" {} } }
            @for (i, node) in job.plan.nodes.iter().enumerate() {
                @for input in &node.inputs {
                    @if let (Some(&(fc, fr)), Some(&(tc, tr))) = (vertex_index(&input.id).and_then(|v| places.get(v as usize)), places.get(i)) {
                        @let (x0, y0) = at(fc, fr);
                        @let (x1, y1) = at(tc, tr);
                        @let (ax, ay, bx, by) = (x0 + BOX_W, y0 + BOX_H / 2.0, x1, y1 + BOX_H / 2.0);
                        g.edge data-from=(vertex_index(&input.id).map_or(-1, i64::from)) data-to=(i) {
                            path d=(format!("M {ax:.1} {ay:.1} C {:.1} {ay:.1}, {:.1} {by:.1}, {bx:.1} {by:.1}", ax + GAP_X / 2.0, bx - GAP_X / 2.0)) marker-end="url(#arrow)" {}
                            text.ship x=(format!("{:.1}", (ax + bx) / 2.0)) y=(format!("{:.1}", (ay + by) / 2.0 - 5.0)) text-anchor="middle" { (input.ship_strategy) }
                        }
                    }
                }
            }
            @for (i, node) in job.plan.nodes.iter().enumerate() {
                @if let Some(&(c, r)) = places.get(i) {
                    @let (x, y) = at(c, r);
                    @let (running, total, rate) = rate(i);
                    g.vertex data-vertex=(vertex_index(&node.id).map_or(-1, i64::from)) {
                        title { (node.description) " (" (node.operator) "), parallelism " (node.parallelism) }
                        rect x=(format!("{x:.1}")) y=(format!("{y:.1}")) width=(BOX_W) height=(BOX_H) rx="6" {}
                        text.name x=(format!("{:.1}", x + 10.0)) y=(format!("{:.1}", y + 20.0)) { (clip(&node.description, 26)) }
                        text x=(format!("{:.1}", x + 10.0)) y=(format!("{:.1}", y + 38.0)) { (clip(&node.operator, 16)) " · ×" (node.parallelism) }
                        text x=(format!("{:.1}", x + 10.0)) y=(format!("{:.1}", y + 55.0)) { (running) "/" (total) " running · " (format::rate(rate)) }
                    }
                }
            }
        }
    }
}

/// `text` cut to `max` characters (with `…`).
fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(max - 1).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rest::answers::{PlanInput, PlanNode, PlanView, vertex_id};

    fn job(edges: &[(u32, u32)], n: u32) -> JobDetails {
        let nodes = (0..n)
            .map(|i| PlanNode {
                id: vertex_id(i),
                parallelism: 2,
                operator: "dataflow".into(),
                description: format!("v{i}"),
                inputs: edges
                    .iter()
                    .enumerate()
                    .filter(|(_, e)| e.1 == i)
                    .map(|(k, e)| PlanInput {
                        num: k as u32,
                        id: vertex_id(e.0),
                        edge: k as u32,
                        ship_strategy: "ALL_TO_ALL".into(),
                        exchange: "pipelined_bounded".into(),
                    })
                    .collect(),
                ..PlanNode::default()
            })
            .collect();
        JobDetails {
            jid: "j".into(),
            name: "j".into(),
            state: "RUNNING".into(),
            plan: PlanView {
                jid: "j".into(),
                name: "j".into(),
                nodes,
                ..PlanView::default()
            },
            ..JobDetails::default()
        }
    }

    #[test]
    fn vertices_go_into_columns_by_their_longest_path_from_a_source() {
        // 0 → 1 → 3, 0 → 2 → 3, 0 → 3 (a diamond with a shortcut), 4 alone.
        let places = place(&job(&[(0, 1), (1, 3), (0, 2), (2, 3), (0, 3)], 5));
        assert_eq!(places, vec![(0, 0), (1, 0), (1, 1), (2, 0), (0, 1)]);
    }

    #[test]
    fn edges_to_unknown_or_cyclic_vertices_do_not_break_the_picture() {
        let places = place(&job(&[(0, 1), (1, 0), (9, 1)], 2));
        assert_eq!(places.len(), 2);
        assert!(places.iter().all(|&(c, _)| c <= 2));
        let svg = render(&job(&[(0, 1), (1, 0), (9, 1)], 2)).into_string();
        assert_eq!(svg.matches("class=\"vertex\"").count(), 2);
    }

    #[test]
    fn every_edge_is_drawn_with_its_ship_strategy() {
        let svg = render(&job(&[(0, 1), (1, 2)], 3)).into_string();
        assert_eq!(svg.matches("class=\"edge\"").count(), 2);
        assert_eq!(svg.matches(">ALL_TO_ALL<").count(), 2);
        assert!(svg.contains("data-from=\"0\" data-to=\"1\""));
    }
}
