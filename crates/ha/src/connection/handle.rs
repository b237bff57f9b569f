//! [`SessionHandle`]: requests through one particular session, each
//! answered request refreshing the lease.

use std::future::Future;
use std::sync::Arc;

use super::shell::Inner;
use crate::backend::{Backend, CoordError, CreateMode, Op, OpResult, ReadResult, Session, Stat};
use crate::types::SessionId;

/// One session of a [`Connection`](super::Connection). Requests go through
/// this session only, never silently through a newer one; when it is lost
/// they fail with [`CoordError::SessionExpired`] or similar, and the caller
/// must start over with the connection's new session.
pub struct SessionHandle<B: Backend> {
    inner: Arc<Inner<B>>,
    session: Arc<B::Session>,
}

impl<B: Backend> Clone for SessionHandle<B> {
    fn clone(&self) -> Self {
        SessionHandle {
            inner: self.inner.clone(),
            session: self.session.clone(),
        }
    }
}

impl<B: Backend> SessionHandle<B> {
    pub(super) fn new(inner: Arc<Inner<B>>, session: Arc<B::Session>) -> Self {
        SessionHandle { inner, session }
    }

    /// The session's id.
    pub fn id(&self) -> SessionId {
        self.session.id()
    }

    /// The negotiated session timeout.
    pub fn timeout(&self) -> std::time::Duration {
        self.session.timeout()
    }

    /// Times a request; an answer (success or a semantic error) refreshes
    /// the lease from the request's send time.
    async fn timed<T>(
        &self,
        request: impl Future<Output = Result<T, CoordError>>,
    ) -> Result<T, CoordError> {
        if !self.inner.session_live(self.session.id()) {
            // Declared lost (a lease that ran out counts): nothing more may
            // go through it, even if the client library would still send.
            return Err(CoordError::SessionExpired);
        }
        let sent_at = self.inner.runtime.now();
        let result = request.await;
        if result.as_ref().map_or_else(CoordError::is_answer, |_| true) {
            self.inner.acknowledged(self.session.id(), sent_at);
        }
        result
    }

    /// See [`Session::create`].
    pub async fn create(
        &self,
        path: &str,
        data: &[u8],
        mode: CreateMode,
        make_parents: bool,
    ) -> Result<(String, Stat), CoordError> {
        self.timed(self.session.create(path, data, mode, make_parents))
            .await
    }

    /// See [`Session::get`].
    pub async fn get(&self, path: &str, watch: bool) -> Result<ReadResult, CoordError> {
        self.timed(self.session.get(path, watch)).await
    }

    /// See [`Session::children`].
    pub async fn children(&self, path: &str) -> Result<Vec<String>, CoordError> {
        self.timed(self.session.children(path)).await
    }

    /// See [`Session::delete`].
    pub async fn delete(&self, path: &str, version: Option<i32>) -> Result<(), CoordError> {
        self.timed(self.session.delete(path, version)).await
    }

    /// See [`Session::multi`].
    pub async fn multi(&self, ops: Vec<Op>) -> Result<Vec<OpResult>, CoordError> {
        self.timed(self.session.multi(ops)).await
    }
}
