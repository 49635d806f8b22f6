#!/bin/sh
# Profile a running process through the prof: scheme for a while, then print its bins.
#
#   prof-session.sh PID [START END INTERVAL [TEXT_START TEXT_END]]
#
# START/END/INTERVAL follow profile()'s rules (0 0 0: the whole text). Without TEXT_START and
# TEXT_END (the program's executable segment, e.g. from readelf -l) addresses are runtime
# addresses. PROF_SECONDS (default 5) bounds the wait; PROF_SCHEME (default /scheme/prof)
# names the scheme directory.
set -eu
scheme=${PROF_SCHEME:-/scheme/prof}
seconds=${PROF_SECONDS:-5}
if [ $# -lt 1 ]; then
    echo "usage: $0 PID [START END INTERVAL [TEXT_START TEXT_END]]" >&2
    exit 2
fi
pid=$1
shift
range=${*:-0 0 0}

# One write per command: the daemon answers EBUSY, ESRCH, EFAULT, EPERM or EINVAL.
if ! echo "start $pid $range" > "$scheme/ctl"; then
    echo "$0: could not start profiling pid $pid" >&2
    exit 1
fi

state() {
    sed -n 's/^state=\([a-z]*\) .*/\1/p' "$scheme/status"
}

waited=0
while [ "$(state)" = running ] && [ "$waited" -lt "$seconds" ]; do
    sleep 1
    waited=$((waited + 1))
done
if [ "$(state)" = running ]; then
    echo stop > "$scheme/ctl"
fi

cat "$scheme/status"
# The non-empty bins: "lo-hi count".
grep -v '^#' "$scheme/bins" | while read -r lo hi count; do
    if [ "$count" != 0 ]; then
        echo "$lo-$hi $count"
    fi
done
