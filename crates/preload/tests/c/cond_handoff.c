/* How fast two threads hand a turn back and forth through a pthread
 * condition variable and its mutex: each waits (pthread_cond_wait in a
 * loop) until the turn is its own, passes it, and signals the other.
 *
 *   cond_handoff MODE MS
 *
 * MODE says how the turn is passed: `signal` (pthread_cond_signal with the
 * mutex held, the common way in C), `broadcast` (pthread_cond_broadcast,
 * mutex held), or `after` (the signal once the mutex is released). After
 * a warm-up of 20 ms, the main thread counts the hand-offs in a window of
 * MS milliseconds, reading the count and the clock together under the
 * mutex at both ends, and prints
 *
 *   handoffs/s: X
 *
 * the hand-offs in the window over the window's length (the numerator and
 * the denominator span the same interval). Run under the interposer
 * (LD_PRELOAD, LOCKLAB_LOCK) by tests/handoff.rs, which compares the rate
 * under spin locks with the rate under the sleeping `mutex`. A watchdog
 * ends the program with exit code 3 after 30 s. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static int turn, stop;
static long handoffs;
static enum { SIGNAL, BROADCAST, AFTER } mode;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void wake(void) {
    if (mode == BROADCAST)
        pthread_cond_broadcast(&c);
    else
        pthread_cond_signal(&c);
}

static void *player(void *arg) {
    int me = (int)(long)arg;
    pthread_mutex_lock(&m);
    for (;;) {
        while (turn != me && !stop)
            pthread_cond_wait(&c, &m);
        if (stop)
            break;
        turn = 1 - me;
        handoffs++;
        if (mode == AFTER) {
            pthread_mutex_unlock(&m);
            wake();
            pthread_mutex_lock(&m);
        } else {
            wake();
        }
    }
    pthread_mutex_unlock(&m);
    return NULL;
}

static void sleep_ms(long ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&t, &t) != 0) {
    }
}

static void watchdog(int sig) {
    (void)sig;
    static const char msg[] = "cond_handoff: still running after 30 s\n";
    if (write(2, msg, sizeof msg - 1) < 0) {
    }
    _exit(3);
}

int main(int argc, char **argv) {
    if (argc != 3 || (strcmp(argv[1], "signal") && strcmp(argv[1], "broadcast") &&
                      strcmp(argv[1], "after")) || atol(argv[2]) <= 0) {
        fprintf(stderr, "usage: cond_handoff signal|broadcast|after MS\n");
        return 2;
    }
    mode = !strcmp(argv[1], "signal") ? SIGNAL : !strcmp(argv[1], "broadcast") ? BROADCAST : AFTER;
    long ms = atol(argv[2]);
    signal(SIGALRM, watchdog);
    alarm(30);
    pthread_t t[2];
    for (long i = 0; i < 2; i++)
        if (pthread_create(&t[i], NULL, player, (void *)i) != 0) {
            fprintf(stderr, "cond_handoff: pthread_create failed\n");
            return 1;
        }
    sleep_ms(20);
    pthread_mutex_lock(&m);
    long n0 = handoffs;
    double t0 = now();
    pthread_mutex_unlock(&m);
    sleep_ms(ms);
    pthread_mutex_lock(&m);
    long n1 = handoffs;
    double t1 = now();
    stop = 1;
    pthread_cond_broadcast(&c);
    pthread_mutex_unlock(&m);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    printf("handoffs/s: %.0f (%ld in %.3f s)\n", (double)(n1 - n0) / (t1 - t0), n1 - n0, t1 - t0);
    return 0;
}
