//! gzip through the system's zlib (libz, the library Python's zlib module calls): the same bytes as
//! zlib.compressobj(level, DEFLATED, 31) gives of the same data, as report/pprof_stream.py's Compressor writes;
//! and a gzip'd file read back as Python's gzip.open reads it (every member in turn).

use std::ffi::{c_char, c_int, c_uint, c_ulong, c_void};
use std::io::{self, Read, Write};

#[repr(C)]
struct ZStream {
    next_in: *const u8,
    avail_in: c_uint,
    total_in: c_ulong,
    next_out: *mut u8,
    avail_out: c_uint,
    total_out: c_ulong,
    msg: *const c_char,
    state: *mut c_void,
    zalloc: *const c_void,
    zfree: *const c_void,
    opaque: *mut c_void,
    data_type: c_int,
    adler: c_ulong,
    reserved: c_ulong,
}

#[link(name = "z")]
extern "C" {
    fn zlibVersion() -> *const c_char;
    fn deflateInit2_(strm: *mut ZStream, level: c_int, method: c_int, window_bits: c_int, mem_level: c_int,
                     strategy: c_int, version: *const c_char, stream_size: c_int) -> c_int;
    fn deflate(strm: *mut ZStream, flush: c_int) -> c_int;
    fn deflateEnd(strm: *mut ZStream) -> c_int;
    fn inflateInit2_(strm: *mut ZStream, window_bits: c_int, version: *const c_char, stream_size: c_int) -> c_int;
    fn inflate(strm: *mut ZStream, flush: c_int) -> c_int;
    fn inflateReset(strm: *mut ZStream) -> c_int;
    fn inflateEnd(strm: *mut ZStream) -> c_int;
}

const Z_NO_FLUSH: c_int = 0;
const Z_FINISH: c_int = 4;
const Z_STREAM_END: c_int = 1;
const Z_BUF_ERROR: c_int = -5;

/// A gzip stream (a gzip header with mtime 0, as window bits 31 write it) of what is written, to inner.
pub struct Gzip<W: Write> {
    z: Box<ZStream>,
    inner: W,
    buf: Vec<u8>,
}

impl<W: Write> Gzip<W> {
    pub fn new(inner: W, level: i32) -> io::Result<Gzip<W>> {
        // SAFETY: a zeroed z_stream is what deflateInit2 asks for (Z_NULL zalloc, zfree and opaque)
        let mut z: Box<ZStream> = Box::new(unsafe { std::mem::zeroed() });
        let status = unsafe {
            deflateInit2_(&mut *z, level, 8, 31, 8, 0, zlibVersion(), std::mem::size_of::<ZStream>() as c_int)
        };
        if status != 0 {
            return Err(io::Error::other(format!("zlib's deflateInit2 failed ({status})")));
        }
        Ok(Gzip { z, inner, buf: vec![0u8; 1 << 18] })
    }

    fn run(&mut self, data: &[u8], flush: c_int) -> io::Result<()> {
        self.z.next_in = data.as_ptr();
        self.z.avail_in = data.len() as c_uint;
        loop {
            self.z.next_out = self.buf.as_mut_ptr();
            self.z.avail_out = self.buf.len() as c_uint;
            // SAFETY: next_in/avail_in point into data and next_out/avail_out into buf, both alive for the call
            let status = unsafe { deflate(&mut *self.z, flush) };
            if status < 0 && status != Z_BUF_ERROR {
                return Err(io::Error::other(format!("zlib's deflate failed ({status})")));
            }
            let made = self.buf.len() - self.z.avail_out as usize;
            self.inner.write_all(&self.buf[..made])?;
            let ended = if flush == Z_FINISH { status == Z_STREAM_END } else { self.z.avail_out != 0 };
            if ended {
                return Ok(());
            }
        }
    }

    /// The stream ended (its trailer written), inner flushed.
    pub fn finish(mut self) -> io::Result<()> {
        self.run(&[], Z_FINISH)?;
        self.inner.flush()
    }
}

impl<W: Write> Write for Gzip<W> {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        // deflate takes at most 4 GiB at a call (avail_in is a u32)
        for part in data.chunks(1 << 30) {
            self.run(part, Z_NO_FLUSH)?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl<W: Write> Drop for Gzip<W> {
    fn drop(&mut self) {
        // SAFETY: the stream was set up by deflateInit2_; deflateEnd frees what it holds
        unsafe { deflateEnd(&mut *self.z) };
    }
}

/// The data of a gzip'd stream read from inner: its members one after the other, as Python's gzip module reads
/// them; an error (InvalidData) for bytes that are not gzip or a stream cut short.
pub struct Gunzip<R: Read> {
    z: Box<ZStream>,
    inner: R,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    in_member: bool,
}

impl<R: Read> Gunzip<R> {
    pub fn new(inner: R) -> io::Result<Gunzip<R>> {
        // SAFETY: as Gzip::new's; window bits 31 read one gzip member
        let mut z: Box<ZStream> = Box::new(unsafe { std::mem::zeroed() });
        let status = unsafe { inflateInit2_(&mut *z, 31, zlibVersion(), std::mem::size_of::<ZStream>() as c_int) };
        if status != 0 {
            return Err(io::Error::other(format!("zlib's inflateInit2 failed ({status})")));
        }
        Ok(Gunzip { z, inner, buf: vec![0u8; 1 << 18], start: 0, end: 0, in_member: false })
    }

    fn bad(why: &str) -> io::Error {
        io::Error::new(io::ErrorKind::InvalidData, why.to_string())
    }
}

impl<R: Read> Read for Gunzip<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if out.is_empty() {
            return Ok(0);
        }
        loop {
            if self.start == self.end {
                self.start = 0;
                self.end = self.inner.read(&mut self.buf)?;
                if self.end == 0 {
                    return if self.in_member { Err(Self::bad("a gzip stream cut short")) } else { Ok(0) };
                }
            }
            self.in_member = true;
            self.z.next_in = self.buf[self.start..].as_ptr();
            self.z.avail_in = (self.end - self.start) as c_uint;
            self.z.next_out = out.as_mut_ptr();
            self.z.avail_out = out.len().min(1 << 30) as c_uint;
            // SAFETY: next_in/avail_in point into buf and next_out/avail_out into out, both alive for the call
            let status = unsafe { inflate(&mut *self.z, 0) };
            self.start = self.end - self.z.avail_in as usize;
            let made = out.len().min(1 << 30) - self.z.avail_out as usize;
            match status {
                Z_STREAM_END => {
                    self.in_member = false;
                    // SAFETY: the stream was set up by inflateInit2_
                    unsafe { inflateReset(&mut *self.z) };
                }
                0 | Z_BUF_ERROR => {}
                _ => return Err(Self::bad("bytes that are not gzip")),
            }
            if made > 0 {
                return Ok(made);
            }
        }
    }
}

impl<R: Read> Drop for Gunzip<R> {
    fn drop(&mut self) {
        // SAFETY: the stream was set up by inflateInit2_
        unsafe { inflateEnd(&mut *self.z) };
    }
}
