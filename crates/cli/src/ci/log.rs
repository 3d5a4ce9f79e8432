//! A kept log's bound: a failing (step, seed) of a long step logs hundreds of MB at the script's debug scope
//! (RisingWave's CI kept such logs whole, as build artifacts). Here a log keeps its first [`HEAD`] bytes and its
//! last [`TAIL`] bytes, with a line saying how much was left out between them; the failure itself is appended
//! after the run, so it is always there.

use std::collections::VecDeque;
use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// The bytes a log keeps from its start.
pub(super) const HEAD: u64 = 8 << 20;
/// The bytes a log keeps from its end.
pub(super) const TAIL: usize = 56 << 20;

/// The log of one (step, seed): written through to its file up to `head` bytes, then only the last `tail`
/// bytes are held, in memory, until [`BoundedLog::finish`].
pub(super) struct BoundedLog {
    file: File,
    head: u64,
    written: u64,
    tail: VecDeque<u8>,
    tail_cap: usize,
    left_out: u64,
}

/// The handle the log layer writes through; the caller keeps another to finish the log.
#[derive(Clone)]
pub(super) struct SharedLog(pub(super) Arc<Mutex<BoundedLog>>);

impl BoundedLog {
    pub(super) fn create(path: &Path, head: u64, tail: usize) -> std::io::Result<SharedLog> {
        Ok(SharedLog(Arc::new(Mutex::new(BoundedLog {
            file: File::create(path)?,
            head,
            written: 0,
            tail: VecDeque::new(),
            tail_cap: tail,
            left_out: 0,
        }))))
    }

    fn hold(&mut self, buf: &[u8]) {
        if buf.len() >= self.tail_cap {
            self.left_out += (self.tail.len() + buf.len() - self.tail_cap) as u64;
            self.tail.clear();
            self.tail.extend(&buf[buf.len() - self.tail_cap..]);
            return;
        }
        let over = (self.tail.len() + buf.len()).saturating_sub(self.tail_cap);
        self.tail.drain(..over);
        self.left_out += over as u64;
        self.tail.extend(buf);
    }

    /// Write what the tail holds after a line naming what was left out; the tail starts at a line's start.
    pub(super) fn finish(&mut self) -> std::io::Result<()> {
        let mut tail: Vec<u8> = std::mem::take(&mut self.tail).into();
        if self.left_out > 0 {
            let cut = tail.iter().position(|&b| b == b'\n').map_or(0, |i| i + 1);
            self.left_out += cut as u64;
            tail.drain(..cut);
            writeln!(
                self.file,
                "[epochlab ci: {} bytes of this log left out here; a log keeps its first {} MiB and its last {} MiB]",
                self.left_out,
                self.head >> 20,
                self.tail_cap >> 20
            )?;
        }
        self.file.write_all(&tail)?;
        self.file.flush()
    }
}

impl Write for BoundedLog {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let room = self.head.saturating_sub(self.written) as usize;
        let now = buf.len().min(room);
        if now > 0 {
            self.file.write_all(&buf[..now])?;
            self.written += now as u64;
        }
        if now < buf.len() {
            self.hold(&buf[now..]);
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

impl Write for SharedLog {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_keeps_its_head_and_its_tail_from_a_line_start() {
        let path =
            std::env::temp_dir().join(format!("epochlab-bounded-log-{}", std::process::id()));
        let log = BoundedLog::create(&path, 12, 16).unwrap();
        let mut w = log.clone();
        for i in 0..10 {
            writeln!(w, "line {i}").unwrap();
        }
        log.0.lock().unwrap().finish().unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        // 70 bytes: the head keeps 12 ("line 0\nline"), the tail the last whole lines of its 16.
        assert!(
            text.starts_with("line 0\nline [epochlab ci: 44 bytes"),
            "{text}"
        );
        assert!(text.ends_with("bytes of this log left out here; a log keeps its first 0 MiB and its last 0 MiB]\nline 8\nline 9\n"), "{text}");
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn a_short_log_is_kept_whole() {
        let path =
            std::env::temp_dir().join(format!("epochlab-bounded-short-{}", std::process::id()));
        let log = BoundedLog::create(&path, HEAD, TAIL).unwrap();
        let mut w = log.clone();
        writeln!(w, "one").unwrap();
        log.0.lock().unwrap().finish().unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "one\n");
        let _ = std::fs::remove_file(&path);
    }
}
