/*
 * runner: start tbflow's supplied verifier runner (verify.c's second form) so that nothing in the
 * container steers or reaches it: its environment scrubbed of what steers a loader, an
 * interpreter or pytest, and exec'd so the kernel makes it non-dumpable.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "judge.h"

/* Variables that steer a loader, an interpreter, pytest or TLS before a test runs: the image or
 * the task may set them for the container's programs, never for tbflow's runner. */
static const char *const SCRUBBED[] = {"LD_", "GLIBC_TUNABLES", "PYTHON", "PYTEST_", "OPENSSL_", "SSL_CERT_",
                                       "LOCPATH", "GCONV_PATH", "NLSPATH", "MALLOC_", NULL};

static void scrub_environment(void) {
    extern char **environ;
    for (char **e = environ; *e;) {
        int hit = 0;
        for (const char *const *p = SCRUBBED; *p && !hit; p++) hit = !strncmp(*e, *p, strlen(*p));
        if (!hit) { e++; continue; }
        char name[256];
        size_t n = strcspn(*e, "=");
        if (n >= sizeof name) { **e = '\0'; e++; continue; } /* too long to be a name a tool reads */
        memcpy(name, *e, n);
        name[n] = '\0';
        unsetenv(name); /* shifts environ: look at the same slot again */
    }
}

/*
 * Start the runner non-dumpable: the kernel marks a process non-dumpable when it execs a file its
 * credentials could not read. The runner's interpreter is execute-only (0111) on its mount, and the
 * child drops CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH before execve (root gets them back at exec),
 * so no process of the agent's, root or not, may ptrace it or open its /proc/PID/mem.
 */
void run_runner(char **runner) {
    scrub_environment();
    struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct data[2];
    if (syscall(SYS_capget, &hdr, data) == 0) {
        data[0].effective &= ~((1u << CAP_DAC_OVERRIDE) | (1u << CAP_DAC_READ_SEARCH));
        syscall(SYS_capset, &hdr, data);
    }
    execv(runner[0], runner);
    dprintf(2, "tbflow-judge: cannot run %s: %s\n", runner[0], strerror(errno));
    _exit(127);
}
