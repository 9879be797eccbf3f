"""The one vocabulary of statuses: how a job (run, attach, sweep: manifest.json `status`) and a server's
measurement (result.json and metrics.json `status`, manifest.json `servers`) stand or ended. Each word has one
meaning (STATUS_MEANING, docs/run-folders.md), whether a job or a server says it; the schema (schema.py), every
writer and every reader take their words from Status.

Run folders written before this vocabulary used two words for two things each: a job stopped by Ctrl-C said
`incomplete` and one whose rpcprof was killed `interrupted`, while a server stopped by Ctrl-C said
`interrupted` and an attached process that exited in its window `incomplete`. read_statuses, the one place
that knows the old words, gives a record read from such a folder today's.
"""
from __future__ import annotations

from enum import StrEnum


class Status(StrEnum):
    """A status word; a str, so that it is written to JSON and compared as the word itself."""
    RUNNING = "running"
    COMPLETE = "complete"
    OK = "ok"
    FAILED = "failed"
    INTERRUPTED = "interrupted"
    KILLED = "killed"
    PID_EXITED = "pid-exited"
    NOT_RUN = "not run"


STATUS_MEANING = {
    Status.RUNNING: "measuring now, a job or a server in it (a job whose rpcprof was killed says so until the next "
                    "invocation marks it killed)",
    Status.COMPLETE: "a job whose every measurement ended ok",
    Status.OK: "a server's measurement that ended with every window it was to measure",
    Status.FAILED: "did not end ok: a server that would not build, start or answer, died, or measured too short a "
                   "window; an attached process that gave no samples; rpcprof itself erred; or, a job, one of its "
                   "measurements did not end ok (an attached process that exited among them); what was captured is "
                   "kept",
    Status.INTERRUPTED: "stopped by the user (Ctrl-C, SIGTERM, SIGHUP) before its end, a job or the server it was "
                        "measuring then; what was captured is kept",
    Status.KILLED: "a job whose rpcprof was killed without warning (SIGKILL, a crash, power loss); marked so by a "
                   "later invocation",
    Status.PID_EXITED: "an attached process that exited during its profile window: its profile holds what was "
                       "captured until then (the attach is failed)",
    Status.NOT_RUN: "a server a run did not reach: the run was interrupted before its turn",
}

# the words each kind of record says (the schema's enums)
JOB_STATUSES = (Status.RUNNING, Status.COMPLETE, Status.FAILED, Status.INTERRUPTED, Status.KILLED)
SERVER_STATUSES = (Status.RUNNING, Status.OK, Status.FAILED, Status.INTERRUPTED, Status.PID_EXITED, Status.NOT_RUN)
# a server's measurement whose figures and profile a report reads: ended ok, or an attached process's profile
# up to its exit
MEASURED = (Status.OK, Status.PID_EXITED)

# the words of folders written before this vocabulary that meant another thing: (job or server, word) -> status;
# a job's `interrupted` meant killed in a manifest from before the `killed` key
_OLD_WORDS = {("job", "incomplete"): Status.INTERRUPTED, ("job", "interrupted"): Status.KILLED,
              ("server", "incomplete"): Status.PID_EXITED}
_WORDS = {s.value for s in Status}
_KILLED_KEY = "killed"                  # the manifest's key saying why it was marked killed (Manifest.killed)


def read_statuses(record, kind: str):
    """A record read from a run folder with its statuses as Status: kind "job", a manifest (its `status`, and its
    `servers`' words), or "server", a server's result. Words of older folders are mapped to today's (_OLD_WORDS:
    a job's words are old in a manifest written without the `killed` key); a word that is no status is left as
    it is, for the schema to name. Anything but a mapping is returned as it is."""
    if not isinstance(record, dict):
        return record
    old_job = _KILLED_KEY not in record

    def word(w, of: str):
        if isinstance(w, str) and (of, w) in _OLD_WORDS and (of == "server" or old_job):
            return _OLD_WORDS[of, w]
        return Status(w) if isinstance(w, str) and w in _WORDS else w

    out = dict(record)
    if "status" in record:
        out["status"] = word(record["status"], kind)
    if kind == "job" and isinstance(record.get("servers"), dict):
        out["servers"] = {name: word(w, "server") for name, w in record["servers"].items()}
    if kind == "job" and old_job and out.get("status") == Status.KILLED:
        out[_KILLED_KEY] = record.get("interrupted")        # why it was marked, where today's manifests say it
    return out
