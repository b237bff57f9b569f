//! The job page's connector section: each source subtask's splits (a Kafka
//! source's partitions) with position, end and lag, and each sink
//! subtask's transactions not committed yet with their age — what an
//! operator looks at when a job falls behind or a broker is about to abort
//! a transaction.

use maud::{Markup, html};

use super::format;
use crate::rest::answers::{ConnectorView, JobDetails, SplitView, TransactionView};

/// One row's where: the vertex, the subtask, the operator.
struct At<'a> {
    vertex: &'a str,
    subtask: u32,
    operator: &'a str,
}

/// The section, or nothing when no subtask reported a connector.
pub(super) fn section(job: &JobDetails) -> Markup {
    let mut splits: Vec<(At<'_>, &SplitView)> = Vec::new();
    let mut transactions: Vec<(At<'_>, &TransactionView)> = Vec::new();
    for vertex in &job.vertices {
        for subtask in &vertex.subtasks {
            for connector in &subtask.connectors {
                let at = || At {
                    vertex: &vertex.name,
                    subtask: subtask.subtask,
                    operator: &connector.operator,
                };
                let ConnectorView {
                    splits: s,
                    transactions: t,
                    ..
                } = connector;
                splits.extend(s.iter().map(|split| (at(), split)));
                transactions.extend(t.iter().map(|txn| (at(), txn)));
            }
        }
    }
    if splits.is_empty() && transactions.is_empty() {
        return html! {};
    }
    let total_lag: i64 = splits.iter().filter_map(|(_, s)| s.lag).sum();
    html! {
        h2 #connectors { "Connectors" }
        @if !splits.is_empty() {
            h3 { "Source partitions " span.muted { "· total lag " (format::count(u64::try_from(total_lag).unwrap_or(0))) } }
            table.splits {
                thead { tr { th { "Operator" } th.num { "Subtask" } th { "Partition" }
                    th.num { "Next offset" } th.num { "End" } th.num { "Lag" } } }
                tbody { @for (at, s) in &splits {
                    tr.split data-split=(s.name) {
                        td { (at.operator) span.muted { " · " (at.vertex) } } td.num { (at.subtask) } td { code { (s.name) } }
                        td.num { (offset(s.position)) } td.num { (offset(s.end)) }
                        td.num { @if s.finished { span.muted { "finished" } } @else { (offset(s.lag)) } }
                    }
                } }
            }
        }
        @if !transactions.is_empty() {
            h3 { "Sink transactions not committed yet" }
            table.transactions {
                thead { tr { th { "Operator" } th.num { "Subtask" } th { "Transactional id" } th { "State" }
                    th { "Began" } th.num { "Age" } } }
                tbody { @for (at, t) in &transactions {
                    tr.transaction data-state=(t.state) {
                        td { (at.operator) span.muted { " · " (at.vertex) } } td.num { (at.subtask) } td { code { (t.id) } }
                        td { (t.state) } td { (format::time(u64::try_from(t.start_time).unwrap_or(0))) }
                        td.num { (format::duration_ms(t.age_ms)) }
                    }
                } }
            }
            p.muted { "A transaction whose age nears the sink's transaction.timeout.ms is aborted by the broker; \
                an awaiting-commit one is committed when its checkpoint completes." }
        }
    }
}

fn offset(value: Option<i64>) -> String {
    value.map_or_else(
        || "—".to_owned(),
        |v| format::count(u64::try_from(v).unwrap_or(0)),
    )
}
