/*
 * posix_check: the POSIX promises a conformance suite holds the pthread
 * interposer to, one case per run, so that each can be run against the C
 * library alone, through the passthrough, and under every lock of
 * liblocklab_preload.so, and each failure names its case:
 *
 *   posix_check misuse         unlocking a default mutex one does not hold
 *   posix_check cancel         cancellation in pthread_cond_wait/timedwait
 *   posix_check destroy-cond   a condvar destroyed (and its memory reused)
 *                              right after a broadcast
 *   posix_check destroy-mutex  a mutex destroyed and freed right after the
 *                              last unlock of a reference-counted object
 *   posix_check binding        a condvar used with a second mutex once the
 *                              waiters of the first were released
 *   posix_check enomem         init with the address space exhausted
 *   posix_check rt-readers     a SCHED_FIFO reader above a waiting writer
 *
 * Exit 0 with "ok: CASE ..." (or "skip: CASE: why") on stdout when the
 * promise held; exit 1 with one line "FAIL CASE: ..." on stderr when it
 * did not; exit 3 when the watchdog (alarm) fired: a hang is a failure
 * too. Exit 2 for a bad argument.
 *
 * Where POSIX leaves a choice (misuse is undefined for a default mutex:
 * the C library releases it, locklab refuses with EPERM), the stricter
 * answer is required only under locklab's own locks (LOCKLAB_LOCK set to
 * anything but "pthread"); the references are held to "no crash, no hang".
 *
 * Build: cc -std=c11 -Wall -Wextra -Werror -O2 -pthread posix_check.c
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
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define WATCHDOG_S 20        /* the longest one case may take */
#define NS_PER_MS 1000000LL
#define NS_PER_S 1000000000LL

static const char *which = "?"; /* the case under way */
static const char *current = "start";

static void step(const char *s) { current = s; }

__attribute__((format(printf, 2, 3), noreturn))
static void fail(int line, const char *fmt, ...) {
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "FAIL %s: %s (line %d): %s\n", which, current, line, msg);
    _exit(1);
}

#define CHECK(cond, ...)                                                      \
    do {                                                                      \
        if (!(cond)) fail(__LINE__, __VA_ARGS__);                             \
    } while (0)

#define EXPECT(call, want)                                                    \
    do {                                                                      \
        int rc_ = (call);                                                     \
        int want_ = (want);                                                   \
        if (rc_ != want_) fail(__LINE__, "%s returned %d (%s), want %d", #call, \
                               rc_, strerror(rc_), want_);                    \
    } while (0)

static void say(const char *s) {
    ssize_t r = write(STDERR_FILENO, s, strlen(s));
    (void)r;
}

static void on_alarm(int sig) {
    (void)sig;
    say("FAIL ");
    say(which);
    say(": timeout in ");
    say(current);
    say("\n");
    _exit(3);
}

static int64_t now_ns(clockid_t clock) {
    struct timespec t;
    clock_gettime(clock, &t);
    return (int64_t)t.tv_sec * NS_PER_S + t.tv_nsec;
}

static struct timespec deadline_in(int64_t ms) {
    int64_t ns = now_ns(CLOCK_REALTIME) + ms * NS_PER_MS;
    struct timespec t = {.tv_sec = ns / NS_PER_S, .tv_nsec = ns % NS_PER_S};
    return t;
}

static void sleep_ms(long ms) {
    struct timespec t = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * NS_PER_MS};
    while (nanosleep(&t, &t) != 0 && errno == EINTR) {
    }
}

/* Sleeps until *v >= want (no lock under test involved). */
static void await_at_least(atomic_int *v, int want) {
    while (atomic_load(v) < want) sleep_ms(1);
}

/* Whether the program runs under one of locklab's mutexes. */
static bool locklab_mutex(void) {
    const char *l = getenv("LD_PRELOAD") ? getenv("LOCKLAB_LOCK") : NULL;
    return l && strcmp(l, "pthread") != 0;
}

static void init_mutex(pthread_mutex_t *m, int type) {
    pthread_mutexattr_t a;
    EXPECT(pthread_mutexattr_init(&a), 0);
    EXPECT(pthread_mutexattr_settype(&a, type), 0);
    EXPECT(pthread_mutex_init(m, &a), 0);
    EXPECT(pthread_mutexattr_destroy(&a), 0);
}

/* ================================================================ misuse */

static pthread_mutex_t misuse_static = PTHREAD_MUTEX_INITIALIZER;
static atomic_int holder_has, holder_go;

static void *holder_main(void *p) {
    pthread_mutex_t *m = p;
    EXPECT(pthread_mutex_lock(m), 0);
    atomic_store(&holder_has, 1);
    await_at_least(&holder_go, 1);
    int rc = pthread_mutex_unlock(m);
    /* Under the C library the other thread's unlock released it already,
     * and this one is the second: whatever it says, it must not crash. */
    if (locklab_mutex()) EXPECT(rc, 0);
    return NULL;
}

/* An unlock the caller is not entitled to: EPERM under locklab, 0 or
 * EPERM from the C library (which, for a default mutex, does not check). */
static int refused;

static void misuse_unlock(pthread_mutex_t *m) {
    int rc = pthread_mutex_unlock(m);
    if (locklab_mutex()) {
        EXPECT(rc, EPERM);
        refused++;
    } else {
        CHECK(rc == 0 || rc == EPERM, "unlock returned %d", rc);
    }
}

static void misuse_on(pthread_mutex_t *m) {
    step("unlock of a default mutex never locked");
    misuse_unlock(m);
    step("the mutex works after it");
    EXPECT(pthread_mutex_lock(m), 0);
    EXPECT(pthread_mutex_unlock(m), 0);
    step("a second unlock after lock and unlock");
    misuse_unlock(m);
    EXPECT(pthread_mutex_lock(m), 0);
    EXPECT(pthread_mutex_unlock(m), 0);

    step("unlock of a default mutex another thread holds");
    atomic_store(&holder_has, 0);
    atomic_store(&holder_go, 0);
    pthread_t t;
    EXPECT(pthread_create(&t, NULL, holder_main, m), 0);
    await_at_least(&holder_has, 1);
    misuse_unlock(m);
    if (locklab_mutex()) {
        step("the holder still holds it");
        EXPECT(pthread_mutex_trylock(m), EBUSY);
    }
    atomic_store(&holder_go, 1);
    EXPECT(pthread_join(t, NULL), 0);
    step("the mutex works after it");
    EXPECT(pthread_mutex_lock(m), 0);
    EXPECT(pthread_mutex_trylock(m), EBUSY);
    EXPECT(pthread_mutex_unlock(m), 0);
}

static void case_misuse(void) {
    pthread_mutex_t m;
    EXPECT(pthread_mutex_init(&m, NULL), 0);
    misuse_on(&misuse_static);
    misuse_on(&m);
    step("destroy");
    /* The C library's count of users went wrong with the misuse (its
     * destroy may say EBUSY); locklab's is what it was. */
    int rc = pthread_mutex_destroy(&m);
    if (locklab_mutex()) EXPECT(rc, 0);
    printf("ok: misuse (%d unlocks refused with EPERM)\n", refused);
}

/* ================================================================ cancel */

static struct {
    pthread_mutex_t m;
    pthread_cond_t c;
    atomic_int waiting, handler_ran, pending_go;
    int handler_rc, flag;
    bool timed, pending;
} cw;

/* The first clean-up handler: the mutex must be held again here (an
 * error-checking mutex's unlock says whether this thread holds it). */
static void cancel_handler(void *p) {
    (void)p;
    cw.handler_rc = pthread_mutex_unlock(&cw.m);
    atomic_store(&cw.handler_ran, 1);
}

static void *cancel_waiter(void *p) {
    (void)p;
    EXPECT(pthread_mutex_lock(&cw.m), 0);
    pthread_cleanup_push(cancel_handler, NULL);
    atomic_store(&cw.waiting, 1);
    /* Cancelled while not at a cancellation point (sched_yield is none,
     * unlike a sleep): acted on by the wait, at its start. */
    if (cw.pending)
        while (!atomic_load(&cw.pending_go)) sched_yield();
    for (;;) {
        if (cw.timed) {
            struct timespec d = deadline_in(60000);
            int rc = pthread_cond_timedwait(&cw.c, &cw.m, &d);
            CHECK(rc == 0, "timedwait returned %d", rc);
        } else {
            EXPECT(pthread_cond_wait(&cw.c, &cw.m), 0);
        }
    }
    pthread_cleanup_pop(0);
    return NULL;
}

static atomic_int later_woke;

static void *later_waiter(void *p) {
    (void)p;
    EXPECT(pthread_mutex_lock(&cw.m), 0);
    atomic_store(&cw.waiting, 2);
    while (!cw.flag) EXPECT(pthread_cond_wait(&cw.c, &cw.m), 0);
    EXPECT(pthread_mutex_unlock(&cw.m), 0);
    atomic_store(&later_woke, 1);
    return NULL;
}

static void cancel_one(int type, bool timed, bool pending) {
    init_mutex(&cw.m, type);
    EXPECT(pthread_cond_init(&cw.c, NULL), 0);
    atomic_store(&cw.waiting, 0);
    atomic_store(&cw.handler_ran, 0);
    atomic_store(&cw.pending_go, 0);
    cw.handler_rc = -1;
    cw.flag = 0;
    cw.timed = timed;
    cw.pending = pending;
    pthread_t t;
    EXPECT(pthread_create(&t, NULL, cancel_waiter, NULL), 0);
    await_at_least(&cw.waiting, 1);
    if (pending) {
        EXPECT(pthread_cancel(t), 0);
        atomic_store(&cw.pending_go, 1);
    } else {
        /* Holding the mutex after the waiter counted itself under it means
         * that it is inside its wait; then let it fall asleep. */
        EXPECT(pthread_mutex_lock(&cw.m), 0);
        EXPECT(pthread_mutex_unlock(&cw.m), 0);
        sleep_ms(20);
        EXPECT(pthread_cancel(t), 0);
    }
    void *ret = NULL;
    EXPECT(pthread_join(t, &ret), 0);
    CHECK(ret == PTHREAD_CANCELED, "the waiter was not cancelled");
    CHECK(atomic_load(&cw.handler_ran), "the clean-up handler did not run");
    CHECK(cw.handler_rc == 0, "in the clean-up handler the mutex was not held (unlock returned %d)",
          cw.handler_rc);
    /* The mutex is free again, and the condvar's bookkeeping was undone:
     * a later waiter is woken by a signal, and destroy succeeds. */
    EXPECT(pthread_mutex_trylock(&cw.m), 0);
    EXPECT(pthread_mutex_unlock(&cw.m), 0);
    atomic_store(&later_woke, 0);
    EXPECT(pthread_create(&t, NULL, later_waiter, NULL), 0);
    await_at_least(&cw.waiting, 2);
    EXPECT(pthread_mutex_lock(&cw.m), 0);
    cw.flag = 1;
    EXPECT(pthread_cond_signal(&cw.c), 0);
    EXPECT(pthread_mutex_unlock(&cw.m), 0);
    EXPECT(pthread_join(t, NULL), 0);
    CHECK(atomic_load(&later_woke), "a later waiter was not woken");
    EXPECT(pthread_cond_destroy(&cw.c), 0);
    EXPECT(pthread_mutex_destroy(&cw.m), 0);
}

static void case_cancel(void) {
    static const struct { int type; const char *name; } types[] = {
        {PTHREAD_MUTEX_ERRORCHECK, "error-checking"},
        {PTHREAD_MUTEX_DEFAULT, "default"},
        {PTHREAD_MUTEX_RECURSIVE, "recursive"},
    };
    static char what[160];
    int n = 0;
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        for (int timed = 0; timed < 2; timed++)
            for (int pending = 0; pending < 2; pending++) {
                snprintf(what, sizeof what, "%s cancelled %s in pthread_cond_%s (%s mutex)",
                         pending ? "a thread" : "a waiter", pending ? "before its wait" : "asleep",
                         timed ? "timedwait" : "wait", types[i].name);
                step(what);
                cancel_one(types[i].type, timed, pending);
                n++;
            }
    printf("ok: cancel (%d waits cancelled)\n", n);
}

/* ========================================================== destroy-cond */

#define DC_WAITERS 4
#define DC_ROUNDS 40

struct dc {
    pthread_mutex_t m;
    pthread_cond_t c;
    int waiting, flag;
};

static void *dc_waiter(void *p) {
    struct dc *o = p;
    EXPECT(pthread_mutex_lock(&o->m), 0);
    o->waiting++;
    while (!o->flag) EXPECT(pthread_cond_wait(&o->c, &o->m), 0);
    EXPECT(pthread_mutex_unlock(&o->m), 0);
    return NULL;
}

static void case_destroy_cond(void) {
    for (int r = 0; r < DC_ROUNDS; r++) {
        /* Half the rounds destroy with the mutex held (the woken waiters
         * still need it), half after releasing it; half of each reuse the
         * memory as garbage, half as a new condition variable. */
        bool held = r % 2 == 0, reinit = r % 4 >= 2;
        step(held ? "broadcast, destroy and reuse with the mutex held"
                  : "broadcast, unlock, destroy and reuse");
        struct dc *o = calloc(1, sizeof *o);
        CHECK(o != NULL, "out of memory");
        EXPECT(pthread_mutex_init(&o->m, NULL), 0);
        EXPECT(pthread_cond_init(&o->c, NULL), 0);
        pthread_t t[DC_WAITERS];
        for (int i = 0; i < DC_WAITERS; i++) EXPECT(pthread_create(&t[i], NULL, dc_waiter, o), 0);
        for (;;) {
            EXPECT(pthread_mutex_lock(&o->m), 0);
            if (o->waiting == DC_WAITERS) break;
            EXPECT(pthread_mutex_unlock(&o->m), 0);
            sleep_ms(1);
        }
        sleep_ms(2); /* let the last one fall asleep */
        o->flag = 1;
        EXPECT(pthread_cond_broadcast(&o->c), 0);
        if (!held) EXPECT(pthread_mutex_unlock(&o->m), 0);
        /* No thread is blocked on it any more: POSIX allows this. */
        EXPECT(pthread_cond_destroy(&o->c), 0);
        memset(&o->c, 0xa5, sizeof o->c);
        if (reinit) {
            EXPECT(pthread_cond_init(&o->c, NULL), 0);
            EXPECT(pthread_cond_signal(&o->c), 0);
        }
        if (held) EXPECT(pthread_mutex_unlock(&o->m), 0);
        for (int i = 0; i < DC_WAITERS; i++) EXPECT(pthread_join(t[i], NULL), 0);
        if (reinit) EXPECT(pthread_cond_destroy(&o->c), 0);
        EXPECT(pthread_mutex_destroy(&o->m), 0);
        free(o);
    }
    printf("ok: destroy-cond (%d rounds of %d waiters)\n", DC_ROUNDS, DC_WAITERS);
}

/* ========================================================= destroy-mutex */

#define DM_THREADS 3
#define DM_BATCH 200
#define DM_BATCHES 10

struct dm {
    pthread_mutex_t m;
    int refs;
    char payload[64];
};

static struct dm *dm_objs[DM_BATCH];

/* Drops this thread's reference to every object of the batch; the thread
 * that drops the last one destroys the mutex and frees the object at once,
 * while the previous holder may still be inside its unlock. */
static void *dm_main(void *p) {
    (void)p;
    for (int i = 0; i < DM_BATCH; i++) {
        struct dm *o = dm_objs[i];
        EXPECT(pthread_mutex_lock(&o->m), 0);
        bool last = --o->refs == 0;
        EXPECT(pthread_mutex_unlock(&o->m), 0);
        if (last) {
            EXPECT(pthread_mutex_destroy(&o->m), 0);
            memset(o, 0x5a, sizeof *o);
            free(o);
        }
    }
    return NULL;
}

static void case_destroy_mutex(void) {
    step("reference-counted objects freed by the last unlocker");
    for (int b = 0; b < DM_BATCHES; b++) {
        for (int i = 0; i < DM_BATCH; i++) {
            struct dm *o = malloc(sizeof *o);
            CHECK(o != NULL, "out of memory");
            EXPECT(pthread_mutex_init(&o->m, NULL), 0);
            o->refs = DM_THREADS;
            dm_objs[i] = o;
        }
        pthread_t t[DM_THREADS];
        for (int i = 0; i < DM_THREADS; i++) EXPECT(pthread_create(&t[i], NULL, dm_main, NULL), 0);
        for (int i = 0; i < DM_THREADS; i++) EXPECT(pthread_join(t[i], NULL), 0);
    }
    printf("ok: destroy-mutex (%d objects)\n", DM_BATCH * DM_BATCHES);
}

/* =============================================================== binding */

static pthread_cond_t bind_c = PTHREAD_COND_INITIALIZER;
static pthread_mutex_t bind_first = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t bind_second = PTHREAD_MUTEX_INITIALIZER;
static int bind_waiting, bind_flag;

static void *bind_waiter(void *p) {
    (void)p;
    EXPECT(pthread_mutex_lock(&bind_first), 0);
    bind_waiting++;
    while (!bind_flag) EXPECT(pthread_cond_wait(&bind_c, &bind_first), 0);
    EXPECT(pthread_mutex_unlock(&bind_first), 0);
    return NULL;
}

/* `n` waiters with the first mutex are released (by a broadcast, or by a
 * signal when there is one): while they still need the first mutex (held
 * here), a wait with the second must be accepted: it times out. */
static void binding(int n, bool broadcast) {
    bind_waiting = bind_flag = 0;
    pthread_t t[4];
    for (int i = 0; i < n; i++) EXPECT(pthread_create(&t[i], NULL, bind_waiter, NULL), 0);
    for (;;) {
        EXPECT(pthread_mutex_lock(&bind_first), 0);
        if (bind_waiting == n) break;
        EXPECT(pthread_mutex_unlock(&bind_first), 0);
        sleep_ms(1);
    }
    sleep_ms(2);
    bind_flag = 1;
    if (broadcast)
        EXPECT(pthread_cond_broadcast(&bind_c), 0);
    else
        EXPECT(pthread_cond_signal(&bind_c), 0);
    EXPECT(pthread_mutex_lock(&bind_second), 0);
    struct timespec d = deadline_in(20);
    int rc = pthread_cond_timedwait(&bind_c, &bind_second, &d);
    CHECK(rc == ETIMEDOUT || rc == 0, "a wait with the second mutex returned %d (%s)", rc,
          strerror(rc));
    EXPECT(pthread_mutex_unlock(&bind_second), 0);
    EXPECT(pthread_mutex_unlock(&bind_first), 0);
    for (int i = 0; i < n; i++) EXPECT(pthread_join(t[i], NULL), 0);
}

static void case_binding(void) {
    step("a second mutex after a broadcast released 3 waiters");
    binding(3, true);
    step("a second mutex after a signal released the one waiter");
    binding(1, false);
    step("the first mutex again");
    binding(2, true);
    printf("ok: binding\n");
}

/* ================================================================ enomem */

#define ENOMEM_OBJS 60000

/* The process's virtual size, from /proc/self/status (bytes). */
static long vm_size(void) {
    FILE *f = fopen("/proc/self/status", "r");
    CHECK(f != NULL, "cannot open /proc/self/status");
    char line[256];
    long kb = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmSize: %ld kB", &kb) == 1) break;
    fclose(f);
    CHECK(kb > 0, "no VmSize in /proc/self/status");
    return kb * 1024;
}

static void case_enomem(void) {
    step("allocating the objects");
    pthread_mutex_t *ms = calloc(ENOMEM_OBJS, sizeof *ms);
    pthread_mutex_t *zs = calloc(ENOMEM_OBJS, sizeof *zs); /* PTHREAD_MUTEX_INITIALIZER */
    pthread_cond_t *cs = calloc(ENOMEM_OBJS, sizeof *cs);
    pthread_cond_t *zc = calloc(64, sizeof *zc); /* PTHREAD_COND_INITIALIZER */
    pthread_rwlock_t *rs = calloc(ENOMEM_OBJS, sizeof *rs);
    pthread_rwlock_t *zr = calloc(ENOMEM_OBJS, sizeof *zr); /* PTHREAD_RWLOCK_INITIALIZER */
    int *mrc = calloc(ENOMEM_OBJS, sizeof *mrc), *crc = calloc(ENOMEM_OBJS, sizeof *crc),
        *rrc = calloc(ENOMEM_OBJS, sizeof *rrc);
    CHECK(ms && zs && cs && zc && rs && zr && mrc && crc && rrc, "out of memory before the limit");
    /* Touch them, so that nothing below needs a page the limit refuses. */
    memset(ms, 0, ENOMEM_OBJS * sizeof *ms);
    memset(zs, 0, ENOMEM_OBJS * sizeof *zs);
    memset(cs, 0, ENOMEM_OBJS * sizeof *cs);
    memset(rs, 0, ENOMEM_OBJS * sizeof *rs);
    memset(zr, 0, ENOMEM_OBJS * sizeof *zr);
    pthread_mutex_t scratch;
    EXPECT(pthread_mutex_init(&scratch, NULL), 0); /* a first use of each kind before the limit */
    EXPECT(pthread_mutex_lock(&scratch), 0);
    EXPECT(pthread_mutex_unlock(&scratch), 0);
    EXPECT(pthread_mutex_destroy(&scratch), 0);
    pthread_rwlock_t scratch_rw;
    EXPECT(pthread_rwlock_init(&scratch_rw, NULL), 0);
    EXPECT(pthread_rwlock_rdlock(&scratch_rw), 0);
    EXPECT(pthread_rwlock_unlock(&scratch_rw), 0);
    EXPECT(pthread_rwlock_wrlock(&scratch_rw), 0);
    EXPECT(pthread_rwlock_unlock(&scratch_rw), 0);
    EXPECT(pthread_rwlock_destroy(&scratch_rw), 0);

    struct rlimit old, lim;
    CHECK(getrlimit(RLIMIT_AS, &old) == 0, "getrlimit failed");
    lim = old;
    lim.rlim_cur = (rlim_t)vm_size() + (2 << 20);
    CHECK(setrlimit(RLIMIT_AS, &lim) == 0, "setrlimit failed: %s", strerror(errno));

    int m_ok = 0, m_nomem = 0, c_ok = 0, c_nomem = 0, r_ok = 0, r_nomem = 0;
    step("pthread_mutex_init with the address space exhausted");
    for (int i = 0; i < ENOMEM_OBJS; i++) {
        mrc[i] = pthread_mutex_init(&ms[i], NULL);
        CHECK(mrc[i] == 0 || mrc[i] == ENOMEM, "pthread_mutex_init returned %d", mrc[i]);
        if (mrc[i] == 0) m_ok++; else m_nomem++;
    }
    step("the mutexes that were made work");
    for (int i = 0; i < ENOMEM_OBJS; i++)
        if (mrc[i] == 0) {
            EXPECT(pthread_mutex_lock(&ms[i]), 0);
            EXPECT(pthread_mutex_trylock(&ms[i]), EBUSY);
            EXPECT(pthread_mutex_unlock(&ms[i]), 0);
        }
    step("statically initialized mutexes first used with the address space exhausted");
    for (int i = 0; i < ENOMEM_OBJS; i++) {
        EXPECT(pthread_mutex_lock(&zs[i]), 0);
        EXPECT(pthread_mutex_trylock(&zs[i]), EBUSY);
        EXPECT(pthread_mutex_unlock(&zs[i]), 0);
    }
    step("pthread_cond_init with the address space exhausted");
    for (int i = 0; i < ENOMEM_OBJS; i++) {
        crc[i] = pthread_cond_init(&cs[i], NULL);
        CHECK(crc[i] == 0 || crc[i] == ENOMEM, "pthread_cond_init returned %d", crc[i]);
        if (crc[i] == 0) c_ok++; else c_nomem++;
    }
    step("statically initialized condition variables first used with the address space exhausted");
    pthread_mutex_t cm = PTHREAD_MUTEX_INITIALIZER;
    for (int i = 0; i < 64; i++) {
        EXPECT(pthread_mutex_lock(&cm), 0);
        struct timespec d = deadline_in(1);
        int rc = pthread_cond_timedwait(&zc[i], &cm, &d);
        CHECK(rc == 0 || rc == ETIMEDOUT, "timedwait returned %d", rc);
        EXPECT(pthread_mutex_trylock(&cm), EBUSY); /* held again */
        EXPECT(pthread_mutex_unlock(&cm), 0);
        EXPECT(pthread_cond_signal(&zc[i]), 0);
        EXPECT(pthread_cond_broadcast(&zc[i]), 0);
    }
    step("pthread_rwlock_init with the address space exhausted");
    for (int i = 0; i < ENOMEM_OBJS; i++) {
        rrc[i] = pthread_rwlock_init(&rs[i], NULL);
        CHECK(rrc[i] == 0 || rrc[i] == ENOMEM, "pthread_rwlock_init returned %d", rrc[i]);
        if (rrc[i] == 0) r_ok++; else r_nomem++;
    }
    step("the rwlocks that were made work");
    for (int i = 0; i < ENOMEM_OBJS; i++)
        if (rrc[i] == 0) {
            EXPECT(pthread_rwlock_rdlock(&rs[i]), 0);
            EXPECT(pthread_rwlock_trywrlock(&rs[i]), EBUSY);
            EXPECT(pthread_rwlock_unlock(&rs[i]), 0);
        }
    step("statically initialized rwlocks first used with the address space exhausted");
    for (int i = 0; i < ENOMEM_OBJS; i++) {
        EXPECT(pthread_rwlock_wrlock(&zr[i]), 0);
        EXPECT(pthread_rwlock_tryrdlock(&zr[i]), EBUSY);
        EXPECT(pthread_rwlock_unlock(&zr[i]), 0);
        EXPECT(pthread_rwlock_rdlock(&zr[i]), 0);
        EXPECT(pthread_rwlock_unlock(&zr[i]), 0);
    }

    step("destroying, the limit lifted");
    CHECK(setrlimit(RLIMIT_AS, &old) == 0, "setrlimit failed: %s", strerror(errno));
    for (int i = 0; i < ENOMEM_OBJS; i++) {
        if (mrc[i] == 0) EXPECT(pthread_mutex_destroy(&ms[i]), 0);
        EXPECT(pthread_mutex_destroy(&zs[i]), 0);
        if (crc[i] == 0) EXPECT(pthread_cond_destroy(&cs[i]), 0);
        if (rrc[i] == 0) EXPECT(pthread_rwlock_destroy(&rs[i]), 0);
        EXPECT(pthread_rwlock_destroy(&zr[i]), 0);
    }
    for (int i = 0; i < 64; i++) EXPECT(pthread_cond_destroy(&zc[i]), 0);
    step("after the limit, init works again");
    EXPECT(pthread_mutex_init(&ms[0], NULL), 0);
    EXPECT(pthread_mutex_lock(&ms[0]), 0);
    EXPECT(pthread_mutex_unlock(&ms[0]), 0);
    EXPECT(pthread_mutex_destroy(&ms[0]), 0);
    printf("ok: enomem mutex_init %d ok %d ENOMEM, cond_init %d ok %d ENOMEM, rwlock_init %d ok %d ENOMEM\n",
           m_ok, m_nomem, c_ok, c_nomem, r_ok, r_nomem);
}

/* ============================================================ rt-readers */

static pthread_rwlock_t rt_l = PTHREAD_RWLOCK_INITIALIZER;
static atomic_int rt_reading, rt_release, rt_writer_started, rt_writer_in;
static int rt_rc = -1, rt_writer_was_in = -1;

static void *rt_first_reader(void *p) {
    (void)p;
    EXPECT(pthread_rwlock_rdlock(&rt_l), 0);
    atomic_store(&rt_reading, 1);
    await_at_least(&rt_release, 1);
    EXPECT(pthread_rwlock_unlock(&rt_l), 0);
    return NULL;
}

static void *rt_writer(void *p) {
    (void)p;
    atomic_store(&rt_writer_started, 1);
    EXPECT(pthread_rwlock_wrlock(&rt_l), 0);
    atomic_store(&rt_writer_in, 1);
    EXPECT(pthread_rwlock_unlock(&rt_l), 0);
    return NULL;
}

static void *rt_high_reader(void *p) {
    (void)p;
    struct timespec d = deadline_in(2000);
    rt_rc = pthread_rwlock_timedrdlock(&rt_l, &d);
    rt_writer_was_in = atomic_load(&rt_writer_in);
    if (rt_rc == 0) EXPECT(pthread_rwlock_unlock(&rt_l), 0);
    return NULL;
}

/* A thread of policy SCHED_FIFO at `prio`; false if not permitted. */
static bool fifo_thread(pthread_t *t, int prio, void *(*f)(void *)) {
    pthread_attr_t a;
    struct sched_param sp = {.sched_priority = prio};
    EXPECT(pthread_attr_init(&a), 0);
    EXPECT(pthread_attr_setinheritsched(&a, PTHREAD_EXPLICIT_SCHED), 0);
    EXPECT(pthread_attr_setschedpolicy(&a, SCHED_FIFO), 0);
    EXPECT(pthread_attr_setschedparam(&a, &sp), 0);
    int rc = pthread_create(t, &a, f, NULL);
    EXPECT(pthread_attr_destroy(&a), 0);
    if (rc == EPERM) return false;
    EXPECT(rc, 0);
    return true;
}

static void case_rt_readers(void) {
    step("a SCHED_FIFO writer waits behind a reader");
    pthread_t r1, w, r2;
    EXPECT(pthread_create(&r1, NULL, rt_first_reader, NULL), 0);
    await_at_least(&rt_reading, 1);
    if (!fifo_thread(&w, 10, rt_writer)) {
        atomic_store(&rt_release, 1);
        EXPECT(pthread_join(r1, NULL), 0);
        printf("skip: rt-readers: no permission for SCHED_FIFO threads\n");
        return;
    }
    await_at_least(&rt_writer_started, 1);
    sleep_ms(50); /* the writer is blocked by now */
    step("a SCHED_FIFO reader of higher priority than the waiting writer");
    CHECK(fifo_thread(&r2, 20, rt_high_reader), "SCHED_FIFO refused the second time");
    EXPECT(pthread_join(r2, NULL), 0);
    atomic_store(&rt_release, 1);
    EXPECT(pthread_join(r1, NULL), 0);
    EXPECT(pthread_join(w, NULL), 0);
    CHECK(rt_writer_was_in == 0, "the writer got in before the reader (the first reader had left)");
    CHECK(rt_rc == 0, "the reader of higher priority did not acquire while a writer of lower "
          "priority waited (timedrdlock returned %d, %s)", rt_rc, strerror(rt_rc));
    EXPECT(pthread_rwlock_destroy(&rt_l), 0);
    printf("ok: rt-readers\n");
}

/* ================================================================== main */

static const struct { const char *name; void (*run)(void); } cases[] = {
    {"misuse", case_misuse},
    {"cancel", case_cancel},
    {"destroy-cond", case_destroy_cond},
    {"destroy-mutex", case_destroy_mutex},
    {"binding", case_binding},
    {"enomem", case_enomem},
    {"rt-readers", case_rt_readers},
};

int main(int argc, char **argv) {
    for (size_t i = 0; argc == 2 && i < sizeof cases / sizeof cases[0]; i++)
        if (strcmp(argv[1], cases[i].name) == 0) {
            which = cases[i].name;
            struct sigaction sa;
            memset(&sa, 0, sizeof sa);
            sa.sa_handler = on_alarm;
            sigemptyset(&sa.sa_mask);
            sigaction(SIGALRM, &sa, NULL);
            alarm(WATCHDOG_S);
            cases[i].run();
            return 0;
        }
    fprintf(stderr, "usage: %s misuse|cancel|destroy-cond|destroy-mutex|binding|enomem|rt-readers\n",
            argv[0]);
    return 2;
}
