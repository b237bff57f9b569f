//! Which state files each task of a job restores from — the one rule for
//! restarts, new leaders and runs from a savepoint — and whether a
//! savepoint fits a job at all. Pure functions of a checkpoint's metadata
//! and the job graph.
//!
//! State is mapped by operator id (`uid`), not by position: a vertex
//! restores from every vertex of the checkpoint that held one of its
//! operators. At an unchanged parallelism a subtask reads only the same
//! subtask's file; after a change it reads every old subtask's file of
//! that vertex, and each operator takes what is its own (its key groups,
//! its source splits, the sink transactions it commits). Metadata of
//! format 1, or a graph without operator ids, maps vertex to vertex.

use std::collections::BTreeSet;

use super::metadata::Metadata;
use crate::graph::JobGraph;
use crate::ids::TaskId;

/// One state file for one task to read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileToRead {
    /// Where it is (as the metadata locates it).
    pub path: String,
    /// The old vertex that wrote it.
    pub vertex: u32,
    /// The old subtask that wrote it.
    pub subtask: u32,
    /// That vertex's parallelism in the checkpoint.
    pub parallelism: u32,
}

/// Why a savepoint does not fit a job.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SavepointMismatch {
    /// It was taken of a job of another name.
    #[error("it is a savepoint of job {savepoint:?}, not of {job:?}")]
    OtherJob {
        /// The name in the savepoint.
        savepoint: String,
        /// The job's name.
        job: String,
    },
    /// Its key groups differ from the job's.
    #[error(
        "it was taken with pipeline.max-parallelism {then} and the job now has {now}: the number of key \
         groups is fixed for a job's life (set pipeline.max-parallelism: {then})"
    )]
    KeyGroups {
        /// The savepoint's.
        then: u32,
        /// The job's.
        now: u32,
    },
    /// Neither names its operators, and the vertices differ in number.
    #[error("it holds {savepoint} vertices, the job {job}, and neither names its operators")]
    Vertices {
        /// The savepoint's vertices.
        savepoint: usize,
        /// The job's vertices.
        job: usize,
    },
    /// It holds state of operators the job does not have.
    #[error(
        "it holds state of operator{} {} that job {job:?} does not have; restore with \
         --allow-non-restored-state to drop it",
        if operators.len() == 1 { "" } else { "s" },
        operators.iter().map(|u| format!("{u:?}")).collect::<Vec<_>>().join(", ")
    )]
    Unclaimed {
        /// The operators' ids.
        operators: Vec<String>,
        /// The job's name.
        job: String,
    },
}

fn by_position(graph: &JobGraph, metadata: &Metadata) -> bool {
    metadata.vertices.is_empty() || graph.vertices.iter().all(|v| v.operators.is_empty())
}

/// The files `task` of `graph` reads from the checkpoint `metadata`
/// describes.
pub fn files_for(metadata: &Metadata, graph: &JobGraph, task: TaskId) -> Vec<FileToRead> {
    let Some(vertex) = graph.vertices.get(task.vertex as usize) else {
        return Vec::new();
    };
    let parallelism_of = |old: u32| {
        metadata
            .vertices
            .get(old as usize)
            .map(|v| v.parallelism)
            .unwrap_or_else(|| metadata.tasks.iter().filter(|t| t.vertex == old).count() as u32)
    };
    let old_vertices: Vec<u32> = if by_position(graph, metadata) {
        vec![task.vertex]
    } else {
        let mine: BTreeSet<&str> = vertex.operators.iter().map(String::as_str).collect();
        metadata
            .vertices
            .iter()
            .enumerate()
            .filter(|(_, v)| v.operators.iter().any(|o| mine.contains(o.as_str())))
            .map(|(i, _)| i as u32)
            .collect()
    };
    let mut files = Vec::new();
    for old in old_vertices {
        let old_parallelism = parallelism_of(old);
        let same = old_parallelism == vertex.parallelism;
        for entry in metadata
            .tasks
            .iter()
            .filter(|t| t.vertex == old && !t.state.is_empty())
            .filter(|t| !same || t.subtask == task.subtask)
        {
            files.push(FileToRead {
                path: metadata.state_location(entry),
                vertex: old,
                subtask: entry.subtask,
                parallelism: old_parallelism,
            });
        }
    }
    files
}

/// Whether `metadata` (a savepoint) fits `graph`: the same job, the same
/// key groups, and every operator's state claimed by an operator of the
/// job (unless `allow_non_restored`). `Ok` holds the ids of the job's
/// operators with state that start empty, for the log.
pub fn check_savepoint(
    metadata: &Metadata,
    graph: &JobGraph,
    allow_non_restored: bool,
) -> Result<Vec<String>, SavepointMismatch> {
    if !metadata.name.is_empty() && metadata.name != graph.name {
        return Err(SavepointMismatch::OtherJob {
            savepoint: metadata.name.clone(),
            job: graph.name.clone(),
        });
    }
    if let (Some(then), Some(now)) = (metadata.max_parallelism, graph.max_parallelism)
        && then != now
    {
        return Err(SavepointMismatch::KeyGroups { then, now });
    }
    let mine: BTreeSet<&str> = graph
        .vertices
        .iter()
        .flat_map(|v| v.operators.iter().map(String::as_str))
        .collect();
    let theirs: BTreeSet<&str> = metadata
        .vertices
        .iter()
        .flat_map(|v| v.operators.iter().map(String::as_str))
        .collect();
    if by_position(graph, metadata) {
        if metadata.vertices.len() != graph.vertices.len() && !metadata.vertices.is_empty() {
            return Err(SavepointMismatch::Vertices {
                savepoint: metadata.vertices.len(),
                job: graph.vertices.len(),
            });
        }
        return Ok(Vec::new());
    }
    let unclaimed: Vec<&str> = theirs.difference(&mine).copied().collect();
    if !unclaimed.is_empty() && !allow_non_restored {
        return Err(SavepointMismatch::Unclaimed {
            operators: unclaimed.iter().map(|u| (*u).to_owned()).collect(),
            job: graph.name.clone(),
        });
    }
    Ok(mine.difference(&theirs).map(|u| (*u).to_owned()).collect())
}

#[cfg(test)]
mod tests {
    use holdfast_types::CheckpointId;

    use super::*;
    use crate::graph::{Edge, Vertex};
    use crate::ids::JobId;
    use crate::recovery::metadata::TaskEntry;

    fn graph(vertices: &[(u32, &[&str])]) -> JobGraph {
        JobGraph {
            name: "job".into(),
            vertices: vertices
                .iter()
                .map(|(p, ops)| Vertex {
                    name: "v".into(),
                    task: "dataflow".into(),
                    args: serde_json::Value::Null,
                    parallelism: *p,
                    operators: ops.iter().map(|o| (*o).to_owned()).collect(),
                })
                .collect(),
            edges: vec![Edge::all_to_all(0, 1)],
            max_parallelism: Some(128),
        }
    }

    fn taken_of(graph: &JobGraph) -> Metadata {
        let mut tasks = Vec::new();
        for (v, vertex) in graph.vertices.iter().enumerate() {
            for s in 0..vertex.parallelism {
                tasks.push(TaskEntry {
                    vertex: v as u32,
                    subtask: s,
                    attempt: 0,
                    state: format!("{v}-{s}-0.state"),
                    bytes: 1,
                    alignment_ms: 0,
                    shared: Vec::new(),
                    files: Vec::new(),
                });
            }
        }
        let mut metadata = Metadata::new(JobId::from_u128(1), CheckpointId(4), Some(graph), tasks);
        metadata.dir = Some("/sp".parse().unwrap());
        metadata
    }

    fn read(files: &[FileToRead]) -> Vec<(u32, u32)> {
        files.iter().map(|f| (f.vertex, f.subtask)).collect()
    }

    #[test]
    fn the_same_job_reads_its_own_subtasks_file() {
        let g = graph(&[(2, &["src"]), (2, &["sum", "sink"])]);
        let m = taken_of(&g);
        let files = files_for(&m, &g, TaskId::new(1, 1));
        assert_eq!(read(&files), [(1, 1)]);
        assert_eq!(files[0].path, "/sp/1-1-0.state");
        assert_eq!(files[0].parallelism, 2);
        assert_eq!(check_savepoint(&m, &g, false), Ok(vec![]));
    }

    #[test]
    fn a_rescaled_vertex_reads_every_old_subtasks_file() {
        let m = taken_of(&graph(&[(2, &["src"]), (2, &["sum", "sink"])]));
        let g = graph(&[(3, &["src"]), (3, &["sum", "sink"])]);
        assert_eq!(
            read(&files_for(&m, &g, TaskId::new(1, 2))),
            [(1, 0), (1, 1)]
        );
        assert_eq!(
            read(&files_for(&m, &g, TaskId::new(0, 0))),
            [(0, 0), (0, 1)]
        );
    }

    #[test]
    fn state_follows_operator_ids_across_a_changed_chain() {
        // The sink moved into a vertex of its own; a new operator came.
        let m = taken_of(&graph(&[(2, &["src"]), (2, &["sum", "sink"])]));
        let g = graph(&[(2, &["src"]), (2, &["sum"]), (2, &["sink", "audit"])]);
        assert_eq!(read(&files_for(&m, &g, TaskId::new(2, 1))), [(1, 1)]);
        assert_eq!(check_savepoint(&m, &g, false), Ok(vec!["audit".to_owned()]));
    }

    #[test]
    fn state_no_operator_claims_is_refused_unless_allowed() {
        let m = taken_of(&graph(&[(2, &["src"]), (2, &["sum", "sink"])]));
        let g = graph(&[(2, &["src"]), (2, &["sink"])]);
        let error = check_savepoint(&m, &g, false).unwrap_err().to_string();
        assert!(error.contains("operator \"sum\""), "{error}");
        assert!(error.contains("--allow-non-restored-state"), "{error}");
        assert_eq!(check_savepoint(&m, &g, true), Ok(vec![]));
    }

    #[test]
    fn another_job_or_other_key_groups_are_refused_by_name() {
        let g = graph(&[(2, &["src"]), (2, &["sum"])]);
        let m = taken_of(&g);
        let other = JobGraph {
            name: "other".into(),
            ..g.clone()
        };
        let error = check_savepoint(&m, &other, true).unwrap_err().to_string();
        assert!(
            error.contains("savepoint of job \"job\", not of \"other\""),
            "{error}"
        );
        let keys = JobGraph {
            max_parallelism: Some(64),
            ..g
        };
        let error = check_savepoint(&m, &keys, true).unwrap_err().to_string();
        assert!(error.contains("pipeline.max-parallelism: 128"), "{error}");
    }
}
