//! Making traces: `wpp cc` and `wpp instrument` (programs recorded by the LLVM instrumenter),
//! `wpp synth` (seeded synthetic traces).

pub mod cc;
pub mod instrument;
pub mod synth;
