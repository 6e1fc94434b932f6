/* rmtree.h — remove a folder tree without ever leaving its mount.
 *
 * Every recursive removal kvscope does goes through here: the old output folder after
 * a swap, the temporary folder of a failed run, what killed runs left beside a target.
 * The walk opens each folder from its parent's descriptor with openat(O_NOFOLLOW |
 * O_DIRECTORY) and removes with unlinkat, so a symlink is removed, never followed, and
 * a path swapped for a symlink during the walk cannot send it elsewhere. Each folder it
 * opens must be on the top folder's mount: the same st_dev, and the same mount id
 * where statx(2) gives one (a bind mount of the same file system has the same st_dev
 * but its own mount id). A folder on another mount is not entered: it stays, with
 * the folders above it, and the removal fails with EXDEV. The commands refuse such a
 * folder before any work (rmtree_find_mount), so this is the last line of defence.
 * Nothing here prints.
 */
#ifndef KVSCOPE_RMTREE_H
#define KVSCOPE_RMTREE_H

#include <stddef.h>

/* Remove path and everything in it (a file or symlink at path is just unlinked). last:
 * the name of an entry of the top folder removed after every other one (the output
 * marker, so that a removal cut short still carries it), or NULL. 0, or -1 with errno
 * (EXDEV: another mount was found and left; what could be removed is gone). */
int rmtree_remove(const char *path, const char *last);

/* Look through the folder path (not following symlinks) for a mount point: a folder
 * or file inside it on another mount. 1 with its path below path ("sub/mnt") in found,
 * 0 when there is none, -1 with errno when path cannot be read. */
int rmtree_find_mount(const char *path, char *found, size_t size);

/* 1 if path (not followed if a symlink) is the root of a mount: its mount differs from
 * its parent folder's. 0 otherwise or when it does not exist. */
int rmtree_is_mount(const char *path);

#endif
