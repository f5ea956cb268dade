/* zguide rrworker: connects REP to the broker's backend at argv[1] and
   answers "World" until killed. */
#include "zhelpers.h"

int main (int argc, char *argv[])
{
    assert (argc == 2);
    void *context = zmq_ctx_new ();
    void *responder = zmq_socket (context, ZMQ_REP);
    zmq_connect (responder, argv[1]);
    while (1) {
        char *string = s_recv (responder);
        assert (string && strcmp (string, "Hello") == 0);
        free (string);
        s_send (responder, "World");
    }
    return 0;
}
