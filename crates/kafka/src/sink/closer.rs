//! Drops producers off the task thread: librdkafka's destroy purges and
//! waits up to 500 ms. A dropped producer's transaction is not aborted
//! (the broker keeps it until it is committed, fenced or times out).

use std::sync::mpsc;

use super::producer::SinkProducer;

/// A thread that drops what it is sent; it ends when the closer and its
/// clones are dropped.
#[derive(Clone, Debug)]
pub(crate) struct Closer(Option<mpsc::Sender<SinkProducer>>);

impl Closer {
    pub(crate) fn start() -> Closer {
        let (send, receive) = mpsc::channel::<SinkProducer>();
        let spawned = std::thread::Builder::new()
            .name("kafka-sink-closer".into())
            .spawn(move || {
                for producer in receive {
                    drop(producer)
                }
            });
        // Without the thread, producers are dropped where they are closed.
        Closer(spawned.ok().map(|_| send))
    }

    pub(crate) fn close(&self, producer: SinkProducer) {
        if let Some(send) = &self.0 {
            // The thread only ends when the sender is gone.
            let _ = send.send(producer);
        }
    }
}
