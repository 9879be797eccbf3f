//! Each stack's labels, as report.py names them (labelled's labels, analyze/labels.py), encoded as the format spells them: pprof's Label
//! messages, or OTLP's attribute indices (the attribute table made as they are first used).
//!
//! The labels are records, integers little-endian u32:
//!   b'L' ID N (KEY_LEN KEY VALUE_LEN VALUE)*N   label set ID is these N (key, value) pairs
//!   b'R' N ID*N                                 the label sets of the next N stacks, in order

use std::collections::HashMap;
use std::io::{BufReader, Read};

use crate::out::{field, uint_field, varint};
use crate::profile::{Format, Tables};
use crate::rows::{refused, Stop};

type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

pub struct Labels<R: Read> {
    format: Format,
    input: BufReader<R>,
    sets: Vec<Option<Pairs>>,     // a set's pairs, until it is first used
    encoded: Vec<Option<Vec<u8>>>,
    queue: Vec<u32>,
    next: usize,
    attributes: HashMap<(Vec<u8>, Vec<u8>), u32>,
    pub attribute_table: Vec<u8>,
}

fn short(_: std::io::Error) -> Stop {
    refused("labels: the label sets end before the stacks do")
}

impl<R: Read> Labels<R> {
    pub fn new(format: Format, input: R) -> Self {
        Labels {
            format,
            input: BufReader::with_capacity(1 << 16, input),
            sets: Vec::new(),
            encoded: Vec::new(),
            queue: Vec::new(),
            next: 0,
            attributes: HashMap::new(),
            attribute_table: b"\x32\x00".to_vec(),
        }
    }

    fn u32(&mut self) -> Result<u32, Stop> {
        let mut b = [0u8; 4];
        self.input.read_exact(&mut b).map_err(short)?;
        Ok(u32::from_le_bytes(b))
    }

    fn bytes(&mut self) -> Result<Vec<u8>, Stop> {
        let n = self.u32()? as usize;
        let mut b = vec![0u8; n];
        self.input.read_exact(&mut b).map_err(short)?;
        Ok(b)
    }

    /// Reads one record; false at the end of the labels.
    fn record(&mut self) -> Result<bool, Stop> {
        let mut tag = [0u8; 1];
        if self.input.read(&mut tag).map_err(short)? == 0 {
            return Ok(false);
        }
        match tag[0] {
            b'L' => {
                let id = self.u32()? as usize;
                let n = self.u32()?;
                let mut pairs = Pairs::new();
                for _ in 0..n {
                    pairs.push((self.bytes()?, self.bytes()?));
                }
                if self.sets.len() <= id {
                    self.sets.resize(id + 1, None);
                    self.encoded.resize(id + 1, None);
                }
                self.sets[id] = Some(pairs);
            }
            b'R' => {
                let n = self.u32()? as usize;
                let mut raw = vec![0u8; 4 * n];
                self.input.read_exact(&mut raw).map_err(short)?;
                self.queue.clear();
                self.queue.extend(raw.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])));
                self.next = 0;
            }
            t => return Err(refused(format!("labels: a record of unknown kind {t}"))),
        }
        Ok(true)
    }

    /// The label set of the next stack.
    pub fn next(&mut self) -> Result<u32, Stop> {
        while self.next == self.queue.len() {
            if !self.record()? {
                return Err(refused("labels: the label sets end before the stacks do"));
            }
        }
        self.next += 1;
        Ok(self.queue[self.next - 1])
    }

    /// Errs when the labels name label sets for more stacks than the file holds.
    pub fn finish(&mut self) -> Result<(), Stop> {
        while self.next == self.queue.len() {
            if !self.record()? {
                return Ok(());
            }
        }
        Err(refused("labels: more label sets than stacks"))
    }

    /// Label set `set` encoded (its strings numbered in t the first time).
    pub fn encoded(&mut self, set: u32, t: &mut Tables) -> Result<&[u8], Stop> {
        let set = set as usize;
        if self.encoded.get(set).is_none_or(|e| e.is_none()) {
            let pairs = self.sets.get_mut(set).and_then(Option::take)
                .ok_or_else(|| refused(format!("labels: label set {set} is used before it is named")))?;
            let mut out = Vec::new();
            if self.format == Format::Pprof {
                for (key, value) in &pairs {
                    let mut body = Vec::new();
                    uint_field(&mut body, 0x08, t.s(key)? as u64);
                    uint_field(&mut body, 0x10, t.s(value)? as u64);
                    field(&mut out, 0x1a, &body);
                }
            } else {
                let mut ids = Vec::new();
                for pair in pairs {
                    varint(&mut ids, self.attribute(pair, t)? as u64);
                }
                field(&mut out, 0x12, &ids);
            }
            self.encoded[set] = Some(out);
        }
        Ok(self.encoded[set].as_deref().unwrap())
    }

    /// The attribute table's index of a (key, string value) pair, a new entry written the first time.
    pub fn attribute(&mut self, pair: (Vec<u8>, Vec<u8>), t: &mut Tables) -> Result<u32, Stop> {
        if let Some(&i) = self.attributes.get(&pair) {
            return Ok(i);
        }
        let i = self.attributes.len() as u32 + 1;
        let key = t.s(&pair.0)?;
        let (mut string, mut value, mut body) = (Vec::new(), Vec::new(), Vec::new());
        field(&mut string, 0x0a, &pair.1);
        field(&mut value, 0x12, &string);
        uint_field(&mut body, 0x08, key as u64);
        body.extend_from_slice(&value);
        field(&mut self.attribute_table, 0x32, &body);
        self.attributes.insert(pair, i);
        Ok(i)
    }
}
