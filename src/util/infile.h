/* infile.h — open and read an input file that can neither block nor run away.
 *
 * Every file kvscope reads goes through here: config.json, model.safetensors,
 * vocab.json, merges.txt, batch --prompts, compare's chart scripts, the start of a
 * file verify --csv would replace. Only regular files are read: stat(2) refuses
 * anything else (a FIFO, a character or block device such as /dev/zero, a directory,
 * a socket) before it is opened, and open(2) runs with O_NONBLOCK and is checked again
 * with fstat, so a path that turns into a FIFO in between cannot block either.
 * A file read whole is read up to a limit the caller gives; past it the file is
 * refused, whatever its size claims to be (files under /proc claim 0 bytes).
 *
 * Messages are "<path>: <problem>", ready for "kvscope: " in front. Nothing prints.
 */
#ifndef KVSCOPE_INFILE_H
#define KVSCOPE_INFILE_H

#include <stddef.h>

/* Results: 0; INFILE_BAD (cannot open, not a regular file, over the limit, read
 * error: message in err); INFILE_NOMEM. */
enum { INFILE_BAD = -1, INFILE_NOMEM = -2 };

/* Open path read-only as a regular file (blocking mode restored after the check).
 * Returns the descriptor (≥ 0), with the file's size in *size when size is not NULL,
 * or INFILE_BAD with the message in err. */
int infile_open(const char *path, size_t *size, char *err, size_t errsize);

/* The whole of path, at most limit bytes, into *buf: malloc'ed, NUL-terminated, *len
 * bytes long without the NUL (the caller frees it). 0, INFILE_BAD or INFILE_NOMEM. */
int infile_read(const char *path, size_t limit, char **buf, size_t *len, char *err, size_t errsize);

/* Control characters in a message (a newline echoed from a bad file, say) become '?',
 * so that the message stays one line. Returns s. */
char *message_one_line(char *s);

/* What path is, for a message: "a FIFO", "a directory", "a character device", ...
 * for a mode from stat(2). */
const char *infile_kind(unsigned mode);

#endif
