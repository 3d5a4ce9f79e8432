//! A bounded log of measurements (latencies, durations) with a running total, so that a reader on another
//! thread can take the samples recorded since it last looked (to fold them into a histogram) while the
//! engine keeps only the most recent ones.

use std::collections::VecDeque;
use std::sync::Mutex;

pub const DEFAULT_SAMPLES_KEPT: usize = 65_536;

#[derive(Debug, Default)]
pub struct Samples {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    total: u64,
    kept: VecDeque<u64>,
}

impl Samples {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn record(&self, value: u64) {
        let mut i = self.lock();
        if i.kept.len() == DEFAULT_SAMPLES_KEPT {
            i.kept.pop_front();
        }
        i.kept.push_back(value);
        i.total += 1;
    }

    /// The samples still kept, oldest first.
    pub fn recent(&self) -> Vec<u64> {
        self.lock().kept.iter().copied().collect()
    }

    /// Samples recorded after the first `cursor` ones (those still kept), and the new cursor.
    pub fn since(&self, cursor: u64) -> (u64, Vec<u64>) {
        let i = self.lock();
        let first_kept = i.total - i.kept.len() as u64;
        let skip = cursor.saturating_sub(first_kept) as usize;
        (i.total, i.kept.iter().skip(skip).copied().collect())
    }

    pub fn total(&self) -> u64 {
        self.lock().total
    }

    pub fn clear(&self) {
        self.lock().kept.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_returns_only_new_samples() {
        let s = Samples::default();
        s.record(1);
        s.record(2);
        let (c, v) = s.since(0);
        assert_eq!((c, v), (2, vec![1, 2]));
        s.record(3);
        assert_eq!(s.since(c), (3, vec![3]));
        assert_eq!(s.since(3), (3, vec![]));
    }
}
