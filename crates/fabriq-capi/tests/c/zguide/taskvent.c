/* zguide taskvent: task ventilator. Binds PUSH to argv[1] (workers),
   connects to the sink at argv[2]; when a line arrives on stdin ("Press
   Enter when the workers are ready") sends the start of batch to the sink
   and 100 tasks with workloads of 1 to 10 ms (the zguide's: 1 to 100). */
#include "zhelpers.h"

int main (int argc, char *argv[])
{
    assert (argc == 3);
    void *context = zmq_ctx_new ();
    void *sender = zmq_socket (context, ZMQ_PUSH);
    s_bind_print (sender, argv[1]);
    void *sink = zmq_socket (context, ZMQ_PUSH);
    zmq_connect (sink, argv[2]);
    getchar ();
    s_send (sink, "0");
    srandom ((unsigned) time (NULL));
    int total_msec = 0;
    for (int task_nbr = 0; task_nbr < 100; task_nbr++) {
        int workload = randof (10) + 1;
        total_msec += workload;
        char string[16];
        sprintf (string, "%d", workload);
        s_send (sender, string);
    }
    printf ("Total expected cost: %d msec\n", total_msec);
    zmq_close (sink);
    zmq_close (sender);
    zmq_ctx_destroy (context);
    printf ("ok\n");
    return 0;
}
