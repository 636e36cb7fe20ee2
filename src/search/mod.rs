//! Search: from a query to ranked chunks (SPEC §5).
//!
//! - [`api`] is the public vocabulary: [`SearchOptions`] in, [`SearchResponse`] out, with
//!   its [`Hit`]s and what [`Served`] them. It knows nothing of the index.
//! - `pipeline` runs one search over one generation in stages: retrieve both sides'
//!   candidates through the store's reader (deciding the mode and the fallback), hydrate the
//!   records the ranking needs in one read, rank, and read the page it returns.
//! - `ranking` is the ranking stage, pure, with the [`Ranking`](crate::config::Ranking) chosen once
//!   from the settings; its steps are pure functions over candidate lists: score mapping,
//!   order, minScore relaxation, pools, tiers and the merge of memory with wiki hits in
//!   `rank`; fusion, temporal decay and MMR in `hybrid`; OpenClaw 2026.9's keyword score
//!   (bonuses over BM25, keyword candidates) in `lexical`.
//! - `answer` and `supersede` run after the page under memoria's ranking (reading hits
//!   through `lines`): a question that asks for a name gets first a hit that names one; a
//!   newer dated note that replaces the fact the first hit states moves first.
//!
//! The files import each other, never this one: it only declares and re-exports.

pub(crate) mod answer;
pub(crate) mod api;
pub(crate) mod hybrid;
pub(crate) mod lexical;
pub(crate) mod lines;
pub(crate) mod pipeline;
pub(crate) mod rank;
pub(crate) mod ranking;
pub(crate) mod supersede;

pub use api::{
    Candidate, Candidates, Corpus, Hit, Mode, Provenance, Recall, SearchOptions, SearchResponse,
    Served, Superseded, WikiPage,
};
