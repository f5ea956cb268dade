/* zmq_poll over sockets and a pipe; ZMQ_FD/ZMQ_EVENTS; zmq_msg_init_data
   free callbacks, called once per buffer when the last reference drops,
   from whichever thread; zmq_msg_copy/move; metadata (zmq_msg_gets). */
#include "check.h"
#include <poll.h>
#include <pthread.h>
#include <unistd.h>

static void *freed_counter;
static pthread_t main_thread;
static void *other_thread_frees;

static void free_fn (void *data, void *hint)
{
    CHECK (hint == (void *) 0x1234);
    free (data);
    zmq_atomic_counter_inc (freed_counter);
    if (!pthread_equal (pthread_self (), main_thread))
        zmq_atomic_counter_inc (other_thread_frees);
}

/* pyzmq's monitored queue passes zmq_msg_t structs by value (bitwise
   copies of the caller's); libzmq leaves a sent message empty, so the
   copies never share memory. Receives, copies and sends like it does. */
static void relay (void *in, void *out, zmq_msg_t msg, zmq_msg_t side)
{
    CHECK (zmq_msg_recv (&msg, in, 0) == 3);
    CHECK (zmq_msg_copy (&side, &msg) == 0);
    CHECK (zmq_msg_send (&side, out, ZMQ_SNDMORE) == 3);
    CHECK (zmq_msg_send (&msg, out, 0) == 3);
}

int main (void)
{
    main_thread = pthread_self ();
    freed_counter = zmq_atomic_counter_new ();
    other_thread_frees = zmq_atomic_counter_new ();
    void *ctx = zmq_ctx_new ();
    char ep[256];
    void *pull = zmq_socket (ctx, ZMQ_PULL);
    void *push = zmq_socket (ctx, ZMQ_PUSH);
    bind_any (pull, "tcp://127.0.0.1:*", ep, sizeof ep);
    CHECK (zmq_connect (push, ep) == 0);

    /* zmq_poll: a timeout with nothing, then a socket and a pipe. */
    int fds[2];
    CHECK (pipe (fds) == 0);
    zmq_pollitem_t items[2] = {{pull, 0, ZMQ_POLLIN, 0}, {NULL, fds[0], ZMQ_POLLIN, 0}};
    CHECK (zmq_poll (items, 2, 20) == 0);
    CHECK (write (fds[1], "p", 1) == 1);
    CHECK (zmq_poll (items, 2, 5000) == 1);
    CHECK (items[1].revents == ZMQ_POLLIN && items[0].revents == 0);
    CHECK (zmq_send (push, "hello", 5, 0) == 5);
    items[1].events = 0;
    CHECK (zmq_poll (items, 2, 5000) == 1);
    CHECK (items[0].revents == ZMQ_POLLIN);

    /* ZMQ_EVENTS says POLLIN now; after the receive it does not, and the
       ZMQ_FD is what to wait on for the next change (edge-triggered). */
    int events = 0;
    size_t len = sizeof events;
    CHECK (zmq_getsockopt (pull, ZMQ_EVENTS, &events, &len) == 0);
    CHECK (events & ZMQ_POLLIN);
    char buf[16];
    CHECK (zmq_recv (pull, buf, sizeof buf, 0) == 5);
    len = sizeof events;
    CHECK (zmq_getsockopt (pull, ZMQ_EVENTS, &events, &len) == 0);
    CHECK (!(events & ZMQ_POLLIN));
    int fd = -1;
    len = sizeof fd;
    CHECK (zmq_getsockopt (pull, ZMQ_FD, &fd, &len) == 0 && fd >= 0);
    CHECK (zmq_send (push, "again", 5, 0) == 5);
    int got = 0;
    for (int i = 0; i < 100 && !got; i++) {
        struct pollfd p = {fd, POLLIN, 0};
        poll (&p, 1, 100);
        len = sizeof events;
        CHECK (zmq_getsockopt (pull, ZMQ_EVENTS, &events, &len) == 0);
        got = events & ZMQ_POLLIN;
    }
    CHECK (got);
    CHECK (zmq_recv (pull, buf, sizeof buf, ZMQ_DONTWAIT) == 5);

    /* Messages passed by value, as pyzmq's monitored queue does. */
    {
        zmq_msg_t msg, side;
        CHECK (zmq_msg_init (&msg) == 0 && zmq_msg_init (&side) == 0);
        for (int i = 0; i < 3; i++) {
            /* The caller's own copy and send first, as pyzmq's queue does
               with its routing ids: `side` must hold nothing afterwards. */
            zmq_msg_t id;
            CHECK (zmq_msg_init_size (&id, 3) == 0);
            memcpy (zmq_msg_data (&id), "xyz", 3);
            CHECK (zmq_msg_copy (&side, &id) == 0);
            CHECK (zmq_msg_send (&side, push, 0) == 3);
            CHECK (zmq_msg_close (&id) == 0);
            char three[8];
            CHECK (zmq_recv (pull, three, sizeof three, 0) == 3);
            CHECK (zmq_send (push, "abc", 3, 0) == 3);
            relay (pull, push, msg, side);
            char two[8];
            CHECK (zmq_recv (pull, two, sizeof two, 0) == 3);
            CHECK (zmq_recv (pull, two, sizeof two, 0) == 3);
        }
        CHECK (zmq_msg_close (&msg) == 0 && zmq_msg_close (&side) == 0);
    }

    /* Zero-copy sends: each buffer is freed exactly once, after the I/O
       thread is done with it. */
    const int n = 50;
    for (int i = 0; i < n; i++) {
        size_t size = i % 2 ? 100000 : 10;
        char *data = malloc (size);
        memset (data, 'a' + i % 26, size);
        zmq_msg_t msg;
        CHECK (zmq_msg_init_data (&msg, data, size, free_fn, (void *) 0x1234) == 0);
        CHECK (zmq_msg_data (&msg) == data);
        CHECK (zmq_msg_send (&msg, push, 0) == (int) size);
        CHECK (zmq_msg_close (&msg) == 0);
    }
    for (int i = 0; i < n; i++) {
        zmq_msg_t msg;
        zmq_msg_init (&msg);
        CHECK (zmq_msg_recv (&msg, pull, 0) == (i % 2 ? 100000 : 10));
        CHECK (((char *) zmq_msg_data (&msg))[0] == 'a' + i % 26);
        if (i == 0) {
            const char *type = zmq_msg_gets (&msg, "Socket-Type");
            CHECK (type && strcmp (type, "PUSH") == 0);
            const char *peer = zmq_msg_gets (&msg, "Peer-Address");
            CHECK (peer && strcmp (peer, "127.0.0.1") == 0);
        }
        zmq_msg_close (&msg);
    }
    CHECK (zmq_close (push) == 0);
    CHECK (zmq_close (pull) == 0);
    CHECK (zmq_ctx_term (ctx) == 0);
    CHECK (zmq_atomic_counter_value (freed_counter) == n);

    /* Copy and move: one buffer, freed once, when the last copy closes. */
    char *data = malloc (64);
    zmq_msg_t a, b, c;
    CHECK (zmq_msg_init_data (&a, data, 64, free_fn, (void *) 0x1234) == 0);
    CHECK (zmq_msg_init (&b) == 0 && zmq_msg_init (&c) == 0);
    CHECK (zmq_msg_copy (&b, &a) == 0);
    CHECK (zmq_msg_move (&c, &a) == 0);
    CHECK (zmq_msg_size (&a) == 0 && zmq_msg_size (&c) == 64);
    CHECK (zmq_msg_data (&b) == data && zmq_msg_data (&c) == data);
    CHECK (zmq_msg_close (&a) == 0 && zmq_msg_close (&c) == 0);
    CHECK (zmq_atomic_counter_value (freed_counter) == n);
    CHECK (zmq_msg_close (&b) == 0);
    CHECK (zmq_atomic_counter_value (freed_counter) == n + 1);

    /* A free callback that runs on another thread. */
    data = malloc (8);
    CHECK (zmq_msg_init_data (&a, data, 8, free_fn, (void *) 0x1234) == 0);
    pthread_t t;
    CHECK (pthread_create (&t, NULL, (void *(*) (void *)) zmq_msg_close, &a) == 0);
    pthread_join (t, NULL);
    CHECK (zmq_atomic_counter_value (freed_counter) == n + 2);
    CHECK (zmq_atomic_counter_value (other_thread_frees) >= 1);
    zmq_atomic_counter_destroy (&freed_counter);
    CHECK (freed_counter == NULL);
    zmq_atomic_counter_destroy (&other_thread_frees);
    printf ("ok\n");
    return 0;
}
