//! Path numbering for whole program paths: control-flow graphs, the Ball–Larus DAG and
//! numbering, chord placement, preferential path profiling (PPP) and path profiles.
//!
//! The static half of path profiling, following Vaswani, Nori & Chilimbi, *Preferential
//! Path Profiling* (POPL 2007; "PPP" below) and Larus, *Whole Program Paths* (PLDI 1999):
//!
//! * [`cfg`](mod@cfg): the per-function CFG and its JSON file format.
//! * [`dag`]: the Ball–Larus DAG: backedges, exits and cut points mapped to start and end
//!   edges (PPP §2.2, Larus §2).
//! * [`ball_larus`]: path counts, increments, decoding and encoding (PPP Figure 1), and
//!   cutting paths when counts would pass 2^64.
//! * [`chords`]: increments on the chords of a maximum spanning tree, and the exact runtime
//!   contract an instrumented function follows (PPP §5).
//! * [`ppp`]: preferential numbering of interesting paths (PPP Figure 10), Γ and the alias
//!   check with the Ball–Larus counter.
//! * [`coding`]: numbering as arithmetic coding (PPP §4).
//! * [`profile`]: Ball–Larus and PPP profiles, merging and the residual report.
//! * [`dot`]: Graphviz output in the style of PPP Figure 3.
//! * [`random`]: seeded random CFGs for tests and benchmarks.
//! * [`trace`]: path traces decoded to blocks through the CFGs of their program database.
//!
//! Ids are dense `u32` newtypes ([`NodeId`], [`EdgeId`] for the CFG, [`DagNodeId`],
//! [`DagEdgeId`] for the DAG); path ids are [`PathId`]`(u64)`. [`Dag`], [`BallLarus`] and
//! [`SpanningTree`] have `compute` methods that reuse their buffers across functions.
//!
//! # Example
//!
//! ```
//! use wpp_paths::{BallLarus, CfgFile, Dag, PathId};
//!
//! let json = r#"{"functions":[{"name":"f","nodes":["s","a","b","t"],"entry":"s",
//!     "exits":["t"],"edges":[["s","a"],["s","b"],["a","t"],["b","t"]]}]}"#;
//! let cfg = CfgFile::parse(json)?.remove(0);
//! let dag = Dag::build(&cfg)?;
//! let bl = BallLarus::number(&dag)?;
//! assert_eq!(bl.path_count(), 2);
//! let nodes = bl.decode(&dag, PathId(1))?.nodes(&dag);
//! let names: Vec<&str> = nodes.iter().map(|&n| cfg.node_name(n)).collect();
//! assert_eq!(names, ["s", "b", "t"]);
//! assert_eq!(bl.encode_nodes(&dag, &nodes)?, PathId(1));
//! # Ok::<(), wpp_paths::Error>(())
//! ```

#![deny(missing_docs)]

pub mod ball_larus;
pub mod cfg;
pub mod chords;
pub mod coding;
pub mod dag;
pub mod dot;
pub mod error;
pub mod ids;
pub mod ppp;
pub mod profile;
pub mod random;
pub mod trace;

pub use ball_larus::{number_with_cuts, number_with_limit, BallLarus, DagPath};
pub use cfg::{Cfg, CfgFile, Edge};
pub use chords::{EdgeAction, Instrumentation, SpanningTree};
pub use dag::Dag;
pub use error::{Error, Result};
pub use ids::{DagEdgeId, DagNodeId, EdgeId, NodeId, PathId};
pub use ppp::PppPlan;
pub use profile::{BlProfile, PppProfile};
pub use trace::{BlockStream, DecodeError, PathDecoder};
