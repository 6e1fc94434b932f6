#!/bin/sh
# quiet.sh — only the command-line program prints and exits; the library never does.
#   sh tests/quiet.sh        (what `make check-quiet` runs, part of `make check`)
# In every library file (src/*/*.c and src/*/*.h; src/cli/ is the program) it looks, outside
# comments and string literals, for
#   - a call that prints or ends the process: printf, vprintf, puts, putchar, perror,
#     exit, _Exit, quick_exit;
#   - any use of stderr or stdout (fprintf(stderr, …), fputs(…, stdout), …);
#   - an #include of a command-line header ("cli/…").
# A library function reports a failure to its caller instead (a return code and a
# message in a buffer), so the error path can be tested.
# The check proves itself first, so it cannot pass by finding nothing: it must see at
# least 30 library files, src/engine/model.c among them, and it must catch each of the calls
# above planted in a scratch file while passing one that only names them in comments
# and strings.
set -eu

# Print "file:line: what" for every forbidden use in the files given.
scan() {
    awk '
    FNR == 1 { incomment = 0 }
    {
        line = $0; code = ""; i = 1; n = length(line)
        if (!incomment && line ~ /^[ \t]*#[ \t]*include[ \t]*"cli\//) {
            print FILENAME ":" FNR ": includes a command-line header"; next
        }
        # the line without comments, string literals and character literals
        while (i <= n) {
            c = substr(line, i, 1); d = substr(line, i, 2)
            if (incomment) { if (d == "*/") { incomment = 0; i += 2 } else i++; continue }
            if (d == "/*") { incomment = 1; i += 2; continue }
            if (d == "//") break
            if (c == "\"" || c == "\047") {
                q = c; i++
                while (i <= n && substr(line, i, 1) != q) i += substr(line, i, 1) == "\\" ? 2 : 1
                i++; code = code " "; continue
            }
            code = code c; i++
        }
        s = " " code " "
        if (match(s, /[^A-Za-z0-9_](printf|vprintf|puts|putchar|perror|exit|_Exit|quick_exit)[ \t]*\(/))
            print FILENAME ":" FNR ": calls " substr(s, RSTART + 1, RLENGTH - 1)
        else if (match(s, /[^A-Za-z0-9_](stderr|stdout)[^A-Za-z0-9_]/))
            print FILENAME ":" FNR ": uses " substr(s, RSTART + 1, RLENGTH - 2)
    }' "$@"
}

# 1. The check catches what it should, and only that.
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kvscope-quiet.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
i=0
for call in 'printf("x\n");' 'fprintf(stderr, "x\n");' 'fputs("x", stdout);' 'puts("x");' \
            'perror("open");' 'exit(2);' '    if (bad) exit (1);' 'vprintf(fmt, ap);' \
            'putchar(10);' '_Exit(1);' '#include "cli/cli.h"'; do
    i=$((i + 1))
    printf 'int f(void) {\n    %s\n    return 0;\n}\n' "$call" > "$tmp/planted$i.c"
    if [ -z "$(scan "$tmp/planted$i.c")" ]; then
        echo "check-quiet: the check misses a planted call: $call" >&2
        exit 1
    fi
done
cat > "$tmp/clean.c" << 'EOF'
/* Nothing here prints: no printf(), no fprintf(stderr, ...), no exit(2).
 * The caller decides (see cli.h). */
int snprintf_like(char *buf);      // a name that contains printf is no call of it
static const char *msg = "kvscope: exit(2) after printf(\"%s\", stderr)";
static const char q = '"';
int at_exit_count, my_exit(void);  /* not exit: other identifiers */
int g(void) { return my_exit() + snprintf_like(0) + at_exit_count; }
EOF
if [ -n "$(scan "$tmp/clean.c")" ]; then
    scan "$tmp/clean.c" >&2
    echo "check-quiet: the check flags a file that only names the calls in comments and strings" >&2
    exit 1
fi

# 2. The library files are there to be checked.
files=$(ls src/*/*.c src/*/*.h | grep -v '^src/cli/')
count=$(echo "$files" | wc -l | tr -d ' ')
case " $(echo $files) " in *" src/engine/model.c "*) ;; *)
    echo "check-quiet: src/engine/model.c is not among the files checked (run from the repository root)" >&2
    exit 1 ;;
esac
if [ "$count" -lt 30 ]; then
    echo "check-quiet: only $count library files found in src/; expected the whole library" >&2
    exit 1
fi

# 3. The library itself.
found=$(scan $files)
if [ -n "$found" ]; then
    echo "$found" >&2
    echo "check-quiet: library code prints or exits; return an error to the caller instead (only src/cli/ prints)" >&2
    exit 1
fi
echo "check-quiet: $count library files, none prints or exits (the check caught all $i planted calls)"
