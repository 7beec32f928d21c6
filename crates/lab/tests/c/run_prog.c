/* The program `locklab run`'s tests put under locks: two threads take one
 * pthread mutex in turn; it prints "ops/s: N" and exits 0, except under
 * the lock named by FAIL_UNDER (exit 3: a lock the program "fails" under).
 * With ALLOC_MIB=N it first touches N MiB and keeps them 100 ms (a known
 * peak memory). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static long counter;

static void *work(void *a) {
    for (int i = 0; i < 100000; i++) {
        pthread_mutex_lock(&m);
        counter++;
        pthread_mutex_unlock(&m);
    }
    return a;
}

int main(void) {
    const char *lock = getenv("LOCKLAB_LOCK");
    const char *fail = getenv("FAIL_UNDER");
    if (lock && fail && strcmp(lock, fail) == 0)
        return 3;
    const char *alloc = getenv("ALLOC_MIB");
    if (alloc) {
        size_t n = (size_t)atol(alloc) << 20;
        /* Written through a volatile pointer, a byte a page: the compiler
         * may not drop the allocation. */
        volatile char *p = malloc(n);
        if (!p)
            return 4;
        for (size_t i = 0; i < n; i += 4096)
            p[i] = 1;
        usleep(100000);
        free((void *)p);
    }
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], 0, work, 0);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], 0);
    clock_gettime(CLOCK_MONOTONIC, &b);
    double s = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9;
    printf("ops/s: %.0f\n", (double)counter / s);
    return counter != 200000;
}
