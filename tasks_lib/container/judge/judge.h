/*
 * tbflow-judge: what tbflow runs inside a trial container, as one static binary.
 *
 * The design (README "The judge", docs/architecture.md §3): nothing that decides a verdict runs
 * on, reads through or waits on anything the agent can write or block. So this program uses no
 * shell, no PATH lookup, no file of the image and no directory the agent could have prepared; it
 * reaches tbflow through its own stdout only, which no process in the container can open: it is
 * started as an unprivileged uid from a setuid-root, execute-only file on a read-only volume, so
 * the kernel makes it non-dumpable from its first instruction (no /proc/<pid>/fd, no ptrace, no
 * /proc/<pid>/environ for anyone in the container, root included, without CAP_SYS_PTRACE).
 *
 * The channel: records "TAG LEN\n" + LEN bytes + "\n", nothing else. The host requires the first
 * record to be "hello", the last "end", and the exec's exit code as Docker reports it to be 0.
 *
 * After "end" the program does not exit (or, as the launcher, start the agent's command) until
 * the host has closed its side of the exec's stdin, which it does once it has read "end": Docker
 * can drop the last output of an exec whose process exits right after writing it (moby#27289;
 * seen here with two test suites running at once: a launcher's and a verifier's report lost
 * while their exit codes said 0). Bounded by HOST_ACK_MS, and immediate when stdin is not
 * attached (it is /dev/null then).
 */
#ifndef TBFLOW_JUDGE_H
#define TBFLOW_JUDGE_H

#include <stddef.h>
#include <sys/types.h>

/* The uid tbflow starts privileged modes as; only it (or root) may use them. */
#define JUDGE_UID 4242424
#define CMDLINE_CAP 1024        /* bytes of one process's command line reported */
#define PROC_LIST_CAP 2000      /* processes listed; the rest are counted */
#define REWARD_CAP 65536        /* bytes of one reward file reported */
#define MAX_SIDS 64
#define HOST_ACK_MS 10000       /* the longest the host may take to say it read "end" */

/* channel.c */
void emit(const char *tag, const void *data, size_t len);
void emitf(const char *tag, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void channel_init(void);
void end_report(void);
int write_all(int fd, const void *buf, size_t len);

/* procs.c */
struct proc_info {
    pid_t pid, ppid, pgrp, sid;
    char state;
};
int read_proc(pid_t pid, struct proc_info *out);
void list_processes(const char *tag, pid_t skip_sid);
int kill_sessions(const pid_t *sids, int nsids, pid_t self_sid);
void close_from(int lowfd);

/* verify.c */
int verify_main(int argc, char **argv);

#endif
