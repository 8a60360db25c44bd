/*
 * tbflow-judge / tbflow-launch: modes (judge.h says why the program is built this way).
 *
 *   tbflow-launch OUT ERR -- ARGV...   (0555, as the agent's user) report the session id, then
 *                                      run ARGV with stdin an empty pipe, stdout to OUT, stderr
 *                                      to ERR ("" = OUT); the exec's stream ends there
 *   tbflow-judge procs                 list processes
 *   tbflow-judge kill SID...           stop, then kill, those sessions and their descendants
 *   tbflow-judge verify ...            see verify.c
 *
 * The judge copy is setuid root and execute-only; it refuses anyone but JUDGE_UID and root, so a
 * non-root agent cannot use it to become root.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "judge.h"

#define VERSION "tbflow-judge 1"

static int launch_main(int argc, char **argv) {
    if (argc < 5 || strcmp(argv[3], "--") != 0) { emitf("fail", "usage: launch OUT ERR -- ARGV..."); return 2; }
    emitf("launch", "%d", (int)getsid(0));
    int in[2];
    if (pipe(in) != 0) return 126;
    close(in[1]);
    int out = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    int err = *argv[2] ? open(argv[2], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644) : out;
    if (out < 0 || err < 0) {
        emitf("fail", "cannot open the agent's log %s: %s", out < 0 ? argv[1] : argv[2], strerror(errno));
        return 126;
    }
    end_report();
    dup2(in[0], 0);
    dup2(out, 1);
    dup2(err, 2);
    close_from(3);
    execvp(argv[4], argv + 4);
    dprintf(2, "tbflow-launch: cannot run %s: %s\n", argv[4], strerror(errno));
    return 127;
}

static int become_root(void) {
    uid_t ruid = getuid();
    if (ruid != 0 && ruid != JUDGE_UID) return -1;
    if (geteuid() != 0) { emitf("fail", "not root (euid %d): the judge's volume lost its setuid bit", (int)geteuid()); return -2; }
    if (setgroups(0, NULL) != 0 || setresgid(0, 0, 0) != 0 || setresuid(0, 0, 0) != 0) {
        emitf("fail", "could not become root: %s", strerror(errno));
        return -2;
    }
    prctl(PR_SET_DUMPABLE, 0); /* already so when started setuid; this covers a start as root */
    return 0;
}

int main(int argc, char **argv) {
    channel_init();
    if (argc >= 2 && !strcmp(argv[1], "launch")) {
        if (getuid() != geteuid()) return 125; /* never run the agent from the setuid copy */
        return launch_main(argc - 1, argv + 1) == 0 ? 0 : 127;
    }
    int r = become_root();
    if (r == -1) return 125;
    emitf("hello", "%s pid=%d dumpable=%d", VERSION, (int)getpid(), prctl(PR_GET_DUMPABLE));
    if (r != 0) { end_report(); return 90; }
    int rc = 2;
    if (argc >= 2 && !strcmp(argv[1], "procs")) {
        list_processes("left", getsid(0));
        rc = 0;
    } else if (argc >= 2 && !strcmp(argv[1], "kill")) {
        pid_t sids[MAX_SIDS];
        int n = 0;
        for (int i = 2; i < argc && n < MAX_SIDS; i++) sids[n++] = (pid_t)atoi(argv[i]);
        kill_sessions(sids, n, getsid(0), PROC_LIST_CAP);
        list_processes("left", getsid(0));
        rc = 0;
    } else if (argc >= 2 && !strcmp(argv[1], "verify")) {
        rc = verify_main(argc, argv);
    } else {
        emitf("fail", "unknown mode");
    }
    end_report();
    return rc;
}
