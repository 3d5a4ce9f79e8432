//! Watermarks (RisingWave's `Watermark`): a promise that no later row of the stream has a value below `val`
//! in column `col_idx`. A watermark filter makes them; project, filter and the executors that keep columns
//! pass them on (a project derives its output's), a merge or union passes the minimum over its upstreams,
//! and an emit-on-window-close executor emits what lies below them.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use epochlab_common::types::cmp_scalar;
use epochlab_common::{DataType, ScalarImpl};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Watermark {
    pub col_idx: usize,
    pub data_type: DataType,
    pub val: ScalarImpl,
}

impl Watermark {
    pub fn new(col_idx: usize, data_type: DataType, val: ScalarImpl) -> Self {
        Self {
            col_idx,
            data_type,
            val,
        }
    }

    /// The same watermark on another column.
    pub fn with_idx(self, col_idx: usize) -> Self {
        Self { col_idx, ..self }
    }
}

/// The order of two watermark values of one column's type.
pub fn cmp_watermark(a: &ScalarImpl, b: &ScalarImpl) -> Ordering {
    cmp_scalar(a, b).unwrap_or(Ordering::Equal)
}

/// The watermarks of several upstreams, per column (RisingWave's `BufferedWatermarks`): a column's watermark
/// goes out once every upstream has sent one, as the minimum of their latest, and again each time that
/// minimum rises.
#[derive(Debug)]
pub struct BufferedWatermarks {
    upstreams: usize,
    /// Per column: each upstream's latest, and the last sent.
    columns: BTreeMap<usize, (Vec<Option<Watermark>>, Option<ScalarImpl>)>,
}

impl BufferedWatermarks {
    pub fn new(upstreams: usize) -> Self {
        Self {
            upstreams,
            columns: BTreeMap::new(),
        }
    }

    /// Upstream `upstream` sent `w`: the watermark to send downstream, if the minimum rose.
    pub fn handle(&mut self, upstream: usize, w: Watermark) -> Option<Watermark> {
        let n = self.upstreams;
        let (latest, sent) = self
            .columns
            .entry(w.col_idx)
            .or_insert_with(|| (vec![None; n], None));
        let slot = &mut latest[upstream];
        // An upstream's watermarks only rise; a lower one changes nothing.
        if slot
            .as_ref()
            .is_some_and(|old| cmp_watermark(&old.val, &w.val).is_ge())
        {
            return None;
        }
        *slot = Some(w);
        let min = latest
            .iter()
            .map(|l| l.as_ref())
            .collect::<Option<Vec<_>>>()?
            .into_iter()
            .min_by(|a, b| cmp_watermark(&a.val, &b.val))?
            .clone();
        if sent
            .as_ref()
            .is_some_and(|s| cmp_watermark(s, &min.val).is_ge())
        {
            return None;
        }
        *sent = Some(min.val.clone());
        Some(min)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(v: i64) -> Watermark {
        Watermark::new(0, DataType::Int64, ScalarImpl::Int64(v))
    }

    #[test]
    fn the_minimum_goes_out_once_every_upstream_sent_one() {
        let mut b = BufferedWatermarks::new(2);
        assert_eq!(b.handle(0, w(5)), None);
        assert_eq!(b.handle(1, w(3)), Some(w(3)));
        // The minimum is still 3.
        assert_eq!(b.handle(0, w(7)), None);
        assert_eq!(b.handle(1, w(9)), Some(w(7)));
        // Lower than an upstream's latest: ignored.
        assert_eq!(b.handle(1, w(4)), None);
        assert_eq!(b.handle(0, w(8)), Some(w(8)));
    }

    #[test]
    fn columns_are_kept_apart() {
        let mut b = BufferedWatermarks::new(1);
        assert_eq!(b.handle(0, w(5)), Some(w(5)));
        let other = w(1).with_idx(2);
        assert_eq!(b.handle(0, other.clone()), Some(other));
    }
}
