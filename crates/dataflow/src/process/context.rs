//! [`ProcessContext`]: what a keyed process function sees of one record or
//! timer — its key, that key's state, its timers, time, and the output.

use holdfast_executor::TaskFailure;

use super::states::{AnyTable, ListState, MapState, StateHandle, ValueState, table, table_mut};
use super::timers::{TimeDomainOf, Timers};
use crate::data::{Data, Key, Timestamp};

/// The context of one call, for the key of the record or timer.
pub struct ProcessContext<'a, K: Key, O> {
    pub(super) key: &'a K,
    pub(super) tables: &'a mut [Box<dyn AnyTable<K>>],
    pub(super) timers: &'a mut Timers<K>,
    pub(super) out: &'a mut Vec<O>,
    pub(super) watermark: Timestamp,
    pub(super) now: Timestamp,
}

impl<K: Key, O> ProcessContext<'_, K, O> {
    /// The key of the record or timer.
    pub fn key(&self) -> &K {
        self.key
    }

    /// Emits `record` downstream.
    pub fn emit(&mut self, record: O) {
        self.out.push(record);
    }

    /// The current watermark (event time).
    pub fn watermark(&self) -> Timestamp {
        self.watermark
    }

    /// The processing-time clock's time.
    pub fn processing_time(&self) -> Timestamp {
        self.now
    }

    /// Calls [`on_timer`](super::KeyedProcessFunction::on_timer) for this key
    /// once the watermark reaches `at` (or the input ends). Registering the
    /// same time again adds nothing.
    pub fn register_event_time_timer(&mut self, at: Timestamp) {
        self.timers
            .register(TimeDomainOf::EventTime, at, self.key.clone());
    }

    /// Calls `on_timer` for this key once the processing-time clock reaches
    /// `at`.
    pub fn register_processing_time_timer(&mut self, at: Timestamp) {
        self.timers
            .register(TimeDomainOf::ProcessingTime, at, self.key.clone());
    }

    /// Deletes this key's event-time timer at `at`, if any.
    pub fn delete_event_time_timer(&mut self, at: Timestamp) {
        self.timers.delete(TimeDomainOf::EventTime, at, self.key);
    }

    /// Deletes this key's processing-time timer at `at`, if any.
    pub fn delete_processing_time_timer(&mut self, at: Timestamp) {
        self.timers
            .delete(TimeDomainOf::ProcessingTime, at, self.key);
    }

    /// This key's value.
    pub fn value<V: Data>(&self, state: ValueState<V>) -> Result<Option<&V>, TaskFailure> {
        Ok(table(self.tables, state)?.get(self.key))
    }

    /// Sets this key's value.
    pub fn set_value<V: Data>(
        &mut self,
        state: ValueState<V>,
        value: V,
    ) -> Result<(), TaskFailure> {
        table_mut(self.tables, state)?.insert(self.key, value)
    }

    /// Forgets this key's value, map or list.
    pub fn clear<H: StateHandle>(&mut self, state: H) -> Result<(), TaskFailure> {
        table_mut(self.tables, state)?.remove(self.key)
    }

    /// The value of `entry` in this key's map.
    pub fn map_get<UK: Key, UV: Data>(
        &self,
        state: MapState<UK, UV>,
        entry: &UK,
    ) -> Result<Option<&UV>, TaskFailure> {
        Ok(table(self.tables, state)?
            .get(self.key)
            .and_then(|map| map.get(entry)))
    }

    /// Sets `entry` in this key's map; returns its old value.
    pub fn map_put<UK: Key, UV: Data>(
        &mut self,
        state: MapState<UK, UV>,
        entry: UK,
        value: UV,
    ) -> Result<Option<UV>, TaskFailure> {
        let map =
            table_mut(self.tables, state)?.get_or_insert_with(self.key, imbl::HashMap::new)?;
        Ok(map.insert(entry, value))
    }

    /// Removes `entry` from this key's map; returns its value.
    pub fn map_remove<UK: Key, UV: Data>(
        &mut self,
        state: MapState<UK, UV>,
        entry: &UK,
    ) -> Result<Option<UV>, TaskFailure> {
        Ok(table_mut(self.tables, state)?
            .get_mut(self.key)?
            .and_then(|map| map.remove(entry)))
    }

    /// Every entry of this key's map, in no order.
    pub fn map_entries<UK: Key, UV: Data>(
        &self,
        state: MapState<UK, UV>,
    ) -> Result<Vec<(&UK, &UV)>, TaskFailure> {
        Ok(table(self.tables, state)?
            .get(self.key)
            .map(|map| map.iter().collect())
            .unwrap_or_default())
    }

    /// Appends `item` to this key's list.
    pub fn list_add<V: Data>(&mut self, state: ListState<V>, item: V) -> Result<(), TaskFailure> {
        table_mut(self.tables, state)?
            .get_or_insert_with(self.key, imbl::Vector::new)?
            .push_back(item);
        Ok(())
    }

    /// This key's list, oldest first.
    pub fn list_items<V: Data>(&self, state: ListState<V>) -> Result<Vec<&V>, TaskFailure> {
        Ok(table(self.tables, state)?
            .get(self.key)
            .map(|list| list.iter().collect())
            .unwrap_or_default())
    }
}
