//! A folded file's rows, `CALLERS;LEAF COUNT` a line, read a block at a time: a blank line skipped (blank as
//! Python's str.isspace() says), the CRs at a line's end dropped, bytes that are not UTF-8 read as U+FFFD. A line it
//! does not take (no count, a count that is not 1-15 ASCII digits) ends the reading with Stop::BadLine, its number and
//! its text (raised as rpcprof_core.Refused(LINE, TEXT): rpcprof.folded.refusal words it).

use std::fs::File;
use std::io::{Read, Write};

pub const BLOCK: usize = 1 << 21;

/// Why the encoding stopped: the input is not what it takes (report.py then writes the document its own way),
/// or the output could not be written.
#[derive(Debug)]
pub enum Stop {
    Refused(String),
    BadLine(u64, String), // the line's number (from 1, blank lines counted) and its text
    CannotWrite(std::io::Error),
}

impl From<std::io::Error> for Stop {
    fn from(e: std::io::Error) -> Stop {
        Stop::CannotWrite(e)
    }
}

pub fn refused(why: impl Into<String>) -> Stop {
    Stop::Refused(why.into())
}

pub struct Row<'a> {
    pub callers: &'a [u8], // with its last ';', or empty for a stack of one frame
    pub leaf: &'a [u8],
    pub count: u64,
}

/// The row of a line; None when it is not `STACK COUNT` with COUNT 1-15 ASCII digits.
pub fn parse(line: &[u8]) -> Option<Row<'_>> {
    let space = line.iter().rposition(|&b| b == b' ')?;
    let digits = &line[space + 1..];
    if digits.is_empty() || digits.len() > 15 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let count = digits.iter().fold(0u64, |n, &d| n * 10 + (d - b'0') as u64);
    let stack = &line[..space];
    let cut = stack.iter().rposition(|&b| b == b';').map_or(0, |i| i + 1);
    Some(Row { callers: &stack[..cut], leaf: &stack[cut..], count })
}

/// Calls each(row) for every row of the file, in order.
pub fn each_row(path: &str, mut each: impl FnMut(Row) -> Result<(), Stop>) -> Result<(), Stop> {
    let file = File::open(path).map_err(|e| refused(format!("{path}: {e}")))?;
    // gzip'd by the name's suffix, as rpcprof.folded.refusal reads it
    let mut file: Box<dyn Read> =
        if path.ends_with(".gz") { Box::new(flate2::read::MultiGzDecoder::new(std::io::BufReader::new(file))) } else { Box::new(file) };
    let mut data: Vec<u8> = Vec::with_capacity(2 * BLOCK);
    let mut buf = vec![0u8; BLOCK];
    let mut lines = 0u64;
    loop {
        let n = file.read(&mut buf).map_err(|e| refused(format!("{path}: {e}")))?;
        if n == 0 {
            break;
        }
        data.extend_from_slice(&buf[..n]);
        let Some(last) = data.iter().rposition(|&b| b == b'\n') else { continue };
        block(&data[..last], &mut lines, &mut each)?;
        data.drain(..=last);
    }
    if !data.is_empty() {
        block(&data, &mut lines, &mut each)?;
    }
    Ok(())
}

fn block(text: &[u8], lines: &mut u64, each: &mut impl FnMut(Row) -> Result<(), Stop>) -> Result<(), Stop> {
    // bytes that are not UTF-8 read as U+FFFD, as Python's "replace" reads them (both replace each maximal
    // subpart of an ill-formed sequence, Unicode's recommended practice)
    let text = String::from_utf8_lossy(text);
    for line in text.split('\n') {
        *lines += 1;
        let line = line.trim_end_matches('\r');
        // blank as Python's str.isspace() says: Unicode's White_Space and the separators U+001C-U+001F
        if !line.chars().all(|c| c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)) {
            each(parse(line.as_bytes()).ok_or_else(|| Stop::BadLine(*lines, line.to_string()))?)?;
        }
    }
    Ok(())
}

/// The stack as inferno must read it back frame for frame, for the lines it draws; None when it is drawn as written.
/// (inferno trims each line, skips one starting with `# `, reads a last frame ending in ` 123` as a second count,
/// rejects what is not UTF-8 and passes control characters through.)
/// Control characters and what XML forbids become U+FFFD; whitespace at both ends is stripped; a `# ` at its start
/// becomes `#` and a no-break space (inferno skips a line starting `# `), a last space followed by what reads as a
/// count (`[0-9]*(\.[0-9]*)?`) a no-break space; nothing at all is `[empty stack]`.
pub fn drawn(row: &Row) -> Option<Vec<u8>> {
    let counted = |s: &[u8]| match s.iter().rposition(|&b| b == b' ') {
        Some(at) => {
            let rest = &s[at + 1..];
            let dot = rest.iter().position(|&b| b == b'.').unwrap_or(rest.len());
            let digits = |t: &[u8]| t.iter().all(u8::is_ascii_digit);
            (digits(&rest[..dot]) && (dot == rest.len() || digits(&rest[dot + 1..]))).then_some(at)
        }
        None => None,
    };
    let printable = |s: &[u8]| s.iter().all(|&b| (0x20..0x7f).contains(&b));
    let first = if row.callers.is_empty() { row.leaf.first() } else { row.callers.first() };
    let last = if row.leaf.is_empty() { row.callers.last() } else { row.leaf.last() };
    let hash_space = first == Some(&b'#') && [row.callers, row.leaf].concat().get(1) == Some(&b' ');
    if printable(row.callers) && printable(row.leaf) && !matches!(first, None | Some(b' ')) && last != Some(&b' ')
        && !hash_space && counted(row.leaf).is_none() {
        return None;
    }
    let forbidden = |c: char| {
        matches!(c, '\0'..='\x1f' | '\x7f'..='\u{9f}' | '\u{fffe}' | '\u{ffff}' | '\u{61c}' | '\u{200e}' | '\u{200f}'
                    | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
    };
    let whole = String::from_utf8_lossy(&[row.callers, row.leaf].concat()).replace(forbidden, "\u{fffd}");
    let mut stack = whole.trim().as_bytes().to_vec();
    if stack.starts_with(b"# ") {
        stack.splice(1..2, "\u{a0}".bytes());
    }
    if let Some(at) = counted(&stack) {
        stack.splice(at..at + 1, "\u{a0}".bytes());
    }
    if stack.is_empty() {
        stack = b"[empty stack]".to_vec();
    }
    (stack != [row.callers, row.leaf].concat()).then_some(stack)
}

/// A row's line as inferno-flamegraph reads it: its stack as drawn, a space, its count.
pub fn drawn_line(row: &Row, out: &mut Vec<u8>) {
    match drawn(row) {
        Some(stack) => out.extend_from_slice(&stack),
        None => {
            out.extend_from_slice(row.callers);
            out.extend_from_slice(row.leaf);
        }
    }
    let _ = writeln!(out, " {}", row.count);       // a Vec takes every write
}

/// (stacks, total): the file's rows written to out as collapsed lines, `CALLERS;LEAF COUNT` (a count as its number).
pub fn collapsed(path: &str, out: &mut impl Write) -> Result<(u64, u128), Stop> {
    let (mut stacks, mut total) = (0u64, 0u128);
    each_row(path, |row| {
        out.write_all(row.callers)?;
        out.write_all(row.leaf)?;
        writeln!(out, " {}", row.count)?;
        stacks += 1;
        total += row.count as u128;
        Ok(())
    })?;
    out.flush()?;
    Ok((stacks, total))
}

/// (total, gcd, stacks): the sum of the file's counts, their greatest common divisor (0 for none but 0) and its
/// stacks (report/export.py: core_readable).
pub fn scan(path: &str) -> Result<(u128, u64, u64), Stop> {
    fn gcd(a: u64, b: u64) -> u64 {
        if b == 0 { a } else { gcd(b, a % b) }
    }
    let (mut total, mut unit, mut stacks) = (0u128, 0u64, 0u64);
    each_row(path, |row| {
        total += row.count as u128;
        unit = gcd(unit, row.count);
        stacks += 1;
        Ok(())
    })?;
    Ok((total, unit, stacks))
}

/// The numbers of a file's lines (each ending in a newline, the last one too) in the order of the lines sorted as
/// byte strings, inferno-flamegraph's order.
pub fn sorted_lines(path: &str) -> std::io::Result<Vec<u32>> {
    let data = std::fs::read(path)?;
    // each line beside its number, so that a comparison reads the two lines and nothing else
    let mut lines: Vec<(&[u8], u32)> = data.split(|&b| b == b'\n').zip(0..).collect();
    lines.pop();
    lines.sort_unstable();
    Ok(lines.into_iter().map(|(_, n)| n).collect())
}
