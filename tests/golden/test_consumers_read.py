"""Every profile report.py export writes, read by what reads it outside rpcprof: pprof by google/pprof's own profile
package, OTLP (protobuf and OTLP JSON) by the OpenTelemetry Collector's pdata/pprofile (both through
rpcprof-profile-read, tools/collector, which tools/setup.sh --for-tests builds), speedscope's JSON against the
schema speedscope publishes (1.25.0, tests/data/speedscope). On each capture of tests/data and hostile.folded,
each stack weighs what the folded file gives it, and each sample carries the category, subcategory and tax group
report.py gives its stack.

OTLP's consumers key on more than the samples (Pyroscope names a profile by its period type and takes the
application from the resource's service.name; docs/fleet.md): those fields are checked on the run folders'
profiles (tests/data/runs/seed-001), each in a test of its own.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
import subprocess
from collections import Counter
from functools import lru_cache
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

from rpcprof.analyze.categorize import group_of, load_rules, open_folded
from rpcprof.analyze.rules import normalize_frame
from rpcprof.cli.report import main as report_main
from rpcprof.folded import weight_unit

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
CAPTURES = sorted(DATA.glob("*.folded.gz")) + [DATA / "hostile.folded"]
RUN = DATA / "runs" / "seed-001"
RUN_PROFILES = sorted(RUN.glob("*/profile.folded.gz"))
VENV = Path(os.environ.get("RPCPROF_VENV", ROOT / ".venv"))
READER = VENV / "bin" / "rpcprof-profile-read"
SPEEDSCOPE_SCHEMA = DATA / "speedscope" / "file-format-schema.json"
# the well-known values of the semantic conventions' profile.frame.type
FRAME_TYPES = {"beam", "cpython", "dotnet", "go", "jvm", "kernel", "native", "perl", "php", "ruby", "rust", "v8js"}
NATIVE = ("rust_", "cpp_")          # servers whose frames outside the kernel are all compiled code (no JIT, no interpreter)
LABELS = ("category", "subcategory", "tax")
SUFFIXES = [".pb", ".json"]

needs_reader = pytest.mark.skipif(not READER.exists(), reason=f"{READER.name} is built by tools/setup.sh --for-tests "
                                  "(./tests/run.sh with no -m fast)")


@lru_cache(maxsize=None)
def exported(folded: Path, suffix: str, tmp: Path) -> Path:
    """report.py export of folded into tmp (format by suffix: .pb.gz pprof, .pb OTLP, .json OTLP's JSON,
    .speedscope.json speedscope), run as the command line does."""
    fmt = {".pb.gz": "pprof", ".pb": "otlp", ".json": "otlp", ".speedscope.json": "speedscope"}[suffix]
    out = tmp / f"{folded.parent.name}-{folded.name}{suffix}"
    done = CliRunner().invoke(report_main, ["export", str(folded), "--format", fmt, "-o", str(out)],
                              catch_exceptions=False)
    assert done.exit_code == 0, done.output
    return out


@lru_cache(maxsize=None)
def read(kind: str, path: Path) -> dict:
    """What rpcprof-profile-read prints of path (kind pprof or otlp)."""
    done = subprocess.run([str(READER), kind, str(path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def tmp(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("consumers")


@lru_cache(maxsize=None)
def app_of(folded: Path) -> str | None:
    """The app pattern report.py export takes for folded: its run's (result.json), none for a bare capture."""
    result = folded.parent / "result.json"
    return json.loads(result.read_text()).get("app") if result.exists() else None


@lru_cache(maxsize=None)
def expected_labels(folded: Path) -> dict[tuple[str, ...], list[tuple[str, str]]]:
    """report.py's labels of each stack of folded: its category, its subcategory where its category has them, its
    tax group, each asked of the rules (categorize.yaml, with the run's app pattern) for that stack."""
    rules = load_rules().with_app(app_of(folded))
    level2, tax = rules.using(level=2), rules.using(view="tax")
    out = {}
    for frames, _ in open_folded(folded):
        sub = group_of(frames, level2)
        out[tuple(frames)] = sorted([("category", group_of(frames, rules)), ("tax", group_of(frames, tax))]
                                    + ([("subcategory", sub)] if "/" in sub else []))
    return out


def weights(stacks) -> Counter:
    """{frames root first: summed weight}."""
    total = Counter()
    for frames, weight in stacks:
        total[tuple(frames)] += weight
    return total


def check_samples(folded: Path, samples: list[dict]) -> None:
    """One sample per line of folded; each stack's weight the folded file's; each sample's labels report.py's."""
    stacks = open_folded(folded)
    assert len(samples) == len(stacks)
    assert weights((s["frames"], s["values"][0]) for s in samples) == weights(stacks)
    want = expected_labels(folded)
    wrong = [(s["frames"], s["labels"]) for s in samples
             if sorted(tuple(kv) for kv in s["labels"] if kv[0] in LABELS) != want[tuple(s["frames"])]]
    assert not wrong, f"{len(wrong)} samples whose labels are not report.py's, first: {wrong[0]}"


@needs_reader
@pytest.mark.parametrize("folded", CAPTURES + RUN_PROFILES, ids=lambda p: p.parent.name + "/" + p.name.split(".")[0])
def test_go_pprof_reads_each_stack_weight_and_label(folded, tmp):
    doc = read("pprof", exported(folded, ".pb.gz", tmp))
    assert doc["sample_types"] == [list(weight_unit(folded))]
    check_samples(folded, doc["samples"])


@needs_reader
@pytest.mark.parametrize("suffix", SUFFIXES)
@pytest.mark.parametrize("folded", CAPTURES + RUN_PROFILES, ids=lambda p: p.parent.name + "/" + p.name.split(".")[0])
def test_the_collectors_pdata_reads_each_stack_weight_and_attribute(folded, suffix, tmp):
    doc = read("otlp", exported(folded, suffix, tmp))
    (resource,) = doc["resources"]
    (scope,) = resource["scopes"]
    (profile,) = scope["profiles"]
    assert profile["sample_type"] == list(weight_unit(folded))
    check_samples(folded, profile["samples"])


@pytest.mark.parametrize("folded", CAPTURES, ids=lambda p: p.name.split(".")[0])
def test_speedscope_exports_hold_to_speedscopes_schema_and_weigh_each_stack_as_folded(folded, tmp):
    doc = json.loads(exported(folded, ".speedscope.json", tmp).read_text())
    jsonschema.Draft7Validator(json.loads(SPEEDSCOPE_SCHEMA.read_text())).validate(doc)
    (profile,) = doc["profiles"]
    frames = [f["name"] for f in doc["shared"]["frames"]]
    assert weights(([frames[i] for i in s], w) for s, w in zip(profile["samples"], profile["weights"])) \
        == weights(open_folded(folded))
    assert profile["endValue"] - profile["startValue"] == sum(w for _, w in open_folded(folded))


# --- what OTLP's consumers key on -----------------------------------------------------------------------------

@dataclasses.dataclass
class RunProfile:
    server: str
    result: dict            # its result.json
    manifest: dict          # the run's manifest.json
    profile_json: dict      # its profile.json
    doc: dict               # rpcprof-profile-read's reading of its OTLP export

    @property
    def profile(self) -> dict:
        return self.doc["resources"][0]["scopes"][0]["profiles"][0]


@pytest.fixture(scope="module", params=[pytest.param((p, ".pb"), id=f"{p.parent.name}.pb") for p in RUN_PROFILES]
                + [pytest.param((p, ".json"), id=f"{p.parent.name}.json") for p in RUN_PROFILES])
def run_profile(request, tmp) -> RunProfile:
    if not READER.exists():
        pytest.skip(f"{READER.name} is built by tools/setup.sh --for-tests")
    folded, suffix = request.param
    return RunProfile(folded.parent.name, json.loads((folded.parent / "result.json").read_text()),
                      json.loads((RUN / "manifest.json").read_text()),
                      json.loads((folded.parent / "profile.json").read_text()), read("otlp", exported(folded, suffix, tmp)))


@needs_reader
@pytest.mark.parametrize("suffix", SUFFIXES)
@pytest.mark.parametrize("folded", CAPTURES + RUN_PROFILES, ids=lambda p: p.parent.name + "/" + p.name.split(".")[0])
def test_every_dictionary_table_starts_with_its_zero_entry(folded, suffix, tmp):
    assert read("otlp", exported(folded, suffix, tmp))["zero_entries"] == {
        t: True for t in ("mapping", "location", "function", "link", "attribute", "stack", "string")}


def test_a_run_profile_has_a_period_type_and_a_period(run_profile):
    """Pyroscope's OTLP ingest names a profile from its period type and refuses one with none."""
    kind, unit = run_profile.profile["period_type"]
    assert kind and unit and run_profile.profile["period"] > 0


def test_a_run_profile_is_dated_by_its_run_and_lasts_its_window(run_profile):
    """time_unix_nano within the run (its times are local to the host that ran it: a day's leeway either way, so
    the export's own date, days later, is not taken for it); duration_nano the profile window's."""
    def unix_ns(text: str) -> int:
        return int(dt.datetime.fromisoformat(text).replace(tzinfo=dt.timezone.utc).timestamp() * 1e9)
    day = 24 * 3600 * 10**9
    started, finished = unix_ns(run_profile.result["started"]), unix_ns(run_profile.manifest["finished"])
    assert started - day <= run_profile.profile["time_unix_nano"] <= finished + day
    window = run_profile.profile_json
    assert 0.5 * window["duration_s"] * 1e9 <= run_profile.profile["duration_nano"] <= 1.5 * window["window_s"] * 1e9


def test_a_run_profiles_resource_names_its_server(run_profile):
    assert run_profile.doc["resources"][0]["attributes"].get("service.name") == run_profile.server


def test_a_run_profiles_resource_has_its_process(run_profile):
    """process.pid, the server's, an int as the semantic conventions type it."""
    assert run_profile.doc["resources"][0]["attributes"].get("process.pid") == run_profile.result["pid"]


@needs_reader
@pytest.mark.parametrize("suffix", SUFFIXES)
@pytest.mark.parametrize("folded", [c for c in CAPTURES if c.name.startswith(NATIVE)] + RUN_PROFILES,
                         ids=lambda p: p.parent.name + "/" + p.name.split(".")[0])
def test_kernel_and_native_frames_carry_their_frame_type(folded, suffix, tmp):
    """profile.frame.type: `kernel` on perf's kernel frames (`_[k]`), a well-known value other than kernel on the
    others (a native server's: compiled code)."""
    for sample in read("otlp", exported(folded, suffix, tmp))["resources"][0]["scopes"][0]["profiles"][0]["samples"]:
        for frame, kind in zip(sample["frames"], sample["frame_types"]):
            assert kind == "kernel" if normalize_frame(frame)[1] else kind in FRAME_TYPES - {"kernel"}, (frame, kind)


@needs_reader
@pytest.mark.parametrize("folded", CAPTURES, ids=lambda p: p.name.split(".")[0])
def test_a_frame_type_given_is_a_well_known_one(folded, tmp):
    for sample in read("otlp", exported(folded, ".pb", tmp))["resources"][0]["scopes"][0]["profiles"][0]["samples"]:
        assert set(sample["frame_types"]) <= FRAME_TYPES | {""}
