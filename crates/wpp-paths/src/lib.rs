//! Placeholder: path numbering (issue 3).
