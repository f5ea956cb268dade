/* The platform.hpp libzmq's tests include, for Linux: what both builds
   under test (fabriq's libzmq.so.5 and Debian's libzmq 4.3.4) provide. */
#ifndef __ZMQ_PLATFORM_HPP_INCLUDED__
#define __ZMQ_PLATFORM_HPP_INCLUDED__
#define ZMQ_HAVE_LINUX 1
#define ZMQ_HAVE_IPC 1
#define ZMQ_HAVE_CURVE 1
#define ZMQ_HAVE_SO_KEEPALIVE 1
#define ZMQ_HAVE_TCP_KEEPCNT 1
#define ZMQ_HAVE_TCP_KEEPIDLE 1
#define ZMQ_HAVE_TCP_KEEPINTVL 1
#define ZMQ_HAVE_SO_PEERCRED 1
#define ZMQ_HAVE_UIO 1
#define ZMQ_HAVE_EVENTFD 1
#define ZMQ_CACHELINE_SIZE 64
/* libzmq's configure and CMake define it on Linux (glibc has mkdtemp):
   make_random_ipc_endpoint then names a path in a fresh directory, not a
   regular file made by mkstemp (which libzmq's bind unlinks and fabriq's,
   refusing to remove anything but a socket file, does not). */
#define HAVE_MKDTEMP 1
#endif
