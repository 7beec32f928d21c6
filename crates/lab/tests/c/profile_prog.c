/* The program of locklab profile's known-answer test (tests/profile.rs).
 * Each lock does one known thing, and the program writes each lock's
 * address to the file named by its first argument ("name 0xADDR" lines),
 * so the test can find it in the profile, and "hot_ns N", how long the
 * hot lock's rounds took (CLOCK_MONOTONIC):
 *
 *   hot    two threads, 20 rounds: A takes it and holds it 1 ms; B, told
 *          that A holds it, asks for it (so it waits), then holds it 1 ms
 *          too: 40 acquisitions, every hold at least 1 ms, and B's waits
 *          about A's holds. B asks from wait_for_hot().
 *   lone   the main thread alone, 10000 times: none contended
 *   rec    a recursive mutex, 100 times three deep: 100 acquisitions
 *   errchk an error-checking mutex taken, then asked again (EDEADLK):
 *          1 acquisition
 *   busy   held by main while a thread tries it 7 times: 7 busy
 *   rw     3 readers inside at once (a barrier in the read hold), 20
 *          times each, and 5 writes: 60 reads, none waited
 *   cvm    the mutex of 10 timed condition waits (1 ms each, never
 *          signalled)
 *   spin   a pthread spin lock, 1000 times
 *   fork   a child takes lone 5 times and exits: its own profile
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t hot = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t lone = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t rec;
static pthread_mutex_t errchk;
static pthread_mutex_t busy = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static pthread_mutex_t cvm = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static pthread_spinlock_t spin;
static pthread_barrier_t inside;

static atomic_int stage;

static void fail(const char *what) {
    fprintf(stderr, "profile_prog: %s\n", what);
    exit(1);
}

static void sleep_ms(long ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&t, &t) != 0 && errno == EINTR) {
    }
}

/* A's side of hot. */
static void *side_a(void *arg) {
    for (int r = 0; r < 20; r++) {
        while (atomic_load(&stage) != 3 * r) {
        }
        pthread_mutex_lock(&hot);
        atomic_store(&stage, 3 * r + 1);
        sleep_ms(1);
        pthread_mutex_unlock(&hot);
    }
    return arg;
}

static volatile int hot_turns;

__attribute__((noinline)) void wait_for_hot(void) {
    pthread_mutex_lock(&hot);
    hot_turns++; /* not a tail call: the return address is in here */
}

/* B's side of hot. */
static void *side_b(void *arg) {
    for (int r = 0; r < 20; r++) {
        while (atomic_load(&stage) != 3 * r + 1) {
        }
        wait_for_hot();
        sleep_ms(1);
        pthread_mutex_unlock(&hot);
        atomic_store(&stage, 3 * r + 3);
    }
    return arg;
}

static void *trier(void *arg) {
    for (int i = 0; i < 7; i++) {
        if (pthread_mutex_trylock(&busy) != EBUSY)
            fail("trylock of a held mutex did not say EBUSY");
    }
    return arg;
}

static void *reader(void *arg) {
    for (int i = 0; i < 20; i++) {
        if (pthread_rwlock_rdlock(&rw) != 0)
            fail("rdlock");
        pthread_barrier_wait(&inside);
        pthread_rwlock_unlock(&rw);
        pthread_barrier_wait(&inside);
    }
    return arg;
}


int main(int argc, char **argv) {
    if (argc != 2)
        fail("usage: profile_prog ADDRESS-FILE");
    FILE *f = fopen(argv[1], "w");
    if (!f)
        fail("cannot write the address file");
    fprintf(f, "hot %p\nlone %p\nrec %p\nerrchk %p\nbusy %p\nrw %p\ncvm %p\nspin %p\n",
            (void *)&hot, (void *)&lone, (void *)&rec, (void *)&errchk, (void *)&busy,
            (void *)&rw, (void *)&cvm, (void *)&spin);

    pthread_t t[4];
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pthread_create(&t[0], 0, side_a, 0);
    pthread_create(&t[1], 0, side_b, 0);
    pthread_join(t[0], 0);
    pthread_join(t[1], 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    fprintf(f, "hot_ns %lld\n",
            (long long)(t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec));
    fclose(f);

    for (int i = 0; i < 10000; i++) {
        pthread_mutex_lock(&lone);
        pthread_mutex_unlock(&lone);
    }

    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&rec, &a);
    for (int i = 0; i < 100; i++) {
        for (int d = 0; d < 3; d++)
            pthread_mutex_lock(&rec);
        for (int d = 0; d < 3; d++)
            pthread_mutex_unlock(&rec);
    }
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
    pthread_mutex_init(&errchk, &a);
    pthread_mutex_lock(&errchk);
    if (pthread_mutex_lock(&errchk) != EDEADLK)
        fail("an error-checking mutex taken again did not say EDEADLK");
    pthread_mutex_unlock(&errchk);

    pthread_mutex_lock(&busy);
    pthread_create(&t[0], 0, trier, 0);
    pthread_join(t[0], 0);
    pthread_mutex_unlock(&busy);

    pthread_barrier_init(&inside, 0, 3);
    for (int i = 0; i < 3; i++)
        pthread_create(&t[i], 0, reader, 0);
    for (int i = 0; i < 3; i++)
        pthread_join(t[i], 0);
    for (int i = 0; i < 5; i++) {
        pthread_rwlock_wrlock(&rw);
        pthread_rwlock_unlock(&rw);
    }

    pthread_mutex_lock(&cvm);
    for (int i = 0; i < 10; i++) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 1000000;
        if (until.tv_nsec >= 1000000000) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000;
        }
        int r;
        while ((r = pthread_cond_timedwait(&cv, &cvm, &until)) == 0) {
        }
        if (r != ETIMEDOUT)
            fail("a timed condition wait did not time out");
    }
    pthread_mutex_unlock(&cvm);

    pthread_spin_init(&spin, PTHREAD_PROCESS_PRIVATE);
    for (int i = 0; i < 1000; i++) {
        pthread_spin_lock(&spin);
        pthread_spin_unlock(&spin);
    }

    pid_t c = fork();
    if (c == 0) {
        for (int i = 0; i < 5; i++) {
            pthread_mutex_lock(&lone);
            pthread_mutex_unlock(&lone);
        }
        exit(0);
    }
    int st;
    if (waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        fail("the child");
    puts("profile_prog: done");
    return 0;
}
