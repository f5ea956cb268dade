/* zguide rrbroker: a simple request-reply broker. ROUTER frontend bound
   to argv[1], DEALER backend bound to argv[2], shuttled with zmq_poll
   until killed. */
#include "zhelpers.h"

int main (int argc, char *argv[])
{
    assert (argc == 3);
    void *context = zmq_ctx_new ();
    void *frontend = zmq_socket (context, ZMQ_ROUTER);
    void *backend = zmq_socket (context, ZMQ_DEALER);
    s_bind_print (frontend, argv[1]);
    s_bind_print (backend, argv[2]);
    zmq_pollitem_t items[] = {{frontend, 0, ZMQ_POLLIN, 0},
                              {backend, 0, ZMQ_POLLIN, 0}};
    while (1) {
        zmq_msg_t message;
        int rc = zmq_poll (items, 2, -1);
        assert (rc >= 0);
        for (int i = 0; i < 2; i++) {
            if (!(items[i].revents & ZMQ_POLLIN))
                continue;
            void *from = items[i].socket, *to = i == 0 ? backend : frontend;
            while (1) {
                zmq_msg_init (&message);
                zmq_msg_recv (&message, from, 0);
                int more = zmq_msg_more (&message);
                zmq_msg_send (&message, to, more ? ZMQ_SNDMORE : 0);
                zmq_msg_close (&message);
                if (!more)
                    break;
            }
        }
    }
    return 0;
}
