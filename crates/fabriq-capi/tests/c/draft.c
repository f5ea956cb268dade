/* The draft API (built with ZMQ_BUILD_DRAFT_API): CLIENT/SERVER with
   routing ids, RADIO/DISH groups with zmq_join, the zmq_poller over a
   thread-safe socket and a descriptor, and zmq_timers. */
#include "check.h"
#include <unistd.h>

static int fired;

static void on_timer (int id, void *arg)
{
    (void) id;
    *(int *) arg += 1;
}

int main (void)
{
    void *ctx = zmq_ctx_new ();
    char ep[256];
    void *server = zmq_socket (ctx, ZMQ_SERVER);
    void *client = zmq_socket (ctx, ZMQ_CLIENT);
    bind_any (server, "tcp://127.0.0.1:*", ep, sizeof ep);
    CHECK (zmq_connect (client, ep) == 0);
    int safe = 0;
    size_t len = sizeof safe;
    CHECK (zmq_getsockopt (server, ZMQ_THREAD_SAFE, &safe, &len) == 0 && safe == 1);

    /* A poller over the SERVER and a pipe: times out, then sees each. */
    int fds[2];
    CHECK (pipe (fds) == 0);
    void *poller = zmq_poller_new ();
    CHECK (zmq_poller_add (poller, server, (void *) 1, ZMQ_POLLIN) == 0);
    CHECK (zmq_poller_add_fd (poller, fds[0], (void *) 2, ZMQ_POLLIN) == 0);
    FAILS_WITH (zmq_poller_add (poller, server, NULL, ZMQ_POLLIN), EINVAL);
    CHECK (zmq_poller_size (poller) == 2);
    zmq_poller_event_t ev;
    FAILS_WITH (zmq_poller_wait (poller, &ev, 20), EAGAIN);
    CHECK (write (fds[1], "x", 1) == 1);
    CHECK (zmq_poller_wait (poller, &ev, 5000) == 0);
    CHECK (ev.user_data == (void *) 2 && ev.fd == fds[0] && ev.events == ZMQ_POLLIN);
    CHECK (zmq_poller_remove_fd (poller, fds[0]) == 0);

    zmq_msg_t msg;
    CHECK (zmq_msg_init_size (&msg, 5) == 0);
    memcpy (zmq_msg_data (&msg), "hello", 5);
    CHECK (zmq_msg_send (&msg, client, 0) == 5);
    CHECK (zmq_poller_wait (poller, &ev, 5000) == 0);
    CHECK (ev.socket == server && ev.user_data == (void *) 1);
    CHECK (zmq_msg_init (&msg) == 0);
    CHECK (zmq_msg_recv (&msg, server, 0) == 5);
    uint32_t id = zmq_msg_routing_id (&msg);
    CHECK (id != 0);
    CHECK (zmq_msg_close (&msg) == 0);
    /* The reply goes back by routing id; an unknown id is EHOSTUNREACH. */
    CHECK (zmq_msg_init_size (&msg, 2) == 0);
    memcpy (zmq_msg_data (&msg), "hi", 2);
    CHECK (zmq_msg_set_routing_id (&msg, id + 1000) == 0);
    FAILS_WITH (zmq_msg_send (&msg, server, 0), EHOSTUNREACH);
    CHECK (zmq_msg_set_routing_id (&msg, id) == 0);
    CHECK (zmq_msg_send (&msg, server, 0) == 2);
    char buf[8];
    CHECK (zmq_recv (client, buf, sizeof buf, 0) == 2 && memcmp (buf, "hi", 2) == 0);
    CHECK (zmq_poller_destroy (&poller) == 0 && poller == NULL);

    /* RADIO/DISH over inproc: only the joined group arrives. */
    void *radio = zmq_socket (ctx, ZMQ_RADIO);
    void *dish = zmq_socket (ctx, ZMQ_DISH);
    CHECK (zmq_bind (dish, "inproc://draft-radio") == 0);
    CHECK (zmq_join (dish, "weather") == 0);
    FAILS_WITH (zmq_join (dish, "weather"), EINVAL);
    CHECK (zmq_connect (radio, "inproc://draft-radio") == 0);
    /* The join reaches the RADIO asynchronously: publish both groups
       until the DISH receives (10 ms per try, 10 s at most). */
    set_int (dish, ZMQ_RCVTIMEO, 10);
    int got = -1;
    CHECK (zmq_msg_init (&msg) == 0);
    for (int i = 0; i < 1000 && got < 0; i++) {
        zmq_msg_t out;
        CHECK (zmq_msg_init_size (&out, 4) == 0);
        memcpy (zmq_msg_data (&out), "rain", 4);
        CHECK (zmq_msg_set_group (&out, "sports") == 0);
        CHECK (zmq_msg_send (&out, radio, 0) == 4);
        CHECK (zmq_msg_init_size (&out, 4) == 0);
        memcpy (zmq_msg_data (&out), "snow", 4);
        CHECK (zmq_msg_set_group (&out, "weather") == 0);
        CHECK (zmq_msg_send (&out, radio, 0) == 4);
        got = zmq_msg_recv (&msg, dish, 0);
        CHECK (got == 4 || zmq_errno () == EAGAIN);
    }
    CHECK (got == 4);
    CHECK (memcmp (zmq_msg_data (&msg), "snow", 4) == 0);
    CHECK (strcmp (zmq_msg_group (&msg), "weather") == 0);
    CHECK (zmq_msg_close (&msg) == 0);

    /* Timers: due after their interval, cancelled ones never run. */
    void *timers = zmq_timers_new ();
    int a = zmq_timers_add (timers, 10, on_timer, &fired);
    int b = zmq_timers_add (timers, 10, on_timer, &fired);
    CHECK (a > 0 && b > 0 && a != b);
    CHECK (zmq_timers_cancel (timers, b) == 0);
    FAILS_WITH (zmq_timers_cancel (timers, b), EINVAL);
    long wait = zmq_timers_timeout (timers);
    CHECK (wait >= 0 && wait <= 10);
    usleep ((wait + 1) * 1000);
    CHECK (zmq_timers_execute (timers) == 0);
    CHECK (fired == 1);
    CHECK (zmq_timers_destroy (&timers) == 0 && timers == NULL);

    zmq_close (radio);
    zmq_close (dish);
    zmq_close (client);
    zmq_close (server);
    CHECK (zmq_ctx_term (ctx) == 0);
    printf ("ok\n");
    return 0;
}
