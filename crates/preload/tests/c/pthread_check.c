/*
 * pthread_check: exercises every pthread function liblocklab_preload.so
 * interposes (mutexes, condition variables, reader-writer locks, spin
 * locks) and the POSIX error codes they return, so that the same program
 * can be run against glibc and under LD_PRELOAD with each of locklab's
 * locks and must pass both ways.
 *
 *   pthread_check [mutex|cond|rwlock|spin|pshared|fork|all]   (default all)
 *
 * Exit 0 and "ok: N checks ..." on stdout when every check held; otherwise
 * exit 1 with one line on stderr naming the failed check (exit 3 if the
 * watchdog fired: a check hung; exit 2 for a bad argument).
 *
 * Build: cc -std=c11 -Wall -Wextra -Werror -O2 -pthread pthread_check.c
 *
 * The program is sized for a few seconds on two cores under any lock,
 * including pure spin locks with more threads than cores: at most 4
 * threads contend for one lock, and contending loops yield after each
 * release so that a waiter preempted in a FIFO lock's line soon gets a CPU
 * (without that, 4 threads on a ticket lock on 2 cores can take minutes).
 * Timing is only ever checked as a lower bound (a timed wait must not
 * report a timeout before its deadline), never as speed; a watchdog turns
 * a hang into a failure line naming the step that hung.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define THREADS 4             /* contending threads per lock, at most */
/* The counts of the contended loops are divided by `scale`: 1, or 10
 * when the program is run as `pthread_check GROUP quick` (the interposer's
 * tests run most locks that way; a mutex that does not exclude still
 * loses updates at a tenth of the iterations). */
static int scale = 1;
#define MUTEX_ITERS (200000 / scale) /* increments per thread under a mutex */
#define SPIN_ITERS (100000 / scale)  /* increments per thread under a spin lock */
#define QUEUE_ITEMS (100000u / (unsigned)scale) /* items through the producer/consumer queue */
#define QUEUE_CAP 16          /* slots in that queue */
#define RW_OPS (50000 / scale) /* operations per thread on the rwlock */
#define SHARED_ITERS 10000    /* increments per process, process-shared */
#define BCAST_WAITERS 8       /* waiters woken by one broadcast */
#define TIMEOUT_MS 10         /* every timed wait that must time out */
#define SLACK_NS 1000000LL    /* how early a timeout may be reported: 1 ms */
#define WAIT_MS 10000         /* the longest a check waits for another thread */
#define WATCHDOG_S 50         /* the whole program, and each forked child */

#define NS_PER_MS 1000000LL
#define NS_PER_S 1000000000LL

/* ---------------------------------------------------------------- report */

static atomic_ulong checks;                  /* checks made so far */
static const char *volatile current = "start"; /* the step under way */
static char *child_report;                   /* MAP_SHARED: a child's failure */
#define REPORT_SIZE 512
static volatile sig_atomic_t in_child;       /* in a forked child */
static volatile pid_t child_pid;             /* a child to kill on timeout */

/* Names the step under way, for failure lines and the watchdog. */
static void step(const char *name) { current = name; }

static const char *errname(int e) {
    switch (e) {
    case 0: return "0";
    case EBUSY: return "EBUSY";
    case ETIMEDOUT: return "ETIMEDOUT";
    case EDEADLK: return "EDEADLK";
    case EPERM: return "EPERM";
    case EINVAL: return "EINVAL";
    case EAGAIN: return "EAGAIN";
    case EOWNERDEAD: return "EOWNERDEAD";
    case ENOTRECOVERABLE: return "ENOTRECOVERABLE";
    case ENOMEM: return "ENOMEM";
    case ENOSYS: return "ENOSYS";
    default: return "another error";
    }
}

/* One line naming the step, the source line and what went wrong, then exit
 * 1. A forked child writes the line to the shared page instead, for its
 * parent to report, so that the run still ends with exactly one line. */
__attribute__((format(printf, 2, 3), noreturn))
static void fail(int line, const char *fmt, ...) {
    char msg[REPORT_SIZE - 64];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (in_child) {
        snprintf(child_report, REPORT_SIZE, "child: %s (line %d): %s", current, line, msg);
        _exit(1);
    }
    fprintf(stderr, "FAIL %s (line %d): %s\n", current, line, msg);
    _exit(1);
}

#define CHECK(cond, ...)                                                      \
    do {                                                                      \
        atomic_fetch_add(&checks, 1);                                         \
        if (!(cond)) fail(__LINE__, __VA_ARGS__);                             \
    } while (0)

/* A call that returns an error number must return exactly `want`. */
#define EXPECT(call, want)                                                    \
    do {                                                                      \
        int rc_ = (call);                                                     \
        int want_ = (want);                                                   \
        atomic_fetch_add(&checks, 1);                                         \
        if (rc_ != want_)                                                     \
            fail(__LINE__, "%s returned %s (%d), want %s", #call,             \
                 errname(rc_), rc_, errname(want_));                          \
    } while (0)

/* The same, uncounted, for calls in loops (whose result is checked once
 * at the end, by a counted check). */
#define MUST(call)                                                            \
    do {                                                                      \
        int rc_ = (call);                                                     \
        if (rc_ != 0) fail(__LINE__, "%s returned %s (%d), want 0", #call,    \
                           errname(rc_), rc_);                                \
    } while (0)

static void say(const char *s) {
    ssize_t r = write(STDERR_FILENO, s, strlen(s));
    (void)r;
}

/* The watchdog: a check that hangs (a lost wake-up, a lock that is never
 * released) ends the run with a line naming it instead of hanging. */
static void on_alarm(int sig) {
    (void)sig;
    if (in_child) {
        static const char pre[] = "child: timeout in ";
        size_t n = 0;
        for (const char *p = pre; *p && n < REPORT_SIZE - 1; p++) child_report[n++] = *p;
        for (const char *p = current; *p && n < REPORT_SIZE - 1; p++) child_report[n++] = *p;
        child_report[n] = '\0';
        _exit(3);
    }
    if (child_pid > 0) kill(child_pid, SIGKILL);
    say("FAIL timeout: ");
    say(current);
    say(" did not finish within the watchdog's time\n");
    _exit(3);
}

/* ------------------------------------------------------------------ time */

static int64_t now_ns(clockid_t clock) {
    struct timespec t;
    clock_gettime(clock, &t);
    return (int64_t)t.tv_sec * NS_PER_S + t.tv_nsec;
}

static struct timespec ts_of(int64_t ns) {
    struct timespec t = {.tv_sec = ns / NS_PER_S, .tv_nsec = ns % NS_PER_S};
    return t;
}

static int64_t ns_of(const struct timespec *t) { return (int64_t)t->tv_sec * NS_PER_S + t->tv_nsec; }

/* An absolute deadline `ms` from now on `clock`. */
static struct timespec deadline_in(clockid_t clock, int64_t ms) {
    return ts_of(now_ns(clock) + ms * NS_PER_MS);
}

/* A deadline whose nanoseconds are out of range: EINVAL when it matters. */
static struct timespec bad_deadline(void) {
    struct timespec t = deadline_in(CLOCK_REALTIME, 1000);
    t.tv_nsec = NS_PER_S;
    return t;
}

static void sleep_us(long us) {
    struct timespec t = {.tv_sec = us / 1000000, .tv_nsec = (us % 1000000) * 1000};
    while (nanosleep(&t, &t) != 0 && errno == EINTR) {
    }
}

/* A timed wait that reported ETIMEDOUT must not have done so before its
 * deadline (less 1 ms of slack), read on the deadline's own clock. */
#define CHECK_NOT_EARLY(clock, deadline)                                      \
    do {                                                                      \
        int64_t late_ = now_ns(clock) - ns_of(&(deadline));                   \
        CHECK(late_ >= -SLACK_NS, "timed out %.3f ms before its deadline",    \
              (double)-late_ / 1e6);                                          \
    } while (0)

/* Waits (yielding, then sleeping: kind to spin locks) until *v >= want;
 * false if that takes longer than `ms`. Uses no lock under test. */
static bool wait_until(atomic_int *v, int want, int64_t ms) {
    int64_t end = now_ns(CLOCK_MONOTONIC) + ms * NS_PER_MS;
    for (unsigned i = 0;; i++) {
        if (atomic_load(v) >= want) return true;
        if (now_ns(CLOCK_MONOTONIC) > end) return false;
        if (i < 64)
            sched_yield();
        else
            sleep_us(100);
    }
}

/* --------------------------------------------------- lock call wrappers */

typedef int (*lock_fn)(void *);

static int mx_lock(void *m) { return pthread_mutex_lock(m); }
static int mx_trylock(void *m) { return pthread_mutex_trylock(m); }
static int mx_unlock(void *m) { return pthread_mutex_unlock(m); }
/* Takes the mutex if it is free, and gives it back: 0 if it could. */
static int mx_trytake(void *m) {
    int rc = pthread_mutex_trylock(m);
    if (rc != 0) return rc;
    return pthread_mutex_unlock(m) == 0 ? 0 : -1;
}
static int rw_rdlock(void *l) { return pthread_rwlock_rdlock(l); }
static int rw_wrlock(void *l) { return pthread_rwlock_wrlock(l); }
static int rw_unlock(void *l) { return pthread_rwlock_unlock(l); }
static int rw_trywrtake(void *l) {
    int rc = pthread_rwlock_trywrlock(l);
    if (rc != 0) return rc;
    return pthread_rwlock_unlock(l) == 0 ? 0 : -1;
}
static int sp_lock(void *s) { return pthread_spin_lock(s); }
static int sp_trylock(void *s) { return pthread_spin_trylock(s); }
static int sp_unlock(void *s) { return pthread_spin_unlock(s); }

/* Runs fn(obj) on a new thread and returns its result: what another
 * thread (one that does not hold anything) gets from a call. */
struct call { lock_fn fn; void *obj; int rc; };

static void *call_main(void *p) {
    struct call *c = p;
    c->rc = c->fn(c->obj);
    return NULL;
}

static int in_other_thread(lock_fn fn, void *obj) {
    struct call c = {fn, obj, -1};
    pthread_t t;
    EXPECT(pthread_create(&t, NULL, call_main, &c), 0);
    EXPECT(pthread_join(t, NULL), 0);
    return c.rc;
}

/* Another thread that takes a lock and holds it until told to release it
 * (or, with release_after_ms, releases it by itself after that long). */
struct holder {
    lock_fn acquire, release;
    void *obj;
    int release_after_ms;
    atomic_int stage; /* 1: holds it; 2: asked to release; 3: released */
    int acquire_rc, release_rc;
    pthread_t thread;
};

static void *holder_main(void *p) {
    struct holder *h = p;
    h->acquire_rc = h->acquire(h->obj);
    atomic_store(&h->stage, 1);
    if (h->release_after_ms > 0)
        sleep_us(h->release_after_ms * 1000L);
    else
        while (!wait_until(&h->stage, 2, WAIT_MS)) {
        }
    h->release_rc = h->release(h->obj);
    atomic_store(&h->stage, 3);
    return NULL;
}

/* Starts a holder and returns once it holds the lock. */
static void hold(struct holder *h, lock_fn acquire, lock_fn release, void *obj, int release_after_ms) {
    h->acquire = acquire;
    h->release = release;
    h->obj = obj;
    h->release_after_ms = release_after_ms;
    atomic_store(&h->stage, 0);
    h->acquire_rc = h->release_rc = -1;
    EXPECT(pthread_create(&h->thread, NULL, holder_main, h), 0);
    CHECK(wait_until(&h->stage, 1, WAIT_MS), "the holder thread did not get a free lock in %d ms", WAIT_MS);
    EXPECT(h->acquire_rc, 0);
}

/* Asks the holder to release (unless it does so by itself) and joins it. */
static void unhold(struct holder *h) {
    if (h->release_after_ms <= 0) atomic_store(&h->stage, 2);
    EXPECT(pthread_join(h->thread, NULL), 0);
    EXPECT(h->release_rc, 0);
}

/* A thread that blocks in lock() while another holds the lock: it must
 * not get in until the holder lets go, and must get in then. Unlike the
 * contended counters below, this catches a lock that does not exclude
 * whatever the machine's load. */
struct taker {
    lock_fn lock, unlock;
    void *obj;
    atomic_int got; /* 1 once its lock() returned */
    int lock_rc, unlock_rc;
    pthread_t thread;
};

static void *taker_main(void *p) {
    struct taker *t = p;
    t->lock_rc = t->lock(t->obj);
    atomic_store(&t->got, 1);
    t->unlock_rc = t->unlock(t->obj);
    return NULL;
}

/* With h holding the lock: a taker waits (TIMEOUT_MS) without getting in;
 * once h releases, it gets in. Ends with h joined. */
static void blocks_until_released(struct holder *h, lock_fn lock, lock_fn unlock) {
    struct taker t = {.lock = lock, .unlock = unlock, .obj = h->obj, .lock_rc = -1, .unlock_rc = -1};
    atomic_store(&t.got, 0);
    EXPECT(pthread_create(&t.thread, NULL, taker_main, &t), 0);
    sleep_us(TIMEOUT_MS * 1000L);
    CHECK(atomic_load(&t.got) == 0, "another thread's lock returned (%s) while the lock was held",
          errname(t.lock_rc));
    unhold(h);
    CHECK(wait_until(&t.got, 1, WAIT_MS), "a blocked lock did not get in within %d ms of the release", WAIT_MS);
    EXPECT(pthread_join(t.thread, NULL), 0);
    EXPECT(t.lock_rc, 0);
    EXPECT(t.unlock_rc, 0);
}

/* ------------------------------------------------- contended counters */

/* A plain counter read, then written back a moment later: a lock that
 * does not exclude loses updates here when its threads run on different
 * cores at once. (On a loaded machine they may share one core, and then
 * interleave only where they yield, outside the critical section: the
 * blocking checks of mutex_common catch such a lock whatever the load.
 * Yielding inside the critical section instead would catch it here too,
 * but sends FIFO spin locks into convoys that take minutes.) */
static volatile unsigned long counter;

static void bump(void) {
    unsigned long v = counter;
    for (volatile int k = 0; k < 4; k++) {
    }
    counter = v + 1;
}

static atomic_int go; /* the contending threads start together */

static void wait_go(void) {
    while (!atomic_load(&go)) sched_yield();
}

struct hammer {
    lock_fn lock, unlock;
    void *obj;
    int iters;
    bool nest; /* a recursive mutex: every other time take it twice */
};

static void *hammer_main(void *p) {
    struct hammer *h = p;
    wait_go();
    for (int i = 0; i < h->iters; i++) {
        int rc = h->lock(h->obj);
        if (rc != 0) fail(__LINE__, "lock under contention returned %s", errname(rc));
        bool twice = h->nest && (i & 1);
        if (twice && (rc = h->lock(h->obj)) != 0)
            fail(__LINE__, "recursive relock under contention returned %s", errname(rc));
        bump();
        if (twice && (rc = h->unlock(h->obj)) != 0)
            fail(__LINE__, "inner unlock under contention returned %s", errname(rc));
        if ((rc = h->unlock(h->obj)) != 0) fail(__LINE__, "unlock under contention returned %s", errname(rc));
        sched_yield();
    }
    return NULL;
}

/* THREADS threads each bump the counter `iters` times under the lock: the
 * total is exact only if the lock excludes. */
static void exclusion(lock_fn lock, lock_fn unlock, void *obj, int iters, bool nest) {
    pthread_t t[THREADS];
    struct hammer h = {lock, unlock, obj, iters, nest};
    counter = 0;
    atomic_store(&go, 0);
    for (int i = 0; i < THREADS; i++) EXPECT(pthread_create(&t[i], NULL, hammer_main, &h), 0);
    atomic_store(&go, 1);
    for (int i = 0; i < THREADS; i++) EXPECT(pthread_join(t[i], NULL), 0);
    unsigned long want = (unsigned long)THREADS * (unsigned long)iters;
    CHECK(counter == want, "lost updates: counter %lu, want %lu (the lock let two threads in)", counter, want);
}

/* ================================================================ mutex */

static pthread_mutex_t static_plain = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t static_plain2 = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t static_recursive = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static pthread_mutex_t static_errorcheck = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;

/* A mutex of `type` (-1: NULL attributes). */
static void mutex_init_type(pthread_mutex_t *m, int type) {
    if (type < 0) {
        EXPECT(pthread_mutex_init(m, NULL), 0);
        return;
    }
    pthread_mutexattr_t a;
    EXPECT(pthread_mutexattr_init(&a), 0);
    EXPECT(pthread_mutexattr_settype(&a, type), 0);
    EXPECT(pthread_mutex_init(m, &a), 0);
    EXPECT(pthread_mutexattr_destroy(&a), 0);
}

/* What every type does alike: lock/trylock/timed locks on a free mutex
 * succeed; while another thread holds it, trylock is EBUSY and both timed
 * locks time out, not before their deadlines; once it is released it can
 * be taken again. */
static void mutex_common(pthread_mutex_t *m) {
    EXPECT(pthread_mutex_lock(m), 0);
    EXPECT(pthread_mutex_unlock(m), 0);
    EXPECT(pthread_mutex_trylock(m), 0);
    EXPECT(pthread_mutex_unlock(m), 0);
    struct timespec d = deadline_in(CLOCK_REALTIME, WAIT_MS);
    EXPECT(pthread_mutex_timedlock(m, &d), 0);
    EXPECT(pthread_mutex_unlock(m), 0);
    d = deadline_in(CLOCK_MONOTONIC, WAIT_MS);
    EXPECT(pthread_mutex_clocklock(m, CLOCK_MONOTONIC, &d), 0);
    EXPECT(pthread_mutex_unlock(m), 0);

    /* while another thread holds it, lock() waits until it is released */
    struct holder h;
    hold(&h, mx_lock, mx_unlock, m, 0);
    blocks_until_released(&h, mx_lock, mx_unlock);

    hold(&h, mx_lock, mx_unlock, m, 0);
    EXPECT(pthread_mutex_trylock(m), EBUSY);
    d = deadline_in(CLOCK_REALTIME, TIMEOUT_MS);
    EXPECT(pthread_mutex_timedlock(m, &d), ETIMEDOUT);
    CHECK_NOT_EARLY(CLOCK_REALTIME, d);
    d = deadline_in(CLOCK_MONOTONIC, TIMEOUT_MS);
    EXPECT(pthread_mutex_clocklock(m, CLOCK_MONOTONIC, &d), ETIMEDOUT);
    CHECK_NOT_EARLY(CLOCK_MONOTONIC, d);
    /* A deadline already past: at once. */
    d = ts_of(now_ns(CLOCK_REALTIME) - NS_PER_S);
    EXPECT(pthread_mutex_timedlock(m, &d), ETIMEDOUT);
    unhold(&h);
    EXPECT(in_other_thread(mx_trytake, m), 0);
    EXPECT(pthread_mutex_trylock(m), 0);
    EXPECT(pthread_mutex_unlock(m), 0);
}

/* ERRORCHECK: the owner relocking gets EDEADLK (from lock and timedlock)
 * or EBUSY (trylock); unlocking by a non-owner, or when unlocked, EPERM. */
static void mutex_errorcheck(pthread_mutex_t *m) {
    EXPECT(pthread_mutex_lock(m), 0);
    EXPECT(pthread_mutex_lock(m), EDEADLK);
    EXPECT(pthread_mutex_trylock(m), EBUSY);
    struct timespec d = deadline_in(CLOCK_REALTIME, TIMEOUT_MS);
    EXPECT(pthread_mutex_timedlock(m, &d), EDEADLK);
    EXPECT(in_other_thread(mx_unlock, m), EPERM);
    EXPECT(in_other_thread(mx_trylock, m), EBUSY); /* still held */
    EXPECT(pthread_mutex_unlock(m), 0);
    EXPECT(pthread_mutex_unlock(m), EPERM);
    EXPECT(in_other_thread(mx_unlock, m), EPERM);
    EXPECT(in_other_thread(mx_trytake, m), 0);
}

/* RECURSIVE: the owner's lock, trylock and timedlock each add one; the
 * mutex stays held (another thread: EBUSY, and EPERM for its unlock)
 * until as many unlocks, then it is free; one unlock more is EPERM. */
static void mutex_recursive(pthread_mutex_t *m) {
    EXPECT(pthread_mutex_lock(m), 0);
    EXPECT(pthread_mutex_lock(m), 0);
    EXPECT(pthread_mutex_lock(m), 0);
    EXPECT(pthread_mutex_trylock(m), 0);
    struct timespec d = deadline_in(CLOCK_REALTIME, TIMEOUT_MS);
    EXPECT(pthread_mutex_timedlock(m, &d), 0);
    EXPECT(in_other_thread(mx_trylock, m), EBUSY);
    EXPECT(in_other_thread(mx_unlock, m), EPERM);
    for (int i = 0; i < 4; i++) {
        EXPECT(pthread_mutex_unlock(m), 0);
        EXPECT(in_other_thread(mx_trylock, m), EBUSY);
    }
    EXPECT(pthread_mutex_unlock(m), 0);
    EXPECT(in_other_thread(mx_trytake, m), 0);
    EXPECT(pthread_mutex_unlock(m), EPERM);
    /* lock three times, unlock three times: another thread can take it */
    for (int i = 0; i < 3; i++) EXPECT(pthread_mutex_lock(m), 0);
    for (int i = 0; i < 3; i++) EXPECT(pthread_mutex_unlock(m), 0);
    EXPECT(in_other_thread(mx_trytake, m), 0);
}

static void group_mutex(void) {
    /* Exclusion first: it is what a lock that does not exclude fails. */
    pthread_mutex_t m;
    step("mutex: exclusion, pthread_mutex_init(NULL)");
    mutex_init_type(&m, -1);
    exclusion(mx_lock, mx_unlock, &m, MUTEX_ITERS, false);
    EXPECT(pthread_mutex_destroy(&m), 0);
    step("mutex: exclusion, PTHREAD_MUTEX_INITIALIZER");
    exclusion(mx_lock, mx_unlock, &static_plain, MUTEX_ITERS, false);
    step("mutex: exclusion, RECURSIVE (nested every other time)");
    mutex_init_type(&m, PTHREAD_MUTEX_RECURSIVE);
    exclusion(mx_lock, mx_unlock, &m, MUTEX_ITERS, true);
    EXPECT(pthread_mutex_destroy(&m), 0);

    static const struct { int type; const char *name; } types[] = {
        {-1, "mutex: init(NULL)"},
        {PTHREAD_MUTEX_NORMAL, "mutex: NORMAL"},
        {PTHREAD_MUTEX_DEFAULT, "mutex: DEFAULT"},
        {PTHREAD_MUTEX_ERRORCHECK, "mutex: ERRORCHECK"},
        {PTHREAD_MUTEX_RECURSIVE, "mutex: RECURSIVE"},
    };
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        step(types[i].name);
        mutex_init_type(&m, types[i].type);
        mutex_common(&m);
        if (types[i].type == PTHREAD_MUTEX_ERRORCHECK) mutex_errorcheck(&m);
        if (types[i].type == PTHREAD_MUTEX_RECURSIVE) mutex_recursive(&m);
        EXPECT(pthread_mutex_destroy(&m), 0);
    }

    /* Static initializers, first used here with no init call. */
    step("mutex: PTHREAD_MUTEX_INITIALIZER");
    mutex_common(&static_plain2);
    step("mutex: PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP");
    mutex_common(&static_errorcheck);
    mutex_errorcheck(&static_errorcheck);
    step("mutex: PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP");
    mutex_common(&static_recursive);
    mutex_recursive(&static_recursive);

    /* A timed lock that is released before its deadline acquires (0),
     * on either clock: the timed path can wait and then win. */
    step("mutex: timedlock/clocklock acquire when released in time");
    mutex_init_type(&m, -1);
    struct holder h;
    hold(&h, mx_lock, mx_unlock, &m, 20);
    struct timespec d = deadline_in(CLOCK_REALTIME, WAIT_MS);
    EXPECT(pthread_mutex_timedlock(&m, &d), 0);
    EXPECT(pthread_mutex_unlock(&m), 0);
    unhold(&h);
    hold(&h, mx_lock, mx_unlock, &m, 20);
    d = deadline_in(CLOCK_MONOTONIC, WAIT_MS);
    EXPECT(pthread_mutex_clocklock(&m, CLOCK_MONOTONIC, &d), 0);
    EXPECT(pthread_mutex_unlock(&m), 0);
    unhold(&h);

    /* EINVAL: a deadline with tv_nsec out of range when the call would
     * have to wait, and a clock that timed locks do not support. */
    step("mutex: EINVAL for a bad deadline or clock");
    hold(&h, mx_lock, mx_unlock, &m, 0);
    d = bad_deadline();
    EXPECT(pthread_mutex_timedlock(&m, &d), EINVAL);
    d = deadline_in(CLOCK_MONOTONIC, TIMEOUT_MS);
    EXPECT(pthread_mutex_clocklock(&m, CLOCK_PROCESS_CPUTIME_ID, &d), EINVAL);
    unhold(&h);

    /* destroy, then init again: a usable mutex */
    step("mutex: destroy and init again");
    EXPECT(pthread_mutex_destroy(&m), 0);
    mutex_init_type(&m, -1);
    EXPECT(pthread_mutex_lock(&m), 0);
    EXPECT(pthread_mutex_unlock(&m), 0);
    EXPECT(pthread_mutex_destroy(&m), 0);
}

/* ================================================================= cond */

static pthread_cond_t static_cond = PTHREAD_COND_INITIALIZER;
static pthread_mutex_t queue_mutex = PTHREAD_MUTEX_INITIALIZER;

/* A bounded queue: producers wait while it is full, consumers while it is
 * empty; the last producer to finish broadcasts so that every consumer
 * sees the end. Items are signalled after the unlock (POSIX allows either;
 * the changed state was published under the mutex, so no wake-up is lost)
 * or, with `under`, with the mutex held, the way most C programs do it:
 * the interposer then defers the wake to the mutex's release (src/cond.rs),
 * and these runs check that no deferred wake is lost, under a default and
 * a recursive mutex. Each side yields after its release: four threads
 * contending for a FIFO spin lock on two cores would otherwise lose a time
 * slice whenever the scheduler preempts the next in line (the queue
 * collapse of `bench lhp`), which is the lock's nature, not the condition
 * variable's (tests/handoff.rs times the hand-off itself). */
static struct {
    pthread_mutex_t *m;
    bool under;
    pthread_cond_t *not_empty, *not_full;
    unsigned buf[QUEUE_CAP];
    int head, count, producers_left;
    unsigned char *seen; /* how many times each item was consumed */
    unsigned long long sum;
    long consumed;
} q;

static void *producer_main(void *p) {
    unsigned first = (unsigned)(uintptr_t)p;
    unsigned n = QUEUE_ITEMS / 2;
    for (unsigned item = first; item < first + n; item++) {
        MUST(pthread_mutex_lock(q.m));
        while (q.count == QUEUE_CAP) MUST(pthread_cond_wait(q.not_full, q.m));
        q.buf[(q.head + q.count) % QUEUE_CAP] = item;
        q.count++;
        if (q.under) {
            MUST(pthread_cond_signal(q.not_empty));
            MUST(pthread_mutex_unlock(q.m));
        } else {
            MUST(pthread_mutex_unlock(q.m));
            MUST(pthread_cond_signal(q.not_empty));
        }
        sched_yield();
    }
    MUST(pthread_mutex_lock(q.m));
    if (--q.producers_left == 0) MUST(pthread_cond_broadcast(q.not_empty));
    MUST(pthread_mutex_unlock(q.m));
    return NULL;
}

static void *consumer_main(void *p) {
    (void)p;
    MUST(pthread_mutex_lock(q.m));
    for (;;) {
        while (q.count == 0 && q.producers_left > 0) MUST(pthread_cond_wait(q.not_empty, q.m));
        if (q.count == 0) break;
        unsigned item = q.buf[q.head];
        q.head = (q.head + 1) % QUEUE_CAP;
        q.count--;
        if (item < QUEUE_ITEMS) q.seen[item]++;
        q.sum += item;
        q.consumed++;
        if (q.under) {
            MUST(pthread_cond_signal(q.not_full));
            MUST(pthread_mutex_unlock(q.m));
        } else {
            MUST(pthread_mutex_unlock(q.m));
            MUST(pthread_cond_signal(q.not_full));
        }
        sched_yield();
        MUST(pthread_mutex_lock(q.m));
    }
    MUST(pthread_mutex_unlock(q.m));
    return NULL;
}

/* 2 producers, 2 consumers, QUEUE_ITEMS items 0..N-1 over mutex `m`,
 * signalled `under` it or after it: each must come out exactly once (no
 * lost wake-up hangs it, no item is taken twice). */
static void cond_queue(pthread_mutex_t *m, bool under, pthread_cond_t *not_empty, pthread_cond_t *not_full) {
    memset(&q, 0, sizeof q);
    q.m = m;
    q.under = under;
    q.not_empty = not_empty;
    q.not_full = not_full;
    q.producers_left = 2;
    q.seen = calloc(QUEUE_ITEMS, 1);
    CHECK(q.seen != NULL, "out of memory");
    pthread_t t[4];
    EXPECT(pthread_create(&t[0], NULL, consumer_main, NULL), 0);
    EXPECT(pthread_create(&t[1], NULL, consumer_main, NULL), 0);
    EXPECT(pthread_create(&t[2], NULL, producer_main, (void *)(uintptr_t)0), 0);
    EXPECT(pthread_create(&t[3], NULL, producer_main, (void *)(uintptr_t)(QUEUE_ITEMS / 2)), 0);
    for (int i = 0; i < 4; i++) EXPECT(pthread_join(t[i], NULL), 0);
    CHECK(q.consumed == QUEUE_ITEMS, "%ld items consumed, want %u", q.consumed, QUEUE_ITEMS);
    unsigned long long want = (unsigned long long)QUEUE_ITEMS * (QUEUE_ITEMS - 1) / 2;
    CHECK(q.sum == want, "items sum to %llu, want %llu", q.sum, want);
    unsigned bad = 0;
    while (bad < QUEUE_ITEMS && q.seen[bad] == 1) bad++;
    CHECK(bad == QUEUE_ITEMS, "item %u consumed %u times", bad, bad < QUEUE_ITEMS ? q.seen[bad] : 0);
    free(q.seen);
}

/* A wait with nobody signalling times out, not before its deadline, and
 * returns with the mutex held: another thread's trylock is EBUSY. */
static void cond_times_out(pthread_cond_t *c, pthread_mutex_t *m, clockid_t clock, bool clockwait) {
    EXPECT(pthread_mutex_lock(m), 0);
    struct timespec d = deadline_in(clock, TIMEOUT_MS);
    int rc;
    do /* a spurious wake-up (0) is allowed: wait again */
        rc = clockwait ? pthread_cond_clockwait(c, m, clock, &d) : pthread_cond_timedwait(c, m, &d);
    while (rc == 0);
    EXPECT(rc, ETIMEDOUT);
    CHECK_NOT_EARLY(clock, d);
    EXPECT(in_other_thread(mx_trylock, m), EBUSY);
    EXPECT(pthread_mutex_unlock(m), 0);
}

/* A waiter thread for the signalled-wait and recursive-mutex checks. */
static struct {
    pthread_cond_t *c;
    pthread_mutex_t *m;
    atomic_int waiting;
    int flag;
    int rc;
    bool timed;
} w;

static void *waiter_main(void *p) {
    (void)p;
    EXPECT(pthread_mutex_lock(w.m), 0);
    atomic_store(&w.waiting, 1); /* the mutex is ours until we wait */
    struct timespec d = deadline_in(CLOCK_REALTIME, WAIT_MS);
    w.rc = 0;
    while (!w.flag && w.rc == 0)
        w.rc = w.timed ? pthread_cond_timedwait(w.c, w.m, &d) : pthread_cond_wait(w.c, w.m);
    /* back with the mutex held, and held once: one unlock frees it */
    EXPECT(in_other_thread(mx_trylock, w.m), EBUSY);
    EXPECT(pthread_mutex_unlock(w.m), 0);
    EXPECT(in_other_thread(mx_trytake, w.m), 0);
    return NULL;
}

/* The waiter waits on (c, m); this thread takes m (it can only because
 * the wait released it), sets the flag and signals: the waiter returns 0. */
static void cond_signalled(pthread_cond_t *c, pthread_mutex_t *m, bool timed) {
    w.c = c;
    w.m = m;
    w.flag = 0;
    w.rc = -1;
    w.timed = timed;
    atomic_store(&w.waiting, 0);
    pthread_t t;
    EXPECT(pthread_create(&t, NULL, waiter_main, NULL), 0);
    CHECK(wait_until(&w.waiting, 1, WAIT_MS), "the waiter did not start");
    EXPECT(pthread_mutex_lock(m), 0);
    w.flag = 1;
    EXPECT(pthread_cond_signal(c), 0);
    EXPECT(pthread_mutex_unlock(m), 0);
    EXPECT(pthread_join(t, NULL), 0);
    EXPECT(w.rc, 0);
}

/* Broadcast: BCAST_WAITERS threads wait for a flag; one broadcast must
 * wake them all. */
static struct {
    pthread_cond_t c;
    pthread_mutex_t m;
    int waiting, flag;
    atomic_int woke;
} b;

static void *bcast_main(void *p) {
    (void)p;
    EXPECT(pthread_mutex_lock(&b.m), 0);
    b.waiting++;
    while (!b.flag) MUST(pthread_cond_wait(&b.c, &b.m));
    atomic_fetch_add(&b.woke, 1);
    EXPECT(pthread_mutex_unlock(&b.m), 0);
    return NULL;
}

static void cond_broadcast(void) {
    EXPECT(pthread_cond_init(&b.c, NULL), 0);
    EXPECT(pthread_mutex_init(&b.m, NULL), 0);
    b.waiting = b.flag = 0;
    atomic_store(&b.woke, 0);
    pthread_t t[BCAST_WAITERS];
    for (int i = 0; i < BCAST_WAITERS; i++) EXPECT(pthread_create(&t[i], NULL, bcast_main, NULL), 0);
    /* all are waiting once all have counted themselves: each counted under
     * the mutex, which it releases only by waiting */
    int64_t end = now_ns(CLOCK_MONOTONIC) + WAIT_MS * NS_PER_MS;
    for (;;) {
        MUST(pthread_mutex_lock(&b.m));
        int n = b.waiting;
        if (n == BCAST_WAITERS) break; /* still holding the mutex */
        MUST(pthread_mutex_unlock(&b.m));
        if (now_ns(CLOCK_MONOTONIC) >= end) fail(__LINE__, "only %d of %d waiters started", n, BCAST_WAITERS);
        sleep_us(500);
    }
    b.flag = 1;
    EXPECT(pthread_cond_broadcast(&b.c), 0);
    EXPECT(pthread_mutex_unlock(&b.m), 0);
    bool all = wait_until(&b.woke, BCAST_WAITERS, WAIT_MS);
    CHECK(all, "one broadcast woke %d of %d waiters", atomic_load(&b.woke), BCAST_WAITERS);
    for (int i = 0; i < BCAST_WAITERS; i++) EXPECT(pthread_join(t[i], NULL), 0);
    EXPECT(pthread_cond_destroy(&b.c), 0);
    EXPECT(pthread_mutex_destroy(&b.m), 0);
}

/* A wait with a second mutex while another thread waits with the first:
 * undefined in POSIX; under locklab's condition variable, EINVAL at once,
 * with the second mutex still held (an error-checking one, so unlock says
 * whether it is). Not checked against the C library alone, whose answer is
 * its own. */
static pthread_cond_t two_cond = PTHREAD_COND_INITIALIZER;
static pthread_mutex_t two_first = PTHREAD_MUTEX_INITIALIZER;
static bool two_waiting, two_done;

static void *two_waiter(void *arg) {
    EXPECT(pthread_mutex_lock(&two_first), 0);
    two_waiting = true;
    while (!two_done) {
        struct timespec d = deadline_in(CLOCK_REALTIME, TIMEOUT_MS);
        int r = pthread_cond_timedwait(&two_cond, &two_first, &d);
        CHECK(r == 0 || r == ETIMEDOUT, "the first waiter's timedwait returned %d", r);
    }
    EXPECT(pthread_mutex_unlock(&two_first), 0);
    return arg;
}

static void cond_two_mutexes(void) {
    pthread_t t;
    EXPECT(pthread_create(&t, NULL, two_waiter, NULL), 0);
    /* Taking the first mutex after the waiter set its flag means the
     * waiter released it inside its wait. */
    for (;;) {
        EXPECT(pthread_mutex_lock(&two_first), 0);
        bool in = two_waiting;
        EXPECT(pthread_mutex_unlock(&two_first), 0);
        if (in) break;
        sched_yield();
    }
    pthread_mutex_t second;
    mutex_init_type(&second, PTHREAD_MUTEX_ERRORCHECK);
    EXPECT(pthread_mutex_lock(&second), 0);
    struct timespec d = deadline_in(CLOCK_REALTIME, 1);
    EXPECT(pthread_cond_timedwait(&two_cond, &second, &d), EINVAL);
    EXPECT(pthread_mutex_unlock(&second), 0);
    EXPECT(pthread_mutex_destroy(&second), 0);
    EXPECT(pthread_mutex_lock(&two_first), 0);
    two_done = true;
    EXPECT(pthread_cond_broadcast(&two_cond), 0);
    EXPECT(pthread_mutex_unlock(&two_first), 0);
    EXPECT(pthread_join(t, NULL), 0);
}

static void group_cond(void) {
    pthread_cond_t plain, mono;
    pthread_condattr_t ca;
    step("cond: init");
    EXPECT(pthread_cond_init(&plain, NULL), 0);
    EXPECT(pthread_condattr_init(&ca), 0);
    EXPECT(pthread_condattr_setclock(&ca, CLOCK_MONOTONIC), 0);
    clockid_t got = CLOCK_REALTIME;
    EXPECT(pthread_condattr_getclock(&ca, &got), 0);
    CHECK(got == CLOCK_MONOTONIC, "condattr clock %d, want CLOCK_MONOTONIC", (int)got);
    EXPECT(pthread_cond_init(&mono, &ca), 0);
    EXPECT(pthread_condattr_destroy(&ca), 0);

    pthread_mutex_t ec, rec, def;
    mutex_init_type(&ec, PTHREAD_MUTEX_ERRORCHECK);
    mutex_init_type(&rec, PTHREAD_MUTEX_RECURSIVE);
    mutex_init_type(&def, -1);

    step("cond: producer/consumer queue (PTHREAD_COND_INITIALIZER, init(NULL))");
    cond_queue(&queue_mutex, false, &static_cond, &plain);
    step("cond: producer/consumer queue (MONOTONIC cond)");
    cond_queue(&queue_mutex, false, &mono, &plain);
    step("cond: producer/consumer queue, signalled under the mutex");
    cond_queue(&queue_mutex, true, &static_cond, &plain);
    step("cond: producer/consumer queue, signalled under a RECURSIVE mutex");
    cond_queue(&rec, true, &plain, &mono);

    /* A REALTIME cond interprets timedwait's deadline on REALTIME, a
     * MONOTONIC one on MONOTONIC: a deadline read on the wrong clock
     * returns at once (caught here) or decades late (the watchdog). */
    step("cond: timedwait times out (REALTIME cond, ERRORCHECK mutex)");
    cond_times_out(&static_cond, &ec, CLOCK_REALTIME, false);
    step("cond: timedwait times out (init(NULL) cond, default mutex)");
    cond_times_out(&plain, &def, CLOCK_REALTIME, false);
    step("cond: timedwait times out (MONOTONIC cond)");
    cond_times_out(&mono, &def, CLOCK_MONOTONIC, false);
    /* clockwait names its clock, whatever the cond's attribute says */
    step("cond: clockwait(MONOTONIC) times out (REALTIME cond)");
    cond_times_out(&plain, &ec, CLOCK_MONOTONIC, true);
    step("cond: clockwait(REALTIME) times out (MONOTONIC cond)");
    cond_times_out(&mono, &def, CLOCK_REALTIME, true);
    step("cond: timedwait times out (RECURSIVE mutex locked once)");
    cond_times_out(&plain, &rec, CLOCK_REALTIME, false);

    /* The mutex after a timeout is ours: an ERRORCHECK unlock says so
     * (cond_times_out's unlock), and a second one is EPERM. */
    step("cond: ERRORCHECK mutex after timedwait");
    EXPECT(pthread_mutex_unlock(&ec), EPERM);

    step("cond: wait woken by signal");
    cond_signalled(&plain, &def, false);
    step("cond: timedwait woken by signal before its deadline");
    cond_signalled(&static_cond, &ec, true);
    /* A RECURSIVE mutex locked once: the wait releases it entirely (this
     * thread can take it) and gives it back with a count of one. */
    step("cond: wait with a RECURSIVE mutex locked once");
    cond_signalled(&plain, &rec, false);
    step("cond: timedwait with a RECURSIVE mutex locked once");
    cond_signalled(&mono, &rec, true);

    step("cond: one broadcast wakes every waiter");
    cond_broadcast();

    const char *lock = getenv("LOCKLAB_LOCK");
    if (lock && strcmp(lock, "pthread") != 0) {
        step("cond: a wait with a second mutex: EINVAL, the mutex kept");
        cond_two_mutexes();
    }

    /* EINVAL: a deadline with tv_nsec out of range, a clock clockwait does
     * not support; the mutex stays held. */
    step("cond: EINVAL for a bad deadline or clock");
    EXPECT(pthread_mutex_lock(&ec), 0);
    struct timespec d = bad_deadline();
    EXPECT(pthread_cond_timedwait(&plain, &ec, &d), EINVAL);
    d = deadline_in(CLOCK_MONOTONIC, TIMEOUT_MS);
    EXPECT(pthread_cond_clockwait(&plain, &ec, CLOCK_PROCESS_CPUTIME_ID, &d), EINVAL);
    EXPECT(pthread_mutex_unlock(&ec), 0);

    step("cond: signal and broadcast with no waiter; destroy");
    EXPECT(pthread_cond_signal(&plain), 0);
    EXPECT(pthread_cond_broadcast(&mono), 0);
    EXPECT(pthread_cond_destroy(&plain), 0);
    EXPECT(pthread_cond_destroy(&mono), 0);
    EXPECT(pthread_mutex_destroy(&ec), 0);
    EXPECT(pthread_mutex_destroy(&rec), 0);
    EXPECT(pthread_mutex_destroy(&def), 0);
}

/* =============================================================== rwlock */

static pthread_rwlock_t static_rw = PTHREAD_RWLOCK_INITIALIZER;
static pthread_rwlock_t static_rw2 = PTHREAD_RWLOCK_INITIALIZER;

/* Readers share: each of two readers, holding its read lock, waits until
 * both are inside. A lock that let one reader in at a time fails this. */
static atomic_int readers_inside;

static void *sharing_reader_main(void *p) {
    pthread_rwlock_t *l = p;
    EXPECT(pthread_rwlock_rdlock(l), 0);
    atomic_fetch_add(&readers_inside, 1);
    bool both = wait_until(&readers_inside, 2, WAIT_MS);
    CHECK(both, "a reader waited %d ms for the other to join it (readers do not share)", WAIT_MS);
    EXPECT(pthread_rwlock_unlock(l), 0);
    return NULL;
}

/* 90% reads, 10% writes; a writer keeps a == b, stepping them one at a
 * time, so a reader that ever sees them differ ran beside a writer. */
static volatile unsigned long rw_a, rw_b;
static atomic_ulong rw_writes, rw_torn;

static void *rw_mixed_main(void *p) {
    pthread_rwlock_t *l = p;
    uint32_t x = (uint32_t)(uintptr_t)&x | 1u; /* a per-thread xorshift */
    unsigned long writes = 0, torn = 0;
    wait_go();
    for (int i = 0; i < RW_OPS; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        int rc;
        if (x % 10 == 0) {
            if ((rc = pthread_rwlock_wrlock(l)) != 0) fail(__LINE__, "wrlock returned %s", errname(rc));
            rw_a = rw_a + 1;
            for (volatile int k = 0; k < 4; k++) {
            }
            rw_b = rw_b + 1;
            writes++;
        } else {
            if ((rc = pthread_rwlock_rdlock(l)) != 0) fail(__LINE__, "rdlock returned %s", errname(rc));
            unsigned long a = rw_a;
            for (volatile int k = 0; k < 4; k++) {
            }
            if (rw_b != a) torn++;
        }
        if ((rc = pthread_rwlock_unlock(l)) != 0) fail(__LINE__, "unlock returned %s", errname(rc));
        sched_yield();
    }
    atomic_fetch_add(&rw_writes, writes);
    atomic_fetch_add(&rw_torn, torn);
    return NULL;
}

static void group_rwlock(void) {
    pthread_rwlock_t l;
    step("rwlock: readers share (PTHREAD_RWLOCK_INITIALIZER)");
    pthread_t t[THREADS];
    atomic_store(&readers_inside, 0);
    for (int i = 0; i < 2; i++) EXPECT(pthread_create(&t[i], NULL, sharing_reader_main, &static_rw), 0);
    for (int i = 0; i < 2; i++) EXPECT(pthread_join(t[i], NULL), 0);

    step("rwlock: writers exclude readers and writers (init(NULL))");
    EXPECT(pthread_rwlock_init(&l, NULL), 0);
    rw_a = rw_b = 0;
    atomic_store(&rw_writes, 0);
    atomic_store(&rw_torn, 0);
    atomic_store(&go, 0);
    for (int i = 0; i < THREADS; i++) EXPECT(pthread_create(&t[i], NULL, rw_mixed_main, &l), 0);
    atomic_store(&go, 1);
    for (int i = 0; i < THREADS; i++) EXPECT(pthread_join(t[i], NULL), 0);
    CHECK(atomic_load(&rw_torn) == 0, "readers saw a half-done write %lu times", atomic_load(&rw_torn));
    CHECK(rw_a == atomic_load(&rw_writes) && rw_b == rw_a, "after %lu writes the pair is (%lu, %lu): writers overlapped",
          atomic_load(&rw_writes), rw_a, rw_b);

    pthread_rwlock_t *locks[] = {&l, &static_rw2};
    const char *names[][4] = {
        {"rwlock: another thread holds it for writing (init(NULL))",
         "rwlock: another thread holds it for reading (init(NULL))",
         "rwlock: the writer locks again (init(NULL))",
         "rwlock: rdlock/wrlock wait for the release (init(NULL))"},
        {"rwlock: another thread holds it for writing (PTHREAD_RWLOCK_INITIALIZER)",
         "rwlock: another thread holds it for reading (PTHREAD_RWLOCK_INITIALIZER)",
         "rwlock: the writer locks again (PTHREAD_RWLOCK_INITIALIZER)",
         "rwlock: rdlock/wrlock wait for the release (PTHREAD_RWLOCK_INITIALIZER)"},
    };
    for (int i = 0; i < 2; i++) {
        pthread_rwlock_t *r = locks[i];
        struct holder h;
        struct timespec d;
        /* A writer elsewhere: every try is EBUSY, every timed lock times
         * out (not early), on REALTIME (timed*) and MONOTONIC (clock*). */
        step(names[i][0]);
        hold(&h, rw_wrlock, rw_unlock, r, 0);
        EXPECT(pthread_rwlock_tryrdlock(r), EBUSY);
        EXPECT(pthread_rwlock_trywrlock(r), EBUSY);
        d = deadline_in(CLOCK_REALTIME, TIMEOUT_MS);
        EXPECT(pthread_rwlock_timedrdlock(r, &d), ETIMEDOUT);
        CHECK_NOT_EARLY(CLOCK_REALTIME, d);
        d = deadline_in(CLOCK_REALTIME, TIMEOUT_MS);
        EXPECT(pthread_rwlock_timedwrlock(r, &d), ETIMEDOUT);
        CHECK_NOT_EARLY(CLOCK_REALTIME, d);
        d = deadline_in(CLOCK_MONOTONIC, TIMEOUT_MS);
        EXPECT(pthread_rwlock_clockrdlock(r, CLOCK_MONOTONIC, &d), ETIMEDOUT);
        CHECK_NOT_EARLY(CLOCK_MONOTONIC, d);
        d = deadline_in(CLOCK_MONOTONIC, TIMEOUT_MS);
        EXPECT(pthread_rwlock_clockwrlock(r, CLOCK_MONOTONIC, &d), ETIMEDOUT);
        CHECK_NOT_EARLY(CLOCK_MONOTONIC, d);
        /* EINVAL: tv_nsec out of range, a clock the calls do not support */
        d = bad_deadline();
        EXPECT(pthread_rwlock_timedwrlock(r, &d), EINVAL);
        EXPECT(pthread_rwlock_timedrdlock(r, &d), EINVAL);
        d = deadline_in(CLOCK_MONOTONIC, TIMEOUT_MS);
        EXPECT(pthread_rwlock_clockrdlock(r, CLOCK_PROCESS_CPUTIME_ID, &d), EINVAL);
        unhold(&h);
        /* free again for both kinds (the timed-out waiters left no trace) */
        EXPECT(pthread_rwlock_tryrdlock(r), 0);
        EXPECT(pthread_rwlock_unlock(r), 0);
        EXPECT(pthread_rwlock_trywrlock(r), 0);
        EXPECT(pthread_rwlock_unlock(r), 0);

        /* A reader elsewhere: a writer cannot get in (EBUSY, timeouts); a
         * reader can, once those writers have given up. */
        step(names[i][1]);
        hold(&h, rw_rdlock, rw_unlock, r, 0);
        EXPECT(pthread_rwlock_trywrlock(r), EBUSY);
        d = deadline_in(CLOCK_REALTIME, TIMEOUT_MS);
        EXPECT(pthread_rwlock_timedwrlock(r, &d), ETIMEDOUT);
        CHECK_NOT_EARLY(CLOCK_REALTIME, d);
        d = deadline_in(CLOCK_MONOTONIC, TIMEOUT_MS);
        EXPECT(pthread_rwlock_clockwrlock(r, CLOCK_MONOTONIC, &d), ETIMEDOUT);
        CHECK_NOT_EARLY(CLOCK_MONOTONIC, d);
        EXPECT(pthread_rwlock_tryrdlock(r), 0);
        EXPECT(pthread_rwlock_unlock(r), 0);
        d = deadline_in(CLOCK_REALTIME, WAIT_MS);
        EXPECT(pthread_rwlock_timedrdlock(r, &d), 0);
        EXPECT(pthread_rwlock_unlock(r), 0);
        unhold(&h);

        /* rdlock and wrlock wait while a writer holds it, wrlock while a
         * reader does, and each gets in once it is released */
        step(names[i][3]);
        hold(&h, rw_wrlock, rw_unlock, r, 0);
        blocks_until_released(&h, rw_rdlock, rw_unlock);
        hold(&h, rw_wrlock, rw_unlock, r, 0);
        blocks_until_released(&h, rw_wrlock, rw_unlock);
        hold(&h, rw_rdlock, rw_unlock, r, 0);
        blocks_until_released(&h, rw_wrlock, rw_unlock);

        /* The write holder asking again, to write or to read: EDEADLK (as
         * glibc), not a hang.
         * Plain lock and unlock of each kind; then another thread can
         * write. */
        step(names[i][2]);
        EXPECT(pthread_rwlock_wrlock(r), 0);
        EXPECT(pthread_rwlock_wrlock(r), EDEADLK);
        EXPECT(pthread_rwlock_rdlock(r), EDEADLK);
        EXPECT(pthread_rwlock_unlock(r), 0);
        EXPECT(pthread_rwlock_rdlock(r), 0);
        EXPECT(pthread_rwlock_unlock(r), 0);
        EXPECT(in_other_thread(rw_trywrtake, r), 0);
        /* a timed wrlock that the holder releases in time gets the lock */
        hold(&h, rw_wrlock, rw_unlock, r, 20);
        d = deadline_in(CLOCK_MONOTONIC, WAIT_MS);
        EXPECT(pthread_rwlock_clockwrlock(r, CLOCK_MONOTONIC, &d), 0);
        EXPECT(pthread_rwlock_unlock(r), 0);
        unhold(&h);
    }
    step("rwlock: destroy");
    EXPECT(pthread_rwlock_destroy(&l), 0);
    EXPECT(pthread_rwlock_init(&l, NULL), 0);
    EXPECT(pthread_rwlock_wrlock(&l), 0);
    EXPECT(pthread_rwlock_unlock(&l), 0);
    EXPECT(pthread_rwlock_destroy(&l), 0);
}

/* ================================================================= spin */

static void group_spin(void) {
    pthread_spinlock_t s;
    step("spin: init, lock, trylock, unlock");
    EXPECT(pthread_spin_init(&s, PTHREAD_PROCESS_PRIVATE), 0);
    EXPECT(pthread_spin_lock(&s), 0);
    EXPECT(pthread_spin_unlock(&s), 0);
    EXPECT(pthread_spin_trylock(&s), 0);
    EXPECT(pthread_spin_unlock(&s), 0);
    step("spin: trylock while another thread holds it");
    struct holder h;
    hold(&h, sp_lock, sp_unlock, (void *)&s, 0);
    EXPECT(pthread_spin_trylock(&s), EBUSY);
    unhold(&h);
    step("spin: lock waits while another thread holds it");
    hold(&h, sp_lock, sp_unlock, (void *)&s, 0);
    blocks_until_released(&h, sp_lock, sp_unlock);
    EXPECT(in_other_thread(sp_trylock, (void *)&s), 0);
    EXPECT(pthread_spin_unlock(&s), 0);
    step("spin: exclusion");
    exclusion(sp_lock, sp_unlock, (void *)&s, SPIN_ITERS, false);
    step("spin: destroy");
    EXPECT(pthread_spin_destroy(&s), 0);
}

/* ============================================================== pshared */

/* Forks a child that runs fn(arg) and exits 0, or 1 with its failure line
 * in the shared report; waits for it and reports that line. */
static void in_child_process(void (*fn)(void *), void *arg) {
    child_report[0] = '\0';
    fflush(stdout);
    pid_t pid = fork();
    CHECK(pid >= 0, "fork failed");
    if (pid == 0) {
        in_child = 1;
        alarm(WATCHDOG_S);
        fn(arg);
        _exit(0);
    }
    child_pid = pid;
    int status = 0;
    pid_t got;
    while ((got = waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
    }
    child_pid = 0;
    CHECK(got == pid, "waitpid failed");
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s",
          child_report[0] ? child_report
          : WIFSIGNALED(status) ? "the child was killed by a signal"
                                : "the child exited non-zero");
}

struct shared_count {
    pthread_mutex_t m;
    volatile unsigned long n;
};

static void shared_bumps(void *p) {
    struct shared_count *s = p;
    for (int i = 0; i < SHARED_ITERS; i++) {
        MUST(pthread_mutex_lock(&s->m));
        unsigned long v = s->n;
        for (volatile int k = 0; k < 4; k++) {
        }
        s->n = v + 1;
        MUST(pthread_mutex_unlock(&s->m));
    }
}

/* A child that dies holding the robust mutex. */
static void robust_child(void *p) {
    struct shared_count *s = p;
    EXPECT(pthread_mutex_lock(&s->m), 0);
    s->n = 42;
    _exit(0); /* dies holding it */
}

static void group_pshared(void) {
    pthread_mutexattr_t a;
    step("pshared: PTHREAD_PROCESS_SHARED mutex, parent and child count");
    struct shared_count *s = mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(s != MAP_FAILED, "mmap failed");
    EXPECT(pthread_mutexattr_init(&a), 0);
    EXPECT(pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED), 0);
    int ps = PTHREAD_PROCESS_PRIVATE;
    EXPECT(pthread_mutexattr_getpshared(&a, &ps), 0);
    CHECK(ps == PTHREAD_PROCESS_SHARED, "the attribute did not keep PTHREAD_PROCESS_SHARED");
    EXPECT(pthread_mutex_init(&s->m, &a), 0);
    EXPECT(pthread_mutexattr_destroy(&a), 0);
    s->n = 0;
    /* the child counts while the parent does: both under the one lock */
    child_report[0] = '\0';
    fflush(stdout);
    pid_t bumper = fork();
    CHECK(bumper >= 0, "fork failed");
    if (bumper == 0) {
        in_child = 1;
        alarm(WATCHDOG_S);
        shared_bumps(s);
        _exit(0);
    }
    child_pid = bumper;
    shared_bumps(s);
    int status = 0;
    pid_t got;
    while ((got = waitpid(bumper, &status, 0)) < 0 && errno == EINTR) {
    }
    child_pid = 0;
    CHECK(got == bumper && WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s",
          child_report[0] ? child_report : "the counting child did not exit 0");
    CHECK(s->n == 2UL * SHARED_ITERS, "shared counter %lu, want %lu (the mutex did not exclude across processes)",
          s->n, 2UL * SHARED_ITERS);
    EXPECT(pthread_mutex_destroy(&s->m), 0);

    /* A robust mutex whose owner died: the next locker is told
     * (EOWNERDEAD) and holds it, marks it consistent, and it works on. */
    step("pshared: robust mutex, owner dies holding it");
    EXPECT(pthread_mutexattr_init(&a), 0);
    EXPECT(pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED), 0);
    EXPECT(pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST), 0);
    EXPECT(pthread_mutex_init(&s->m, &a), 0);
    EXPECT(pthread_mutexattr_destroy(&a), 0);
    s->n = 0;
    in_child_process(robust_child, s);
    CHECK(s->n == 42, "the child did not run");
    EXPECT(pthread_mutex_lock(&s->m), EOWNERDEAD);
    EXPECT(pthread_mutex_consistent(&s->m), 0);
    EXPECT(pthread_mutex_unlock(&s->m), 0);
    EXPECT(pthread_mutex_lock(&s->m), 0);
    EXPECT(pthread_mutex_unlock(&s->m), 0);
    EXPECT(pthread_mutex_destroy(&s->m), 0);
    CHECK(munmap(s, sizeof *s) == 0, "munmap failed");
}

/* ================================================================= fork */

static pthread_mutex_t fork_m = PTHREAD_MUTEX_INITIALIZER;     /* used before the fork */
static pthread_mutex_t fork_fresh = PTHREAD_MUTEX_INITIALIZER; /* first used in the child */
static pthread_mutex_t busy_m = PTHREAD_MUTEX_INITIALIZER;     /* the running thread's */
static pthread_rwlock_t fork_rw = PTHREAD_RWLOCK_INITIALIZER;
static atomic_int busy_started, busy_stop;

/* The thread that runs across the fork: it has used fork_m (and left it),
 * then keeps taking its own lock. */
static void *busy_main(void *p) {
    (void)p;
    for (int i = 0; i < 100; i++) {
        MUST(pthread_mutex_lock(&fork_m));
        MUST(pthread_mutex_unlock(&fork_m));
        MUST(pthread_rwlock_rdlock(&fork_rw));
        MUST(pthread_rwlock_unlock(&fork_rw));
    }
    atomic_store(&busy_started, 1);
    while (!atomic_load(&busy_stop)) {
        MUST(pthread_mutex_lock(&busy_m));
        MUST(pthread_mutex_unlock(&busy_m));
        sched_yield();
    }
    return NULL;
}

static void *child_thread_main(void *p) {
    (void)p;
    EXPECT(pthread_mutex_lock(&fork_m), 0);
    EXPECT(pthread_mutex_unlock(&fork_m), 0);
    EXPECT(pthread_mutex_lock(&fork_fresh), 0);
    EXPECT(pthread_mutex_unlock(&fork_fresh), 0);
    EXPECT(pthread_rwlock_wrlock(&fork_rw), 0);
    EXPECT(pthread_rwlock_unlock(&fork_rw), 0);
    return NULL;
}

/* In the child: the mutex the other thread was not holding, a new static
 * one and a static rwlock work, from this thread and a new one. */
static void fork_child(void *p) {
    (void)p;
    EXPECT(pthread_mutex_lock(&fork_m), 0);
    EXPECT(pthread_mutex_unlock(&fork_m), 0);
    EXPECT(pthread_mutex_lock(&fork_fresh), 0);
    EXPECT(pthread_mutex_unlock(&fork_fresh), 0);
    EXPECT(pthread_rwlock_rdlock(&fork_rw), 0);
    EXPECT(pthread_rwlock_unlock(&fork_rw), 0);
    pthread_t t;
    EXPECT(pthread_create(&t, NULL, child_thread_main, NULL), 0);
    EXPECT(pthread_join(t, NULL), 0);
    EXPECT(pthread_mutex_trylock(&fork_m), 0);
    EXPECT(pthread_mutex_unlock(&fork_m), 0);
}

static void group_fork(void) {
    step("fork: in a threaded program, the child uses locks and threads");
    EXPECT(pthread_mutex_lock(&fork_m), 0);
    EXPECT(pthread_mutex_unlock(&fork_m), 0);
    atomic_store(&busy_started, 0);
    atomic_store(&busy_stop, 0);
    pthread_t t;
    EXPECT(pthread_create(&t, NULL, busy_main, NULL), 0);
    CHECK(wait_until(&busy_started, 1, WAIT_MS), "the busy thread did not start");
    in_child_process(fork_child, NULL);
    atomic_store(&busy_stop, 1);
    EXPECT(pthread_join(t, NULL), 0);
    /* and the parent's locks are unharmed */
    EXPECT(pthread_mutex_lock(&fork_m), 0);
    EXPECT(pthread_mutex_unlock(&fork_m), 0);
    EXPECT(pthread_rwlock_wrlock(&fork_rw), 0);
    EXPECT(pthread_rwlock_unlock(&fork_rw), 0);
}

/* ================================================================= main */

static const struct { const char *name; void (*run)(void); } groups[] = {
    {"mutex", group_mutex}, {"cond", group_cond}, {"rwlock", group_rwlock},
    {"spin", group_spin},   {"pshared", group_pshared}, {"fork", group_fork},
};
#define NGROUPS (sizeof groups / sizeof groups[0])

int main(int argc, char **argv) {
    const char *which = argc > 1 ? argv[1] : "all";
    bool known = strcmp(which, "all") == 0;
    for (size_t i = 0; i < NGROUPS; i++) known |= strcmp(which, groups[i].name) == 0;
    bool quick = argc == 3 && strcmp(argv[2], "quick") == 0;
    if (argc > 3 || (argc == 3 && !quick) || !known) {
        fprintf(stderr, "usage: %s [mutex|cond|rwlock|spin|pshared|fork|all] [quick]\n", argv[0]);
        return 2;
    }
    if (quick) scale = 10;

    child_report = mmap(NULL, REPORT_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (child_report == MAP_FAILED) {
        fprintf(stderr, "FAIL start: mmap failed\n");
        return 1;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, NULL);
    alarm(WATCHDOG_S);

    int64_t start = now_ns(CLOCK_MONOTONIC);
    for (size_t i = 0; i < NGROUPS; i++)
        if (strcmp(which, "all") == 0 || strcmp(which, groups[i].name) == 0) groups[i].run();
    alarm(0);
    printf("ok: %lu checks (%s%s) in %.0f ms\n", atomic_load(&checks), which, quick ? ", quick" : "",
           (double)(now_ns(CLOCK_MONOTONIC) - start) / 1e6);
    return 0;
}
