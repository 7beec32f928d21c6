/*
 * alloc_threads: threads that allocate and free while they take a pthread
 * mutex and signal condition variables, for running with a malloc
 * replacement (jemalloc, tcmalloc) and liblocklab_preload.so preloaded
 * together. Such an allocator takes pthread mutexes of its own from inside
 * malloc and free (and from its fork handlers), so under the interposer
 * those are locklab's locks too: the interposer must never call back into
 * malloc while it sets one up or takes one.
 *
 *   alloc_threads ALLOCATOR INTERPOSER
 *
 *   ALLOCATOR   jemalloc | tcmalloc | glibc: who must be serving malloc
 *   INTERPOSER  interposed | plain: whether pthread_mutex_lock must be
 *               liblocklab_preload.so's
 *
 * First the program checks that it runs where it was told (so that a pass
 * cannot come from an allocator or interposer that was silently not
 * loaded): malloc and pthread_mutex_lock resolve into the named libraries,
 * and the allocator accounts for blocks this program allocates (jemalloc's
 * per-thread byte counter grows, tcmalloc claims the block as its own).
 *
 * Then, all started at once: producers allocate blocks of many sizes
 * (malloc, calloc, realloc, aligned_alloc, posix_memalign), stamp them,
 * and pass them through a bounded queue guarded by one mutex and two
 * condition variables to consumers, which check the stamp and free them
 * (so most blocks are freed by a thread other than the one that allocated
 * them); every thread also churns private blocks and counts under the
 * shared mutex and a mutex of its own. Last, the process forks (the
 * allocator's fork handlers lock and reinitialize its mutexes) and the
 * child allocates on two threads.
 *
 * Exit 0 and "ok: ..." on stdout when every check held; otherwise exit 1
 * with one line on stderr, "FAIL <step>: <what>"; exit 2 for bad arguments.
 * A hang is left to the caller's timeout (a stack of the hung process says
 * more than a watchdog could). Sized for well under a second on two cores
 * under any lock, spin locks included.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PAIRS 2         /* producer-consumer pairs, each with its queue */
#define ITEMS 4000      /* blocks each producer sends */
#define QUEUE_CAP 8     /* slots in the queue: small, so both sides wait */
#define CHURN_EVERY 16  /* a producer churns private blocks this often */
#define CHURN_BLOCKS 24 /* blocks in one churn */
#define LARGE_EVERY 97  /* one block in this many is large (64 KiB-1 MiB) */
#define CHILD_CHURNS 8  /* churns by each of the forked child's two threads */
#define MAGIC 0x616c6c6f63746872ULL

/* ---------------------------------------------------------------- report */

static const char *volatile step_name = "start";
static atomic_ulong checks;

__attribute__((format(printf, 1, 2), noreturn))
static void fail(const char *fmt, ...) {
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "FAIL %s: %s\n", step_name, msg);
    fflush(stderr);
    /* Not exit(): its handlers could take the very locks under test. */
    _exit(1);
}

#define CHECK(cond, ...)                                                      \
    do {                                                                      \
        atomic_fetch_add_explicit(&checks, 1, memory_order_relaxed);          \
        if (!(cond)) fail(__VA_ARGS__);                                       \
    } while (0)

/* A pthread call that must return 0. */
#define MUST(call)                                                            \
    do {                                                                      \
        int rc_ = (call);                                                     \
        if (rc_ != 0) fail("%s returned %d (%s)", #call, rc_, strerror(rc_)); \
    } while (0)

/* -------------------------------------------------------- where we run */

/* The file of the object that defines `symbol` for this program, or "". */
static const char *defined_in(const char *symbol) {
    void *addr = dlsym(RTLD_DEFAULT, symbol);
    Dl_info info;
    if (addr == NULL || dladdr(addr, &info) == 0 || info.dli_fname == NULL) return "";
    return info.dli_fname;
}

/* Whether a file whose path contains `part` is mapped into this process. */
static bool mapped(const char *part) {
    FILE *maps = fopen("/proc/self/maps", "r");
    if (maps == NULL) fail("cannot open /proc/self/maps: %s", strerror(errno));
    char line[4096];
    bool found = false;
    while (!found && fgets(line, sizeof line, maps) != NULL) found = strstr(line, part) != NULL;
    fclose(maps);
    return found;
}

typedef int (*mallctl_fn)(const char *, void *, size_t *, void *, size_t);
typedef int (*ownership_fn)(const void *);

/* jemalloc's count of the bytes this thread has allocated. */
static uint64_t jemalloc_allocated(mallctl_fn mallctl) {
    uint64_t n = 0;
    size_t len = sizeof n;
    int rc = mallctl("thread.allocated", &n, &len, NULL, 0);
    if (rc != 0) fail("mallctl(\"thread.allocated\") returned %d", rc);
    return n;
}

static void check_interposer(bool want) {
    step_name = "interposer";
    const char *lock = defined_in("pthread_mutex_lock");
    bool ours = strstr(lock, "liblocklab_preload") != NULL;
    CHECK(ours == want, "pthread_mutex_lock is defined in \"%s\": want %s", lock,
          want ? "liblocklab_preload.so (is it preloaded?)" : "the C library");
    CHECK(mapped("liblocklab_preload") == want, "liblocklab_preload.so is %smapped",
          want ? "not " : "");
}

static void check_allocator(const char *want) {
    step_name = "allocator";
    const char *lib = defined_in("malloc");
    void *mallctl = dlsym(RTLD_DEFAULT, "mallctl");
    void *ownership = dlsym(RTLD_DEFAULT, "MallocExtension_GetOwnership");
    if (strcmp(want, "glibc") == 0) {
        CHECK(strstr(lib, "libc.so") != NULL, "malloc is defined in \"%s\", not the C library", lib);
        CHECK(mallctl == NULL && ownership == NULL, "jemalloc or tcmalloc is loaded");
        return;
    }
    CHECK(strstr(lib, want) != NULL, "malloc is defined in \"%s\": want %s (is it preloaded?)",
          lib, want);
    size_t size = (size_t)1 << 20;
    if (strcmp(want, "jemalloc") == 0) {
        CHECK(mallctl != NULL, "jemalloc's mallctl is not defined");
        mallctl_fn ctl;
        memcpy(&ctl, &mallctl, sizeof ctl);
        uint64_t before = jemalloc_allocated(ctl);
        char *p = malloc(size);
        CHECK(p != NULL, "malloc(%zu) failed", size);
        p[0] = p[size - 1] = 1;
        uint64_t after = jemalloc_allocated(ctl);
        CHECK(after - before >= size, "jemalloc counted %llu bytes for a malloc of %zu",
              (unsigned long long)(after - before), size);
        free(p);
    } else {
        CHECK(ownership != NULL, "tcmalloc's MallocExtension_GetOwnership is not defined");
        ownership_fn owns;
        memcpy(&owns, &ownership, sizeof owns);
        char *p = malloc(size);
        char *q = malloc(24);
        CHECK(p != NULL && q != NULL, "malloc failed");
        /* MallocExtension::kOwned */
        CHECK(owns(p) == 1 && owns(q) == 1, "tcmalloc does not own the blocks malloc returned");
        free(q);
        free(p);
    }
}

/* --------------------------------------------------------------- blocks */

/* What a block starts with; the rest is filled with a byte made from it. */
struct stamp {
    uint64_t magic;
    uint64_t size;
    uint64_t seq;
};

static unsigned char fill_byte(uint64_t seq) { return (unsigned char)(seq * 131u + 7u); }

static uint64_t next_random(uint64_t *state) {
    uint64_t x = *state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *state = x;
}

/* A size from tiny to large, most of them small. */
static size_t pick_size(uint64_t *rng) {
    uint64_t r = next_random(rng);
    if (r % LARGE_EVERY == 0) return 65536 + (size_t)(r >> 20) % (1u << 20);
    switch ((r >> 8) % 4) {
    case 0: return sizeof(struct stamp) + (size_t)(r >> 16) % 40;
    case 1: return 64 + (size_t)(r >> 16) % 448;
    case 2: return 512 + (size_t)(r >> 16) % 3584;
    default: return 4096 + (size_t)(r >> 16) % 61440;
    }
}

/* The bytes of a block checked at each end (all of a small one). */
#define EDGE 256

static void stamp_block(unsigned char *p, size_t size, uint64_t seq) {
    struct stamp s = {MAGIC, size, seq};
    memcpy(p, &s, sizeof s);
    memset(p + sizeof s, fill_byte(seq), size - sizeof s);
}

static void check_block(const unsigned char *p, const char *how) {
    struct stamp s;
    memcpy(&s, p, sizeof s);
    CHECK(s.magic == MAGIC, "a %s block lost its stamp", how);
    CHECK(malloc_usable_size((void *)p) >= s.size, "a %s block of %llu bytes has %zu usable",
          how, (unsigned long long)s.size, malloc_usable_size((void *)p));
    unsigned char b = fill_byte(s.seq);
    size_t body = s.size - sizeof s;
    for (size_t i = 0; i < body; i++) {
        if (i == EDGE && body > 2 * EDGE) i = body - EDGE;
        if (p[sizeof s + i] != b)
            fail("byte %zu of a %s block of %llu bytes was overwritten", sizeof s + i, how,
                 (unsigned long long)s.size);
    }
}

/* A stamped block of `size` bytes, allocated the `seq`th of five ways. */
static unsigned char *new_block(size_t size, uint64_t seq) {
    unsigned char *p = NULL;
    switch (seq % 5) {
    case 0:
        p = malloc(size);
        break;
    case 1:
        p = calloc(1, size);
        CHECK(p != NULL, "calloc(1, %zu) failed", size);
        for (size_t i = 0; i < size; i += 1 + i / 2)
            if (p[i] != 0) fail("calloc(1, %zu) returned a block with byte %zu set", size, i);
        break;
    case 2: {
        /* Grown from half the size: the first half must survive the move. */
        size_t half = size / 2;
        p = malloc(half);
        CHECK(p != NULL, "malloc(%zu) failed", half);
        memset(p, 0x5a, half);
        unsigned char *q = realloc(p, size);
        CHECK(q != NULL, "realloc to %zu failed", size);
        for (size_t i = 0; i < half; i += 1 + i / 2)
            if (q[i] != 0x5a) fail("realloc from %zu to %zu lost byte %zu", half, size, i);
        p = q;
        break;
    }
    case 3:
        p = aligned_alloc(64, (size + 63) / 64 * 64);
        CHECK(((uintptr_t)p & 63) == 0, "aligned_alloc(64, ...) returned %p", (void *)p);
        break;
    default: {
        void *q = NULL;
        MUST(posix_memalign(&q, 4096, size));
        CHECK(((uintptr_t)q & 4095) == 0, "posix_memalign(4096) returned %p", q);
        p = q;
        break;
    }
    }
    CHECK(p != NULL, "allocating %zu bytes failed", size);
    stamp_block(p, size, seq);
    return p;
}

/* --------------------------------------------------------------- queues */

/* One producer and one consumer per queue: each lock has two contenders,
 * so that a FIFO spin lock whose next owner is preempted (more threads
 * than cores) costs a time slice now and then, not a convoy. */
struct queue {
    pthread_mutex_t lock;
    pthread_cond_t nonempty, nonfull;
    unsigned char *slots[QUEUE_CAP];
    unsigned head, count;
    bool done;                       /* the producer has sent everything */
    unsigned long sent, received;
    unsigned long long sent_bytes, received_bytes;
};

static struct queue queues[PAIRS] = {
    [0 ... PAIRS - 1] = {.lock = PTHREAD_MUTEX_INITIALIZER,
                         .nonempty = PTHREAD_COND_INITIALIZER,
                         .nonfull = PTHREAD_COND_INITIALIZER},
};

/* Taken by every thread now and then; counts under it. */
static pthread_mutex_t shared = PTHREAD_MUTEX_INITIALIZER;
static unsigned long counter; /* under `shared`, not atomic */
static pthread_barrier_t start_line;

/* A thread's private work: a mutex initialized at run time (whose cell
 * comes from the interposer's arena, not from malloc) and a set of blocks
 * allocated, then checked and freed in another order; then a count under
 * the shared mutex. */
static void churn(pthread_mutex_t *own, uint64_t *rng, unsigned long *own_count) {
    unsigned char *blocks[CHURN_BLOCKS];
    for (int i = 0; i < CHURN_BLOCKS; i++) {
        size_t size = pick_size(rng) % 8192 + sizeof(struct stamp);
        blocks[i] = new_block(size, next_random(rng));
        MUST(pthread_mutex_lock(own));
        (*own_count)++;
        MUST(pthread_mutex_unlock(own));
    }
    for (int i = 0; i < CHURN_BLOCKS; i++) {
        int j = (i * 7) % CHURN_BLOCKS; /* 7 is prime to CHURN_BLOCKS */
        check_block(blocks[j], "private");
        free(blocks[j]);
    }
    MUST(pthread_mutex_lock(&shared));
    counter++;
    MUST(pthread_mutex_unlock(&shared));
}

static void *producer(void *arg) {
    struct queue *q = arg;
    uint64_t rng = 0x9e3779b97f4a7c15ULL * (uint64_t)(q - queues + 1);
    pthread_mutex_t own;
    MUST(pthread_mutex_init(&own, NULL));
    unsigned long own_count = 0, churns = 0;
    pthread_barrier_wait(&start_line);
    for (unsigned long i = 0; i < ITEMS; i++) {
        size_t size = pick_size(&rng);
        unsigned char *p = new_block(size, next_random(&rng));
        MUST(pthread_mutex_lock(&q->lock));
        while (q->count == QUEUE_CAP) MUST(pthread_cond_wait(&q->nonfull, &q->lock));
        q->slots[(q->head + q->count) % QUEUE_CAP] = p;
        q->count++;
        q->sent++;
        q->sent_bytes += size;
        MUST(pthread_cond_signal(&q->nonempty));
        MUST(pthread_mutex_unlock(&q->lock));
        /* Lets the other thread run if it was preempted while next in line
         * for a FIFO spin lock (more threads than cores). */
        sched_yield();
        if (i % CHURN_EVERY == 0) {
            churn(&own, &rng, &own_count);
            churns++;
        }
    }
    MUST(pthread_mutex_lock(&q->lock));
    q->done = true;
    MUST(pthread_cond_signal(&q->nonempty));
    MUST(pthread_mutex_unlock(&q->lock));
    CHECK(own_count == churns * CHURN_BLOCKS, "a private mutex counted %lu, want %lu", own_count,
          churns * CHURN_BLOCKS);
    MUST(pthread_mutex_destroy(&own));
    return (void *)churns;
}

static void *consumer(void *arg) {
    struct queue *q = arg;
    uint64_t rng = 0xd1b54a32d192ed03ULL * (uint64_t)(q - queues + 1);
    pthread_mutex_t own;
    MUST(pthread_mutex_init(&own, NULL));
    unsigned long own_count = 0, churns = 0;
    pthread_barrier_wait(&start_line);
    for (;;) {
        MUST(pthread_mutex_lock(&q->lock));
        while (q->count == 0 && !q->done) MUST(pthread_cond_wait(&q->nonempty, &q->lock));
        if (q->count == 0) {
            MUST(pthread_mutex_unlock(&q->lock));
            break;
        }
        unsigned char *p = q->slots[q->head];
        q->head = (q->head + 1) % QUEUE_CAP;
        q->count--;
        struct stamp s;
        memcpy(&s, p, sizeof s);
        q->received++;
        q->received_bytes += s.size;
        MUST(pthread_cond_signal(&q->nonfull));
        MUST(pthread_mutex_unlock(&q->lock));
        sched_yield();
        /* Freed by a thread other than the one that allocated it. */
        check_block(p, "queued");
        free(p);
        if (q->received % CHURN_EVERY == 0) {
            churn(&own, &rng, &own_count);
            churns++;
        }
    }
    MUST(pthread_mutex_destroy(&own));
    return (void *)churns;
}

static void run_queues(void) {
    step_name = "threads";
    pthread_t threads[2 * PAIRS];
    MUST(pthread_barrier_init(&start_line, NULL, 2 * PAIRS));
    for (int i = 0; i < PAIRS; i++) {
        MUST(pthread_create(&threads[2 * i], NULL, producer, &queues[i]));
        MUST(pthread_create(&threads[2 * i + 1], NULL, consumer, &queues[i]));
    }
    unsigned long churns = 0;
    for (int i = 0; i < 2 * PAIRS; i++) {
        void *n;
        MUST(pthread_join(threads[i], &n));
        churns += (unsigned long)n;
    }
    MUST(pthread_barrier_destroy(&start_line));
    for (int i = 0; i < PAIRS; i++) {
        struct queue *q = &queues[i];
        CHECK(q->sent == ITEMS && q->received == ITEMS,
              "queue %d: sent %lu and received %lu blocks, want %d each", i, q->sent, q->received,
              ITEMS);
        CHECK(q->sent_bytes == q->received_bytes, "queue %d: sent %llu bytes, received %llu", i,
              q->sent_bytes, q->received_bytes);
        CHECK(q->count == 0, "queue %d: %u blocks left", i, q->count);
    }
    CHECK(counter == churns, "the counter under the shared mutex is %lu, want %lu", counter,
          churns);
}

/* ----------------------------------------------------------------- fork */

static void *child_thread(void *arg) {
    uint64_t rng = 0x2545f4914f6cdd1dULL + (uintptr_t)arg;
    pthread_mutex_t own;
    MUST(pthread_mutex_init(&own, NULL));
    unsigned long own_count = 0;
    for (int i = 0; i < CHILD_CHURNS; i++) churn(&own, &rng, &own_count);
    CHECK(own_count == CHILD_CHURNS * CHURN_BLOCKS, "a private mutex counted %lu, want %d",
          own_count, CHILD_CHURNS * CHURN_BLOCKS);
    MUST(pthread_mutex_destroy(&own));
    return NULL;
}

/* The allocator's fork handlers lock its mutexes before fork and unlock or
 * reinitialize them after, in both processes: both must allocate after. */
static void run_fork(void) {
    step_name = "fork";
    pid_t pid = fork();
    CHECK(pid >= 0, "fork failed: %s", strerror(errno));
    if (pid == 0) {
        step_name = "fork (child)";
        unsigned long before = counter;
        pthread_t t[2];
        for (uintptr_t i = 0; i < 2; i++) MUST(pthread_create(&t[i], NULL, child_thread, (void *)i));
        for (int i = 0; i < 2; i++) MUST(pthread_join(t[i], NULL));
        CHECK(counter == before + 2 * CHILD_CHURNS, "the child's counter is %lu, want %lu",
              counter, before + 2 * CHILD_CHURNS);
        _exit(0);
    }
    void *p = malloc(100);
    CHECK(p != NULL, "malloc after fork failed in the parent");
    free(p);
    int status = 0;
    pid_t got;
    do got = waitpid(pid, &status, 0);
    while (got < 0 && errno == EINTR);
    CHECK(got == pid, "waitpid failed: %s", strerror(errno));
    /* A failing child has printed its own line. */
    if (WIFEXITED(status) && WEXITSTATUS(status) == 1) _exit(1);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child ended with status 0x%x",
          status);
}

int main(int argc, char **argv) {
    bool known_alloc = argc == 3 && (strcmp(argv[1], "jemalloc") == 0 ||
                                     strcmp(argv[1], "tcmalloc") == 0 ||
                                     strcmp(argv[1], "glibc") == 0);
    bool known_mode = argc == 3 && (strcmp(argv[2], "interposed") == 0 ||
                                    strcmp(argv[2], "plain") == 0);
    if (!known_alloc || !known_mode) {
        fprintf(stderr, "usage: %s jemalloc|tcmalloc|glibc interposed|plain\n", argv[0]);
        return 2;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    check_interposer(strcmp(argv[2], "interposed") == 0);
    check_allocator(argv[1]);
    run_queues();
    run_fork();
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    printf("ok: %lu checks (%s, %s) in %.0f ms\n", atomic_load(&checks), argv[1], argv[2], ms);
    return 0;
}
