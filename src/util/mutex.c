/* util/mutex: see mutex.h. */
#include "util/mutex.h"

int tdb_mutex_init_short(pthread_mutex_t *mu) {
#if defined(__GLIBC__) && defined(PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP)
    pthread_mutexattr_t a;
    int rc = pthread_mutexattr_init(&a);
    if (rc != 0) return rc;
    rc = pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ADAPTIVE_NP);
    if (rc == 0) rc = pthread_mutex_init(mu, &a);
    pthread_mutexattr_destroy(&a);
    return rc;
#else
    return pthread_mutex_init(mu, NULL);
#endif
}
