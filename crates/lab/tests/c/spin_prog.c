/* A program whose only locks are pthread spin locks (tests/run.rs): the
 * interposer takes them over under a spinning lock whose word fits
 * (tas, ttas, backoff, qspin) and leaves them to the C library under the
 * others.
 */
#include <pthread.h>
#include <stdio.h>

int main(void) {
    pthread_spinlock_t s;
    if (pthread_spin_init(&s, PTHREAD_PROCESS_PRIVATE) != 0)
        return 1;
    long n = 0;
    for (int i = 0; i < 1000; i++) {
        pthread_spin_lock(&s);
        n++;
        pthread_spin_unlock(&s);
    }
    pthread_spin_destroy(&s);
    printf("%ld\n", n);
    return 0;
}
