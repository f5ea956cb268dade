/* zguide wuserver: weather update server. Binds PUB to argv[1] and
   publishes "zipcode temperature humidity" until killed. The zip codes
   are 10000 to 10004 here (the zguide's 0 to 99999 would make the client
   wait for ten million updates). */
#include "zhelpers.h"

int main (int argc, char *argv[])
{
    assert (argc == 2);
    void *context = zmq_ctx_new ();
    void *publisher = zmq_socket (context, ZMQ_PUB);
    s_bind_print (publisher, argv[1]);
    srandom ((unsigned) time (NULL));
    for (long n = 1;; n++) {
        int zipcode = 10000 + randof (5);
        int temperature = randof (215) - 80;
        int relhumidity = randof (50) + 10;
        char update[40];
        sprintf (update, "%05d %d %d", zipcode, temperature, relhumidity);
        s_send (publisher, update);
        if (n % 10 == 0)
            s_sleep (1);
    }
    return 0;
}
