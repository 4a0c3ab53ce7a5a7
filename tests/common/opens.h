/* opens.h - how many times a test's code opened a file, seen by inotify:
 * a reader that must open its input once (a FIFO or a pipe gives its bytes
 * once) is checked on a regular file, where a second open would go
 * unnoticed otherwise.  Include after <cmocka.h>. */
#ifndef ROTOR_TESTS_OPENS_H
#define ROTOR_TESTS_OPENS_H

#include <stdint.h>
#include <sys/inotify.h>
#include <unistd.h>

/* A watch on path's opens; pass the result to opens_count.  Closes are
 * watched too: inotify merges an event into the same one queued just
 * before it, so open, open would count once but open, close, open twice. */
static inline int opens_watch(const char *path)
{
    int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    assert_true(fd >= 0);
    assert_true(inotify_add_watch(fd, path, IN_OPEN | IN_CLOSE) >= 0);
    return fd;
}

/* The opens seen since opens_watch (inotify queues them as they happen, so
 * all are in by the time the code under test returns); closes fd. */
static inline int opens_count(int fd)
{
    int n = 0;
    char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    ssize_t got;
    while ((got = read(fd, buf, sizeof(buf))) > 0)
        for (char *p = buf; p < buf + got;) {
            const struct inotify_event *ev = (const struct inotify_event *)(void *)p;
            n += (ev->mask & IN_OPEN) != 0;
            p += sizeof(*ev) + ev->len;
        }
    close(fd);
    return n;
}

#endif
