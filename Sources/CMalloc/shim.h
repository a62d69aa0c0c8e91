#ifndef PARLEY_CMALLOC_SHIM_H
#define PARLEY_CMALLOC_SHIM_H

/* glibc's heap controls (malloc_trim), which Swift's Glibc module does not import. */
#include <malloc.h>

#endif
