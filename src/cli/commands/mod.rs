//! One module per command, or per family of commands; `main.rs` dispatches to them.

pub mod chunks;
pub mod doctor;
pub mod eval;
pub mod index;
pub mod live;
pub mod model;
pub mod notes;
pub mod search;
