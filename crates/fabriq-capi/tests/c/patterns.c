/* REQ/REP, PUSH/PULL and PUB/SUB over tcp, ipc, inproc and ofi+shm, with
   zmq_send/zmq_recv, zmq_msg_send/zmq_msg_recv and multipart. */
#include "check.h"

static void reqrep (void *ctx, const char *bind_ep)
{
    char ep[256];
    void *rep = zmq_socket (ctx, ZMQ_REP);
    void *req = zmq_socket (ctx, ZMQ_REQ);
    CHECK (rep && req);
    set_int (rep, ZMQ_RCVTIMEO, 5000);
    set_int (req, ZMQ_RCVTIMEO, 5000);
    bind_any (rep, bind_ep, ep, sizeof ep);
    CHECK (zmq_connect (req, ep) == 0);
    for (int i = 0; i < 100; i++) {
        char buf[32];
        int n = snprintf (buf, sizeof buf, "request %d", i);
        CHECK (zmq_send (req, buf, n, 0) == n);
        char got[32];
        CHECK (zmq_recv (rep, got, sizeof got, 0) == n);
        CHECK (memcmp (got, buf, n) == 0);
        /* The reply as a zmq_msg_t. */
        zmq_msg_t msg;
        CHECK (zmq_msg_init_size (&msg, 5) == 0);
        memcpy (zmq_msg_data (&msg), "reply", 5);
        CHECK (zmq_msg_send (&msg, rep, 0) == 5);
        CHECK (zmq_msg_close (&msg) == 0);
        CHECK (zmq_msg_init (&msg) == 0);
        CHECK (zmq_msg_recv (&msg, req, 0) == 5);
        CHECK (memcmp (zmq_msg_data (&msg), "reply", 5) == 0);
        CHECK (!zmq_msg_more (&msg));
        CHECK (zmq_msg_close (&msg) == 0);
    }
    /* A REQ must not send twice. */
    CHECK (zmq_send (req, "a", 1, 0) == 1);
    errno = 0;
    CHECK (zmq_send (req, "b", 1, 0) == -1 && zmq_errno () == EFSM);
    CHECK (zmq_close (req) == 0);
    CHECK (zmq_close (rep) == 0);
}

static void pushpull (void *ctx, const char *bind_ep)
{
    char ep[256];
    void *pull = zmq_socket (ctx, ZMQ_PULL);
    void *push = zmq_socket (ctx, ZMQ_PUSH);
    set_int (pull, ZMQ_RCVTIMEO, 5000);
    bind_any (pull, bind_ep, ep, sizeof ep);
    CHECK (zmq_connect (push, ep) == 0);
    /* Multipart, with a large part. */
    static char big[300000];
    memset (big, 'x', sizeof big);
    for (int i = 0; i < 20; i++) {
        CHECK (zmq_send (push, "head", 4, ZMQ_SNDMORE) == 4);
        CHECK (zmq_send (push, big, sizeof big, 0) == (int) sizeof big);
    }
    for (int i = 0; i < 20; i++) {
        char head[8];
        CHECK (zmq_recv (pull, head, sizeof head, 0) == 4);
        int more = 0;
        size_t len = sizeof more;
        CHECK (zmq_getsockopt (pull, ZMQ_RCVMORE, &more, &len) == 0);
        CHECK (more == 1 && len == sizeof (int));
        zmq_msg_t part;
        CHECK (zmq_msg_init (&part) == 0);
        CHECK (zmq_msg_recv (&part, pull, 0) == (int) sizeof big);
        CHECK (zmq_msg_size (&part) == sizeof big);
        CHECK (memcmp (zmq_msg_data (&part), big, sizeof big) == 0);
        CHECK (zmq_msg_close (&part) == 0);
    }
    /* A truncated receive reports the full size. */
    CHECK (zmq_send (push, "0123456789", 10, 0) == 10);
    char small[4];
    CHECK (zmq_recv (pull, small, sizeof small, 0) == 10);
    CHECK (memcmp (small, "0123", 4) == 0);
    CHECK (zmq_close (push) == 0);
    CHECK (zmq_close (pull) == 0);
}

static void pubsub (void *ctx, const char *bind_ep)
{
    char ep[256];
    void *pub = zmq_socket (ctx, ZMQ_PUB);
    void *sub = zmq_socket (ctx, ZMQ_SUB);
    bind_any (pub, bind_ep, ep, sizeof ep);
    CHECK (zmq_connect (sub, ep) == 0);
    CHECK (zmq_setsockopt (sub, ZMQ_SUBSCRIBE, "weather", 7) == 0);
    /* Publish until the subscription has arrived: poll the subscriber
       between sends, 10 s at most. */
    zmq_pollitem_t item = {sub, 0, ZMQ_POLLIN, 0};
    int seen = 0;
    for (int i = 0; i < 1000 && !seen; i++) {
        CHECK (zmq_send (pub, "sports 1", 8, 0) == 8);
        CHECK (zmq_send (pub, "weather 1", 9, 0) == 9);
        CHECK (zmq_poll (&item, 1, 10) >= 0);
        seen = item.revents & ZMQ_POLLIN;
    }
    CHECK (seen);
    char buf[32];
    int n = zmq_recv (sub, buf, sizeof buf, 0);
    CHECK (n == 9 && memcmp (buf, "weather 1", 9) == 0);
    CHECK (zmq_close (sub) == 0);
    CHECK (zmq_close (pub) == 0);
}

int main (void)
{
    void *ctx = zmq_ctx_new ();
    CHECK (ctx);
    /* The same code over a libfabric endpoint: only the string differs. */
    const char *eps[] = {"tcp://127.0.0.1:*", "ipc://*", "inproc://patterns",
                         "ofi+shm://127.0.0.1:*"};
    for (int i = 0; i < 4; i++) {
        reqrep (ctx, eps[i]);
        pushpull (ctx, eps[i]);
        pubsub (ctx, eps[i]);
    }
    CHECK (zmq_ctx_term (ctx) == 0);
    printf ("ok\n");
    return 0;
}
