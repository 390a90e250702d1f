//! One step from the block times: Calculon's `_compute_batch_stats`, in
//! its evaluation order (integer products first, as Python evaluates
//! `int * int * float`).
//!
//! Notation as in FULL-MODEL.md: p stages, v chunks per stage, m
//! microbatches, bpp blocks per stage, bpc = bpp / v blocks per chunk,
//! `base = bpc − 1` base blocks and one edge block per chunk.

use serde::Serialize;

use super::{BlockTimes, DpOverlapFigures, EstimateOptions, StageTime, TimingSeconds};
use crate::analysis::system::{MemoryTier, NetworkBinding, NetworkOp, NetworkTier};
use crate::analysis::workload::{BlockFacts, Recompute, TrainingSpec};

pub(super) struct Outcome {
    pub timing: TimingSeconds,
    pub block: BlockTimes,
    pub stage: StageTime,
    pub dp_overlap: Option<DpOverlapFigures>,
    pub extras: StepExtras,
}

/// Calculon's step statistics beyond its ten times (`calculon llm`'s
/// names): link times, offload overheads and the bandwidths DP overlap
/// and offload would need. Without offload the overheads are
/// `max(0, memory time − block time)`, 0 in practice.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct StepExtras {
    pub fw_offload_exposed_time: f64,
    pub bw_offload_exposed_time: f64,
    pub tp_comm_link_time: f64,
    pub recomm_link_time: f64,
    pub pp_comm_link_time: f64,
    pub dp_comm_link_time: f64,
    /// Under DP overlap: the DP bandwidth that hides the overlappable
    /// chunks' / the last chunk's reduction (Calculon's figure when its
    /// recompute layout is known, as its exposed time is).
    pub dp_bw_overlap_req_chunk: f64,
    pub dp_bw_overlap_req_tail: f64,
    /// The slots without offload (Calculon's `*_time_no_offload`).
    pub slots_no_offload: [f64; 4],
    /// One block's offload transfer forward and backward, bytes.
    pub fw_offload_size: f64,
    pub bw_offload_size: f64,
}

/// An exact integer product as Python would hold it, then as `f64`.
fn count(factors: &[u64]) -> f64 {
    factors.iter().fold(1u128, |acc, &f| acc.saturating_mul(u128::from(f))) as f64
}

/// Python's `max(0, x)` for the offload overheads.
fn positive_part(x: f64) -> f64 {
    if x > 0.0 {
        x
    } else {
        0.0
    }
}

/// Python's float floor division `a // b` (CPython's `float_divmod`).
fn py_floordiv(a: f64, b: f64) -> f64 {
    let rem = a % b;
    let mut div = (a - rem) / b;
    if rem != 0.0 && ((b < 0.0) != (rem < 0.0)) {
        div -= 1.0;
    }
    if div != 0.0 {
        let floor = div.floor();
        if div - floor > 0.5 {
            floor + 1.0
        } else {
            floor
        }
    } else {
        0.0_f64.copysign(a / b)
    }
}

/// What the DP-overlap model reads besides the block times.
struct DpOverlapInputs<'a> {
    t: &'a BlockTimes,
    p: u64,
    v: u64,
    m: u64,
    bpc: u64,
    base: f64,
    sharded: bool,
    t_dp: f64,
    usage: f64,
    shares_pp: bool,
    shares_tp: bool,
    bbw: f64,
    ebw: f64,
    chunk_bw: f64,
    /// Bytes one block synchronises, and the DP op's bandwidth factor.
    dp_size: f64,
    factor: f64,
}

impl DpOverlapInputs<'_> {
    /// Calculon's exposed DP time under `data_par_overlap`, with the given
    /// recompute flop and memory times (FULL-MODEL.md, "DP overlap").
    fn exposed(&self, re_flops_time: f64, re_mem_time: f64) -> f64 {
        self.figures(re_flops_time, re_mem_time).0
    }

    /// The exposed time and the bandwidths that would hide the
    /// overlappable chunks' and the last chunk's reduction (Calculon's
    /// `dp_bw_overlap_req_chunk` / `_tail`), with `factor` the DP op's
    /// `a` (all-reduce, or reduce-scatter plus all-gather when sharded).
    fn figures(&self, re_flops_time: f64, re_mem_time: f64) -> (f64, f64, f64) {
        let t = self.t;
        let mem = t.block_agrad_mem_time + t.block_wgrad_mem_time + re_mem_time;
        let mut ov_base = self.bbw - mem;
        let mut ov_edge = self.ebw - mem;
        let mut compute = t.block_agrad_flops_time + t.block_wgrad_flops_time + re_flops_time;
        if !self.sharded {
            // The unsharded optimizer step overlaps too, but for its memory time.
            ov_base += t.block_optim_time - t.block_optim_mem_time;
            ov_edge += t.block_optim_time - t.block_optim_mem_time;
            compute += t.block_optim_flops_time;
        }
        // Calculon subtracts the TP link times here, not the exposed ones.
        if self.shares_tp {
            ov_base -= t.baseblock_recomm_time + t.baseblock_agrad_tp_time;
            ov_edge -= t.edgeblock_recomm_time + t.edgeblock_agrad_tp_time;
        }
        let chunk_ov = self.base * ov_base + ov_edge;
        let chunk_compute = self.bpc as f64 * compute;
        let overlappable = (self.v - 1) as f64;
        let last = (self.bpc - 1) as f64;
        let window = self.p as f64 * chunk_ov;
        let overlap_compute = self.p as f64 * chunk_compute;
        let chunk_dp = self.bpc as f64 * self.t_dp;
        // DP and PP on one tier collide for at most the microbatches in flight.
        let overlapped_pp = if self.shares_pp {
            let limit = if self.m.is_multiple_of(self.p) { self.p } else { self.m % self.p } as f64;
            let fits = py_floordiv(chunk_dp, self.chunk_bw);
            if limit < fits {
                limit
            } else {
                fits
            }
        } else {
            0.0
        };
        let inflection = chunk_dp - (window - overlapped_pp * t.block_bw_pp_time) + overlap_compute * self.usage;
        let chunks_exposed = if inflection > 0.0 { overlappable * inflection } else { overlappable * chunk_dp * self.usage };
        let last_window = if self.bpc > 1 {
            let mut w = chunk_ov - t.block_bw_pp_time - (self.bbw + self.ebw) / 2.0;
            if !self.sharded {
                w += t.block_optim_time - t.block_optim_mem_time;
            }
            w
        } else {
            0.0
        };
        let last_inflection = last * self.t_dp + (compute * self.usage - last_window);
        let last_exposed = if last_inflection > 0.0 { last_inflection } else { last * self.t_dp * self.usage };
        let mut chunk_overlap = window + overlap_compute * self.usage;
        if self.shares_pp {
            chunk_overlap -= t.block_bw_pp_time;
        }
        chunk_overlap *= overlappable;
        let req = |time: f64| if time > 0.0 { self.bpc as f64 * self.dp_size / time * self.factor } else { 0.0 };
        let tail_overlap = last_window + last * self.t_dp * self.usage;
        (self.t_dp + (chunks_exposed + last_exposed), req(chunk_overlap), req(tail_overlap))
    }
}

/// The tiers the pipeline and data-parallel groups use.
pub(super) struct Tiers<'a> {
    pub pp: &'a NetworkTier,
    pub dp: &'a NetworkTier,
    /// The second memory tier (offload).
    pub mem2: &'a MemoryTier,
}

pub(super) fn compose(
    times: &BlockTimes,
    block: &BlockFacts,
    spec: &TrainingSpec,
    tiers: &Tiers,
    binding: &NetworkBinding,
    options: &EstimateOptions,
) -> Outcome {
    let map = &spec.mapping;
    let (p, v, d, m) = (map.pp, map.pipeline_interleaving, map.dp, spec.microbatch_count());
    let bpp = spec.blocks_per_rank();
    let bpc = spec.blocks_per_virtual_chunk();
    let base = (bpc - 1) as f64;
    let mut t = *times;
    let (pp_net, dp_net) = (tiers.pp, tiers.dp);

    // Without a pipeline the transfer is 0 bytes: its latency remains (it
    // only reaches the edge-block times, hence the DP-overlap model).
    t.block_fw_pp_time = pp_net.time(NetworkOp::P2p, block.block_fw_pp_size as f64, 2);
    // Forward only, Calculon sends nothing backward, but its edge-block
    // slot still holds a 0-byte transfer: the latency (in the bubble).
    let training = !options.forward_only;
    let bw_pp_size = if training { block.block_bw_pp_size as f64 } else { 0.0 };
    t.block_bw_pp_time = pp_net.time(NetworkOp::P2p, bw_pp_size, 2);

    let mult = count(&[bpp, m]);
    let mv = count(&[m, v]);
    let fw_time = mult * t.block_fw_time;
    let bw_time = mult * t.block_agrad_time + mult * t.block_wgrad_time;
    let optim_step_time = bpp as f64 * t.block_optim_time;
    let recompute_time = mult * t.block_re_time;
    let tp_fw = mv * (base * t.baseblock_fw_tp_time_exposed + t.edgeblock_fw_tp_time_exposed);
    let tp_bw = mv * (base * t.baseblock_agrad_tp_time_exposed + t.edgeblock_agrad_tp_time_exposed);
    let tp_comm_exposed_time = tp_fw + tp_bw;
    let recomm_exposed_time = mv * (base * t.baseblock_recomm_time_exposed + t.edgeblock_recomm_time_exposed);
    let pp_comm_exposed_time = match (p > 1, training) {
        (true, true) => mv * t.block_fw_pp_time + mv * t.block_bw_pp_time,
        // No backward transfers: Calculon's count of them is 0.
        (true, false) => mv * t.block_fw_pp_time + 0.0,
        (false, _) => 0.0,
    };

    // Offload: one block's transfers to and from the second tier, forward
    // (weights or activations, the larger) and backward (all it offloads).
    let off = options.offload;
    let full = map.recompute == Recompute::Full;
    let storage = if training { block.block_act_storage_space } else { block.block_act_all_space.unwrap_or(block.block_act_storage_space) };
    let act_offload = if off.activations {
        if full {
            block.block_act_checkpoint_size
        } else {
            storage
        }
    } else {
        0
    } as f64;
    let weight_offload = if off.weights { block.block_weight_space as f64 } else { 0.0 };
    let fw_offload_size = if weight_offload > act_offload { weight_offload } else { act_offload };
    let bw_offload_size = if training {
        let mut size = 0.0;
        if off.weights {
            size += block.block_weight_space as f64;
        }
        if off.activations {
            size += act_offload;
        }
        if off.optimizer {
            size += block.block_optimizer_space;
        }
        size
    } else {
        0.0
    };
    let fw_offload_time = tiers.mem2.time(fw_offload_size);
    let bw_offload_time = if training { tiers.mem2.time(bw_offload_size) } else { 0.0 };
    let BlockSlots { bfw, efw, bbw, ebw, bfw_over, efw_over, bbw_over, ebw_over } =
        BlockSlots::offloaded(&t, fw_offload_time, bw_offload_time);
    let fw_offload_overhead = mv * (base * bfw_over + efw_over);
    let bw_offload_overhead = mv * (base * bbw_over + ebw_over);

    let chunk_fw = base * bfw + efw;
    let chunk_bw = base * bbw + ebw;
    let chunk = chunk_fw + chunk_bw;
    // Interleaving with m not a multiple of p leaves the missing
    // microbatches' slots empty in every overlappable chunk.
    let extra = if m.is_multiple_of(p) { 0.0 } else { count(&[v - 1, p - m % p]) };
    // Uneven pipeline: the short stages' missing blocks shorten stage 0's
    // bubble (Calculon's `bubble_reduction_time`: half a base and half an
    // edge block each way per short stage, or the edge block when a chunk
    // has no base block).
    let short = spec.short_stages() as f64;
    let reduction = if base > 0.0 { short * (bfw + efw + bbw + ebw) / 2.0 } else { short * (efw + ebw) };
    let bubble_time = (p - 1) as f64 * chunk + (extra * chunk - reduction);

    let mut dp_overlap = None;
    let mut dp_req = (0.0, 0.0);
    let dp_comm_exposed_time = if d > 1 && training {
        let weights = block.block_weight_space as f64;
        t.block_dp_time = if map.optimizer_sharding {
            dp_net.time(NetworkOp::ReduceScatter, weights, d) + dp_net.time(NetworkOp::AllGather, weights, d)
        } else {
            dp_net.time(NetworkOp::AllReduce, weights, d)
        };
        if options.data_par_overlap {
            let inputs = DpOverlapInputs {
                t: &t,
                p,
                v,
                m,
                bpc,
                base,
                sharded: map.optimizer_sharding,
                t_dp: t.block_dp_time,
                usage: dp_net.processor_usage(),
                shares_pp: binding.dp == binding.pp,
                shares_tp: binding.dp == binding.tp,
                bbw,
                ebw,
                chunk_bw,
                dp_size: weights,
                factor: if map.optimizer_sharding {
                    dp_net.op(NetworkOp::ReduceScatter).scalar + dp_net.op(NetworkOp::AllGather).scalar
                } else {
                    dp_net.op(NetworkOp::AllReduce).scalar
                },
            };
            let blueprint = inputs.exposed(t.block_re_flops_time, t.block_re_mem_time);
            let calculon = t.calculon_re_flops_time.zip(t.calculon_re_mem_time).map(|(flops, mem)| inputs.figures(flops, mem));
            let (_, chunk_req, tail_req) = calculon.unwrap_or_else(|| inputs.figures(t.block_re_flops_time, t.block_re_mem_time));
            dp_req = (chunk_req, tail_req);
            let calculon = calculon.map(|(exposed, _, _)| exposed);
            dp_overlap = Some(DpOverlapFigures { blueprint, calculon });
            // `estimate` fails before this when the compatible figure is
            // asked for but Calculon's layout is missing.
            match calculon {
                Some(calculon) if options.calculon_compat_dp_overlap => calculon,
                _ => blueprint,
            }
        } else {
            bpp as f64 * t.block_dp_time
        }
    } else {
        0.0
    };

    let total_time = fw_time
        + bw_time
        + optim_step_time
        + fw_offload_overhead
        + bw_offload_overhead
        + recompute_time
        + recomm_exposed_time
        + bubble_time
        + tp_comm_exposed_time
        + pp_comm_exposed_time
        + dp_comm_exposed_time;
    let busy = fw_time
        + bw_time
        + optim_step_time
        + fw_offload_overhead
        + bw_offload_overhead
        + recompute_time
        + recomm_exposed_time
        + tp_comm_exposed_time
        + pp_comm_exposed_time
        + dp_comm_exposed_time;
    let extras = StepExtras {
        fw_offload_exposed_time: fw_offload_overhead,
        bw_offload_exposed_time: bw_offload_overhead,
        tp_comm_link_time: mv * (base * t.baseblock_fw_tp_time + t.edgeblock_fw_tp_time)
            + mv * (base * t.baseblock_agrad_tp_time + t.edgeblock_agrad_tp_time),
        recomm_link_time: if training { mv * (base * t.baseblock_recomm_time + t.edgeblock_recomm_time) } else { 0.0 },
        pp_comm_link_time: pp_comm_exposed_time,
        dp_comm_link_time: if d > 1 && training { bpp as f64 * t.block_dp_time } else { 0.0 },
        dp_bw_overlap_req_chunk: dp_req.0,
        dp_bw_overlap_req_tail: dp_req.1,
        slots_no_offload: [bfw - bfw_over, efw - efw_over, bbw - bbw_over, ebw - ebw_over],
        fw_offload_size,
        bw_offload_size,
    };
    Outcome {
        extras,
        timing: TimingSeconds {
            fw_time,
            bw_time,
            optim_step_time,
            recompute_time,
            recomm_exposed_time,
            bubble_time,
            tp_comm_exposed_time,
            pp_comm_exposed_time,
            dp_comm_exposed_time,
            total_time,
        },
        block: t,
        stage: StageTime { busy, idle: bubble_time },
        dp_overlap,
    }
}

/// The time of one base and one edge block of a chunk slot, forward and
/// backward, with their TP (and, at the edge, PP) exposure: Calculon's
/// `bfw`, `efw`, `bbw`, `ebw`, and the offload overheads inside them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BlockSlots {
    pub bfw: f64,
    pub efw: f64,
    pub bbw: f64,
    pub ebw: f64,
    pub bfw_over: f64,
    pub efw_over: f64,
    pub bbw_over: f64,
    pub ebw_over: f64,
}

impl BlockSlots {
    /// From the block times (with the pipeline transfer times set).
    #[must_use]
    pub fn of(t: &BlockTimes) -> Self {
        Self::offloaded(t, 0.0, 0.0)
    }

    /// With one block's offload transfers taking `fw_offload` and
    /// `bw_offload` seconds: what they and the block's memory traffic take
    /// beyond the block's time is exposed (Calculon's offload overheads).
    #[must_use]
    pub fn offloaded(t: &BlockTimes, fw_offload: f64, bw_offload: f64) -> Self {
        // Nothing is offloaded, so the offload overheads are
        // max(0, memory time − block time) = 0 in practice.
        let bfw_plain = t.block_fw_time + t.baseblock_fw_tp_time_exposed;
        let efw_plain = t.block_fw_time + t.edgeblock_fw_tp_time_exposed + t.block_fw_pp_time;
        let bfw_over = positive_part(fw_offload + t.block_fw_mem_time - bfw_plain);
        let efw_over = positive_part(fw_offload + t.block_fw_mem_time - efw_plain);
        let bbw_plain =
            t.block_re_time + t.baseblock_recomm_time_exposed + t.block_agrad_time + t.block_wgrad_time + t.baseblock_agrad_tp_time_exposed;
        let ebw_plain = t.block_re_time
            + t.edgeblock_recomm_time_exposed
            + t.block_agrad_time
            + t.block_wgrad_time
            + t.edgeblock_agrad_tp_time_exposed
            + t.block_bw_pp_time;
        let bbw_over = positive_part(bw_offload + t.block_agrad_mem_time + t.block_wgrad_mem_time - bbw_plain);
        let ebw_over = positive_part(bw_offload + t.block_agrad_mem_time + t.block_wgrad_mem_time - ebw_plain);
        Self {
            bfw: bfw_plain + bfw_over,
            efw: efw_plain + efw_over,
            bbw: bbw_plain + bbw_over,
            ebw: ebw_plain + ebw_over,
            bfw_over,
            efw_over,
            bbw_over,
            ebw_over,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::py_floordiv;

    #[test]
    fn floor_division_is_pythons() {
        assert_eq!(py_floordiv(7.0, 2.0), 3.0);
        assert_eq!(py_floordiv(-7.0, 2.0), -4.0);
        assert_eq!(py_floordiv(0.3, 0.1), 2.0); // Python: 0.3 // 0.1 == 2.0
        assert_eq!(py_floordiv(1.0, 3.0), 0.0);
    }
}
