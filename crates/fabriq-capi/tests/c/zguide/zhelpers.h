/* The zguide's zhelpers.h, cut to what these examples use: strings over
   0MQ, random numbers, sleeping. Endpoints come from argv (the zguide's
   fixed ports, tcp://...:5555 and so on, become ephemeral ones so tests
   can run side by side): a binding program prints the endpoint it got. */
#ifndef ZHELPERS_H
#define ZHELPERS_H
#include <zmq.h>
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define randof(num) (int) ((float) (num) * random () / (RAND_MAX + 1.0))

/* Receives a string (NUL-terminated copy; free it), NULL on error. */
static inline char *s_recv (void *socket)
{
    char buffer[256];
    int size = zmq_recv (socket, buffer, 255, 0);
    if (size == -1)
        return NULL;
    if (size > 255)
        size = 255;
    buffer[size] = '\0';
    return strdup (buffer);
}

static inline int s_send (void *socket, const char *string)
{
    return zmq_send (socket, string, strlen (string), 0);
}

static inline int s_sendmore (void *socket, const char *string)
{
    return zmq_send (socket, string, strlen (string), ZMQ_SNDMORE);
}

static inline void s_sleep (int msecs)
{
    struct timespec t = {msecs / 1000, (msecs % 1000) * 1000000};
    nanosleep (&t, NULL);
}

static inline long s_clock (void)
{
    struct timespec t;
    clock_gettime (CLOCK_MONOTONIC, &t);
    return (long) (t.tv_sec * 1000 + t.tv_nsec / 1000000);
}

/* Binds `socket` to `endpoint` and prints the endpoint it got (one line,
   flushed), for the test to connect its peers to. */
static inline void s_bind_print (void *socket, const char *endpoint)
{
    char got[256];
    size_t size = sizeof got;
    int rc = zmq_bind (socket, endpoint);
    assert (rc == 0);
    rc = zmq_getsockopt (socket, ZMQ_LAST_ENDPOINT, got, &size);
    assert (rc == 0);
    printf ("%s\n", got);
    fflush (stdout);
}
#endif
