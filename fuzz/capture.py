#!/usr/bin/env python3
"""Captures real libzmq traffic as seed corpora for the fuzz targets.

Two pyzmq (libzmq 4.3.5) sockets talk through a recording TCP relay on
loopback: the connecting socket reaches the relay, the relay reaches the
bound socket, and every byte each side sends is recorded. For each
mechanism (NULL, PLAIN, CURVE) and a few socket type pairs the peers
finish their handshake and exchange some messages (single and multipart,
empty, 300 bytes, subscriptions). Each direction's byte stream then
becomes a seed, with the few header bytes each target's input layout
wants (see the targets' doc comments in crates/fabriq-fuzz/src/):

  greeting/         the first 64 bytes of each stream
  frame/            each NULL stream after its greeting (the frames)
  handshake_null/   each NULL stream whole, for our side of the right type
  handshake_plain/  each PLAIN stream; the client's against our server
  handshake_curve/  each CURVE stream, with the fixed test keys of
                    fabriq_fuzz (CURVE_SERVER_SECRET, CURVE_CLIENT_SECRET),
                    so a libzmq client's HELLO opens at our server
  fabric_pages/     NULL message frames as a page stream

Run:  $(bash scripts/python-env) fuzz/capture.py   (from the repository root)
It rewrites the files named capture-* under fuzz/corpus/ and leaves the
others (hand-written seeds, crash inputs) alone.
"""

import os
import socket
import threading
import time

import zmq
import zmq.auth
from zmq.auth.thread import ThreadAuthenticator
from zmq.utils import z85

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")

SERVER_SECRET = z85.encode(bytes([0x11] * 32))
CLIENT_SECRET = z85.encode(bytes([0x22] * 32))
SERVER_PUBLIC = zmq.curve_public(SERVER_SECRET)
CLIENT_PUBLIC = zmq.curve_public(CLIENT_SECRET)

# fabriq_zmtp::SocketType::ALL order (libzmq's numbering).
TYPE_INDEX = {
    zmq.PAIR: 0, zmq.PUB: 1, zmq.SUB: 2, zmq.REQ: 3, zmq.REP: 4,
    zmq.DEALER: 5, zmq.ROUTER: 6, zmq.PULL: 7, zmq.PUSH: 8,
    zmq.XPUB: 9, zmq.XSUB: 10,
}
NAMES = {
    zmq.PAIR: "pair", zmq.PUB: "pub", zmq.SUB: "sub", zmq.REQ: "req",
    zmq.REP: "rep", zmq.DEALER: "dealer", zmq.ROUTER: "router",
    zmq.PULL: "pull", zmq.PUSH: "push", zmq.XPUB: "xpub", zmq.XSUB: "xsub",
}


class Relay:
    """One TCP connection relayed and recorded both ways."""

    def __init__(self, target_port):
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(1)
        self.port = self.listener.getsockname()[1]
        self.target_port = target_port
        self.streams = {"c2s": bytearray(), "s2c": bytearray()}
        threading.Thread(target=self._run, daemon=True).start()

    def _pump(self, src, dst, name):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                self.streams[name] += data
                dst.sendall(data)
        except OSError:
            pass
        finally:
            try:
                dst.shutdown(socket.SHUT_WR)
            except OSError:
                pass

    def _run(self):
        client, _ = self.listener.accept()
        server = socket.create_connection(("127.0.0.1", self.target_port))
        threading.Thread(target=self._pump, args=(client, server, "c2s"), daemon=True).start()
        threading.Thread(target=self._pump, args=(server, client, "s2c"), daemon=True).start()


def configure(sock, mech, server):
    if mech == "PLAIN":
        if server:
            sock.plain_server = True
        else:
            sock.plain_username = b"admin"
            sock.plain_password = b"secret"
    elif mech == "CURVE":
        if server:
            sock.curve_server = True
            sock.curve_secretkey = SERVER_SECRET
            sock.curve_publickey = SERVER_PUBLIC
        else:
            sock.curve_serverkey = SERVER_PUBLIC
            sock.curve_secretkey = CLIENT_SECRET
            sock.curve_publickey = CLIENT_PUBLIC


def exchange(ctx, mech, bind_type, connect_type):
    """Runs one conversation; returns (client stream, server stream)."""
    srv = ctx.socket(bind_type)
    cli = ctx.socket(connect_type)
    for s in (srv, cli):
        s.linger = 0
        s.rcvtimeo = 3000
    configure(srv, mech, True)
    configure(cli, mech, False)
    if connect_type in (zmq.DEALER, zmq.REQ, zmq.ROUTER):
        cli.identity = b"client-1"
    port = srv.bind_to_random_port("tcp://127.0.0.1")
    relay = Relay(port)
    cli.connect("tcp://127.0.0.1:%d" % relay.port)
    msgs = [[b"hello"], [b"multi", b"part", b""], [b"x" * 300], [b""]]
    if bind_type in (zmq.PUB, zmq.XPUB):
        cli.setsockopt(zmq.SUBSCRIBE, b"")
        cli.setsockopt(zmq.SUBSCRIBE, b"topic")
        if bind_type == zmq.XPUB:
            srv.recv_multipart()
        time.sleep(0.3)
        for m in msgs:
            srv.send_multipart(m)
        for _ in msgs:
            cli.recv_multipart()
        cli.setsockopt(zmq.UNSUBSCRIBE, b"topic")
        time.sleep(0.1)
    elif bind_type == zmq.PULL:
        for m in msgs:
            cli.send_multipart(m)
        for _ in msgs:
            srv.recv_multipart()
    elif bind_type == zmq.REP:
        for m in msgs:
            cli.send_multipart(m)
            srv.send_multipart(srv.recv_multipart())
            cli.recv_multipart()
    elif bind_type == zmq.ROUTER:
        for m in msgs:
            cli.send_multipart(m)
            got = srv.recv_multipart()
            srv.send_multipart(got)
            cli.recv_multipart()
    else:  # PAIR
        for m in msgs:
            cli.send_multipart(m)
            srv.send_multipart(srv.recv_multipart())
            cli.recv_multipart()
    time.sleep(0.2)
    cli.close()
    srv.close()
    time.sleep(0.2)
    return bytes(relay.streams["c2s"]), bytes(relay.streams["s2c"])


def write(target, name, data):
    d = os.path.join(ROOT, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "capture-" + name), "wb") as f:
        f.write(data)


def clear():
    for target in os.listdir(ROOT) if os.path.isdir(ROOT) else []:
        d = os.path.join(ROOT, target)
        for f in os.listdir(d):
            if f.startswith("capture-"):
                os.remove(os.path.join(d, f))


def main():
    clear()
    ctx = zmq.Context()
    auth = ThreadAuthenticator(ctx)
    auth.start()
    auth.configure_plain(domain="*", passwords={"admin": "secret"})
    auth.configure_curve(domain="*", location=zmq.auth.CURVE_ALLOW_ANY)
    pairs = [
        (zmq.ROUTER, zmq.DEALER),
        (zmq.REP, zmq.REQ),
        (zmq.PULL, zmq.PUSH),
        (zmq.XPUB, zmq.SUB),
        (zmq.PAIR, zmq.PAIR),
    ]
    for mech in ("NULL", "PLAIN", "CURVE"):
        for bind_type, connect_type in pairs:
            c2s, s2c = exchange(ctx, mech, bind_type, connect_type)
            tag = "%s-%s-%s" % (mech.lower(), NAMES[connect_type], NAMES[bind_type])
            # Our side plays the receiving end: it reads the client's
            # stream as the server (bind_type), the server's as the client.
            for direction, stream, ours, server_side in (
                ("c2s", c2s, bind_type, 1),
                ("s2c", s2c, connect_type, 0),
            ):
                assert len(stream) >= 64, (tag, direction, len(stream))
                name = "%s-%s" % (tag, direction)
                ty = TYPE_INDEX[ours]
                if mech == "NULL":
                    write("greeting", name, b"\x00" + stream[:64])
                    write("greeting", name + "-step3", b"\x02" + stream[:64])
                    write("frame", name, b"\x00\x00" + stream[64:])
                    write("handshake_null", name, bytes([0, ty, 63]) + stream)
                    write("handshake_null", name + "-auth", bytes([4 | 8, ty, 6]) + stream)
                    write("handshake_null", name + "-bytewise", bytes([0, ty, 0]) + stream)
                    write("fabric_pages", name, bytes([server_side, 63]) + stream[64:])
                else:
                    target = "handshake_" + mech.lower()
                    # Our server authenticates and accepts, as the capture's
                    # ZAP handler did.
                    flags = server_side | (4 | 8 if server_side else 0)
                    write(target, name, bytes([flags, ty, 63]) + stream)
                    write(target, name + "-bytewise", bytes([flags, ty, 0]) + stream)
                    write("greeting", name, b"\x05" + stream[:64])
            print("captured %-24s c2s %5d bytes, s2c %5d bytes" % (tag, len(c2s), len(s2c)))
    auth.stop()
    ctx.term()


if __name__ == "__main__":
    main()
