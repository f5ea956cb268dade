/* A tiny assertion helper for the C programs of fabriq-capi's tests: each
   program exits 0 when every check holds, else prints the failed check. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <zmq.h>

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf (stderr, "%s:%d: check failed: %s (errno %d: %s)\n",       \
                     __FILE__, __LINE__, #cond, zmq_errno (),                  \
                     zmq_strerror (zmq_errno ()));                             \
            exit (1);                                                          \
        }                                                                      \
    } while (0)

/* A call that must fail with errno E. */
#define FAILS_WITH(call, e)                                                    \
    do {                                                                       \
        errno = 0;                                                             \
        int rc_ = (int) (call);                                                \
        CHECK (rc_ == -1);                                                     \
        if (zmq_errno () != (e)) {                                             \
            fprintf (stderr, "%s:%d: %s: errno %d, wanted %d (%s)\n",          \
                     __FILE__, __LINE__, #call, zmq_errno (), (e), #e);        \
            exit (1);                                                          \
        }                                                                      \
    } while (0)

/* Binds to an ephemeral port (or a fresh name) and returns the endpoint. */
static inline void bind_any (void *s, const char *ep, char *out, size_t len)
{
    CHECK (zmq_bind (s, ep) == 0);
    CHECK (zmq_getsockopt (s, ZMQ_LAST_ENDPOINT, out, &len) == 0);
}

static inline void set_int (void *s, int opt, int v)
{
    CHECK (zmq_setsockopt (s, opt, &v, sizeof v) == 0);
}
