#!/bin/sh
# tools/check_citations.sh — every document a file cites must be one a reader of the
# repository can open: a file in the repository or an upstream source file by path.
#
# Fails when a tracked file (or each FILE given)
#   1. names one of the private design notes that are not part of the repository
#      (the notes on Karpenter's API, the scaler's behaviour and the Kubernetes
#      contracts, the design and style notes, or their folder), or
#   2. names a repository document docs/....md that does not exist (documents
#      announced by work in progress, tools/pending-docs.txt, only get a note), or
#   3. cites a section ("§3.2") without naming, on the same line, the document it is a
#      section of: an RFC, an ISO/IEC, IEEE, ECMA or POSIX standard, C99/C11/C17/C23, a
#      URL, or a file by path ("RFC 3339 §5.6" is fine; "§3.2" alone pointed into notes
#      nobody can open: name the repository file, the upstream source or the CRD field).
#
#   tools/check_citations.sh              check every file git tracks
#   tools/check_citations.sh FILE...      check these files
#   tools/check_citations.sh --self-test  prove that every rule can fail
#
# Run by `make lint` and as the `citations` job of `make test`.
set -u
cd "$(dirname "$0")/.." || exit 2

# Names of the notes, spelled so that this file does not match itself.
NOTES='scaler[-]behavior|karpenter[-]api[.]md|kube[-]contracts|shared/[d]ocs|(^|[^a-z-])design[.]md|(^|[^a-z-])style[.]md'
# docs/X.md not preceded by a path character (an upstream "content/en/docs/..." is fine)
DOCREF='(^|[^A-Za-z0-9_./-])docs/[A-Za-z0-9_./-]*[.]md'
# A section sign before a number, and what names a document on the same line.
SECTION='§ ?[0-9]'
SECTION_DOC='RFC ?[0-9]|ISO[ /]|IEC [0-9]|IEEE|ECMA-?[0-9]|POSIX|\b(C99|C11|C17|C23)\b|https?://|[A-Za-z0-9_-]+/[A-Za-z0-9_./-]+[.][a-z]+'

# Files exempt from both rules, as an ERE over the path: the list of pending documents.
ALLOW='^tools/pending-docs[.]txt$'
# Documents announced by work in progress (one path a line, # comments).
PENDING=$(grep -v '^#' tools/pending-docs.txt 2>/dev/null)

check() { # file names on stdin; prints problems; returns 1 if any
    files=$(grep -v -E "$ALLOW" | grep -v -x 'tools/check_citations.sh' | while IFS= read -r f; do
        [ -f "$f" ] && printf '%s\n' "$f"; done)
    [ -n "$files" ] || return 0
    bad=0
    # one grep over all files for each rule (fast: thousands of files)
    if hits=$(printf '%s\n' "$files" | tr '\n' '\0' | xargs -0 grep -nEIH -- "$NOTES"); then
        printf '%s\n' "$hits" | sed 's|$|   <- cites a note outside the repository|'
        bad=1
    fi
    if hits=$(printf '%s\n' "$files" | tr '\n' '\0' | xargs -0 grep -nEIH -- "$SECTION" |
              grep -v -E -- "^[^:]*:[0-9]+:.*($SECTION_DOC)"); then
        printf '%s\n' "$hits" | sed 's|$|   <- a section of what? name the document on this line|'
        bad=1
    fi
    refs=$(printf '%s\n' "$files" | tr '\n' '\0' | xargs -0 grep -oEIH -- "$DOCREF" |
           sed -E 's|^([^:]*):.*(docs/[A-Za-z0-9_./-]*[.]md)$|\1 \2|' | sort -u)
    if [ -n "$refs" ]; then
        while read -r f d; do
            if [ ! -f "$d" ]; then
                case " $(echo $PENDING) " in
                *" $d "*) echo "$f: $d   (note: not written yet, listed as pending)" ;;
                *) echo "$f: $d   <- not in the repository"; bad=1 ;;
                esac
            fi
        done <<EOF2
$refs
EOF2
    fi
    return $bad
}

if [ "${1:-}" = --self-test ]; then
    t=$(mktemp -d) || exit 2
    trap 'rm -rf "$t"' EXIT
    printf '/* see %s §1 */\n' "kube-contracts.md" >"$t/a.c"
    printf '# as docs/%s says\n' "no-such-file.md" >"$t/b.py"
    printf '/* see kubernetes-sigs/karpenter pkg/apis/v1/nodepool.go */\n' >"$t/ok.c"
    printf '/* the candidate rules (\302\2472.2) */\n' >"$t/c.h"
    printf '# RFC 3339 \302\2475.6 timestamps; C11 \302\2477.21.6\n' >>"$t/ok.c"
    for f in a.c b.py c.h; do
        if echo "$t/$f" | check >/dev/null; then echo "citations self-test: $f was not caught"; exit 1; fi
    done
    if ! echo "$t/ok.c" | check; then echo "citations self-test: a good file was rejected"; exit 1; fi
    echo "citations self-test: ok"
    exit 0
fi

if [ $# -gt 0 ]; then
    for f in "$@"; do printf '%s\n' "$f"; done | check
else
    git ls-files | check
fi
rc=$?
[ $rc -eq 0 ] && echo "citations: ok" || echo "citations: cite a file in the repository or an upstream source by path"
exit $rc
