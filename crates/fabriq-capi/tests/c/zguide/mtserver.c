/* zguide mtserver: multithreaded Hello World server. ROUTER for clients
   bound to argv[1], DEALER for workers on inproc, five REP worker threads,
   zmq_proxy between them, until killed. */
#include "zhelpers.h"
#include <pthread.h>

static void *worker_routine (void *context)
{
    void *receiver = zmq_socket (context, ZMQ_REP);
    zmq_connect (receiver, "inproc://workers");
    while (1) {
        char *string = s_recv (receiver);
        assert (string && strcmp (string, "Hello") == 0);
        free (string);
        s_send (receiver, "World");
    }
    return NULL;
}

int main (int argc, char *argv[])
{
    assert (argc == 2);
    void *context = zmq_ctx_new ();
    void *clients = zmq_socket (context, ZMQ_ROUTER);
    void *workers = zmq_socket (context, ZMQ_DEALER);
    zmq_bind (workers, "inproc://workers");
    for (int thread_nbr = 0; thread_nbr < 5; thread_nbr++) {
        pthread_t worker;
        pthread_create (&worker, NULL, worker_routine, context);
    }
    s_bind_print (clients, argv[1]);
    zmq_proxy (clients, workers, NULL);
    return 0;
}
