//! A folded file's rows for report.py's categorisation (analyze/stack_walk.py's encoded_rows), read here so that
//! report.py reads no line itself: chunks of up to CHUNK rows, each
//!
//!   `C` ROWS NEW NEW_LEN LEAVES_LEN DRAWN_LEN   (u32 little-endian each)
//!   the callers texts first seen in the chunk (`a;b;`, or empty for a stack of one frame), joined by newlines
//!   the rows' leaves, joined by newlines
//!   each row's callers text, by its number (u32 each: the texts numbered in the order first seen)
//!   each row's count (u64 each)
//!   when asked for (the flame graph's), the rows' lines as inferno-flamegraph must read them (rows::drawn_line)
//!
//! and `E` at the end. The rows are stream_folded's stacks (rows.rs refuses a line it would not take, and this stream then
//! ends without its `E`).

use std::io::Write;

use crate::intern::Interner;
use crate::rows::{drawn_line, each_row, Stop};

pub const CHUNK: usize = 1 << 14;

#[derive(Default)]
struct Chunk {
    new: Vec<u8>,
    new_count: u32,
    leaves: Vec<u8>,
    ids: Vec<u8>,
    counts: Vec<u8>,
    drawn: Vec<u8>,
    rows: u32,
}

impl Chunk {
    fn write(&mut self, out: &mut impl Write) -> std::io::Result<()> {
        if self.rows == 0 {
            return Ok(());
        }
        let new_len = self.new.len().saturating_sub(1) as u32;     // without the last newline
        let leaves_len = self.leaves.len() as u32 - 1;
        out.write_all(b"C")?;
        for n in [self.rows, self.new_count, new_len, leaves_len, self.drawn.len() as u32] {
            out.write_all(&n.to_le_bytes())?;
        }
        out.write_all(&self.new[..new_len as usize])?;
        out.write_all(&self.leaves[..leaves_len as usize])?;
        out.write_all(&self.ids)?;
        out.write_all(&self.counts)?;
        out.write_all(&self.drawn)?;
        *self = Chunk::default();
        Ok(())
    }
}

pub fn encode(path: &str, out: &mut impl Write, drawn: bool) -> Result<u64, Stop> {
    let mut callers = Interner::default();
    let mut chunk = Chunk::default();
    let mut stacks = 0u64;
    each_row(path, |row| {
        let (c, new) = callers.intern(row.callers);
        if new {
            chunk.new.extend_from_slice(row.callers);
            chunk.new.push(b'\n');
            chunk.new_count += 1;
        }
        chunk.leaves.extend_from_slice(row.leaf);
        chunk.leaves.push(b'\n');
        chunk.ids.extend_from_slice(&c.to_le_bytes());
        chunk.counts.extend_from_slice(&row.count.to_le_bytes());
        if drawn {
            drawn_line(&row, &mut chunk.drawn);
        }
        chunk.rows += 1;
        stacks += 1;
        if chunk.rows as usize == CHUNK {
            chunk.write(out)?;
        }
        Ok(())
    })?;
    chunk.write(out)?;
    out.write_all(b"E")?;
    out.flush()?;
    Ok(stacks)
}
