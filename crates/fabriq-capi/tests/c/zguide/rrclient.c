/* zguide rrclient: connects REQ to the broker's frontend at argv[1] and
   sends 10 requests. */
#include "zhelpers.h"

int main (int argc, char *argv[])
{
    assert (argc == 2);
    void *context = zmq_ctx_new ();
    void *requester = zmq_socket (context, ZMQ_REQ);
    zmq_connect (requester, argv[1]);
    for (int request_nbr = 0; request_nbr != 10; request_nbr++) {
        s_send (requester, "Hello");
        char *string = s_recv (requester);
        assert (string && strcmp (string, "World") == 0);
        free (string);
    }
    zmq_close (requester);
    zmq_ctx_destroy (context);
    printf ("ok\n");
    return 0;
}
