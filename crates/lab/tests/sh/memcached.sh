#!/bin/sh
# memcached on 127.0.0.1 (a port of its own, TCP only) under whatever lock
# the environment names, driven for SECS seconds (default 1) by memcaslap,
# which runs without the interposer; prints memcaslap's "TPS: N" line.
secs=${SECS:-1}
port=$((20000 + $$ % 20000))
user=""
[ "$(id -u)" = 0 ] && user="-u nobody"
memcached $user -l 127.0.0.1 -p $port -U 0 -t 2 -m 64 &
pid=$!
# Wait until it accepts connections (at most 3 s).
i=0
while ! env -u LD_PRELOAD memcstat --servers=127.0.0.1:$port >/dev/null 2>&1; do
    i=$((i + 1))
    if [ $i -gt 60 ]; then
        kill $pid
        echo "memcached did not start" >&2
        exit 1
    fi
    sleep 0.05
done
env -u LD_PRELOAD -u LOCKLAB_LOCK -u LOCKLAB_RWLOCK \
    memcaslap -s 127.0.0.1:$port -t ${secs}s -T 2 -c 16 2>&1 | grep -E "TPS"
status=$?
kill $pid
wait $pid 2>/dev/null
exit $status
