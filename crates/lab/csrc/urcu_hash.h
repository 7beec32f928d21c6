/*
 * The liburcu peer of locklab's hash-table benchmark (`bench hash`, seed
 * 003): the same chained table as the Rust strategies, with RCU readers
 * from liburcu. Included once per flavour by urcu_hash_memb.c and
 * urcu_hash_qsbr.c, which define FLAVOR(name) (liburcu's symbol for that
 * flavour) and LH(name) (this shim's exported symbol) first.
 *
 * Lookups walk the chain inside rcu_read_lock/rcu_read_unlock with
 * rcu_dereference; an update takes its bucket's spin lock (glibc's
 * pthread_spinlock_t, a test-and-test-and-set lock), links a new element in
 * place of the old one with rcu_assign_pointer (one pointer store, so every
 * lookup finds the key in the old or the new element), and frees the old
 * one with call_rcu after a grace period. Bytes handed to call_rcu and not
 * yet freed are counted in `pending`.
 *
 * Built with _LGPL_SOURCE, so the read-side primitives are inlined, as
 * liburcu recommends for speed (they are small inline functions).
 */
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/* The lab's counted allocator (heap.rs), so that the peak heap figure of
 * `bench hash` sees this table's elements as it sees the Rust tables'. */
void *locklab_shim_alloc(size_t size);
void locklab_shim_free(void *ptr, size_t size);

struct lh_table;

struct lh_node {
    uint64_t key;
    uint64_t value;
    struct lh_node *next;
    struct lh_table *table; /* for the reclamation count */
    struct rcu_head rcu;
};

struct lh_bucket {
    pthread_spinlock_t lock;
    struct lh_node *head;
} __attribute__((aligned(128)));

struct lh_table {
    size_t nbuckets;
    struct lh_bucket *buckets;
    uint64_t pending __attribute__((aligned(128)));
};

/* The bucket of a key, reduced as the Rust tables reduce it (bucket_of in
 * bench/hash/mod.rs): a mask for a power of two, else a division. */
static inline size_t lh_bucket_of(uint64_t key, size_t nbuckets)
{
    return (nbuckets & (nbuckets - 1)) == 0 ? (size_t)key & (nbuckets - 1)
                                            : (size_t)(key % nbuckets);
}

static struct lh_node *LH(node)(struct lh_table *t, uint64_t key, uint64_t value,
                                struct lh_node *next)
{
    struct lh_node *n = locklab_shim_alloc(sizeof(*n));
    if (!n)
        abort();
    n->key = key;
    n->value = value;
    n->next = next;
    n->table = t;
    return n;
}

struct lh_table *LH(new)(size_t nbuckets, uint64_t keys)
{
    struct lh_table *t;
    if (posix_memalign((void **)&t, 128, sizeof(*t)) != 0)
        return NULL;
    t->nbuckets = nbuckets;
    t->pending = 0;
    if (posix_memalign((void **)&t->buckets, 128, nbuckets * sizeof(struct lh_bucket)) != 0) {
        free(t);
        return NULL;
    }
    for (size_t i = 0; i < nbuckets; i++) {
        pthread_spin_init(&t->buckets[i].lock, PTHREAD_PROCESS_PRIVATE);
        t->buckets[i].head = NULL;
    }
    for (uint64_t k = keys; k-- > 0;) {
        struct lh_bucket *b = &t->buckets[lh_bucket_of(k, nbuckets)];
        b->head = LH(node)(t, k, k << 32, b->head);
    }
    return t;
}

/* Only with no thread using the table: waits for every callback first. */
void LH(free)(struct lh_table *t)
{
    FLAVOR(barrier)();
    for (size_t i = 0; i < t->nbuckets; i++) {
        struct lh_node *n = t->buckets[i].head;
        while (n) {
            struct lh_node *next = n->next;
            locklab_shim_free(n, sizeof(*n));
            n = next;
        }
        pthread_spin_destroy(&t->buckets[i].lock);
    }
    free(t->buckets);
    free(t);
}

void LH(register_thread)(void)
{
    FLAVOR(register_thread)();
}

void LH(unregister_thread)(void)
{
    FLAVOR(unregister_thread)();
}

void LH(quiescent_state)(void)
{
    FLAVOR(quiescent_state)();
}

int LH(lookup)(struct lh_table *t, uint64_t key, uint64_t *value)
{
    struct lh_bucket *b = &t->buckets[lh_bucket_of(key, t->nbuckets)];
    int found = 0;
    FLAVOR(read_lock)();
    for (struct lh_node *n = rcu_dereference(b->head); n; n = rcu_dereference(n->next)) {
        if (n->key == key) {
            *value = n->value;
            found = 1;
            break;
        }
    }
    FLAVOR(read_unlock)();
    return found;
}

static void LH(reclaim)(struct rcu_head *head)
{
    struct lh_node *n = caa_container_of(head, struct lh_node, rcu);
    struct lh_table *t = n->table;
    locklab_shim_free(n, sizeof(*n));
    __atomic_fetch_sub(&t->pending, sizeof(*n), __ATOMIC_RELAXED);
}

void LH(update)(struct lh_table *t, uint64_t key, uint64_t value)
{
    struct lh_bucket *b = &t->buckets[lh_bucket_of(key, t->nbuckets)];
    pthread_spin_lock(&b->lock);
    for (struct lh_node **link = &b->head; *link; link = &(*link)->next) {
        struct lh_node *old = *link;
        if (old->key == key) {
            rcu_assign_pointer(*link, LH(node)(t, key, value, old->next));
            __atomic_fetch_add(&t->pending, sizeof(*old), __ATOMIC_RELAXED);
            FLAVOR(call_rcu)(&old->rcu, LH(reclaim));
            break;
        }
    }
    pthread_spin_unlock(&b->lock);
}

uint64_t LH(backlog_bytes)(struct lh_table *t)
{
    return __atomic_load_n(&t->pending, __ATOMIC_RELAXED);
}

/* Only with no thread using the table. */
void LH(visit)(struct lh_table *t, void (*f)(void *, size_t, uint64_t, uint64_t), void *ctx)
{
    for (size_t i = 0; i < t->nbuckets; i++)
        for (struct lh_node *n = t->buckets[i].head; n; n = n->next)
            f(ctx, i, n->key, n->value);
}
