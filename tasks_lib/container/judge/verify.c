/*
 * verify: run the task's /tests/test.sh and report what it left, on the channel only.
 *
 *   tbflow-judge verify WORKDIR TIMEOUT_MS BASH
 *
 * 1. lists the processes the verifier will run next to (before the clock starts);
 * 2. repairs what test.sh needs and the agent may have broken (/logs, /logs/verifier, the
 *    workdir, /tmp, the standard /dev nodes), reporting each repair as a note; reports any
 *    reward.* entry found before test.sh (of any type) and removes /logs/verifier whole;
 * 3. runs BASH /tests/test.sh in a session of its own, stdin an empty pipe (never /dev/null,
 *    which the agent may have replaced by a FIFO), stdout+stderr to a test-stdout.txt it
 *    created itself, under TIMEOUT_MS (the session is killed at the deadline);
 * 4. watches /logs/verifier with inotify meanwhile (rewrites of the reward files, the directory
 *    moved or removed) and, the moment test.sh exits, reads the reward files through the
 *    directory it created, without following links and without blocking on a FIFO.
 * /tests is a read-only volume the host filled after the agent: nothing in the container can
 * have planted or changed a file there.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "judge.h"

static const char *type_name(mode_t m) {
    if (S_ISREG(m)) return "file";
    if (S_ISDIR(m)) return "directory";
    if (S_ISLNK(m)) return "symlink";
    if (S_ISFIFO(m)) return "fifo";
    if (S_ISSOCK(m)) return "socket";
    if (S_ISCHR(m)) return "char-device";
    if (S_ISBLK(m)) return "block-device";
    return "unknown";
}

/* Remove NAME under DIRFD, recursively, never following a link. Bounded in depth. */
static void remove_at(int dirfd, const char *name, int depth) {
    if (unlinkat(dirfd, name, 0) == 0 || errno == ENOENT) return;
    if (depth > 64) return;
    int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return;
    DIR *d = fdopendir(fd);
    if (!d) { close(fd); return; }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        remove_at(fd, e->d_name, depth + 1);
    }
    closedir(d);
    unlinkat(dirfd, name, AT_REMOVEDIR);
}

/* A real directory at PATH (made if missing, replaced if it is anything else); its fd. */
static int ensure_dir(const char *path, mode_t mode, int *repaired) {
    struct stat st;
    *repaired = 1;
    if (lstat(path, &st) == 0 && !S_ISDIR(st.st_mode)) {
        emitf("note", "%s was replaced by a non-directory; tbflow recreated it", path);
        emitf("note-detail", "%s was a %s", path, type_name(st.st_mode));
        unlink(path);
    } else if (lstat(path, &st) != 0) {
        emitf("note", "%s was removed; tbflow recreated it", path);
    } else {
        *repaired = 0;
    }
    if (mkdir(path, mode) != 0 && errno != EEXIST) return -1;
    chmod(path, mode);
    return open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

static void ensure_dirs_upward(const char *path) {
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        mkdir(buf, 0755);
        *p = '/';
    }
    mkdir(buf, 0755);
}

static void repair_devices(void) {
    static const struct { const char *path; unsigned maj, min; } devs[] = {
        {"/dev/null", 1, 3}, {"/dev/zero", 1, 5}, {"/dev/full", 1, 7},
        {"/dev/random", 1, 8}, {"/dev/urandom", 1, 9}, {"/dev/tty", 5, 0},
    };
    for (size_t i = 0; i < sizeof devs / sizeof devs[0]; i++) {
        struct stat st;
        dev_t want = makedev(devs[i].maj, devs[i].min);
        if (lstat(devs[i].path, &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == want) continue;
        int existed = lstat(devs[i].path, &st) == 0;
        emitf("note", "%s was %s%s; tbflow recreated the device", devs[i].path, existed ? "replaced by a " : "missing",
              existed ? type_name(st.st_mode) : "");
        if (existed) remove_at(AT_FDCWD, devs[i].path, 0);
        if (mknod(devs[i].path, S_IFCHR | 0666, want) == 0) chmod(devs[i].path, 0666);
    }
    struct stat st;
    if (lstat("/tmp", &st) != 0 || !S_ISDIR(st.st_mode) || (st.st_mode & 07777) != 01777) {
        emitf("note", "/tmp was %s; tbflow made it a mode-1777 directory",
              lstat("/tmp", &st) != 0 ? "missing" : S_ISDIR(st.st_mode) ? "not mode 1777" : type_name(st.st_mode));
        if (lstat("/tmp", &st) == 0 && !S_ISDIR(st.st_mode)) unlink("/tmp");
        mkdir("/tmp", 01777);
        chmod("/tmp", 01777);
    }
}

/* Report every reward.* entry in DIRFD, whatever its type; PREFIX is "pre" or "file". */
static void report_reward_entries(int dirfd, const char *tag) {
    int fd = dup(dirfd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) { if (fd >= 0) close(fd); return; }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, "reward.", 7) != 0) continue;
        struct stat st;
        if (fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
        if (!S_ISREG(st.st_mode)) {
            emitf(strcmp(tag, "pre") ? "ftype" : "pretype", "%s %s", type_name(st.st_mode), e->d_name);
            continue;
        }
        int rf = openat(dirfd, e->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (rf < 0) { emitf(strcmp(tag, "pre") ? "ftype" : "pretype", "unreadable %s", e->d_name); continue; }
        static char buf[REWARD_CAP];
        size_t got = 0;
        ssize_t n;
        while (got < sizeof buf && (n = read(rf, buf + got, sizeof buf - got)) > 0) got += (size_t)n;
        struct stat fst;
        fstat(rf, &fst);
        close(rf);
        /* "SIZE NAMELEN NAME" then the bytes: a name may hold spaces, the length says where it ends */
        char head[512];
        int h = snprintf(head, sizeof head, "%lld %zu %s", (long long)fst.st_size, strlen(e->d_name), e->d_name);
        if (h >= (int)sizeof head) continue;
        static char rec[REWARD_CAP + 512];
        memcpy(rec, head, (size_t)h);
        memcpy(rec + h, buf, got);
        emit(tag, rec, (size_t)h + got);
    }
    closedir(d);
}

struct watch_counts { int writes_txt, writes_json, moved_in, created, deleted, moved_out, self_gone, overflow; };

static void drain_inotify(int ifd, struct watch_counts *w) {
    char buf[8192] __attribute__((aligned(__alignof__(struct inotify_event))));
    for (;;) {
        ssize_t n = read(ifd, buf, sizeof buf);
        if (n <= 0) return;
        for (char *p = buf; p < buf + n;) {
            struct inotify_event *ev = (struct inotify_event *)p;
            const char *name = ev->len ? ev->name : "";
            int reward = !strncmp(name, "reward.", 7);
            if (ev->mask & IN_Q_OVERFLOW) w->overflow++;
            if (ev->mask & (IN_MOVE_SELF | IN_DELETE_SELF)) w->self_gone++;
            if (reward && (ev->mask & IN_CLOSE_WRITE)) {
                if (!strcmp(name, "reward.json")) w->writes_json++; else w->writes_txt++;
            }
            if (reward && (ev->mask & IN_MOVED_TO)) w->moved_in++;
            if (reward && (ev->mask & IN_CREATE)) w->created++;
            if (reward && (ev->mask & IN_DELETE)) w->deleted++;
            if (reward && (ev->mask & IN_MOVED_FROM)) w->moved_out++;
            p += sizeof(struct inotify_event) + ev->len;
        }
    }
}

/* The kernel's own numbers (statfs), never the image's df: "disk PATH FSTYPE TOTAL_KB AVAIL_KB". */
static void report_disks(const char *workdir) {
    const char *paths[] = {"/", "/tmp", "/logs/verifier", "/tests", workdir};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        struct statfs fs;
        if (!*paths[i] || statfs(paths[i], &fs) != 0) continue;
        emitf("disk", "%lx %llu %llu %s", (unsigned long)fs.f_type,
              (unsigned long long)fs.f_blocks * fs.f_bsize / 1024, (unsigned long long)fs.f_bavail * fs.f_bsize / 1024,
              paths[i]);
    }
}

static long long now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static pid_t start_test(const char *bash, int outfd, const sigset_t *oldmask) {
    int in[2];
    if (pipe2(in, O_CLOEXEC) != 0) return -1;
    pid_t pid = fork();
    if (pid == 0) {
        setsid();
        sigprocmask(SIG_SETMASK, oldmask, NULL);
        signal(SIGPIPE, SIG_DFL);
        dup2(in[0], 0);
        dup2(outfd, 1);
        dup2(outfd, 2);
        close_from(3);
        char *argv[] = {"bash", "/tests/test.sh", NULL};
        execv(bash, argv);
        dprintf(2, "tbflow-judge: cannot run %s: %s\n", bash, strerror(errno));
        _exit(127);
    }
    close(in[0]);
    close(in[1]); /* test.sh reads an empty stdin */
    return pid;
}

/* Wait for test.sh until the deadline; the inotify counts are taken meanwhile. */
static int wait_test(pid_t pid, long long deadline, int sfd, int ifd, struct watch_counts *w, int *status) {
    for (;;) {
        if (waitpid(pid, status, WNOHANG) == pid) return 0;
        long long left = deadline - now_ms();
        if (left <= 0) return 1;
        struct pollfd fds[2] = {{sfd, POLLIN, 0}, {ifd, POLLIN, 0}};
        int n = poll(fds, ifd >= 0 ? 2 : 1, left > 1000 ? 1000 : (int)left);
        if (n > 0 && (fds[0].revents & POLLIN)) {
            struct signalfd_siginfo si;
            while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {}
        }
        if (n > 0 && ifd >= 0 && (fds[1].revents & POLLIN)) drain_inotify(ifd, w);
    }
}

static int prepare_logs(int *vdirfd) {
    int repaired;
    int logsfd = ensure_dir("/logs", 0755, &repaired);
    if (logsfd < 0) { emitf("fail", "/logs could not be created: %s", strerror(errno)); return -1; }
    struct stat st;
    if (fstatat(logsfd, "verifier", &st, AT_SYMLINK_NOFOLLOW) == 0) {
        if (S_ISDIR(st.st_mode)) {
            int old = openat(logsfd, "verifier", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (old >= 0) { report_reward_entries(old, "pre"); close(old); }
        } else {
            emitf("note", "/logs/verifier was replaced by a non-directory; tbflow recreated it");
            emitf("note-detail", "/logs/verifier was a %s", type_name(st.st_mode));
        }
        remove_at(logsfd, "verifier", 0);
    } else if (!repaired) {
        emitf("note", "/logs/verifier was removed; tbflow recreated it");
    }
    if (mkdirat(logsfd, "verifier", 0777) != 0 || fchmodat(logsfd, "verifier", 0777, 0) != 0) {
        emitf("fail", "/logs/verifier could not be created: %s", strerror(errno));
        close(logsfd);
        return -1;
    }
    *vdirfd = openat(logsfd, "verifier", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    close(logsfd);
    return *vdirfd < 0 ? -1 : 0;
}

static void enter_workdir(const char *workdir) {
    if (!*workdir) return;
    struct stat st;
    if (stat(workdir, &st) == 0 && S_ISDIR(st.st_mode)) {
        if (chdir(workdir) == 0) return;
    } else if (lstat(workdir, &st) == 0) {
        emitf("note", "the workdir %s was replaced by a non-directory; tbflow recreated it", workdir);
        emitf("note-detail", "the workdir %s was a %s", workdir, type_name(st.st_mode));
        remove_at(AT_FDCWD, workdir, 0);
    } else {
        emitf("note", "the workdir %s was removed; tbflow recreated it", workdir);
    }
    ensure_dirs_upward(workdir);
    if (chdir(workdir) != 0) emitf("fail", "cd %s: %s", workdir, strerror(errno));
}

int verify_main(int argc, char **argv) {
    if (argc != 5) { emitf("fail", "usage: verify WORKDIR TIMEOUT_MS BASH"); return 2; }
    const char *workdir = argv[2], *bash = argv[4];
    long long timeout_ms = atoll(argv[3]);
    long long t0 = now_ms();
    list_processes("proc", getsid(0));
    long long t_list = now_ms() - t0;
    repair_devices();
    int vdirfd = -1;
    if (prepare_logs(&vdirfd) != 0) return 0;
    enter_workdir(workdir);
    if (access(bash, X_OK) != 0) { emitf("nobash", "%s", bash); return 0; }
    int outfd = openat(vdirfd, "test-stdout.txt", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (outfd < 0) { emitf("fail", "test-stdout.txt could not be created: %s", strerror(errno)); return 0; }
    int ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (ifd >= 0)
        inotify_add_watch(ifd, "/logs/verifier", IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE |
                                                     IN_DELETE | IN_MOVE_SELF | IN_DELETE_SELF | IN_DONT_FOLLOW);
    sigset_t chld, old;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, &old);
    int sfd = signalfd(-1, &chld, SFD_NONBLOCK | SFD_CLOEXEC);
    struct watch_counts w = {0};
    long long t_start = now_ms();
    pid_t pid = start_test(bash, outfd, &old);
    if (pid < 0) { emitf("fail", "could not start test.sh: %s", strerror(errno)); return 0; }
    int status = 0;
    if (wait_test(pid, t_start + timeout_ms, sfd, ifd, &w, &status)) {
        kill_sessions(&pid, 1, getsid(0));
        kill(-pid, SIGKILL);
        waitpid(pid, &status, 0);
        emitf("timeout", "%lld", timeout_ms);
    } else if (WIFEXITED(status)) {
        emitf("exit", "%d", WEXITSTATUS(status));
    } else {
        emitf("signal", "%d", WTERMSIG(status));
    }
    long long t_test = now_ms() - t_start;
    if (ifd >= 0) drain_inotify(ifd, &w);
    struct stat now_st, ours;
    if (stat("/logs/verifier", &now_st) != 0 || fstat(vdirfd, &ours) != 0 || now_st.st_ino != ours.st_ino ||
        now_st.st_dev != ours.st_dev)
        w.self_gone++;
    report_reward_entries(vdirfd, "file");
    struct stat rst;
    if (fstatat(vdirfd, "reward.txt", &rst, AT_SYMLINK_NOFOLLOW) != 0 &&
        fstatat(vdirfd, "reward.json", &rst, AT_SYMLINK_NOFOLLOW) != 0)
        report_disks(workdir);
    struct stat ost;
    fstat(outfd, &ost);
    emitf("stdout", "%lld", (long long)ost.st_size);
    emitf("watch", "writes_txt=%d writes_json=%d moved_in=%d created=%d deleted=%d moved_out=%d dir_replaced=%d "
          "overflow=%d", w.writes_txt, w.writes_json, w.moved_in, w.created, w.deleted, w.moved_out, w.self_gone,
          w.overflow);
    emitf("timing", "list_ms=%lld test_ms=%lld", t_list, t_test);
    return 0;
}
