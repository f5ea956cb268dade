#!/usr/bin/env bash
# pyzmq's own test suite, from the source release on PyPI of the version
# Debian's python3-zmq is (24.0.1 on bookworm), run with pytest against
# Debian's python3-zmq twice: on fabriq (LD_LIBRARY_PATH=PREFIX/lib) and on
# Debian's libzmq. Prints one line per test file:
#
#   FILE  FABRIQ_PASSED  LIBZMQ_PASSED  TESTS
#
# and a TOTAL line. The test files are the release's; the helpers they
# import as `zmq.tests` are Debian's copy of the same release's.
#
#   pyzmq-tests.sh PREFIX WORKDIR [PYTEST_ARGS...]
set -euo pipefail
prefix="$(cd "$1" && pwd)"
mkdir -p "$2"
work="$(cd "$2" && pwd)"
shift 2
here="$(cd "$(dirname "$0")" && pwd)"
py=/usr/bin/python3

version="$($py -c 'import zmq; print(zmq.__version__)')"
sdist="$work/pyzmq-$version.tar.gz"
if [ ! -f "$sdist" ]; then
    pip=(python3 -m pip)
    "${pip[@]}" --version >/dev/null 2>&1 || pip=($py -m pip)
    "${pip[@]}" download --no-binary :all: --no-deps "pyzmq==$version" -d "$work" >&2
fi
rm -rf "$work/src" "$work/run"
mkdir -p "$work/src" "$work/run"
tar xzf "$sdist" -C "$work/src"
cp -r "$work/src/pyzmq-$version/zmq/tests" "$work/run/tests"

# Each side in its own directory, one after the other (some tests bind
# fixed names), each with a time limit.
for side in fabriq libzmq; do
    env=(env -u LD_PRELOAD)
    if [ "$side" = fabriq ]; then
        env+=("LD_LIBRARY_PATH=$prefix/lib")
    else
        env+=(-u LD_LIBRARY_PATH)
    fi
    # 60 s per test (pytest-timeout), 15 min per side.
    (cd "$work/run" && "${env[@]}" timeout -k 10 900 $py -m pytest tests -v -p no:cacheprovider --timeout=60 \
        --junitxml="$work/$side.xml" "$@" >"$work/$side.log" 2>&1 || true)
done
$py "$here/junit-table.py" "$work/fabriq.xml" "$work/libzmq.xml"
