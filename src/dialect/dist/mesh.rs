//! Logical meshes as every reader sees them: the verifier, planning, the
//! checks and the lowering read a `dist.mesh` through this one type, so
//! group and slice sizes are computed one way only.

use std::collections::HashMap;

use melior::ir::{operation::OperationLike, OperationRef};

use crate::ir::{
    ods::OpKind,
    read::{i64_array_attr, str_attr, symbol_attr},
};

/// A `dist.mesh`: named axes and their sizes (row-major rank numbering).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mesh {
    pub axes: Vec<String>,
    pub shape: Vec<i64>,
}

impl Mesh {
    /// The mesh `op` declares, when it spells axes and shape (not checked).
    #[must_use]
    pub fn read(op: OperationRef) -> Option<(String, Self)> {
        let name = str_attr(op, "sym_name")?;
        let axes = op.attribute("axes").ok().and_then(crate::ir::read::string_list)?;
        let shape = i64_array_attr(op, "shape")?;
        Some((name.to_string(), Self { axes, shape }))
    }

    /// Whether axes and shape agree and every size is positive.
    #[must_use]
    pub fn is_well_formed(&self) -> bool {
        !self.axes.is_empty() && self.axes.len() == self.shape.len() && self.shape.iter().all(|s| *s > 0) && self.checked_size().is_some()
    }

    /// Ranks of the mesh, when they fit in 64 bits.
    #[must_use]
    pub fn checked_size(&self) -> Option<i64> {
        self.shape.iter().try_fold(1i64, |acc, s| acc.checked_mul(*s))
    }

    /// Ranks of the mesh (saturating).
    #[must_use]
    pub fn size(&self) -> i64 {
        self.checked_size().unwrap_or(i64::MAX)
    }

    /// The index of `axis`.
    #[must_use]
    pub fn axis_index(&self, axis: &str) -> Option<usize> {
        self.axes.iter().position(|a| a == axis)
    }

    /// The size of `axis`.
    #[must_use]
    pub fn axis_size(&self, axis: &str) -> Option<i64> {
        self.axis_index(axis).and_then(|i| self.shape.get(i).copied())
    }

    /// Ranks of one group spanning `axes` (`None` if an axis is unknown).
    #[must_use]
    pub fn group_size<S: AsRef<str>>(&self, axes: &[S]) -> Option<u64> {
        axes.iter().try_fold(1u64, |acc, a| acc.checked_mul(u64::try_from(self.axis_size(a.as_ref())?).ok()?))
    }

    /// Ranks of a slice (`-1` spans the axis); the whole mesh without one.
    #[must_use]
    pub fn slice_size(&self, slice: Option<&[i64]>) -> u64 {
        self.shape
            .iter()
            .enumerate()
            .map(|(i, size)| if slice.and_then(|s| s.get(i)).is_some_and(|c| *c >= 0) { 1 } else { u64::try_from(*size).unwrap_or(0) })
            .fold(1u64, u64::saturating_mul)
    }
}

/// The well-formed meshes of a module, by symbol.
#[derive(Debug, Default)]
pub struct Meshes(HashMap<String, Mesh>);

impl Meshes {
    /// The well-formed `dist.mesh` ops among `ops` (the verifier reports
    /// the others).
    #[must_use]
    pub fn of(ops: &[OperationRef]) -> Self {
        Self(
            ops.iter()
                .filter(|op| OpKind::of(**op) == Some(OpKind::DistMesh))
                .filter_map(|op| Mesh::read(*op))
                .filter(|(_, mesh)| mesh.is_well_formed())
                .collect(),
        )
    }

    /// The mesh named `name`.
    #[must_use]
    pub fn get(&self, name: &str) -> Option<&Mesh> {
        self.0.get(name)
    }

    /// The mesh the `mesh` attribute of `op` names.
    #[must_use]
    pub fn of_op(&self, op: OperationRef) -> Option<&Mesh> {
        symbol_attr(op, "mesh").and_then(|m| self.get(m))
    }
}

#[cfg(test)]
mod tests {
    use super::Mesh;

    #[test]
    fn groups_and_slices() {
        let mesh = Mesh { axes: vec!["dp".into(), "pp".into(), "tp".into()], shape: vec![4, 2, 8] };
        assert_eq!(mesh.size(), 64);
        assert_eq!(mesh.group_size(&["tp"]), Some(8));
        assert_eq!(mesh.group_size(&["dp", "tp"]), Some(32));
        assert_eq!(mesh.group_size(&["ep"]), None);
        assert_eq!(mesh.slice_size(Some(&[-1, 1, -1])), 32);
        assert_eq!(mesh.slice_size(None), 64);
        assert!(mesh.is_well_formed());
        assert!(!Mesh { axes: vec!["a".into()], shape: vec![0] }.is_well_formed());
    }
}
