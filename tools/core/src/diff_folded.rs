//! inferno-diff-folded's output, as inferno 0.12.8's differential module makes it (`STACK COUNT_A COUNT_B` a
//! line, each stack's counts summed over both files, A's scaled to B's total with --normalize when the totals
//! differ), for report.py diff's drawn files: each line read and parsed as inferno reads it, the stacks kept in
//! one arena (intern.rs) instead of a String each, and written in the order first seen (inferno writes its hash
//! map's order; inferno-flamegraph sorts the lines, so the graph is the same).

use std::fs::File;
use std::io::{BufRead, BufReader, Write};

use crate::intern::Interner;
use crate::rows::Stop;

/// (stack, count) of a line as inferno's parse_line reads it (strip_hex off); None for a line it skips.
fn parse_line(line: &str) -> Option<(&str, usize)> {
    let at = line.rfind(' ')?;
    let mut samples = line[at + 1..].trim_end();
    if let Some(dot) = samples.find('.') {
        if !samples[..dot].chars().chain(samples[dot + 1..].chars()).all(|c| c.is_ascii_digit()) {
            return None;
        }
        samples = &samples[..dot];
    }
    let n = samples.parse::<usize>().ok()?;
    Some((line[..at].trim_end(), n))
}

fn read(path: &str, stacks: &mut Interner, counts: &mut Vec<[usize; 2]>, side: usize) -> Result<usize, Stop> {
    let mut reader = BufReader::with_capacity(1 << 20, File::open(path)?);
    let (mut line, mut total) = (Vec::new(), 0usize);
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line)? == 0 {
            return Ok(total);
        }
        let text = String::from_utf8_lossy(&line);
        if let Some((stack, n)) = parse_line(&text) {
            let (i, new) = stacks.intern(stack.as_bytes());
            if new {
                counts.push([0, 0]);
            }
            counts[i as usize][side] += n;
            total += n;
        }
    }
}

pub fn encode(a: &str, b: &str, normalize: bool, out: &mut impl Write) -> Result<u64, Stop> {
    let (mut stacks, mut counts) = (Interner::default(), Vec::new());
    let total1 = read(a, &mut stacks, &mut counts, 0)?;
    let total2 = read(b, &mut stacks, &mut counts, 1)?;
    if normalize && total1 != total2 {
        for c in counts.iter_mut() {
            c[0] = (c[0] as f64 * total2 as f64 / total1 as f64) as usize;
        }
    }
    for (i, [first, second]) in counts.iter().enumerate() {
        out.write_all(stacks.get(i as u32))?;
        writeln!(out, " {first} {second}")?;
    }
    out.flush()?;
    Ok(counts.len() as u64)
}
