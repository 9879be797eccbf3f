//! report.py diff's frames on one side only, of two sides' folded files (each side's rounds): a frame in B's
//! stacks and in none of A's is new, one in A's and in none of B's has vanished. Each comes with the share of its
//! side's weight whose stacks hold it (the mean over the side's files), summed stack by stack in the files' order.
//! Gives, as JSON, each side's count and its `listed` largest (share, then name); writes to names_out every such
//! frame, `a\tNAME` or `b\tNAME` a line.
//!
//! Given a merged file (one file a side), it also writes there the lines inferno-flamegraph draws the diff from
//! (inferno-diff-folded's `STACK COUNT_A COUNT_B`), each stack as rows::drawn draws it, A scaled
//! and its stacks that hold a vanished frame added to B's at A's width when there are any.
//!
//! Each side is read once: a distinct callers text is split into its frames once, and a stack is numbered by
//! its (callers, leaf) pair, so a million stacks under a hundred thousand callers cost a million leaves' look-ups.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};

use crate::intern::Interner;
use crate::rows::{drawn, each_row, refused, Row, Stop};
use crate::speedscope::json_string;

/// Both files' frames, callers texts and stacks, numbered together in the order first seen (A, then B).
#[derive(Default)]
struct Both {
    frames: Interner,
    seen: Vec<u8>, // per frame: 1 when A holds it, 2 when B does
    callers: Interner,
    callers_at: Vec<u32>, // callers text i's frames are callers_frames[callers_at[i]..callers_at[i + 1]] (from [0])
    callers_frames: Vec<u32>,
    callers_seen: Vec<u8>,
    stacks: Vec<u64>,    // each stack's (callers << 32 | leaf), by its number
    others: HashMap<u64, u32>, // the number of each stack whose leaf's record notes another (stack_of)
    counts: Vec<[u64; 2]>,
    totals: [u128; 2],
    rows: [u64; 2],
}

impl Both {
    /// The callers text's number, its frames the side's (bit) when mark; a drawn text is not the side's frames.
    fn callers_of(&mut self, callers: &[u8], bit: u8, mark: bool) -> u32 {
        let (c, new) = self.callers.intern(callers);
        if new {
            if !callers.is_empty() {
                for f in callers[..callers.len() - 1].split(|&b| b == b';') {
                    let (i, _) = self.frame(f);
                    self.callers_frames.push(i);
                }
            }
            self.callers_at.push(self.callers_frames.len() as u32);
            self.callers_seen.push(0);
        }
        if mark && self.callers_seen[c as usize] & bit == 0 {
            self.callers_seen[c as usize] |= bit;
            for &f in &self.callers_frames[self.span(c)] {
                self.seen[f as usize] |= bit;
            }
        }
        c
    }

    /// The frame's number and where its record starts, a new frame seen on neither side yet.
    fn frame(&mut self, f: &[u8]) -> (u32, usize) {
        let (i, new, at) = self.frames.intern_at(f);
        if new {
            self.seen.push(0);
        }
        (i, at)
    }

    fn span(&self, c: u32) -> std::ops::Range<usize> {
        self.callers_at[c as usize] as usize..self.callers_at[c as usize + 1] as usize
    }

    /// The file's rows counted as the side's; its total weight.
    fn read(&mut self, path: &str, side: usize) -> Result<u128, Stop> {
        let bit = 1u8 << side;
        let mut total = 0u128;
        each_row(path, |row| {
            let (_, leaf, s, new) = self.numbered(&row, bit, true);
            self.seen[leaf as usize] |= bit;
            if new {
                self.counts.push([0, 0]);
            }
            self.counts[s as usize][side] += row.count;
            total += row.count as u128;
            self.rows[side] += 1;
            Ok(())
        })?;
        self.totals[side] += total;
        if self.totals[side] >= 1 << 53 {
            return Err(refused("a total weight of 2^53 or more (Python divides it exactly, f64 does not)"));
        }
        Ok(total)
    }

    /// (the number, whether it is new) of the stack (c, leaf), at: where the leaf's record starts. A leaf notes in
    /// its record the first stack it ends, (callers + 1, stack), read with the leaf itself; any other stack it ends
    /// is numbered in others.
    fn stack_of(&mut self, c: u32, leaf: u32, at: usize) -> (u32, bool) {
        let note = self.frames.note(at);
        if note >> 32 == c as u64 + 1 {
            return (note as u32, false);
        }
        let key = (c as u64) << 32 | leaf as u64;
        let next = self.stacks.len() as u32;
        let s = if note == 0 {
            self.frames.set_note(at, (c as u64 + 1) << 32 | next as u64);
            next
        } else {
            *self.others.entry(key).or_insert(next)
        };
        let new = s == next;
        if new {
            self.stacks.push(key);
        }
        (s, new)
    }

    /// (its callers' number, its leaf's, its stack's as drawn, whether that stack is new) of a row, its frames the
    /// side's (bit) when mark (a row read again finds every number it had).
    fn numbered(&mut self, row: &Row, bit: u8, mark: bool) -> (u32, u32, u32, bool) {
        let c = self.callers_of(row.callers, bit, mark);
        let (leaf, at) = self.frame(row.leaf);
        let (s, new) = match drawn(row) {
            Some(stack) => {
                let (dc, dl) = stack.split_at(stack.iter().rposition(|&b| b == b';').map_or(0, |i| i + 1));
                let c = self.callers_of(dc, bit, false);
                let (leaf, at) = self.frame(dl);
                self.stack_of(c, leaf, at)
            }
            None => self.stack_of(c, leaf, at),
        };
        (c, leaf, s, new)
    }

    fn only(&self, side: usize) -> Vec<bool> {
        let bit = 1u8 << side;
        self.seen.iter().map(|&s| s == bit).collect()
    }
}

/// A side's second pass, when it holds frames the other lacks: per frame (by its number) the share of the side's
/// weight whose stacks hold it, the mean over the side's files (its rounds); when scale is given (A's one file), each
/// row's weight scaled (A's weights drawn at B's scale, rounded half to even as Python's round) and summed per stack
/// as drawn into scaled, and the weight of each row that holds such a frame added to B's count of its stack too.
struct Again<'a> {
    both: &'a mut Both,
    only: &'a [bool],
    held: Vec<Option<Vec<u32>>>, // per callers text: its frames on this side only, once each
    sums: Vec<f64>,
    scale: Option<f64>,
    scaled: Vec<u64>,
}

impl Again<'_> {
    fn new<'a>(both: &'a mut Both, only: &'a [bool], scale: Option<f64>) -> Again<'a> {
        let held = vec![None; both.callers.len() as usize];
        let scaled = vec![0; if scale.is_some() { both.counts.len() } else { 0 }];
        Again { sums: vec![0.0; only.len()], both, only, held, scale, scaled }
    }

    fn shares(&mut self, path: &str, total: u128, files: usize) -> Result<(), Stop> {
        let total = total.max(1) as f64;
        let mut held: Vec<u32> = Vec::new();
        each_row(path, |row| {
            let (c, leaf, s, _) = self.both.numbered(&row, 0, false);
            let scaled = self.scale.map(|scale| (row.count as f64 * scale).round_ties_even() as u64);
            if let Some(w) = scaled {
                self.scaled[s as usize] += w;
            }
            if self.held[c as usize].is_none() {
                let mut mine: Vec<u32> = Vec::new();
                for &f in &self.both.callers_frames[self.both.span(c)] {
                    if self.only[f as usize] && !mine.contains(&f) {
                        mine.push(f);
                    }
                }
                self.held[c as usize] = Some(mine);
            }
            held.clear();
            held.extend_from_slice(self.held[c as usize].as_deref().unwrap_or_default());
            if self.only[leaf as usize] && !held.contains(&leaf) {
                held.push(leaf);
            }
            if held.is_empty() {
                return Ok(());
            }
            let share = row.count as f64 / total / files as f64;
            for &i in &held {
                self.sums[i as usize] += share;
            }
            if let Some(w) = scaled {
                self.both.counts[s as usize][1] += w;
            }
            Ok(())
        })
    }
}

fn listed(both: &Both, only: &[bool], sums: &[f64], n: usize, out: &mut Vec<u8>) {
    let mut found: Vec<u32> = (0..both.frames.len()).filter(|&i| only[i as usize]).collect();
    found.sort_by(|&x, &y| {
        sums[y as usize].total_cmp(&sums[x as usize]).then_with(|| both.frames.get(x).cmp(both.frames.get(y)))
    });
    out.extend_from_slice(format!("{{\"count\":{},\"frames\":[", found.len()).as_bytes());
    for (k, &i) in found.iter().take(n).enumerate() {
        if k > 0 {
            out.push(b',');
        }
        out.push(b'[');
        json_string(out, std::str::from_utf8(both.frames.get(i)).expect("rows are UTF-8"));
        out.extend_from_slice(format!(",{:?}]", sums[i as usize]).as_bytes());
    }
    out.extend_from_slice(b"]}");
}

/// The drawn lines merged as inferno-diff-folded merges them (`STACK COUNT_A COUNT_B`): with vanished frames, A's
/// counts drawn at B's scale row by row (Again added A's stacks that hold one to B's counts), else A's raw counts,
/// normalised to B's total at the end as --normalize does.
fn write_merged(both: &Both, path: &str, scaled_a: Option<&[u64]>, normalize: bool) -> Result<(), Stop> {
    let mut out = BufWriter::with_capacity(1 << 20, File::create(path)?);
    let (t1, t2) = (both.totals[0] as u64, both.totals[1] as u64);
    for (s, [first, second]) in both.counts.iter().enumerate() {
        let first = match scaled_a {
            Some(scaled) => scaled[s],
            None if normalize && t1 != t2 => (*first as f64 * t2 as f64 / t1 as f64) as u64,
            None => *first,
        };
        let (c, leaf) = ((both.stacks[s] >> 32) as u32, both.stacks[s] as u32);
        out.write_all(both.callers.get(c))?;
        out.write_all(both.frames.get(leaf))?;
        writeln!(out, " {first} {second}")?;
    }
    out.flush()?;
    Ok(())
}

/// a, b: each side's files (its rounds); merged: (the file to write the merged lines to, whether A is normalised
/// to B's total), given one file a side.
pub fn encode(a: &[String], b: &[String], n: usize, names_out: &str, merged: Option<(&str, bool)>,
              out: &mut impl Write) -> Result<u64, Stop> {
    let mut both = Both { callers_at: vec![0], ..Default::default() };
    let mut totals: [Vec<u128>; 2] = Default::default();
    for (side, files) in [a, b].into_iter().enumerate() {
        for file in files {
            totals[side].push(both.read(file, side)?);
        }
    }
    let (only_a, only_b) = (both.only(0), both.only(1));
    let normalize = merged.is_some_and(|(_, norm)| norm);
    let mut scaled_a = None;
    let mut sums: [Vec<f64>; 2] = Default::default();
    for (side, (files, only)) in [(a, &only_a), (b, &only_b)].into_iter().enumerate() {
        if !only.contains(&true) {
            continue;
        }
        // A scaled to B's own total, as --normalize would, before B grows by A's stacks
        let scale = if normalize { both.totals[1] as f64 / both.totals[0] as f64 } else { 1.0 };
        let mut again = Again::new(&mut both, only, merged.filter(|_| side == 0).map(|_| scale));
        for (file, &total) in files.iter().zip(&totals[side]) {
            again.shares(file, total, files.len())?;
        }
        sums[side] = again.sums;
        scaled_a = scaled_a.or(again.scale.map(|_| again.scaled));
    }
    if let Some((path, normalize)) = merged {
        write_merged(&both, path, scaled_a.as_deref(), normalize)?;
    }
    let mut names = BufWriter::with_capacity(1 << 20, File::create(names_out)?);
    for (tag, only) in [(b'a', &only_a), (b'b', &only_b)] {
        for i in (0..both.frames.len()).filter(|&i| only[i as usize]) {
            names.write_all(&[tag, b'\t'])?;
            names.write_all(both.frames.get(i))?;
            names.write_all(b"\n")?;
        }
    }
    names.flush()?;
    let mut doc = b"{\"a\":".to_vec();
    listed(&both, &only_a, &sums[0], n, &mut doc);
    doc.extend_from_slice(b",\"b\":");
    listed(&both, &only_b, &sums[1], n, &mut doc);
    doc.extend_from_slice(b"}\n");
    out.write_all(&doc)?;
    out.flush()?;
    Ok(both.rows[0] + both.rows[1])
}
