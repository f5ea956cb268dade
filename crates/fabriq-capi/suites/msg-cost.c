/* The C side of suites/msg-cost.sh: libzmq's inproc_thr work (a PUSH
 * sends COUNT messages of SIZE bytes made with zmq_msg_init_size, a PULL
 * receives them into one zmq_msg_t) over inproc, written against zmq.h.
 * examples/msg_cost.rs does the same through the fabriq crate's API.
 *
 *   msg-cost MODE SIZE COUNT
 *
 * MODE "batch": one thread sends BATCH messages then receives them, over
 * and over: no thread ever waits, so the instruction count per message
 * does not depend on scheduling. MODE "threads": the sender in a second
 * thread, as inproc_thr. MODE "copy": as "batch", each message sent from
 * a buffer with zmq_send (which the Rust side's send(&[u8]) matches
 * allocation for allocation: both copy into fabriq's per-thread chunks). */
#include <string.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <zmq.h>

#define BATCH 500

static int size;
static int count;
static int copy;
static char buf[1 << 16];

static void check(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "%s: %s\n", what, zmq_strerror(zmq_errno()));
        exit(1);
    }
}

static void send_one(void *s)
{
    if (copy) {
        check(zmq_send(s, buf, size, 0) == size, "zmq_send");
        return;
    }
    zmq_msg_t msg;
    check(zmq_msg_init_size(&msg, size) == 0, "zmq_msg_init_size");
    check(zmq_sendmsg(s, &msg, 0) == size, "zmq_sendmsg");
    check(zmq_msg_close(&msg) == 0, "zmq_msg_close");
}

static void *sender(void *push)
{
    for (int i = 0; i < count; i++)
        send_one(push);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: msg-cost batch|threads|copy SIZE COUNT\n");
        return 2;
    }
    int threads = argv[1][0] == 't';
    copy = argv[1][0] == 'c';
    size = atoi(argv[2]);
    if (size < 0 || size > (int) sizeof buf) {
        fprintf(stderr, "SIZE: at most %d\n", (int) sizeof buf);
        return 2;
    }
    count = atoi(argv[3]);
    void *ctx = zmq_ctx_new();
    void *pull = zmq_socket(ctx, ZMQ_PULL);
    void *push = zmq_socket(ctx, ZMQ_PUSH);
    check(zmq_bind(pull, "inproc://cost") == 0, "zmq_bind");
    check(zmq_connect(push, "inproc://cost") == 0, "zmq_connect");
    zmq_msg_t msg;
    check(zmq_msg_init(&msg) == 0, "zmq_msg_init");
    pthread_t t;
    if (threads) {
        check(pthread_create(&t, NULL, sender, push) == 0, "pthread_create");
        for (int i = 0; i < count; i++)
            check(zmq_recvmsg(pull, &msg, 0) == size, "zmq_recvmsg");
        pthread_join(t, NULL);
    } else {
        for (int done = 0; done < count; done += BATCH) {
            int n = count - done < BATCH ? count - done : BATCH;
            for (int i = 0; i < n; i++)
                send_one(push);
            for (int i = 0; i < n; i++)
                check(zmq_recvmsg(pull, &msg, 0) == size, "zmq_recvmsg");
        }
    }
    check(zmq_msg_close(&msg) == 0, "zmq_msg_close");
    zmq_close(push);
    zmq_close(pull);
    zmq_ctx_term(ctx);
    return 0;
}
