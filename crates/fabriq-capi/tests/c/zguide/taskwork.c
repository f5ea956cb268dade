/* zguide taskwork: task worker. Connects PULL to the ventilator at
   argv[1] and PUSH to the sink at argv[2]; does tasks until killed. */
#include "zhelpers.h"

int main (int argc, char *argv[])
{
    assert (argc == 3);
    void *context = zmq_ctx_new ();
    void *receiver = zmq_socket (context, ZMQ_PULL);
    zmq_connect (receiver, argv[1]);
    void *sender = zmq_socket (context, ZMQ_PUSH);
    zmq_connect (sender, argv[2]);
    printf ("ready\n");
    fflush (stdout);
    while (1) {
        char *string = s_recv (receiver);
        assert (string);
        s_sleep (atoi (string));
        free (string);
        s_send (sender, "");
    }
    return 0;
}
