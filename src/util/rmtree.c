/* rmtree.c — remove a folder tree without ever leaving its mount (see rmtree.h). */
#define _GNU_SOURCE /* statx, AT_EMPTY_PATH, AT_NO_AUTOMOUNT */
#include "rmtree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/* Folders deeper than this are not entered (each level holds a descriptor open). */
#define RMTREE_DEPTH 128

/* Which mount a file is on. */
typedef struct {
    dev_t dev;
    unsigned long long mnt; /* the mount id, when has_mnt */
    int has_mnt;
    int root;               /* statx says it is the root of a mount */
    unsigned mode;
} Mount;

/* The mount of name under dirfd (flags: AT_SYMLINK_NOFOLLOW or AT_EMPTY_PATH). 0 or -1. */
static int mount_of(int dirfd, const char *name, int flags, Mount *m) {
    struct statx sx;
    memset(m, 0, sizeof *m);
    if (statx(dirfd, name, flags | AT_NO_AUTOMOUNT, STATX_TYPE | STATX_MNT_ID, &sx) == 0) {
        m->dev = makedev(sx.stx_dev_major, sx.stx_dev_minor);
        m->has_mnt = (sx.stx_mask & STATX_MNT_ID) != 0;
        m->mnt = sx.stx_mnt_id;
        m->root = (sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) &&
                  (sx.stx_attributes & STATX_ATTR_MOUNT_ROOT);
        m->mode = sx.stx_mode;
        return 0;
    }
    if (errno != ENOSYS) return -1;
    struct stat st; /* a kernel without statx: st_dev alone */
    if (fstatat(dirfd, name, &st, flags) != 0) return -1;
    m->dev = st.st_dev;
    m->mode = st.st_mode;
    return 0;
}

/* 1 if b is on a's mount. A mount id, where both have one, also tells bind mounts of
 * one file system apart; without it the mount-root flag does. */
static int same_mount(const Mount *a, const Mount *b) {
    if (a->dev != b->dev) return 0;
    if (a->has_mnt && b->has_mnt) return a->mnt == b->mnt;
    return !b->root;
}

static int remove_in(int fd, const Mount *top, const char *last, int depth);

/* Remove name under fd: a file or symlink at once, a folder on top's mount with all
 * it holds. 0, or -1 with errno. */
static int remove_entry(int fd, const char *name, const Mount *top, int depth) {
    if (unlinkat(fd, name, 0) == 0 || errno == ENOENT) return 0;
    if (errno != EISDIR) return -1;
    if (depth >= RMTREE_DEPTH) {
        errno = ELOOP;
        return -1;
    }
    int sub = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (sub < 0) return -1;
    Mount m;
    int rc = mount_of(sub, "", AT_EMPTY_PATH, &m);
    if (rc == 0 && !same_mount(top, &m)) rc = -1, errno = EXDEV; /* never enter another mount */
    if (rc == 0) rc = remove_in(sub, top, NULL, depth + 1);
    int e = errno;
    close(sub);
    if (rc != 0) {
        errno = e;
        return -1;
    }
    return unlinkat(fd, name, AT_REMOVEDIR) == 0 || errno == ENOENT ? 0 : -1;
}

/* Empty the folder fd (which stays open); the entry named last goes last. 0, or -1
 * with the errno of the first failure (the other entries are still tried). */
static int remove_in(int fd, const Mount *top, const char *last, int depth) {
    int dfd = dup(fd);
    DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
    if (!d) {
        int e = errno;
        if (dfd >= 0) close(dfd);
        errno = e;
        return -1;
    }
    int e = 0;
    struct dirent *ent;
    while ((ent = readdir(d))) {
        const char *n = ent->d_name;
        if (strcmp(n, ".") == 0 || strcmp(n, "..") == 0 || (last && strcmp(n, last) == 0)) continue;
        if (remove_entry(fd, n, top, depth) != 0 && !e) e = errno;
    }
    closedir(d);
    if (!e && last && unlinkat(fd, last, 0) != 0 && errno != ENOENT) e = errno;
    errno = e;
    return e ? -1 : 0;
}

int rmtree_remove(const char *path, const char *last) {
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return errno == ENOTDIR || errno == ELOOP ? unlink(path) : -1;
    Mount top;
    int rc = mount_of(fd, "", AT_EMPTY_PATH, &top);
    if (rc == 0) rc = remove_in(fd, &top, last, 0);
    int e = errno;
    close(fd);
    if (rc != 0) {
        errno = e;
        return -1;
    }
    return rmdir(path);
}

/* The first entry under fd (rel: its path so far, len bytes) on another mount. */
static int find_in(int fd, const Mount *top, char *rel, size_t size, size_t len, int depth) {
    int dfd = dup(fd);
    DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
    if (!d) {
        if (dfd >= 0) close(dfd);
        return -1;
    }
    int found = 0;
    struct dirent *ent;
    while (!found && (ent = readdir(d))) {
        const char *n = ent->d_name;
        Mount m;
        if (strcmp(n, ".") == 0 || strcmp(n, "..") == 0 || mount_of(fd, n, AT_SYMLINK_NOFOLLOW, &m))
            continue; /* gone meanwhile */
        int k = snprintf(rel + len, size - len, "%s%s", len ? "/" : "", n);
        size_t sub_len = k < 0 || (size_t)k >= size - len ? size - 1 : len + (size_t)k;
        if (!same_mount(top, &m)) {
            found = 1;
            break;
        }
        if (!S_ISDIR(m.mode) || depth >= RMTREE_DEPTH) continue;
        int sub = openat(fd, n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub < 0) continue;
        found = find_in(sub, top, rel, size, sub_len, depth + 1) == 1;
        close(sub);
    }
    closedir(d);
    if (!found) rel[len] = '\0';
    return found;
}

int rmtree_find_mount(const char *path, char *found, size_t size) {
    if (size == 0) return -1;
    found[0] = '\0';
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return -1;
    Mount top;
    int rc = mount_of(fd, "", AT_EMPTY_PATH, &top) == 0 ? find_in(fd, &top, found, size, 0, 0) : -1;
    close(fd);
    return rc;
}

int rmtree_is_mount(const char *path) {
    char parent[4096];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof parent) return 0;
    memcpy(parent, path, n + 1);
    while (n > 1 && parent[n - 1] == '/') parent[--n] = '\0';
    char *slash = strrchr(parent, '/');
    if (!slash) snprintf(parent, sizeof parent, ".");
    else if (slash == parent) parent[1] = '\0';
    else *slash = '\0';
    Mount a, b;
    if (mount_of(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW, &a) != 0) return 0;
    if (a.root) return 1;
    return mount_of(AT_FDCWD, parent, 0, &b) == 0 && !same_mount(&b, &a);
}
