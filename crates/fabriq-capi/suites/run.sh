#!/usr/bin/env bash
# Other people's test suites against fabriq's libzmq C API, each also run
# on Debian's libzmq for comparison: libzmq 4.3.4's tests/ and pyzmq's own
# suite (see libzmq-tests.sh, pyzmq-tests.sh). Prints both tables and
# fabriq's passes as a share of libzmq's, and fails if a share is below
# its floor:
#
#   FABRIQ_CAPI_LIBZMQ_FLOOR (percent, default 90: the issue's target, met)
#   FABRIQ_CAPI_PYZMQ_FLOOR  (percent, default 95: the issue's target, met)
#
# The issue's targets are 90 % (libzmq's tests) and 95 % (pyzmq's); both
# floors are the targets, a few points under what was measured
# (docs/capi.md: 93-98 % and 97-100 %), so that timing noise on a busy
# machine does not fail the run while a real regression does.
#
#   run.sh PREFIX WORKDIR
set -euo pipefail
prefix="$1"
work="$2"
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$work"

share() { awk -v f="$1" -v l="$2" 'BEGIN { if (l > 0) printf "%d", 100 * f / l; else print 100 }'; }

echo "== libzmq 4.3.4 tests/ (FILE FABRIQ LIBZMQ TESTS)"
bash "$here/libzmq-tests.sh" "$prefix" "$work/libzmq-tests" | tee "$work/libzmq-tests.txt"
echo "== pyzmq's test suite (FILE FABRIQ LIBZMQ TESTS)"
bash "$here/pyzmq-tests.sh" "$prefix" "$work/pyzmq-tests" | tee "$work/pyzmq-tests.txt"

status=0
for suite in libzmq pyzmq; do
    read -r _ f l n < <(grep '^TOTAL' "$work/$suite-tests.txt")
    pct="$(share "$f" "$l")"
    floor_var="FABRIQ_CAPI_$(tr a-z A-Z <<<"$suite")_FLOOR"
    default=90
    [ "$suite" = pyzmq ] && default=95
    floor="${!floor_var:-$default}"
    echo "$suite suite: fabriq passes $f, libzmq $l (of $n): $pct % (floor $floor %)"
    if [ "$pct" -lt "$floor" ]; then
        echo "$suite suite: below the floor" >&2
        status=1
    fi
done
exit "$status"
