/*
 * verify: run the task's /tests/test.sh and report what it left, on the channel only.
 *
 *   tbflow-judge verify WORKDIR TIMEOUT_MS BASH
 *   tbflow-judge verify WORKDIR TIMEOUT_MS BASH -- RUNNER ARGS...
 *
 * The second form runs tbflow's supplied runner (an interpreter on a read-only mount, prepared on
 * the host: tasks_lib/container/supplied_runner) instead of BASH /tests/test.sh, with the loader's,
 * Python's and pytest's environment variables removed and started so the kernel makes it
 * non-dumpable (run_runner): nothing in the container can trace it or write its memory.
 *
 * 1. lists the processes the verifier will run next to (before the clock starts);
 * 2. repairs what test.sh needs and the agent may have broken (/logs, /logs/verifier, the
 *    workdir, /tmp, the standard /dev nodes), reporting each repair as a note; reports any
 *    reward.* entry found before test.sh (of any type, within the channel's budget: judge.h)
 *    and sets /logs/verifier aside whole, so a fresh one can always be made (tidy.c);
 * 3. runs BASH /tests/test.sh in a session of its own, stdin an empty pipe (never /dev/null,
 *    which the agent may have replaced by a FIFO), stdout+stderr to a test-stdout.txt it
 *    created itself, under TIMEOUT_MS; at the deadline it first reports what test.sh's
 *    processes were doing ("stuck": state, wait channel, FIFOs they hold open), then kills the
 *    session; the CPU the agent's leftover processes used meanwhile is one "agentcpu" record;
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
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "judge.h"

/* One reward.* entry, if there: a regular file as "SIZE NAMELEN NAME" then up to CAP of its bytes
 * (a name may hold spaces, the length says where it ends), anything else by its type. */
static void report_entry(int dirfd, const char *name, const char *tag, size_t cap) {
    const char *type_tag = strcmp(tag, "pre") ? "ftype" : "pretype";
    struct stat st;
    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) return;
    if (!S_ISREG(st.st_mode)) { emitf(type_tag, "%s %s", type_name(st.st_mode), name); return; }
    int rf = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (rf < 0) { emitf(type_tag, "unreadable %s", name); return; }
    static char buf[REWARD_CAP], rec[REWARD_CAP + 512];
    size_t got = 0;
    ssize_t n;
    while (got < cap && (n = read(rf, buf + got, cap - got)) > 0) got += (size_t)n;
    struct stat fst;
    if (fstat(rf, &fst) != 0) fst.st_size = st.st_size;
    close(rf);
    int h = snprintf(rec, 512, "%lld %zu %s", (long long)fst.st_size, strlen(name), name);
    if (h >= 512) return;
    memcpy(rec + h, buf, got);
    emit(tag, rec, (size_t)h + got);
}

/* d_type as type_name says it; an fstatat only where the file system does not tell. */
static const char *entry_type(int dirfd, const struct dirent *e) {
    switch (e->d_type) {
    case DT_REG: return "file";
    case DT_DIR: return "directory";
    case DT_LNK: return "symlink";
    case DT_FIFO: return "fifo";
    case DT_SOCK: return "socket";
    case DT_CHR: return "char-device";
    case DT_BLK: return "block-device";
    default: break;
    }
    struct stat st;
    return fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 ? type_name(st.st_mode) : "unknown";
}

/* Entries other than reward.* found in /logs/verifier before test.sh: the directory is test.sh's,
 * so whatever the agent left there (a tree 5000 deep, thousands of files) is tampering, set aside
 * with the rest; one note counts them and names the first OTHERS_NAMED (issue 38: only reward.*
 * entries were reported, so such a tree went unflagged). */
struct others { long count; int capped; size_t used; char named[1200]; };

static void other_seen(struct others *o, int dirfd, const struct dirent *e) {
    if (o->count++ >= OTHERS_NAMED || o->used >= sizeof o->named) return;
    int n = snprintf(o->named + o->used, sizeof o->named - o->used, "%s%s %s", o->used ? ", " : "",
                     entry_type(dirfd, e), e->d_name);
    if (n > 0) o->used += (size_t)n;
}

static void note_others(const struct others *o) {
    if (!o->count) return;
    emitf("note", "/logs/verifier held %s%ld entr%s other than reward.* before the verifier started (set aside "
          "before test.sh ran): %s%s", o->capped ? "at least " : "", o->count, o->count == 1 ? "y" : "ies",
          o->named, o->count > OTHERS_NAMED ? ", ..." : "");
}

/*
 * Every reward.* entry in DIRFD, whatever its type; TAG is "pre" (before test.sh) or "file" (at
 * its exit). The agent decides how many there are and how big (judge.h, the channel's budget):
 * reward.txt and reward.json, the only ones a reward is read from, are reported in full (up to
 * REWARD_CAP); any other, as evidence only, by its first ENTRY_HEAD_CAP bytes, at most
 * ENTRY_LIST_CAP of them, then a count ("more N TAG"). Before test.sh, the other entries are
 * counted too (note_others); at most ENTRY_SCAN_CAP entries are read, so the counts are then
 * lower bounds.
 */
static void report_reward_entries(int dirfd, const char *tag) {
    report_entry(dirfd, "reward.txt", tag, REWARD_CAP);
    report_entry(dirfd, "reward.json", tag, REWARD_CAP);
    int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) { if (fd >= 0) close(fd); return; }
    struct dirent *e;
    int listed = 0, more = 0, pre = !strcmp(tag, "pre");
    long seen = 0;
    struct others others = {0};
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        if (++seen > ENTRY_SCAN_CAP) { others.capped = 1; break; }
        if (strncmp(e->d_name, "reward.", 7) != 0) {
            if (pre) other_seen(&others, dirfd, e);
            continue;
        }
        if (!strcmp(e->d_name, "reward.txt") || !strcmp(e->d_name, "reward.json")) continue;
        if (listed >= ENTRY_LIST_CAP) { more++; continue; }
        report_entry(dirfd, e->d_name, tag, ENTRY_HEAD_CAP);
        listed++;
    }
    closedir(d);
    if (more) emitf("more", "%d %s", more, tag);
    if (pre) note_others(&others);
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

/* The kernel's count of OOM kills in the container's memory cgroup (v2 memory.events, v1
 * memory.oom_control): -1 when neither can be read. A test.sh killed by SIGKILL is the OOM
 * killer's doing only if this count grew while it ran. */
static long long oom_kills(void) {
    static const char *files[] = {"/sys/fs/cgroup/memory.events", "/sys/fs/cgroup/memory/memory.oom_control"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        char buf[1024];
        ssize_t n = read_small(files[i], buf, sizeof buf - 1);
        if (n <= 0) continue;
        buf[n] = 0;
        char *k = strstr(buf, "oom_kill ");
        long long v;
        if (k && (k == buf || k[-1] == '\n') && sscanf(k, "oom_kill %lld", &v) == 1) return v;
    }
    return -1;
}

static long long now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static pid_t start_test(const char *bash, char **runner, int outfd, const sigset_t *oldmask) {
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
        if (runner) run_runner(runner);
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
        set_aside_in(logsfd, "/logs", "verifier"); /* whatever it held: a fresh one is made below */
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
        set_aside(workdir);
    } else {
        emitf("note", "the workdir %s was removed; tbflow recreated it", workdir);
    }
    ensure_dirs_upward(workdir);
    if (chdir(workdir) != 0) emitf("fail", "cd %s: %s", workdir, strerror(errno));
}

/*
 * test.sh's package caches start empty, in a directory only the judge made: a uv, pip or XDG cache
 * the agent filled (honestly, by testing its work with uvx, or with a forged pytest) would
 * otherwise be what the verifier's runner is installed from. What the tests observe is unchanged;
 * variables the image or the task set are left alone.
 */
static void fresh_caches(void) {
    static char dir[] = "/tmp/tbflow-verifier-cache-XXXXXX";
    if (!mkdtemp(dir)) return;
    static const char *const vars[][2] = {{"XDG_CACHE_HOME", ""}, {"UV_CACHE_DIR", "/uv"}, {"PIP_CACHE_DIR", "/pip"}};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        if (getenv(vars[i][0])) continue;
        char value[128];
        snprintf(value, sizeof value, "%s%s", dir, vars[i][1]);
        setenv(vars[i][0], value, 1);
    }
}

int verify_main(int argc, char **argv) {
    char **runner = argc > 6 && !strcmp(argv[5], "--") ? argv + 6 : NULL;
    if (argc != 5 && !runner) { emitf("fail", "usage: verify WORKDIR TIMEOUT_MS BASH [-- RUNNER ARGS...]"); return 2; }
    const char *workdir = argv[2], *bash = argv[4];
    long long timeout_ms = atoll(argv[3]);
    long long t0 = now_ms();
    list_processes("proc", getsid(0));
    agent_cpu_mark(getsid(0)); /* the processes just listed */
    /* From here on, files the agent's processes write are counted (write_bytes); anything the host
     * finds written before this moment cannot be test.sh's, which has not started yet. */
    prctl(PR_SET_CHILD_SUBREAPER, 1); /* test.sh's orphans stay the judge's: see writes_since_mark */
    writes_mark(getsid(0));
    struct timespec marked;
    clock_gettime(CLOCK_REALTIME, &marked);
    long long t_list = now_ms() - t0;
    repair_devices();
    int vdirfd = -1;
    if (prepare_logs(&vdirfd) != 0) return 0;
    enter_workdir(workdir);
    fresh_caches();
    if (access(bash, X_OK) != 0) { emitf("nobash", "%s", bash); return 0; }
    /* the runner's mount is tbflow's and read-only: its absence is the host's, never the agent's */
    if (runner && access(runner[0], X_OK) != 0) { emitf("norunner", "%s: %s", runner[0], strerror(errno)); return 0; }
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
    long long cpu_start = agent_cpu_ticks(), cpu_end, oom_start = oom_kills();
    long long t_start = now_ms();
    pid_t pid = start_test(bash, runner, outfd, &old);
    if (pid < 0) { emitf("fail", "could not start test.sh: %s", strerror(errno)); return 0; }
    int status = 0;
    if (wait_test(pid, t_start + timeout_ms, sfd, ifd, &w, &status)) {
        report_stuck(pid, getsid(0)); /* what it waits on, before the kill changes it */
        cpu_end = agent_cpu_ticks();
        kill_sessions(&pid, 1, getsid(0), KILLED_VERIFY_CAP);
        kill(-pid, SIGKILL);
        waitpid(pid, &status, 0);
        emitf("timeout", "%lld", timeout_ms);
    } else {
        cpu_end = agent_cpu_ticks();
        if (WIFEXITED(status)) emitf("exit", "%d", WEXITSTATUS(status));
        else emitf("signal", "%d", WTERMSIG(status));
    }
    emitf("agentcpu", "%lld %lld %ld", cpu_start, cpu_end, sysconf(_SC_CLK_TCK));
    long long oom_end = oom_kills();
    emitf("oomkills", "%lld", oom_start < 0 || oom_end < 0 ? -1LL : oom_end - oom_start);
    /* Taken before the count, on the clock the kernel stamps ctimes with: a file the agent's
     * processes change after this moment (a module swapped in for test.sh and put back once it
     * ended) shows a ctime at or past it, whether or not the count saw the write. */
    struct timespec counted;
    clock_gettime(CLOCK_REALTIME_COARSE, &counted);
    long long agent_wrote = writes_since_mark(getsid(0));
    emitf("agentio", "%lld %lld %lld", agent_wrote, (long long)marked.tv_sec * 1000000000LL + marked.tv_nsec,
          (long long)counted.tv_sec * 1000000000LL + counted.tv_nsec);
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
