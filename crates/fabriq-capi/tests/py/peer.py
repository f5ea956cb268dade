"""One side of a two-process exchange: `peer.py server ENDPOINT N` binds
ENDPOINT, prints the endpoint it got, and answers N requests;
`peer.py client ENDPOINT N` sends N requests and checks the replies.
Each prints the libzmq it loaded, then "ok"."""
import sys

import zmq
from which_lib import libzmq_path

role, endpoint, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
print("lib", libzmq_path(), flush=True)
ctx = zmq.Context()
if role == "server":
    s = ctx.socket(zmq.REP)
    s.rcvtimeo = 20000
    s.bind(endpoint)
    print("endpoint", s.last_endpoint.decode(), flush=True)
    for _ in range(n):
        parts = s.recv_multipart()
        s.send_multipart([b"re:" + parts[0]] + parts[1:])
else:
    s = ctx.socket(zmq.REQ)
    s.rcvtimeo = 20000
    s.connect(endpoint)
    for i in range(n):
        body = b"x" * (i * 997 % 70000)
        s.send_multipart([b"%d" % i, body])
        assert s.recv_multipart() == [b"re:%d" % i, body]
s.close(linger=1000)
ctx.term()
print("ok", flush=True)
