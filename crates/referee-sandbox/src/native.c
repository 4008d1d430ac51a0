/* Referee sandbox: the zygote's request loop and a run's setup, in C.
 *
 * Built into a shared object at build time (build.rs), embedded in the Rust binary, handed to
 * the zygote as a sealed memfd and loaded with ctypes. Why C: the zygote is a fork server, and
 * every page it writes after a clone takes a copy-on-write fault, in it or in the run. Serving a
 * request in Python (header parsing, objects, reference counts) wrote ~185 pages per request,
 * and a run's setup in Python (mounts, descriptors, limits, uid, seccomp) another ~150. Here the
 * zygote's loop touches a few pages of stack and static buffers, and the run's setup none of
 * the interpreter's heap. A test's process returns out of `referee_serve` (or `referee_batch`)
 * into Python only to run its harness, which reads its inputs, says "setup done" on fd 4, and
 * runs the code.
 *
 * A request is a batch of a job's tests. The costly part of a run used to be its namespaces
 * and mounts (creating and tearing down a PID, mount, IPC and UTS namespace, /proc and a tmpfs
 * per test); now a batch gets them once, and its init (B) forks a process per test. B goes back
 * into Python once, as the "leader", to compile the job's code, so each test inherits the code
 * object instead of compiling it (a compile in a forked interpreter writes ~100 shared pages).
 *
 * The zygote still never reads a run's data: the inputs (code, stdin, arguments, tests) arrive
 * as descriptors and are passed on; the outputs go back as descriptors. The header is fixed-size
 * binary (limits, where each descriptor goes in the run) followed by a JSON tail that only the
 * run's Python parses (entry point, compiler argv). It comes from the Rust parent over a private
 * socketpair that no run holds (runs close every descriptor above 9, and fds 0-9 are theirs), so
 * it is not attack surface for the code under test; it is still checked field by field, and a
 * malformed request is answered with an error, never trusted.
 *
 * Only libc; no allocation after start-up; a test's process never returns to Python before its
 * setup succeeded (on failure it writes why to its stderr memfd and exits 112).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define REQ_MAGIC 0x32514652u /* "RFQ2" */
#define REP_MAGIC 0x32504652u /* "RFP2" */
#define MAX_BLOBS 64
#define MAX_TESTS 16
#define ALL_TESTS 0xff /* a descriptor every test of the batch gets (the code, a binary) */
#define CHILD_FDS 10 /* a run's fds 0-9; everything above is closed */
#define MAX_FILTERS 4
#define JSON_MAX 65536 /* entry point, check name, compiler argv: far less in practice */

/* Shared with slot.rs (`encode_request`, `Reply::decode`); the Rust side asserts the sizes.
 * One request is a batch: up to MAX_TESTS tests of one job (same mode, limits and JSON tail). */
struct req_hdr {
    uint32_t magic;
    uint8_t mode;   /* the harness, returned to the run's Python as is */
    uint8_t nblobs; /* descriptors attached, in order */
    uint8_t ntests; /* 1..MAX_TESTS */
    uint8_t pad0;
    uint16_t null_fds; /* bit i: fd i is /dev/null when no descriptor goes there */
    uint16_t pad1;
    uint32_t pad2;
    uint64_t wall_ms, cpu_ms, file_bytes, disk_bytes, processes, address_space_bytes;
    uint32_t json_len;
    uint32_t pad3;
    uint8_t target[MAX_BLOBS]; /* the test's fd for each descriptor: 0 (stdin) or 5-9 */
    uint8_t test[MAX_BLOBS];   /* which test gets it, or ALL_TESTS */
};

enum { END_EXITED = 1, END_SIGNALED = 2, END_SETUP_FAILED = 3, END_ERROR = 4, END_NOT_RUN = 5 };

/* One test's end, as the batch's PID 1 saw it. */
struct test_rec {
    uint32_t end;
    int32_t code; /* exit code, or the signal */
    uint32_t timed_out;
    uint32_t pad;
    uint64_t wall_us, cpu_us, maxrss_kb, stdout_size, stderr_size;
};

/* The reply: `end` is 0, or END_ERROR with `message` (then no records and no descriptors);
 * otherwise `ntests` records follow and 3 descriptors per test (stdout, stderr, result). */
struct reply {
    uint32_t magic;
    uint32_t end;
    uint32_t ntests;
    uint32_t pad;
    char message[120];
    struct test_rec recs[MAX_TESTS];
};

/* What Python gets back from referee_serve and referee_batch. `leader`: this is B, back in
 * Python once to compile the batch's code (at `code_fd`, -1 if none) before it calls
 * referee_batch; otherwise this is a test's process, ready to run. */
struct child_info {
    const char *json;
    size_t json_len;
    int32_t leader;
    int32_t code_fd;
};

_Static_assert(sizeof(struct req_hdr) == 200, "request layout");
_Static_assert(offsetof(struct req_hdr, wall_ms) == 16, "request layout");
_Static_assert(offsetof(struct req_hdr, target) == 72, "request layout");
_Static_assert(sizeof(struct test_rec) == 56, "reply layout");
_Static_assert(offsetof(struct reply, recs) == 136, "reply layout");

static struct sock_fprog filters[MAX_FILTERS];
static int nfilters;
static char json_buf[JSON_MAX];

/* A per-run seccomp filter (`struct sock_filter` bytes), copied once at start-up. */
int referee_add_filter(const void *prog, size_t len) {
    if (nfilters == MAX_FILTERS || len == 0 || len % sizeof(struct sock_filter) || len > 4096 * 8)
        return -1;
    void *copy = malloc(len);
    if (!copy)
        return -1;
    memcpy(copy, prog, len);
    filters[nfilters].len = (unsigned short)(len / sizeof(struct sock_filter));
    filters[nfilters].filter = copy;
    nfilters++;
    return 0;
}

static void close_all(const int *fds, int n) {
    for (int i = 0; i < n; i++)
        if (fds[i] >= 0)
            close(fds[i]);
}

static int send_reply(int sock, const struct reply *r, const int *fds, int nfds) {
    size_t len = offsetof(struct reply, recs) + r->ntests * sizeof(struct test_rec);
    struct iovec iov = {(void *)r, len};
    union {
        char buf[CMSG_SPACE(3 * MAX_TESTS * sizeof(int))];
        struct cmsghdr align;
    } u;
    struct msghdr m = {0};
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    if (nfds > 0) {
        memset(&u, 0, sizeof u);
        m.msg_control = u.buf;
        m.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
        struct cmsghdr *c = CMSG_FIRSTHDR(&m);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(nfds * sizeof(int));
        memcpy(CMSG_DATA(c), fds, nfds * sizeof(int));
    }
    for (;;) {
        ssize_t n = sendmsg(sock, &m, MSG_NOSIGNAL);
        if (n >= 0)
            return 0;
        if (errno != EINTR)
            return -1;
    }
}

static int send_error(int sock, const char *what, int err) {
    struct reply r;
    memset(&r, 0, offsetof(struct reply, recs));
    r.magic = REP_MAGIC;
    r.end = END_ERROR;
    snprintf(r.message, sizeof r.message, "%s%s%s", what, err ? ": " : "", err ? strerror(err) : "");
    return send_reply(sock, &r, NULL, 0);
}

/* ------------------------------------------------------------------------------------------ */
/* The batch's PID 1 (B): set up the namespaces once, then fork one process per test.         */
/*                                                                                            */
/* B never runs Python and never reads a test's inputs; it holds every test's descriptors      */
/* only to hand each test its own. A test's process (T) gets its own descriptors at 0-9 and    */
/* nothing else, its own CPU limit and OOM score, and returns into Python. Between two tests   */
/* B kills every process left in the namespace and reaps it, so nothing one test started      */
/* outlives it. B is uid 1000 like the tests but not dumpable (the uid change cleared it):    */
/* a test cannot read or write B's memory, open its descriptors through /proc, ptrace it       */
/* (seccomp), or signal it (PID 1 ignores signals it has no handler for).                     */

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* Where a setup failure is told: every test's stderr memfd (B) or the test's own fd 2 (T). */
static const int *fail_fds;
static int fail_nfds;

static void fail(const char *what) {
    int e = errno;
    char msg[200];
    int n = snprintf(msg, sizeof msg, "sandbox setup failed: %s: %s\n", what, strerror(e));
    if (n > 0) {
        size_t len = (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1;
        if (fail_nfds == 0)
            (void)!write(2, msg, len);
        for (int i = 0; i < fail_nfds; i++)
            (void)!write(fail_fds[i], msg, len);
    }
    _exit(112);
}

static void setlim(int res, uint64_t soft, uint64_t hard, const char *what) {
    struct rlimit r = {soft, hard};
    if (setrlimit(res, &r) != 0)
        fail(what);
}

/* `src[t]` is what becomes fd t (-1: nothing, -2: /dev/null). */
static void place_fds(int src[CHILD_FDS]) {
    int high[CHILD_FDS];
    /* Out of the way first: any source may sit where another must go. Under RLIMIT_NOFILE (256). */
    for (int t = 0; t < CHILD_FDS; t++) {
        high[t] = -1;
        if (src[t] == -2) {
            high[t] = open("/dev/null", O_RDONLY | O_CLOEXEC);
            if (high[t] < 0)
                fail("/dev/null");
            int h = fcntl(high[t], F_DUPFD_CLOEXEC, 128);
            if (h < 0)
                fail("dup");
            close(high[t]);
            high[t] = h;
        } else if (src[t] >= 0) {
            high[t] = fcntl(src[t], F_DUPFD_CLOEXEC, 128);
            if (high[t] < 0)
                fail("dup");
        }
    }
    for (int t = 0; t < CHILD_FDS; t++) {
        if (high[t] >= 0) {
            if (dup2(high[t], t) < 0) /* dup2 clears close-on-exec on t */
                fail("dup2");
        } else {
            close(t);
        }
    }
    /* Everything else: B's copies of every test's descriptors, its report, the high copies. */
    if (syscall(SYS_close_range, CHILD_FDS, ~0u, 0) != 0) {
        for (int fd = CHILD_FDS; fd < 65536; fd++)
            close(fd);
    }
}

/* In B, once: the namespaces' mounts, the limits every test shares, uid 1000, seccomp. */
static void batch_setup(const struct req_hdr *h, unsigned uid, int with_init) {
    if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "hidepid=2") != 0)
        fail("mount /proc");
    char opts[128];
    snprintf(opts, sizeof opts, "mode=0700,uid=%u,gid=%u,size=%llu", uid, uid,
             (unsigned long long)h->disk_bytes);
    if (mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, opts) != 0)
        fail("mount /tmp");
    /* /dev/shm links here: POSIX shared memory is per batch too. */
    if (mkdir("/tmp/.shm", 01777) != 0 || chmod("/tmp/.shm", 01777) != 0)
        fail("/tmp/.shm");
    if (chdir("/tmp") != 0)
        fail("chdir /tmp");
    setlim(RLIMIT_FSIZE, h->file_bytes, h->file_bytes, "RLIMIT_FSIZE");
    /* B's own CPU (the leader's compile; its loop takes next to none); each test lowers it to
     * its own limit, which is at most this. */
    uint64_t cpu = h->cpu_ms / 1000 + (h->cpu_ms % 1000 != 0);
    setlim(RLIMIT_CPU, cpu + 1, cpu + 1, "RLIMIT_CPU");
    /* The test's processes, and B when there is one (a uid's count in the namespace). */
    setlim(RLIMIT_NPROC, h->processes + with_init, h->processes + with_init, "RLIMIT_NPROC");
    if (h->address_space_bytes)
        setlim(RLIMIT_AS, h->address_space_bytes, h->address_space_bytes, "RLIMIT_AS");
    if (setresgid(uid, uid, uid) != 0)
        fail("setresgid");
    /* Leaves root of the namespace: all capabilities go, and B is no longer dumpable. */
    if (setresuid(uid, uid, uid) != 0)
        fail("setresuid");
    /* Die with the zygote; set after the uid change, which clears it. (Had the zygote died
     * before this line, B's report is never read and the batch ends with it.) */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0)
        fail("pdeathsig");
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        fail("no_new_privs");
    for (int i = 0; i < nfilters; i++)
        if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &filters[i], 0, 0) != 0)
            fail("seccomp");
}

/* In T, test k: its descriptors, its CPU limit, first in line for the OOM killer. */
static void test_setup(const struct req_hdr *h, const int *blobs, int k, const int *outs,
                       int setup_w) {
    int src[CHILD_FDS];
    for (int t = 0; t < CHILD_FDS; t++)
        src[t] = (h->null_fds >> t) & 1 ? -2 : -1;
    for (int i = 0; i < h->nblobs; i++)
        if (h->test[i] == ALL_TESTS || h->test[i] == k)
            src[h->target[i]] = blobs[i];
    src[1] = outs[3 * k];
    src[2] = outs[3 * k + 1];
    src[3] = outs[3 * k + 2];
    src[4] = setup_w;
    fail_fds = &outs[3 * k + 1]; /* from here on, failures go to this test's own stderr */
    fail_nfds = 1;
    place_fds(src);
    fail_nfds = 0; /* now fd 2 */
    /* Raising one's OOM score is unprivileged, but /proc/self of a process that is not
     * dumpable belongs to root: dumpable just for the write, before any untrusted code. */
    if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) != 0)
        fail("dumpable");
    int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
    if (fd < 0 || write(fd, "1000", 4) != 4)
        fail("oom_score_adj");
    close(fd);
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0)
        fail("dumpable");
    uint64_t cpu = h->cpu_ms / 1000 + (h->cpu_ms % 1000 != 0);
    if (cpu < 1)
        cpu = 1;
    setlim(RLIMIT_CPU, cpu, cpu + 1, "RLIMIT_CPU");
}

static uint64_t tv_us(struct timeval a) {
    return (uint64_t)a.tv_sec * 1000000u + (uint64_t)a.tv_usec;
}

/* A test's record from its wait status, its setup pipe (closed here) and its outputs. */
static void finish_record(struct test_rec *r, int st, int setup_r, uint64_t cpu_us,
                          uint64_t maxrss_kb, const int *outs3) {
    char s = 0;
    int setup_ok = read(setup_r, &s, 1) == 1 && s == 's';
    close(setup_r);
    r->cpu_us = cpu_us;
    r->maxrss_kb = maxrss_kb;
    if (!setup_ok && !r->timed_out) {
        r->end = END_SETUP_FAILED;
    } else if (WIFEXITED(st)) {
        r->end = END_EXITED;
        r->code = WEXITSTATUS(st);
    } else {
        r->end = END_SIGNALED;
        r->code = WTERMSIG(st);
    }
    struct stat sb;
    r->stdout_size = fstat(outs3[0], &sb) == 0 ? (uint64_t)sb.st_size : 0;
    r->stderr_size = fstat(outs3[1], &sb) == 0 ? (uint64_t)sb.st_size : 0;
}

/* Waits for `pid` until `deadline` (then kills it); returns whether the deadline passed. */
static int wait_deadline(pid_t pid, uint64_t deadline) {
    int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    int timed_out = 0;
    for (;;) {
        uint64_t t = now_ns();
        if (t >= deadline) {
            timed_out = 1;
            kill(pid, SIGKILL);
            break;
        }
        uint64_t left_ms = (deadline - t + 999999u) / 1000000u;
        if (pidfd < 0) {
            /* No pidfd (a kernel before 5.3): look for the exit every millisecond. */
            siginfo_t si;
            memset(&si, 0, sizeof si);
            if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid)
                break;
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
            continue;
        }
        struct pollfd p = {pidfd, POLLIN, 0};
        if (poll(&p, 1, left_ms > 60000 ? 60000 : (int)left_ms) > 0)
            break;
    }
    if (pidfd >= 0)
        close(pidfd);
    return timed_out;
}

/* Back to Python: `info` for a test's process (leader 0) or for B's one compile (leader 1). */
static int to_python(struct child_info *info, const struct req_hdr *h, int leader, int code_fd) {
    info->json = json_buf;
    info->json_len = h->json_len;
    info->leader = leader;
    info->code_fd = code_fd;
    return h->mode;
}

/* The batch B runs, kept from its request (B's own copy of the zygote's memory). */
static struct req_hdr bh;
static int b_blobs[MAX_BLOBS], b_outs[3 * MAX_TESTS], b_errs[MAX_TESTS], b_report = -1;

/* B's loop, called from Python after the leader's compile. Returns only in a test's process
 * (T), ready for Python; B itself exits. */
int referee_batch(struct child_info *info) {
    const struct req_hdr *h = &bh;
    const int *blobs = b_blobs, *outs = b_outs, *errs = b_errs;
    int report = b_report;
    if (report < 0) /* not B: nothing to run */
        return -1;
    for (int k = 0; k < h->ntests; k++) {
        /* A failure of B from here on is told to the tests still to run. */
        fail_fds = errs + k;
        fail_nfds = h->ntests - k;
        struct test_rec r;
        memset(&r, 0, sizeof r);
        int pipefd[2];
        /* T says on this pipe that its setup is done, then closes it before it touches
         * untrusted code: "the sandbox failed" comes from a channel the test cannot write. */
        if (pipe2(pipefd, O_CLOEXEC | O_NONBLOCK) != 0)
            fail("pipe");
        struct rusage before, after, ru;
        getrusage(RUSAGE_CHILDREN, &before);
        uint64_t t0 = now_ns();
        long t = syscall(SYS_clone, SIGCHLD, 0, NULL, NULL, 0);
        if (t == 0) {
            test_setup(h, blobs, k, outs, pipefd[1]);
            return to_python(info, h, 0, -1);
        }
        if (t < 0)
            fail("fork");
        close(pipefd[1]);
        r.timed_out = (uint32_t)wait_deadline((pid_t)t, t0 + h->wall_ms * 1000000u);
        int st = 0;
        memset(&ru, 0, sizeof ru);
        while (wait4((pid_t)t, &st, 0, &ru) < 0 && errno == EINTR)
            ;
        r.wall_us = (now_ns() - t0) / 1000u;
        /* Whatever the test left running (daemons, orphans, a fork bomb) goes before the next. */
        kill(-1, SIGKILL);
        while (waitpid(-1, NULL, 0) > 0 || errno == EINTR)
            ;
        getrusage(RUSAGE_CHILDREN, &after);
        finish_record(&r, st, pipefd[0],
                      tv_us(after.ru_utime) + tv_us(after.ru_stime) - tv_us(before.ru_utime) -
                          tv_us(before.ru_stime),
                      (uint64_t)ru.ru_maxrss, &outs[3 * k]);
        if (pwrite(report, &r, sizeof r, (off_t)(k * sizeof r)) != (ssize_t)sizeof r)
            fail("report");
    }
    _exit(0);
}

/* ------------------------------------------------------------------------------------------ */
/* The zygote's loop.                                                                         */

static int check_request(const struct req_hdr *h, ssize_t n, int nfds, const char **why) {
    *why = "bad request";
    if ((size_t)n < sizeof *h || h->magic != REQ_MAGIC)
        return -1;
    if (h->nblobs > MAX_BLOBS || h->nblobs != nfds) {
        *why = "bad request: descriptor count";
        return -1;
    }
    if (h->ntests < 1 || h->ntests > MAX_TESTS) {
        *why = "bad request: test count";
        return -1;
    }
    if (h->json_len != (size_t)n - sizeof *h || h->json_len > JSON_MAX) {
        *why = "bad request: length";
        return -1;
    }
    uint32_t used[MAX_TESTS] = {0}, shared = 0;
    for (int i = 0; i < h->nblobs; i++) {
        unsigned t = h->target[i], k = h->test[i];
        if (!(t == 0 || (t >= 5 && t < CHILD_FDS)) || (k != ALL_TESTS && k >= h->ntests)) {
            *why = "bad request: descriptor target";
            return -1;
        }
        /* No fd given twice to one test. */
        if ((shared >> t) & 1) {
            *why = "bad request: descriptor target";
            return -1;
        }
        if (k == ALL_TESTS) {
            for (int j = 0; j < h->ntests; j++)
                if ((used[j] >> t) & 1) {
                    *why = "bad request: descriptor target";
                    return -1;
                }
            shared |= 1u << t;
        } else {
            if ((used[k] >> t) & 1) {
                *why = "bad request: descriptor target";
                return -1;
            }
            used[k] |= 1u << t;
        }
    }
    /* Only the run's fds, and never 1-4 (the outputs and the setup pipe). */
    if (h->null_fds >> CHILD_FDS || h->null_fds & 0x1e) {
        *why = "bad request: null fds";
        return -1;
    }
    if (h->wall_ms > 86400000u) { /* a day: keeps the deadline arithmetic far from overflow */
        *why = "bad request: limits";
        return -1;
    }
    return 0;
}

static char msgbuf[sizeof(struct req_hdr) + JSON_MAX + 1];

/* Serves requests on `sock` until the parent goes away (returns -1 in the zygote). In a test's
 * process, returns its mode (>= 0) with `info` pointing at the request's JSON tail, fds 0-9 in
 * place, fd 4 the setup pipe still to be written. */
int referee_serve(int sock, unsigned uid, struct child_info *info) {
    union {
        char buf[CMSG_SPACE(MAX_BLOBS * sizeof(int))];
        struct cmsghdr align;
    } ctl;
    static struct reply r;
    for (;;) {
        struct iovec iov = {msgbuf, sizeof msgbuf};
        struct msghdr m = {0};
        m.msg_iov = &iov;
        m.msg_iovlen = 1;
        m.msg_control = ctl.buf;
        m.msg_controllen = sizeof ctl.buf;
        ssize_t n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        int blobs[MAX_BLOBS];
        int nfds = 0, extra = 0;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
            if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
                continue;
            int k = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
            for (int i = 0; i < k; i++) {
                int fd;
                memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
                if (nfds < MAX_BLOBS)
                    blobs[nfds++] = fd;
                else {
                    close(fd);
                    extra = 1;
                }
            }
        }
        struct req_hdr h;
        const char *why = "bad request";
        int ok = !(m.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) && !extra && (size_t)n >= sizeof h;
        if (ok) {
            memcpy(&h, msgbuf, sizeof h);
            ok = check_request(&h, n, nfds, &why) == 0;
        }
        if (!ok) {
            close_all(blobs, nfds);
            if (send_error(sock, why, 0) != 0)
                return -1;
            continue;
        }
        memcpy(json_buf, msgbuf + sizeof h, h.json_len);
        memset(msgbuf, 0, (size_t)n);

        /* A batch of one test needs no init of its own: the test is PID 1 of its namespaces and
         * the zygote keeps its record (as B does for a batch), saving a process per run. */
        int single = h.ntests == 1;
        int outs[3 * MAX_TESTS];
        int nouts = 3 * h.ntests, report = -1, pipefd[2] = {-1, -1}, bad = 0;
        static const char *const names[3] = {"stdout", "stderr", "result"};
        for (int i = 0; i < nouts; i++)
            outs[i] = -1;
        /* Sealable, so the parent can freeze a compiled binary before sharing it among runs. */
        for (int i = 0; i < nouts && !bad; i++)
            if ((outs[i] = memfd_create(names[i % 3], MFD_CLOEXEC | MFD_ALLOW_SEALING)) < 0)
                bad = errno;
        /* B's account of each test: written only by B (no test holds it), read here after. A
         * single test's own setup pipe instead (B has one per test). */
        if (!bad && !single && (report = memfd_create("report", MFD_CLOEXEC)) < 0)
            bad = errno;
        if (!bad && single && pipe2(pipefd, O_CLOEXEC | O_NONBLOCK) != 0)
            bad = errno;
        if (bad) {
            close_all(blobs, nfds);
            close_all(outs, nouts);
            close_all(&report, 1);
            close_all(pipefd, 2);
            if (send_error(sock, "zygote: memfd/pipe", bad) != 0)
                return -1;
            continue;
        }
        uint64_t t0 = now_ns();
        /* Straight into the batch's new PID, mount, IPC and UTS namespaces. */
        long b = syscall(SYS_clone, CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS | SIGCHLD,
                         0, NULL, NULL, 0);
        if (b == 0 && single) {
            fail_fds = &outs[1];
            fail_nfds = 1;
            batch_setup(&h, uid, 0);
            test_setup(&h, blobs, 0, outs, pipefd[1]);
            return to_python(info, &h, 0, -1);
        }
        if (b == 0) {
            /* B: set up, then back to Python once as the leader (see referee_batch). */
            bh = h;
            memcpy(b_blobs, blobs, sizeof b_blobs);
            memcpy(b_outs, outs, sizeof b_outs);
            b_report = report;
            for (int k = 0; k < h.ntests; k++)
                b_errs[k] = outs[3 * k + 1];
            fail_fds = b_errs;
            fail_nfds = h.ntests;
            batch_setup(&h, uid, 1);
            int code_fd = -1;
            for (int i = 0; i < h.nblobs; i++)
                if (h.target[i] == 7 && h.test[i] == ALL_TESTS)
                    code_fd = blobs[i];
            return to_python(info, &h, 1, code_fd);
        }
        int clone_err = errno;
        close_all(blobs, nfds);
        if (pipefd[1] >= 0)
            close(pipefd[1]);
        memset(json_buf, 0, h.json_len);
        if (b < 0) {
            close_all(outs, nouts);
            close_all(&report, 1);
            if (pipefd[0] >= 0)
                close(pipefd[0]);
            if (send_error(sock, "clone", clone_err) != 0)
                return -1;
            continue;
        }
        memset(&r, 0, sizeof r);
        r.magic = REP_MAGIC;
        r.ntests = h.ntests;
        int st = 0, backstop = 0, done = 0;
        if (single) {
            /* The test's own wall clock; when it (PID 1) exits, the kernel kills the rest. */
            r.recs[0].timed_out = (uint32_t)wait_deadline((pid_t)b, t0 + h.wall_ms * 1000000u);
            struct rusage ru;
            memset(&ru, 0, sizeof ru);
            while (wait4((pid_t)b, &st, 0, &ru) < 0 && errno == EINTR)
                ;
            r.recs[0].wall_us = (now_ns() - t0) / 1000u;
            finish_record(&r.recs[0], st, pipefd[0],
                          tv_us(ru.ru_utime) + tv_us(ru.ru_stime), (uint64_t)ru.ru_maxrss, outs);
            done = 1;
        } else {
            /* B enforces each test's wall clock; this is the backstop for B itself. */
            uint64_t budget_ms = (uint64_t)h.ntests * (h.wall_ms + 2000u) + 5000u;
            backstop = wait_deadline((pid_t)b, now_ns() + budget_ms * 1000000u);
            while (waitpid((pid_t)b, &st, 0) < 0 && errno == EINTR)
                ;
            ssize_t got = pread(report, r.recs, h.ntests * sizeof(struct test_rec), 0);
            done = got > 0 ? (int)(got / (ssize_t)sizeof(struct test_rec)) : 0;
            close(report);
        }
        int setup_failed = WIFEXITED(st) && WEXITSTATUS(st) == 112;
        for (int k = done; k < h.ntests; k++) {
            /* B failed or was stopped before this test ran (or while it ran). */
            r.recs[k].end = setup_failed ? END_SETUP_FAILED : END_NOT_RUN;
            r.recs[k].timed_out = (uint32_t)backstop;
        }
        if (done < h.ntests && !setup_failed)
            snprintf(r.message, sizeof r.message, "the batch ended early (%s %d)",
                     WIFEXITED(st) ? "exit" : "signal", WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
        int rc = send_reply(sock, &r, outs, nouts);
        close_all(outs, nouts);
        if (rc != 0)
            return -1;
    }
}
