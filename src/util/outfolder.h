/* outfolder.h — what an existing folder is, for outdir.h's rules on replacing it.
 *
 *   kvscope's   it holds .kvscope-output, whose first line "kvscope CMD OPTION" names
 *               the command that wrote it, and (since this round) the list of the
 *               entries that command wrote; any other entry is the user's.
 *   a model     config.json beside weights (model.safetensors or a Hugging Face
 *               sibling): an hour of training, or a download.
 *   the user's  under their home folder (the password database's, not $HOME), /tmp, or
 *               the current folder when that itself is under the home or /tmp; owned
 *               by the user; holding no files git tracks.
 * Nothing here prints; only outfolder_note_written writes (to a marker); git ls-files runs
 * to ask git.
 */
#ifndef KVSCOPE_OUTFOLDER_H
#define KVSCOPE_OUTFOLDER_H

#include <stddef.h>

/* The command named by dir's marker (a regular file, not a link): 1 with command and
 * option filled ("run", "--out"), 0 when there is no marker or its first line is not
 * "kvscope CMD OPTION". */
int outfolder_marker(const char *dir, char *command, size_t csize, char *option, size_t osize);

/* 1 if dir holds config.json and a weights file: any regular file whose name ends in
 * .safetensors, .bin, .pt, .pth, .gguf, .h5, .msgpack or .ckpt, in any case (sharded,
 * adapters, llama.cpp, PyTorch; kvscope's export and train write model.safetensors). */
int outfolder_is_model(const char *dir);
/* 1 if a model folder lies inside dir (not dir itself; 16 levels down at most, not
 * through symlinks), with its path below dir in found. */
int outfolder_holds_model(const char *dir, char *found, size_t size);

/* NULL when real (resolved, absolute, existing) is a folder --force may replace: under
 * the user's home, the current folder or /tmp, and owned by the user. Else what it is,
 * for a message ("is a system folder (not under your home, the current folder or
 * /tmp)"). */
const char *outfolder_not_users(const char *real);

/* 1 if real (resolved) is a folder inside a git work tree holding files that git
 * tracks, with the work tree's top in top; also 1 when git cannot tell (not
 * installed, refuses the repository): a tracked file is never risked. 0 otherwise. */
int outfolder_git_tracked(const char *real, char *top, size_t size);

/* ---- the entries a run wrote, and the user's ----
 * At its commit a run appends to its marker the line "written:" and then every entry it
 * wrote, one a line, sorted, paths below the folder, a folder as "name/" followed by its
 * entries, a file as "name<TAB>SIZE HASH" (its size and a 64-bit hash of its bytes:
 * content, not mtime, so the marker is the same run to run). At the next commit, every
 * entry of the old folder the list does not hold as it is now is the user's: one not
 * listed, a folder where the run wrote a file (the user's whole), a file whose size or
 * hash differs. A marker without the list (an earlier kvscope's) says every entry is
 * kvscope's; a file line without the stamp goes by its name. */
typedef struct {
    char **v; /* malloc'ed strings */
    int n, cap;
} OutNames;
void outfolder_names_free(OutNames *l);
/* Append dir's list of entries to its marker. 0, or -1 with errno. */
int outfolder_note_written(const char *dir);
/* The user's entries of dir (sorted) into user (empty when the marker has no list).
 * 0, or -1 when the folder or its marker cannot be read. */
int outfolder_user_files(const char *dir, OutNames *user);

#endif
