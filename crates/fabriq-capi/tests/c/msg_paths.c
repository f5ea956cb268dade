/* The paths a stream of messages takes through the C layer, at each size
   it treats apart: zmq_send's copies (held inline in the frame up to 23
   bytes, cut from the socket's chunk up to 4096, allocated each beyond),
   zmq_msg_init_size's messages (held in the zmq_msg_t, cut from the
   thread's chunks up to 4096), zmq_msg_recv and zmq_recvmsg into one
   message over and over; and their failures and waits: EAGAIN at once,
   a receive that waits for a frame, a receive that times out, a send
   that cannot go. */
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

static const size_t sizes[] = {0, 1, 23, 24, 64, 1000, 4095, 4096, 4097, 70000};
#define NSIZES (sizeof sizes / sizeof sizes[0])
#define MAXSIZE 70000

static unsigned char buf[MAXSIZE];

static unsigned char byte_of (unsigned seed, size_t i)
{
    return (unsigned char) (seed * 31u + i * 7u + (i >> 8));
}

static void fill (unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = byte_of (seed, i);
}

static int holds (zmq_msg_t *m, size_t n, unsigned seed)
{
    const unsigned char *p = zmq_msg_data (m);
    if (zmq_msg_size (m) != n)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (p[i] != byte_of (seed, i))
            return 0;
    return 1;
}

/* ROUNDS batches of every size, each sent once with zmq_send and once
   with zmq_msg_init_size, received into one message (alternately with
   zmq_msg_recv and zmq_recvmsg); each frame's bytes checked. */
static void stream (void *push, void *pull, int rounds)
{
    zmq_msg_t in;
    CHECK (zmq_msg_init (&in) == 0);
    for (int r = 0; r < rounds; r++) {
        for (size_t k = 0; k < NSIZES; k++) {
            unsigned seed = (unsigned) (r * NSIZES + k) * 2u;
            fill (buf, sizes[k], seed);
            CHECK (zmq_send (push, buf, sizes[k], 0) == (int) sizes[k]);
            /* The frame is a copy: the caller's buffer is free again. */
            memset (buf, 0xEE, sizes[k]);
            zmq_msg_t out;
            CHECK (zmq_msg_init_size (&out, sizes[k]) == 0);
            fill (zmq_msg_data (&out), sizes[k], seed + 1);
            CHECK (zmq_msg_send (&out, push, 0) == (int) sizes[k]);
            CHECK (zmq_msg_size (&out) == 0);
            CHECK (zmq_msg_close (&out) == 0);
        }
        for (size_t k = 0; k < NSIZES; k++) {
            unsigned seed = (unsigned) (r * NSIZES + k) * 2u;
            for (unsigned j = 0; j < 2; j++) {
                int n = (j == 0) ? zmq_msg_recv (&in, pull, 0)
                                 : zmq_recvmsg (pull, &in, 0);
                CHECK (n == (int) sizes[k]);
                CHECK (holds (&in, sizes[k], seed + j));
                CHECK (zmq_msg_more (&in) == 0);
            }
        }
    }
    /* Nothing left: EAGAIN at once, into a message that has received
       before and into a fresh one; both stay usable. */
    FAILS_WITH (zmq_msg_recv (&in, pull, ZMQ_DONTWAIT), EAGAIN);
    zmq_msg_t fresh;
    CHECK (zmq_msg_init (&fresh) == 0);
    FAILS_WITH (zmq_msg_recv (&fresh, pull, ZMQ_DONTWAIT), EAGAIN);
    CHECK (zmq_msg_size (&fresh) == 0);
    CHECK (zmq_send (push, "after", 5, 0) == 5);
    CHECK (zmq_msg_recv (&in, pull, 0) == 5);
    CHECK (memcmp (zmq_msg_data (&in), "after", 5) == 0);
    CHECK (zmq_send (push, "fresh", 5, 0) == 5);
    CHECK (zmq_msg_recv (&fresh, pull, 0) == 5);
    CHECK (memcmp (zmq_msg_data (&fresh), "fresh", 5) == 0);
    CHECK (zmq_msg_close (&fresh) == 0);
    CHECK (zmq_msg_close (&in) == 0);
}

static double now_ms (void)
{
    struct timespec t;
    clock_gettime (CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

struct late {
    void *push;
    size_t size;
};

/* Sends one frame of `size` bytes (seed 7) after 100 ms. */
static void *send_late (void *arg)
{
    struct late *l = arg;
    static unsigned char late_buf[MAXSIZE];
    usleep (100 * 1000);
    fill (late_buf, l->size, 7);
    CHECK (zmq_send (l->push, late_buf, l->size, 0) == (int) l->size);
    return NULL;
}

/* A receive into a message that has a record waits for a frame sent
   later, and one with RCVTIMEO gives up with EAGAIN. */
static void waits (void *push, void *pull)
{
    zmq_msg_t in;
    CHECK (zmq_msg_init (&in) == 0);
    CHECK (zmq_send (push, "first", 5, 0) == 5);
    CHECK (zmq_msg_recv (&in, pull, 0) == 5);
    struct late l = {push, 64};
    pthread_t t;
    CHECK (pthread_create (&t, NULL, send_late, &l) == 0);
    CHECK (zmq_msg_recv (&in, pull, 0) == 64);
    CHECK (holds (&in, 64, 7));
    CHECK (pthread_join (t, NULL) == 0);

    set_int (pull, ZMQ_RCVTIMEO, 50);
    double start = now_ms ();
    FAILS_WITH (zmq_msg_recv (&in, pull, 0), EAGAIN);
    CHECK (now_ms () - start >= 40);
    set_int (pull, ZMQ_RCVTIMEO, -1);
    CHECK (zmq_msg_close (&in) == 0);
}

/* A send with no peer to take it fails with EAGAIN at every size, and
   nothing of it arrives once a peer connects. */
static void cannot_send (void *ctx)
{
    void *push = zmq_socket (ctx, ZMQ_PUSH);
    CHECK (push);
    for (size_t k = 0; k < NSIZES; k++) {
        fill (buf, sizes[k], 99);
        FAILS_WITH (zmq_send (push, buf, sizes[k], ZMQ_DONTWAIT), EAGAIN);
        zmq_msg_t out;
        CHECK (zmq_msg_init_size (&out, sizes[k]) == 0);
        fill (zmq_msg_data (&out), sizes[k], 98);
        FAILS_WITH (zmq_msg_send (&out, push, ZMQ_DONTWAIT), EAGAIN);
        /* Kept intact by the failed send. */
        CHECK (holds (&out, sizes[k], 98));
        CHECK (zmq_msg_close (&out) == 0);
    }
    set_int (push, ZMQ_SNDTIMEO, 50);
    double start = now_ms ();
    FAILS_WITH (zmq_send (push, buf, 64, 0), EAGAIN);
    CHECK (now_ms () - start >= 40);
    void *pull = zmq_socket (ctx, ZMQ_PULL);
    CHECK (pull);
    CHECK (zmq_bind (pull, "inproc://cannot-send") == 0);
    CHECK (zmq_connect (push, "inproc://cannot-send") == 0);
    CHECK (zmq_send (push, "only", 4, 0) == 4);
    char got[8];
    CHECK (zmq_recv (pull, got, sizeof got, 0) == 4);
    CHECK (memcmp (got, "only", 4) == 0);
    FAILS_WITH (zmq_recv (pull, got, sizeof got, ZMQ_DONTWAIT), EAGAIN);
    CHECK (zmq_close (push) == 0);
    CHECK (zmq_close (pull) == 0);
}

/* Frames cut from a socket's chunk outlive the socket: sent, the sender
   closed, then received. */
static void outlive_sender (void *ctx)
{
    void *pull = zmq_socket (ctx, ZMQ_PULL);
    void *push = zmq_socket (ctx, ZMQ_PUSH);
    CHECK (pull && push);
    CHECK (zmq_bind (pull, "inproc://outlive") == 0);
    CHECK (zmq_connect (push, "inproc://outlive") == 0);
    for (unsigned i = 0; i < 600; i++) {
        fill (buf, 100, i);
        CHECK (zmq_send (push, buf, 100, 0) == 100);
    }
    CHECK (zmq_close (push) == 0);
    zmq_msg_t in;
    CHECK (zmq_msg_init (&in) == 0);
    for (unsigned i = 0; i < 600; i++) {
        CHECK (zmq_msg_recv (&in, pull, 0) == 100);
        CHECK (holds (&in, 100, i));
    }
    CHECK (zmq_msg_close (&in) == 0);
    CHECK (zmq_close (pull) == 0);
}

int main (int argc, char **argv)
{
    int rounds = argc > 1 ? atoi (argv[1]) : 40;
    void *ctx = zmq_ctx_new ();
    CHECK (ctx);
    const char *eps[] = {"inproc://msg-paths", "tcp://127.0.0.1:*"};
    for (int e = 0; e < 2; e++) {
        void *pull = zmq_socket (ctx, ZMQ_PULL);
        void *push = zmq_socket (ctx, ZMQ_PUSH);
        CHECK (pull && push);
        char ep[256];
        bind_any (pull, eps[e], ep, sizeof ep);
        CHECK (zmq_connect (push, ep) == 0);
        stream (push, pull, rounds);
        waits (push, pull);
        CHECK (zmq_close (push) == 0);
        CHECK (zmq_close (pull) == 0);
    }
    cannot_send (ctx);
    outlive_sender (ctx);
    CHECK (zmq_ctx_term (ctx) == 0);
    printf ("ok\n");
    return 0;
}
