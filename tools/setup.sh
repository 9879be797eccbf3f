#!/usr/bin/env bash
#
# setup.sh - install everything rpcprof needs, idempotently.
#
# A second run finds everything present and returns in about a second.
# Installs only from the package registries: Debian, crates.io, the Go module proxy, PyPI, npm.
#
# USAGE: tools/setup.sh [--check] [--ghz] [--java] [--cpp] [--for-tests]
#
#   --check       only report what is missing; exit 1 if anything is
#   --ghz         also ghz, the second load driver (profile.sh passes it when its arguments name ghz)
#   --java        also a JDK and Maven, for the Java servers (profile.sh passes it when its arguments name a
#                 server whose server.yaml says `language: java`)
#   --cpp         also gRPC C++ and its code generator, for the C++ servers (profile.sh passes it when its
#                 arguments name a server whose server.yaml says `language: cpp`)
#   --for-tests   also what the tests need: ghz, a JDK and Maven, gRPC C++, shellcheck, chromium, and
#                 an OpenTelemetry Collector and the profile readers (tools/collector)
#                 (.ci/run and tests/run.sh pass it; tests/run.sh -m fast does not: the fast tier needs
#                 only what a run needs)
#
# eg,
#   tools/setup.sh            # install what is missing
#   tools/setup.sh --check    # what would be installed?
#
# WHAT: Debian linux-perf (perf), nghttp2-client (h2load), protobuf-compiler (protoc), iproute2 (ss);
#       inferno 0.12.8 (cargo install, pinned); with --ghz or --for-tests, ghz v0.120.0 (go install,
#       pinned: @latest resolves to a 2021 release on this proxy; about 30 s, so only when asked);
#       with --java or --for-tests, Debian openjdk-17-jdk-headless (java, and jcmd, which writes the JIT's
#       perf map) and maven (the servers' own pom.xml pins every Java dependency; Maven Central);
#       with --cpp or --for-tests, Debian libgrpc++-dev and protobuf-compiler-grpc (gRPC C++ 1.51 and its
#       grpc_cpp_plugin), g++, make, pkg-config and ccache (a second checkout's build reuses the objects);
#       a virtualenv .venv with requirements.txt (click, pyyaml, pytest, py-spy, grpcio...) under
#       constraints.txt (every transitive version pinned too), installed by uv (PyPI, pinned), and rpcprof
#       itself (editable, pyproject.toml); with --for-tests, shellcheck (Debian) for the shell scripts' lint and chromium
#       (Debian) for the headless test of report.html; rpcprof_core, the compiled core called in process
#       (tools/core: a wheel built by uv with maturin 1.16, pyo3 0.30 and flate2 1.1, pinned; linked to the system's zlib:
#       Debian zlib1g-dev and pkg-config), into the virtualenv; with --for-tests, rpcprof-otelcol (an OpenTelemetry Collector
#       v0.165.0: OTLP receiver and exporters, contrib's file exporter) and rpcprof-profile-read
#       (google/pprof's profile package, the Collector's pdata/pprofile), go build of tools/collector,
#       every module pinned in its go.mod, into the virtualenv. Servers are built on demand by profile.sh.
#
# REQUIREMENTS: root (apt-get), cargo, go, python3.
set -euo pipefail

INFERNO_VERSION=0.12.8
GHZ_VERSION=v0.120.0
UV_VERSION=0.13.9

check_only=0
for_tests=0
with_ghz=0
with_java=0
with_cpp=0
for arg in "$@"; do
  case "$arg" in
    --check) check_only=1 ;;
    --ghz) with_ghz=1 ;;
    --java) with_java=1 ;;
    --cpp) with_cpp=1 ;;
    --for-tests) for_tests=1; with_ghz=1; with_java=1; with_cpp=1 ;;
    -h|--help) sed -n '2,42p' "$0"; exit 0 ;;
    *) echo "setup.sh: unknown option '$arg' (try --help)" >&2; exit 2 ;;
  esac
done

# shellcheck source=tools/env.sh
source "$(dirname "$0")/env.sh"
cd "$RPCPROF_ROOT"

missing=()
note() { echo "setup: $*"; }
uv_install() { "$uv" pip install --quiet --python "$RPCPROF_VENV/bin/python" "$@"; }

# --- Debian packages ---------------------------------------------------------------
declare -A deb_for=([perf]=linux-perf [h2load]=nghttp2-client [protoc]=protobuf-compiler [taskset]=util-linux [ss]=iproute2 [shellcheck]=shellcheck [chromium]=chromium
                    [java]=openjdk-17-jdk-headless [jcmd]=openjdk-17-jdk-headless [mvn]=maven
                    [grpc_cpp_plugin]=protobuf-compiler-grpc [g++]=g++ [make]=make [pkg-config]=pkg-config [ccache]=ccache
                    [/usr/include/grpcpp/grpcpp.h]=libgrpc++-dev [/usr/include/zlib.h]=zlib1g-dev)
debs=()
# The tests' lint (ShellCheck) and their headless look at report.html (Chromium; tools/svg_to_png.sh too):
# only with --for-tests, so that the main command installs only what a run needs
# zlib's headers and link library, found by pkg-config: rpcprof_core's gzip (below, the flate2 crate's zlib backend)
# is the system's zlib, as Python's is
needed=(perf h2load protoc taskset ss pkg-config /usr/include/zlib.h)
((for_tests)) && needed+=(shellcheck chromium)
# the Java servers: only when one is asked for (or for the tests)
((with_java)) && needed+=(java jcmd mvn)
# the C++ servers: a compiler (and ccache), gRPC C++'s headers and libraries (a file, not a command) and its protoc plugin
((with_cpp)) && needed+=(g++ make pkg-config ccache /usr/include/grpcpp/grpcpp.h grpc_cpp_plugin)
for cmd in "${needed[@]}"; do
  deb=${deb_for[$cmd]}
  if [[ $cmd == /* ]]; then [[ -e $cmd ]] && continue; else command -v "$cmd" >/dev/null 2>&1 && continue; fi
  [[ " ${debs[*]} " == *" $deb "* ]] || debs+=("$deb")
done
if ((${#debs[@]})); then
  missing+=("debian: ${debs[*]}")
  if ((!check_only)); then
    [[ $(id -u) == 0 ]] || { echo "setup: ERROR: installing ${debs[*]} needs root (apt-get)." >&2; exit 1; }
    note "installing Debian packages: ${debs[*]}"
    # the package lists once, when one of the packages has no candidate in them yet (a fresh machine's),
    # or when lists too old to fetch from made the install fail
    updated=0
    for deb in "${debs[@]}"; do
      apt-cache policy "$deb" 2>/dev/null | grep -q 'Candidate: [^(]' || { apt-get update -qq; updated=1; break; }
    done
    if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${debs[@]}" >/dev/null; then
      ((updated)) && { echo "setup: ERROR: apt-get install ${debs[*]} failed (its output is above)." >&2; exit 1; }
      apt-get update -qq
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${debs[@]}" >/dev/null
    fi
  fi
fi

# --- inferno (cargo) ----------------------------------------------------------------
# inferno's binaries have no --version: ask cargo what it installed.
if ! { command -v inferno-flamegraph >/dev/null && cargo install --list 2>/dev/null | grep -qxF "inferno v$INFERNO_VERSION:"; }; then
  missing+=("inferno $INFERNO_VERSION")
  if ((!check_only)); then
    command -v cargo >/dev/null || { echo "setup: ERROR: cargo not found: install Rust (rustup) first." >&2; exit 1; }
    note "installing inferno $INFERNO_VERSION (cargo install, about a minute)"
    cargo install inferno --version "$INFERNO_VERSION" --locked --quiet
  fi
fi

# --- ghz (go install) ---------------------------------------------------------------
ghz_bin="$GOBIN_DIR/ghz"
if ((with_ghz)) && ! { [[ -x $ghz_bin ]] && go version -m "$ghz_bin" 2>/dev/null | grep -q "mod.*github.com/bojand/ghz.*$GHZ_VERSION"; }; then
  missing+=("ghz $GHZ_VERSION")
  if ((!check_only)); then
    command -v go >/dev/null || { echo "setup: ERROR: go not found: install Go first." >&2; exit 1; }
    note "installing ghz $GHZ_VERSION (go install)"
    GOBIN="$GOBIN_DIR" go install "github.com/bojand/ghz/cmd/ghz@$GHZ_VERSION"
  fi
fi

# --- uv (PyPI) -----------------------------------------------------------------------
# uv makes the virtualenv and installs its packages: the same pinned set pip would, from a cache of unpacked
# wheels that it links in, so a new checkout on a machine that installed them once takes seconds, not pip's
# minute. It is kept once per machine, as the servers' compiled dependencies are (servers/cargo-build.sh), in
# ${RPCPROF_UV_HOME:-$HOME/.cache/rpcprof/uv-VERSION} (a virtualenv of its own, made by python3 -m venv).
uv_home="${RPCPROF_UV_HOME:-${HOME:+$HOME/.cache/rpcprof/uv-$UV_VERSION}}"
[[ -n $uv_home ]] || uv_home="$RPCPROF_ROOT/.uv-$UV_VERSION"
uv="$uv_home/bin/uv"
export UV_PYTHON_DOWNLOADS=never       # the system's python3, never one uv would download
# uv reads none of pip's configuration: what this machine gives pip (a certificate bundle, a timeout, a folder
# of wheels) is given to uv too, unless uv's own is set
[[ -n ${PIP_CERT:-} && -z ${SSL_CERT_FILE:-} ]] && export SSL_CERT_FILE=$PIP_CERT
[[ -n ${PIP_DEFAULT_TIMEOUT:-} && -z ${UV_HTTP_TIMEOUT:-} ]] && export UV_HTTP_TIMEOUT=$PIP_DEFAULT_TIMEOUT
[[ -d ${PIP_FIND_LINKS:-/nonexistent} && -z ${UV_FIND_LINKS:-} ]] && export UV_FIND_LINKS=$PIP_FIND_LINKS
if [[ ! -x $uv ]]; then
  missing+=("uv $UV_VERSION")
  if ((!check_only)); then
    note "installing uv $UV_VERSION (PyPI) into $uv_home"
    mkdir -p "$(dirname "$uv_home")"
    uv_tmp=$(mktemp -d "$uv_home.XXXXXX")
    python3 -m venv "$uv_tmp"
    "$uv_tmp/bin/pip" install --quiet --disable-pip-version-check "uv==$UV_VERSION"
    # one rename (bin/uv is a binary, not a script naming its folder): a setup in another checkout at the same
    # time finds the whole of it or none
    mv -T "$uv_tmp" "$uv_home" 2>/dev/null || rm -rf "$uv_tmp"
  fi
fi

# --- Python virtualenv --------------------------------------------------------------
# The stamp holds a hash of the requirement files: uv installs again only when they change.
req_hash=$(cat requirements.txt constraints.txt servers/requirements-python.txt pyproject.toml 2>/dev/null | sha256sum | cut -c1-16)
stamp="$RPCPROF_VENV/.rpcprof-requirements"
if [[ ! -x $RPCPROF_VENV/bin/python || $(cat "$stamp" 2>/dev/null) != "$req_hash" ]]; then
  missing+=("python virtualenv $RPCPROF_VENV")
  if ((!check_only)); then
    note "creating/updating the virtualenv $RPCPROF_VENV"
    [[ -x $RPCPROF_VENV/bin/python ]] || "$uv" venv --quiet --python "$(command -v python3)" "$RPCPROF_VENV"
    # Where Python writes no bytecode (PYTHONDONTWRITEBYTECODE, set in this machine's environment and in many
    # container images), it is written here, for every module, or each command would compile again what it imports
    # (the commit that added this gives the times measured). Elsewhere Python writes it at a module's first import.
    compile=${PYTHONDONTWRITEBYTECODE:+--compile-bytecode}
    uv_install ${compile:+"$compile"} -r requirements.txt -c constraints.txt
    # rpcprof itself, editable (pyproject.toml): importable in the virtualenv with no PYTHONPATH
    uv_install --no-deps --no-build-isolation -e .
    [[ -z $compile ]] || "$RPCPROF_VENV/bin/python" -m compileall -q tools/rpcprof >/dev/null
    echo "$req_hash" > "$stamp"
  fi
fi

# --- rpcprof_core (maturin) -----------------------------------------------------------
# rpcprof's compiled core (tools/core: pprof, OTLP and speedscope writers, the folded reader), a Python extension
# module called in process, built into a wheel by uv with maturin (PyPI) and pyo3 (crates.io, Cargo.lock):
# again when its source changes (the stamp holds a hash of it)
core_hash=$(cat tools/core/Cargo.toml tools/core/Cargo.lock tools/core/pyproject.toml tools/core/src/*.rs | sha256sum | cut -c1-16)
core_stamp="$RPCPROF_VENV/.rpcprof-core"
if [[ $(cat "$core_stamp" 2>/dev/null) != "$core_hash" ]]; then
  missing+=("rpcprof_core (tools/core)")
  if ((!check_only)); then
    command -v cargo >/dev/null || { echo "setup: ERROR: cargo not found: install Rust (rustup) first." >&2; exit 1; }
    # the wheel is kept, as the servers' dependencies are (servers/cargo-build.sh), in
    # ${RPCPROF_CORE_CACHE:-$HOME/.cache/rpcprof/core}/KEY, KEY a hash of these sources, the compiler's and
    # Python's versions: another checkout of the same sources on this machine installs it without compiling
    core_cache="${RPCPROF_CORE_CACHE:-${HOME:+$HOME/.cache/rpcprof/core}}"
    [[ -n $core_cache ]] || core_cache="$RPCPROF_VENV/core-wheel"
    core_key=$( { echo "$core_hash"; rustc -vV; "$RPCPROF_VENV/bin/python" -VV; } | sha256sum | cut -c1-16)
    wheels=("$core_cache/$core_key"/rpcprof_core-*.whl)
    if [[ ! -f ${wheels[0]} ]]; then
      note "building rpcprof_core (tools/core, maturin and cargo build --release, about a minute)"
      mkdir -p "$core_cache"
      built=$(mktemp -d "$core_cache/.building-XXXXXX")
      CARGO_TARGET_DIR="$RPCPROF_VENV/core-target" MATURIN_PEP517_ARGS=--locked \
        "$uv" build --quiet --wheel --python "$RPCPROF_VENV/bin/python" --out-dir "$built" tools/core
      # one rename: a setup in another checkout at the same time finds the whole wheel or none
      mv -T "$built" "$core_cache/$core_key" 2>/dev/null || rm -rf "$built"
      wheels=("$core_cache/$core_key"/rpcprof_core-*.whl)
    fi
    uv_install --no-deps --reinstall "${wheels[0]}"
    echo "$core_hash" > "$core_stamp"
  fi
fi

# --- rpcprof-otelcol, rpcprof-profile-read (go build), with --for-tests ---------------
# The consumers the tests hand export's files to: an OpenTelemetry Collector (OTLP receiver and exporters,
# contrib's file exporter) and a reader of pprof (google/pprof's profile package) and OTLP (the Collector's
# pdata/pprofile), built from tools/collector into the virtualenv; again when its files change (the stamp
# holds a hash of them).
col_hash=$(cat tools/collector/go.mod tools/collector/go.sum tools/collector/*/*.go | sha256sum | cut -c1-16)
col_stamp="$RPCPROF_VENV/.rpcprof-collector"
if ((for_tests)) && [[ ! -x $RPCPROF_VENV/bin/rpcprof-otelcol || ! -x $RPCPROF_VENV/bin/rpcprof-profile-read ||
                       $(cat "$col_stamp" 2>/dev/null) != "$col_hash" ]]; then
  missing+=("rpcprof-otelcol and rpcprof-profile-read (tools/collector)")
  if ((!check_only)); then
    command -v go >/dev/null || { echo "setup: ERROR: go not found: install Go first." >&2; exit 1; }
    note "building rpcprof-otelcol and rpcprof-profile-read (tools/collector, go build; the Collector's modules come from the Go module proxy)"
    (cd tools/collector && go build -mod=mod -o "$RPCPROF_VENV/bin/" ./...)
    echo "$col_hash" > "$col_stamp"
  fi
fi

if ((${#missing[@]})); then
  if ((check_only)); then
    printf 'setup: missing: %s\n' "${missing[@]}"
    echo "setup: run tools/setup.sh to install them."
    exit 1
  fi
  note "done."
else
  ((check_only)) || note "everything is present (perf, h2load, protoc, inferno $INFERNO_VERSION, rpcprof_core$( ((with_ghz)) && echo ", ghz $GHZ_VERSION")$( ((with_java)) && echo ", java, jcmd, mvn")$( ((with_cpp)) && echo ", gRPC C++"), .venv)."
fi
