#!/bin/sh
# A program that prints a lot: `early: 5` on its first line, then BYTES
# zero bytes (no newline among them), then whatever PROGRAM prints, then
# `late: 7` on its last line.
#
#   prints.sh BYTES PROGRAM...
bytes=$1
shift
echo "early: 5"
head -c "$bytes" /dev/zero
echo
"$@" || exit
echo "late: 7"
