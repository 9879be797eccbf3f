//! speedscope's document of a folded file, as report/speedscope_stream.py writes it: the shared frames numbered
//! in the order first met (a stack's frames from its root), each frame's name as Python's json.dumps spells it.

use std::io::{self, Write};

use crate::intern::Interner;
use crate::out::Spool;
use crate::rows::{each_row, refused, Stop};

/// text as json.dumps writes a string (ensure_ascii): quoted, `"` `\` and the controls escaped, and every
/// character outside printable ASCII as \uXXXX (a surrogate pair above U+FFFF).
pub fn json_string(out: &mut Vec<u8>, text: &str) {
    out.push(b'"');
    for c in text.chars() {
        match c {
            '"' => out.extend_from_slice(b"\\\""),
            '\\' => out.extend_from_slice(b"\\\\"),
            '\n' => out.extend_from_slice(b"\\n"),
            '\r' => out.extend_from_slice(b"\\r"),
            '\t' => out.extend_from_slice(b"\\t"),
            '\u{8}' => out.extend_from_slice(b"\\b"),
            '\u{c}' => out.extend_from_slice(b"\\f"),
            ' '..='~' => out.push(c as u8),
            _ => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.extend_from_slice(format!("\\u{unit:04x}").as_bytes());
                }
            }
        }
    }
    out.push(b'"');
}


/// The document of the folded file at path to out, its stacks given back: name_json, the profile's name as JSON; unit, its unit.
/// Stop::Refused("no weight") when every count is 0 (report.py then reads the file whole, and says so).
pub fn encode(path: &str, name_json: &str, unit: &str, out: &mut impl Write) -> Result<u64, Stop> {
    let mut frames = Interner::default();
    let (mut frame_json, mut samples, mut weights) = (Spool::new()?, Spool::new()?, Spool::new()?);
    let (mut f, mut s, mut w) = (Vec::new(), Vec::new(), Vec::new());
    let mut total: u128 = 0;
    let mut stacks: u64 = 0;
    let mut index = |frame: &[u8], f: &mut Vec<u8>| -> u32 {
        let (i, new) = frames.intern(frame);
        if new {
            if i > 0 {
                f.push(b',');
            }
            f.extend_from_slice(b"{\"name\":");
            json_string(f, std::str::from_utf8(frame).expect("rows are UTF-8"));
            f.push(b'}');
        }
        i
    };
    each_row(path, |row| {
        if stacks > 0 {
            s.push(b',');
            w.push(b',');
        }
        s.push(b'[');
        if !row.callers.is_empty() {
            for frame in row.callers[..row.callers.len() - 1].split(|&b| b == b';') {
                let i = index(frame, &mut f);
                s.extend_from_slice(format!("{i},").as_bytes());
            }
        }
        let i = index(row.leaf, &mut f);
        s.extend_from_slice(format!("{i}]").as_bytes());
        w.extend_from_slice(row.count.to_string().as_bytes());
        total += row.count as u128;
        stacks += 1;
        if s.len() >= 1 << 20 {
            for (spool, buf) in [(&mut frame_json, &mut f), (&mut samples, &mut s), (&mut weights, &mut w)] {
                spool.write(buf)?;
                buf.clear();
            }
        }
        Ok(())
    })?;
    if total == 0 {
        return Err(refused("no weight"));
    }
    for (spool, buf) in [(&mut frame_json, &f), (&mut samples, &s), (&mut weights, &w)] {
        spool.write(buf)?;
    }
    let write = || -> io::Result<()> {
        out.write_all(b"{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\"exporter\":\"rpcprof\",\"name\":")?;
        out.write_all(name_json.as_bytes())?;
        out.write_all(b",\"activeProfileIndex\":0,\"shared\":{\"frames\":[")?;
        frame_json.copy_to(out)?;
        out.write_all(b"]},\"profiles\":[{\"type\":\"sampled\",\"name\":")?;
        out.write_all(name_json.as_bytes())?;
        write!(out, ",\"unit\":\"{unit}\",\"startValue\":0,\"endValue\":{total},\"samples\":[")?;
        samples.copy_to(out)?;
        out.write_all(b"],\"weights\":[")?;
        weights.copy_to(out)?;
        out.write_all(b"]}]}\n")?;
        out.flush()
    };
    write()?;
    Ok(stacks)
}
