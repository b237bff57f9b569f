//! What the actors of both processes share: asking an actor from an RPC
//! handler (the handler sends the call with a reply channel and awaits the
//! answer; the actor owns all state), and reading their coordination
//! connection for reports.

use std::time::Duration;

use holdfast_ha::backend::Backend;
use holdfast_ha::connection::Connection;
use tokio::sync::{mpsc, oneshot};
use tonic::{Response, Status};

/// A connection's state and lease left, read when called.
pub(crate) type ConnectionReader = Box<dyn Fn() -> (String, Option<Duration>) + Send>;

/// Reads `connection`'s state name and the time left on its lease.
pub(crate) fn connection_reader<B: Backend>(connection: Connection<B>) -> ConnectionReader {
    Box::new(move || {
        let state = connection
            .state()
            .map_or("NOT_CONNECTED".to_owned(), |s| s.name().to_owned());
        let lease = connection
            .lease_deadline()
            .map(|deadline| deadline.since(connection.runtime().now()));
        (state, lease)
    })
}

/// Sends `make(reply)` to `actor` and awaits the answer; `who` names the
/// process in the error when it is shutting down.
pub(crate) async fn ask<M, T>(
    actor: &mpsc::UnboundedSender<M>,
    who: &str,
    make: impl FnOnce(oneshot::Sender<Result<T, Status>>) -> M,
) -> Result<Response<T>, Status> {
    let (reply, answer) = oneshot::channel();
    let gone = || Status::unavailable(format!("the {who} is shutting down"));
    actor.send(make(reply)).map_err(|_| gone())?;
    answer.await.map_err(|_| gone())?.map(Response::new)
}
