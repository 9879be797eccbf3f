//! pprof's Profile and OTLP's ProfilesData of a folded file, rpcprof's one writer of each (report/export.py calls it):
//! them: the strings, functions and locations numbered in the order first met (a stack's leaf, its callers from
//! the leaf up, then its labels' strings), each stack's labels the set report.py names for it (labels.rs).

use std::io::{self, Read, Write};

use crate::intern::Interner;
use crate::labels::Labels;
use crate::out::{field, uint_field, varint, varint_field, Spool};
use crate::rows::{each_row, refused, Stop};

#[derive(Clone, Copy, PartialEq)]
pub enum Format {
    Pprof,
    Otlp,
}

/// A resource attribute's value: a string or an integer (AnyValue's string_value or int_value).
#[derive(pyo3::FromPyObject)]
pub enum Value {
    Int(i64),
    Str(String),
}

/// What an OTLP profile says of itself besides its samples (Python fills it from the run folder).
#[derive(Default)]
pub struct Meta {
    pub resource: Vec<(String, Value)>, // the resource's attributes: service.name, process.pid
    pub time_unix_nano: u64,
    pub duration_nano: u64,
    pub period_type: Option<(String, String)>,
    pub period: i64,
    pub native: String, // profile.frame.type of a frame without inferno's _[k] or _[j] ("native", "cpython")
}

/// The frame type of a frame as inferno and py-spy name it: 0 kernel (`_[k]`), 1 JIT-compiled Java (`_[j]`),
/// 3 Python (py-spy's `function (file.py:LINE)`), 2 the rest.
fn frame_type(frame: &[u8]) -> usize {
    if frame.ends_with(b"_[k]") {
        0
    } else if frame.ends_with(b"_[j]") {
        1
    } else if frame.ends_with(b")") && frame.windows(4).any(|w| w == b".py:") {
        3
    } else {
        2
    }
}

pub struct Tables {
    pub format: Format,
    frame_types: [u32; 4], // OTLP: the attribute index of each frame type (0: none)
    pub strings: Interner,
    loc_of: Vec<u32>, // string number -> its frame's location id, 0 for none yet
    locations: u32,
    pub string_table: Spool,
    functions: Spool,
    locs: Spool,
}


impl Tables {
    fn new(format: Format) -> io::Result<Tables> {
        let mut t = Tables {
            format,
            strings: Interner::default(),
            loc_of: Vec::new(),
            locations: 0,
            string_table: Spool::new()?,
            functions: Spool::new()?,
            locs: Spool::new()?,
            frame_types: [0; 4],
        };
        t.s(b"")?;
        if format == Format::Otlp {
            t.locs.write(b"\x12\x00")?; // the zero values of location_table and function_table
            t.functions.write(b"\x1a\x00")?;
        }
        Ok(t)
    }

    /// The string number of text, a new one written to the string table.
    pub fn s(&mut self, text: &[u8]) -> io::Result<u32> {
        let (i, new) = self.strings.intern(text);
        if new {
            self.string_table.field(if self.format == Format::Pprof { 0x32 } else { 0x2a }, text)?;
            self.loc_of.push(0);
        }
        Ok(i)
    }

    /// The location (and function) id of a frame, a new one written to the tables.
    pub fn location(&mut self, frame: &[u8]) -> io::Result<u32> {
        let name = self.s(frame)?;
        let known = self.loc_of[name as usize];
        if known != 0 {
            return Ok(known);
        }
        self.locations += 1;
        let loc = self.locations;
        self.loc_of[name as usize] = loc;
        let (mut body, mut line) = (Vec::with_capacity(16), Vec::with_capacity(8));
        varint_field(&mut line, 0x08, loc as u64);
        let (function_tag, location_tag, line_tag) = match self.format {
            Format::Pprof => {
                varint_field(&mut body, 0x08, loc as u64);
                uint_field(&mut body, 0x10, name as u64);
                uint_field(&mut body, 0x18, name as u64);
                (0x2a, 0x22, 0x22)
            }
            Format::Otlp => {
                uint_field(&mut body, 0x08, name as u64);
                uint_field(&mut body, 0x10, name as u64);
                (0x1a, 0x12, 0x1a)
            }
        };
        self.functions.field(function_tag, &body)?;
        let mut location = Vec::with_capacity(24);
        if self.format == Format::Pprof {
            location.extend_from_slice(&line);
        }
        field(&mut location, line_tag, &line);
        let kind = self.frame_types[frame_type(frame)];
        if kind != 0 {
            let mut ids = Vec::with_capacity(4);
            varint(&mut ids, kind as u64);
            field(&mut location, 0x22, &ids); // Location.attribute_indices
        }
        self.locs.field(location_tag, &location)?;
        Ok(loc)
    }
}

/// The sample type's field: its type and unit as string numbers.
fn sample_type(t: &mut Tables, kind: &str, unit: &str) -> io::Result<Vec<u8>> {
    let (kind, unit) = (t.s(kind.as_bytes())?, t.s(unit.as_bytes())?);
    let mut body = Vec::new();
    uint_field(&mut body, 0x08, kind as u64);
    uint_field(&mut body, 0x10, unit as u64);
    let mut out = Vec::new();
    field(&mut out, 0x0a, &body);
    Ok(out)
}

/// The document of the folded file at path to out, the labels of its stacks read from input: its stacks.
/// comment: pprof's comment string (the app rule), if any. Refused("no weight") when every count is 0, before
/// OTLP's document is written (pprof's is on its way: report.py drops it).
#[allow(clippy::too_many_arguments)]
pub fn encode(format: Format, path: &str, kind: &str, unit: &str, comment: Option<&str>, meta: &Meta,
              input: impl Read, out: &mut impl Write) -> Result<u64, Stop> {
    let mut t = Tables::new(format)?;
    let head = sample_type(&mut t, kind, unit)?;
    let mut tail = Vec::new();
    if let Some(c) = comment {
        let mut packed = Vec::new();
        varint(&mut packed, t.s(c.as_bytes())? as u64);
        field(&mut tail, 0x6a, &packed);
    }
    let mut labels = Labels::new(format, input);
    let mut profile_tail = Vec::new();
    if format == Format::Otlp {
        if !meta.native.is_empty() {
            for (i, ty) in [b"kernel".as_slice(), b"jvm", meta.native.as_bytes(), b"cpython"].into_iter().enumerate() {
                t.frame_types[i] = labels.attribute((b"profile.frame.type".to_vec(), ty.to_vec()), &mut t)?;
            }
        }
        // Profile's fields after its samples, in field order: time_unix_nano (fixed64), duration_nano,
        // period_type, period
        if meta.time_unix_nano != 0 {
            profile_tail.push(0x19);
            profile_tail.extend_from_slice(&meta.time_unix_nano.to_le_bytes());
        }
        uint_field(&mut profile_tail, 0x20, meta.duration_nano);
        if let Some((pk, pu)) = &meta.period_type {
            let period_type = sample_type(&mut t, pk, pu)?;
            profile_tail.push(0x2a);
            profile_tail.extend_from_slice(&period_type[1..]); // its body, after ValueType's own tag 0x0a
        }
        uint_field(&mut profile_tail, 0x30, meta.period as u64);
    }
    let mut samples = Spool::new()?;
    let mut stack_table = Spool::new()?;
    if format == Format::Pprof {
        out.write_all(&head)?;
    } else {
        stack_table.write(b"\x3a\x00")?;
    }
    let (mut last_callers, mut callers_ids): (Vec<u8>, Vec<u8>) = (vec![0xff], Vec::new());
    let (mut ids, mut body) = (Vec::new(), Vec::new());
    let mut n: u64 = 0;
    let mut weighed = false;
    let mut rows: Vec<u8> = Vec::with_capacity(1 << 20);
    each_row(path, |row| {
        let set = labels.next()?;
        let leaf = t.location(row.leaf)?;
        if row.callers != last_callers.as_slice() {
            callers_ids.clear();
            if !row.callers.is_empty() {
                for frame in row.callers[..row.callers.len() - 1].rsplit(|&b| b == b';') {
                    varint(&mut callers_ids, t.location(frame)? as u64);
                }
            }
            last_callers.clear();
            last_callers.extend_from_slice(row.callers);
        }
        let tags = labels.encoded(set, &mut t)?;
        ids.clear();
        varint(&mut ids, leaf as u64);
        ids.extend_from_slice(&callers_ids);
        body.clear();
        n += 1;
        weighed |= row.count != 0;
        if format == Format::Pprof {
            field(&mut body, 0x0a, &ids);
            body.extend_from_slice(&[0x12, varint_len(row.count)]);
            varint(&mut body, row.count);
            body.extend_from_slice(tags);
            field(&mut rows, 0x12, &body);
        } else {
            let mut stack = Vec::with_capacity(ids.len() + 4);
            field(&mut stack, 0x0a, &ids);
            stack_table.field(0x3a, &stack)?;
            varint_field(&mut body, 0x08, n);
            body.extend_from_slice(tags);
            body.extend_from_slice(&[0x22, varint_len(row.count)]);
            varint(&mut body, row.count);
            field(&mut rows, 0x12, &body);
        }
        if rows.len() >= 1 << 20 {
            if format == Format::Pprof { out.write_all(&rows) } else { samples.write(&rows) }?;
            rows.clear();
        }
        Ok(())
    })?;
    labels.finish()?;
    if !weighed {
        return Err(refused("no weight"));
    }
    if format == Format::Pprof { out.write_all(&rows) } else { samples.write(&rows) }?;
    match format {
        Format::Pprof => pprof_tables(t, &tail, out),
        Format::Otlp => otlp_document(t, &head, samples, &profile_tail, &meta.resource, stack_table,
                                      &labels.attribute_table, out),
    }?;
    Ok(n)
}

/// How many bytes varint(n) writes: 7 of n's significant bits a byte (one for 0).
fn varint_len(n: u64) -> u8 {
    (64 - (n | 1).leading_zeros()).div_ceil(7) as u8
}

fn pprof_tables(t: Tables, tail: &[u8], out: &mut impl Write) -> io::Result<()> {
    t.locs.copy_to(out)?;
    t.functions.copy_to(out)?;
    t.string_table.copy_to(out)?;
    out.write_all(tail)?;
    out.flush()
}

/// A KeyValue of the resource, its value an AnyValue.
fn key_value(key: &str, value: &Value) -> Vec<u8> {
    let (mut any, mut kv) = (Vec::new(), Vec::new());
    match value {
        Value::Str(text) => field(&mut any, 0x0a, text.as_bytes()),
        Value::Int(n) => varint_field(&mut any, 0x18, *n as u64),
    }
    field(&mut kv, 0x0a, key.as_bytes());
    field(&mut kv, 0x12, &any);
    kv
}

#[allow(clippy::too_many_arguments)]
fn otlp_document(t: Tables, sample_type: &[u8], samples: Spool, profile_tail: &[u8], resource: &[(String, Value)],
                 stack_table: Spool, attributes: &[u8], out: &mut impl Write) -> io::Result<()> {
    let (mut name, mut scope_profiles) = (Vec::new(), Vec::new());
    field(&mut name, 0x0a, b"rpcprof");
    field(&mut scope_profiles, 0x0a, &name);
    let profile_size = sample_type.len() as u64 + samples.size + profile_tail.len() as u64;
    varint_field(&mut scope_profiles, 0x12, profile_size);
    let scope_size = scope_profiles.len() as u64 + profile_size;
    let mut attrs = Vec::new();
    for (k, v) in resource {
        field(&mut attrs, 0x0a, &key_value(k, v));
    }
    let mut resource = Vec::new();
    if !attrs.is_empty() {
        field(&mut resource, 0x0a, &attrs); // ResourceProfiles.resource
    }
    varint_field(&mut resource, 0x12, scope_size);
    let mut head = vec![0x0a];
    varint(&mut head, resource.len() as u64 + scope_size);
    head.extend_from_slice(&resource);
    head.extend_from_slice(&scope_profiles);
    head.extend_from_slice(sample_type);
    out.write_all(&head)?;
    samples.copy_to(out)?;
    out.write_all(profile_tail)?;
    // link_table[0]: the zero Link, its trace and span ids all zero bytes as the proto spells them
    let mut link = Vec::new();
    field(&mut link, 0x0a, &[0u8; 16]);
    field(&mut link, 0x12, &[0u8; 8]);
    let mut zero_link = Vec::new();
    field(&mut zero_link, 0x22, &link);
    let tables = t.locs.size + t.functions.size + t.string_table.size + stack_table.size;
    let mut dictionary = vec![0x12];
    varint(&mut dictionary, 2 + zero_link.len() as u64 + tables + attributes.len() as u64);
    dictionary.extend_from_slice(b"\x0a\x00");
    out.write_all(&dictionary)?;
    t.locs.copy_to(out)?;
    t.functions.copy_to(out)?;
    out.write_all(&zero_link)?;
    t.string_table.copy_to(out)?;
    out.write_all(attributes)?;
    stack_table.copy_to(out)?;
    out.flush()
}
