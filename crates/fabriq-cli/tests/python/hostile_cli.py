"""The lost-delivery scenario of issue 10, against the real CLI.

Each round starts `fabriq pull --bind tcp://127.0.0.1:* -n 10`, sends it,
one connection each and in this order: HTTP text; 64 zero bytes; a
version-2 greeting; a greeting with mechanism "BOGUS"; a valid greeting and
READY with Socket-Type PUB; a valid PUSH handshake then a frame header
announcing 2^63 bytes; a READY whose property length runs past the command;
two bytes of a greeting (left open 5 s, in the background); then 300
connections that send 3 bytes of a greeting and close. Each hostile client
waits (up to 2 s) for fabriq to close it. Then a pyzmq PUSH connects and
sends 10 messages, and the round passes if `fabriq pull` prints all 10 and
exits 0 within 10 s.

    python hostile_cli.py FABRIQ_BINARY ROUNDS [--load]

`--load` keeps one busy process per CPU running meanwhile. Exits 0 only if
every round passed; prints one line per failed round and a summary.
"""

import os
import socket
import struct
import subprocess
import sys
import threading
import time

import zmq

SIGNATURE = b"\xff" + b"\x00" * 8 + b"\x7f"


def greeting(mechanism=b"NULL", major=3, minor=1):
    return (
        SIGNATURE
        + bytes([major, minor])
        + mechanism.ljust(20, b"\x00")
        + b"\x00"
        + b"\x00" * 31
    )


def command(body):
    if len(body) < 256:
        return bytes([0x04, len(body)]) + body
    return bytes([0x06]) + struct.pack(">Q", len(body)) + body


def ready(socket_type):
    prop = b"\x0bSocket-Type" + struct.pack(">I", len(socket_type)) + socket_type
    return command(b"\x05READY" + prop)


HOSTILE = [
    ("http", b"GET / HTTP/1.1\r\nHost: fabriq\r\n\r\n"),
    ("zeros", b"\x00" * 64),
    ("v2 greeting", SIGNATURE + b"\x02\x00" + b"\x00" * 52),
    ("bogus mechanism", greeting(b"BOGUS")),
    ("incompatible type", greeting() + ready(b"PUB")),
    (
        "2^63 frame",
        greeting() + ready(b"PUSH") + b"\x02" + struct.pack(">Q", 1 << 63),
    ),
    (
        "property past the command",
        greeting()
        + command(b"\x05READY" + b"\x0bSocket-Type" + struct.pack(">I", 0x7FFFFFFF) + b"PUSH"),
    ),
]


def wait_closed(sock, limit=2.0):
    sock.settimeout(limit)
    try:
        while sock.recv(4096):
            pass
    except (socket.timeout, ConnectionResetError, OSError):
        pass
    sock.close()


def hostile(port):
    for _, data in HOSTILE:
        s = socket.create_connection(("127.0.0.1", port), timeout=2)
        try:
            s.sendall(data)
        except OSError:
            pass
        wait_closed(s)
    # Two bytes of a greeting, left open for 5 s behind our back.
    lingering = socket.create_connection(("127.0.0.1", port), timeout=2)
    lingering.sendall(SIGNATURE[:2])
    threading.Timer(5.0, lingering.close).start()
    for _ in range(300):
        s = socket.create_connection(("127.0.0.1", port), timeout=2)
        try:
            s.sendall(SIGNATURE[:3])
        except OSError:
            pass
        s.close()


def one_round(binary, ctx):
    pull = subprocess.Popen(
        [binary, "pull", "--bind", "tcp://127.0.0.1:*", "-n", "10", "--timeout", "20"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        line = pull.stderr.readline().decode()
        if not line.startswith("bound tcp://"):
            return f"no bound line: {line!r}"
        port = int(line.strip().rsplit(":", 1)[1])
        hostile(port)
        push = ctx.socket(zmq.PUSH)
        push.setsockopt(zmq.LINGER, 5000)
        push.connect(f"tcp://127.0.0.1:{port}")
        for i in range(10):
            push.send(f"message {i}".encode())
        try:
            out, _ = pull.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            pull.kill()
            out, _ = pull.communicate()
            got = len(out.splitlines())
            push.close(0)
            return f"timed out with {got} of 10 messages printed"
        push.close(0)
        lines = out.decode().splitlines()
        want = [f"message {i}" for i in range(10)]
        if pull.returncode != 0 or lines != want:
            return f"exit {pull.returncode}, printed {lines!r}"
        return None
    finally:
        if pull.poll() is None:
            pull.kill()
            pull.wait()


def main():
    binary, rounds = sys.argv[1], int(sys.argv[2])
    load = []
    if "--load" in sys.argv[3:]:
        for _ in range(os.cpu_count() or 1):
            load.append(subprocess.Popen([sys.executable, "-c", "while True: pass"]))
    ctx = zmq.Context()
    failed = 0
    start = time.time()
    try:
        for r in range(rounds):
            problem = one_round(binary, ctx)
            if problem:
                failed += 1
                print(f"round {r}: {problem}", flush=True)
    finally:
        for p in load:
            p.kill()
            p.wait()
        ctx.term()
    took = time.time() - start
    print(f"hostile_cli: {rounds - failed} passed, {failed} failed ({took:.1f} s)")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
