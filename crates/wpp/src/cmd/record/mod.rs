//! Making traces: `wpp cc`, `wpp cargo` and `wpp instrument` (programs recorded by the LLVM
//! instrumenter), `wpp synth` (seeded synthetic traces).

pub mod cargo;
pub mod cc;
pub mod instrument;
pub mod synth;
