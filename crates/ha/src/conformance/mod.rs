//! The conformance suite every backend must pass, in the library so that a
//! third backend can run it too.
//!
//! A backend provides a [`Fixture`]: a way to make "processes" (each a
//! [`Backend`] handle whose link can be stalled and healed as a unit), the
//! clock, and a way to write raw bytes behind holdfast's back. The checks
//! are plain async functions over a fixture — [`checks`] for elections,
//! retrieval and the leader-guarded key/value store, [`checkpoints`] for
//! the HA store behind checkpoints (the id counter and the
//! completed-checkpoint pointers) — and the
//! [`conformance_suite!`](crate::conformance_suite) macro turns every one of
//! them into a test, so a backend that runs the suite runs them all:
//!
//! ```ignore
//! holdfast_ha::conformance_suite!(
//!     #[tokio::test(start_paused = true)],
//!     my_backend_tests::fixture().await
//! );
//! ```

pub mod checkpoints;
pub mod checks;
mod recorder;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

pub use recorder::{Recorded, Recorder};

use crate::backend::Backend;
use crate::time::Runtime;

/// What the suite needs from a backend under test.
pub trait Fixture: Send + Sync + 'static {
    /// The backend type.
    type Backend: Backend;

    /// A backend handle for a new process called `name`. Every session it
    /// makes shares the process's link.
    fn process(&self, name: &str) -> Self::Backend;

    /// Silences the link of process `name` (a stalled TCP connection, a
    /// partition): nothing flows either way, nothing is closed.
    fn stall(&self, name: &str);

    /// Lets process `name`'s link flow again.
    fn heal(&self, name: &str);

    /// Writes `data` to `path` (creating it and its parents if needed) with a
    /// session that is not one of the processes', as another client would.
    fn write_raw(&self, path: &str, data: &[u8]) -> impl Future<Output = ()> + Send;

    /// The clock every process uses.
    fn runtime(&self) -> Arc<dyn Runtime>;

    /// The negotiated session timeout of the processes' sessions.
    fn session_timeout(&self) -> Duration;

    /// The lease settings the checks' connections use (a ZooKeeper
    /// ensemble needs a server staleness: see
    /// [`LeaseConfig`](crate::connection::LeaseConfig)).
    fn lease(&self) -> crate::connection::LeaseConfig {
        crate::connection::LeaseConfig::default()
    }

    /// A bound on how long the slowest expected step may take (a generous
    /// multiple of the session timeout); checks fail after it.
    fn patience(&self) -> Duration {
        self.session_timeout() * 6
    }
}

/// Runs every check of the suite against a fixture, one test each.
///
/// The first argument is the test attribute to use, the second an
/// expression (evaluated inside each test, may `.await`) that yields the
/// fixture.
#[macro_export]
macro_rules! conformance_suite {
    (#[$attr:meta], $fixture:expr) => {
        $crate::conformance_suite!(@each #[$attr], $fixture, checks:
            a_lone_contender_is_granted_and_published,
            a_graceful_close_hands_over_with_a_higher_epoch,
            under_lease_a_suspension_shorter_than_the_lease_changes_nothing,
            under_standard_a_suspension_revokes_and_clears_the_leader,
            a_cut_off_leader_is_revoked_before_a_standby_is_granted,
            garbage_in_connection_info_is_reported_not_fatal,
            retrieval_survives_its_own_session_loss_without_a_spurious_change,
            stores_take_writes_from_the_current_leader_only,
        );
        $crate::conformance_suite!(@each #[$attr], $fixture, checkpoints:
            checkpoint_ids_strictly_increase_across_calls_and_leaders,
            advance_past_moves_the_counter_forward_never_back,
            a_deposed_leader_can_neither_count_nor_add_nor_remove,
            a_token_of_an_earlier_grant_can_neither_count_nor_add_nor_remove,
            pointers_list_oldest_first_and_removing_a_missing_one_is_fine,
            a_bad_pointer_is_reported_beside_the_good_ones,
            pointers_and_ids_outlive_the_writers_session,
        );
    };
    (@each #[$attr:meta], $fixture:expr, $module:ident: $($check:ident),* $(,)?) => {
        $(
            #[$attr]
            async fn $check() {
                let fixture = $fixture;
                if let Err(failure) = $crate::conformance::$module::$check(&fixture).await {
                    panic!("{}: {failure}", stringify!($check));
                }
            }
        )*
    };
}
