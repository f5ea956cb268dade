/* zguide tasksink: task sink. Binds PULL to argv[1], waits for the start
   of the batch, then for 100 results. */
#include "zhelpers.h"

int main (int argc, char *argv[])
{
    assert (argc == 2);
    void *context = zmq_ctx_new ();
    void *receiver = zmq_socket (context, ZMQ_PULL);
    s_bind_print (receiver, argv[1]);
    char *string = s_recv (receiver);
    assert (string && strcmp (string, "0") == 0);
    free (string);
    long start_time = s_clock ();
    for (int task_nbr = 0; task_nbr < 100; task_nbr++) {
        string = s_recv (receiver);
        assert (string && string[0] == '\0');
        free (string);
    }
    printf ("Total elapsed time: %ld msec\n", s_clock () - start_time);
    zmq_close (receiver);
    zmq_ctx_destroy (context);
    printf ("ok\n");
    return 0;
}
