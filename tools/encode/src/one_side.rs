//! report.py diff's frames on one side only, of two folded files, as report/diff_stream.py finds them: a frame
//! in B's stacks and in none of A's is new, one in A's and in none of B's has vanished. Each comes with the share
//! of its side's weight whose stacks hold it, summed stack by stack in the file's order as diff_stream.shares_of
//! sums them (the same floats). Writes to stdout, as JSON, each side's count and its `listed` largest (share,
//! then name); to names_out every such frame, `a\tNAME` or `b\tNAME` a line; to vanished_out A's lines that hold
//! a vanished frame, as written.

use std::fs::File;
use std::io::{BufWriter, Write};

use crate::intern::Interner;
use crate::rows::{each_row, refused, Row, Stop};
use crate::speedscope::json_string;

struct Side {
    frames: Interner,
    total: u128,
    stacks: u64,
}

/// Each frame of a row, callers root first, then the leaf, as its bytes.
fn frames<'a>(row: &Row<'a>) -> impl Iterator<Item = &'a [u8]> {
    let callers = if row.callers.is_empty() { &b""[..0] } else { &row.callers[..row.callers.len() - 1] };
    let head = (!row.callers.is_empty()).then(|| callers.split(|&b| b == b';'));
    head.into_iter().flatten().chain(std::iter::once(row.leaf))
}

fn read_side(path: &str) -> Result<Side, Stop> {
    let mut side = Side { frames: Interner::default(), total: 0, stacks: 0 };
    each_row(path, |row| {
        for f in frames(&row) {
            side.frames.intern(f);
        }
        side.total += row.count as u128;
        side.stacks += 1;
        Ok(())
    })?;
    if side.total >= 1 << 53 {
        return Err(refused("a total weight of 2^53 or more (Python divides it exactly, f64 does not)"));
    }
    Ok(side)
}

/// Per frame of `side` (by its number there) that `other` lacks, the share of side's weight whose stacks hold
/// it; each row of side holding one written to vanished, when given.
fn shares(path: &str, side: &Side, only: &[bool], mut vanished: Option<&mut BufWriter<File>>) -> Result<Vec<f64>, Stop> {
    let mut sums = vec![0.0f64; only.len()];
    let total = side.total.max(1) as f64;
    let mut held: Vec<u32> = Vec::new();
    each_row(path, |row| {
        held.clear();
        for f in frames(&row) {
            let i = side.frames.find(f).expect("read before");
            if only[i as usize] && !held.contains(&i) {
                held.push(i);
            }
        }
        if held.is_empty() {
            return Ok(());
        }
        let share = row.count as f64 / total;
        for &i in &held {
            sums[i as usize] += share;
        }
        if let Some(out) = vanished.as_deref_mut() {
            out.write_all(row.callers)?;
            out.write_all(row.leaf)?;
            writeln!(out, " {}", row.count)?;
        }
        Ok(())
    })?;
    Ok(sums)
}

fn listed(side: &Side, only: &[bool], sums: &[f64], n: usize, out: &mut Vec<u8>) {
    let mut found: Vec<u32> = (0..side.frames.len()).filter(|&i| only[i as usize]).collect();
    found.sort_by(|&x, &y| {
        sums[y as usize].total_cmp(&sums[x as usize]).then_with(|| side.frames.get(x).cmp(side.frames.get(y)))
    });
    out.extend_from_slice(format!("{{\"count\":{},\"frames\":[", found.len()).as_bytes());
    for (k, &i) in found.iter().take(n).enumerate() {
        if k > 0 {
            out.push(b',');
        }
        out.push(b'[');
        json_string(out, std::str::from_utf8(side.frames.get(i)).expect("rows are UTF-8"));
        out.extend_from_slice(format!(",{:?}]", sums[i as usize]).as_bytes());
    }
    out.extend_from_slice(b"]}");
}

pub fn encode(a: &str, b: &str, n: usize, names_out: &str, vanished_out: &str, out: &mut impl Write)
              -> Result<u64, Stop> {
    let (side_a, side_b) = (read_side(a)?, read_side(b)?);
    let only_a: Vec<bool> = (0..side_a.frames.len()).map(|i| side_b.frames.find(side_a.frames.get(i)).is_none()).collect();
    let only_b: Vec<bool> = (0..side_b.frames.len()).map(|i| side_a.frames.find(side_b.frames.get(i)).is_none()).collect();
    let mut vanished = BufWriter::with_capacity(1 << 20, File::create(vanished_out)?);
    let sums_a = if only_a.contains(&true) { shares(a, &side_a, &only_a, Some(&mut vanished))? } else { vec![] };
    let sums_b = if only_b.contains(&true) { shares(b, &side_b, &only_b, None)? } else { vec![] };
    vanished.flush()?;
    let mut names = BufWriter::with_capacity(1 << 20, File::create(names_out)?);
    for (tag, side, only) in [(b'a', &side_a, &only_a), (b'b', &side_b, &only_b)] {
        for i in (0..side.frames.len()).filter(|&i| only[i as usize]) {
            names.write_all(&[tag, b'\t'])?;
            names.write_all(side.frames.get(i))?;
            names.write_all(b"\n")?;
        }
    }
    names.flush()?;
    let mut doc = b"{\"a\":".to_vec();
    listed(&side_a, &only_a, &sums_a, n, &mut doc);
    doc.extend_from_slice(b",\"b\":");
    listed(&side_b, &only_b, &sums_b, n, &mut doc);
    doc.extend_from_slice(b"}\n");
    out.write_all(&doc)?;
    out.flush()?;
    Ok(side_a.stacks + side_b.stacks)
}
