/*
 * tbflow-judge: what tbflow runs inside a trial container, as one static binary.
 *
 * The design (docs/judge.md, docs/architecture.md §3): nothing that decides a verdict runs
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
#define ENTRY_LIST_CAP 64       /* reward.* entries other than reward.txt/.json reported per listing */
#define ENTRY_HEAD_CAP 256      /* bytes reported of such an entry (evidence only: the reward is never there) */
#define ENTRY_SCAN_CAP 1000000L /* entries of /logs/verifier read per listing (the counts are then lower bounds) */
#define OTHERS_NAMED 4          /* entries other than reward.* named in the note on /logs/verifier before test.sh */
#define KILLED_VERIFY_CAP 64    /* processes listed as killed at test.sh's timeout (the stuck records say more) */
#define STUCK_CAP 64            /* processes of a hung test.sh reported before the kill */
#define STUCK_FD_CAP 4          /* FIFOs with a path reported per stuck process */
#define PATH_CAP 512            /* bytes of a path (an exe, a FIFO) in a stuck record */
#define NOTES_MAX 40            /* fixed-text records (notes, repairs, disks, results): a bound on their count */
#define EMITF_CAP 4095          /* the most an emitf record carries (channel.c) */

/*
 * The channel's budget. The host stops reading at judge_exec.MAX_BYTES (CHANNEL_MAX here) and
 * books a cut report as the judge killed, so a solved task would score 0: whatever the agent
 * controls (how many processes, how long their command lines, how many reward.* entries and how
 * big, how many processes a hung test.sh forked) has a cap, and the sum of all caps stays well
 * below it. REC_OVERHEAD: "TAG LEN\n" (the host allows 32 bytes) and the closing "\n".
 */
#define CHANNEL_MAX (8LL * 1024 * 1024)
#define REC_OVERHEAD 33LL
#define PROC_REC (CMDLINE_CAP + 96LL + REC_OVERHEAD)
#define ENTRY_NAME_REC (512LL + ENTRY_HEAD_CAP + REC_OVERHEAD)
/* one listing of reward.* entries: reward.txt and reward.json in full, the rest by head, a count */
#define ENTRIES_WORST (2 * (REWARD_CAP + 512LL + REC_OVERHEAD) + ENTRY_LIST_CAP * ENTRY_NAME_REC + 64)
#define STUCK_WORST (STUCK_CAP * (64LL + 64 + PATH_CAP + REC_OVERHEAD) + \
                     STUCK_CAP * STUCK_FD_CAP * (16LL + PATH_CAP + REC_OVERHEAD) + 64)
#define FIXED_WORST (NOTES_MAX * (EMITF_CAP + REC_OVERHEAD))
/* verify: proc list + pre and file listings + stuck + killed at the timeout + fixed records */
#define VERIFY_WORST (PROC_LIST_CAP * PROC_REC + 2 * ENTRIES_WORST + STUCK_WORST + KILLED_VERIFY_CAP * PROC_REC + \
                      FIXED_WORST)
/* kill: the killed list and the left list */
#define KILL_WORST (2 * PROC_LIST_CAP * PROC_REC + FIXED_WORST)
_Static_assert(VERIFY_WORST < CHANNEL_MAX / 2, "verify's report could come near the host's cap");
_Static_assert(KILL_WORST < CHANNEL_MAX * 5 / 8, "kill's report could come near the host's cap");

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
    unsigned long long ticks, start; /* utime+stime and starttime (/proc/PID/stat fields 14+15, 22) */
};
int read_proc(pid_t pid, struct proc_info *out);
void list_processes(const char *tag, pid_t skip_sid);
int kill_sessions(const pid_t *sids, int nsids, pid_t self_sid, int list_cap);
void close_from(int lowfd);
ssize_t read_small(const char *path, char *buf, size_t cap);
void agent_cpu_mark(pid_t skip_sid);
long long agent_cpu_ticks(void);
void writes_mark(pid_t self_sid);
long long writes_since_mark(pid_t self_sid);
void report_stuck(pid_t sid, pid_t self_sid);

/* tidy.c */
const char *type_name(mode_t m);
int set_aside(const char *path);
int set_aside_in(int dirfd, const char *dirpath, const char *name);
int ensure_dir(const char *path, mode_t mode, int *repaired);
void ensure_dirs_upward(const char *path);
void repair_devices(void);

/* verify.c */
int verify_main(int argc, char **argv);

/* runner.c */
void run_runner(char **runner) __attribute__((noreturn));

#endif
