//! The alphabet interns events into dense [`Terminal`]s for the compressors, and maps them back.

use crate::event::Event;
use crate::ids::Terminal;
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

/// A bijection between the distinct events of a trace and terminals `0..len()`, in order of
/// first appearance.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(try_from = "Vec<Event>", into = "Vec<Event>")]
pub struct Alphabet {
    events: Vec<Event>,
    index: FxHashMap<Event, Terminal>,
}

impl TryFrom<Vec<Event>> for Alphabet {
    type Error = String;
    fn try_from(events: Vec<Event>) -> Result<Self, String> {
        Alphabet::from_events(events)
            .map_err(|e| format!("event {e:?} appears twice in the alphabet"))
    }
}

impl From<Alphabet> for Vec<Event> {
    fn from(a: Alphabet) -> Self {
        a.events
    }
}

/// The alphabet is full: a trace had 2^31 distinct events.
#[derive(Debug, thiserror::Error)]
#[error("the trace has more than 2^31 distinct events; terminals are limited to 31 bits")]
pub struct AlphabetFull;

impl Alphabet {
    /// An empty alphabet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Builds an alphabet from events in terminal order (as stored in a file). Duplicates are
    /// rejected, because they would make two terminals decode to one event.
    pub fn from_events(events: Vec<Event>) -> Result<Self, Event> {
        let mut index = FxHashMap::default();
        index.reserve(events.len());
        for (i, &e) in events.iter().enumerate() {
            if index.insert(e, Terminal(i as u32)).is_some() {
                return Err(e);
            }
        }
        Ok(Alphabet { events, index })
    }

    /// The terminal for `event`, adding it if new.
    #[inline]
    pub fn intern(&mut self, event: Event) -> Result<Terminal, AlphabetFull> {
        if let Some(&t) = self.index.get(&event) {
            return Ok(t);
        }
        if self.events.len() >= Terminal::LIMIT as usize {
            return Err(AlphabetFull);
        }
        let t = Terminal(self.events.len() as u32);
        self.events.push(event);
        self.index.insert(event, t);
        Ok(t)
    }

    /// The terminal for `event`, if it is in the alphabet.
    #[inline]
    pub fn get(&self, event: &Event) -> Option<Terminal> {
        self.index.get(event).copied()
    }

    /// The event a terminal stands for.
    #[inline]
    pub fn event(&self, t: Terminal) -> Option<Event> {
        self.events.get(t.index()).copied()
    }

    /// All events in terminal order.
    pub fn events(&self) -> &[Event] {
        &self.events
    }

    /// Number of distinct terminals.
    pub fn len(&self) -> usize {
        self.events.len()
    }

    /// Whether no event was interned.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }
}

impl PartialEq for Alphabet {
    fn eq(&self, other: &Self) -> bool {
        self.events == other.events
    }
}
impl Eq for Alphabet {}
