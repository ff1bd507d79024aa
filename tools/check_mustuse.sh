#!/bin/sh
# tools/check_mustuse.sh — no nw_rc_t is dropped by accident: compile every product file
# with clang, where NW_MUST_USE (common/err.h) is warn_unused_result, and fail on any
# call whose nw_rc_t result is not used. A deliberate ignore is a cast to void.
#
#   tools/check_mustuse.sh              check every product .c (the Makefile's SRC_DIRS)
#   tools/check_mustuse.sh FILE...      check these files
#   tools/check_mustuse.sh --self-test  prove that a dropped result fails and a cast passes
#
# Run by `make lint` and as the `mustuse` job of `make test`. Needs clang (make deps).
set -u
cd "$(dirname "$0")/.." || exit 2
CLANG=${CLANG:-clang}
PKGS="libmicrohttpd gnutls openssl libcjson libcurl yaml-0.1 libxml-2.0"
FLAGS="-std=c11 -D_GNU_SOURCE -DNW_VERSION=\"0\" -DNW_GIT_REV=\"0\" -fsyntax-only -Wno-everything -Wunused-result -Werror=unused-result -I. -Ibuild/gen $(pkg-config --cflags $PKGS 2>/dev/null)"

if [ "${1:-}" = --self-test ]; then
    d=$(mktemp -d) || exit 2
    trap 'rm -rf "$d"' EXIT
    printf '#include "common/err.h"\nNW_MUST_USE nw_rc_t f(void);\nvoid g(void);\nvoid g(void) { f(); }\n' > "$d/bad.c"
    printf '#include "common/err.h"\nNW_MUST_USE nw_rc_t f(void);\nvoid g(void);\nvoid g(void) { (void)f(); }\n' > "$d/good.c"
    # shellcheck disable=SC2086
    if $CLANG $FLAGS "$d/bad.c" 2>/dev/null; then echo "mustuse self-test: a dropped result passed"; exit 1; fi
    # shellcheck disable=SC2086
    if ! $CLANG $FLAGS "$d/good.c"; then echo "mustuse self-test: a cast to void failed"; exit 1; fi
    echo "mustuse self-test: ok"
    exit 0
fi
command -v "$CLANG" >/dev/null || { echo "check_mustuse: $CLANG is not installed (make deps)"; exit 2; }
if [ $# -gt 0 ]; then files="$*"; else
    files=$(find common api config admission scaler server cli -name '*.c' | sort); fi
# shellcheck disable=SC2086
out=$(printf '%s\n' $files | xargs -P "$(nproc 2>/dev/null || echo 2)" -n 8 $CLANG $FLAGS 2>&1)
if printf '%s' "$out" | grep -q 'error:'; then
    printf '%s\n' "$out" | grep -E 'error:' | sed 's/ \[-Werror,-Wunused-result\]//'
    echo "check_mustuse: $(printf '%s\n' "$out" | grep -c 'error:') nw_rc_t result(s) dropped; use it, or cast the call to void"
    exit 1
fi
echo "check_mustuse: ok ($(printf '%s\n' $files | wc -l) files)"
