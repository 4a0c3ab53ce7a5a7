/*
 * garble.c - an LD_PRELOAD library that makes a rank send garbage once its
 * connections are up, for tests/e2e/chaos_wire.sh ("a peer sending garbage
 * after the handshake": a rank with a corrupted memory or a broken link
 * driver, which TCP's checksums cannot catch).
 *
 *   ROTOR_GARBLE_AFTER=N LD_PRELOAD=.../libgarble.so rotor train ...
 *
 * The first N bytes this process writes to sockets go out as they are (the
 * handshake, the fingerprints, the first blocks); every byte after them is
 * replaced by a pseudo-random one (the lengths stay, so the peer reads on
 * and must judge what it reads).  Files and pipes are left alone.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t sent;          /* socket bytes so far */
static uint64_t after = ~0ull; /* garble every byte past this many */
static uint64_t rng = 0x9e3779b97f4a7c15ull;
static int ready;

static void setup_once(void)
{
    const char *s = getenv("ROTOR_GARBLE_AFTER");
    if (s && *s)
        after = strtoull(s, NULL, 10);
    ready = 1;
}

static int is_socket(int fd)
{
    struct stat sb;
    return fstat(fd, &sb) == 0 && S_ISSOCK(sb.st_mode);
}

static uint8_t next_byte(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint8_t)rng;
}

/* A copy of the len bytes at buf as they go out: those past `after` garbled.
 * NULL when nothing changes (or no memory: then they go as they are). */
static uint8_t *garbled(const void *buf, size_t len)
{
    pthread_mutex_lock(&mu);
    if (!ready)
        setup_once();
    uint64_t from = sent;
    sent += len;
    uint8_t *out = NULL;
    if (from + len > after && (out = malloc(len ? len : 1)) != NULL) {
        memcpy(out, buf, len);
        for (size_t i = from >= after ? 0 : (size_t)(after - from); i < len; i++)
            out[i] = next_byte();
    }
    pthread_mutex_unlock(&mu);
    return out;
}

/* The iovec's bytes in one buffer (len in *len), or NULL. */
static uint8_t *flatten(const struct iovec *iov, int n, size_t *len)
{
    size_t total = 0;
    for (int i = 0; i < n; i++)
        total += iov[i].iov_len;
    uint8_t *b = malloc(total ? total : 1), *p = b;
    for (int i = 0; b && i < n; i++) {
        memcpy(p, iov[i].iov_base, iov[i].iov_len);
        p += iov[i].iov_len;
    }
    *len = total;
    return b;
}

static ssize_t real_send(int fd, const void *buf, size_t len, int flags)
{
    static ssize_t (*real)(int, const void *, size_t, int);
    if (!real)
        real = (ssize_t(*)(int, const void *, size_t, int))dlsym(RTLD_NEXT, "send");
    return real(fd, buf, len, flags);
}

ssize_t send(int fd, const void *buf, size_t len, int flags)
{
    uint8_t *g = garbled(buf, len);
    ssize_t n = real_send(fd, g ? g : buf, len, flags);
    free(g);
    return n;
}

ssize_t write(int fd, const void *buf, size_t len)
{
    static ssize_t (*real)(int, const void *, size_t);
    if (!real)
        real = (ssize_t(*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
    if (!is_socket(fd))
        return real(fd, buf, len);
    uint8_t *g = garbled(buf, len);
    ssize_t n = real(fd, g ? g : buf, len);
    free(g);
    return n;
}

/* One buffer for the whole iovec, garbled as its bytes come due. */
static ssize_t send_flat(int fd, const struct iovec *iov, int n, int flags)
{
    size_t len;
    uint8_t *flat = flatten(iov, n, &len);
    if (!flat)
        return -1;
    uint8_t *g = garbled(flat, len);
    ssize_t w = real_send(fd, g ? g : flat, len, flags);
    free(g);
    free(flat);
    return w;
}

ssize_t writev(int fd, const struct iovec *iov, int n)
{
    static ssize_t (*real)(int, const struct iovec *, int);
    if (!real)
        real = (ssize_t(*)(int, const struct iovec *, int))dlsym(RTLD_NEXT, "writev");
    if (!is_socket(fd))
        return real(fd, iov, n);
    return send_flat(fd, iov, n, MSG_NOSIGNAL);
}

ssize_t sendmsg(int fd, const struct msghdr *mh, int flags)
{
    return send_flat(fd, mh->msg_iov, (int)mh->msg_iovlen, flags);
}
