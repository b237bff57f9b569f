//! The REST view of a job graph: Flink's `plan` in `GET /jobs/{id}`, a
//! node per vertex, each with the edges into it and how records travel
//! along them.

use holdfast_runtime::graph::{Distribution, JobGraph};
use holdfast_runtime::ids::JobId;

use crate::rest::answers::{PlanInput, PlanNode, PlanView, vertex_id};

/// Flink's name of how records travel between streaming tasks.
const EXCHANGE: &str = "pipelined_bounded";
/// What Flink writes as a streaming operator's strategy.
const OPERATOR_STRATEGY: &str = "(none)";
/// The type of every holdfast job, in Flink's words.
pub(crate) const JOB_TYPE: &str = "STREAMING";

/// The `plan` of job `id` with `graph`.
pub(super) fn graph_view(id: JobId, graph: &JobGraph) -> PlanView {
    let nodes = graph
        .vertices
        .iter()
        .enumerate()
        .map(|(index, vertex)| PlanNode {
            id: vertex_id(index as u32),
            parallelism: vertex.parallelism,
            operator: vertex.task.clone(),
            operator_strategy: OPERATOR_STRATEGY.to_owned(),
            description: vertex.name.clone(),
            optimizer_properties: serde_json::Map::new(),
            inputs: graph
                .inputs_of(index as u32)
                .enumerate()
                .map(|(num, (edge, e))| PlanInput {
                    num: num as u32,
                    id: vertex_id(e.from),
                    edge,
                    ship_strategy: ship_strategy(e.distribution).to_owned(),
                    exchange: EXCHANGE.to_owned(),
                })
                .collect(),
        })
        .collect();
    PlanView {
        jid: id.to_string(),
        name: graph.name.clone(),
        job_type: JOB_TYPE.to_owned(),
        nodes,
    }
}

/// Flink's `ship_strategy` of an edge: `FORWARD` for pointwise (its
/// pointwise edges join equal parallelisms), Flink's distribution-pattern
/// name `ALL_TO_ALL` otherwise (which partitioner — hash, rebalance,
/// broadcast — is the dataflow's, not the graph's, to say).
fn ship_strategy(distribution: Distribution) -> &'static str {
    match distribution {
        Distribution::Pointwise => "FORWARD",
        Distribution::AllToAll => "ALL_TO_ALL",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use holdfast_runtime::graph::{Edge, Vertex};
    use serde_json::json;

    fn vertex(name: &str, parallelism: u32) -> Vertex {
        Vertex {
            name: name.into(),
            task: "count".into(),
            args: json!(null),
            parallelism,
            operators: Vec::new(),
        }
    }

    #[test]
    fn each_node_lists_its_inputs_with_their_ship_strategy() {
        let graph = JobGraph {
            name: "j".into(),
            vertices: vec![vertex("src", 2), vertex("map", 2), vertex("sink", 1)],
            edges: vec![
                Edge::pointwise(0, 1),
                Edge::all_to_all(1, 2),
                Edge::all_to_all(0, 2),
            ],
            max_parallelism: None,
        };
        let plan = graph_view(JobId::from_u128(1), &graph);
        let json = serde_json::to_value(&plan).unwrap();
        assert_eq!(json["jid"], JobId::from_u128(1).to_string());
        assert_eq!(json["type"], "STREAMING");
        assert_eq!(
            json["nodes"][0],
            json!({"id": vertex_id(0), "parallelism": 2, "operator": "count",
                   "operator_strategy": "(none)", "description": "src",
                   "optimizer_properties": {}}),
            "a source has no inputs"
        );
        assert_eq!(
            json["nodes"][1]["inputs"],
            json!([{"num": 0, "id": vertex_id(0), "edge": 0, "ship_strategy": "FORWARD",
                    "exchange": "pipelined_bounded"}])
        );
        let sink: Vec<_> = plan.nodes[2]
            .inputs
            .iter()
            .map(|i| (i.num, i.id.as_str(), i.edge, i.ship_strategy.as_str()))
            .collect();
        let (one, zero) = (vertex_id(1), vertex_id(0));
        assert_eq!(
            sink,
            [
                (0, one.as_str(), 1, "ALL_TO_ALL"),
                (1, zero.as_str(), 2, "ALL_TO_ALL")
            ]
        );
    }
}
