//! Business cards: what a rank publishes so that peers can reach it.
//!
//! One PMI value per rank, `key=value` pairs joined by `;`. Transports add their addresses
//! (shared-memory segment name, TCP endpoints) as fields; readers ignore fields they do not know,
//! so newer ranks can add fields without breaking older readers.

use std::fmt::Write;

/// The PMI key under which `rank` publishes its card.
pub fn key(rank: u32) -> String {
    format!("oxmpi-card-{rank}")
}

/// A decoded business card.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Card {
    fields: Vec<(String, String)>,
}

impl Card {
    /// An empty card.
    pub fn new() -> Self {
        Card::default()
    }

    /// Adds a field. Keys and values must not contain `;` or `=` (checked in debug builds;
    /// all our fields are names and numbers).
    pub fn with(mut self, key: &str, value: impl std::fmt::Display) -> Self {
        let value = value.to_string();
        debug_assert!(!key.contains([';', '=']) && !value.contains([';', '=']));
        self.fields.push((key.to_owned(), value));
        self
    }

    /// The value of a field.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The card as one PMI value.
    pub fn encode(&self) -> String {
        let mut s = String::new();
        for (i, (k, v)) in self.fields.iter().enumerate() {
            if i > 0 {
                s.push(';');
            }
            let _ = write!(s, "{k}={v}");
        }
        s
    }

    /// Parses a card; malformed fields are skipped.
    pub fn decode(text: &str) -> Card {
        let fields = text
            .split(';')
            .filter_map(|f| f.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        Card { fields }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cards_round_trip_and_tolerate_unknown_fields() {
        let c = Card::new().with("host", "node7").with("pid", 42);
        let text = c.encode();
        assert_eq!(text, "host=node7;pid=42");
        assert_eq!(Card::decode(&text), c);
        let newer = Card::decode("host=a;future=x;pid=1;junk");
        assert_eq!(newer.get("pid"), Some("1"));
        assert_eq!(newer.get("nope"), None);
        assert_eq!(key(3), "oxmpi-card-3");
    }
}
