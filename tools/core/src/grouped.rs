//! A folded file's rows for report.py's categorisation (rpcprof.folded.chunks, analyze/stack_walk.py), read here so that
//! report.py reads no line itself: chunks of up to CHUNK rows, each
//!
//!   `C` ROWS NEW_CALLERS CALLERS_LEN NEW_LEAVES LEAVES_LEN DRAWN_LEN   (u32 little-endian each)
//!   the callers texts first seen in the chunk (`a;b;`, or empty for a stack of one frame), joined by newlines
//!   the chunk's distinct leaves, joined by newlines
//!   each row's callers text, by its number (u32 each: the texts numbered in the order first seen in the file)
//!   each row's leaf, by its number (u32 each: the chunk's leaves numbered in the order first seen in it)
//!   each row's count (u64 each)
//!   when asked for (the flame graph's), the rows' lines as inferno-flamegraph must read them (rows::drawn_line)
//!
//! and `E` at the end. The rows are rows.rs's (it refuses a line it would not take, and this stream then
//! ends without its `E`).

use std::io::Write;

use crate::intern::Interner;
use crate::rows::{drawn_line, each_row, Stop};

pub const CHUNK: usize = 1 << 14;

/// The texts first seen in a chunk, joined by newlines, and how many.
#[derive(Default)]
struct Texts {
    joined: Vec<u8>,
    count: u32,
}

impl Texts {
    /// s's number in numbers, s added to the texts when it is new.
    fn number(&mut self, numbers: &mut Interner, s: &[u8]) -> u32 {
        let (n, new) = numbers.intern(s);
        if new {
            self.joined.extend_from_slice(s);
            self.joined.push(b'\n');
            self.count += 1;
        }
        n
    }

    fn len(&self) -> u32 {
        self.joined.len().saturating_sub(1) as u32 // without the last newline
    }
}

#[derive(Default)]
struct Chunk {
    callers: Texts,
    leaves: Texts,
    leaf_numbers: Interner, // the chunk's own: a fleet's million distinct leaves are not all held
    callers_ids: Vec<u8>,
    leaf_ids: Vec<u8>,
    counts: Vec<u8>,
    drawn: Vec<u8>,
    rows: u32,
}

impl Chunk {
    fn write(&mut self, out: &mut impl Write) -> std::io::Result<()> {
        if self.rows == 0 {
            return Ok(());
        }
        let (callers, leaves) = (&self.callers, &self.leaves);
        out.write_all(b"C")?;
        for n in [self.rows, callers.count, callers.len(), leaves.count, leaves.len(), self.drawn.len() as u32] {
            out.write_all(&n.to_le_bytes())?;
        }
        out.write_all(&callers.joined[..callers.len() as usize])?;
        out.write_all(&leaves.joined[..leaves.len() as usize])?;
        out.write_all(&self.callers_ids)?;
        out.write_all(&self.leaf_ids)?;
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
        let c = chunk.callers.number(&mut callers, row.callers);
        let l = chunk.leaves.number(&mut chunk.leaf_numbers, row.leaf);
        chunk.callers_ids.extend_from_slice(&c.to_le_bytes());
        chunk.leaf_ids.extend_from_slice(&l.to_le_bytes());
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
