/* outdir.h — output folders (and files) that never lose a user's files.
 *
 * An output folder is written whole or not at all, and only over a folder kvscope
 * wrote itself:
 *   check   before any work: resolve the path (realpath, also for a folder that does
 *           not exist yet), and refuse — exit 2 at the CLI — the root folder, the
 *           current folder and its ancestors, the home folder ($HOME, and the
 *           password database's, which holds when $HOME is unset or empty) and its
 *           ancestors, a mount point or a folder that holds one (always, even with
 *           --force), anything that is not a folder, and a folder of another kind
 *           (outfolder.h): a model (config.json + weights) unless the command is train
 *           or export and --force is given; a folder whose marker names another
 *           command, or that holds files but no marker (kvscope did not write it),
 *           unless --force is given. --force itself never reaches a folder that is not
 *           the user's (outside their home — the password database's — and /tmp, or
 *           the current folder when that is not itself under one of them; or owned by
 *           another user) nor one that holds files git tracks, whoever runs kvscope.
 *           A folder that holds a model folder at any depth is never replaced, by any
 *           command, even with --force.
 *           An empty folder has nothing to lose and may be replaced.
 *   begin   remove what killed runs left beside the target (below; what cannot be
 *           removed stays, named in OutDir.left for the caller's note), then create the
 *           temporary folder TARGET.tmp.<pid>.XXXXXX beside it (same file system)
 *           with the marker .kvscope-output inside. The files go there.
 *   commit  swap it in with one atomic renameat2(RENAME_EXCHANGE) where the system
 *           has it, else with two renames (TARGET → TARGET.old.<pid>.XXXXXX, then the
 *           new folder → TARGET); then remove the old folder. A failed run aborts:
 *           the target stays exactly as it was. When another run creates TARGET
 *           between the look and the rename, commit looks again and swaps with it.
 * Every folder is removed through rmtree.h, which never leaves the folder's mount.
 * The marker's text is fixed per command (no time, no path, no pid), so folders
 * committed to git stay byte-identical run to run. The pid lives in the temporary
 * names only: a sibling TARGET.tmp.<pid>.* or TARGET.old.<pid>.* whose pid no longer
 * runs and that holds the marker (or nothing) is what a killed run left, and the next
 * begin removes it — or, when TARGET itself is missing (a kill between the two
 * renames), renames the .old one back. (A pid is only known on this machine: two
 * machines writing one network folder at once could see each other's runs as dead.)
 * A symlink to a folder is followed: the folder it points to is replaced, the link
 * stays.
 *
 * SIGINT, SIGTERM, SIGHUP and SIGPIPE remove the temporary folders of every begun OutDir and
 * OutFile, then end the process with the signal's own status (130, 143, 129, 141). This
 * needs the one piece of process-wide state in kvscope: the list of those folders,
 * which a signal handler can only reach at file scope. A command that handles SIGINT
 * itself (compare) overrides it while it runs.
 *
 * Messages name the folder as the user spelled it, never a temporary name, as
 * "<what>: <path>", ready for "kvscope: " in front. Nothing here prints.
 */
#ifndef KVSCOPE_OUTDIR_H
#define KVSCOPE_OUTDIR_H

#include <stdio.h>

#define OUTDIR_MARKER ".kvscope-output"

/* Flags of outdir_check and outfile_check. */
enum {
    OUTDIR_FORCE = 1,       /* --force: may replace a folder (file) kvscope did not write */
    OUTDIR_PARENTS = 2,     /* begin creates missing parent folders (mkdir -p) */
    OUTDIR_NO_EXCHANGE = 4, /* commit with two renames even where RENAME_EXCHANGE works (tests) */
};

typedef struct {
    char option[32];     /* "--out", "--plots": how messages name the folder */
    char command[32];    /* "run": written into the marker */
    unsigned flags;
    char target[4096];   /* as the user named it (for messages) */
    char real[4096];     /* absolute, symlinks resolved: the folder that is replaced */
    char tmp[4200];      /* where the files go between begin and commit; "" otherwise */
    int slot;            /* in the signal cleanup list, -1 if none */
    int nkept;           /* after commit: the user's entries carried into the new folder */
    char kept[512];      /* their names, "NOTES.md, mine/" ("…" when they do not fit) */
    int nleft;           /* after begin: what killed runs left beside it that stays;
                          * after commit, also the old folder if it could not be removed */
    char left[4400];     /* the first of those, "<path> (<why>)" */
} OutDir;

/* Check target as the output folder `option` of `command` (see above); no side
 * effects. 0, or -1 with a message in err. */
int outdir_check(OutDir *o, const char *target, const char *command, const char *option,
                 unsigned flags, char *err, size_t errsize);
/* 1 if the two folders are the same or one lies inside the other (resolved paths). */
int outdir_overlap(const OutDir *a, const OutDir *b);
/* 1 if path (a file or folder, resolved) is o's folder or inside it. */
int outdir_holds(const OutDir *o, const char *path);
/* Check again (the folder may have changed since), remove stale siblings, create the
 * temporary folder with the marker. 0, or -1 with a message in err. */
int outdir_begin(OutDir *o, char *err, size_t errsize);
/* Swap the temporary folder in and remove the old one. 0, or -1 with a message (the
 * temporary folder is then removed; the target is as it was). */
int outdir_commit(OutDir *o, char *err, size_t errsize);
/* Remove the temporary folder and everything in it (nothing if not begun). */
void outdir_abort(OutDir *o);
/* msg with every mention of the temporary folder replaced by the target's name. */
void outdir_shown(const OutDir *o, const char *msg, char *out, size_t size);

/* The files of an output folder, opened in its temporary folder between begin and
 * commit (the folder is replaced whole, so a file need not be). NULL with errno set, and
 * a message naming the file as the user will see it ("<option>: cannot write <name>
 * (<reason>): <target>") in err. */
FILE *outdir_fopen(const OutDir *o, const char *name, char *err, size_t errsize);

/* One file written whole or not at all, kvscope's one way of doing it: under a temporary
 * name beside path (path.tmp.<pid>.XXXXXX, the same file system), renamed over path only
 * when every byte was written and the file closed; any failure removes the temporary
 * file and leaves path as it was. Images, GIFs, the explorer page and verify --csv are
 * written this way. */
typedef struct {
    char path[4096];  /* where the file goes */
    char tmp[4200];   /* the temporary file while one is open, else "" */
    int slot;         /* in the signal cleanup list, -1 if none */
} AtomicFile;

/* Open the temporary file for path (mode 0666 less the umask, as fopen makes it).
 * listed: put it on the signal cleanup list (a file outside any temporary folder);
 * a full list is then an error (EMFILE). NULL with errno set. */
FILE *atomic_open(AtomicFile *a, const char *path, int listed);
/* Close fp, reporting any earlier write error (a full disk). 0, or -1 with errno set
 * and the temporary file removed. */
int atomic_close(AtomicFile *a, FILE *fp);
/* Rename the closed temporary file over path. 0, or -1 with errno (file removed). */
int atomic_rename(AtomicFile *a);
/* atomic_close, then atomic_rename. */
int atomic_commit(AtomicFile *a, FILE *fp);
/* Close fp (may be NULL) and remove the temporary file. Safe when nothing is open. */
void atomic_abort(AtomicFile *a, FILE *fp);
/* Remove the temporary files that dead runs left beside path (path.tmp.<pid>.XXXXXX
 * whose pid runs no more; format's, whatever they hold). What cannot be removed stays:
 * the first named in left, *nleft counting them. */
void atomic_clean_stale(const char *path, char *left, size_t size, int *nleft);

/* One output file the user names (verify --csv, run --html), replaced whole through an
 * AtomicFile beside it, and only when kvscope wrote the file there: a file kvscope may
 * replace is empty or starts with `header` (the first bytes kvscope writes). */
typedef struct {
    char option[32];
    char header[128];
    unsigned flags;
    char target[4096];   /* as the user named it (for messages) */
    char real[4096];     /* absolute, symlinks resolved: the file that is replaced */
    AtomicFile file;
    int nleft;           /* after begin or clean_stale: leftovers that could not be removed */
    char left[4400];     /* the first of those, "<path> (<why>)" */
} OutFile;

/* Check target: not a folder, not a FIFO or device, its folder exists and is writable,
 * and it is either missing, empty, or a file that starts with header (else only with
 * OUTDIR_FORCE; flags OUTFILE_OURS_ONLY: see below). 0, or -1 with err. */
int outfile_check(OutFile *f, const char *target, const char *option, const char *header,
                  unsigned flags, char *err, size_t errsize);
/* Check again, remove stale siblings and open the temporary file; NULL with err. */
FILE *outfile_begin(OutFile *f, char *err, size_t errsize);
/* Close fp and rename the temporary file over the target, unless the target changed
 * into a file kvscope did not write meanwhile. 0, or -1 with err (a write error such as
 * a full disk included; the target is then as it was). */
int outfile_commit(OutFile *f, FILE *fp, char *err, size_t errsize);
/* Close fp (may be NULL) and remove the temporary file. */
void outfile_abort(OutFile *f, FILE *fp);

/* ---- one rule for every file kvscope writes (checkpoints, --html, --csv) ----------
 * An output file may replace only a file kvscope wrote: one that starts with the
 * header kvscope writes first (or an empty one), or with OUTDIR_FORCE any regular file;
 * never a folder, device, FIFO or socket, nor a file of a model folder (config.json
 * beside weights), even with --force. With OUTFILE_OURS_ONLY (a
 * checkpoint) only a non-empty file that starts with the header, named directly (not
 * through a symlink), whatever OUTDIR_FORCE says: a user's file is never replaced by
 * one of kvscope's. No output may be an input of the same command: path_same and
 * path_inside compare by resolved path and by (st_dev, st_ino), so a hard link, a bind
 * mount or another spelling of an input is caught. */
enum { OUTFILE_OURS_ONLY = 1 << 8 };

/* Remove the temporary files (f's name + ".tmp.<pid>.XXXXXX") that dead runs left
 * beside f's target, when they are empty or start with f's header. */
void outfile_clean_stale(OutFile *f);
/* Remove f's target if it is a regular file named directly that starts with f's header
 * (not empty): 0 (also when it is missing), or -1 with the file left alone. */
int outfile_remove(const OutFile *f);
/* 1 if paths a and b name the same file (resolved path, or device and inode). */
int path_same(const char *a, const char *b);
/* 1 if path is the folder dir or lies inside it: by resolved path, or because dir's
 * device and inode are those of path or of one of its folders. */
int path_inside(const char *dir, const char *path);

/* fclose that also reports an earlier write error (ferror), e.g. a full disk:
 * 0, or -1 with errno of the failure where known. A NULL file is 0. */
int file_close(FILE *f);
/* What a failed write's errno says for a message: "No space left on device" for a
 * full disk and the like, "it is closed, or not open for writing" for EBADF (a closed
 * stdout); for an errno that a write does not cause (a stale value), "write error
 * (disk full?)". */
const char *write_error_text(int err);
/* path = dir + "/" + name; -1 when it does not fit. */
int path_join(char *out, size_t size, const char *dir, const char *name);
/* The absolute path of path with every symlink resolved, also when path does not
 * exist yet: its longest existing prefix through realpath(3), the rest appended with
 * "." and ".." applied by spelling. 0, or -1 (too long, or no current folder). */
int path_resolve(const char *path, char *out, size_t size);
/* Remove a folder tree (like rm -rf, but never across a mount: rmtree.h). 0 or -1. */
int remove_tree(const char *path);
/* Create dir and its parents (mkdir -p). 0 or -1. */
int make_dirs(const char *path);

#endif
