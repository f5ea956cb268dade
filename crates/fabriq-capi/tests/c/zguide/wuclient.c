/* zguide wuclient: weather update client. Connects SUB to argv[1],
   subscribes to zip code 10001 and averages 100 updates. */
#include "zhelpers.h"

int main (int argc, char *argv[])
{
    assert (argc == 2);
    void *context = zmq_ctx_new ();
    void *subscriber = zmq_socket (context, ZMQ_SUB);
    int rc = zmq_connect (subscriber, argv[1]);
    assert (rc == 0);
    const char *filter = "10001 ";
    rc = zmq_setsockopt (subscriber, ZMQ_SUBSCRIBE, filter, strlen (filter));
    assert (rc == 0);
    long total_temp = 0;
    int update_nbr;
    for (update_nbr = 0; update_nbr < 100; update_nbr++) {
        char *string = s_recv (subscriber);
        assert (string && strncmp (string, filter, strlen (filter)) == 0);
        int zipcode, temperature, relhumidity;
        sscanf (string, "%d %d %d", &zipcode, &temperature, &relhumidity);
        assert (zipcode == 10001);
        total_temp += temperature;
        free (string);
    }
    printf ("Average temperature for zipcode '%s' was %dF\n", filter,
            (int) (total_temp / update_nbr));
    zmq_close (subscriber);
    zmq_ctx_destroy (context);
    printf ("ok\n");
    return 0;
}
