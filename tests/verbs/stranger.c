/*
 * stranger.c - a process that is not a rank, for the e2e strangers test.
 *
 *   stranger idle HOST PORT SECONDS      connect, send nothing, hold it open
 *   stranger random HOST PORT            connect, send 4 KiB of random bytes
 *   stranger replay HOST PORT FILE       connect, send FILE's bytes (a hello
 *                                        captured from another job), then a
 *                                        made-up answer to the challenge
 *   stranger capture PORT FILE           listen, write the first 40 bytes a
 *                                        connecting rank sends (its hello)
 *   stranger flood HOST PORT N SECONDS   hold N idle connections, opening a
 *                                        new one for each the rank closes;
 *                                        "flooding" on stderr once N are
 *                                        held, "opened M" on stdout at the end
 *
 * The connecting modes retry until the port accepts (at most 20 s), print
 * "connected" on stderr, and at the end print on stdout how many bytes the
 * rank sent back and whether it closed the connection:
 *   received N closed 1
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define HELLO_BYTES 40

static int connect_retry(const char *host, int port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, host, &a.sin_addr) != 1)
        return -1;
    for (int i = 0; i < 2000; i++) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0)
            return -1;
        if (connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0) {
            fprintf(stderr, "connected\n");
            return fd;
        }
        close(fd);
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return -1;
}

/* Read what the peer sends for up to `ms` (or until it closes). */
static void drain(int fd, int ms, size_t *received, int *closed)
{
    char buf[4096];
    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int rc = poll(&p, 1, ms);
        if (rc <= 0)
            return;
        ssize_t n = recv(fd, buf, sizeof(buf), 0);
        if (n <= 0) {
            *closed = 1;
            return;
        }
        *received += (size_t)n;
    }
}

static int send_all(int fd, const void *buf, size_t len)
{
    return send(fd, buf, len, MSG_NOSIGNAL) == (ssize_t)len ? 0 : -1;
}

static int capture(int port, const char *file)
{
    int lfd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(lfd, (struct sockaddr *)&a, sizeof(a)) || listen(lfd, 4)) {
        perror("stranger: listen");
        return 1;
    }
    int fd = accept(lfd, NULL, NULL);
    unsigned char hello[HELLO_BYTES];
    size_t got = 0;
    while (fd >= 0 && got < sizeof(hello)) {
        ssize_t n = recv(fd, hello + got, sizeof(hello) - got, 0);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    if (got != sizeof(hello)) {
        fprintf(stderr, "stranger: captured only %zu bytes\n", got);
        return 1;
    }
    FILE *fp = fopen(file, "wb");
    if (!fp || fwrite(hello, 1, got, fp) != got || fclose(fp)) {
        perror(file);
        return 1;
    }
    close(fd);
    close(lfd);
    return 0;
}

/* Open a connection to a, or -1 (not listening yet, or the backlog full). */
static int connect_once(const struct sockaddr_in *a)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    if (connect(fd, (const struct sockaddr *)a, sizeof(*a)) == 0)
        return fd;
    close(fd);
    return -1;
}

/* A slow-loris flood: n connections that never send, each one the peer
 * closes replaced at once, for `seconds`. */
static int flood(const char *host, int port, int n, int seconds)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (n < 1 || n > 1000 || inet_pton(AF_INET, host, &a.sin_addr) != 1)
        return 2;
    struct pollfd p[n];
    for (int i = 0; i < n; i++)
        p[i] = (struct pollfd){.fd = -1, .events = POLLIN};
    long opened = 0;
    int said = 0;
    for (time_t end = time(NULL) + seconds; time(NULL) < end;) {
        int held = 0;
        for (int i = 0; i < n; i++) {
            if (p[i].fd < 0 && (p[i].fd = connect_once(&a)) >= 0)
                opened++;
            held += p[i].fd >= 0;
        }
        if (held == n && !said) {
            fprintf(stderr, "flooding\n");
            said = 1;
        }
        if (poll(p, (nfds_t)n, 10) < 0 && errno != EINTR)
            return 1;
        for (int i = 0; i < n; i++) {
            char buf[256];
            if (p[i].fd < 0 || !p[i].revents)
                continue;
            ssize_t r = recv(p[i].fd, buf, sizeof(buf), MSG_DONTWAIT);
            if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
                close(p[i].fd);
                p[i].fd = -1;
            }
        }
    }
    printf("opened %ld\n", opened);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 4 && !strcmp(argv[1], "capture"))
        return capture(atoi(argv[2]), argv[3]);
    if (argc == 6 && !strcmp(argv[1], "flood"))
        return flood(argv[2], atoi(argv[3]), atoi(argv[4]), atoi(argv[5]));
    if (argc < 4) {
        fprintf(stderr, "usage: see stranger.c\n");
        return 2;
    }
    int fd = connect_retry(argv[2], atoi(argv[3]));
    if (fd < 0) {
        fprintf(stderr, "stranger: cannot connect\n");
        return 1;
    }
    size_t received = 0;
    int closed = 0;
    if (!strcmp(argv[1], "idle") && argc == 5) {
        drain(fd, atoi(argv[4]) * 1000, &received, &closed);
    } else if (!strcmp(argv[1], "random")) {
        unsigned char junk[4096];
        int r = open("/dev/urandom", O_RDONLY);
        if (r < 0 || read(r, junk, sizeof(junk)) != (ssize_t)sizeof(junk))
            return 1;
        close(r);
        send_all(fd, junk, sizeof(junk));
        drain(fd, 8000, &received, &closed);
    } else if (!strcmp(argv[1], "replay") && argc == 5) {
        unsigned char hello[HELLO_BYTES], answer[32];
        FILE *fp = fopen(argv[4], "rb");
        if (!fp || fread(hello, 1, sizeof(hello), fp) != sizeof(hello))
            return 1;
        fclose(fp);
        send_all(fd, hello, sizeof(hello));
        drain(fd, 1000, &received, &closed); /* the challenge, if any */
        memset(answer, 0x5a, sizeof(answer));
        if (!closed)
            send_all(fd, answer, sizeof(answer));
        drain(fd, 8000, &received, &closed);
    } else {
        fprintf(stderr, "usage: see stranger.c\n");
        return 2;
    }
    printf("received %zu closed %d\n", received, closed);
    close(fd);
    return 0;
}
