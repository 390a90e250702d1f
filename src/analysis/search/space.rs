//! The configuration space of Calculon's `llm-optimal-execution`
//! (calculon-ai/calculon @ caa4b11, `calculon/llm/optimal_execution.py` and
//! `Llm.get_all_*`), enumerated in one canonical order.
//!
//! - TP: every divisor of the processors that divides `hidden` and `heads`;
//! - PP: every divisor of `min(procs / TP, blocks)` dividing the blocks and
//!   `procs / TP`; DP = procs / (TP · PP);
//! - global batch: the largest multiple of DP ≤ the maximum batch (no
//!   configuration when DP exceeds it);
//! - microbatch: every divisor of the local batch whose `microbatch · seq`
//!   TP divides;
//! - recompute none / attn_only / full; optimizer sharding (only with
//!   DP > 1); TP communication ar / p2p_rs_ag / rs_ag; `seq_par_ag_redo`
//!   (only under rs_ag without full recompute); fused activation (as
//!   asked: Calculon's default is fused only);
//! - per block key: the TP tier (every tier when TP > 1, else tier 0), the
//!   pipeline interleaving (every divisor of blocks / PP when PP > 1, else
//!   1), the PP and DP tiers likewise, DP overlap (with DP > 1, unless
//!   turned off).
//!
//! - per TP > 1, TP overlap none / ring / pipe (unless turned off).
//! - innermost, on a system with a second memory tier (unless turned
//!   off): weight offload off / on, activation offload off / on (off only
//!   under full recompute), optimizer offload off / on, as Calculon does.

//!
//! The canonical order — the order of the loops above, outermost first, with
//! the choices in the order listed (`false` before `true` for flags, tiers
//! ascending) — numbers every configuration; the number breaks ties in the
//! ranking, so the output never depends on the thread count.

use crate::analysis::estimate::Offload;
use crate::analysis::system::NetworkBinding;
use crate::analysis::workload::{
    Datatype, ModelSpec, Recompute, TpComm, TpOverlap, TrainingMappingSpec, TrainingSpec, TrainingWorkloadSpec,
};

/// Recompute policies in the canonical order.
pub const RECOMPUTES: [Recompute; 3] = [Recompute::None, Recompute::AttnOnly, Recompute::Full];
/// TP communication schemes in the canonical order (Calculon's).
pub const TP_COMMS: [TpComm; 3] = [TpComm::Ar, TpComm::P2pRsAg, TpComm::RsAg];

/// The divisors of `x`, ascending, found by trial division up to `√x`:
/// the search's cost must not grow with `--procs` or the batch themselves.
fn divisors(x: u64) -> impl Iterator<Item = u64> {
    let (mut small, mut large) = (Vec::new(), Vec::new());
    let mut c = 1u64;
    while c.checked_mul(c).is_some_and(|square| square <= x) {
        if x.is_multiple_of(c) {
            small.push(c);
            if c != x / c {
                large.push(x / c);
            }
        }
        c += 1;
    }
    small.into_iter().chain(large.into_iter().rev())
}

/// TP degrees: divisors of `procs` that divide `hidden` and `heads`.
#[must_use]
pub fn tensor_parallelisms(procs: u64, hidden: u64, heads: u64) -> Vec<u64> {
    divisors(procs).filter(|t| hidden.is_multiple_of(*t) && heads.is_multiple_of(*t)).collect()
}

/// PP degrees for TP `tp`: divisors of `min(procs / tp, blocks)` that divide
/// `procs / tp` and the blocks.
#[must_use]
pub fn pipeline_parallelisms(procs: u64, tp: u64, blocks: u64) -> Vec<u64> {
    let max = (procs / tp).min(blocks);
    divisors(max).filter(|p| (procs / tp).is_multiple_of(*p) && blocks.is_multiple_of(*p)).collect()
}

/// Pipeline interleavings: 1 without a pipeline, else every divisor of the
/// blocks per stage.
#[must_use]
pub fn interleavings(blocks: u64, pp: u64) -> Vec<u64> {
    if pp == 1 {
        vec![1]
    } else {
        divisors(blocks / pp).collect()
    }
}

/// The largest multiple of `dp` not above `max_batch`, `None` if `dp` is larger.
#[must_use]
pub fn batch_size(dp: u64, max_batch: u64) -> Option<u64> {
    (dp <= max_batch).then(|| max_batch / dp * dp)
}

/// Microbatch sizes: divisors of the local batch whose tokens TP divides.
#[must_use]
pub fn microbatch_sizes(seq: u64, tp: u64, local_batch: u64) -> Vec<u64> {
    divisors(local_batch).filter(|b| (u128::from(*b) * u128::from(seq)).is_multiple_of(u128::from(tp))).collect()
}

/// Everything that shapes the derived block: one derivation serves every
/// configuration of the key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BlockKey {
    pub tp: u64,
    pub pp: u64,
    pub dp: u64,
    pub global_batch: u64,
    pub microbatch: u64,
    pub recompute: Recompute,
    pub tp_comm: TpComm,
    pub seq_par_ag_redo: bool,
    pub fused_activation: bool,
    pub optimizer_sharding: bool,
    pub tp_overlap: TpOverlap,
}

/// One point of the space.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Config {
    pub key: BlockKey,
    pub pipeline_interleaving: u64,
    pub networks: NetworkBinding,
    pub data_par_overlap: bool,
    /// What is offloaded to the second memory tier (an estimate option).
    pub offload: Offload,
}

impl Config {
    /// The training spec of the configuration (Blueprint's field names).
    #[must_use]
    pub fn spec(&self, model: &ModelSpec, datatype: Datatype) -> TrainingSpec {
        let k = &self.key;
        TrainingSpec {
            name: None,
            model: model.clone(),
            workload: TrainingWorkloadSpec { global_batch: k.global_batch, microbatch: k.microbatch, datatype, optimizer: None },
            mapping: TrainingMappingSpec {
                tp: k.tp,
                pp: k.pp,
                dp: k.dp,
                pipeline_interleaving: self.pipeline_interleaving,
                recompute: k.recompute,
                tp_comm: k.tp_comm,
                seq_par_ag_redo: k.seq_par_ag_redo,
                fused_activation: k.fused_activation,
                optimizer_sharding: k.optimizer_sharding,
                tp_overlap: k.tp_overlap,
                pipeline_schedule: None,
            },
        }
    }
}

/// What the space is drawn from.
#[derive(Debug, Clone)]
pub struct Space {
    pub model: ModelSpec,
    pub procs: u64,
    pub max_batch: u64,
    /// Network tiers of the system.
    pub networks: usize,
    /// Explore DP overlap (Calculon's default; `--no-dp-overlap` turns it off).
    pub dp_overlap: bool,
    /// Fused-activation choices, in order (Calculon's default: `[true]`).
    pub fused_activation: Vec<bool>,
    /// Explore TP overlap ring / pipe with TP > 1 (Calculon's default;
    /// `--no-tp-overlap` turns it off).
    pub tp_overlap: bool,
    /// Explore offload (a system with a second memory tier, unless
    /// `--no-offload`).
    pub offload: bool,
}

/// The configurations of one block key, in the canonical inner order:
/// TP tier, interleaving, PP tier, DP tier, DP overlap, offload.
#[derive(Debug, Clone)]
pub struct KeySpace {
    pub key: BlockKey,
    pub tp_nets: Vec<usize>,
    /// Shared by every key of one PP degree (computed once per degree).
    pub interleavings: std::sync::Arc<[u64]>,
    pub pp_nets: Vec<usize>,
    pub dp_nets: Vec<usize>,
    pub overlaps: Vec<bool>,
    /// Offload choices, in the canonical order (none alone when offload is
    /// not explored).
    pub offloads: Vec<Offload>,
}

impl KeySpace {
    /// Configurations of the key.
    #[must_use]
    pub fn count(&self) -> u64 {
        self.count_without_offload() * self.offloads.len() as u64
    }

    fn count_without_offload(&self) -> u64 {
        [self.tp_nets.len(), self.interleavings.len(), self.pp_nets.len(), self.dp_nets.len(), self.overlaps.len()]
            .iter()
            .map(|n| *n as u64)
            .product()
    }

    /// The configurations Calculon's `llm-optimal-execution` counts for this
    /// key: the same, times its offload choices on a system with a second
    /// memory tier (weight and optimizer offload on / off, activation
    /// offload on / off but for full recompute).
    #[must_use]
    pub fn calculon_count(&self, has_mem2: bool) -> u64 {
        let offload = match (has_mem2, self.key.recompute) {
            (false, _) => 1,
            (true, Recompute::Full) => 4,
            (true, _) => 8,
        };
        self.count_without_offload() * offload
    }

    /// Configurations per (TP tier, interleaving, PP tier, DP tier).
    #[must_use]
    pub fn per_binding(&self) -> u64 {
        (self.overlaps.len() * self.offloads.len()) as u64
    }

    /// Every configuration of the key, in the canonical order (TP tier,
    /// interleaving, PP tier, DP tier, DP overlap, offload).
    pub fn configs(&self) -> impl Iterator<Item = Config> + '_ {
        let key = self.key;
        self.tp_nets.iter().flat_map(move |&tp| {
            self.interleavings.iter().flat_map(move |&v| {
                self.pp_nets.iter().flat_map(move |&pp| {
                    self.dp_nets.iter().flat_map(move |&dp| {
                        self.binding_choices().map(move |(data_par_overlap, offload)| Config {
                            key,
                            pipeline_interleaving: v,
                            networks: NetworkBinding { tp, pp, dp },
                            data_par_overlap,
                            offload,
                        })
                    })
                })
            })
        })
    }

    /// The (DP overlap, offload) choices of one binding, in the canonical
    /// order.
    pub fn binding_choices(&self) -> impl Iterator<Item = (bool, Offload)> + '_ {
        self.overlaps.iter().flat_map(|&ov| self.offloads.iter().map(move |&off| (ov, off)))
    }
}

impl Space {
    /// TP overlap modes for TP `tp`, in the canonical order.
    fn tp_overlaps(&self, tp: u64) -> Vec<TpOverlap> {
        if self.tp_overlap && tp > 1 {
            vec![TpOverlap::None, TpOverlap::Ring, TpOverlap::Pipe]
        } else {
            vec![TpOverlap::None]
        }
    }

    /// Offload choices under `recompute`: weights, activations (not under
    /// full recompute, as Calculon) and optimizer state, each off then on.
    fn offloads(&self, recompute: Recompute) -> Vec<Offload> {
        if !self.offload {
            return vec![Offload::default()];
        }
        let activations: &[bool] = if recompute == Recompute::Full { &[false] } else { &[false, true] };
        let mut choices = Vec::with_capacity(8);
        for weights in [false, true] {
            for &activations in activations {
                for optimizer in [false, true] {
                    choices.push(Offload { weights, activations, optimizer });
                }
            }
        }
        choices
    }

    fn tiers(&self, group: u64) -> Vec<usize> {
        if group > 1 {
            (0..self.networks).collect()
        } else {
            vec![0]
        }
    }

    /// Every block key with its inner choices, in the canonical order.
    #[must_use]
    pub fn keys(&self) -> Vec<KeySpace> {
        let m = &self.model;
        let mut keys = Vec::new();
        for tp in tensor_parallelisms(self.procs, m.hidden, m.heads) {
            for pp in pipeline_parallelisms(self.procs, tp, m.blocks) {
                let dp = self.procs / (tp * pp);
                let pipeline_interleavings: std::sync::Arc<[u64]> = interleavings(m.blocks, pp).into();
                let Some(global_batch) = batch_size(dp, self.max_batch) else { continue };
                for microbatch in microbatch_sizes(m.seq_len, tp, global_batch / dp) {
                    for recompute in RECOMPUTES {
                        for optimizer_sharding in if dp > 1 { vec![false, true] } else { vec![false] } {
                            for tp_comm in TP_COMMS {
                                let can_redo = tp_comm == TpComm::RsAg && recompute != Recompute::Full;
                                for seq_par_ag_redo in if can_redo { vec![false, true] } else { vec![false] } {
                                    for (&fused_activation, tp_overlap) in
                                        self.fused_activation.iter().flat_map(|f| self.tp_overlaps(tp).into_iter().map(move |o| (f, o)))
                                    {
                                        let key = BlockKey {
                                            tp,
                                            pp,
                                            dp,
                                            global_batch,
                                            microbatch,
                                            recompute,
                                            tp_comm,
                                            seq_par_ag_redo,
                                            fused_activation,
                                            optimizer_sharding,
                                            tp_overlap,
                                        };
                                        keys.push(KeySpace {
                                            key,
                                            tp_nets: self.tiers(tp),
                                            interleavings: std::sync::Arc::clone(&pipeline_interleavings),
                                            pp_nets: self.tiers(pp),
                                            dp_nets: self.tiers(dp),
                                            overlaps: if dp > 1 && self.dp_overlap { vec![false, true] } else { vec![false] },
                                            offloads: self.offloads(recompute),
                                        });
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        keys
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(hidden: u64, heads: u64, blocks: u64) -> ModelSpec {
        ModelSpec {
            name: None,
            hidden,
            ffn_hidden: 4 * hidden,
            seq_len: 2048,
            heads,
            head_dim: hidden / heads,
            blocks,
            vocab: None,
            kv_heads: None,
            gated_mlp: false,
            norm: Default::default(),
            rope: false,
            rope_theta: None,
            dropout: None,
        }
    }

    #[test]
    fn divisor_rules_follow_calculon() {
        // megatron-126M on 8: TP must divide 768 and 16; PP divides 12 and 8 / TP.
        assert_eq!(tensor_parallelisms(8, 768, 16), vec![1, 2, 4, 8]);
        assert_eq!(pipeline_parallelisms(8, 1, 12), vec![1, 2, 4]);
        assert_eq!(pipeline_parallelisms(8, 2, 12), vec![1, 2, 4]);
        assert_eq!(pipeline_parallelisms(8, 8, 12), vec![1]);
        assert_eq!(interleavings(12, 1), vec![1]);
        assert_eq!(interleavings(12, 2), vec![1, 2, 3, 6]);
        assert_eq!(batch_size(3, 8), Some(6));
        assert_eq!(batch_size(16, 8), None);
        // b·s divisible by TP: with s = 3 and TP 2 only even microbatches.
        assert_eq!(microbatch_sizes(3, 2, 12), vec![2, 4, 6, 12]);
    }

    #[test]
    fn divisors_ascend() {
        // Against the definition, on squares, primes, 0 and 1.
        for x in [0u64, 1, 2, 12, 36, 97, 360, 1 << 20, 999_983 * 3] {
            let naive: Vec<u64> = (1..=x.min(4_000_000)).filter(|c| x % c == 0).collect();
            assert_eq!(divisors(x).collect::<Vec<_>>(), naive, "{x}");
        }
        // √(2^64 − 1) steps at most: a prime near 2^40 (1,099,511,627,689)
        // is found in a million steps.
        assert_eq!(divisors(1_099_511_627_689).collect::<Vec<_>>(), vec![1, 1_099_511_627_689]);
    }

    #[test]
    fn counts_multiply_the_inner_choices() {
        let space = Space {
            model: model(768, 16, 12),
            procs: 8,
            max_batch: 8,
            networks: 2,
            dp_overlap: true,
            fused_activation: vec![true],
            tp_overlap: true,
            offload: false,
        };
        let keys = space.keys();
        // TP 8, PP 1, DP 1: one binding, no overlap, no sharding.
        let k = keys.iter().find(|k| k.key.tp == 8).expect("tp 8");
        assert_eq!((k.tp_nets.len(), k.pp_nets.len(), k.dp_nets.len(), k.overlaps.len()), (2, 1, 1, 1));
        // No duplicate keys.
        let mut seen = std::collections::HashSet::new();
        assert!(keys.iter().all(|k| seen.insert(k.key)));
    }
}
