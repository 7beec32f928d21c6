#!/usr/bin/env bash
# What the interposer costs an uncontended lock/unlock pair, every figure
# measured side by side in one run: uncontended.c (fastest of 7 batches of
# 10 million pairs) under the C library alone, under the interposer's
# passthrough, and under each lock, plain and with the profile counting;
# the lock used directly from Rust is timed inside the same processes.
# Every repetition runs every configuration once, in turn; medians over
# the repetitions, in ns per pair, and their ratios:
#
#   interface  through the C functions / directly from Rust
#   counted    with LOCKLAB_PROFILE / without
#
#   cargo build --release
#   crates/preload/c/costs.sh [REPS] [LOCK...]
#
# Defaults: 5 repetitions; mutex futex3 tas ticket mcs.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
so="${LOCKLAB_PRELOAD:-$root/target/release/liblocklab_preload.so}"
[ -f "$so" ] || { echo "no $so: run cargo build --release first" >&2; exit 2; }
reps="${1:-5}"
shift || true
locks=("$@")
[ ${#locks[@]} -gt 0 ] || locks=(mutex futex3 tas ticket mcs)
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cc -O2 -pthread -o "$work/uncontended" "$here/uncontended.c" -ldl
mkdir "$work/prof"
chmod 1777 "$work/prof"
field() { sed -n "s|^$1 *||p"; }
for r in $(seq "$reps"); do
    out=$(env -u LD_PRELOAD "$work/uncontended")
    echo "glibc via $(echo "$out" | field 'ns/pair:')" >>"$work/all"
    out=$(LD_PRELOAD="$so" LOCKLAB_LOCK=pthread "$work/uncontended")
    echo "passthrough via $(echo "$out" | field 'ns/pair:')" >>"$work/all"
    out=$(LD_PRELOAD="$so" LOCKLAB_LOCK=pthread LOCKLAB_PROFILE="$work/prof" "$work/uncontended")
    echo "glibc counted $(echo "$out" | field 'ns/pair:')" >>"$work/all"
    for l in "${locks[@]}"; do
        out=$(LD_PRELOAD="$so" LOCKLAB_LOCK="$l" "$work/uncontended")
        echo "$l via $(echo "$out" | field 'ns/pair:')" >>"$work/all"
        echo "$l direct $(echo "$out" | field 'direct ns/pair:')" >>"$work/all"
        out=$(LD_PRELOAD="$so" LOCKLAB_LOCK="$l" LOCKLAB_PROFILE="$work/prof" "$work/uncontended")
        echo "$l counted $(echo "$out" | field 'ns/pair:')" >>"$work/all"
    done
done
med() { # NAME KIND
    awk -v n="$1" -v k="$2" '$1==n && $2==k {print $3}' "$work/all" | sort -g |
        awk '{a[NR]=$1} END {if (NR) print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (a != "" && b != "" && b > 0) printf "%.2f", a/b; else printf "–"}'; }
echo "ns per uncontended pair, median of $reps; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, $(ldd --version | head -1 | awk '{print $NF}')"
g=$(med glibc via)
p=$(med passthrough via)
printf '%-12s %8s\n' "C library" "$g"
printf '%-12s %8s   passthrough - C library: %s ns\n' "passthrough" "$p" "$(awk -v a="$p" -v b="$g" 'BEGIN {printf "%.2f", a-b}')"
gc=$(med glibc counted)
printf '%-12s %8s   counted / passthrough: %s\n' "counted" "$gc" "$(ratio "$gc" "$p")"
printf '\n%-12s %8s %8s %10s %8s %8s\n' lock direct via interface counted counted
for l in "${locks[@]}"; do
    d=$(med "$l" direct)
    v=$(med "$l" via)
    c=$(med "$l" counted)
    printf '%-12s %8s %8s %10s %8s %8s\n' "$l" "$d" "$v" "$(ratio "$v" "$d")" "$c" "$(ratio "$c" "$v")"
done
