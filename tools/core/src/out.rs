//! Protobuf's varints and fields, and scratch files that hold a table's bytes until the samples end.

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Seek, SeekFrom, Write};

pub fn varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 128 {
        out.push((n as u8 & 127) | 128);
        n >>= 7;
    }
    out.push(n as u8);
}

/// A length-delimited field: its tag byte, its length, its bytes.
pub fn field(out: &mut Vec<u8>, tag: u8, body: &[u8]) {
    out.push(tag);
    varint(out, body.len() as u64);
    out.extend_from_slice(body);
}

/// `tag, n` as a key and a varint (field number < 16).
pub fn varint_field(out: &mut Vec<u8>, tag: u8, n: u64) {
    out.push(tag);
    varint(out, n);
}

/// varint_field, or nothing for 0, as protobuf leaves out a default.
pub fn uint_field(out: &mut Vec<u8>, tag: u8, n: u64) {
    if n != 0 {
        varint_field(out, tag, n);
    }
}

/// An unlinked file in the temporary folder, written through a buffer; its size so far.
pub struct Spool {
    file: BufWriter<File>,
    pub size: u64,
}

impl Spool {
    pub fn new() -> io::Result<Spool> {
        let dir = std::env::temp_dir();
        for n in 0..1000 {
            let path = dir.join(format!("rpcprof-core-{}-{n}", std::process::id()));
            match OpenOptions::new().read(true).write(true).create_new(true).open(&path) {
                Ok(file) => {
                    std::fs::remove_file(&path)?;
                    return Ok(Spool { file: BufWriter::with_capacity(1 << 20, file), size: 0 });
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
        Err(io::Error::other("no free scratch file name"))
    }

    pub fn write(&mut self, data: &[u8]) -> io::Result<()> {
        self.size += data.len() as u64;
        self.file.write_all(data)
    }

    /// A length-delimited field written (field's bytes).
    pub fn field(&mut self, tag: u8, body: &[u8]) -> io::Result<()> {
        let mut head = Vec::with_capacity(11);
        varint_field(&mut head, tag, body.len() as u64);
        self.write(&head)?;
        self.write(body)
    }

    /// Its bytes copied to out, in order.
    pub fn copy_to(self, out: &mut impl Write) -> io::Result<()> {
        let mut file = self.file.into_inner().map_err(|e| e.into_error())?;
        file.seek(SeekFrom::Start(0))?;
        io::copy(&mut file, out)?;
        Ok(())
    }
}
