//! Seeded random CFGs for property tests and benchmarks (no external RNG: a xorshift64*
//! generator keeps results identical across platforms and dependency versions).
//!
//! * [`arbitrary_cfg`]: any digraph: self loops, parallel edges, unreachable nodes, several
//!   exits, random cut nodes and cut edges. Irreducible loops included.
//! * [`structured_cfg`]: what compilers emit for structured code: sequences of `if`/`else`,
//!   `switch`, `while` loops with `break`s, call sites (cut nodes) and early returns, nested
//!   to a bounded depth, with a requested number of blocks.

use crate::cfg::{Cfg, Edge};
use crate::ids::{EdgeId, NodeId};

/// A xorshift64* pseudo-random generator.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed` (any value, zero included).
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A value in `[0, n)` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// True with probability `percent / 100`.
    pub fn chance(&mut self, percent: u32) -> bool {
        self.below(100) < percent as usize
    }
}

/// A random digraph with `nodes` nodes and about `edges` edges (see the module docs).
pub fn arbitrary_cfg(rng: &mut Rng, nodes: usize, edges: usize) -> Cfg {
    let nodes = nodes.max(1);
    let mut cfg = Cfg {
        name: format!("arbitrary{nodes}"),
        nodes: (0..nodes).map(|i| format!("n{i}")).collect(),
        ..Cfg::default()
    };
    // A forward spine keeps most nodes reachable; the rest is random.
    for i in 1..nodes {
        if rng.chance(80) {
            let src = rng.below(i);
            cfg.edges.push(Edge {
                src: NodeId::from_index(src),
                dst: NodeId::from_index(i),
            });
        }
    }
    while cfg.edges.len() < edges {
        let (s, d) = (rng.below(nodes), rng.below(nodes));
        cfg.edges.push(Edge {
            src: NodeId::from_index(s),
            dst: NodeId::from_index(d),
        });
    }
    for v in 0..nodes {
        if rng.chance(15) {
            cfg.exits.push(NodeId::from_index(v));
        }
        if rng.chance(10) {
            cfg.cut_nodes.push(NodeId::from_index(v));
        }
    }
    for e in 0..cfg.edges.len() {
        if rng.chance(5) {
            cfg.cut_edges.push(EdgeId::from_index(e));
        }
    }
    if rng.chance(30) {
        cfg.profile = Some(
            (0..cfg.edges.len())
                .map(|_| rng.below(1000) as u64)
                .collect(),
        );
    }
    cfg
}

/// A structured CFG with about `blocks` blocks (see the module docs).
pub fn structured_cfg(rng: &mut Rng, name: &str, blocks: usize) -> Cfg {
    let mut b = Builder {
        cfg: Cfg {
            name: name.to_owned(),
            ..Cfg::default()
        },
        rng: rng.clone(),
        loop_exits: Vec::new(),
    };
    let entry = b.block();
    b.cfg.entry = entry;
    let end = b.region(entry, blocks.saturating_sub(2), 0);
    let ret = b.block();
    b.edge(end, ret);
    b.cfg.exits.push(ret);
    *rng = b.rng;
    b.cfg
}

struct Builder {
    cfg: Cfg,
    rng: Rng,
    /// Exit blocks of the enclosing loops, innermost last (targets of `break`).
    loop_exits: Vec<NodeId>,
}

impl Builder {
    fn block(&mut self) -> NodeId {
        self.cfg.nodes.push(format!("b{}", self.cfg.nodes.len()));
        NodeId::from_index(self.cfg.nodes.len() - 1)
    }

    fn edge(&mut self, src: NodeId, dst: NodeId) {
        self.cfg.edges.push(Edge { src, dst });
    }

    /// Emits about `budget` blocks after `from`; returns the block control falls out of.
    fn region(&mut self, from: NodeId, budget: usize, depth: usize) -> NodeId {
        let mut cur = from;
        let mut left = budget;
        while left > 0 {
            let size = if depth > 6 {
                1
            } else {
                1 + self.rng.below(left.min(if depth == 0 { 40 } else { 12 }))
            };
            let before = self.cfg.nodes.len();
            cur = self.construct(cur, size, depth);
            left = left.saturating_sub((self.cfg.nodes.len() - before).max(1));
        }
        cur
    }

    fn construct(&mut self, from: NodeId, size: usize, depth: usize) -> NodeId {
        let inner = size.saturating_sub(2) / 2;
        match self.rng.below(10) {
            0..=2 if size >= 3 => self.if_else(from, inner, depth),
            3..=4 if size >= 3 => self.while_loop(from, size - 2, depth),
            5 if size >= 4 => self.switch(from, size - 2, depth),
            6 => self.call(from),
            7 if !self.loop_exits.is_empty() && self.rng.chance(30) => self.early_exit(from),
            _ => {
                let b = self.block();
                self.edge(from, b);
                b
            }
        }
    }

    fn if_else(&mut self, from: NodeId, inner: usize, depth: usize) -> NodeId {
        let (t, f, join) = (self.block(), self.block(), self.block());
        self.edge(from, t);
        self.edge(from, f);
        let t_end = self.region(t, inner, depth + 1);
        let f_end = self.region(f, inner, depth + 1);
        self.edge(t_end, join);
        self.edge(f_end, join);
        join
    }

    fn while_loop(&mut self, from: NodeId, inner: usize, depth: usize) -> NodeId {
        let (head, exit) = (self.block(), self.block());
        self.edge(from, head);
        self.edge(head, exit);
        let body = self.block();
        self.edge(head, body);
        self.loop_exits.push(exit);
        let body_end = self.region(body, inner, depth + 1);
        self.loop_exits.pop();
        self.edge(body_end, head);
        exit
    }

    fn switch(&mut self, from: NodeId, inner: usize, depth: usize) -> NodeId {
        let join = self.block();
        let cases = 2 + self.rng.below(6);
        for _ in 0..cases {
            let c = self.block();
            self.edge(from, c);
            let end = self.region(c, inner / cases, depth + 1);
            self.edge(end, join);
        }
        if self.rng.chance(30) {
            self.edge(from, join); // default case falls through: a parallel path
        }
        join
    }

    fn call(&mut self, from: NodeId) -> NodeId {
        let b = self.block();
        self.edge(from, b);
        self.cfg.cut_nodes.push(b);
        b
    }

    /// `if (c) break;` or `if (c) return;` inside a loop.
    fn early_exit(&mut self, from: NodeId) -> NodeId {
        let (taken, next) = (self.block(), self.block());
        self.edge(from, taken);
        self.edge(from, next);
        if self.rng.chance(50) {
            let target = *self.loop_exits.last().expect("inside a loop");
            self.edge(taken, target);
        } else {
            self.cfg.exits.push(taken);
        }
        next
    }
}
