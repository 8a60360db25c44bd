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
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "judge.h"

#define SNAP_CAP 65536
#define PID_LIMIT (1 << 22) /* the kernel's largest pid_max */

static struct proc_info snap[SNAP_CAP];
static int nsnap;

ssize_t read_small(const char *path, char *buf, size_t cap) {
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

/* /proc/PID/NAME into BUF as a string (bounded); -1 when it cannot be read. */
static int read_proc_file(pid_t pid, const char *name, char *buf, size_t cap) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, name);
    ssize_t n = read_small(path, buf, cap - 1);
    if (n <= 0) return -1;
    buf[n] = 0;
    return 0;
}

int read_proc(pid_t pid, struct proc_info *out) {
    char buf[1024];
    if (read_proc_file(pid, "stat", buf, sizeof buf) != 0) return -1;
    char *close_paren = strrchr(buf, ')');
    if (!close_paren) return -1;
    char state;
    int ppid, pgrp, sid;
    unsigned long long utime = 0, stime = 0, start = 0;
    int got = sscanf(close_paren + 1, " %c %d %d %d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d %*d %*d %llu",
                     &state, &ppid, &pgrp, &sid, &utime, &stime, &start);
    if (got < 4) return -1;
    out->ticks = utime + stime;
    out->start = start;
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

/* LIST_CAP: how many of them are listed as "killed" (the rest are counted in "more N killed"). */
int kill_sessions(const pid_t *sids, int nsids, pid_t self_sid, int list_cap) {
    nstopped = 0;
    int unlisted = 0;
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
                if (nstopped <= list_cap) emit_process("killed", p); else unlisted++;
                added = changed = 1;
            }
        }
        if (!added) break;
    }
    if (unlisted) emitf("more", "%d killed", unlisted);
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

/*
 * The CPU the agent's leftover processes use while test.sh runs: the processes listed as "proc"
 * (the last snapshot when agent_cpu_mark runs) are remembered with their start time, so a pid
 * reused by another process is never counted; one that vanished counts with its last value.
 */
static struct { pid_t pid; unsigned long long start, ticks; } agent[SNAP_CAP];
static int nagent;

/* write_bytes of /proc/PID/io: what the process caused to be written to storage (counted when it
 * dirties a page, in its own context, so through the overlay too). Lets the host tell a runner
 * file the agent's daemon planted while test.sh ran from one test.sh installed itself. */
static int read_wbytes(pid_t pid, unsigned long long *out) {
    char buf[512];
    if (read_proc_file(pid, "io", buf, sizeof buf) != 0) return -1;
    char *w = strstr(buf, "\nwrite_bytes: ");
    return w && sscanf(w, "\nwrite_bytes: %llu", out) == 1 ? 0 : -1;
}

void agent_cpu_mark(pid_t skip_sid) {
    nagent = 0;
    for (int i = 0; i < nsnap; i++) {
        struct proc_info *p = &snap[i];
        if (p->sid == 1 || p->sid == skip_sid || p->state == 'Z') continue;
        agent[nagent].pid = p->pid;
        agent[nagent].start = p->start;
        agent[nagent++].ticks = p->ticks;
    }
}

long long agent_cpu_ticks(void) {
    long long sum = 0;
    for (int i = 0; i < nagent; i++) {
        struct proc_info p;
        if (read_proc(agent[i].pid, &p) == 0 && p.start == agent[i].start) agent[i].ticks = p.ticks;
        sum += (long long)agent[i].ticks;
    }
    return sum;
}

/*
 * What every process that is not the judge's or test.sh's wrote to storage since writes_mark: the
 * judge is test.sh's child subreaper, so whatever test.sh starts, orphans included, has the judge
 * as an ancestor and is left out. A process marked before counts its growth; one started since
 * counts all it wrote; one that ended counts in its reaper's (the kernel adds a reaped child's
 * counts to its parent's), so a daemon that planted a file and exited is still seen.
 */
static struct { pid_t pid; unsigned long long start, wbytes; } marked[SNAP_CAP];
static int nmarked;

static int judges(const struct proc_info *p, pid_t self, pid_t self_sid) {
    if (p->sid == self_sid || p->pid == self) return 1;
    pid_t up = p->ppid;
    for (int depth = 0; depth < 256 && up > 1; depth++) {
        if (up == self) return 1;
        int j = 0;
        while (j < nsnap && snap[j].pid != up) j++;
        if (j == nsnap) return 0;
        up = snap[j].ppid;
    }
    return 0;
}

/* Marks from the snapshot list_processes just took (one /proc walk, not two); a process started
 * since counts as new, all its writes the agent's: the cautious side. */
void writes_mark(pid_t self_sid) {
    nmarked = 0;
    for (int i = 0; i < nsnap; i++) {
        if (judges(&snap[i], getpid(), self_sid)) continue;
        marked[nmarked].pid = snap[i].pid;
        marked[nmarked].start = snap[i].start;
        marked[nmarked].wbytes = 0;
        read_wbytes(snap[i].pid, &marked[nmarked++].wbytes);
    }
}

long long writes_since_mark(pid_t self_sid) {
    snapshot();
    long long sum = 0;
    for (int i = 0; i < nsnap; i++) {
        unsigned long long now = 0, was = 0;
        if (judges(&snap[i], getpid(), self_sid) || read_wbytes(snap[i].pid, &now) != 0) continue;
        for (int j = 0; j < nmarked; j++)
            if (marked[j].pid == snap[i].pid && marked[j].start == snap[i].start) { was = marked[j].wbytes; break; }
        if (now > was) sum += (long long)(now - was);
    }
    return sum;
}

/* Bytes a reader can always take as one token: no space, nothing unprintable. */
static void token(char *s) {
    for (; *s; s++)
        if (*s <= ' ' || *s > '~') *s = '?';
}

/* "stuckfd PID PATH" for up to STUCK_FD_CAP - 1 open fds of PID that are FIFOs with a path: stat on
 * /proc/PID/fd/N tells the open file's type without opening it (so no FIFO can block us). */
static void report_fifos(pid_t pid) {
    char dir[64];
    snprintf(dir, sizeof dir, "/proc/%d/fd", (int)pid);
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    int seen = 0, found = 0;
    while ((e = readdir(d)) != NULL && seen < 4096 && found < STUCK_FD_CAP - 1) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
        seen++;
        char link[96], target[PATH_CAP + 1];
        snprintf(link, sizeof link, "%s/%.16s", dir, e->d_name);
        ssize_t n = readlink(link, target, PATH_CAP);
        if (n <= 0 || target[0] != '/') continue; /* "pipe:[N]", "socket:[N]", anon inodes */
        struct stat st;
        if (stat(link, &st) != 0 || !S_ISFIFO(st.st_mode)) continue;
        char rec[PATH_CAP + 32];
        int h = snprintf(rec, sizeof rec, "%d ", (int)pid);
        memcpy(rec + h, target, (size_t)n);
        emit("stuckfd", rec, (size_t)h + (size_t)n);
        found++;
    }
    closedir(d);
}

/*
 * A process blocked *opening* a FIFO (no writer yet, e.g. `cat /app/input`) holds no fd for it:
 * the path comes from the arguments of the open it sits in (/proc/PID/syscall), the string from
 * /proc/PID/mem. The kernel lets the judge read both: test.sh's processes are its descendants,
 * of its uid. The path is reported as the process gave it, if it names a FIFO (stat, which does
 * not open it, through the process's own root or working directory).
 */
static void report_opening_fifo(pid_t pid) {
    char path[64], sc[256];
    snprintf(path, sizeof path, "/proc/%d/syscall", (int)pid);
    ssize_t n = read_small(path, sc, sizeof sc - 1);
    if (n <= 0) return;
    sc[n] = 0;
    long nr;
    unsigned long a0, a1;
    if (sscanf(sc, "%ld %lx %lx", &nr, &a0, &a1) != 3) return;
    unsigned long where;
    long dirfd = AT_FDCWD;
#ifdef SYS_open
    if (nr == SYS_open) where = a0; else
#endif
    if (nr == SYS_openat) where = a1, dirfd = (long)(int)a0;
    else return;
    char name[PATH_CAP + 1];
    snprintf(path, sizeof path, "/proc/%d/mem", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    n = pread(fd, name, PATH_CAP, (off_t)where);
    close(fd);
    if (n <= 0) return;
    name[n] = 0;
    size_t len = strlen(name);
    if (!len) return;
    char seen[PATH_CAP + 64];
    if (name[0] == '/') snprintf(seen, sizeof seen, "/proc/%d/root%s", (int)pid, name);
    else if (dirfd == AT_FDCWD) snprintf(seen, sizeof seen, "/proc/%d/cwd/%s", (int)pid, name);
    else snprintf(seen, sizeof seen, "/proc/%d/fd/%ld/%s", (int)pid, dirfd, name);
    struct stat st;
    if (stat(seen, &st) != 0 || !S_ISFIFO(st.st_mode)) return;
    char rec[PATH_CAP + 32];
    int h = snprintf(rec, sizeof rec, "%d ", (int)pid);
    memcpy(rec + h, name, len);
    emit("stuckfd", rec, (size_t)h + len);
}

/*
 * At test.sh's timeout, before the kill: what each process of its session and their
 * descendants was doing, as "stuck PID STATE WCHAN EXE" (at most STUCK_CAP; the rest counted),
 * each followed by the FIFOs it holds open. State T/t means someone stopped it; the wchan and a
 * FIFO path say what it waits on.
 */
void report_stuck(pid_t sid, pid_t self_sid) {
    static unsigned char member[SNAP_CAP];
    static unsigned char is_member_pid[PID_LIMIT / 8]; /* a bitmap: linear rounds, however many processes */
    snapshot();
    memset(member, 0, sizeof member);
    memset(is_member_pid, 0, sizeof is_member_pid);
    for (int changed = 1, round = 0; changed && round < 100; round++) { /* a round per generation */
        changed = 0;
        for (int i = 0; i < nsnap; i++) {
            pid_t pp = snap[i].ppid;
            if (member[i] || snap[i].pid == 1 || snap[i].sid == self_sid || snap[i].pid >= PID_LIMIT) continue;
            int in = snap[i].sid == sid || (pp > 0 && pp < PID_LIMIT && (is_member_pid[pp / 8] & (1 << (pp % 8))));
            if (!in) continue;
            member[i] = changed = 1;
            is_member_pid[snap[i].pid / 8] |= (unsigned char)(1 << (snap[i].pid % 8));
        }
    }
    int listed = 0, more = 0;
    for (int i = 0; i < nsnap; i++) {
        if (!member[i]) continue;
        if (listed >= STUCK_CAP) { more++; continue; }
        listed++;
        pid_t pid = snap[i].pid;
        char path[64], wchan[64], exe[PATH_CAP + 1];
        snprintf(path, sizeof path, "/proc/%d/wchan", (int)pid);
        ssize_t n = read_small(path, wchan, sizeof wchan - 1);
        wchan[n > 0 ? n : 0] = 0;
        if (!wchan[0]) snprintf(wchan, sizeof wchan, "?");
        token(wchan);
        snprintf(path, sizeof path, "/proc/%d/exe", (int)pid);
        n = readlink(path, exe, PATH_CAP);
        if (n <= 0) n = snprintf(exe, sizeof exe, "?");
        char rec[PATH_CAP + 160];
        int h = snprintf(rec, sizeof rec, "%d %c %s ", (int)pid, snap[i].state, wchan);
        memcpy(rec + h, exe, (size_t)n);
        emit("stuck", rec, (size_t)h + (size_t)n);
        report_fifos(pid);
        report_opening_fifo(pid);
    }
    if (more) emitf("more", "%d stuck", more);
}
