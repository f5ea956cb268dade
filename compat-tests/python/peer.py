"""A pyzmq (libzmq) peer for compat-tests/tests/pyzmq.rs.

    peer.py MODE TYPE bind|connect ENDPOINT COUNT [IDENTITY]

With "bind" the socket binds tcp://127.0.0.1:* and prints
"ENDPOINT <endpoint>" first. Received messages are printed one per line
as frame descriptions: a frame of at most 64 bytes that is
UTF-8 is its text, any other frame "#<length>:<adler32>", joined by
" | " after "MSG ". The process
ends itself after 60 s whatever happens (the test kills it sooner when it
fails).

Modes:
  produce   PUSH/PUB/DEALER: send the standard stream of COUNT messages,
            then ["END"]. PUB first publishes ["SYNC"] every 10 ms until
            a line "go" arrives on stdin. Then waits for stdin to close.
  consume   PULL/SUB/DEALER: print messages until ["END"]. SUB subscribes
            to "a.", "SYNC" and "END", prints "READY" at the first SYNC
            and does not print SYNCs.
  rep       REP: answer COUNT requests with ["re"] + the request's frames.
  req       REQ: send COUNT requests of the standard stream, print each reply.
  router    ROUTER: take COUNT messages, print each (identity first), and
            answer each with [identity, "re:" + first frame].
  dealer    DEALER (with IDENTITY): send COUNT messages of the standard
            stream, print the COUNT replies.
"""

import select
import signal
import sys
import zlib

import zmq

BIG = 1 << 20


def big_frame(i):
    return bytes((k * 7 + i) & 0xFF for k in range(256)) * (BIG // 256)


def message(i):
    """Message i of the standard stream: topic "a." or "b." by parity,
    every 5th multipart with an empty frame, message 7 carries 1 MiB."""
    head = ("a.%d" if i % 2 == 0 else "b.%d") % i
    if i == 7:
        return [head.encode(), big_frame(i)]
    if i % 5 == 0:
        return [head.encode(), b"", b"part-%d" % i]
    return [head.encode()]


def describe(frame):
    if len(frame) <= 64:
        try:
            return frame.decode("utf-8")
        except UnicodeDecodeError:
            pass
    return "#%d:%d" % (len(frame), zlib.adler32(frame))


def show(frames):
    print("MSG " + " | ".join(describe(bytes(f)) for f in frames), flush=True)


def wait_stdin_line(timeout):
    ready, _, _ = select.select([sys.stdin], [], [], timeout)
    if ready:
        return sys.stdin.readline()
    return None


def main():
    signal.alarm(60)
    mode, stype, attach, endpoint, count = sys.argv[1:6]
    count = int(count)
    identity = sys.argv[6] if len(sys.argv) > 6 else None
    ctx = zmq.Context()
    s = ctx.socket(getattr(zmq, stype.upper()))
    s.rcvtimeo = 10000
    s.sndtimeo = 10000
    s.linger = 5000
    if identity:
        s.setsockopt(zmq.IDENTITY, identity.encode())
    if stype.upper() == "SUB":
        for topic in (b"a.", b"SYNC", b"END"):
            s.setsockopt(zmq.SUBSCRIBE, topic)
    if attach == "bind":
        s.bind("tcp://127.0.0.1:*")
        print("ENDPOINT", s.getsockopt(zmq.LAST_ENDPOINT).decode(), flush=True)
    else:
        s.connect(endpoint)

    if mode == "produce":
        if stype.upper() == "PUB":
            while wait_stdin_line(0.01) is None:
                s.send(b"SYNC")
        for i in range(count):
            s.send_multipart(message(i))
        s.send(b"END")
        sys.stdin.read()
    elif mode == "consume":
        ready = False
        while True:
            frames = s.recv_multipart()
            if frames == [b"SYNC"]:
                if not ready:
                    print("READY", flush=True)
                    ready = True
                continue
            show(frames)
            if frames == [b"END"]:
                break
    elif mode == "rep":
        for _ in range(count):
            frames = s.recv_multipart()
            s.send_multipart([b"re"] + frames)
    elif mode == "req":
        for i in range(count):
            s.send_multipart(message(i))
            show(s.recv_multipart())
    elif mode == "router":
        for _ in range(count):
            frames = s.recv_multipart()
            show(frames)
            s.send_multipart([frames[0], b"re:" + frames[1]])
    elif mode == "dealer":
        for i in range(count):
            s.send_multipart(message(i))
        for _ in range(count):
            show(s.recv_multipart())
    else:
        sys.exit("unknown mode " + mode)
    s.close()
    ctx.term()


if __name__ == "__main__":
    main()
