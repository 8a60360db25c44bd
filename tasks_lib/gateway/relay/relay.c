/*
 * tbflow-relay: the in-container end of tbflow's model gateway.
 *
 * Trial containers run with networking off, so an agent CLI cannot reach the host. tbflow
 * bind-mounts the host gateway's unix socket into the container, and this program listens on
 * the container's own loopback and relays every TCP connection, byte for byte, to that socket.
 * The CLI is then given an ordinary base URL (http://127.0.0.1:PORT) - all four CLIs tbflow
 * supports only speak TCP - and no network, no proxy and no API key enter the container.
 *
 *   tbflow-relay LISTEN_PORT UNIX_SOCKET_PATH   relay 127.0.0.1:LISTEN_PORT -> the socket
 *   tbflow-relay --wait PORT [SECONDS]          exit 0 once 127.0.0.1:PORT accepts (default 10 s),
 *                                               1 on timeout: readiness check for images that
 *                                               have no curl and no python
 *
 * It is protocol-agnostic (HTTP keep-alive, SSE and half-closed connections all pass through)
 * and built with `gcc -static` so the one binary runs in any x86_64 Linux image. One child per
 * connection (fork) keeps it simple and isolates connections; SIGCHLD is ignored so children
 * are reaped by the kernel. SIGTERM/SIGINT make the listener exit 0; connections in flight
 * finish on their own.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define BUF_SIZE 65536

static volatile sig_atomic_t stop_requested;

static void on_stop(int sig) { (void)sig; stop_requested = 1; }

/* One direction of a connection: bytes read from `from`, waiting in buf, written to `to`. */
struct flow {
    int from, to;
    char buf[BUF_SIZE];
    size_t len, off;
    int eof;
};

static int again(void) { return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR; }

/* Copy both ways with non-blocking sockets, so neither side can stall the other. When one side
 * stops sending, its peer gets a write shutdown (half-close) and the other direction goes on. */
static void relay(int a, int b) {
    static struct flow f[2];
    f[0].from = a; f[0].to = b; f[1].from = b; f[1].to = a;
    fcntl(a, F_SETFL, fcntl(a, F_GETFL) | O_NONBLOCK);
    fcntl(b, F_SETFL, fcntl(b, F_GETFL) | O_NONBLOCK);
    for (;;) {
        struct pollfd p[2];
        int n = 0, which[2];
        for (int i = 0; i < 2; i++) {
            if (f[i].len > 0) {
                p[n].fd = f[i].to; p[n].events = POLLOUT;
            } else if (!f[i].eof) {
                p[n].fd = f[i].from; p[n].events = POLLIN;
            } else {
                continue;
            }
            p[n].revents = 0;
            which[n++] = i;
        }
        if (n == 0) return; /* both directions finished */
        if (poll(p, (nfds_t)n, -1) < 0) {
            if (errno == EINTR) continue;
            return;
        }
        for (int k = 0; k < n; k++) {
            struct flow *d = &f[which[k]];
            if (!p[k].revents) continue;
            if (d->len > 0) {
                ssize_t w = send(d->to, d->buf + d->off, d->len - d->off, MSG_NOSIGNAL);
                if (w < 0 && !again()) {
                    /* The receiver stopped reading (the gateway refusing a request without reading
                     * its body, or a client gone): this direction ends, the other goes on, so a
                     * reply already sent (the refusal) still reaches its reader. */
                    d->len = d->off = 0;
                    d->eof = 1;
                    shutdown(d->from, SHUT_RD);
                    continue;
                }
                if (w > 0 && (d->off += (size_t)w) == d->len) d->len = d->off = 0;
            } else {
                ssize_t r = read(d->from, d->buf, sizeof d->buf);
                if (r > 0) {
                    d->len = (size_t)r; d->off = 0;
                } else if (r == 0 || !again()) {
                    d->eof = 1;
                    shutdown(d->to, SHUT_WR);
                }
            }
        }
    }
}

static int tcp_connect_loopback(int port) {
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = {0};
    sa.sin_family = AF_INET;
    sa.sin_port = htons((unsigned short)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int ok = s >= 0 && connect(s, (struct sockaddr *)&sa, sizeof sa) == 0;
    if (s >= 0) close(s);
    return ok;
}

static int wait_ready(int port, double seconds) {
    struct timespec nap = {0, 20 * 1000 * 1000};
    for (double waited = 0; waited <= seconds; waited += 0.02) {
        if (tcp_connect_loopback(port)) return 0;
        nanosleep(&nap, NULL);
    }
    fprintf(stderr, "tbflow-relay: nothing listens on 127.0.0.1:%d after %.1f s\n", port, seconds);
    return 1;
}

static int parse_port(const char *s) {
    char *end;
    long v = strtol(s, &end, 10);
    return (*s && !*end && v > 0 && v < 65536) ? (int)v : -1;
}

static void serve_connection(int client, const char *path) {
    struct sockaddr_un ua = {0};
    ua.sun_family = AF_UNIX;
    strcpy(ua.sun_path, path); /* length checked in main */
    int up = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (up < 0 || connect(up, (struct sockaddr *)&ua, sizeof ua) != 0) {
        fprintf(stderr, "tbflow-relay: cannot connect to %s: %s\n", path, strerror(errno));
        _exit(1);
    }
    int one = 1;
    setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    relay(client, up);
    _exit(0);
}

int main(int argc, char **argv) {
    if (argc >= 3 && strcmp(argv[1], "--wait") == 0 && parse_port(argv[2]) > 0)
        return wait_ready(parse_port(argv[2]), argc > 3 ? atof(argv[3]) : 10.0);
    int port = argc == 3 ? parse_port(argv[1]) : -1;
    if (port < 0) {
        fprintf(stderr, "usage: tbflow-relay LISTEN_PORT UNIX_SOCKET_PATH\n"
                        "       tbflow-relay --wait PORT [SECONDS]\n");
        return 2;
    }
    const char *path = argv[2];
    if (strlen(path) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
        fprintf(stderr, "tbflow-relay: socket path too long: %s\n", path);
        return 2;
    }

    struct sigaction sa = {0};
    sa.sa_handler = on_stop; /* no SA_RESTART: accept() returns EINTR and the loop ends */
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    signal(SIGCHLD, SIG_IGN); /* children are reaped by the kernel */

    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    struct sockaddr_in la = {0};
    la.sin_family = AF_INET;
    la.sin_port = htons((unsigned short)port);
    la.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (lfd < 0 || setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(lfd, (struct sockaddr *)&la, sizeof la) != 0 || listen(lfd, 128) != 0) {
        fprintf(stderr, "tbflow-relay: cannot listen on 127.0.0.1:%d: %s\n", port, strerror(errno));
        return 1;
    }
    fprintf(stderr, "tbflow-relay: 127.0.0.1:%d -> %s\n", port, path);

    while (!stop_requested) {
        int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0) {
            if (errno != EINTR) {
                struct timespec nap = {0, 50 * 1000 * 1000}; /* e.g. EMFILE: back off, go on */
                nanosleep(&nap, NULL);
            }
            continue;
        }
        pid_t pid = fork();
        if (pid == 0) {
            close(lfd);
            signal(SIGTERM, SIG_DFL);
            signal(SIGINT, SIG_DFL);
            serve_connection(c, path);
        }
        if (pid < 0) fprintf(stderr, "tbflow-relay: fork failed: %s\n", strerror(errno));
        close(c);
    }
    close(lfd);
    return 0;
}
