#!/usr/bin/env bash
# libzmq 4.3.4's perf tools (perf/ of the zeromq-src crate's source:
# local_lat/remote_lat, local_thr/remote_thr, inproc_lat/inproc_thr), built
# against fabriq's PREFIX and against Debian's libzmq, run side by side.
# Prints a Markdown table: tool, size, count, libzmq, fabriq, fabriq/libzmq
# (latency: lower is better; throughput: higher is better). Each figure is
# the median of REPS runs (default 3).
#
#   perf-tools.sh PREFIX WORKDIR [REPS [TOOL]]   (TOOL: only that row's tool)
set -euo pipefail
prefix="$(cd "$1" && pwd)"
mkdir -p "$2"
work="$(cd "$2" && pwd)"
reps="${3:-3}"
root="$(cd "$(dirname "$0")/../../.." && pwd)"
vendor="$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/zeromq-src-*+4.3.4/vendor 2>/dev/null | sed -n 1p)"
[ -n "$vendor" ] || { (cd "$root" && cargo fetch --locked >&2); vendor="$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/zeromq-src-*+4.3.4/vendor | sed -n 1p)"; }
syslib="$(PATH="$PATH:/sbin:/usr/sbin" ldconfig -p | awk '/libzmq\.so\.5 .*x86-64/ && !found {print $NF; found = 1}')"

for side in fabriq libzmq; do
    d="$work/$side"
    mkdir -p "$d/perf" "$d/include"
    cp "$vendor"/perf/*.cpp "$d/perf/"
    printf '#define ZMQ_HAVE_LINUX 1\n' >"$d/perf/platform.hpp"
    if [ "$side" = fabriq ]; then
        cp "$prefix/include/zmq.h" "$d/include/zmq.h"
        link=(-L"$prefix/lib" -lzmq -Wl,-rpath,"$prefix/lib")
    else
        cp "$vendor/include/zmq.h" "$d/include/zmq.h"
        link=("$syslib")
    fi
    for tool in local_lat remote_lat local_thr remote_thr inproc_lat inproc_thr; do
        [ -x "$d/$tool" ] || c++ -O2 -w -pthread -o "$d/$tool" "$d/perf/$tool.cpp" "${link[@]}"
    done
done

free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# One measurement: prints the figure (us or msg/s).
measure() { # side tool size count
    local d="$work/$1" tool="$2" size="$3" count="$4" out
    local env=(env -u LD_PRELOAD)
    [ "$1" = fabriq ] && env+=("LD_LIBRARY_PATH=$prefix/lib") || env+=(-u LD_LIBRARY_PATH)
    case "$tool" in
        inproc_lat|inproc_thr)
            out="$("${env[@]}" timeout 120 "$d/$tool" "$size" "$count")" ;;
        tcp_lat|tcp_thr)
            local kind="${tool#tcp_}" port
            port="$(free_port)"
            "${env[@]}" timeout 120 "$d/local_$kind" "tcp://127.0.0.1:$port" "$size" "$count" >"$work/out.txt" &
            local pid=$!
            sleep 0.3
            "${env[@]}" timeout 120 "$d/remote_$kind" "tcp://127.0.0.1:$port" "$size" "$count" >"$work/remote.txt"
            wait "$pid"
            # remote_lat reports the latency, local_thr the throughput.
            out="$(cat "$work/out.txt" "$work/remote.txt")" ;;
    esac
    case "$tool" in
        *lat) sed -n 's/^average latency: \([0-9.]*\) \[us\]/\1/p' <<<"$out" ;;
        *thr) sed -n 's/^mean throughput: \([0-9.]*\) \[msg\/s\]/\1/p' <<<"$out" ;;
    esac
}

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

echo "| tool | size (B) | count | libzmq 4.3.4 | fabriq | fabriq / libzmq |"
echo "|---|---:|---:|---:|---:|---:|"
while read -r tool size count unit; do
    [ -n "${4:-}" ] && [ "$tool" != "$4" ] && continue
    for side in libzmq fabriq; do
        for _ in $(seq "$reps"); do measure "$side" "$tool" "$size" "$count"; done | median >"$work/$side.fig"
    done
    l="$(cat "$work/libzmq.fig")" f="$(cat "$work/fabriq.fig")"
    ratio="$(awk -v f="$f" -v l="$l" 'BEGIN { if (l > 0) printf "%.2f", f / l; else print "n/a" }')"
    echo "| $tool | $size | $count | $l $unit | $f $unit | $ratio |"
done <<'EOF_CASES'
inproc_lat 64 20000 us
inproc_thr 64 2000000 msg/s
tcp_lat 64 20000 us
tcp_thr 64 2000000 msg/s
tcp_thr 65536 20000 msg/s
EOF_CASES
