/* cleanup.h — temporary outputs that a signal must not leave behind.
 *
 * outdir.c lists here every temporary folder or file it creates. When SIGINT, SIGTERM,
 * SIGHUP or SIGPIPE (`kvscope run | head`) arrives, the handler removes each listed path (with async-signal-safe
 * calls only: openat, getdents64, unlinkat; never into a folder on another mount; a
 * folder's .kvscope-output last, so a removal cut short still carries its marker),
 * then ends the process with the signal's default action, so the shell sees 128 + the
 * signal number. The handlers are installed with the first entry, and only over a
 * default disposition (a signal the parent ignores, as under nohup, stays ignored).
 *
 * The list is process-wide state by necessity: a signal handler reaches nothing else.
 * A commit moves folders around; between cleanup_hold() and cleanup_release() a
 * signal is held back and handled at the release, so the handler never sees a
 * half-made swap (and cleanup_hold() waits for a handler already running on another
 * thread, which ends the process). kill -9 cannot be caught: outdir.c's stale-sibling removal handles
 * what it leaves.
 */
#ifndef KVSCOPE_CLEANUP_H
#define KVSCOPE_CLEANUP_H

#define CLEANUP_SLOTS 8

/* List path (absolute, < 4200 bytes); returns its slot, or -1 when the list is full. */
int cleanup_add(const char *path);
/* The slot's path is now path (the content to discard moved). */
void cleanup_move(int slot, const char *path);
/* Forget the slot (its path is committed or removed). slot -1 is ignored. */
void cleanup_drop(int slot);
/* Install the handlers now rather than with the first entry. A command that catches
 * SIGINT and SIGTERM itself for a while (train: checkpoint, then stop) calls this first,
 * so that the handlers it restores afterwards are these. */
void cleanup_install(void);
/* Hold signals back while folders are created or swapped (the handlers are installed
 * first); release handles one that came meanwhile. */
void cleanup_hold(void);
void cleanup_release(void);

#endif
