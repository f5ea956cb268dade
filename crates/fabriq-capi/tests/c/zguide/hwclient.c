/* zguide hwclient: Hello World client. Connects REQ to argv[1], sends 10
   requests, waiting for each reply. */
#include "zhelpers.h"

int main (int argc, char *argv[])
{
    assert (argc == 2);
    void *context = zmq_ctx_new ();
    void *requester = zmq_socket (context, ZMQ_REQ);
    zmq_connect (requester, argv[1]);
    for (int request_nbr = 0; request_nbr != 10; request_nbr++) {
        char buffer[10];
        s_send (requester, "Hello");
        int size = zmq_recv (requester, buffer, 10, 0);
        assert (size == 5 && memcmp (buffer, "World", 5) == 0);
    }
    zmq_close (requester);
    zmq_ctx_destroy (context);
    printf ("ok\n");
    return 0;
}
