//! The data plane's Prometheus metrics, read on each scrape: every dataflow
//! operator's record counters in this process (the [`DataflowMetrics`] its
//! tasks count into), the connectors' series (a Kafka source's lag, a
//! sink's transactions), the exchanges' traffic and backpressure, and
//! lookup-table loads of the `enrich` job.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use holdfast_dataflow::jobs::enrich::cache;
use holdfast_dataflow::metrics::{DataflowMetrics, Series, SeriesKind};
use holdfast_exchange::{Exchange, ExchangeMetrics};
use holdfast_types::sync::lock;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeGaugeValue, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Registry;

/// Collects the data plane's metrics at scrape time.
#[derive(Debug)]
pub struct DataMetrics {
    dataflow: Arc<DataflowMetrics>,
    exchanges: Mutex<Vec<Exchange>>,
}

impl DataMetrics {
    /// Registers a collector in `registry` that exports `dataflow`, the
    /// counters the process's dataflow tasks count into; exchanges are added
    /// as they start.
    pub fn register(registry: &mut Registry, dataflow: Arc<DataflowMetrics>) -> Arc<DataMetrics> {
        let metrics = Arc::new(DataMetrics {
            dataflow,
            exchanges: Mutex::default(),
        });
        registry.register_collector(Box::new(Arc::clone(&metrics)));
        metrics
    }

    /// The operator counters it exports: pass them to the task factory.
    pub fn dataflow(&self) -> &Arc<DataflowMetrics> {
        &self.dataflow
    }

    /// Counts `exchange`'s traffic too.
    pub fn add_exchange(&self, exchange: Exchange) {
        lock(&self.exchanges).push(exchange);
    }

    fn exchange_totals(&self) -> Option<ExchangeMetrics> {
        let exchanges = lock(&self.exchanges);
        if exchanges.is_empty() {
            return None;
        }
        let mut total = ExchangeMetrics::default();
        for m in exchanges.iter().map(Exchange::metrics) {
            total.bytes_sent += m.bytes_sent;
            total.bytes_received += m.bytes_received;
            total.batches_sent += m.batches_sent;
            total.batches_received += m.batches_received;
            total.buffered_batches += m.buffered_batches;
            total.open_connections += m.open_connections;
            total.blocked_sends += m.blocked_sends;
        }
        Some(total)
    }
}

type Labels = Vec<(&'static str, String)>;

/// One family's samples.
type Samples = Vec<(Labels, i64)>;

fn counter_family(
    encoder: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    values: &[(Labels, u64)],
) -> Result<(), std::fmt::Error> {
    let mut family = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
    for (labels, value) in values {
        ConstCounter::new(*value).encode(family.encode_family(labels)?)?;
    }
    Ok(())
}

fn gauge_family<N: EncodeGaugeValue + Copy + std::fmt::Debug>(
    encoder: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    values: &[(Labels, N)],
) -> Result<(), std::fmt::Error> {
    let mut family = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
    for (labels, value) in values {
        ConstGauge::new(*value).encode(family.encode_family(labels)?)?;
    }
    Ok(())
}

impl DataMetrics {
    /// The connectors' series (a Kafka source's lag, a sink's
    /// transactions): one family per series, every operator's samples with
    /// its `job` and `operator` labels.
    fn encode_connectors(
        &self,
        encoder: &mut DescriptorEncoder<'_>,
    ) -> Result<(), std::fmt::Error> {
        let mut families: BTreeMap<&'static str, (Series, Samples)> = BTreeMap::new();
        for (key, samples) in self.dataflow.connector_snapshot() {
            for (series, labels, value) in samples {
                let mut all: Labels =
                    vec![("job", key.job.clone()), ("operator", key.operator.clone())];
                all.extend(labels);
                families
                    .entry(series.name)
                    .or_insert_with(|| (series, Vec::new()))
                    .1
                    .push((all, value));
            }
        }
        for (name, (series, samples)) in families {
            let name = format!("holdfast_{name}");
            match series.kind {
                SeriesKind::Counter => {
                    let samples: Vec<(Labels, u64)> = samples
                        .into_iter()
                        .map(|(labels, value)| (labels, u64::try_from(value).unwrap_or(0)))
                        .collect();
                    counter_family(encoder, &name, series.help, &samples)?;
                }
                SeriesKind::Gauge => gauge_family(encoder, &name, series.help, &samples)?,
            }
        }
        Ok(())
    }
}

impl Collector for DataMetrics {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        let mut records = Vec::new();
        for (key, c) in self.dataflow.snapshot() {
            for (kind, value) in [
                ("in", c.records_in),
                ("out", c.records_out),
                ("malformed", c.malformed),
                ("late_dropped", c.late_dropped),
            ] {
                let labels = vec![
                    ("job", key.job.clone()),
                    ("operator", key.operator.clone()),
                    ("kind", kind.to_owned()),
                ];
                records.push((labels, value));
            }
        }
        counter_family(
            &mut encoder,
            "holdfast_dataflow_records",
            "records by job, operator and kind: in (reached a sink or window), out (read by a source, \
             emitted by a window), malformed (skipped), late_dropped (too late for its window)",
            &records,
        )?;
        if let Some(x) = self.exchange_totals() {
            let direction = |d: &str| vec![("direction", d.to_owned())];
            counter_family(
                &mut encoder,
                "holdfast_exchange_bytes",
                "bytes over data connections, by direction (sent, received)",
                &[
                    (direction("sent"), x.bytes_sent),
                    (direction("received"), x.bytes_received),
                ],
            )?;
            counter_family(
                &mut encoder,
                "holdfast_exchange_batches",
                "record batches through this process's exchange, by direction (sent, received)",
                &[
                    (direction("sent"), x.batches_sent),
                    (direction("received"), x.batches_received),
                ],
            )?;
            let gauge = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
            gauge_family(
                &mut encoder,
                "holdfast_exchange_buffered_batches",
                "record batches queued in this process's channels now (bounded by the credits)",
                &[(Vec::new(), gauge(x.buffered_batches))],
            )?;
            gauge_family(
                &mut encoder,
                "holdfast_exchange_connections",
                "data connections open now",
                &[(Vec::new(), gauge(x.open_connections))],
            )?;
            gauge_family(
                &mut encoder,
                "holdfast_exchange_backpressured_tasks",
                "task threads waiting now because a downstream channel is full (backpressure)",
                &[(Vec::new(), gauge(x.blocked_sends))],
            )?;
        }
        self.encode_connectors(&mut encoder)?;
        let loads = cache::loads();
        if !loads.is_empty() {
            let path = |p: &std::path::Path| vec![("table", p.display().to_string())];
            let entries: Vec<_> = loads
                .iter()
                .map(|l| (path(&l.path), i64::try_from(l.entries).unwrap_or(i64::MAX)))
                .collect();
            gauge_family(
                &mut encoder,
                "holdfast_enrich_table_entries",
                "entries of the enrich lookup table (of the load in progress while loading)",
                &entries,
            )?;
            let loading: Vec<_> = loads
                .iter()
                .map(|l| (path(&l.path), i64::from(l.loading)))
                .collect();
            gauge_family(
                &mut encoder,
                "holdfast_enrich_table_loading",
                "1 while the lookup table (re)loads",
                &loading,
            )?;
            let seconds: Vec<_> = loads
                .iter()
                .filter_map(|l| l.last_duration.map(|d| (path(&l.path), d.as_secs_f64())))
                .collect();
            gauge_family(
                &mut encoder,
                "holdfast_enrich_table_load_seconds",
                "how long the last completed load of the lookup table took",
                &seconds,
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prometheus_client::encoding::text::encode;

    #[test]
    fn every_data_metric_is_documented() {
        let mut registry = Registry::default();
        let dataflow = Arc::new(DataflowMetrics::default());
        let metrics = DataMetrics::register(&mut registry, Arc::clone(&dataflow));
        metrics.add_exchange(Exchange::local("tm-doc", 2));
        dataflow.operator("doc-job", "doc-op").add_in(1);
        let connector = dataflow.connector("doc-job", "doc-kafka");
        for series in holdfast_kafka::metrics::ALL {
            connector.add(*series, vec![("subtask", "0".to_owned())], 1);
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.tsv");
        holdfast_dataflow::jobs::enrich::table::generate(&path, 10, 2, |_, _| {}).unwrap();
        let table = cache::acquire(&path, None);
        table.wait(std::time::Duration::from_secs(30)).unwrap();
        let mut text = String::new();
        encode(&mut text, &registry).unwrap();
        let doc = include_str!("../../../docs/METRICS.md");
        let mut names = 0;
        for line in text.lines().filter(|l| l.starts_with("# TYPE ")) {
            let name = line.split_whitespace().nth(2).unwrap();
            let shown = if line.ends_with("counter") {
                format!("{name}_total")
            } else {
                name.to_owned()
            };
            assert!(
                doc.contains(&format!("`{shown}")),
                "{shown} is not in docs/METRICS.md"
            );
            names += 1;
        }
        assert_eq!(names, 9 + holdfast_kafka::metrics::ALL.len(), "{text}");
        assert!(
            text.contains(
                r#"holdfast_dataflow_records_total{job="doc-job",operator="doc-op",kind="in"} 1"#
            ),
            "{text}"
        );
    }
}
