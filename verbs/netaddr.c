/* netaddr.c - the ranks' addresses (see netaddr.h). */
#include "verbs/netaddr.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>

int rt_net_resolve(const char *host, int port, int passive, struct addrinfo **res, rt_error *err)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
    char service[16];
    snprintf(service, sizeof(service), "%d", port);
    int rc = getaddrinfo(host, service, &hints, res);
    if (rc)
        return rt_fail(err, RT_EXIT_INPUT, "cannot resolve '%s': %s", host, gai_strerror(rc));
    return 0;
}

int rt_net_free_port(const char *host, int *port, rt_error *err)
{
    struct addrinfo *res = NULL;
    if (rt_net_resolve(host, 0, 1, &res, err)) {
        if (err)
            err->code = RT_EXIT_RUNTIME; /* a host the program chose, not the user's */
        return -1;
    }
    int fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_storage sa;
    socklen_t len = sizeof(sa);
    int e = 0;
    if (fd < 0 || bind(fd, res->ai_addr, res->ai_addrlen) ||
        getsockname(fd, (struct sockaddr *)&sa, &len))
        e = errno;
    if (fd >= 0)
        close(fd);
    freeaddrinfo(res);
    if (e)
        return rt_fail_errno(err, RT_EXIT_RUNTIME, e, "cannot find a free port on %s", host);
    /* sin_port and sin6_port sit at the same offset */
    *port = ntohs(((struct sockaddr_in *)&sa)->sin_port);
    return 0;
}
