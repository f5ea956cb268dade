#!/usr/bin/env python3
"""Writes the hand-made seeds (files named seed-*) for the targets whose
input is not libzmq traffic: endpoints, socket options, the CLI's lines,
the fabric's control commands and round-trip page streams. Input layouts:
crates/fabriq-fuzz/src/lib.rs. Run: python3 fuzz/seeds.py"""

import os
import struct

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def write(target, name, data):
    d = os.path.join(ROOT, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, "seed-" + name), "wb") as f:
        f.write(data)


endpoints = [
    "tcp://127.0.0.1:5555", "tcp://*:*", "tcp://[::1]:5555", "tcp://localhost:0",
    "tcp://eth0;127.0.0.1:5555", "ipc:///tmp/fabriq.sock", "ipc://@abstract", "ipc://*",
    "inproc://name", "ofi+tcp://127.0.0.1:5555", "ofi://10.0.0.1:7000", "ofi+://h:1",
    "pgm://eth0;239.1.1.1:5555", "udp://x:1", "nothing",
]
for i, e in enumerate(endpoints):
    write("endpoint", "bind-%02d" % i, b"\x01" + e.encode())
    write("endpoint", "connect-%02d" % i, b"\x00" + e.encode())

z85_key = b"rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7"  # RFC 32's test key
opts = [
    (0, z85_key), (1, z85_key + b"\x00"), (2, bytes(range(32))), (0, b"short"),
    (3, b"topic"), (3, b""), (4, b"id-1"), (4, b"\x00generated"), (5, b"admin"),
    (6, b"secret"), (7, b"global"), (7, b"X-Name=value"), (8, b"HelloWorld"),
    (8, bytes([0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B])), (9, b"welcome"),
]
for i, (k, v) in enumerate(opts):
    write("socket_options", "%02d" % i, bytes([k]) + v)

lines = [
    (0, 0, 0, b"hello\tworld"), (0, 0, 1, b"0x00a1b2\tpayload"), (0, 0, 1, b"peer\tmsg"),
    (0, 0, 2, b"+topic"), (0, 0, 2, b"-topic"), (1, 0, 0, b"68656c6c6f\t00ff"),
    (2, 0, 0, b"aGVsbG8=\td29ybGQ"), (3, 0, 0, b'["a", {"hex": "00ff"}, {"base64": "aGk="}]'),
    (3, 0, 1, b'["peer", "msg"]'), (0, 4, 0, b"a::b:::c"), (0, 1, 0, b"one frame"),
]
for i, (f, s, fl, line) in enumerate(lines):
    write("cli_line", "%02d" % i, bytes([f, s, fl]) + line)

# fabric_control: [which, ...]
write("fabric_control", "credit", b"\x00\x00" + struct.pack(">I", 32))
write("fabric_control", "fin", b"\x00\x01" + struct.pack(">I", 7))
write("fabric_control", "ring", b"\x00\x02")
write("fabric_control", "rdvdone", b"\x00\x03" + struct.pack(">I", 1))
write("fabric_control", "other", b"\x00\x04PING\x00\x00\x10")
rdv = struct.pack(">IQQQB", 5, 1 << 20, 0x7F0000001000, 0xABCDEF, 1)
write("fabric_control", "rdv", b"\x01" + rdv)


def prop(name, value):
    return bytes([len(name)]) + name + struct.pack(">I", len(value)) + value


ready = (prop(b"Socket-Type", b"PUSH") + prop(b"X-Fabriq-Ofi-Address", b"0a0b0c0d")
         + prop(b"X-Fabriq-Ofi-Id", b"3") + prop(b"X-Fabriq-Ofi-Window", b"32")
         + prop(b"X-Fabriq-Ofi-Page", b"65600") + prop(b"X-Fabriq-Ofi-Rma", b"1")
         + prop(b"X-Fabriq-Ofi-Doorbell", b"fabriq-ofi-1234-1-0"))
write("fabric_control", "ready", b"\x02" + ready)
write("fabric_control", "fields", b"\x03\x00\x03\x20\x01\x00" + bytes(range(24)))

# fabric_pages round trip: [flags | 4, page, records...]
recs = b"\x05\x01hello\x03\x00abc" + b"\x00\x00" + b"\xff\x00" + rdv + b"\x10\x00" + b"y" * 16
write("fabric_pages", "roundtrip", b"\x04\x07" + recs)
write("fabric_pages", "roundtrip-limit", b"\x06\x01" + recs)
