/*
 * netaddr.h - the ranks' addresses: the one resolver of a rank's host and
 * port (the tcp and ib transports) and the one finder of a free port (rotor
 * launch's loopback ranks, PMIx start-up, the transport tests).
 */
#ifndef ROTOR_VERBS_NETADDR_H
#define ROTOR_VERBS_NETADDR_H

#include "ground/ground.h"

#include <netdb.h>

/* The stream-socket addresses of host:port (a numeric port), for listening
 * when `passive`; free them with freeaddrinfo.  Exit code 2: "cannot
 * resolve 'HOST': REASON" (a hostfile's or a flag's name). */
int rt_net_resolve(const char *host, int port, int passive, struct addrinfo **res, rt_error *err);
/* A port nobody listens on now on host (the kernel's pick for port 0; it
 * may be taken by the time it is used, so callers retry on a clash).  Exit
 * code 1 when there is none or host cannot be resolved. */
int rt_net_free_port(const char *host, int *port, rt_error *err);

#endif
