#!/usr/bin/env bash
# What counting costs an uncontended lock/unlock pair: uncontended.c
# (fastest of 7 batches of 10 million pairs) under each lock, with and
# without LOCKLAB_PROFILE, the two interleaved in every repetition; prints
# each lock's median ns per pair both ways and their ratio.
#
#   cargo build --release
#   crates/preload/c/profile_cost.sh [REPS] [LOCK...]
#
# Defaults: 5 repetitions; pthread mutex futex3 tas mcs.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
so="${LOCKLAB_PRELOAD:-$root/target/release/liblocklab_preload.so}"
[ -f "$so" ] || { echo "no $so: run cargo build --release first" >&2; exit 2; }
reps="${1:-5}"
shift || true
locks=("$@")
[ ${#locks[@]} -gt 0 ] || locks=(pthread mutex futex3 tas mcs)
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cc -O2 -pthread -o "$work/uncontended" "$here/uncontended.c"
mkdir "$work/prof"
pair() { # LOCK [profile]
    if [ "${2:-}" = profile ]; then
        LD_PRELOAD="$so" LOCKLAB_LOCK="$1" LOCKLAB_PROFILE="$work/prof" "$work/uncontended"
    else
        LD_PRELOAD="$so" LOCKLAB_LOCK="$1" "$work/uncontended"
    fi | sed -n 's/^ns\/pair: *//p'
}
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
for r in $(seq "$reps"); do
    for l in "${locks[@]}"; do
        echo "$l plain $(pair "$l")" >>"$work/all"
        echo "$l counted $(pair "$l" profile)" >>"$work/all"
    done
done
printf '%-10s %10s %10s %7s   (ns per pair, median of %s; %s)\n' lock plain counted ratio "$reps" \
    "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores"
for l in "${locks[@]}"; do
    p=$(awk -v l="$l" '$1==l && $2=="plain" {print $3}' "$work/all" | median)
    c=$(awk -v l="$l" '$1==l && $2=="counted" {print $3}' "$work/all" | median)
    printf '%-10s %10s %10s %7.2f\n' "$l" "$p" "$c" "$(echo "$c / $p" | bc -l)"
done
