"""pyzmq (Debian's python3-zmq, unchanged) on fabriq's libzmq.so.5: the
patterns, options, polling, monitor events and errors. Prints "ok"."""
import os
import sys

import zmq
from which_lib import libzmq_path

prefix = os.environ["FABRIQ_PREFIX"]
assert libzmq_path().startswith(prefix), libzmq_path()
assert zmq.zmq_version_info()[:2] == (4, 3)
assert zmq.has("curve") and zmq.has("ipc")

ctx = zmq.Context()

# REQ/REP over tcp, with metadata.
rep = ctx.socket(zmq.REP)
req = ctx.socket(zmq.REQ)
for s in (rep, req):
    s.rcvtimeo = 5000
port = rep.bind_to_random_port("tcp://127.0.0.1")
req.connect("tcp://127.0.0.1:%d" % port)
for i in range(50):
    req.send_string("hello %d" % i)
    frame = rep.recv(copy=False)
    assert frame.bytes == b"hello %d" % i
    assert frame.get("Socket-Type") == "REQ"
    assert frame.get("Peer-Address") == "127.0.0.1"
    rep.send(b"world")
    assert req.recv() == b"world"

# Errors map to pyzmq's exceptions.
try:
    req.send(b"x")
    req.send(b"y")
    raise AssertionError("a second send on REQ succeeded")
except zmq.ZMQError as e:
    assert e.errno == zmq.EFSM, e
try:
    ctx.socket(zmq.PULL).recv(zmq.NOBLOCK)
    raise AssertionError("recv on an empty PULL succeeded")
except zmq.Again:
    pass

# PUSH/PULL multipart over ipc, with a large part.
pull = ctx.socket(zmq.PULL)
pull.rcvtimeo = 5000
pull.bind("ipc://*")
push = ctx.socket(zmq.PUSH)
push.connect(pull.last_endpoint)
big = os.urandom(1 << 20)
push.send_multipart([b"head", big])
assert pull.recv_multipart() == [b"head", big]

# PUB/SUB over inproc, with a Poller.
pub = ctx.socket(zmq.PUB)
pub.bind("inproc://py-pubsub")
sub = ctx.socket(zmq.SUB)
sub.connect("inproc://py-pubsub")
sub.setsockopt(zmq.SUBSCRIBE, b"a")
poller = zmq.Poller()
poller.register(sub, zmq.POLLIN)
got = None
for _ in range(500):
    pub.send(b"b-skip")
    pub.send(b"a-keep")
    if dict(poller.poll(10)).get(sub):
        got = sub.recv()
        break
assert got == b"a-keep", got

# Options round-trip with libzmq's types.
s = ctx.socket(zmq.DEALER)
s.setsockopt(zmq.IDENTITY, b"me")
assert s.getsockopt(zmq.IDENTITY) == b"me"
s.sndhwm = 7
assert s.sndhwm == 7
s.setsockopt(zmq.MAXMSGSIZE, 1 << 40)
assert s.getsockopt(zmq.MAXMSGSIZE) == 1 << 40
assert s.getsockopt(zmq.TYPE) == zmq.DEALER
assert s.getsockopt(zmq.FD) >= 0
public, secret = zmq.curve_keypair()
assert zmq.curve_public(secret) == public
from zmq.utils import z85  # noqa: E402

assert z85.decode(z85.encode(b"abcd" * 8)) == b"abcd" * 8

# CURVE between two fabriq sockets.
server_public, server_secret = zmq.curve_keypair()
client_public, client_secret = zmq.curve_keypair()
server = ctx.socket(zmq.PAIR)
server.curve_server = True
server.curve_secretkey = server_secret
server.rcvtimeo = 5000
port = server.bind_to_random_port("tcp://127.0.0.1")
client = ctx.socket(zmq.PAIR)
client.curve_serverkey = server_public
client.curve_publickey = client_public
client.curve_secretkey = client_secret
client.connect("tcp://127.0.0.1:%d" % port)
client.send(b"secret")
assert server.recv() == b"secret"

# Monitor events in libzmq's framing.
from zmq.utils.monitor import recv_monitor_message  # noqa: E402

watched = ctx.socket(zmq.PULL)
mon = watched.get_monitor_socket()
mon.rcvtimeo = 5000
watched.bind("tcp://127.0.0.1:*")
event = recv_monitor_message(mon)
assert event["event"] == zmq.EVENT_LISTENING, event
assert event["endpoint"] == watched.last_endpoint, event

ctx.destroy(linger=0)
print("ok")
sys.stdout.flush()
