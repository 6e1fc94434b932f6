/* cleanup.c — see cleanup.h. */
#define _GNU_SOURCE /* syscall(SYS_getdents64) */
#include "cleanup.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "outdir.h"

#define CLEANUP_PATH 4200

/* The list the handler reads: an entry is complete before `used` is set. */
static struct {
    volatile sig_atomic_t used;
    char path[CLEANUP_PATH];
} slots[CLEANUP_SLOTS];
/* holding: a commit is swapping folders; active: handlers running (on any thread: with
 * OpenMP a signal may land on a worker while the main thread commits). Lock-free atomics
 * are safe in a signal handler. */
static atomic_int holding = 0, held_sig = 0, active = 0;
static int installed = 0;

static const int SIGNALS[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE}; /* SIGPIPE: `run | head` */
#define NSIGNALS (sizeof SIGNALS / sizeof SIGNALS[0])

/* A record of getdents64(2). */
struct dent64 {
    uint64_t ino;
    int64_t off;
    unsigned short reclen;
    unsigned char type;
    char name[];
};

static int is_dot(const char *n) {
    return n[0] == '.' && (n[1] == '\0' || (n[1] == '.' && n[2] == '\0'));
}

/* The mount a folder is on: st_dev and, where statx gives it, the mount id (which also
 * tells a bind mount of the same file system apart). fstat and statx are plain system
 * calls, safe in a handler. */
typedef struct {
    dev_t dev;
    uint64_t mnt;
} SigMount;

static int sig_mount(int fd, SigMount *m) {
    struct stat st;
    struct statx sx;
    if (fstat(fd, &st) != 0) return -1;
    m->dev = st.st_dev;
    m->mnt = statx(fd, "", AT_EMPTY_PATH, STATX_MNT_ID, &sx) == 0 && (sx.stx_mask & STATX_MNT_ID)
                 ? sx.stx_mnt_id : 0;
    return 0;
}

/* Remove name under dirfd: a file, or a folder and everything in it, with
 * async-signal-safe calls only, never entering a folder on another mount than the
 * top's (top: NULL at depth 0). At depth 0 the marker goes last. */
static void sig_remove(int dirfd, const char *name, int depth, const SigMount *top) {
    if (unlinkat(dirfd, name, 0) == 0 || depth > 16) return;
    int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return;
    SigMount here;
    if (sig_mount(fd, &here) != 0 || (top && (here.dev != top->dev || here.mnt != top->mnt))) {
        close(fd);
        return;
    }
    if (!top) top = &here;
#ifdef SYS_getdents64
    union {
        uint64_t align;
        char b[2048];
    } buf;
    /* entries removed while listing: list again until a pass finds nothing */
    for (int pass = 0; pass < 64; pass++) {
        int found = 0;
        long n;
        lseek(fd, 0, SEEK_SET);
        while ((n = syscall(SYS_getdents64, fd, buf.b, sizeof buf.b)) > 0) {
            for (long off = 0; off < n;) {
                const struct dent64 *d = (const struct dent64 *)(buf.b + off);
                off += d->reclen;
                if (is_dot(d->name) || (depth == 0 && strcmp(d->name, OUTDIR_MARKER) == 0)) continue;
                sig_remove(fd, d->name, depth + 1, top);
                found = 1;
            }
        }
        if (!found) break;
    }
#endif
    if (depth == 0) unlinkat(fd, OUTDIR_MARKER, 0);
    close(fd);
    unlinkat(dirfd, name, AT_REMOVEDIR);
}

/* Remove every listed path, then end the process the way the signal would have. */
static void die(int sig) {
    for (int i = 0; i < CLEANUP_SLOTS; i++)
        if (slots[i].used) {
            sig_remove(AT_FDCWD, slots[i].path, 0, NULL);
            slots[i].used = 0;
        }
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
    raise(sig); /* delivered when the handler returns (or at once, outside one) */
}

static void on_signal(int sig) {
    atomic_fetch_add(&active, 1);
    if (atomic_load(&holding)) {
        atomic_store(&held_sig, sig);
        atomic_fetch_sub(&active, 1);
        return;
    }
    die(sig); /* active stays raised: a commit that starts now waits for the end */
}

static void install(void) {
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < NSIGNALS; i++) sigaddset(&sa.sa_mask, SIGNALS[i]);
    for (size_t i = 0; i < NSIGNALS; i++)
        if (sigaction(SIGNALS[i], NULL, &old) == 0 && old.sa_handler == SIG_DFL &&
            !(old.sa_flags & SA_SIGINFO))
            sigaction(SIGNALS[i], &sa, NULL);
    installed = 1;
}

int cleanup_add(const char *path) {
    if (strlen(path) >= CLEANUP_PATH) return -1;
    if (!installed) install();
    for (int i = 0; i < CLEANUP_SLOTS; i++) {
        if (slots[i].used) continue;
        memcpy(slots[i].path, path, strlen(path) + 1);
        atomic_signal_fence(memory_order_seq_cst);
        slots[i].used = 1;
        return i;
    }
    return -1;
}

void cleanup_move(int slot, const char *path) {
    if (slot < 0 || slot >= CLEANUP_SLOTS || strlen(path) >= CLEANUP_PATH) return;
    slots[slot].used = 0;
    atomic_signal_fence(memory_order_seq_cst);
    memcpy(slots[slot].path, path, strlen(path) + 1);
    atomic_signal_fence(memory_order_seq_cst);
    slots[slot].used = 1;
}

void cleanup_drop(int slot) {
    if (slot >= 0 && slot < CLEANUP_SLOTS) slots[slot].used = 0;
}

void cleanup_install(void) {
    if (!installed) install();
}

void cleanup_hold(void) {
    if (!installed) install();
    atomic_store(&holding, 1);
    /* a handler that got in first is removing the temporary folders and will end the
     * process: swapping them now could move a folder it is emptying into place */
    while (atomic_load(&active) > 0) sched_yield();
}

void cleanup_release(void) {
    atomic_store(&holding, 0);
    int sig = atomic_exchange(&held_sig, 0);
    if (sig) die(sig);
}
