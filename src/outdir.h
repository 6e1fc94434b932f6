/* outdir.h — write a folder atomically: build it under a temporary name beside
 * the target, then swap it in with rename(2). A failed run leaves the old folder
 * exactly as it was and no temporary folder behind.
 *
 * Also: write one file atomically (temporary name in the same folder, fsync-free
 * rename), and the small path helpers the recorders share.
 */
#ifndef KVSCOPE_OUTDIR_H
#define KVSCOPE_OUTDIR_H

#include <stdio.h>

typedef struct {
    char target[4096]; /* the folder the user named */
    char tmp[4096 + 32]; /* where files are written until commit */
} OutDir;

/* Check target (must be a directory or not exist; its parent must be a writable
 * directory) and create the temporary folder. 0, or -1 with a message in err. */
int outdir_begin(OutDir *o, const char *target, char *err, size_t errsize);
/* Replace target with the temporary folder. 0, or -1 with a message in err. */
int outdir_commit(OutDir *o, char *err, size_t errsize);
/* Remove the temporary folder and everything in it. */
void outdir_abort(OutDir *o);
/* fclose that also reports an earlier write error (ferror), e.g. a full disk:
 * 0, or -1. A NULL file is 0. */
int file_close(FILE *f);
/* path = dir + "/" + name; -1 when it does not fit. */
int path_join(char *out, size_t size, const char *dir, const char *name);
/* Remove a folder tree (like rm -rf). 0 or -1. */
int remove_tree(const char *path);
/* Create dir and its parents (mkdir -p). 0 or -1. */
int make_dirs(const char *path);

#endif
