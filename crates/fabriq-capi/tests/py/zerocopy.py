"""pyzmq's zero-copy sends on fabriq: each buffer's free callback (pyzmq
sends on its garbage-collector PUSH socket, under a mutex, from whatever
thread calls it) runs on fabriq's threads; every tracker must complete.
Several Python threads send at once. Prints "ok"."""
import os
import threading

import zmq

ctx = zmq.Context()
pull = ctx.socket(zmq.PULL)
pull.rcvtimeo = 10000
port = pull.bind_to_random_port("tcp://127.0.0.1")
payload = os.urandom(200_000)  # above pyzmq's copy threshold
per_thread, threads = 100, 4
trackers = []
lock = threading.Lock()


def sender():
    push = ctx.socket(zmq.PUSH)
    push.connect("tcp://127.0.0.1:%d" % port)
    mine = [push.send(payload, copy=False, track=True) for _ in range(per_thread)]
    with lock:
        trackers.extend(mine)
    push.close(linger=5000)


workers = [threading.Thread(target=sender) for _ in range(threads)]
for w in workers:
    w.start()
for _ in range(per_thread * threads):
    assert pull.recv(copy=False).buffer == memoryview(payload)
for w in workers:
    w.join(30)
    assert not w.is_alive()
for t in trackers:
    t.wait(10)
    assert t.done
ctx.destroy(linger=0)
print("ok")
