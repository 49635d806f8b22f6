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

# Shell built-ins only (besides cat and sleep): a minimal Redox image has no sed or grep.
state() {
    read -r first rest < "$scheme/status"
    echo "${first#state=}"
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
# The non-empty bins: "lo-hi count" (the first line is the "# start=…" header).
while read -r lo hi count; do
    case $lo in
        '#'*) ;;
        *) [ "$count" = 0 ] || echo "$lo-$hi $count" ;;
    esac
done < "$scheme/bins"
