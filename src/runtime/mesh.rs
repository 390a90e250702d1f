//! Ranks of a logical mesh, numbered row-major: a rank's coordinates and
//! the group of ranks that differ from it only along some axes, which is
//! what a collective named by mesh axes (`axes ["tp"]`) spans. The runtime
//! builds such groups at run time (`_bprt_mesh_group`) and the checks of a
//! dist program hold claimed participants to the same rule.

/// `rank`'s coordinates on a mesh of `shape` (row-major: the last axis
/// varies fastest).
#[must_use]
pub fn coordinates(shape: &[i64], rank: i64) -> Vec<i64> {
    let mut coords = vec![0i64; shape.len()];
    let mut rest = rank;
    for d in (0..shape.len()).rev() {
        coords[d] = rest % shape[d].max(1);
        rest /= shape[d].max(1);
    }
    coords
}

/// The ranks that differ from `rank` only along the `varying` axes, in
/// increasing order.
pub fn axis_group<'s>(shape: &'s [i64], varying: &'s [usize], rank: i64) -> impl Iterator<Item = i64> + 's {
    let coords = coordinates(shape, rank);
    let mut varying_sorted = varying.to_vec();
    varying_sorted.sort_unstable();
    let total: i64 = varying.iter().map(|&d| shape[d]).product();
    (0..total).map(move |mut k| {
        let mut c = coords.clone();
        for &d in varying_sorted.iter().rev() {
            c[d] = k % shape[d];
            k /= shape[d];
        }
        c.iter().zip(shape).fold(0, |acc, (x, s)| acc * s + x)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_are_the_ranks_sharing_the_other_coordinates() {
        // A 2 x 3 x 2 mesh (dp, pp, tp): rank 7 is (1, 0, 1).
        let shape = [2, 3, 2];
        assert_eq!(coordinates(&shape, 7), vec![1, 0, 1]);
        assert_eq!(axis_group(&shape, &[2], 7).collect::<Vec<_>>(), vec![6, 7]);
        assert_eq!(axis_group(&shape, &[0], 7).collect::<Vec<_>>(), vec![1, 7]);
        assert_eq!(axis_group(&shape, &[1], 7).collect::<Vec<_>>(), vec![7, 9, 11]);
        // Several axes, in any order: every rank of its dp slice.
        assert_eq!(axis_group(&shape, &[2, 1], 7).collect::<Vec<_>>(), vec![6, 7, 8, 9, 10, 11]);
        assert_eq!(axis_group(&shape, &[], 7).collect::<Vec<_>>(), vec![7]);
        // Every rank is in its own group, and the groups partition the mesh.
        for axes in [vec![0], vec![1], vec![2], vec![0, 2]] {
            let mut seen = [0; 12];
            for rank in 0..12 {
                let group: Vec<i64> = axis_group(&shape, &axes, rank).collect();
                assert!(group.contains(&rank));
                for member in group {
                    seen[member as usize] += 1;
                }
            }
            let size: i64 = axes.iter().map(|&a| shape[a]).product();
            assert!(seen.iter().all(|&n| n == size), "{axes:?}");
        }
    }
}
