#!/bin/sh
# The program the tests of `locklab run` and `locklab profile` hand a
# process group to: it forks, ignores SIGTERM, and outlives its welcome.
#
#   group.sh DIR TAG leave PROGRAM...       starts CHILD, then runs PROGRAM
#                                           and exits with its status
#   group.sh DIR TAG hang                   starts CHILD, then sleeps in the
#                                           foreground (sleep TAG+1)
#   group.sh DIR TAG hang-after K PROGRAM...  its first K runs (counted in
#                                           DIR/runs) run PROGRAM, the
#                                           next ones hang
#   group.sh DIR TAG hang-under LOCK PROGRAM...  hangs under LOCKLAB_LOCK=LOCK,
#                                           runs PROGRAM otherwise
#   group.sh DIR TAG escape PROGRAM...      starts `sleep TAG` in a session
#                                           of its own (setsid), holding the
#                                           output open, then runs PROGRAM
#
# CHILD is `sleep TAG` in the background, ignoring SIGTERM and holding the
# script's stdout and stderr open: TAG is a number unique to the test, so
# that the test finds its own processes by it. Every pid goes to a file in
# DIR (TAG.main, TAG.child, TAG.fg) for the test to check, and to kill if
# the lab under test does not.
dir=$1 tag=$2 mode=$3
shift 3

hang() {
    ( trap '' TERM; exec sleep "$tag" ) &
    echo $! > "$dir/$tag.child"
    echo $$ > "$dir/$tag.main"
    echo "hanging: $$ and $!"
    sleep $((tag + 1)) &
    echo $! > "$dir/$tag.fg"
    wait $!
}

case $mode in
leave)
    ( trap '' TERM; exec sleep "$tag" ) &
    echo $! > "$dir/$tag.child"
    echo $$ > "$dir/$tag.main"
    "$@"
    ;;
hang)
    hang
    ;;
hang-after)
    k=$1
    shift
    n=$(cat "$dir/runs" 2>/dev/null || echo 0)
    n=$((n + 1))
    echo $n > "$dir/runs"
    if [ "$n" -le "$k" ]; then
        exec "$@"
    fi
    hang
    ;;
escape)
    setsid sleep "$tag" &
    echo $! > "$dir/$tag.child"
    echo $$ > "$dir/$tag.main"
    "$@"
    ;;
hang-under)
    lock=$1
    shift
    if [ "${LOCKLAB_LOCK:-}" = "$lock" ]; then
        hang
    else
        exec "$@"
    fi
    ;;
*)
    echo "group.sh: no mode $mode" >&2
    exit 64
    ;;
esac
