//! The ranking: sample rate descending, ties by the canonical
//! configuration number ascending (see [`super::space`]), a total order, so
//! the top K is the same whatever order the configurations were evaluated in.

use std::cmp::Ordering;

use super::space::Config;
use crate::analysis::estimate::Estimate;

/// An evaluated configuration that fits.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// Number in the canonical order.
    pub index: u64,
    pub config: Config,
    pub estimate: Estimate,
}

/// `Less` when `a` ranks before `b`.
#[must_use]
pub fn rank_order(a: &Candidate, b: &Candidate) -> Ordering {
    b.estimate.sample_rate.total_cmp(&a.estimate.sample_rate).then(a.index.cmp(&b.index))
}

/// The best `k` candidates seen, in rank order.
#[derive(Debug, Clone, Default)]
pub struct TopK {
    k: usize,
    best: Vec<Candidate>,
}

impl TopK {
    #[must_use]
    pub fn new(k: usize) -> Self {
        Self { k, best: Vec::with_capacity(k + 1) }
    }

    /// Whether a candidate of `sample_rate` numbered `index` would enter.
    #[must_use]
    pub fn admits(&self, sample_rate: f64, index: u64) -> bool {
        if self.k == 0 {
            return false;
        }
        match self.best.last() {
            Some(worst) if self.best.len() == self.k => match sample_rate.total_cmp(&worst.estimate.sample_rate) {
                Ordering::Greater => true,
                Ordering::Equal => index < worst.index,
                Ordering::Less => false,
            },
            _ => true,
        }
    }

    pub fn insert(&mut self, candidate: Candidate) {
        if !self.admits(candidate.estimate.sample_rate, candidate.index) {
            return;
        }
        let at = self.best.partition_point(|c| rank_order(c, &candidate) == Ordering::Less);
        self.best.insert(at, candidate);
        self.best.truncate(self.k);
    }

    pub fn merge(&mut self, other: Self) {
        self.k = self.k.max(other.k);
        for c in other.best {
            self.insert(c);
        }
    }

    #[must_use]
    pub fn into_vec(self) -> Vec<Candidate> {
        self.best
    }

    #[must_use]
    pub fn best(&self) -> &[Candidate] {
        &self.best
    }
}
