//! Placeholder: queries on compressed traces (issue 5).
