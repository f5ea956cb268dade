// A cppzmq program (Debian's cppzmq-dev, zmq.hpp over <zmq.h>), built
// with `pkg-config --cflags --libs libzmq` against the prefix: REQ/REP and
// multipart PUSH/PULL over the endpoint given as argv[1] (tcp://..., or
// ofi+shm://... with no other change).
#include <zmq.hpp>
#include <zmq_addon.hpp>
#include <cstdio>
#include <string>
#include <vector>

#define CHECK(c)                                                               \
    do {                                                                       \
        if (!(c)) {                                                            \
            std::fprintf (stderr, "check failed: %s\n", #c);                  \
            return 1;                                                          \
        }                                                                      \
    } while (0)

int main (int argc, char **argv)
{
    std::string bind_ep = argc > 1 ? argv[1] : "tcp://127.0.0.1:*";
    zmq::context_t ctx;
    zmq::socket_t rep (ctx, zmq::socket_type::rep);
    zmq::socket_t req (ctx, zmq::socket_type::req);
    rep.set (zmq::sockopt::rcvtimeo, 5000);
    req.set (zmq::sockopt::rcvtimeo, 5000);
    rep.bind (bind_ep);
    std::string ep = rep.get (zmq::sockopt::last_endpoint);
    req.connect (ep);
    for (int i = 0; i < 50; i++) {
        req.send (zmq::buffer (std::string ("ping ") + std::to_string (i)));
        zmq::message_t m;
        CHECK (rep.recv (m));
        CHECK (m.to_string () == "ping " + std::to_string (i));
        rep.send (zmq::str_buffer ("pong"));
        CHECK (req.recv (m));
        CHECK (m.to_string () == "pong");
    }
    zmq::socket_t pull (ctx, zmq::socket_type::pull);
    zmq::socket_t push (ctx, zmq::socket_type::push);
    pull.set (zmq::sockopt::rcvtimeo, 5000);
    pull.bind (bind_ep);
    push.connect (pull.get (zmq::sockopt::last_endpoint));
    std::vector<zmq::const_buffer> parts = {zmq::str_buffer ("a"), zmq::str_buffer ("bc")};
    CHECK (zmq::send_multipart (push, parts));
    std::vector<zmq::message_t> got;
    CHECK (zmq::recv_multipart (pull, std::back_inserter (got)));
    CHECK (got.size () == 2 && got[0].to_string () == "a" && got[1].to_string () == "bc");
    std::printf ("ok\n");
    return 0;
}
