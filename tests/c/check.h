/* Minimal unit-test checks: count failures, print where, exit non-zero if any failed. */
#ifndef CHECK_H
#define CHECK_H

#include <stdio.h>
#include <string.h>

static int check_failures;
static int check_count;

#define CHECK(cond)                                                                    \
    do {                                                                               \
        check_count++;                                                                 \
        if (!(cond)) {                                                                 \
            check_failures++;                                                          \
            fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond);   \
        }                                                                              \
    } while (0)

#define CHECK_INT(a, b)                                                                \
    do {                                                                               \
        long long va_ = (long long)(a), vb_ = (long long)(b);                          \
        check_count++;                                                                 \
        if (va_ != vb_) {                                                              \
            check_failures++;                                                          \
            fprintf(stderr, "%s:%d: %s == %lld, expected %s == %lld\n", __FILE__, __LINE__, #a, va_, #b, vb_); \
        }                                                                              \
    } while (0)

#define CHECK_STR(a, b)                                                                \
    do {                                                                               \
        check_count++;                                                                 \
        if (strcmp((a), (b)) != 0) {                                                   \
            check_failures++;                                                          \
            fprintf(stderr, "%s:%d: got \"%s\", expected \"%s\"\n", __FILE__, __LINE__, (a), (b)); \
        }                                                                              \
    } while (0)

static int check_report(const char *suite)
{
    printf("%s: %d checks, %d failed\n", suite, check_count, check_failures);
    return (check_failures == 0 && check_count > 0) ? 0 : 1;
}

#endif
