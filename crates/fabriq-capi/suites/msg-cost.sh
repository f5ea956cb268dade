#!/usr/bin/env bash
# The C layer's own cost per message, as a count of instructions (which,
# unlike time, does not move with the machine's load): suites/msg-cost.c
# (libzmq's inproc_thr work through zmq.h) against fabriq's PREFIX and
# against Debian's libzmq, and examples/msg_cost.rs (the same work through
# the fabriq crate's API), each counted by valgrind's callgrind (user
# space, all threads; the VM has no hardware counters for `perf stat`).
# Each program runs with COUNT and 2 COUNT messages: the difference,
# divided by COUNT, leaves setup and teardown out.
#
#   msg-cost.sh PREFIX WORKDIR [SIZE [COUNT]]   (default 64 B, 100000)
#
# Prints a Markdown table: mode, instructions per message for libzmq,
# fabriq's C API and fabriq's Rust API, and C / Rust. Mode "batch" is one
# thread sending 500 messages then receiving them (no waits: the figure
# repeats to the instruction); "threads" has the sender in its own thread
# as inproc_thr does (a receiver that finds its pipe empty waits, so that
# figure moves with the way valgrind schedules the two threads); "copy"
# is "batch" with each message sent from a buffer (zmq_send, send(&[u8])):
# there both sides allocate alike, so C / Rust is the C layer's own cost
# (in "batch", zmq_msg_init_size cuts messages from per-thread chunks
# where Message::with_size allocates each one).
set -euo pipefail
prefix="$(cd "$1" && pwd)"
mkdir -p "$2"
work="$(cd "$2" && pwd)"
size="${3:-64}"
count="${4:-100000}"
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
syslib="$(PATH="$PATH:/sbin:/usr/sbin" ldconfig -p | awk '/libzmq\.so\.5 .*x86-64/ && !found {print $NF; found = 1}')"
vendor="$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/zeromq-src-*+4.3.4/vendor 2>/dev/null | sed -n 1p)"

cc -O2 -pthread -I"$prefix/include" -o "$work/msg-cost-fabriq" "$here/msg-cost.c" \
    -L"$prefix/lib" -lzmq -Wl,-rpath,"$prefix/lib"
if [ -n "$syslib" ] && [ -n "$vendor" ]; then
    cc -O2 -pthread -I"$vendor/include" -o "$work/msg-cost-libzmq" "$here/msg-cost.c" "$syslib"
fi
(cd "$root" && cargo build --release --locked -p fabriq-capi --example msg_cost >&2)
rust="${CARGO_TARGET_DIR:-$root/target}/release/examples/msg_cost"

# Instructions of one run: PROGRAM MODE COUNT.
instructions() {
    env -u LD_PRELOAD valgrind --tool=callgrind --callgrind-out-file=/dev/null "$1" "$2" "$size" "$3" 2>&1 |
        sed -n 's/^==[0-9]*== Collected : \([0-9]*\)$/\1/p'
}

# Instructions per message: PROGRAM MODE.
per_msg() {
    local one two
    one="$(instructions "$1" "$2" "$count")"
    two="$(instructions "$1" "$2" $((2 * count)))"
    awk -v a="$one" -v b="$two" -v c="$count" 'BEGIN { printf "%.0f", (b - a) / c }'
}

echo "| mode | libzmq 4.3.4 | fabriq C API | fabriq Rust API | C / Rust |"
echo "|---|---:|---:|---:|---:|"
for mode in batch threads copy; do
    l="n/a"
    [ -x "$work/msg-cost-libzmq" ] && l="$(per_msg "$work/msg-cost-libzmq" "$mode" "$size" "$count")"
    c="$(per_msg "$work/msg-cost-fabriq" "$mode" "$size" "$count")"
    r="$(per_msg "$rust" "$mode" "$size" "$count")"
    ratio="$(awk -v c="$c" -v r="$r" 'BEGIN { printf "%.2f", c / r }')"
    echo "| $mode | $l | $c | $r | $ratio |"
done
