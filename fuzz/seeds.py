#!/usr/bin/env python3
"""Writes the hand-made seeds (files named seed-*) for the targets whose
input is not libzmq traffic: endpoints, socket options, the CLI's lines,
the fabric's control commands and round-trip page streams. Input layouts:
the targets' doc comments in crates/fabriq-fuzz/src/. Run: python3 fuzz/seeds.py"""

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

# fabric_ready: [mode, ...]. Mode 0: records [field, len, value]; fields
# 0 address, 1 token, 2 window, 3 page, 4 doorbell, 5 rma, 6 spinners (an
# older peer's, ignored), 7 encrypt, 8 id, 9 socket type.


def rec(field, value):
    return bytes([field, len(value)]) + value


good = (rec(9, b"PUSH") + rec(0, b"7f0000010fa0") + rec(1, b"9e3779b97f4a7c15")
        + rec(2, b"32") + rec(3, b"65600") + rec(5, b"268435456")
        + rec(4, b"fabriq-ofi-00112233445566778899aabbccddeeff")
        + rec(6, b"0123456789abcdef:1234:7") + rec(7, b"1"))
write("fabric_ready", "props", b"\x00" + good)
write("fabric_ready", "props-old", b"\x00" + rec(0, b"00") + rec(8, b"3") + rec(2, b"8")
      + rec(3, b"4096"))
write("fabric_ready", "props-bad", b"\x00" + rec(0, b"zz") + rec(1, b"0" * 16) + rec(2, b"0")
      + rec(3, b"63") + rec(4, b"a/b") + rec(5, b"0"))
# Mode 1: [flags, address_len/2, token, window, page, rma, doorbell_len,
# address, doorbell].
fields = (b"\x01\x07\x08" + struct.pack(">QIIQ", 0xA7, 32, 4096, 1 << 20) + b"\x04"
          + bytes(range(16)) + b"bell")
write("fabric_ready", "fields", fields)
write("fabric_ready", "fields-bounds", b"\x01\x00\x00" + struct.pack(">QIIQ", 0, 0, 63, 0)
      + b"\x00")


def sockaddr_in(ip, port):
    return struct.pack("=H", 2) + struct.pack(">H", port) + bytes(ip) + bytes(8)


def sockaddr_in6(ip, port):
    return struct.pack("=H", 10) + struct.pack(">H", port) + bytes(4) + bytes(ip) + bytes(4)


# Mode 2: [node, control peer, control local, announced]: node 0 tcp IPv4,
# 1 tcp IPv6, 2 shm, 3 psm2, 4 verbs IPv4, 5 sockets v4-mapped; IPs 0
# 127.0.0.1, 1 127.0.0.2, 2 10.0.0.1, 3 ::1, 4 ::ffff:127.0.0.1.
third = sockaddr_in([127, 0, 0, 2], 4000)
for name, data in [
    ("own-ip", b"\x00\x00\x00" + sockaddr_in([127, 0, 0, 1], 4000)),
    ("third-ip", b"\x00\x00\x00" + third),
    ("longer", b"\x00\x00\x00" + third + b"\x00"),
    ("shorter", b"\x00\x00\x00" + third[:8]),
    ("v6", b"\x01\x03\x03" + sockaddr_in6([0] * 15 + [1], 4000)),
    ("v6-mapped", b"\x05\x00\x00" + sockaddr_in6([0] * 10 + [255, 255, 127, 0, 0, 1], 1)),
    ("shm", b"\x02\x00\x00fi_shm://99"),
    ("shm-remote", b"\x02\x02\x00fi_shm://99"),
    ("psm2", b"\x03\x02\x00" + bytes([7] * 24)),
]:
    write("fabric_ready", "addr-" + name, data)

# fabric_flow: [window, caps, lent_kib4, lend_s, read_kib4, ops...]; see
# the honest sequence in crates/fabriq-fuzz/src/fabric_core.rs's tests.
head = bytes([32, 3, 64, 2, 64])
handshake = bytes([0, 0, 8, 1, 16, 16, 0, 7, 10, 0])
credit = bytes([1, 0, 4]) + struct.pack(">I", 8)
flow = (head + handshake + credit + bytes([3, 3, 3, 4, 12, 5, 16, 0, 10, 0, 2, 0, 64])
        + bytes([1, 3, 4, 0, 0, 0, 0, 2, 0, 64, 8, 0, 250, 6, 9, 7, 0, 0, 10, 0, 7, 10, 0])
        + bytes([1, 1, 8]) + struct.pack(">Q", 3) + bytes([11, 7, 11, 5]))
write("fabric_flow", "honest", flow)
write("fabric_flow", "loan-expires", flow + bytes([8, 1, 244]))
write("fabric_flow", "fin-drain", head + handshake + bytes([1, 1, 8]) + struct.pack(">Q", 2)
      + bytes([9, 11, 3, 8, 5, 0]))
write("fabric_flow", "credit-beyond", head + handshake + bytes([1, 0, 4]) + struct.pack(">I", 9))
write("fabric_flow", "huge-rdv", head + handshake + bytes([6, 1, 4, 0, 0]))
write("fabric_flow", "before-handshake", head + credit + bytes([6, 1, 1, 0, 0, 2, 0, 1]))
