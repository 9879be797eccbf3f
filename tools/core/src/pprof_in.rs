//! pprof profiles in (rpcprof/pprof_in.py says which files are, and what it reads of them): profile.proto, gzip'd
//! (every member, zero bytes between members skipped) or not, read as it streams, a top-level field at a time, and
//! never past `max` bytes of it; each sample kept as its location ids and values. The stacks, root first, are written
//! as collapsed lines (`frame;...;frame weight`), the samples with the same frames summed, in the order first met.
//! A file it does not take is Refused(why), as pprof_in.py words it after the file's name.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader, ErrorKind, Read, Write};

use flate2::bufread::GzDecoder;

use crate::intern::Interner;
use crate::rows::{refused, Stop};

const FIX: &str = "download the profile again, or export it again from its source (go tool pprof -proto, Pyroscope, Parca)";
const WEIGHT_LIMIT: i64 = 1_000_000_000_000_000; // as for a folded count: 10^15
const KERNEL_MAPPING: &[u8] = b"[kernel.kallsyms]"; // perf's name for the kernel, and parca-agent's
const APP_COMMENT: &[u8] = b"rpcprof app: ";
const MAX_DEPTH: usize = 1 << 20; // frames in one stack: perf keeps 127 by default, Go's profiler 64

fn damaged(what: String) -> Stop {
    refused(format!("damaged pprof profile: {what}; {FIX}"))
}

fn undecodable(why: &str) -> Stop {
    refused(format!("not a pprof profile (profile.proto does not decode: {why}); give a pprof file (a folded file \
                     gzip'd is NAME.gz)"))
}

/// 1234567 as 1,234,567.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn unreadable(e: std::io::Error) -> Stop {
    refused(format!("unreadable: {e}"))
}

/// The file as it is read: gunzipped member after member, or as it is; the bytes of profile.proto read so far.
enum Input {
    Plain(BufReader<File>),
    Gz(GzDecoder<BufReader<File>>),
    Done,
}

impl Input {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            let gz = match self {
                Input::Plain(file) => return file.read(buf),
                Input::Gz(gz) => gz,
                Input::Done => return Ok(0),
            };
            let n = gz.read(buf)?;
            if n > 0 {
                return Ok(n);
            }
            // the member ended: a further one, after any zero bytes, or the end
            let Input::Gz(gz) = std::mem::replace(self, Input::Done) else { unreachable!() };
            let mut file = gz.into_inner();
            loop {
                let data = file.fill_buf()?;
                let zeros = data.iter().take_while(|&&b| b == 0).count();
                if data.is_empty() || zeros < data.len() {
                    file.consume(zeros);
                    if !file.fill_buf()?.is_empty() {
                        *self = Input::Gz(GzDecoder::new(file));
                    }
                    break;
                }
                file.consume(zeros);
            }
        }
    }
}

/// Bytes a field is read from: the profile as it streams (Stream), or a message held whole (a slice).
trait Source {
    /// The next byte, None at the end.
    fn byte(&mut self) -> Result<Option<u8>, Stop>;
    /// The next n bytes into out; cut short when they end first.
    fn take(&mut self, n: u64, out: &mut Vec<u8>) -> Result<(), Stop>;
}

fn cut_short() -> Stop {
    undecodable("the last field is cut short")
}

impl Source for &[u8] {
    fn byte(&mut self) -> Result<Option<u8>, Stop> {
        Ok(self.split_first().map(|(&b, rest)| {
            *self = rest;
            b
        }))
    }

    fn take(&mut self, n: u64, out: &mut Vec<u8>) -> Result<(), Stop> {
        if n > self.len() as u64 {
            return Err(cut_short());
        }
        let (bytes, rest) = self.split_at(n as usize);
        out.extend_from_slice(bytes);
        *self = rest;
        Ok(())
    }
}

/// The profile as it streams, a buffer at a time, never past max bytes of it.
struct Stream {
    input: Input,
    buf: Vec<u8>,
    at: usize,
    total: u64,
    max: u64,
}

impl Stream {
    fn open(path: &str, max: u64) -> Result<Stream, Stop> {
        let mut file = BufReader::with_capacity(1 << 20, File::open(path).map_err(unreadable)?);
        let gzipped = file.fill_buf().map_err(unreadable)?.starts_with(b"\x1f\x8b");
        let input = if gzipped { Input::Gz(GzDecoder::new(file)) } else { Input::Plain(file) };
        Ok(Stream { input, buf: Vec::new(), at: 0, total: 0, max })
    }

    /// Whether there are bytes to read, reading more when the buffer is done.
    fn fill(&mut self) -> Result<bool, Stop> {
        if self.at == self.buf.len() {
            self.buf.resize(1 << 16, 0);
            let gzipped = matches!(self.input, Input::Gz(_));
            let n = self.input.read(&mut self.buf).map_err(|e| match e.kind() {
                ErrorKind::UnexpectedEof if gzipped => refused(format!(
                    "truncated: the gzip stream ends after {} bytes of profile, before its end marker (a download cut \
                     short?): {FIX}", thousands(self.total))),
                _ if gzipped => refused(format!("damaged gzip ({e}): {FIX}")),
                _ => unreadable(e),
            })?;
            self.buf.truncate(n);
            (self.at, self.total) = (0, self.total + n as u64);
            if self.total > self.max {
                return Err(refused(format!("over {} MiB of profile.proto, more than rpcprof reads: narrow it at its \
                                            source (a shorter time range, one service; go tool pprof -proto \
                                            -focus=...)", self.max >> 20)));
            }
        }
        Ok(self.at < self.buf.len())
    }
}

impl Source for Stream {
    fn byte(&mut self) -> Result<Option<u8>, Stop> {
        if !self.fill()? {
            return Ok(None);
        }
        self.at += 1;
        Ok(Some(self.buf[self.at - 1]))
    }

    fn take(&mut self, mut n: u64, out: &mut Vec<u8>) -> Result<(), Stop> {
        while n > 0 {
            if !self.fill()? {
                return Err(cut_short());
            }
            let part = n.min((self.buf.len() - self.at) as u64) as usize;
            out.extend_from_slice(&self.buf[self.at..self.at + part]);
            (self.at, n) = (self.at + part, n - part as u64);
        }
        Ok(())
    }
}

/// A varint, its first byte given when already read.
fn varint(src: &mut impl Source, mut first: Option<u8>) -> Result<u64, Stop> {
    let mut value = 0u64;
    for shift in (0..70).step_by(7) {
        let byte = match first.take() {
            Some(b) => b,
            None => src.byte()?.ok_or_else(cut_short)?,
        };
        value |= ((byte & 0x7f) as u64).checked_shl(shift).unwrap_or(0);
        if byte < 0x80 {
            return Ok(value);
        }
    }
    Err(undecodable("a varint longer than 10 bytes"))
}

/// The next field: its number, its wire type, and its varint or fixed value, or its bytes (wire type 2) in bytes;
/// None at the end, between two fields.
fn field(src: &mut impl Source, bytes: &mut Vec<u8>) -> Result<Option<(u64, u64, u64)>, Stop> {
    let Some(first) = src.byte()? else { return Ok(None) };
    let key = varint(src, Some(first))?;
    let (number, wire) = (key >> 3, key & 7);
    if number == 0 || matches!(wire, 3 | 4 | 6 | 7) {
        return Err(undecodable(&format!("field {number} of wire type {wire}")));
    }
    bytes.clear();
    let value = match wire {
        0 => varint(src, None)?,
        2 => {
            let n = varint(src, None)?;
            src.take(n, bytes)?;
            0
        }
        _ => (0..if wire == 1 { 8 } else { 4 })
            .try_fold(0u64, |n, i| Ok::<u64, Stop>(n | (src.byte()?.ok_or_else(cut_short)? as u64) << (8 * i)))?,
    };
    Ok(Some((number, wire, value)))
}

/// each(number, wire type, value, bytes) for every field of a message held whole.
fn each_field(mut data: &[u8], mut each: impl FnMut(u64, u64, u64, &[u8]) -> Result<(), Stop>) -> Result<(), Stop> {
    let mut bytes = Vec::new();
    while let Some((number, wire, value)) = field(&mut data, &mut bytes)? {
        each(number, wire, value, &bytes)?;
    }
    Ok(())
}

/// The integers of a repeated scalar field, packed (wire type 2: its bytes) or one value, appended to out.
fn ints(wire: u64, value: u64, mut bytes: &[u8], out: &mut Vec<u64>) -> Result<(), Stop> {
    if wire != 2 {
        out.push(value);
    }
    while wire == 2 && !bytes.is_empty() {
        out.push(varint(&mut bytes, None)?);
    }
    Ok(())
}

/// What the stacks need of a profile, as read.
#[derive(Default)]
struct Parts {
    sample_types: Vec<(i64, i64)>,
    mappings: Vec<(u64, i64)>,
    functions: Vec<(u64, i64, i64)>,
    locations: Vec<(u64, u64, usize)>, // id, mapping id, the end of its lines' function ids in location_functions
    location_functions: Vec<u64>,
    sample_locations: Vec<u64>,
    sample_values: Vec<u64>,
    samples: Vec<(usize, usize)>, // each sample's ends in sample_locations and sample_values
    strings: Vec<u8>,
    string_ends: Vec<usize>,
    comments: Vec<u64>,
}

impl Parts {
    fn read(path: &str, max: u64) -> Result<Parts, Stop> {
        let mut stream = Stream::open(path, max)?;
        let (mut p, mut bytes) = (Parts::default(), Vec::new());
        while let Some((number, wire, value)) = field(&mut stream, &mut bytes)? {
            // the scalar fields 1, 2, 3 and 5 of a message, each as the last of its values gives it
            let mut f = [0u64; 6];
            let mut scalars = |n: u64, v: u64| {
                if let Some(slot) = f.get_mut(n as usize) {
                    *slot = v;
                }
                Ok(())
            };
            match (number, wire) {
                (1, 2) => {
                    each_field(&bytes, |n, _, v, _| scalars(n, v))?;
                    p.sample_types.push((f[1] as i64, f[2] as i64));
                }
                (2, 2) => {
                    each_field(&bytes, |n, w, v, packed| match n {
                        1 => ints(w, v, packed, &mut p.sample_locations),
                        2 => ints(w, v, packed, &mut p.sample_values),
                        _ => Ok(()),
                    })?;
                    p.samples.push((p.sample_locations.len(), p.sample_values.len()));
                }
                (3, 2) => {
                    each_field(&bytes, |n, _, v, _| scalars(n, v))?;
                    p.mappings.push((f[1], f[5] as i64));
                }
                (4, 2) => {
                    each_field(&bytes, |n, w, v, line| {
                        scalars(n, v)?;
                        if (n, w) == (4, 2) {
                            let mut function = 0;
                            each_field(line, |n, _, v, _| {
                                function = if n == 1 { v } else { function };
                                Ok(())
                            })?;
                            p.location_functions.push(function);
                        }
                        Ok(())
                    })?;
                    p.locations.push((f[1], f[2], p.location_functions.len()));
                }
                (5, 2) => {
                    each_field(&bytes, |n, _, v, _| scalars(n, v))?;
                    p.functions.push((f[1], f[2] as i64, f[3] as i64));
                }
                (6, 2) => {
                    std::str::from_utf8(&bytes)
                        .map_err(|_| undecodable(&format!("string {} is not UTF-8", p.string_ends.len())))?;
                    p.strings.extend_from_slice(&bytes);
                    p.string_ends.push(p.strings.len());
                }
                (13, _) => ints(wire, value, &bytes, &mut p.comments)?,
                _ => {}
            }
        }
        Ok(p)
    }

    fn string(&self, i: i64, what: impl FnOnce() -> String) -> Result<&[u8], Stop> {
        if i < 0 || i as usize >= self.string_ends.len() {
            return Err(damaged(format!("{} is string {i}, beyond its string table of {}", what(), self.string_ends.len())));
        }
        let start = if i == 0 { 0 } else { self.string_ends[i as usize - 1] };
        Ok(&self.strings[start..self.string_ends[i as usize]])
    }
}

/// What a frame's name cannot hold in a folded line becomes what it can: `;` a `|`, a line break a space.
fn foldable(name: &[u8]) -> Vec<u8> {
    name.iter().map(|&b| match b { b';' => b'|', b'\n' | b'\r' => b' ', _ => b }).collect()
}

/// Values by id, as a table when the ids are few and small (as most writers number them, from 1), else hashed; the
/// last of an id kept, as a message's repeated field is read.
enum Ids {
    Table(Vec<Option<u32>>),
    Hashed(HashMap<u64, u32>),
}

impl Ids {
    fn new(pairs: impl Iterator<Item = (u64, u32)> + Clone) -> Ids {
        let (count, top) = pairs.clone().fold((0usize, 0u64), |(n, top), (id, _)| (n + 1, top.max(id)));
        if top <= 2 * count as u64 + 1024 {
            let mut table = vec![None; top as usize + 1];
            for (id, value) in pairs {
                table[id as usize] = Some(value);
            }
            Ids::Table(table)
        } else {
            Ids::Hashed(pairs.collect())
        }
    }

    fn get(&self, id: u64) -> Option<u32> {
        match self {
            Ids::Table(table) => table.get(id as usize).copied().flatten(),
            Ids::Hashed(map) => map.get(&id).copied(),
        }
    }
}

/// What collapse read: the stacks written, the sample type their weights are, and the app pattern of the profile's
/// `rpcprof app: REGEX` comment.
pub struct Pprof {
    pub stacks: u64,
    pub sample_type: (String, String),
    pub app: Option<String>,
}

/// The stacks of the pprof profile at path, as collapsed lines written to out.
pub fn collapse(path: &str, max: u64, out: &mut impl Write) -> Result<Pprof, Stop> {
    let p = Parts::read(path, max)?;
    if p.sample_types.is_empty() {
        return Err(refused("not a pprof profile: it declares no sample type; give a CPU profile (e.g. \
                            /debug/pprof/profile?seconds=N)"));
    }
    if p.string_ends.first() != Some(&0) {
        return Err(damaged("its string table does not start with the empty string".into()));
    }
    let mut types = Vec::new();
    for (k, &(t, u)) in p.sample_types.iter().enumerate() {
        types.push((p.string(t, || format!("sample type {k}"))?, p.string(u, || format!("sample type {k}'s unit"))?));
    }
    let index = [(&b"cpu"[..], &b"nanoseconds"[..]), (b"samples", b"count")].iter()
        .find_map(|want| types.iter().position(|t| t == want))
        .ok_or_else(|| {
            let declared: Vec<String> = types.iter()
                .map(|(t, u)| format!("{}/{}", String::from_utf8_lossy(t), String::from_utf8_lossy(u))).collect();
            refused(format!("a pprof profile of {}, not of CPU: rpcprof categorises cpu/nanoseconds or samples/count; \
                             give a CPU profile (e.g. /debug/pprof/profile?seconds=N)", declared.join(", ")))
        })?;
    let chosen = (String::from_utf8_lossy(types[index].0).into_owned(), String::from_utf8_lossy(types[index].1).into_owned());

    let mut files = Vec::new(); // the mappings' file names, by number (mappings' values)
    for &(id, name) in &p.mappings {
        files.push(p.string(name, || format!("mapping {id}'s file name"))?);
    }
    let mappings = Ids::new(p.mappings.iter().zip(0..).map(|(&(id, _), n)| (id, n)));
    let mut frames = Interner::default();
    let mut function_frames = Vec::new();
    for &(id, name, system) in &p.functions {
        let mut text = p.string(name, || format!("function {id}'s name"))?;
        if text.is_empty() {
            text = p.string(system, || format!("function {id}'s system name"))?;
        }
        function_frames.push(frames.intern(&foldable(if text.is_empty() { b"[unknown]" } else { text })).0);
    }
    let functions = Ids::new(p.functions.iter().zip(function_frames).map(|(&(id, _, _), f)| (id, f)));
    // each location's frames, leaf first (the inlined function, then its caller), from ends[n - 1] to ends[n]
    let (mut location_frames, mut ends, mut at) = (Vec::new(), Vec::new(), 0);
    for &(id, mapping, end) in &p.locations {
        let file = mappings.get(mapping).map_or(&b""[..], |n| files[n as usize]);
        let kernel = file == KERNEL_MAPPING;
        let first = location_frames.len();
        for &function in &p.location_functions[at..end] {
            let frame = functions.get(function)
                .ok_or_else(|| damaged(format!("location {id} names function {function}, which it does not define")))?;
            location_frames.push(frame);
        }
        at = end;
        if location_frames.len() == first {
            let base = file.strip_suffix(b"/").unwrap_or(file);
            let base = &base[base.iter().rposition(|&b| b == b'/').map_or(0, |i| i + 1)..];
            let name = if base.is_empty() { b"[unknown]".to_vec() } else { [b"[", &foldable(base)[..], b"]"].concat() };
            location_frames.push(frames.intern(&name).0);
        }
        if kernel {
            for frame in &mut location_frames[first..] {
                let name = frames.get(*frame);
                if !name.ends_with(b"_[k]") {
                    *frame = frames.intern(&[name, b"_[k]"].concat()).0;
                }
            }
        }
        ends.push(location_frames.len());
    }
    let locations = Ids::new(p.locations.iter().zip(0..).map(|(&(id, _, _), n)| (id, n)));

    // each stack's frames (root first, u32 little-endian) numbered in the order first met, and its weight
    let (mut stacks, mut weights, mut key) = (Interner::default(), Vec::<u64>::new(), Vec::new());
    let (mut loc_at, mut value_at) = (0, 0);
    for (k, &(loc_end, value_end)) in p.samples.iter().enumerate() {
        let (ids, values) = (&p.sample_locations[loc_at..loc_end], &p.sample_values[value_at..value_end]);
        (loc_at, value_at) = (loc_end, value_end);
        if values.len() != types.len() {
            return Err(damaged(format!("sample {k} has {} values for {} sample types", values.len(), types.len())));
        }
        let value = values[index] as i64;
        if value < 0 {
            return Err(refused(format!("sample {k} has a negative {} value ({value}): a difference of two profiles \
                                        (pprof -diff_base)? give each profile on its own (report.py diff A B compares \
                                        them)", chosen.0)));
        }
        if value >= WEIGHT_LIMIT {
            return Err(damaged(format!("sample {k}'s value {value} is 10^15 or more, more than any profile's weight")));
        }
        if value == 0 {
            continue;
        }
        key.clear();
        for &id in ids.iter().rev() {
            let n = locations.get(id)
                .ok_or_else(|| damaged(format!("sample {k} names location {id}, which it does not define")))? as usize;
            let from = if n == 0 { 0 } else { ends[n - 1] };
            key.extend(location_frames[from..ends[n]].iter().rev().flat_map(|f| f.to_le_bytes()));
        }
        if key.is_empty() {
            key.extend(frames.intern(b"[unknown]").0.to_le_bytes());
        }
        if key.len() > MAX_DEPTH * 4 {
            return Err(damaged(format!("sample {k} is {} frames deep, more than any profile's stack", key.len() / 4)));
        }
        if stacks.bytes() + key.len() > u32::MAX as usize / 2 {
            return Err(damaged("its stacks hold more than 2 GiB of frames, more than any profile's".into()));
        }
        let (n, new) = stacks.intern(&key);
        if new {
            weights.push(0);
        }
        weights[n as usize] = weights[n as usize].saturating_add(value as u64);
    }
    if weights.is_empty() {
        return Err(refused(format!("no samples (no {}/{} value above 0): profile again while it is busy, or give \
                                    another profile", chosen.0, chosen.1)));
    }
    for (n, weight) in weights.iter().enumerate() {
        for (i, frame) in stacks.get(n as u32).chunks_exact(4).enumerate() {
            if i > 0 {
                out.write_all(b";")?;
            }
            out.write_all(frames.get(u32::from_le_bytes(frame.try_into().unwrap())))?;
        }
        writeln!(out, " {weight}")?;
    }
    out.flush()?;
    let app = p.comments.iter().filter_map(|&i| p.string(i as i64, String::new).ok())
        .find_map(|c| c.strip_prefix(APP_COMMENT)).map(|a| String::from_utf8_lossy(a).into_owned());
    Ok(Pprof { stacks: weights.len() as u64, sample_type: chosen, app })
}
