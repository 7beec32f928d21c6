/* What one lock/unlock pair of a pthread mutex costs a program, with no
 * contention: prints "ns/pair: X", the fastest of 7 batches of 10 million
 * pairs on a static mutex (interruptions only ever add time). A second
 * thread sleeps throughout, so that no C library takes a single-threaded
 * short cut. Run it under locklab run to compare the C library's mutex,
 * the interposer's passthrough and locklab's locks:
 *
 *   cc -O2 -pthread -o uncontended crates/preload/c/uncontended.c
 *   locklab run --locks pthread,mutex,futex3,tas --reps 5 \
 *       --metric 'ns/pair: ([0-9.]+)' --lower-is-better -- ./uncontended
 *
 * Under one of locklab's locks it also prints "direct ns/pair: Y": the
 * same lock used directly from Rust (the interposer's own code for it,
 * without the C functions), a batch after each of its own, so that the
 * two are measured side by side. crates/preload/c/costs.sh tabulates
 * both, the passthrough and the profile's counting.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static volatile long sink;

static void *sleeper(void *a) {
    sleep(3600);
    return a;
}

int main(void) {
    pthread_t t;
    pthread_create(&t, 0, sleeper, 0);
    const long n = 10000000;
    double best = 1e30, direct = 1e30;
    /* Under the interposer with one of locklab's locks: the same lock used
     * directly from Rust, a batch of it after each batch through the C
     * functions (the interposer's own code for that lock, no interface). */
    double (*direct_pairs)(unsigned long) =
        (double (*)(unsigned long))dlsym(RTLD_DEFAULT, "locklab_direct_ns_per_pair");
    for (int b = 0; b < 7; b++) {
        struct timespec x, y;
        clock_gettime(CLOCK_MONOTONIC, &x);
        for (long i = 0; i < n; i++) {
            pthread_mutex_lock(&m);
            sink = i;
            pthread_mutex_unlock(&m);
        }
        clock_gettime(CLOCK_MONOTONIC, &y);
        double ns = ((double)(y.tv_sec - x.tv_sec) * 1e9 + (double)(y.tv_nsec - x.tv_nsec)) / (double)n;
        if (ns < best)
            best = ns;
        if (direct_pairs) {
            double d = direct_pairs((unsigned long)n);
            if (d >= 0 && d < direct)
                direct = d;
        }
    }
    printf("ns/pair: %.2f\n", best);
    if (direct < 1e30)
        printf("direct ns/pair: %.2f\n", direct);
    return 0;
}
