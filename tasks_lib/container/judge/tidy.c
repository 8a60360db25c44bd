/*
 * Repairs before test.sh: what test.sh needs and the agent may have broken or filled (the
 * standard /dev nodes, /tmp, /logs, /logs/verifier, the workdir), made whole again as root.
 *
 * Whatever sits where a fresh entry must go is first renamed aside in its own directory
 * (".tbflow-old-NAME-PID-N", never replacing anything), so the fresh entry can always be made,
 * however deep or big the old one is; the old one is then removed with bounded work and without
 * recursion (purge). What is left of it after the budget is reported as "trash PATH", not
 * removed: it sits outside /logs/agent and /logs/verifier, the only parts of /logs the host
 * copies out (verifier_stage.LOG_DIRS). Links are never followed: entries are removed by name
 * (unlinkat) and directories opened with O_NOFOLLOW.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "judge.h"

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif

/* All purges together: at most this many removals/renames and this long (the host's grace on
 * top of the verifier timeout is 30 s, verifier_stage.JUDGE_GRACE_SEC). */
#define PURGE_OPS 2000000L
#define PURGE_MS 5000LL

static long purge_ops = PURGE_OPS;
static long long purge_deadline;

const char *type_name(mode_t m) {
    if (S_ISREG(m)) return "file";
    if (S_ISDIR(m)) return "directory";
    if (S_ISLNK(m)) return "symlink";
    if (S_ISFIFO(m)) return "fifo";
    if (S_ISSOCK(m)) return "socket";
    if (S_ISCHR(m)) return "char-device";
    if (S_ISBLK(m)) return "block-device";
    return "unknown";
}

static long long mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int purge_budget_left(void) {
    if (!purge_deadline) purge_deadline = mono_ms() + PURGE_MS;
    return purge_ops > 0 && mono_ms() < purge_deadline;
}

/* rename without replacing anything; the kernel's RENAME_NOREPLACE where the filesystem has it */
static int rename_noreplace(int from, const char *name, int to, const char *newname) {
    if (syscall(SYS_renameat2, from, name, to, newname, RENAME_NOREPLACE) == 0) return 0;
    if (errno != EINVAL && errno != ENOSYS) return -1;
    struct stat st;
    if (fstatat(to, newname, &st, AT_SYMLINK_NOFOLLOW) == 0) { errno = EEXIST; return -1; }
    return renameat(from, name, to, newname);
}

/* One entry gone: a non-directory or an empty directory. */
static int drop(int dirfd, const char *name) {
    purge_ops--;
    if (unlinkat(dirfd, name, 0) == 0 || errno == ENOENT) return 1;
    return unlinkat(dirfd, name, AT_REMOVEDIR) == 0;
}

/*
 * Remove the tree NAME under DIRFD with bounded work and no recursion: a non-empty directory
 * found two levels down is renamed up to the tree's top (within one filesystem, so it always
 * can be) and emptied in a later pass, so at most two directories are open at once however deep
 * the tree is. Passes go on while they make progress and the budget lasts. 0 when it is gone.
 */
static int purge(int dirfd, const char *name) {
    int top = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (top < 0) return drop(dirfd, name) ? 0 : -1;
    unsigned lifted = 0;
    int progress = 1;
    while (progress && purge_budget_left()) {
        progress = 0;
        int fd = openat(top, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC); /* a fresh read of the top */
        DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
        if (!d) { if (fd >= 0) close(fd); break; }
        struct dirent *e;
        while ((e = readdir(d)) != NULL && purge_budget_left()) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            if (drop(top, e->d_name)) { progress = 1; continue; }
            int sub = openat(top, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            DIR *sd = sub >= 0 ? fdopendir(sub) : NULL;
            if (!sd) { if (sub >= 0) close(sub); continue; }
            struct dirent *s;
            while ((s = readdir(sd)) != NULL && purge_budget_left()) {
                if (!strcmp(s->d_name, ".") || !strcmp(s->d_name, "..")) continue;
                if (drop(sub, s->d_name)) { progress = 1; continue; }
                char up[32];
                snprintf(up, sizeof up, ".l%u", lifted++);
                purge_ops--;
                if (rename_noreplace(sub, s->d_name, top, up) == 0) progress = 1;
            }
            closedir(sd);
            if (drop(top, e->d_name)) progress = 1;
        }
        closedir(d);
    }
    close(top);
    return drop(dirfd, name) ? 0 : -1;
}

/*
 * Make NAME under DIRFD (DIRPATH, for the reports) free: a non-directory is removed, anything
 * else renamed aside and purged. 0 when NAME no longer exists.
 */
int set_aside_in(int dirfd, const char *dirpath, const char *name) {
    struct stat st;
    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) return errno == ENOENT ? 0 : -1;
    if (!S_ISDIR(st.st_mode) && (unlinkat(dirfd, name, 0) == 0 || errno == ENOENT)) return 0;
    char aside[300];
    int moved = 0;
    for (int n = 0; n < 1000 && !moved; n++) {
        snprintf(aside, sizeof aside, ".tbflow-old-%.200s-%d-%d", name, (int)getpid(), n);
        if (rename_noreplace(dirfd, name, dirfd, aside) == 0) moved = 1;
        else if (errno != EEXIST && errno != ENOTEMPTY) break;
    }
    if (!moved) return purge(dirfd, name); /* e.g. EBUSY (a mount point): what can go, goes */
    if (purge(dirfd, aside) != 0) emitf("trash", "%s/%s", strcmp(dirpath, "/") ? dirpath : "", aside);
    return 0;
}

/* The same for an absolute PATH (its parent followed as the kernel resolves it). */
int set_aside(const char *path) {
    char parent[4096];
    snprintf(parent, sizeof parent, "%s", path);
    char *slash = strrchr(parent, '/');
    if (!slash || !slash[1]) return -1;
    const char *name = path + (slash - parent) + 1;
    if (slash == parent) slash[1] = 0; else *slash = 0;
    int dfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) return -1;
    int rc = set_aside_in(dfd, parent, name);
    close(dfd);
    return rc;
}

/* A real directory at PATH (made if missing, replaced if it is anything else); its fd. */
int ensure_dir(const char *path, mode_t mode, int *repaired) {
    struct stat st;
    *repaired = 1;
    if (lstat(path, &st) == 0 && !S_ISDIR(st.st_mode)) {
        emitf("note", "%s was replaced by a non-directory; tbflow recreated it", path);
        emitf("note-detail", "%s was a %s", path, type_name(st.st_mode));
        set_aside(path);
    } else if (lstat(path, &st) != 0) {
        emitf("note", "%s was removed; tbflow recreated it", path);
    } else {
        *repaired = 0;
    }
    if (mkdir(path, mode) != 0 && errno != EEXIST) return -1;
    chmod(path, mode);
    return open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

void ensure_dirs_upward(const char *path) {
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

void repair_devices(void) {
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
        if (existed) set_aside(devs[i].path);
        if (mknod(devs[i].path, S_IFCHR | 0666, want) == 0) chmod(devs[i].path, 0666);
    }
    struct stat st;
    if (lstat("/tmp", &st) != 0 || !S_ISDIR(st.st_mode) || (st.st_mode & 07777) != 01777) {
        emitf("note", "/tmp was %s; tbflow made it a mode-1777 directory",
              lstat("/tmp", &st) != 0 ? "missing" : S_ISDIR(st.st_mode) ? "not mode 1777" : type_name(st.st_mode));
        if (lstat("/tmp", &st) == 0 && !S_ISDIR(st.st_mode)) set_aside("/tmp");
        mkdir("/tmp", 01777);
        chmod("/tmp", 01777);
    }
}
