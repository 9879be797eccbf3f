//! rpcprof_core - rpcprof's compiled core, a Python extension module called in process (report/export.py, report/sigdiff.py,
//! rpcprof/folded.py):
//!
//!   labelled(fmt, folded, kind, unit, out, labels, level=None, comment=None, resource=[], time_unix_nano=0,
//!            duration_nano=0, period_type=None, period=0, native="")
//!                                 pprof (gzip'd at zlib's level) or OTLP protobuf of a folded file, written to
//!                                 out; each stack's label set read from labels, an iterable of byte blocks
//!                                 (labels.rs says how), encoded on a thread of its own meanwhile; OTLP's
//!                                 resource attributes, times, period and frame types (profile.rs's Meta)
//!   speedscope(folded, name_json, unit, out)
//!   collapsed(folded, out)        (stacks, total): its rows as collapsed lines, a count as its number
//!   rows(folded, drawn=False)     an iterator of byte blocks, the file's rows for the categorisation, and with drawn
//!                                 the lines inferno-flamegraph draws them from (grouped.rs)
//!   scan(folded)                  (total, gcd, stacks) of its counts
//!   pprof(path, out, max_bytes)   (stacks, (type, unit), app pattern or None): a pprof profile's stacks as collapsed
//!                                 lines written to out (pprof_in.rs)
//!   sorted_lines(path)            the numbers of a file's lines in sorted order (u32 each), as inferno sorts them
//!   one_side(a, b, listed, names, merged=None, normalize=False)
//!                                 diff's frames on one side only of two sides' files, and the lines its graph
//!                                 is drawn from (one_side.rs), on a thread: a Task
//!
//! FOLDED is a folded file, gzip'd when its name ends in .gz. A file it does not take raises Refused (one line:
//! why); an output it cannot write, OSError. The functions give back the number of stacks.

mod grouped;
mod intern;
mod labels;
mod one_side;
mod out;
mod pprof_in;
mod profile;
mod rows;
mod speedscope;

use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Mutex;
use std::thread::JoinHandle;

use pyo3::create_exception;
use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use profile::Format;
use rows::Stop;

create_exception!(rpcprof_core, Refused, PyValueError, "The file holds what the core does not take.");

fn raised(stop: Stop) -> PyErr {
    match stop {
        Stop::Refused(why) => Refused::new_err(why),
        Stop::BadLine(line, text) => Refused::new_err((line, text)),
        // OSError(errno, strerror), as Python's own writes raise it
        Stop::CannotWrite(e) => match e.raw_os_error() {
            Some(code) => {
                let text = e.to_string();
                let strerror = text.split(" (os error").next().unwrap_or(&text).to_string();
                PyOSError::new_err((code, strerror))
            }
            None => PyOSError::new_err(e.to_string()),
        },
    }
}

fn joined<T>(worker: JoinHandle<Result<T, Stop>>) -> PyResult<T> {
    worker.join().map_err(|_| PyRuntimeError::new_err("rpcprof_core: a worker thread failed"))?.map_err(raised)
}

/// Byte blocks from another thread, read in order.
struct Blocks {
    rx: Receiver<Vec<u8>>,
    buf: Vec<u8>,
    at: usize,
}

impl Read for Blocks {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        while self.at == self.buf.len() {
            match self.rx.recv() {
                Ok(block) => (self.buf, self.at) = (block, 0),
                Err(_) => return Ok(0), // the sender is done
            }
        }
        let n = (&self.buf[self.at..]).read(out)?;
        self.at += n;
        Ok(n)
    }
}

/// Bytes written on a thread, sent to the reader a block at a time.
struct Sent {
    tx: SyncSender<Vec<u8>>,
    buf: Vec<u8>,
}

impl Write for Sent {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.buf.extend_from_slice(data);
        if self.buf.len() >= 1 << 20 {
            self.flush()?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        if !self.buf.is_empty() {
            let block = std::mem::take(&mut self.buf);
            self.tx.send(block).map_err(|_| io::Error::from(io::ErrorKind::BrokenPipe))?;
        }
        Ok(())
    }
}

/// What encode writes, gzip'd on a thread of its own (compression overlaps encoding) into w.
fn gzipped(mut w: BufWriter<File>, level: i32, encode: impl FnOnce(&mut Sent) -> Result<u64, Stop>)
           -> Result<u64, Stop> {
    let (tx, rx) = sync_channel::<Vec<u8>>(4);
    let zipper = std::thread::spawn(move || -> io::Result<()> {
        // the system's zlib (flate2's zlib backend), as Python's zlib module calls it
        let mut gz = flate2::GzBuilder::new().operating_system(3).write(&mut w, flate2::Compression::new(level as u32));
        for block in rx {
            gz.write_all(&block)?;
        }
        gz.try_finish()
    });
    let mut sent = Sent { tx, buf: Vec::new() };
    let n = encode(&mut sent).and_then(|n| Ok(sent.flush().map(|_| n)?));
    drop(sent);
    zipper.join().map_err(|_| io::Error::other("rpcprof_core: the gzip thread failed"))??;
    n
}

fn created(path: &str) -> Result<BufWriter<File>, Stop> {
    Ok(BufWriter::with_capacity(1 << 20, File::create(path)?))
}

#[pyfunction]
#[pyo3(name = "labelled", signature = (fmt, folded, kind, unit, out, labels, level=None, comment=None, resource=vec![],
    time_unix_nano=0, duration_nano=0, period_type=None, period=0, native=String::new()))]
#[allow(clippy::too_many_arguments)]
fn py_labelled(py: Python<'_>, fmt: &str, folded: String, kind: String, unit: String, out: String,
               labels: &Bound<'_, PyAny>, level: Option<i32>, comment: Option<String>,
               resource: Vec<(String, profile::Value)>,
               time_unix_nano: u64, duration_nano: u64, period_type: Option<(String, String)>, period: i64,
               native: String) -> PyResult<u64> {
    let meta = profile::Meta { resource, time_unix_nano, duration_nano, period_type, period, native };
    let format = match fmt {
        "pprof" => Format::Pprof,
        "otlp" => Format::Otlp,
        _ => return Err(PyValueError::new_err(format!("labelled: no format {fmt:?}"))),
    };
    let (tx, rx) = sync_channel::<Vec<u8>>(16);
    let worker = std::thread::spawn(move || -> Result<u64, Stop> {
        let input = Blocks { rx, buf: Vec::new(), at: 0 };
        let mut w = created(&out)?;
        // each writer flushes what it wrote
        match format {
            Format::Pprof => gzipped(w, level.unwrap_or(1), |gz| {
                profile::encode(format, &folded, &kind, &unit, comment.as_deref(), &meta, input, gz)
            }),
            Format::Otlp => profile::encode(format, &folded, &kind, &unit, None, &meta, input, &mut w),
        }
    });
    let fed = (|| -> PyResult<()> {
        for block in labels.try_iter()? {
            let block = block?.cast_into::<PyBytes>()?.as_bytes().to_vec();
            if py.detach(|| tx.send(block)).is_err() {
                break; // the encoding has stopped: joined() says why
            }
        }
        Ok(())
    })();
    drop(tx);
    let done = py.detach(|| joined(worker));
    fed?;
    done
}

#[pyfunction]
#[pyo3(name = "speedscope")]
fn py_speedscope(py: Python<'_>, folded: String, name_json: String, unit: String, out: String) -> PyResult<u64> {
    py.detach(|| speedscope::encode(&folded, &name_json, &unit, &mut created(&out)?)).map_err(raised)
}

#[pyfunction]
#[pyo3(name = "collapsed")]
fn py_collapsed(py: Python<'_>, folded: String, out: String) -> PyResult<(u64, u128)> {
    py.detach(|| rows::collapsed(&folded, &mut created(&out)?)).map_err(raised)
}

#[pyfunction]
#[pyo3(name = "pprof")]
fn py_pprof(py: Python<'_>, path: String, out: String, max_bytes: u64) -> PyResult<(u64, (String, String), Option<String>)> {
    let read = py.detach(|| pprof_in::collapse(&path, max_bytes, &mut created(&out)?)).map_err(raised)?;
    Ok((read.stacks, read.sample_type, read.app))
}

#[pyfunction]
#[pyo3(name = "scan")]
fn py_scan(py: Python<'_>, folded: String) -> PyResult<(u128, u64, u64)> {
    py.detach(|| rows::scan(&folded)).map_err(raised)
}

#[pyfunction]
#[pyo3(name = "sorted_lines")]
fn py_sorted_lines(py: Python<'_>, path: String) -> PyResult<Bound<'_, PyBytes>> {
    let order = py.detach(|| rows::sorted_lines(&path)).map_err(|e| raised(Stop::CannotWrite(e)))?;
    Ok(PyBytes::new(py, &order.iter().flat_map(|n| n.to_le_bytes()).collect::<Vec<u8>>()))
}

/// Byte blocks a thread writes, read as an iterator; the thread's Refused or OSError raised at its end.
#[pyclass]
struct Stream {
    rx: Mutex<Receiver<Vec<u8>>>,
    worker: Option<JoinHandle<Result<u64, Stop>>>,
}

#[pymethods]
impl Stream {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let rx = &self.rx;
        if let Some(block) = py.detach(|| rx.lock().ok()?.recv().ok()) {
            return Ok(Some(PyBytes::new(py, &block)));
        }
        if let Some(worker) = self.worker.take() {
            py.detach(|| joined(worker))?;
        }
        Ok(None)
    }
}

#[pyfunction]
#[pyo3(name = "rows", signature = (folded, drawn=false))]
fn py_rows(folded: String, drawn: bool) -> Stream {
    let (tx, rx) = sync_channel::<Vec<u8>>(4);
    let worker = std::thread::spawn(move || {
        let mut out = Sent { tx, buf: Vec::new() };
        grouped::encode(&folded, &mut out, drawn)
    });
    Stream { rx: Mutex::new(rx), worker: Some(worker) }
}

/// diff's frames on one side only, found on a thread of their own; result() waits for them.
#[pyclass]
struct Task {
    worker: Option<JoinHandle<Result<Vec<u8>, Stop>>>,
    found: Option<Vec<u8>>,
}

#[pymethods]
impl Task {
    fn done(&self) -> bool {
        self.worker.as_ref().is_none_or(|w| w.is_finished())
    }

    /// The JSON the search wrote (one_side.rs); Refused when it does not take the files.
    fn result<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        if let Some(worker) = self.worker.take() {
            self.found = Some(py.detach(|| joined(worker))?);
        }
        Ok(PyBytes::new(py, self.found.as_deref().unwrap_or_default()))
    }
}

#[pyfunction]
#[pyo3(name = "one_side", signature = (a, b, listed, names, merged=None, normalize=false))]
fn py_one_side(a: Vec<String>, b: Vec<String>, listed: usize, names: String, merged: Option<String>,
               normalize: bool) -> Task {
    let worker = std::thread::spawn(move || {
        let mut out = Vec::new();
        one_side::encode(&a, &b, listed, &names, merged.as_deref().map(|m| (m, normalize)), &mut out)?;
        Ok(out)
    });
    Task { worker: Some(worker), found: None }
}

#[pymodule]
fn rpcprof_core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("Refused", m.py().get_type::<Refused>())?;
    m.add_function(wrap_pyfunction!(py_labelled, m)?)?;
    m.add_function(wrap_pyfunction!(py_speedscope, m)?)?;
    m.add_function(wrap_pyfunction!(py_collapsed, m)?)?;
    m.add_function(wrap_pyfunction!(py_scan, m)?)?;
    m.add_function(wrap_pyfunction!(py_pprof, m)?)?;
    m.add_function(wrap_pyfunction!(py_sorted_lines, m)?)?;
    m.add_function(wrap_pyfunction!(py_rows, m)?)?;
    m.add_function(wrap_pyfunction!(py_one_side, m)?)?;
    m.add_class::<Stream>()?;
    m.add_class::<Task>()?;
    Ok(())
}
