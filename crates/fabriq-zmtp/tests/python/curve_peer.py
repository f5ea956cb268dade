"""The libzmq (pyzmq) peer of fabriq-zmtp's tests/security_interop.rs.

Prints one line per fact the Rust test checks, flushed at once:
  port N                   the port a server bound (127.0.0.1, ephemeral)
  key PUBLIC SECRET        a key pair made by zmq.curve_keypair()
  recv PART|PART...        a message received (UTF-8)
  sub TOPIC                an XPUB subscription received
  zap MECH USER|KEY        a ZAP request the handler answered
  event NAME VALUE         a handshake monitor event
  done                     the script finished its part

Usage:
  keypair
  server curve REP|XPUB SERVER_PUBLIC SERVER_SECRET any|CLIENT_PUBLIC
  server plain REP USER PASSWORD
  client curve REQ PORT SERVER_PUBLIC gen|CLIENT_PUBLIC:CLIENT_SECRET
  client plain REQ PORT USER PASSWORD

Every wait is bounded (10 s); the script always exits.
"""

import os
import sys
import threading
import time

import zmq
from zmq.utils import z85
from zmq.utils.monitor import recv_monitor_message

WAIT_MS = 10000
EVENTS = {
    zmq.EVENT_HANDSHAKE_SUCCEEDED: "HANDSHAKE_SUCCEEDED",
    zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL: "HANDSHAKE_FAILED_NO_DETAIL",
    zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL: "HANDSHAKE_FAILED_PROTOCOL",
    zmq.EVENT_HANDSHAKE_FAILED_AUTH: "HANDSHAKE_FAILED_AUTH",
    zmq.EVENT_DISCONNECTED: "DISCONNECTED",
}
FAILED = {"HANDSHAKE_FAILED_NO_DETAIL", "HANDSHAKE_FAILED_PROTOCOL", "HANDSHAKE_FAILED_AUTH"}


def say(*parts):
    print(" ".join(str(p) for p in parts), flush=True)


def finish():
    say("done")
    sys.stdout.flush()
    os._exit(0)


def start_zap(ctx, check):
    """A hand-written ZAP handler (RFC 27): check(mechanism, credentials)
    returns the user id to allow, or None to refuse with 400."""
    zap = ctx.socket(zmq.REP)
    zap.linger = 0
    zap.bind("inproc://zeromq.zap.01")

    def run():
        while True:
            msg = zap.recv_multipart()
            version, request_id, _domain, _address, _identity, mechanism = msg[:6]
            credentials = msg[6:]
            shown = credentials[0] if mechanism == b"PLAIN" else z85.encode(credentials[0])
            say("zap", mechanism.decode(), shown.decode())
            user = check(mechanism, credentials)
            if user is None:
                zap.send_multipart([version, request_id, b"400", b"denied", b"", b""])
            else:
                zap.send_multipart([version, request_id, b"200", b"OK", user, b""])

    threading.Thread(target=run, daemon=True).start()


def watch(ctx, sock):
    monitor = sock.get_monitor_socket(
        zmq.EVENT_HANDSHAKE_SUCCEEDED
        | zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL
        | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL
        | zmq.EVENT_HANDSHAKE_FAILED_AUTH
        | zmq.EVENT_DISCONNECTED
    )
    return monitor


def serve(sock, monitor, kind, requests=1):
    """Runs until `requests` requests were answered (REP), or the XPUB got
    its subscription and published, or a handshake failed."""
    poller = zmq.Poller()
    poller.register(sock, zmq.POLLIN)
    poller.register(monitor, zmq.POLLIN)
    deadline = time.time() + WAIT_MS / 1000
    handled = 0
    while time.time() < deadline:
        ready = dict(poller.poll(100))
        if monitor in ready:
            ev = recv_monitor_message(monitor)
            name = EVENTS.get(ev["event"], str(ev["event"]))
            say("event", name, ev["value"])
            if name in FAILED:
                finish()
        if sock in ready:
            msg = sock.recv_multipart()
            if kind == "XPUB":
                say("sub", msg[0][1:].decode())
                for _ in range(3):
                    sock.send_multipart([b"other", b"x"])
                    sock.send_multipart([b"news", b"hello"])
                time.sleep(0.3)
                finish()
            say("recv", "|".join(p.decode() for p in msg))
            sock.send_multipart([b"echo:" + p for p in msg])
            handled += 1
            if handled >= requests:
                time.sleep(0.3)
                finish()
    say("timeout")
    finish()


def request(sock, monitor):
    sock.send(b"hello")
    poller = zmq.Poller()
    poller.register(sock, zmq.POLLIN)
    poller.register(monitor, zmq.POLLIN)
    deadline = time.time() + WAIT_MS / 1000
    while time.time() < deadline:
        ready = dict(poller.poll(100))
        if monitor in ready:
            ev = recv_monitor_message(monitor)
            name = EVENTS.get(ev["event"], str(ev["event"]))
            say("event", name, ev["value"])
            if name in FAILED:
                finish()
        if sock in ready:
            frame = sock.recv(copy=False)
            say("recv", frame.bytes.decode())
            finish()
    say("timeout")
    finish()


def main(argv):
    ctx = zmq.Context()
    if argv[0] == "keypair":
        public, secret = zmq.curve_keypair()
        say("key", public.decode(), secret.decode())
        finish()
    role, mech, kind = argv[0], argv[1], argv[2]
    sock = ctx.socket(getattr(zmq, kind))
    sock.linger = 1000
    sock.rcvtimeo = WAIT_MS
    sock.sndtimeo = WAIT_MS
    if role == "server":
        if mech == "curve":
            server_public, server_secret, allowed = argv[3], argv[4], argv[5]
            if allowed != "any":
                start_zap(
                    ctx,
                    lambda m, c: allowed.encode()
                    if m == b"CURVE" and z85.encode(c[0]) == allowed.encode()
                    else None,
                )
            sock.curve_server = True
            sock.curve_publickey = server_public.encode()
            sock.curve_secretkey = server_secret.encode()
        else:
            user, password = argv[3].encode(), argv[4].encode()
            start_zap(
                ctx,
                lambda m, c: c[0] if m == b"PLAIN" and c == [user, password] else None,
            )
            sock.plain_server = True
        monitor = watch(ctx, sock)
        say("port", sock.bind_to_random_port("tcp://127.0.0.1"))
        serve(sock, monitor, kind)
    else:
        port = argv[3]
        if mech == "curve":
            server_public, client = argv[4], argv[5]
            if client == "gen":
                public, secret = zmq.curve_keypair()
            else:
                public, secret = (k.encode() for k in client.split(":", 1))
            say("key", public.decode(), secret.decode())
            sock.curve_serverkey = server_public.encode()
            sock.curve_publickey = public
            sock.curve_secretkey = secret
        else:
            sock.plain_username = argv[4].encode()
            sock.plain_password = argv[5].encode()
        monitor = watch(ctx, sock)
        sock.connect("tcp://127.0.0.1:%s" % port)
        request(sock, monitor)


if __name__ == "__main__":
    main(sys.argv[1:])
