/* libzmq's errno semantics: null and closed handles, wrong option sizes,
   EAGAIN, EFSM, ETERM (a blocked call woken by zmq_ctx_term on another
   thread), bad endpoints. None of these may crash. */
#include "check.h"
#include <pthread.h>
#include <stdint.h>
#include <signal.h>
#include <sys/time.h>

static void on_alarm (int sig)
{
    (void) sig;
}

/* Sends SIGALRM to this process in 100 ms. */
static void alarm_soon (void)
{
    struct itimerval t = {{0, 0}, {0, 100000}};
    CHECK (setitimer (ITIMER_REAL, &t, NULL) == 0);
}

static void *blocked_recv (void *s)
{
    char buf[8];
    int rc = zmq_recv (s, buf, sizeof buf, 0);
    intptr_t e = rc == -1 ? zmq_errno () : 0;
    zmq_close (s);
    return (void *) e;
}

int main (void)
{
    /* Null handles. */
    FAILS_WITH (zmq_socket (NULL, ZMQ_PAIR) == NULL ? -1 : 0, EFAULT);
    FAILS_WITH (zmq_close (NULL), ENOTSOCK);
    FAILS_WITH (zmq_bind (NULL, "inproc://x"), ENOTSOCK);
    FAILS_WITH (zmq_connect (NULL, "inproc://x"), ENOTSOCK);
    FAILS_WITH (zmq_send (NULL, "x", 1, 0), ENOTSOCK);
    FAILS_WITH (zmq_recv (NULL, NULL, 0, 0), ENOTSOCK);
    FAILS_WITH (zmq_setsockopt (NULL, ZMQ_LINGER, NULL, 0), ENOTSOCK);
    FAILS_WITH (zmq_ctx_term (NULL), EFAULT);
    FAILS_WITH (zmq_ctx_set (NULL, ZMQ_IO_THREADS, 1), EFAULT);
    FAILS_WITH (zmq_msg_init (NULL), EFAULT);
    FAILS_WITH (zmq_msg_close (NULL), EFAULT);
    FAILS_WITH (zmq_msg_send (NULL, NULL, 0), ENOTSOCK);

    void *ctx = zmq_ctx_new ();
    CHECK (ctx);
    void *s = zmq_socket (ctx, ZMQ_PAIR);
    CHECK (s);
    FAILS_WITH (zmq_socket (ctx, 12345) == NULL ? -1 : 0, EINVAL);

    /* Option sizes and values. */
    int v = 100;
    int64_t big = 1000;
    FAILS_WITH (zmq_setsockopt (s, ZMQ_LINGER, &v, 2), EINVAL);
    FAILS_WITH (zmq_setsockopt (s, ZMQ_LINGER, &big, sizeof big), EINVAL);
    FAILS_WITH (zmq_setsockopt (s, ZMQ_MAXMSGSIZE, &v, sizeof v), EINVAL);
    CHECK (zmq_setsockopt (s, ZMQ_MAXMSGSIZE, &big, sizeof big) == 0);
    FAILS_WITH (zmq_setsockopt (s, 9999, &v, sizeof v), EINVAL);
    FAILS_WITH (zmq_setsockopt (s, ZMQ_SNDHWM, &(int){-1}, sizeof (int)), EINVAL);
    /* As libzmq: an empty SOCKS proxy is EINVAL, none (NULL) clears it;
       malformed accept filters and IPC filters of the wrong size too. */
    FAILS_WITH (zmq_setsockopt (s, ZMQ_SOCKS_PROXY, "", 0), EINVAL);
    CHECK (zmq_setsockopt (s, ZMQ_SOCKS_PROXY, NULL, 0) == 0);
    FAILS_WITH (zmq_setsockopt (s, ZMQ_TCP_ACCEPT_FILTER, "0.0.0.0/33", 10), EINVAL);
    CHECK (zmq_setsockopt (s, ZMQ_TCP_ACCEPT_FILTER, NULL, 0) == 0);
    FAILS_WITH (zmq_setsockopt (s, ZMQ_IPC_FILTER_UID, &(char){0}, 1), EINVAL);
    CHECK (zmq_setsockopt (s, ZMQ_IPC_FILTER_UID, NULL, 0) == 0);
    char long_id[256];
    memset (long_id, 'x', sizeof long_id);
    FAILS_WITH (zmq_setsockopt (s, ZMQ_CONNECT_ROUTING_ID, long_id, sizeof long_id), EINVAL);
    size_t len = 2;
    FAILS_WITH (zmq_getsockopt (s, ZMQ_LINGER, &v, &len), EINVAL);
    len = sizeof v;
    CHECK (zmq_setsockopt (s, ZMQ_LINGER, &(int){250}, sizeof (int)) == 0);
    CHECK (zmq_getsockopt (s, ZMQ_LINGER, &v, &len) == 0 && v == 250 && len == sizeof v);
    len = sizeof big;
    CHECK (zmq_getsockopt (s, ZMQ_MAXMSGSIZE, &big, &len) == 0 && big == 1000 && len == 8);
    char text[4];
    len = sizeof text;
    CHECK (zmq_bind (s, "tcp://127.0.0.1:*") == 0);
    FAILS_WITH (zmq_getsockopt (s, ZMQ_LAST_ENDPOINT, text, &len), EINVAL);
    FAILS_WITH (zmq_getsockopt (s, ZMQ_LINGER, &v, NULL), EFAULT);
    int type = -1;
    len = sizeof type;
    CHECK (zmq_getsockopt (s, ZMQ_TYPE, &type, &len) == 0 && type == ZMQ_PAIR);

    /* Bad endpoints. */
    FAILS_WITH (zmq_bind (s, NULL), EINVAL);
    FAILS_WITH (zmq_bind (s, "nonsense"), EINVAL);
    FAILS_WITH (zmq_connect (s, "carrier-pigeon://x"), EPROTONOSUPPORT);

    /* EAGAIN: nothing to receive, no one to send to. */
    char buf[8];
    FAILS_WITH (zmq_recv (s, buf, sizeof buf, ZMQ_DONTWAIT), EAGAIN);
    FAILS_WITH (zmq_send (s, "x", 1, ZMQ_DONTWAIT), EAGAIN);
    CHECK (zmq_setsockopt (s, ZMQ_RCVTIMEO, &(int){50}, sizeof (int)) == 0);
    FAILS_WITH (zmq_recv (s, buf, sizeof buf, 0), EAGAIN);

    /* A signal interrupts a blocking receive and zmq_poll: EINTR, as in
       libzmq (the handler is installed without SA_RESTART). */
    struct sigaction sa;
    memset (&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    CHECK (sigaction (SIGALRM, &sa, NULL) == 0);
    CHECK (zmq_setsockopt (s, ZMQ_RCVTIMEO, &(int){-1}, sizeof (int)) == 0);
    alarm_soon ();
    FAILS_WITH (zmq_recv (s, buf, sizeof buf, 0), EINTR);
    zmq_pollitem_t item = {s, 0, ZMQ_POLLIN, 0};
    alarm_soon ();
    FAILS_WITH (zmq_poll (&item, 1, -1), EINTR);

    /* A closed socket: ENOTSOCK, never a crash. */
    CHECK (zmq_close (s) == 0);
    FAILS_WITH (zmq_close (s), ENOTSOCK);
    FAILS_WITH (zmq_send (s, "x", 1, 0), ENOTSOCK);
    len = sizeof v;
    FAILS_WITH (zmq_getsockopt (s, ZMQ_LINGER, &v, &len), ENOTSOCK);

    /* Messages: a closed message is EFAULT; a failed send keeps it. */
    zmq_msg_t msg;
    CHECK (zmq_msg_init_size (&msg, 3) == 0);
    memcpy (zmq_msg_data (&msg), "abc", 3);
    void *lonely = zmq_socket (ctx, ZMQ_PUSH);
    FAILS_WITH (zmq_msg_send (&msg, lonely, ZMQ_DONTWAIT), EAGAIN);
    CHECK (zmq_msg_size (&msg) == 3 && memcmp (zmq_msg_data (&msg), "abc", 3) == 0);
    CHECK (zmq_msg_close (&msg) == 0);
    FAILS_WITH (zmq_msg_close (&msg), EFAULT);
    FAILS_WITH (zmq_msg_send (&msg, lonely, 0), EFAULT);
    CHECK (zmq_msg_init (&msg) == 0);
    FAILS_WITH (zmq_msg_get (&msg, 999), EINVAL);
    CHECK (zmq_msg_gets (&msg, "Socket-Type") == NULL && zmq_errno () == EINVAL);
    CHECK (zmq_msg_close (&msg) == 0);
    /* The same for a message too large to be held inline, failing after
       a blocking wait (SNDTIMEO) and several tries: its data stays where
       it was and writable in place; once a peer is there it goes,
       written as the last write left it, and the message is empty. */
    char wide[64];
    memset (wide, 'x', sizeof wide);
    CHECK (zmq_msg_init_size (&msg, sizeof wide) == 0);
    char *where = zmq_msg_data (&msg);
    memcpy (where, wide, sizeof wide);
    CHECK (zmq_setsockopt (lonely, ZMQ_SNDTIMEO, &(int){30}, sizeof (int)) == 0);
    FAILS_WITH (zmq_msg_send (&msg, lonely, 0), EAGAIN);
    CHECK (zmq_msg_size (&msg) == sizeof wide && zmq_msg_data (&msg) == where);
    CHECK (memcmp (zmq_msg_data (&msg), wide, sizeof wide) == 0);
    where[0] = 'y';
    void *taker = zmq_socket (ctx, ZMQ_PULL);
    CHECK (zmq_bind (taker, "inproc://taker") == 0);
    CHECK (zmq_connect (lonely, "inproc://taker") == 0);
    CHECK (zmq_msg_send (&msg, lonely, 0) == (int) sizeof wide);
    CHECK (zmq_msg_size (&msg) == 0);
    CHECK (zmq_msg_close (&msg) == 0);
    CHECK (zmq_recv (taker, wide, sizeof wide, 0) == (int) sizeof wide);
    CHECK (wide[0] == 'y' && wide[1] == 'x' && wide[63] == 'x');
    /* Copied and moved before being sent: one buffer, the same bytes. */
    zmq_msg_t copy, moved;
    CHECK (zmq_msg_init_size (&msg, 40) == 0);
    memset (zmq_msg_data (&msg), 'c', 40);
    CHECK (zmq_msg_init (&copy) == 0 && zmq_msg_init (&moved) == 0);
    CHECK (zmq_msg_copy (&copy, &msg) == 0);
    CHECK (zmq_msg_data (&copy) == zmq_msg_data (&msg) && zmq_msg_get (&copy, ZMQ_SHARED) == 1);
    CHECK (zmq_msg_move (&moved, &msg) == 0);
    CHECK (zmq_msg_size (&msg) == 0 && zmq_msg_size (&moved) == 40);
    CHECK (zmq_msg_send (&moved, lonely, 0) == 40 && zmq_msg_send (&copy, lonely, 0) == 40);
    CHECK (zmq_recv (taker, wide, sizeof wide, 0) == 40 && wide[0] == 'c' && wide[39] == 'c');
    CHECK (zmq_recv (taker, wide, sizeof wide, 0) == 40 && wide[0] == 'c' && wide[39] == 'c');
    CHECK (zmq_msg_close (&msg) == 0 && zmq_msg_close (&copy) == 0 && zmq_msg_close (&moved) == 0);
    /* Closed without being sent: freed (the leak check runs this). */
    CHECK (zmq_msg_init_size (&msg, 100) == 0);
    CHECK (zmq_msg_close (&msg) == 0);
    CHECK (zmq_close (taker) == 0);
    CHECK (zmq_close (lonely) == 0);

    /* ETERM: a receive blocked on another thread returns when the context
       is terminated; the thread then closes its socket, letting
       zmq_ctx_term return. */
    void *blocked = zmq_socket (ctx, ZMQ_PULL);
    CHECK (zmq_bind (blocked, "inproc://blocked") == 0);
    pthread_t t;
    CHECK (pthread_create (&t, NULL, blocked_recv, blocked) == 0);
    CHECK (zmq_ctx_term (ctx) == 0);
    void *e;
    pthread_join (t, &e);
    CHECK ((intptr_t) e == ETERM);
    FAILS_WITH (zmq_ctx_term (ctx), EFAULT);
    FAILS_WITH (zmq_socket (ctx, ZMQ_PAIR) == NULL ? -1 : 0, EFAULT);

    /* Error texts. */
    CHECK (strcmp (zmq_strerror (EFSM), "Operation cannot be accomplished in current state") == 0);
    CHECK (strcmp (zmq_strerror (ETERM), "Context was terminated") == 0);
    CHECK (strlen (zmq_strerror (EINVAL)) > 0);
    printf ("ok\n");
    return 0;
}
