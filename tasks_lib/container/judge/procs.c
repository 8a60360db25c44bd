/*
 * Processes, read from /proc with bounded reads only (no tool of the image, no unbounded line).
 *
 * kill_sessions: every process of the given sessions and all their descendants (a tool command
 * may sit in a session of its own, but it is still the harness's child) is stopped, round after
 * round until a round finds no new one, so nothing can fork its way out; then all are killed at
 * once. PID 1 and the judge's own session are never touched.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "judge.h"

#define SNAP_CAP 65536

static struct proc_info snap[SNAP_CAP];
static int nsnap;

static ssize_t read_small(const char *path, char *buf, size_t cap) {
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) return -1;
    size_t got = 0;
    while (got < cap) {
        ssize_t n = read(fd, buf + got, cap - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += (size_t)n;
    }
    close(fd);
    return (ssize_t)got;
}

int read_proc(pid_t pid, struct proc_info *out) {
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    ssize_t n = read_small(path, buf, sizeof buf - 1);
    if (n <= 0) return -1;
    buf[n] = 0;
    char *close_paren = strrchr(buf, ')');
    if (!close_paren) return -1;
    char state;
    int ppid, pgrp, sid;
    if (sscanf(close_paren + 1, " %c %d %d %d", &state, &ppid, &pgrp, &sid) != 4) return -1;
    out->pid = pid;
    out->state = state;
    out->ppid = ppid;
    out->pgrp = pgrp;
    out->sid = sid;
    return 0;
}

static void snapshot(void) {
    nsnap = 0;
    DIR *d = opendir("/proc");
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && nsnap < SNAP_CAP) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        if (*end || pid <= 0) continue;
        if (read_proc((pid_t)pid, &snap[nsnap]) == 0) nsnap++;
    }
    closedir(d);
}

/* "PID SID PPID STATE COMMAND" with the command line's NULs as spaces, at most CMDLINE_CAP bytes. */
static void emit_process(const char *tag, const struct proc_info *p) {
    char path[64], cmd[CMDLINE_CAP + 1], line[CMDLINE_CAP + 96];
    snprintf(path, sizeof path, "/proc/%d/cmdline", (int)p->pid);
    ssize_t n = read_small(path, cmd, CMDLINE_CAP);
    if (n < 0) n = 0;
    for (ssize_t i = 0; i < n; i++)
        if (cmd[i] == 0) cmd[i] = ' ';
    while (n > 0 && cmd[n - 1] == ' ') n--;
    if (n == 0) {
        char stat[512];
        snprintf(path, sizeof path, "/proc/%d/stat", (int)p->pid);
        ssize_t m = read_small(path, stat, sizeof stat - 1);
        stat[m > 0 ? m : 0] = 0;
        char *a = strchr(stat, '('), *b = strrchr(stat, ')');
        n = (a && b && b > a) ? snprintf(cmd, sizeof cmd, "[%.*s]", (int)(b - a - 1), a + 1) : 0;
        if (n < 0) n = 0;
    }
    int h = snprintf(line, sizeof line, "%d %d %d %c ", (int)p->pid, (int)p->sid, (int)p->ppid, p->state);
    memcpy(line + h, cmd, (size_t)n);
    emit(tag, line, (size_t)h + (size_t)n);
}

void list_processes(const char *tag, pid_t skip_sid) {
    snapshot();
    int listed = 0, more = 0;
    for (int i = 0; i < nsnap; i++) {
        struct proc_info *p = &snap[i];
        if (p->sid == 1 || p->sid == skip_sid || p->state == 'Z') continue;
        if (listed >= PROC_LIST_CAP) { more++; continue; }
        emit_process(tag, p);
        listed++;
    }
    if (more) emitf("more", "%d %s", more, tag);
}

static int in_list(pid_t v, const pid_t *list, int n) {
    for (int i = 0; i < n; i++)
        if (list[i] == v) return 1;
    return 0;
}

static pid_t stopped[SNAP_CAP];
static int nstopped;

int kill_sessions(const pid_t *sids, int nsids, pid_t self_sid) {
    nstopped = 0;
    for (int round = 0; round < 50; round++) {
        snapshot();
        int added = 0, changed = 1;
        while (changed) {
            changed = 0;
            for (int i = 0; i < nsnap; i++) {
                struct proc_info *p = &snap[i];
                if (p->pid == 1 || p->sid == self_sid || p->state == 'Z') continue;
                if (in_list(p->pid, stopped, nstopped)) continue;
                if (!in_list(p->sid, sids, nsids) && !in_list(p->ppid, stopped, nstopped)) continue;
                if (nstopped >= SNAP_CAP) break;
                kill(p->pid, SIGSTOP);
                stopped[nstopped++] = p->pid;
                emit_process("killed", p);
                added = changed = 1;
            }
        }
        if (!added) break;
    }
    for (int i = 0; i < nstopped; i++) kill(stopped[i], SIGKILL);
    struct timespec pause = {0, 20 * 1000 * 1000};
    for (int tries = 0; tries < 250; tries++) { /* at most ~5 s for the kernel to finish them */
        int alive = 0;
        for (int i = 0; i < nstopped && !alive; i++) {
            struct proc_info p;
            if (read_proc(stopped[i], &p) == 0 && p.state != 'Z' && p.state != 'X') alive = 1;
        }
        if (!alive) break;
        nanosleep(&pause, NULL);
    }
    return nstopped;
}

void close_from(int lowfd) {
#ifdef SYS_close_range
    if (syscall(SYS_close_range, (unsigned)lowfd, ~0U, 0) == 0) return;
#endif
    for (int fd = lowfd; fd < 65536; fd++) close(fd);
}
