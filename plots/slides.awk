# slides.awk — the pages of the deck, for plots/slides.sh (read its header first).
# Input: the lessons' items (slides.sh step 1, tab-separated). Variables: strings (the
# string table), deck (lessons/deck.md), sizes (file width height shown, per figure),
# pagepre (where page N is written: pagepre NNN .svg), notes, layout, list (the pages'
# files, in order).
# A page is laid out on 1280 × 720 units, which is its size in pixels when projected at
# 1280 × 720. Text is never under MINPX; lines are broken by an estimate of their width
# (DejaVu Sans's advance widths; a character outside ASCII counted as S["wide"] em), and
# tests/slides/ measures the result.

BEGIN {
    W = 1280; H = 720; MX = 48; MINPX = 18
    CAPPX = 21; CAPLH = 27; CAPLINES = 3; CAPW = W - 2 * MX - 96
    BODYPX = 27; BODYLH = 36; HEADPX = 38; SUBPX = 24; SUBLH = 31
    INK = "#1a1a1a"; MUTED = "#4d4d4d"; ACCENT = "#b34700"
    while ((getline line < strings) > 0) {
        split(line, kv, "\t"); S[kv[1]] = kv[2]
    }
    close(strings)
    FONT = S["font"]
    split("318 401 460 838 636 950 780 275 390 390 500 838 318 361 318 337 636 636 636 636 636 636 636 636 636 636 337 337 838 838 838 531 1000 684 686 698 770 632 575 775 752 295 295 656 557 863 748 787 603 787 695 635 611 732 684 989 685 611 685 390 337 390 838 500 500 613 635 550 635 615 352 635 634 278 278 579 278 974 634 612 635 635 411 521 392 634 592 818 592 592 525 636 337 636 838", aw, " ")
    for (i = 32; i < 127; i++) { ADV[sprintf("%c", i)] = aw[i - 31] / 1000 }
    for (i = 128; i < 256; i++) { c = sprintf("%c", i); ADV[c] = (i >= 192 ? S["wide"] + 0 : 0) }
    while ((getline line < sizes) > 0) {
        m = split(line, a, " ")
        if (a[1] == "frame") { FW[a[2]] = a[3]; FH[a[2]] = a[4]; SHOWN[a[2]] = a[5] }
        else { FW[a[1]] = a[2]; FH[a[1]] = a[3]; SHOWN[a[1]] = a[4] }
    }
    close(sizes)
    readdeck()
    NP = 0
}

# ---- lessons/deck.md ----------------------------------------------------------------
# "# TITLE", then "## SECTION" (title, outline, lesson N, references), each a list of
# "key: value" lines; a line indented by two spaces goes on the value above it; <!-- … -->
# is a comment.
function readdeck(   line, sec, key, val, k, incom) {
    sec = "title"; key = ""
    while ((getline line < deck) > 0) {
        if (incom) { if (line ~ /-->/) incom = 0; continue }
        if (line ~ /^<!--/) { if (line !~ /-->/) incom = 1; continue }
        if (line ~ /^# /) { DTITLE = substr(line, 3); continue }
        if (line ~ /^## /) { sec = substr(line, 4); key = ""; continue }
        if (line ~ /^  +[^ ]/ && key != "") { sub(/^ +/, "", line); D[sec, key, DN[sec, key]] = D[sec, key, DN[sec, key]] " " line; continue }
        if (line ~ /^[ \t]*$/) { key = ""; continue }
        k = index(line, ": ")
        if (k == 0) { printf "slides: %s: a line that is not \"key: value\": %s\n", deck, line > "/dev/stderr"; exit 2 }
        key = substr(line, 1, k - 1); val = substr(line, k + 2)
        DN[sec, key]++
        D[sec, key, DN[sec, key]] = val
    }
    close(deck)
}
function dget(sec, key) { return ((sec, key, 1) in D) ? D[sec, key, 1] : "" }

# ---- text ---------------------------------------------------------------------------
function esc(s) { gsub(/&/, "\\&amp;", s); gsub(/</, "\\&lt;", s); gsub(/>/, "\\&gt;", s); gsub(/"/, "\\&quot;", s); return s }
function width(s, px, bold,   i, w) {
    w = 0
    for (i = 1; i <= length(s); i++) w += ADV[substr(s, i, 1)]
    return w * px * (bold ? 1.1 : 1.0) * 1.03
}
# break s into lines no wider than maxw; LN[1..n]
function wrap(s, px, maxw, bold,   n, words, k, i, cur, t) {
    k = split(s, words, " "); n = 0; cur = ""
    for (i = 1; i <= k; i++) {
        t = (cur == "" ? words[i] : cur " " words[i])
        if (cur != "" && width(t, px, bold) > maxw) { LN[++n] = cur; cur = words[i] }
        else cur = t
    }
    if (cur != "" || n == 0) LN[++n] = cur
    return n
}
function text(x, y, px, s, fill, bold, anchor) {
    if (px < MINPX) px = MINPX
    return sprintf("<text x=\"%.1f\" y=\"%.1f\" font-family=\"%s\" font-size=\"%d\"%s%s fill=\"%s\">%s</text>\n", x, y, FONT, px, bold ? " font-weight=\"bold\"" : "", anchor != "" ? " text-anchor=\"" anchor "\"" : "", fill, esc(s))
}
# a paragraph at x, from baseline y down; returns the y after it
function para(x, y, px, lh, maxw, s, fill, bold,   n, i) {
    n = wrap(s, px, maxw, bold)
    for (i = 1; i <= n; i++) { BODY = BODY text(x, y, px, LN[i], fill, bold, ""); y += lh }
    return y
}
function image(x, y, w, h, f) {
    return sprintf("<image x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" preserveAspectRatio=\"xMidYMid meet\" xlink:href=\"%s\"/>\n", x, y, w, h, esc(substr(SHOWN[f], 7)))
}
# fit a figure's box into w × h: sets BW, BH
function fit(f, w, h) {
    BW = w; BH = w * FH[f] / FW[f]
    if (BH > h) { BH = h; BW = h * FW[f] / FH[f] }
}

# ---- pages --------------------------------------------------------------------------
# A page is begun (newpage), filled into BODY, and closed (endpage) with its kind, footer
# label and notes; the page numbers are known once all are made, so the footers are
# written then.
function newpage() { BODY = ""; NP++; PLACE[NP] = "" }
function endpage(kind, label, note) {
    PBODY[NP] = BODY; PKIND[NP] = kind; PLABEL[NP] = label; PNOTE[NP] = note
}
function place(f, w) { PLACE[NP] = PLACE[NP] NP "\t" PKIND_NOW "\t" f "\t" sprintf("%.1f", w) "\t" FW[f] "\n" }

function title_page(   y) {
    newpage()
    y = 250
    y = para(MX + 40, y, 54, 66, W - 2 * MX - 80, DTITLE, INK, 1)
    y += 16
    if (dget("title", "subtitle") != "") y = para(MX + 40, y, 30, 40, W - 2 * MX - 80, dget("title", "subtitle"), MUTED, 0)
    y += 30
    if (dget("title", "by") != "") y = para(MX + 40, y, 24, 32, W - 2 * MX - 80, dget("title", "by"), MUTED, 0)
    endpage("title", "", dget("title", "notes"))
}
function heading(s) { return para(MX, 80, HEADPX, 46, W - 2 * MX, s, INK, 1) + 14 }
function outline_page(   y, i, n) {
    newpage()
    y = heading(S["outline"])
    for (i = 1; i <= NL; i++) {
        BODY = BODY text(MX, y, BODYPX, S["lesson"] " " LNUM[i], ACCENT, 1, "")
        BODY = BODY "{{page " LNUM[i] "}}" sprintf("%.1f", y) "\n"
        y = para(MX + 150, y, BODYPX, BODYLH, W - 2 * MX - 150 - 120, LTITLE[i], INK, 0)
        y += 10
    }
    BODY = BODY text(MX, y, BODYPX, S["references"], ACCENT, 1, "")
    BODY = BODY "{{page refs}}" sprintf("%.1f", y) "\n"
    endpage("outline", "", dget("outline", "notes"))
}
function divider(i,   y, sec, lead) {
    newpage()
    LSTART[LNUM[i]] = NP
    sec = "lesson " LNUM[i]
    BODY = BODY text(MX + 40, 250, 32, S["lesson"] " " LNUM[i], ACCENT, 1, "")
    y = para(MX + 40, 310, 48, 58, W - 2 * MX - 80, LTITLE[i], INK, 1)
    lead = dget(sec, "lead")
    if (lead != "" && repeats(lead, LTITLE[i])) {
        printf "slides: warning: %s: the lead of lesson %s repeats its title (left out): %s\n", deck, LNUM[i], lead > "/dev/stderr"
        lead = ""
    }
    if (lead != "") y = para(MX + 40, y + 24, 28, 38, W - 2 * MX - 80, lead, MUTED, 0)
    endpage("divider", "", dget(sec, "notes") != "" ? dget(sec, "notes") : LWHY[i])
}
# whether a divider's lead line says again what the title above it says: it starts with
# the title or with the title's part after its ":", or half its words of 4 letters or more
# are the title's
function repeats(lead, title,   lw, tw, n, i, k, m, T, after) {
    lead = tolower(lead); title = tolower(title)
    if (index(lead, title) == 1) return 1
    after = title; if (sub(/^[^:]*: /, "", after) && index(lead, after) == 1) return 1
    gsub(/[^a-z0-9 ]/, " ", lead); gsub(/[^a-z0-9 ]/, " ", title)
    n = split(title, tw, " "); for (i = 1; i <= n; i++) T[tw[i]] = 1
    n = split(lead, lw, " "); k = 0; m = 0
    for (i = 1; i <= n; i++) if (length(lw[i]) >= 4) { m++; if (lw[i] in T) k++ }
    return m > 0 && 2 * k >= m
}
# a figure page: the figure as large as its caption leaves room for. The page shows at most
# CAPLINES lines of the caption, whole sentences from its start (a first sentence longer
# than that at MINPX); a parenthesis holding inline code (a command, a file) is left to the
# notes. When the page shows less than the whole caption it says so on its footer, and its
# note ends with the whole caption: the notes always complete what the page shows.
function figure_pages(f, cap, note, label, alt, whole,   full, pc, m, PC, i, t, shown, px, lh, k, h, y, nl, cut) {
    full = (whole != "" ? whole : cap); gsub(/`/, "", full)
    pc = cap
    while (match(pc, / ?\([^()]*`[^()]*\)/)) pc = substr(pc, 1, RSTART - 1) substr(pc, RSTART + RLENGTH)
    gsub(/`/, "", pc)
    m = sentences(pc, PC); shown = ""
    for (i = 1; i <= m; i++) {
        t = (shown == "" ? PC[i] : shown " " PC[i])
        if (shown != "" && wrap(t, CAPPX, CAPW, 0) > CAPLINES) break
        shown = t
    }
    px = CAPPX; lh = CAPLH
    if (wrap(shown, px, CAPW, 0) > CAPLINES) { px = MINPX; lh = int(MINPX * 1.3 + 0.5) }
    if (wrap(shown, px, CAPW, 0) > CAPLINES)
        printf "slides: the caption of %s: its first sentence alone is %d lines at %d px (over %d, not cut): shorten it in the lesson\n", f, wrap(shown, px, CAPW, 0), px, CAPLINES > LONGCAP
    cut = (shown != full)
    if (cut) printf "slides: the caption of %s: %d of %d sentences on its page, the whole in the notes\n", f, i - 1, m > LONGCAP
    k = (shown == "" ? 0 : wrap(shown, px, CAPW, 0))
    newpage(); PKIND_NOW = "figure"
    h = H - 10 - (k > 0 ? k * lh + 22 : 30) - (cut && i <= m ? 24 : 0)
    fit(f, W - 2 * 12, h)
    BODY = BODY image((W - BW) / 2, 8, BW, BH, f)
    place(f, BW)
    y = 8 + BH + 26
    for (nl = 1; nl <= k; nl++) { BODY = BODY text(MX, y, px, LN[nl], INK, 0, ""); y += lh }
    if (cut && i <= m) BODY = BODY text(MX, y - lh + 26, MINPX, "(" S["cont_notes"] ")", MUTED, 0, "")
    if (cut) note = note (note != "" ? "\n\n" : "") S["notes_caption"] " " full
    endpage("figure", label, note)
    PWHAT[NP] = alt " · " f
    if (!(f in ALT)) { ALT[f] = alt; APAGE[f] = NP }
}
# the sentences of s, PC[1..n] (a sentence ends at ". ", "! " or "? " outside parentheses)
function sentences(s, PC,   m, d, j, c, ch) {
    m = 0; d = 0; j = 1
    for (c = 1; c < length(s); c++) {
        ch = substr(s, c, 1)
        if (ch == "(") d++; else if (ch == ")") d--
        else if (d <= 0 && ch ~ /[.!?]/ && substr(s, c + 1, 1) == " ") { PC[++m] = substr(s, j, c - j + 1); j = c + 2 }
    }
    if (j <= length(s)) PC[++m] = substr(s, j)
    return m
}
# figures in a table row: each on a page of its own, large (side by side they would be
# thumbnails too small to read); a caption of "Left: … Right: …" is split between the two
# pages, any other caption goes with each figure
function table_pages(files, alts, heads, cap, note, label,   k, fl, al, hl, i, CC, l, r) {
    k = split(files, fl, "|"); split(alts, al, "|"); split(heads, hl, "|")
    for (i = 1; i <= k; i++) CC[i] = cap
    l = index(cap, "Left: "); r = index(cap, " Right: ")
    if (k == 2 && l == 1 && r > 0) {
        CC[1] = upfirst(substr(cap, 7, r - 7)); CC[2] = upfirst(substr(cap, r + 8))
    }
    for (i = 1; i <= k; i++)
        figure_pages(fl[i], CC[i], i == 1 ? note : S["notes_next"], label, al[i], cap)
}
function upfirst(s) { return toupper(substr(s, 1, 1)) substr(s, 2) }
function strip_page(gif, alt, cap, note, label,   cmd, fr, nf, i, cols, rows, cw, ch, x, y, n, s, j) {
    cmd = "cat " sizes
    nf = 0
    while ((getline line < sizes) > 0) if (line ~ /^frame /) { split(line, a, " "); if (index(a[2], FRAMEKEY(gif)) == 1) FR[++nf] = a[2] }
    close(sizes)
    # four frames, first to last, evenly spaced, two by two: eight side by side are too
    # small to read (the notes name the rest)
    if (nf > 4) {
        for (i = 1; i <= 4; i++) SEL[i] = FR[1 + int((i - 1) * (nf - 1) / 3 + 0.5)]
        for (i = 1; i <= 4; i++) FR[i] = SEL[i]
        note = note (note != "" ? " " : "") sprintf(S["notes_frames"], nf)
        nf = 4
    }
    gsub(/`/, "", cap)
    newpage(); PKIND_NOW = "strip"
    y = para(MX, 56, 32, 40, W - 2 * MX, alt, INK, 1)
    n = (cap == "" ? 0 : wrap(cap, CAPPX, CAPW, 0))
    cols = (nf > 2 ? int((nf + 1) / 2) : nf); rows = (nf > cols ? 2 : 1)
    cw = (W - 2 * MX - (cols - 1) * 16) / cols
    ch = (H - y - 10 - n * CAPLH - 22 - rows * 34) / rows
    fit(FR[1], cw, ch); ch = BH
    for (i = 1; i <= nf; i++) {
        x = MX + ((i - 1) % cols) * (cw + 16)
        fit(FR[i], cw, ch)
        yy = y + int((i - 1) / cols) * (ch + 34)
        BODY = BODY image(x + (cw - BW) / 2, yy, BW, BH, FR[i])
        s = ""; if (match(FR[i], /_s[0-9][0-9][0-9]_/)) s = substr(FR[i], RSTART + 2, 3) + 0
        BODY = BODY text(x + cw / 2, yy + BH + 24, 20, S["step"] " " s, MUTED, 0, "middle")
        PLACE[NP] = PLACE[NP] NP "\tstrip\t" FR[i] "\t" sprintf("%.1f", BW) "\t" FW[FR[i]] "\n"
    }
    y = y + rows * (ch + 34) + 24
    for (j = 1; j <= n; j++) { BODY = BODY text(MX, y, CAPPX, LN[j], INK, 0, ""); y += CAPLH }
    endpage("strip", label, (note != "" ? note " " : "") S["notes_strip"])
    PWHAT[NP] = alt " · " gif
    if (!(gif in ALT)) { ALT[gif] = alt; APAGE[gif] = NP }
}
function FRAMEKEY(gif,   d, b, h, t) {
    d = gif; sub(/[^\/]*$/, "", d); b = gif; sub(/.*\//, "", b); sub(/\.gif$/, "", b)
    h = b; sub(/_.*/, "", h)
    return d h "_s"
}
# a list of paragraphs under a heading, over as many pages as they need
function list_pages(head, kind, label, note, nitems, ITEM, SUB, numbered,   i, y, hy, pre, need) {
    newpage(); y = heading(head)
    for (i = 1; i <= nitems; i++) {
        pre = numbered ? i "." : "•"
        need = wrap(ITEM[i], BODYPX, W - 2 * MX - 36, 0) * BODYLH + (SUB[i] != "" ? wrap(SUB[i], SUBPX, W - 2 * MX - 60, 0) * SUBLH : 0)
        if (y + need > H - 40 && i > 1) {
            endpage(kind, label, note)
            newpage(); y = heading(head " (" S["continued"] ")")
        }
        BODY = BODY text(MX, y, BODYPX, pre, numbered ? ACCENT : INK, numbered, "")
        y = para(MX + 36, y, BODYPX, BODYLH, W - 2 * MX - 36, ITEM[i], INK, 0)
        if (SUB[i] != "") y = para(MX + 36, y, SUBPX, SUBLH, W - 2 * MX - 60, SUB[i], ACCENT, 0)
        y += 12
    }
    endpage(kind, label, note)
}
function lesson_end(i,   sec, k, IT, SB, j) {
    sec = "lesson " LNUM[i]
    k = DN[sec, "take-away"]
    for (j = 1; j <= k; j++) { IT[j] = D[sec, "take-away", j]; SB[j] = "" }
    if (k > 0) list_pages(S["lesson"] " " LNUM[i] " — " S["takeaways"], "summary", LNUM[i], dget(sec, "summary-notes"), k, IT, SB, 0)
    k = DN[sec, "question"]
    for (j = 1; j <= k; j++) { IT[j] = D[sec, "question", j]; SB[j] = "" }
    if (k > 0) list_pages(S["lesson"] " " LNUM[i] " — " S["questions"], "questions", LNUM[i], dget(sec, "questions-notes"), k, IT, SB, 1)
    for (j = 1; j <= k; j++) { SB[j] = D[sec, "answer", j] }
    if (k > 0) list_pages(S["lesson"] " " LNUM[i] " — " S["answers"], "answers", LNUM[i], dget(sec, "answers-notes"), k, IT, SB, 1)
}

# ---- the items ----------------------------------------------------------------------
$1 == "L" { NL++; LNUM[NL] = $2; LTITLE[NL] = $4; LWHY[NL] = $5; next }
{ NI++; for (j = 1; j <= NF; j++) IT_F[NI, j] = $j; IT_N[NI] = NF }

END {
    title_page()
    outline_page()
    for (i = 1; i <= NL; i++) {
        divider(i)
        for (t = 1; t <= NI; t++) {
            if (IT_F[t, 2] != LNUM[i]) continue
            kind = IT_F[t, 1]; label = LNUM[i]
            if (kind == "T") {
                f = IT_F[t, 4]; note = fnote(f, IT_F[t, 8])
                table_pages(f, IT_F[t, 5], IT_F[t, 6], IT_F[t, 7], note, label)
            } else {
                f = IT_F[t, 4]; note = fnote(f, IT_F[t, 7])
                if (kind == "G") strip_page(f, IT_F[t, 5], IT_F[t, 6], note, label)
                else figure_pages(f, IT_F[t, 6], note, label, IT_F[t, 5])
            }
        }
        lesson_end(i)
    }
    closing_pages()
    refs_pages()
    write_all()
}
function fnote(f, lead,   first) {
    first = f; sub(/\|.*/, "", first)
    return dget("figures", first) != "" ? dget("figures", first) : buildless(lead)
}
# a lesson's paragraph as a speaker note, without its sentences about building the lesson
# ("This section appears once make timing has measured it."): they speak to whoever
# regenerates the lesson, not to the room
function buildless(s,   m, PC, i, out) {
    m = sentences(s, PC); out = ""
    for (i = 1; i <= m; i++)
        if (PC[i] !~ /(appears|is drawn|is written) once make [a-z]+/ && PC[i] !~ /^(Run|Regenerate) .*make [a-z]+/)
            out = (out == "" ? PC[i] : out " " PC[i])
    return out != "" ? out : s
}
# the end of the lecture: one line per lesson (lessons/deck.md, ## closing: line), then the
# questions page left on screen while the room asks (## closing: qa)
function closing_pages(   k, j, IT, SB) {
    CLOSESTART = NP + 1
    k = DN["closing", "line"]
    for (j = 1; j <= k; j++) { IT[j] = D["closing", "line", j]; SB[j] = "" }
    BODYPX = 24; BODYLH = 32   # nine lines on one page
    if (k > 0) list_pages(S["summary_head"], "closing", "", dget("closing", "summary-notes"), k, IT, SB, 1)
    BODYPX = 27; BODYLH = 36
    k = DN["closing", "qa"]
    for (j = 1; j <= k; j++) { IT[j] = D["closing", "qa", j]; SB[j] = "" }
    if (k > 0) list_pages(S["qa_head"], "closing", "", dget("closing", "qa-notes"), k, IT, SB, 0)
}
function refs_pages(   k, j, r, IT, SB, m, figs, fl, q, pg, s) {
    k = DN["references", "ref"]
    for (j = 1; j <= k; j++) {
        m = split(D["references", "ref", j], r, " \\| ")
        IT[j] = r[1] (r[2] ~ /[0-9]/ ? " (" r[2] ")" : "") ". " r[3] "."
        s = r[4]
        if (m >= 5) {
            q = split(r[5], fl, " "); shown = 0
            for (x = 1; x <= q; x++) {
                pg = APAGE["plots/" fl[x]]
                if (pg == "") { printf "slides: warning: %s: reference %d names plots/%s, which no lesson links (left out)\n", deck, j, fl[x] > "/dev/stderr"; continue }
                nm = upfirst(ALT["plots/" fl[x]])
                s = s (++shown == 1 ? " — " : "; ") nm " (" S["page"] "\302\240" pg ")"   # a no-break space: "p. 41" on one line
            }
        }
        SB[j] = "→ " s
    }
    REFSTART = NP + 1
    BODYPX = 24; BODYLH = 31; SUBPX = 21; SUBLH = 27   # a references page is read, not projected from afar
    list_pages(S["references"], "references", "", dget("references", "notes"), k, IT, SB, 0)
}
function write_all(   p, f, body, n, notehead) {
    printf "# %s — %s\n\n%s\n", S["notes_head"], DTITLE, S["notes_intro"] > notes
    for (p = 1; p <= NP; p++) {
        f = pagepre sprintf("%03d", p) ".svg"
        body = PBODY[p]
        # page numbers the outline and references name, known only now
        while (match(body, /\{\{page [^}]*\}\}[0-9.]+\n/)) {
            s = substr(body, RSTART, RLENGTH); key = s; sub(/^\{\{page /, "", key); sub(/\}\}.*/, "", key)
            yy = s; sub(/^.*\}\}/, "", yy); sub(/\n/, "", yy)
            pg = (key == "refs" ? REFSTART : LSTART[key])
            body = substr(body, 1, RSTART - 1) text(W - MX, yy, BODYPX, pg, MUTED, 0, "end") substr(body, RSTART + RLENGTH)
        }
        while (match(body, /\{\{p [0-9]+\}\}/)) body = substr(body, 1, RSTART - 1) substr(body, RSTART + 4, RLENGTH - 6) substr(body, RSTART + RLENGTH)
        printf "<svg xmlns=\"http://www.w3.org/2000/svg\" xmlns:xlink=\"http://www.w3.org/1999/xlink\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">\n<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n", W, H, W, H, W, H > f
        printf "%s", body > f
        printf "%s", text(W - 14, H - 12, 18, p " / " NP, MUTED, 0, "end") > f
        if (PLABEL[p] != "" && PKIND[p] != "figure" && PKIND[p] != "table" && PKIND[p] != "strip")
            printf "%s", text(MX, H - 12, 18, S["lesson"] " " PLABEL[p], MUTED, 0, "") > f
        print "</svg>" > f
        close(f)
        printf "%s ", f > list
        printf "%s", PLACE[p] > layout
        notehead = PKIND[p] (PLABEL[p] != "" ? ", " tolower(S["lesson"]) " " PLABEL[p] : "")
        n = PNOTE[p]
        # the deck's own size, known only now: {{pages}}, {{lessonpages}} (pages per lesson)
        gsub(/\{\{pages\}\}/, NP, n)
        gsub(/\{\{lessonpages\}\}/, sprintf("%.0f", (CLOSESTART - LSTART[LNUM[1]]) / NL), n)
        while (match(n, /\{\{p [0-9]+\}\}/)) n = substr(n, 1, RSTART - 1) substr(n, RSTART + 4, RLENGTH - 6) substr(n, RSTART + RLENGTH)
        printf "\n## %d (%s)%s\n\n%s\n", p, notehead, PWHAT[p] != "" ? " " PWHAT[p] : "", n > notes
    }
    close(notes); close(list); close(layout)
}
