#!/usr/bin/env python3
"""Where an ofi+tcp process's memory is (docs/reliability.md, "The ofi+tcp
processes"): every INTERVAL seconds, COUNT times, one line of

    t_s VmRSS_kB pool_kB cq_ring_kB other_anon_kB

for process PID: the page pool (the anonymous mapping of POOL_KB between two
4 kB guard pages; 32,800 kB for 512 pages of 64 KiB + 64), libfabric's
completion ring (the glibc mmapped chunk of CQ_KB, 12,292 kB with
FI_UNIVERSE_SIZE at its default) and the rest of the anonymous memory, all
as resident kB read from /proc/PID/pagemap. With --chunks, lists instead
each large anonymous mapping split into glibc's mmapped chunks (their size
words, read from /proc/PID/mem) with their resident kB. Needs root (or the
process's owner with ptrace access).

usage: scripts/fabric-memory.py PID [INTERVAL [COUNT]] [--chunks]
environment: POOL_KB, CQ_KB
"""
import os
import struct
import sys
import time

args = [a for a in sys.argv[1:] if not a.startswith('--')]
if not args:
    sys.exit(__doc__)
PID = int(args[0])
INTERVAL = float(args[1]) if len(args) > 1 else 10.0
COUNT = int(args[2]) if len(args) > 2 else 1
POOL_KB = int(os.environ.get('POOL_KB', 32800))
CQ_KB = int(os.environ.get('CQ_KB', 12292))


def maps():
    out = []
    for line in open(f"/proc/{PID}/maps"):
        f = line.split()
        a, b = (int(x, 16) for x in f[0].split('-'))
        out.append((a, b, f[1], f[5] if len(f) > 5 else ''))
    return out


def resident(pm, a, b):
    pm.seek((a // 4096) * 8)
    data = pm.read(((b - a) // 4096) * 8)
    return 4 * sum(1 for (v,) in struct.iter_unpack('<Q', data) if v >> 63 & 1)


def chunks(mem, a, b):
    """glibc mmapped chunks laid end to end from a: (start, size)."""
    p = a
    while p + 16 <= b:
        try:
            mem.seek(p + 8)
            size = struct.unpack('<Q', mem.read(8))[0]
        except OSError:
            return
        n = size & ~7
        if size & 2 == 0 or n == 0 or p + n > b:
            return
        yield p, n
        p += n


def anonymous(m):
    return m[2] == 'rw-p' and m[3] in ('', '[heap]')


def sample():
    with open(f"/proc/{PID}/mem", 'rb', 0) as mem, open(f"/proc/{PID}/pagemap", 'rb', 0) as pm:
        ms = maps()
        pool = ring = anon = 0
        for i, m in enumerate(ms):
            if not anonymous(m):
                continue
            a, b = m[0], m[1]
            r = resident(pm, a, b)
            anon += r
            guarded = i > 0 and ms[i - 1][2] == '---p' and ms[i - 1][1] == a
            if guarded and (b - a) // 1024 == POOL_KB:
                pool += r
                continue
            for p, n in chunks(mem, a, b):
                if n // 1024 == CQ_KB:
                    ring += resident(pm, p, p + n)
        rss = next(int(l.split()[1]) for l in open(f"/proc/{PID}/status") if l.startswith('VmRSS'))
        return rss, pool, ring, anon - pool - ring


def list_chunks():
    with open(f"/proc/{PID}/mem", 'rb', 0) as mem, open(f"/proc/{PID}/pagemap", 'rb', 0) as pm:
        for m in maps():
            a, b = m[0], m[1]
            if not anonymous(m) or (b - a) < 1024 * 1024:
                continue
            print(f"{a:x}-{b:x} {(b - a) // 1024} kB, resident {resident(pm, a, b)} kB")
            for p, n in chunks(mem, a, b):
                print(f"   chunk {p:x} {n // 1024:8d} kB  resident {resident(pm, p, p + n):8d} kB")


if '--chunks' in sys.argv:
    list_chunks()
    sys.exit(0)
t0 = time.time()
print("t_s VmRSS_kB pool_kB cq_ring_kB other_anon_kB", flush=True)
for i in range(COUNT):
    try:
        r = sample()
    except (FileNotFoundError, ProcessLookupError):
        break
    print(f"{time.time() - t0:.0f} {r[0]} {r[1]} {r[2]} {r[3]}", flush=True)
    if i + 1 < COUNT:
        time.sleep(INTERVAL)
