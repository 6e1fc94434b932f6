/* explorer_page.h — the explorer's source files (the .html, .css and .js of
 * src/observe/explorer), embedded into the binary at build time by
 * src/observe/explorer/embed.sh (a make rule), so
 * `kvscope run --html` needs nothing beside the binary. Each file is its lines, without
 * their newline, NULL-terminated. */
#ifndef KVSCOPE_EXPLORER_PAGE_H
#define KVSCOPE_EXPLORER_PAGE_H

typedef struct {
    const char *name;          /* "explorer.html" */
    const char *const *lines;  /* NULL-terminated */
} EmbeddedFile;

/* The files, NULL-named at the end. */
extern const EmbeddedFile explorer_files[];

#endif
