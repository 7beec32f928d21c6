/* The program of locklab profile's misuse test (tests/profile.rs): a
 * default mutex taken and released twice, then released three times
 * while nobody holds it (a bug that POSIX leaves undefined for a default
 * mutex). Under the interposer each of those three is refused with EPERM
 * and counted; the program prints how many were refused.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;

int main(void) {
    for (int i = 0; i < 2; i++) {
        pthread_mutex_lock(&m);
        pthread_mutex_unlock(&m);
    }
    int refused = 0;
    for (int i = 0; i < 3; i++) {
        if (pthread_mutex_unlock(&m) == EPERM)
            refused++;
    }
    printf("refused %d\n", refused);
    return 0;
}
