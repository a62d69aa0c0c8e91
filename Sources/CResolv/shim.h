#ifndef PARLEY_CRESOLV_SHIM_H
#define PARLEY_CRESOLV_SHIM_H

#include <netinet/in.h>
#include <arpa/nameser.h>
#include <resolv.h>

/* glibc defines res_query as a macro for __res_query, which Swift cannot call by its name. */
static inline int parley_res_query(const char *name, int class_, int type, unsigned char *answer, int length) {
    return res_query(name, class_, type, answer, length);
}

#endif
