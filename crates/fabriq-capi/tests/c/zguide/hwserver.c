/* zguide hwserver: Hello World server. Binds REP to argv[1], answers
   "World" to argv[2] "Hello" requests, then exits. */
#include "zhelpers.h"

int main (int argc, char *argv[])
{
    assert (argc == 3);
    void *context = zmq_ctx_new ();
    void *responder = zmq_socket (context, ZMQ_REP);
    s_bind_print (responder, argv[1]);
    for (int n = atoi (argv[2]); n > 0; n--) {
        char *request = s_recv (responder);
        assert (request && strcmp (request, "Hello") == 0);
        free (request);
        s_send (responder, "World");
    }
    zmq_close (responder);
    zmq_ctx_destroy (context);
    printf ("ok\n");
    return 0;
}
