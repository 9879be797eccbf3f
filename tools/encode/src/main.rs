//! rpcprof-encode - report.py export's encoder of large folded files, the same bytes as its Python writers.
//!
//! USAGE: rpcprof-encode pprof FOLDED TYPE UNIT LEVEL [COMMENT]   a Profile, gzip'd at zlib's LEVEL, to stdout
//!        rpcprof-encode otlp FOLDED TYPE UNIT                     a ProfilesData to stdout
//!        rpcprof-encode speedscope FOLDED NAME_JSON UNIT          a speedscope document to stdout
//!        rpcprof-encode one-side A B LISTED NAMES VANISHED [MERGED raw|normalize]
//!                                                                 diff's frames on one side only, and the lines
//!                                                                 it draws (one_side.rs)
//!        rpcprof-encode diff-folded A B [--normalize]            inferno-diff-folded's lines (diff_folded.rs)
//!        rpcprof-encode scan FOLDED                               `TOTAL GCD STACKS` of its counts (rows.rs)
//!        rpcprof-encode rows FOLDED                               its rows for report.py's categorisation
//!                                                                 (grouped.rs)
//!
//! pprof and otlp read each stack's labels from stdin (labels.rs says how); speedscope reads nothing there.
//! FOLDED is a folded file, gzip'd when its name ends in .gz. Exit 0 when the document is written, `stacks N` on
//! stderr; 3,
//! with one line on
//! stderr, when the file holds what this encoder does not take (report.py then writes it its own way); 4 when
//! the document cannot be written; 2 on a usage error.

mod diff_folded;
mod grouped;
mod gzip;
mod intern;
mod labels;
mod one_side;
mod out;
mod profile;
mod rows;
mod speedscope;

use std::io::{self, BufWriter};
use std::process::ExitCode;

use profile::Format;

extern "C" {
    fn prctl(option: i32, ...) -> i32;
    fn getppid() -> i32;
}

/// Ends with the process that started it: report.py stops the encoder by PID on every way out, but a forked
/// pass of report.py's that is itself killed (diff's side A, stopped on an error or ^C) cannot.
fn die_with_parent() {
    const PR_SET_PDEATHSIG: i32 = 1;
    const SIGKILL: i32 = 9;
    // SAFETY: prctl with PR_SET_PDEATHSIG takes one integer argument and touches no memory of ours
    unsafe {
        let parent = getppid();
        prctl(PR_SET_PDEATHSIG, SIGKILL as std::ffi::c_ulong);
        if getppid() != parent {
            std::process::exit(3); // the parent ended before the request was made
        }
    }
}

fn main() -> ExitCode {
    die_with_parent();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let stdout = io::stdout().lock();
    let mut out = BufWriter::with_capacity(1 << 20, stdout);
    let done = match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        ["pprof", path, kind, unit, level, rest @ ..] if rest.len() <= 1 && level.parse::<i32>().is_ok() => {
            gzip::Gzip::new(&mut out, level.parse().unwrap()).map_err(rows::Stop::from).and_then(|mut gz| {
                let stacks = profile::encode(Format::Pprof, path, kind, unit, rest.first().copied(),
                                             io::stdin().lock(), &mut gz)?;
                gz.finish()?;
                Ok(stacks)
            })
        }
        ["otlp", path, kind, unit] => profile::encode(Format::Otlp, path, kind, unit, None, io::stdin().lock(), &mut out),
        ["speedscope", path, name, unit] => speedscope::encode(path, name, unit, &mut out),
        ["diff-folded", a, b, rest @ ..] if rest.len() <= 1 && rest.iter().all(|r| *r == "--normalize") => {
            diff_folded::encode(a, b, !rest.is_empty(), &mut out)
        }
        ["scan", path] => rows::scan(path, &mut out),
        ["rows", path] => grouped::encode(path, &mut out),
        ["one-side", a, b, listed, names, vanished, rest @ ..] if listed.parse::<usize>().is_ok()
            && matches!(rest, [] | [_, "raw" | "normalize"]) => {
            let merged = rest.first().map(|path| (*path, rest[1] == "normalize"));
            one_side::encode(a, b, listed.parse().unwrap(), names, vanished, merged, &mut out)
        }
        _ => {
            eprintln!("rpcprof-encode: usage: rpcprof-encode pprof|otlp|speedscope FOLDED ... (see its source's header)");
            return ExitCode::from(2);
        }
    };
    match done {
        Ok(stacks) => {
            eprintln!("stacks {stacks}");
            ExitCode::SUCCESS
        }
        Err(rows::Stop::Refused(why)) => {
            eprintln!("rpcprof-encode: {why}");
            ExitCode::from(3)
        }
        Err(rows::Stop::CannotWrite(e)) => {
            eprintln!("rpcprof-encode: cannot write: {e}");
            ExitCode::from(4)
        }
    }
}
