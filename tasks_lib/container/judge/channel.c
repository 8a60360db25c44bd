/* The channel to the host: length-framed records on the exec's stdout (judge.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "judge.h"

static int channel_fd = 1;

int write_all(int fd, const void *buf, size_t len) {
    const char *p = buf;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

void channel_init(void) {
    signal(SIGPIPE, SIG_IGN); /* a host that went away must not kill us mid-cleanup */
}

void emit(const char *tag, const void *data, size_t len) {
    char head[64];
    int n = snprintf(head, sizeof head, "%s %zu\n", tag, len);
    write_all(channel_fd, head, (size_t)n);
    if (len) write_all(channel_fd, data, len);
    write_all(channel_fd, "\n", 1);
}

void emitf(const char *tag, const char *fmt, ...) {
    char buf[4096];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0) n = 0;
    if ((size_t)n >= sizeof buf) n = sizeof buf - 1;
    emit(tag, buf, (size_t)n);
}

/* The last record, then wait until the host has read it (judge.h: it closes our stdin then). */
void end_report(void) {
    emit("end", "", 0);
    char buf[256];
    for (;;) {
        struct pollfd p = {.fd = 0, .events = POLLIN};
        int r = poll(&p, 1, HOST_ACK_MS);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return;                      /* the host never answered: go on anyway */
        ssize_t n = read(0, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;                      /* EOF (or no stdin at all): the host has it */
    }
}
